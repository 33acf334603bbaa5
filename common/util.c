#include "util.h"

#include "err.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/params.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One clock reading in microseconds; the millisecond clocks are the same reading / 1000. */
static int64_t clock_us(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t util_now_ms(void)
{
    return clock_us(CLOCK_REALTIME) / 1000;
}

int64_t util_mono_ms(void)
{
    return clock_us(CLOCK_MONOTONIC) / 1000;
}

int64_t util_now_us(void)
{
    return clock_us(CLOCK_REALTIME);
}

int64_t util_mono_us(void)
{
    return clock_us(CLOCK_MONOTONIC);
}

struct timespec util_deadline_realtime(int timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    return until;
}

void util_format_utc(int64_t ms, char *out, size_t size)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    char base[24];
    gmtime_r(&s, &tm);
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, size, "%s.%03dZ", base, (int)(ms % 1000));
}

/* n decimal digits at s into *v: 0, or -1 when one is not a digit. */
static int digits_at(const char *s, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        *v = *v * 10 + (s[i] - '0');
    }
    return 0;
}

int util_parse_utc(const char *s, int64_t *ms)
{
    int y, mo, d, h, mi, sec, frac = 0;
    if (!s || strlen(s) < 20 || digits_at(s, 4, &y) < 0 || s[4] != '-' ||
        digits_at(s + 5, 2, &mo) < 0 || s[7] != '-' || digits_at(s + 8, 2, &d) < 0 ||
        s[10] != 'T' || digits_at(s + 11, 2, &h) < 0 || s[13] != ':' ||
        digits_at(s + 14, 2, &mi) < 0 || s[16] != ':' || digits_at(s + 17, 2, &sec) < 0)
        return MCPQ_EINVAL;
    const char *p = s + 19;
    if (*p == '.') {
        int n = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, n++)
            if (n < 3)
                frac = frac * 10 + (*p - '0');
        if (n == 0)
            return MCPQ_EINVAL;
        for (; n < 3; n++)
            frac *= 10;
    }
    if (strcmp(p, "Z") != 0 || y < 1970 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 ||
        sec > 59)
        return MCPQ_EINVAL;
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = sec};
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || tm.tm_mday != d) /* timegm moved 31 April to 1 May */
        return MCPQ_EINVAL;
    *ms = (int64_t)t * 1000 + frac;
    return 0;
}

void util_hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void util_b64url_encode(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned long v = (unsigned long)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned long)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        size_t chars = n - i >= 3 ? 4 : n - i + 1;
        for (size_t k = 0; k < chars; k++)
            out[o++] = b64url[(v >> (18 - 6 * k)) & 63];
    }
    out[o] = '\0';
}

static int b64_value(char c, int url)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == (url ? '-' : '+'))
        return 62;
    if (c == (url ? '_' : '/'))
        return 63;
    return -1;
}

int util_b64_decode(const char *s, size_t n, int flags, unsigned char *out, size_t size,
                    size_t *len)
{
    size_t pad = 0, o = 0;
    while (pad < n && s[n - 1 - pad] == '=')
        pad++;
    if (pad > 2 || (pad && (flags & UTIL_B64_NOPAD)) || ((pad || (flags & UTIL_B64_PAD)) && n % 4))
        return MCPQ_EINVAL;
    n -= pad; /* the data characters; '=' may not stand for a whole quantum */
    if (n % 4 == 1 || (pad && n % 4 == 0))
        return MCPQ_EINVAL;
    if (n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0) > size)
        return MCPQ_EINVAL;
    unsigned long v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = b64_value(s[i], flags & UTIL_B64_URL);
        if (d < 0)
            return MCPQ_EINVAL;
        v = (v << 6) | (unsigned long)d;
        if (i % 4 == 3) {
            out[o++] = (unsigned char)(v >> 16);
            out[o++] = (unsigned char)(v >> 8);
            out[o++] = (unsigned char)v;
            v = 0;
        }
    }
    if (n % 4 == 2) {
        if (v & 15) /* 12 bits for 1 byte: the low 4 must be zero */
            return MCPQ_EINVAL;
        out[o++] = (unsigned char)(v >> 4);
    } else if (n % 4 == 3) {
        if (v & 3) /* 18 bits for 2 bytes: the low 2 must be zero */
            return MCPQ_EINVAL;
        out[o++] = (unsigned char)(v >> 10);
        out[o++] = (unsigned char)(v >> 2);
    }
    *len = o;
    return 0;
}

/* Random bytes for util_random_hex, drawn from RAND_bytes RANDOM_POOL bytes at a time: one
 * RAND_bytes costs about as many instructions for 16 bytes as for 512 (the DRBG's locking and
 * reseed checks), and the ingress draws four or five ids per tools/call (docs/benchmarks.md,
 * section "throughput"). Per thread, so no lock; a pool filled in another process (before a
 * fork) is never used, so a child never repeats its parent's ids; bytes are wiped once handed
 * out. */
