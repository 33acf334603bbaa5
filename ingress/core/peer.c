/*
 * peer.c - the client a request is counted under (peer.h).
 */
#include "peer.h"

#include "err.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NETS_MAX 256

/* An address: 4 bytes for IPv4 (IPv4-mapped IPv6 included), 16 for IPv6. */
typedef struct ip {
    int len;
    unsigned char b[16];
} ip_t;

typedef struct net {
    ip_t base;
    int bits;
} net_t;

struct ing_peer_nets {
    size_t n;
    net_t nets[];
};

static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* An IPv6 address's 16 bytes: IPv4-mapped ones become their IPv4 address. */
static void ip_of_v6(const unsigned char *b, ip_t *ip)
{
    if (memcmp(b, v4_mapped, 12) == 0) {
        ip->len = 4;
        memcpy(ip->b, b + 12, 4);
    } else {
        ip->len = 16;
        memcpy(ip->b, b, 16);
    }
}

static int ip_of_sockaddr(const struct sockaddr *sa, ip_t *ip)
{
    if (sa && sa->sa_family == AF_INET) {
        ip->len = 4;
        memcpy(ip->b, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 0;
    }
    if (sa && sa->sa_family == AF_INET6) {
        ip_of_v6(((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr, ip);
        return 0;
    }
    return MCPQ_EINVAL;
}

/* An address as text (len bytes at s, no port): 0 or MCPQ_EINVAL. */
static int ip_parse(const char *s, size_t len, ip_t *ip)
{
    char buf[INET6_ADDRSTRLEN + 1];
    if (len == 0 || len >= sizeof(buf))
        return MCPQ_EINVAL;
    memcpy(buf, s, len);
    buf[len] = '\0';
    unsigned char b[16];
    if (inet_pton(AF_INET, buf, b) == 1) {
        ip->len = 4;
        memcpy(ip->b, b, 4);
        return 0;
    }
    if (inet_pton(AF_INET6, buf, b) == 1) {
        ip_of_v6(b, ip);
        return 0;
    }
    return MCPQ_EINVAL;
}

static int net_has(const net_t *n, const ip_t *ip)
{
    if (n->base.len != ip->len)
        return 0;
    int full = n->bits / 8, rest = n->bits % 8;
    if (memcmp(n->base.b, ip->b, (size_t)full) != 0)
        return 0;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return rest == 0 || (n->base.b[full] & mask) == (ip->b[full] & mask);
}

static int nets_has(const ing_peer_nets_t *nets, const ip_t *ip)
{
    for (size_t i = 0; nets && i < nets->n; i++)
        if (net_has(&nets->nets[i], ip))
            return 1;
    return 0;
}

/* Trims blanks: the entry [*s, *s + *len). */
static void trim(const char **s, size_t *len)
{
    while (*len && (**s == ' ' || **s == '\t'))
        (*s)++, (*len)--;
    while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t'))
        (*len)--;
}

ing_peer_nets_t *ing_peer_nets_parse(const char *list, char *errstr, size_t errstr_size)
{
    ing_peer_nets_t *nets = calloc(1, sizeof(*nets) + NETS_MAX * sizeof(net_t));
    if (!nets) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        const char *e = p;
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        p = comma ? comma + 1 : NULL;
        trim(&e, &len);
        if (!len)
            continue;
        const char *slash = memchr(e, '/', len);
        net_t *n = &nets->nets[nets->n];
        size_t alen = slash ? (size_t)(slash - e) : len;
        int ok = nets->n < NETS_MAX && ip_parse(e, alen, &n->base) == 0;
        n->bits = n->base.len * 8;
        if (ok && slash) {
            char *end = NULL;
            long bits = strtol(slash + 1, &end, 10);
            ok = slash + 1 < e + len && end == e + len && bits >= 0 && bits <= n->base.len * 8;
            n->bits = (int)bits;
        }
        if (!ok) {
            snprintf(errstr, errstr_size,
                     "MCPQ_TRUSTED_PROXIES: \"%.*s\" is not an address or CIDR block (at most %d "
                     "entries)",
                     (int)(len > 80 ? 80 : len), e, NETS_MAX);
            free(nets);
            return NULL;
        }
        nets->n++;
    }
    return nets;
}

void ing_peer_nets_free(ing_peer_nets_t *nets)
{
    free(nets);
}

int ing_peer_nets_contains(const ing_peer_nets_t *nets, const struct sockaddr *sa)
{
    ip_t ip;
    return ip_of_sockaddr(sa, &ip) == 0 && nets_has(nets, &ip);
}

/* One X-Forwarded-For entry: an address, maybe bracketed, maybe with a port. */
static int xff_entry(const char *s, size_t len, ip_t *ip)
{
    trim(&s, &len);
    if (len && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        return close ? ip_parse(s + 1, (size_t)(close - s - 1), ip) : MCPQ_EINVAL;
    }
    const char *colon = memchr(s, ':', len);
    if (colon && !memchr(colon + 1, ':', len - (size_t)(colon + 1 - s)))
        len = (size_t)(colon - s); /* IPv4 with a port */
    return ip_parse(s, len, ip);
}

static void ip_name(const ip_t *ip, char *out, size_t size)
{
    char text[INET6_ADDRSTRLEN];
    if (ip->len == 4) {
        inet_ntop(AF_INET, ip->b, text, sizeof(text));
        snprintf(out, size, "%s", text);
        return;
    }
    unsigned char b[16] = {0};
    memcpy(b, ip->b, 8);
    inet_ntop(AF_INET6, b, text, sizeof(text));
    snprintf(out, size, "%s/64", text);
}

int ing_peer_client(const struct sockaddr *peer, const char *xff, const ing_peer_nets_t *trusted,
                    char *out, size_t size)
{
    ip_t client;
    if (ip_of_sockaddr(peer, &client) < 0) {
        snprintf(out, size, "unknown");
        return MCPQ_EINVAL;
    }
    /* From the right: each hop that is a trusted proxy hands over to the one before it. */
    size_t end = xff ? strlen(xff) : 0;
    while (nets_has(trusted, &client) && end > 0) {
        size_t start = end;
        while (start > 0 && xff[start - 1] != ',')
            start--;
        ip_t hop;
        if (xff_entry(xff + start, end - start, &hop) < 0)
            break;
        client = hop;
        end = start ? start - 1 : 0;
    }
    ip_name(&client, out, size);
    return 0;
}

/* Does one list entry (len bytes) match value? A trailing ":*" matches any port or none. */
static int entry_matches(const char *e, size_t len, const char *value)
{
    while (len && (*e == ' ' || *e == '\t'))
        e++, len--;
    while (len && (e[len - 1] == ' ' || e[len - 1] == '\t'))
        len--;
    if (!len)
        return 0;
    if (len >= 2 && e[len - 2] == ':' && e[len - 1] == '*') {
        size_t base = len - 2;
        if (strncasecmp(value, e, base) != 0)
            return 0;
        const char *rest = value + base;
        if (*rest == '\0')
            return 1;
        if (*rest != ':' || !rest[1])
            return 0;
        for (const char *p = rest + 1; *p; p++)
            if (*p < '0' || *p > '9')
                return 0;
        return 1;
    }
    return strlen(value) == len && strncasecmp(value, e, len) == 0;
}

int ing_peer_listed(const char *list, const char *value)
{
    const char *p = list;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (entry_matches(p, len, value))
            return 1;
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

/* 1 when host is a sane Host header value (name or IP literal, optional port). */
static int host_ok(const char *host)
{
    size_t n = strlen(host);
    if (n == 0 || n > 255)
        return 0;
    for (const char *p = host; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr(".-:[]_", *p)))
            return 0;
    return 1;
}

/* The local machine on any port: what `make up` and scripts/mcpq-local are reached at. */
static const char loopback_hosts[] = "localhost:*,127.0.0.1:*,[::1]:*";

/* 1 when host may name where the ingress's own absolute URLs point without MCPQ_PUBLIC_URL: a
 * loopback host, or one MCPQ_ALLOWED_HOSTS lists (the operator's word, not the caller's). */
static int host_trusted(const char *allowed_hosts, const char *host)
{
    if (!host || !host_ok(host))
        return 0;
    if (ing_peer_listed(loopback_hosts, host))
        return 1;
    return allowed_hosts && *allowed_hosts && ing_peer_listed(allowed_hosts, host);
}

int ing_peer_public_base(const char *public_url, const char *allowed_hosts, const char *host,
                         char *out, size_t size)
{
    int n;
    if (public_url && *public_url) {
        size_t len = strlen(public_url);
        while (len && public_url[len - 1] == '/')
            len--;
        n = snprintf(out, size, "%.*s", (int)len, public_url);
    } else if (host_trusted(allowed_hosts, host)) {
        n = snprintf(out, size, "http://%s", host);
    } else {
        return MCPQ_EUNAVAIL;
    }
    return n < 0 || (size_t)n >= size ? MCPQ_ETOOBIG : 0;
}
