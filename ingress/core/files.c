/*
 * files.c - file storage, signed URLs, the expiry sweep and attachment resolution (files.h).
 */
#include "files.h"

#include "peer.h"
#include "err.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct ing_files {
    ing_ctx_t *ctx;
    unsigned char key[32];
    size_t keylen;
    const char *secret; /* MCPQ_FILES_SECRET when set (then key is unused) */
    pthread_t thread;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop;
    int dir_logged;
};

/* mkdir -p of path (mode 0750). 0 or -1 with errno. */
static int mkdirs(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0750) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0750) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

int ing_files_dir_ok(ing_files_t *f)
{
    const char *dir = f->ctx->set->files_dir;
    struct stat st;
    if (dir && *dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        return 1;
    if (dir && *dir && mkdirs(dir) == 0)
        return 1;
    int e = errno;
    pthread_mutex_lock(&f->lock);
    int first = !f->dir_logged++;
    pthread_mutex_unlock(&f->lock);
    if (first)
        log_event(LOG_ERROR, "files: storage directory unusable; the files API answers 503", "dir",
                  dir ? dir : "", "error", strerror(e), (char *)NULL);
    return 0;
}

int ing_files_path(const ing_files_t *f, const char *name, char *out, size_t size)
{
    int n = snprintf(out, size, "%s/%s", f->ctx->set->files_dir, name);
    return n < 0 || (size_t)n >= size ? MCPQ_ETOOBIG : 0;
}

/* --- pure functions --- */

int ing_files_id_ok(const char *id)
{
    if (!id || strlen(id) != ING_FILE_ID_LEN || id[0] != 'f' || id[1] != '_')
        return 0;
    for (const char *p = id + 2; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

/* Length of the UTF-8 sequence at s (1-4), or 0 when it is not well-formed (overlongs,
 * surrogates and code points past U+10FFFF refused). */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned cp;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return n;
}

int ing_files_filename_ok(const char *name)
{
    if (!name)
        return 0;
    size_t len = strlen(name);
    if (len == 0 || len > ING_FILE_NAME_MAX || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return 0;
    const unsigned char *p = (const unsigned char *)name;
    while (*p) {
        if (*p < 0x20 || *p == 0x7f || *p == '/' || *p == '\\')
            return 0;
        size_t n = utf8_len(p);
        if (!n)
            return 0;
        if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0)
            return 0; /* C1 controls */
        p += n;
    }
    return 1;
}

static int tchar(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

int ing_files_ctype_ok(const char *ct)
{
    if (!ct || strlen(ct) > ING_FILE_CTYPE_MAX)
        return 0;
    const char *p = ct;
    size_t n = 0;
    while (tchar((unsigned char)*p))
        p++, n++;
    if (!n || *p != '/')
        return 0;
    p++;
    n = 0;
    while (tchar((unsigned char)*p))
        p++, n++;
    if (!n)
        return 0;
    if (!*p)
        return 1;
    /* parameters: printable ASCII after a ';' */
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != ';')
        return 0;
    for (; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t')
            return 0;
        else if ((unsigned char)*p >= 0x7f)
            return 0;
    return 1;
}

int ing_files_ctype_eq(const char *a, const char *b)
{
    while (*a && *b) {
        if (*a == ' ' || *a == '\t') {
            a++;
            continue;
        }
        if (*b == ' ' || *b == '\t') {
            b++;
            continue;
        }
        char ca = *a >= 'A' && *a <= 'Z' ? (char)(*a + 32) : *a;
        char cb = *b >= 'A' && *b <= 'Z' ? (char)(*b + 32) : *b;
        if (ca != cb)
            return 0;
        a++, b++;
    }
    while (*a == ' ' || *a == '\t')
        a++;
    while (*b == ' ' || *b == '\t')
        b++;
    return !*a && !*b;
}

void ing_files_sign(const void *key, size_t keylen, const char *method, const char *file_id,
                    long long exp, char out[65])
{
    char msg[160];
    int n = snprintf(msg, sizeof(msg), "%s\n%s\n%lld", method, file_id, exp);
    if (n < 0 || (size_t)n >= sizeof(msg))
        n = (int)sizeof(msg) - 1; /* ids are checked first: never happens */
    util_hmac_sha256_hex(key, keylen, msg, (size_t)n, out);
}

int ing_files_verify(const void *key, size_t keylen, const char *method, const char *file_id,
                     const char *exp, const char *sig, long long now_s)
{
    long long e;
    if (!exp || !sig || !ing_files_id_ok(file_id) || strlen(sig) != 64 ||
        util_parse_ll(exp, 0, 1LL << 40, &e) < 0)
        return MCPQ_EINVAL;
    char want[65];
    ing_files_sign(key, keylen, method, file_id, e, want);
    if (!util_ct_equal(want, sig, 64))
        return MCPQ_EINVAL;
    return now_s > e ? MCPQ_ETIMEDOUT : 0;
}

int ing_files_disposition(const char *filename, char *out, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    util_buf_t b;
    util_buf_init(&b, size ? size - 1 : 0);
    int rc = util_buf_append(&b, "attachment; filename=\"", 22);
    for (const unsigned char *p = (const unsigned char *)filename; rc == 0 && *p; p++) {
        char c = *p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\' ? '_' : (char)*p;
        rc = util_buf_append(&b, &c, 1);
    }
    if (rc == 0)
        rc = util_buf_append(&b, "\"; filename*=UTF-8''", 20);
    for (const unsigned char *p = (const unsigned char *)filename; rc == 0 && *p; p++) {
        /* RFC 8187 attr-char: ALPHA DIGIT ! # $ & + - . ^ _ ` | ~ */
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || strchr("!#$&+-.^_`|~", *p);
        if (plain && *p) {
            rc = util_buf_append(&b, p, 1);
        } else {
            char enc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            rc = util_buf_append(&b, enc, 3);
        }
    }
    if (rc == 0 && size)
        memcpy(out, b.data ? b.data : "", b.len + 1);
    util_buf_cleanup(&b);
    return rc == 0 && size ? 0 : MCPQ_ETOOBIG;
}

/* --- URLs --- */

static void url_key(const ing_files_t *f, const void **key, size_t *keylen)
{
    if (f->secret) {
        *key = f->secret;
        *keylen = strlen(f->secret);
    } else {
        *key = f->key;
        *keylen = f->keylen;
    }
}

int ing_files_url(const ing_files_t *f, const char *host, const char *method, const char *file_id,
                  long long exp, char *out, size_t size)
{
    const mcpq_settings_t *set = f->ctx->set;
    char base[512];
    int brc = ing_peer_public_base(set->public_url, set->allowed_hosts, host ? host : set->listen,
                                   base, sizeof(base));
    if (brc == MCPQ_EUNAVAIL) /* a Host the caller chose must not decide where the URL points */
        log_event(LOG_WARN, "files: no URL built: " ING_FILES_NO_BASE, (char *)NULL);
    if (brc)
        return brc;
    const void *key;
    size_t keylen;
    url_key(f, &key, &keylen);
    char sig[65];
    ing_files_sign(key, keylen, method, file_id, exp, sig);
    int n = snprintf(out, size, "%s/v1/files/%s/content?exp=%lld&sig=%s", base, file_id, exp, sig);
    return n < 0 || (size_t)n >= size ? MCPQ_ETOOBIG : 0;
}

int ing_files_check(const ing_files_t *f, const char *method, const char *file_id, const char *exp,
                    const char *sig)
{
    const void *key;
    size_t keylen;
    url_key(f, &key, &keylen);
    return ing_files_verify(key, keylen, method, file_id, exp, sig, util_now_ms() / 1000);
}

/* --- attachments --- */

static int attach_fail(char *why, size_t why_size, size_t i, const char *msg)
{
    snprintf(why, why_size, "attachments[%zu]: %s", i, msg);
    return MCPQ_EINVAL;
}

/* The shape of attachment a (index i): an object with a well-formed file_id and, when given,
 * filename and content_type (their items in *id, *fname, *ctype). 0 or MCPQ_EINVAL with why set. */
static int attach_shape(const cJSON *a, size_t i, const cJSON **id, const cJSON **fname,
                        const cJSON **ctype, char *why, size_t why_size)
{
    if (!cJSON_IsObject(a))
        return attach_fail(why, why_size, i,
                           "must be an object {file_id, filename?, "
                           "content_type?}");
    *id = cJSON_GetObjectItemCaseSensitive(a, "file_id");
    *fname = cJSON_GetObjectItemCaseSensitive(a, "filename");
    *ctype = cJSON_GetObjectItemCaseSensitive(a, "content_type");
    if (!cJSON_IsString(*id))
        return attach_fail(why, why_size, i, "file_id must be a string");
    if (*fname && !cJSON_IsNull(*fname) &&
        (!cJSON_IsString(*fname) || !ing_files_filename_ok((*fname)->valuestring)))
        return attach_fail(why, why_size, i,
                           "filename must be 1-255 bytes of UTF-8 without '/', '\\' or "
                           "control characters");
    if (*ctype && !cJSON_IsNull(*ctype) &&
        (!cJSON_IsString(*ctype) || !ing_files_ctype_ok((*ctype)->valuestring)))
        return attach_fail(why, why_size, i, "content_type must be a media type type/subtype");
    if (!ing_files_id_ok((*id)->valuestring))
        return attach_fail(why, why_size, i, "unknown file_id");
    return 0;
}

/* Attachment i from r, the file's HMGET tenant state filename content_type size sha256: checked
 * against tenant and ctype (the caller's content_type, or NULL), with a download URL valid
 * until exp, appended to arr. 0, or MCPQ_EINVAL / MCPQ_EUNAVAIL with why set. */
static int attach_entry(ing_files_t *f, const char *host, const char *tenant, const redisReply *r,
                        size_t i, const cJSON *id, const cJSON *fname, const cJSON *ctype,
                        long long exp, cJSON *arr, char *why, size_t why_size)
{
    const char *v[6];
    for (int j = 0; j < 6; j++)
        v[j] = r->element[j]->type == REDIS_REPLY_STRING ? r->element[j]->str : NULL;
    long long size = 0;
    if (!v[0] || strcmp(v[0], tenant) != 0 || !v[2] || !v[3] || !v[4] ||
        util_parse_ll(v[4], 0, 1LL << 50, &size) < 0)
        return attach_fail(why, why_size, i, "unknown file_id"); /* foreign ids too */
    if (!v[1] || strcmp(v[1], "ready") != 0 || !v[5])
        return attach_fail(why, why_size, i, "file_id has not been uploaded yet");
    if (cJSON_IsString(ctype) && !ing_files_ctype_eq(ctype->valuestring, v[3])) {
        char msg[200];
        snprintf(msg, sizeof(msg), "content_type does not match the uploaded file's (%.120s)",
                 v[3]);
        return attach_fail(why, why_size, i, msg);
    }
    char url[ING_FILES_URL_MAX];
    int urc = ing_files_url(f, host, "GET", id->valuestring, exp, url, sizeof(url));
    if (urc < 0) {
        snprintf(why, why_size, "%s",
                 urc == MCPQ_EUNAVAIL ? ING_FILES_NO_BASE : "MCPQ_PUBLIC_URL too long");
        return MCPQ_EUNAVAIL;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file_id", id->valuestring);
    cJSON_AddStringToObject(o, "filename", cJSON_IsString(fname) ? fname->valuestring : v[2]);
    cJSON_AddStringToObject(o, "content_type", v[3]);
    cJSON_AddNumberToObject(o, "size", (double)size);
    cJSON_AddStringToObject(o, "sha256", v[5]);
    cJSON_AddStringToObject(o, "url", url);
    cJSON_AddItemToArray(arr, o);
    return 0;
}

int ing_files_attach(ing_files_t *f, const char *host, const char *tenant, const cJSON *atts,
                     long long valid_s, cJSON **out, char *why, size_t why_size)
{
    *out = NULL;
    if (!atts || cJSON_IsNull(atts)) {
        *out = cJSON_CreateArray();
        return *out ? 0 : MCPQ_ENOMEM;
    }
    if (!cJSON_IsArray(atts)) {
        snprintf(why, why_size,
                 "attachments must be an array of {file_id, filename?, "
                 "content_type?}");
        return MCPQ_EINVAL;
    }
    int count = cJSON_GetArraySize(atts);
    if (count > ING_FILES_ATTACH_MAX) {
        snprintf(why, why_size, "attachments: at most %d files per call", ING_FILES_ATTACH_MAX);
        return MCPQ_EINVAL;
    }
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return MCPQ_ENOMEM;
    int rc = 0;
    size_t i = 0;
    long long exp = util_now_ms() / 1000 + valid_s;
    for (const cJSON *a = atts->child; a; a = a->next, i++) {
        const cJSON *id = NULL, *fname = NULL, *ctype = NULL;
        rc = attach_shape(a, i, &id, &fname, &ctype, why, why_size);
        if (rc < 0)
            break;
        char key[64], err[256];
        snprintf(key, sizeof(key), ING_FILE_KEY_PREFIX "%s", id->valuestring);
        const char *argv[] = {"HMGET",        key,    "tenant", "state", "filename",
                              "content_type", "size", "sha256"};
        redisReply *r = kv_pool_commandargv(f->ctx->kv, err, sizeof(err), 8, argv, NULL);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 6) {
            log_event(LOG_ERROR, "files: attachment lookup failed", "tenant", tenant, "error",
                      r ? "unexpected reply" : err, (char *)NULL);
            if (r)
                freeReplyObject(r);
            snprintf(why, why_size, "file store (Redis) unavailable; try again");
            rc = MCPQ_EUNAVAIL;
            break;
        }
        rc = attach_entry(f, host, tenant, r, i, id, fname, ctype, exp, arr, why, why_size);
        freeReplyObject(r);
        if (rc < 0)
            break;
    }
    if (rc < 0) {
        cJSON_Delete(arr);
        return rc;
    }
    *out = arr;
    return 0;
}

/* --- expiry sweep --- */

/* One pass over the storage directory: a stored file whose metadata is gone is deleted; a
 * temporary file untouched for stale_s (an upload that died) too. Another replica may be
 * doing the same: a file already gone is fine. */
static void sweep_once(ing_files_t *f)
{
    const mcpq_settings_t *set = f->ctx->set;
    DIR *d = opendir(set->files_dir);
    if (!d)
        return;
    long long stale_s = set->files_url_ttl_s + 2 * set->conn_timeout_s;
    time_t now = time(NULL);
    int removed = 0;
    struct dirent *de;
    while (!f->stop && (de = readdir(d)) != NULL) {
        char path[4096], key[300], err[256];
        if (ing_files_id_ok(de->d_name)) {
            snprintf(key, sizeof(key), ING_FILE_KEY_PREFIX "%s", de->d_name);
            const char *argv[] = {"EXISTS", key};
            redisReply *r = kv_pool_commandargv(f->ctx->kv, err, sizeof(err), 2, argv, NULL);
            int gone = r && r->type == REDIS_REPLY_INTEGER && r->integer == 0;
            if (r)
                freeReplyObject(r);
            if (!r)
                break; /* Redis away: try again next time, delete nothing blindly */
            if (gone && ing_files_path(f, de->d_name, path, sizeof(path)) == 0 &&
                (unlink(path) == 0 || errno == ENOENT)) {
                removed++;
                log_event(LOG_INFO, "files: expired file deleted", "file_id", de->d_name,
                          (char *)NULL);
            }
        } else if (strncmp(de->d_name, ".tmp-", 5) == 0) {
            struct stat st;
            if (ing_files_path(f, de->d_name, path, sizeof(path)) == 0 && stat(path, &st) == 0 &&
                now - st.st_mtime > stale_s)
                unlink(path);
        }
    }
    closedir(d);
    (void)removed;
}

static void *sweep_thread(void *arg)
{
    ing_files_t *f = arg;
    pthread_mutex_lock(&f->lock);
    while (!f->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += f->ctx->set->files_sweep_s;
        pthread_cond_timedwait(&f->cond, &f->lock, &ts);
        if (f->stop)
            break;
        pthread_mutex_unlock(&f->lock);
        sweep_once(f);
        pthread_mutex_lock(&f->lock);
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

ing_files_t *ing_files_new(ing_ctx_t *ctx)
{
    ing_files_t *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->ctx = ctx;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->cond, NULL);
    if (ctx->set->files_secret && *ctx->set->files_secret) {
        f->secret = ctx->set->files_secret;
    } else {
        f->keylen = sizeof(f->key);
        if (RAND_bytes(f->key, (int)f->keylen) != 1) {
            ing_files_free(f);
            return NULL;
        }
        log_event(LOG_WARN,
                  "files: MCPQ_FILES_SECRET is not set; file URLs are signed with a key of this "
                  "process only (set it when there is more than one replica)",
                  (char *)NULL);
    }
    ing_files_dir_ok(f);
    return f;
}

int ing_files_start(ing_files_t *f)
{
    if (pthread_create(&f->thread, NULL, sweep_thread, f) != 0)
        return MCPQ_EIO;
    f->started = 1;
    return 0;
}

void ing_files_free(ing_files_t *f)
{
    if (!f)
        return;
    if (f->started) {
        pthread_mutex_lock(&f->lock);
        f->stop = 1;
        pthread_cond_signal(&f->cond);
        pthread_mutex_unlock(&f->lock);
        pthread_join(f->thread, NULL);
    }
    pthread_mutex_destroy(&f->lock);
    pthread_cond_destroy(&f->cond);
    OPENSSL_cleanse(f->key, sizeof(f->key));
    free(f);
}