#define RANDOM_POOL 512
static _Thread_local struct {
    unsigned char bytes[RANDOM_POOL];
    size_t used; /* bytes handed out (RANDOM_POOL: empty) */
    pid_t pid;   /* the process that filled it */
} random_pool = {.used = RANDOM_POOL};

int util_random_hex(char *out, size_t nbytes)
{
    if (nbytes > 64)
        return MCPQ_EINVAL;
    pid_t pid = getpid();
    if (random_pool.pid != pid || random_pool.used + nbytes > RANDOM_POOL) {
        if (RAND_bytes(random_pool.bytes, RANDOM_POOL) != 1)
            return MCPQ_EIO;
        random_pool.used = 0;
        random_pool.pid = pid;
    }
    unsigned char *b = random_pool.bytes + random_pool.used;
    util_hex(b, nbytes, out);
    OPENSSL_cleanse(b, nbytes);
    random_pool.used += nbytes;
    return 0;
}

void util_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(data, len, md);
    util_hex(md, sizeof(md), out);
}

/* HMAC-SHA256 through a context kept per thread (freed when the thread ends): OpenSSL's
 * one-shot HMAC() fetches the algorithms and builds a context on every call, which cost as
 * much as hashing a 1 KiB job envelope (docs/benchmarks.md, section "throughput"). The
 * context remembers the last key (up to HMAC_KEPT_KEY bytes, wiped when replaced or freed):
 * the same key again, as for every job the ingress signs, only restarts it. */
#define HMAC_KEPT_KEY 1024
typedef struct {
    EVP_MAC_CTX *ctx;
    int keyed; /* key[0..keylen) is the context's key */
    size_t keylen;
    unsigned char key[HMAC_KEPT_KEY];
} hmac_tls_t;

static pthread_key_t hmac_key;
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;
static int hmac_key_ok;

static void hmac_tls_free(void *p)
{
    hmac_tls_t *t = p;
    EVP_MAC_CTX_free(t->ctx);
    OPENSSL_cleanse(t, sizeof(*t));
    free(t);
}

static void hmac_key_init(void)
{
    hmac_key_ok = pthread_key_create(&hmac_key, hmac_tls_free) == 0;
}

/* This thread's context, made on first use; NULL when OpenSSL or memory fails. */
static hmac_tls_t *hmac_tls(void)
{
    pthread_once(&hmac_once, hmac_key_init);
    if (!hmac_key_ok)
        return NULL;
    hmac_tls_t *t = pthread_getspecific(hmac_key);
    if (t)
        return t;
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA256", 0),
                           OSSL_PARAM_construct_end()};
    t = calloc(1, sizeof(*t));
    if (t && mac)
        t->ctx = EVP_MAC_CTX_new(mac);
    EVP_MAC_free(mac);
    if (!t || !t->ctx || !EVP_MAC_CTX_set_params(t->ctx, params) ||
        pthread_setspecific(hmac_key, t) != 0) {
        if (t)
            hmac_tls_free(t);
        return NULL;
    }
    return t;
}

void util_hmac_sha256_hex(const void *key, size_t keylen, const void *data, size_t len,
                          char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    size_t mdlen = 0;
    hmac_tls_t *t = hmac_tls();
    int same = t && t->keyed && t->keylen == keylen && CRYPTO_memcmp(t->key, key, keylen) == 0;
    if (t && EVP_MAC_init(t->ctx, same ? NULL : key, same ? 0 : keylen, NULL) &&
        EVP_MAC_update(t->ctx, data, len) && EVP_MAC_final(t->ctx, md, &mdlen, sizeof(md))) {
        if (!same) {
            OPENSSL_cleanse(t->key, sizeof(t->key));
            t->keyed = keylen <= sizeof(t->key);
            t->keylen = t->keyed ? keylen : 0;
            if (t->keyed)
                memcpy(t->key, key, keylen);
        }
    } else { /* no context: the one-shot way */
        unsigned int n = 0;
        if (t)
            t->keyed = 0;
        HMAC(EVP_sha256(), key, (int)keylen, data, len, md, &n);
        mdlen = n;
    }
    util_hex(md, mdlen, out);
}

int util_ct_equal(const void *a, const void *b, size_t len)
{
    return CRYPTO_memcmp(a, b, len) == 0;
}

int util_id_ok(const char *s, size_t len, size_t max, const char *extra)
{
    if (len == 0 || len > max)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || (c != '\0' && strchr(extra, c))))
            return 0;
    }
    return 1;
}

int util_parse_ll(const char *s, long long min, long long max, long long *out)
{
    if (!s || !*s)
        return MCPQ_EINVAL;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0' || v < min || v > max)
        return MCPQ_EINVAL;
    *out = v;
    return 0;
}

