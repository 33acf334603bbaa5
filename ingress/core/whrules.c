/*
 * whrules.c - the rules of webhook delivery that need no network or Redis (webhook.h): the
 * retry schedule and the next attempt's delay, Retry-After, and the SSRF guard's address
 * classifier and config check. Pure functions, thread-safe.
 */
#include "webhook.h"

#include "err.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

int ing_whrules_schedule_parse(const char *text, ing_whrules_schedule_t *out, char *errstr,
                               size_t errstr_size)
{
    memset(out, 0, sizeof(*out));
    const char *p = text ? text : "";
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        size_t len = strcspn(p, ",");
        size_t end = len;
        while (end && (p[end - 1] == ' ' || p[end - 1] == '\t'))
            end--;
        char num[24];
        long long v;
        if (end == 0 || end >= sizeof(num))
            goto bad;
        memcpy(num, p, end);
        num[end] = '\0';
        if (util_parse_ll(num, 0, ING_WH_SCHEDULE_ENTRY_MAX_S, &v) < 0)
            goto bad;
        if (out->n >= ING_WH_SCHEDULE_MAX) {
            snprintf(errstr, errstr_size, "MCPQ_WEBHOOK_RETRY_SCHEDULE: more than %d attempts",
                     ING_WH_SCHEDULE_MAX);
            return MCPQ_EINVAL;
        }
        out->s[out->n++] = v;
        if (!p[len])
            return 0;
        p += len + 1;
    }
bad:
    snprintf(errstr, errstr_size,
             "MCPQ_WEBHOOK_RETRY_SCHEDULE: \"%s\" is not a comma list of seconds (each 0..%lld)",
             text ? text : "", ING_WH_SCHEDULE_ENTRY_MAX_S);
    return MCPQ_EINVAL;
}

long long ing_whrules_next_delay_ms(const ing_whrules_schedule_t *s, long long attempt,
                                    long long retry_after_ms)
{
    if (attempt < 1)
        attempt = 1;
    if (attempt >= s->n)
        return -1;
    long long d = s->s[attempt] * 1000;
    if (retry_after_ms > d)
        d = retry_after_ms > ING_WH_RETRY_AFTER_MAX_MS ? ING_WH_RETRY_AFTER_MAX_MS : retry_after_ms;
    return d;
}

long long ing_whrules_retry_after_ms(const char *value, int64_t now_ms)
{
    if (!value)
        return -1;
    char v[128];
    while (*value == ' ' || *value == '\t')
        value++;
    size_t n = strlen(value);
    while (n && (value[n - 1] == ' ' || value[n - 1] == '\t' || value[n - 1] == '\r' ||
                 value[n - 1] == '\n'))
        n--;
    if (n == 0 || n >= sizeof(v))
        return -1;
    memcpy(v, value, n);
    v[n] = '\0';
    long long ms;
    if (isdigit((unsigned char)v[0])) {
        long long s;
        if (util_parse_ll(v, 0, 1LL << 40, &s) < 0)
            return -1;
        ms = s > ING_WH_RETRY_AFTER_MAX_MS / 1000 ? ING_WH_RETRY_AFTER_MAX_MS : s * 1000;
    } else {
        /* An HTTP-date (IMF-fixdate, RFC 850 or asctime): libcurl parses all three. */
        if (!strchr(v, ' '))
            return -1;
        time_t t = curl_getdate(v, NULL);
        if (t == (time_t)-1)
            return -1;
        ms = (long long)t * 1000 - now_ms;
    }
    if (ms < 0)
        ms = 0;
    return ms > ING_WH_RETRY_AFTER_MAX_MS ? ING_WH_RETRY_AFTER_MAX_MS : ms;
}

static const char *v4_refused(uint32_t a)
{
    if ((a >> 24) == 0)
        return "an unspecified (0.0.0.0/8) address";
    if ((a >> 24) == 127)
        return "a loopback address";
    if ((a >> 24) == 10 || (a & 0xfff00000u) == 0xac100000u || (a & 0xffff0000u) == 0xc0a80000u)
        return "a private (RFC 1918) address";
    if ((a & 0xffff0000u) == 0xa9fe0000u)
        return "a link-local address";
    if ((a & 0xffc00000u) == 0x64400000u)
        return "a shared (CGNAT, 100.64.0.0/10) address";
    if ((a & 0xffffff00u) == 0xc0000000u)
        return "an IETF protocol assignment (192.0.0.0/24) address";
    if ((a & 0xfffe0000u) == 0xc6120000u)
        return "a benchmarking (198.18.0.0/15) address";
    if ((a & 0xffffff00u) == 0xc0000200u || (a & 0xffffff00u) == 0xc6336400u ||
        (a & 0xffffff00u) == 0xcb007100u)
        return "a documentation (TEST-NET) address";
    if ((a >> 28) == 0xe)
        return "a multicast address";
    if ((a >> 28) == 0xf)
        return "a reserved or broadcast (240.0.0.0/4) address";
    return NULL;
}

static uint32_t v4_at(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static const char *v6_refused(const unsigned char *b)
{
    static const unsigned char zero[16] = {0};
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b};
    static const unsigned char teredo[4] = {0x20, 0x01, 0, 0};
    static const unsigned char nat64_local[6] = {0, 0x64, 0xff, 0x9b, 0, 1};
    static const unsigned char discard[8] = {0x01, 0x00};
    if (memcmp(b, zero, 16) == 0)
        return "an unspecified address";
    if (memcmp(b, zero, 15) == 0 && b[15] == 1)
        return "a loopback address";
    /* IPv4-mapped, IPv4-compatible, NAT64 (64:ff9b::/96): judged by the IPv4 inside. */
    if (memcmp(b, mapped, 12) == 0 || memcmp(b, zero, 12) == 0 || memcmp(b, nat64, 12) == 0)
        return v4_refused(v4_at(b + 12));
    if (b[0] == 0x20 && b[1] == 0x02) /* 6to4: 2002:AABB:CCDD::/48 */
        return v4_refused(v4_at(b + 2));
    if (memcmp(b, teredo, 4) == 0)
        return "a Teredo (2001::/32) address";
    if (memcmp(b, nat64_local, 6) == 0)
        return "a local-use NAT64 (64:ff9b:1::/48) address";
    if (memcmp(b, discard, 8) == 0)
        return "a discard-only (100::/64) address";
    if ((b[0] & 0xfe) == 0xfc)
        return "a unique local (fc00::/7) address";
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
        return "a link-local address";
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
        return "a site-local (fec0::/10) address";
    if (b[0] == 0xff)
        return "a multicast address";
    return NULL;
}

const char *ing_whrules_addr_refused(const struct sockaddr *sa)
{
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return v4_refused(ntohl(in->sin_addr.s_addr));
    }
    if (sa && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        return v6_refused(in6->sin6_addr.s6_addr);
    }
    return "not an IP address";
}

curl_socket_t ing_whrules_socket(void *guard, curlsocktype purpose, struct curl_sockaddr *a)
{
    ing_whrules_guard_t *g = guard;
    const char *why = g->off ? NULL : ing_whrules_addr_refused(&a->addr);
    (void)purpose;
    if (!why)
        return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    char ip[INET6_ADDRSTRLEN] = "?";
    if (a->family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)&a->addr)->sin_addr, ip, sizeof(ip));
    else if (a->family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&a->addr)->sin6_addr, ip, sizeof(ip));
    snprintf(g->refused, sizeof(g->refused), "refused: %s resolves to %s, %s (%s)", g->subject, ip,
             why, g->hint);
    return CURL_SOCKET_BAD;
}

const char *ing_whrules_url_refused(const char *url, char *host_out, size_t host_size)
{
    char host[256];
    if (host_out && host_size)
        host_out[0] = '\0';
    const char *p = url ? strstr(url, "://") : NULL;
    if (!p)
        return NULL;
    p += 3;
    size_t auth = strcspn(p, "/?#");
    const char *at = memchr(p, '@', auth);
    while (at) { /* the host follows the last '@' of the authority */
        const char *next = memchr(at + 1, '@', auth - (size_t)(at + 1 - p));
        if (!next)
            break;
        at = next;
    }
    if (at) {
        auth -= (size_t)(at + 1 - p);
        p = at + 1;
    }
    size_t len;
    if (*p == '[') {
        const char *close = memchr(p, ']', auth);
        if (!close)
            return NULL;
        p++;
        len = (size_t)(close - p);
    } else {
        len = strcspn(p, ":/?#");
        if (len > auth)
            len = auth;
    }
    if (len == 0 || len >= sizeof(host))
        return NULL;
    memcpy(host, p, len);
    host[len] = '\0';
    if (host_out && host_size)
        snprintf(host_out, host_size, "%s", host);
    char *zone = strchr(host, '%');
    if (zone)
        *zone = '\0';
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return v6_refused(a6.s6_addr);
    if (inet_aton(host, &a4) == 1)
        return v4_refused(ntohl(a4.s_addr));
    return NULL;
}

int ing_whrules_config_check(const cJSON *config, char *errstr, size_t errstr_size)
{
    int ti = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(config, "tenants"))
    {
        int wi = 0;
        const cJSON *w;
        cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(t, "webhooks"))
        {
            char host[256];
            const char *url = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(w, "url"));
            const char *why = ing_whrules_url_refused(url, host, sizeof(host));
            if (why) {
                snprintf(errstr, errstr_size,
                         "$.tenants[%d].webhooks[%d].url: host %s is %s; webhook targets must be "
                         "public unless MCPQ_WEBHOOK_ALLOW_PRIVATE=1",
                         ti, wi, host, why);
                return MCPQ_EINVAL;
            }
            wi++;
        }
        ti++;
    }
    return 0;
}