void util_buf_init(util_buf_t *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void util_buf_cleanup(util_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int util_buf_append(util_buf_t *b, const void *p, size_t n)
{
    if (n > b->max || b->len > b->max - n)
        return MCPQ_ETOOBIG;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d)
            return MCPQ_ENOMEM;
        b->data = d;
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

void util_url_host(const char *url, char *out, size_t size)
{
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL;
    snprintf(out, size, "(invalid url)");
    if (u && url && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
        if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK && port)
            snprintf(out, size, "%s:%s", host, port);
        else
            snprintf(out, size, "%s", host);
    }
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
}

int util_parse_listen(const char *listen, util_listen_t *out)
{
    char host[128];
    const char *port_s;
    int v6 = listen[0] == '[';
    if (v6) { /* "[v6]:port": the brackets of a URL authority (RFC 3986) */
        const char *end = strchr(listen, ']');
        if (!end || end[1] != ':' || (size_t)(end - listen - 1) >= sizeof(host))
            return MCPQ_EINVAL;
        memcpy(host, listen + 1, (size_t)(end - listen - 1));
        host[end - listen - 1] = '\0';
        port_s = end + 2;
    } else {
        const char *colon = strrchr(listen, ':');
        if (!colon || (size_t)(colon - listen) >= sizeof(host))
            return MCPQ_EINVAL;
        memcpy(host, listen, (size_t)(colon - listen));
        host[colon - listen] = '\0';
        if (strchr(host, ':')) /* an IPv6 literal needs its brackets */
            return MCPQ_EINVAL;
        port_s = colon + 1;
    }
    long long port;
    if (util_parse_ll(port_s, 0, 65535, &port) < 0)
        return MCPQ_EINVAL;
    memset(out, 0, sizeof(*out));
    if (v6) {
        /* getaddrinfo for the numeric form: it also takes a scope ("fe80::1%eth0"). */
        struct addrinfo hints = {.ai_family = AF_INET6,
                                 .ai_socktype = SOCK_STREAM,
                                 .ai_flags = AI_NUMERICHOST | AI_PASSIVE};
        struct addrinfo *ai = NULL;
        if (!*host || getaddrinfo(host, NULL, &hints, &ai) != 0 || !ai)
            return MCPQ_EINVAL;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out->addr;
        memcpy(in6, ai->ai_addr, sizeof(*in6));
        freeaddrinfo(ai);
        in6->sin6_port = htons((uint16_t)port);
        out->len = sizeof(*in6);
        out->dual_stack = IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr);
        return 0;
    }
    struct sockaddr_in *in = (struct sockaddr_in *)&out->addr;
    in->sin_family = AF_INET;
    in->sin_port = htons((uint16_t)port);
    out->len = sizeof(*in);
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof(host), "127.0.0.1");
    if (!*host || strcmp(host, "*") == 0)
        in->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (inet_pton(AF_INET, host, &in->sin_addr) != 1) /* strict: no "127.1" */
        return MCPQ_EINVAL;
    return 0;
}

void util_listen_format(const struct sockaddr *sa, char *out, size_t size)
{
    char ip[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
    snprintf(out, size, "?");
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        if (inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip)))
            snprintf(out, size, "%s:%u", ip, (unsigned)ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        if (getnameinfo(sa, sizeof(*in6), ip, sizeof(ip), NULL, 0, NI_NUMERICHOST) == 0)
            snprintf(out, size, "[%s]:%u", ip, (unsigned)ntohs(in6->sin6_port));
    }
}

int util_read_secret(const char *path, const char *name, char *out, size_t size, size_t *len,
                     char *errstr, size_t errstr_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(errstr, errstr_size, "%s: cannot open %s: %s", name, path, strerror(errno));
        return MCPQ_EINVAL;
    }
    size_t n = fread(out, 1, size, f);
    int bad = ferror(f);
    fclose(f);
    while (n > 0 && n < size && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        n--;
    const char *why = bad ? "cannot be read" : n >= size ? "is too long" : NULL;
    int nul = !why && memchr(out, 0, n) != NULL;
    if (why)
        snprintf(errstr, errstr_size, "%s: %s %s (at most %zu bytes)", name, path, why, size - 1);
    else if (nul)
        snprintf(errstr, errstr_size, "%s holds a NUL byte (%s)", name, path);
    if (why || nul) {
        memset(out, 0, size);
        return MCPQ_EINVAL;
    }
    out[n] = 0;
    *len = n;
    return 0;
}

int util_word_in(const char *list, const char *word, size_t len)
{
    for (const char *p = list ? list : ""; *p;) {
        p += strspn(p, " ");
        size_t l = strcspn(p, " ");
        if (l && l == len && memcmp(p, word, len) == 0)
            return 1;
        p += l;
    }
    return 0;
}

int util_word_add(char *out, size_t n, const char *word, size_t len)
{
    size_t used = strlen(out);
    if (!len || util_word_in(out, word, len))
        return 0;
    if (used + (used ? 1 : 0) + len + 1 > n)
        return -1;
    if (used)
        out[used++] = ' ';
    memcpy(out + used, word, len);
    out[used + len] = '\0';
    return 0;
}

int util_errf(char *err, size_t err_size, const char *fmt, ...)
{
    if (err && err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
    }
    return MCPQ_EINVAL;
}
