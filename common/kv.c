#include "kv.h"

#include "err.h"
#include "kvtls.h"
#include "log.h"
#include "settings.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KV_MAX_SENTINELS 16

typedef struct kv_hostport {
    char host[256];
    int port;
} kv_hostport_t;

struct kv_target {
    kv_url_t url;
    SSL_CTX *tls;          /* rediss:// */
    char server_name[256]; /* MCPQ_REDIS_TLS_SERVER_NAME; empty: the host connected to */
    kv_hostport_t sentinels[KV_MAX_SENTINELS];
    size_t nsentinels;
    char master[256];
    char sentinel_password[256]; /* MCPQ_REDIS_SENTINEL_PASSWORD[_FILE]: AUTH at the sentinels */
    int cluster;                 /* MCPQ_REDIS_CLUSTER: the URL names a node of a Redis Cluster */
    atomic_uint next_sentinel;   /* the one that answered last is asked first */
    atomic_uint generation;      /* bumped on a failover or a broken connection: idle ones go */
    char describe[320];
};

/* Copies a URL part into out, percent-decoded when decode is set; 0 (also when absent, then
 * out is ""), or MCPQ_EINVAL when it does not fit or decodes to a NUL byte. */
static int part_get(CURLU *h, CURLUPart part, int decode, char *out, size_t size)
{
    char *raw = NULL;
    out[0] = 0;
    if (curl_url_get(h, part, &raw, 0) != CURLUE_OK)
        return 0; /* absent */
    int len = 0;
    char *v = decode ? curl_easy_unescape(NULL, raw, 0, &len) : raw;
    size_t n = decode ? (size_t)(v ? len : 0) : strlen(raw);
    int ok = v && n < size && memchr(v, 0, n) == NULL;
    if (ok) {
        memcpy(out, v, n);
        out[n] = 0;
    }
    if (decode && v) {
        memset(v, 0, n); /* it may be a password */
        curl_free(v);
    }
    curl_free(raw);
    return ok ? 0 : MCPQ_EINVAL;
}

static int parse_db(const char *s, int *db)
{
    long long v;
    if (util_parse_ll(s, 0, 1000000, &v) < 0)
        return MCPQ_EINVAL;
    *db = (int)v;
    return 0;
}

/* unix:///path?db=N: libcurl folds a third slash into the host for schemes it does not
 * know, so the path is read the way it reads file:// URLs. */
static int parse_unix(const char *url, kv_url_t *u, char *errstr, size_t errstr_size)
{
    char file[600];
    if (snprintf(file, sizeof(file), "file%s", url + 4) >= (int)sizeof(file)) {
        snprintf(errstr, errstr_size, "Redis URL too long");
        return MCPQ_EINVAL;
    }
    CURLU *h = curl_url();
    int rc = MCPQ_EINVAL;
    char query[64];
    if (!h || curl_url_set(h, CURLUPART_URL, file, 0) != CURLUE_OK) {
        snprintf(errstr, errstr_size, "bad Redis URL (want unix:///path/redis.sock?db=N)");
    } else if (part_get(h, CURLUPART_PATH, 1, u->path, sizeof(u->path)) < 0 || !u->path[0] ||
               strcmp(u->path, "/") == 0) {
        snprintf(errstr, errstr_size, "bad Redis URL: unix:// needs a socket path");
    } else if (part_get(h, CURLUPART_QUERY, 0, query, sizeof(query)) < 0 ||
               (query[0] && (strncmp(query, "db=", 3) != 0 || parse_db(query + 3, &u->db) < 0))) {
        snprintf(errstr, errstr_size, "bad Redis URL: the only query is db=N");
    } else {
        u->unix_socket = 1;
        rc = 0;
    }
    curl_url_cleanup(h);
    return rc;
}

/* kv_url_parse with the port used when the URL names none. */
static int url_parse(const char *url, int default_port, kv_url_t *u, char *errstr,
                     size_t errstr_size)
{
    memset(u, 0, sizeof(*u));
    u->port = default_port;
    if (strncmp(url, "unix://", 7) == 0)
        return parse_unix(url, u, errstr, errstr_size);
    if (strncmp(url, "redis://", 8) == 0)
        u->tls = 0;
    else if (strncmp(url, "rediss://", 9) == 0)
        u->tls = 1;
    else {
        snprintf(errstr, errstr_size,
                 "bad Redis URL: want redis://, rediss:// or unix:// (docs/production.md)");
        return MCPQ_EINVAL;
    }
    CURLU *h = curl_url();
    char port[16], path[64], query[8];
    int rc = MCPQ_EINVAL;
    if (!h || curl_url_set(h, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
        snprintf(errstr, errstr_size,
                 "bad Redis URL (want redis://[user[:password]@]host[:port]"
                 "[/db]; percent-encode reserved characters)");
    } else if (part_get(h, CURLUPART_HOST, 0, u->host, sizeof(u->host)) < 0 || !u->host[0]) {
        snprintf(errstr, errstr_size, "bad Redis URL: no host");
    } else if (part_get(h, CURLUPART_USER, 1, u->user, sizeof(u->user)) < 0 ||
               part_get(h, CURLUPART_PASSWORD, 1, u->password, sizeof(u->password)) < 0) {
        snprintf(errstr, errstr_size, "bad Redis URL: user or password too long or holds %%00");
    } else if (part_get(h, CURLUPART_PORT, 0, port, sizeof(port)) < 0 ||
               part_get(h, CURLUPART_PATH, 0, path, sizeof(path)) < 0 ||
               part_get(h, CURLUPART_QUERY, 0, query, sizeof(query)) < 0 || query[0]) {
        snprintf(errstr, errstr_size, "bad Redis URL: want host[:port][/db]");
    } else if (path[0] && strcmp(path, "/") != 0 && parse_db(path + 1, &u->db) < 0) {
        snprintf(errstr, errstr_size, "bad Redis URL: the path is the database number (/0)");
    } else if (port[0] && atoi(port) <= 0) { /* libcurl has checked at most 65535 */
        snprintf(errstr, errstr_size, "bad Redis URL: port 0");
    } else {
        rc = 0;
        if (port[0])
            u->port = atoi(port);
        size_t n = strlen(u->host);
        if (u->host[0] == '[' && n > 2 && u->host[n - 1] == ']') { /* IPv6 literal */
            memmove(u->host, u->host + 1, n - 2);
            u->host[n - 2] = 0;
        }
    }
    curl_url_cleanup(h);
    if (rc < 0)
        memset(u, 0, sizeof(*u));
    return rc;
}

int kv_url_parse(const char *url, kv_url_t *u, char *errstr, size_t errstr_size)
{
    return url_parse(url, 6379, u, errstr, errstr_size);
}

/* "host:port,[v6]:port,..." into t->sentinels. */
static int parse_sentinels(kv_target_t *t, const char *list, char *errstr, size_t errstr_size)
{
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        char url[300];
        kv_url_t u;
        char why[128];
        if (t->nsentinels == KV_MAX_SENTINELS || n == 0 || n > 260) {
            snprintf(errstr, errstr_size,
                     "MCPQ_REDIS_SENTINELS: want host:port,... (at most %d entries)",
                     KV_MAX_SENTINELS);
            return MCPQ_EINVAL;
        }
        snprintf(url, sizeof(url), "redis://%.*s", (int)n, p);
        if (url_parse(url, 26379, &u, why, sizeof(why)) < 0 || u.user[0] || u.password[0] || u.db ||
            u.tls) {
            snprintf(errstr, errstr_size, "MCPQ_REDIS_SENTINELS: bad entry \"%.*s\"", (int)n, p);
            return MCPQ_EINVAL;
        }
        kv_hostport_t *hp = &t->sentinels[t->nsentinels++];
        snprintf(hp->host, sizeof(hp->host), "%s", u.host);
        hp->port = u.port;
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

/* A password from its setting `name` (value) or `name`_FILE (file), at most one of them and
 * not when `elsewhere` (another setting's name) already holds one; into out. */
static int password_load(const char *value, const char *file, const char *name,
                         const char *elsewhere, char *out, size_t size, char *errstr,
                         size_t errstr_size)
{
    int has_value = value && *value, has_file = file && *file;
    if (has_value + has_file + (elsewhere != NULL) > 1) {
        snprintf(errstr, errstr_size, "a password is set more than once (%s%s%s%s%s_FILE): set one",
                 elsewhere ? elsewhere : "", elsewhere ? ", " : "", has_value ? name : "",
                 has_value ? ", " : "", name);
        return MCPQ_EINVAL;
    }
    if (has_value && strlen(value) >= size) {
        snprintf(errstr, errstr_size, "%s: longer than %zu bytes", name, size - 1);
        return MCPQ_EINVAL;
    }
    if (has_value)
        snprintf(out, size, "%s", value);
    char fname[64];
    snprintf(fname, sizeof(fname), "%s_FILE", name);
    size_t len;
    return has_file ? util_read_secret(file, fname, out, size, &len, errstr, errstr_size) : 0;
}

/* Fills everything but the URL itself from s. */
static int target_options(kv_target_t *t, const mcpq_settings_t *s, char *errstr,
                          size_t errstr_size)
{
    if (password_load(s->redis_password, s->redis_password_file, "MCPQ_REDIS_PASSWORD",
                      t->url.password[0] ? "MCPQ_REDIS_URL" : NULL, t->url.password,
                      sizeof(t->url.password), errstr, errstr_size) < 0 ||
        password_load(s->redis_sentinel_password, s->redis_sentinel_password_file,
                      "MCPQ_REDIS_SENTINEL_PASSWORD", NULL, t->sentinel_password,
                      sizeof(t->sentinel_password), errstr, errstr_size) < 0)
        return MCPQ_EINVAL;
    int tls_opts = (s->redis_tls_ca_file && *s->redis_tls_ca_file) ||
                   (s->redis_tls_cert_file && *s->redis_tls_cert_file) ||
                   (s->redis_tls_key_file && *s->redis_tls_key_file);
    if (tls_opts && !t->url.tls) {
        snprintf(errstr, errstr_size,
                 "MCPQ_REDIS_TLS_* is set but MCPQ_REDIS_URL is not "
                 "rediss://: set rediss:// to use TLS");
        return MCPQ_EINVAL;
    }
    if (t->url.tls) {
        t->tls = kvtls_ctx_new(s->redis_tls_ca_file, s->redis_tls_cert_file, s->redis_tls_key_file,
                               errstr, errstr_size);
        if (!t->tls)
            return MCPQ_EINVAL;
        if (s->redis_tls_server_name)
            snprintf(t->server_name, sizeof(t->server_name), "%s", s->redis_tls_server_name);
    }
    if (s->redis_sentinels && *s->redis_sentinels) {
        if (t->url.unix_socket) {
            snprintf(errstr, errstr_size,
                     "MCPQ_REDIS_SENTINELS needs a redis:// or rediss:// "
                     "MCPQ_REDIS_URL");
            return MCPQ_EINVAL;
        }
        if (parse_sentinels(t, s->redis_sentinels, errstr, errstr_size) < 0)
            return MCPQ_EINVAL;
        snprintf(t->master, sizeof(t->master), "%s",
                 s->redis_master && *s->redis_master ? s->redis_master : t->url.host);
        snprintf(t->describe, sizeof(t->describe), "sentinel master %s", t->master);
    } else if (s->redis_master && *s->redis_master) {
        snprintf(errstr, errstr_size, "MCPQ_REDIS_MASTER needs MCPQ_REDIS_SENTINELS");
        return MCPQ_EINVAL;
    }
    if (s->redis_cluster) {
        const char *why = t->nsentinels        ? "not together with MCPQ_REDIS_SENTINELS"
                          : t->url.unix_socket ? "needs a redis:// or rediss:// MCPQ_REDIS_URL"
                          : t->url.db          ? "needs database 0 (a cluster has no other)"
                                               : NULL;
        if (why) {
            snprintf(errstr, errstr_size, "MCPQ_REDIS_CLUSTER: %s", why);
            return MCPQ_EINVAL;
        }
        t->cluster = 1;
        snprintf(t->describe, sizeof(t->describe),
                 strchr(t->url.host, ':') ? "cluster via [%s]:%d" : "cluster via %s:%d",
                 t->url.host, t->url.port);
    }
    return 0;
}

kv_target_t *kv_target_new(const mcpq_settings_t *s, char *errstr, size_t errstr_size)
{
    kv_target_t *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    char why[200];
    if (kv_url_parse(s->redis_url ? s->redis_url : "", &t->url, why, sizeof(why)) < 0) {
        snprintf(errstr, errstr_size, "MCPQ_REDIS_URL: %s", why);
        kv_target_free(t);
        return NULL;
    }
    if (t->url.unix_socket)
        snprintf(t->describe, sizeof(t->describe), "%s", t->url.path);
    else
        snprintf(t->describe, sizeof(t->describe), strchr(t->url.host, ':') ? "[%s]:%d" : "%s:%d",
                 t->url.host, t->url.port);
    if (target_options(t, s, errstr, errstr_size) < 0) {
        kv_target_free(t);
        return NULL;
    }
    atomic_init(&t->next_sentinel, 0);
    atomic_init(&t->generation, 0);
    return t;
}

void kv_target_free(kv_target_t *t)
{
    if (!t)
        return;
    if (t->tls) {
        if (kvtls_drain(2000) < 0)
            log_event(LOG_WARN, "redis TLS: connections still open at exit", (char *)NULL);
        SSL_CTX_free(t->tls);
    }
    /* volatile: the wipe of the password is not an optimizable dead store. */
    volatile unsigned char *p = (volatile unsigned char *)t;
    for (size_t i = 0; i < sizeof(*t); i++)
        p[i] = 0;
    free(t);
}

const char *kv_target_describe(const kv_target_t *t)
{
    return t->describe;
}

/* A blocking context on host:port (TLS when t says so), timeouts set; NULL with errstr. */
static redisContext *open_tcp(kv_target_t *t, const char *host, int port, int timeout_ms,
                              char *errstr, size_t errstr_size)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c;
    if (t->tls) {
        int fd = kvtls_connect(t->tls, host, port, t->server_name, timeout_ms, errstr, errstr_size);
        if (fd < 0)
            return NULL;
        c = redisConnectFd(fd);
        if (!c)
            close(fd);
    } else {
        c = redisConnectWithTimeout(host, port, tv);
    }
    if (!c || c->err) {
        snprintf(errstr, errstr_size, strchr(host, ':') ? "redis [%s]:%d: %s" : "redis %s:%d: %s",
                 host, port, c ? c->errstr : "cannot allocate a context");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (!t->tls)
        redisEnableKeepAlive(c); /* the TLS bridge keeps its own TCP socket alive */
    return c;
}

/* Runs one command on c; 0 when it answered something other than an error. */
static int handshake_cmd(redisContext *c, int argc, const char **argv, redisReply **out)
{
    size_t lens[3];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    redisReply *r = redisCommandArgv(c, argc, argv, lens);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        if (r)
            freeReplyObject(r);
        return MCPQ_EIO;
    }
    if (out)
        *out = r;
    else
        freeReplyObject(r);
    return 0;
}

/* Asks the sentinels, each in turn from the last that answered, where the master is. */
static int sentinel_lookup(kv_target_t *t, int timeout_ms, char *host, size_t host_size, int *port,
                           char *errstr, size_t errstr_size)
{
    unsigned first = atomic_load(&t->next_sentinel);
    for (size_t k = 0; k < t->nsentinels; k++) {
        unsigned i = (unsigned)((first + k) % t->nsentinels);
        const kv_hostport_t *s = &t->sentinels[i];
        redisContext *c = open_tcp(t, s->host, s->port, timeout_ms, errstr, errstr_size);
        if (!c)
            continue;
        const char *auth[] = {"AUTH", t->sentinel_password};
        const char *argv[] = {"SENTINEL", "get-master-addr-by-name", t->master};
        redisReply *r = NULL;
        int ok = (!t->sentinel_password[0] || handshake_cmd(c, 2, auth, NULL) == 0) &&
                 handshake_cmd(c, 3, argv, &r) == 0 && r->type == REDIS_REPLY_ARRAY &&
                 r->elements == 2 && r->element[0]->type == REDIS_REPLY_STRING &&
                 r->element[1]->type == REDIS_REPLY_STRING && r->element[0]->len < host_size;
        if (ok) {
            memcpy(host, r->element[0]->str, r->element[0]->len + 1);
            *port = atoi(r->element[1]->str);
            atomic_store(&t->next_sentinel, i);
        } else {
            snprintf(errstr, errstr_size, "redis sentinel %s:%d does not know master %s", s->host,
                     s->port, t->master);
        }
        if (r)
            freeReplyObject(r);
        redisFree(c);
        if (ok)
            return 0;
    }
    return MCPQ_EUNAVAIL;
}

/* 0 when c is a master (ROLE), so a failover in progress is not written into a replica. */
static int check_master(redisContext *c)
{
    const char *argv[] = {"ROLE"};
    redisReply *r = NULL;
    int ok = handshake_cmd(c, 1, argv, &r) == 0 && r->type == REDIS_REPLY_ARRAY &&
             r->elements > 0 && r->element[0]->type == REDIS_REPLY_STRING &&
             strcmp(r->element[0]->str, "master") == 0;
    if (r)
        freeReplyObject(r);
    return ok ? 0 : MCPQ_EUNAVAIL;
}

/* AUTH (and SELECT) on a new context; NULL when done, else what failed. */
static const char *login(const kv_target_t *t, redisContext *c)
{
    const kv_url_t *u = &t->url;
    if (u->password[0]) {
        /* An ACL user logs in with AUTH user password, the default user with AUTH password. */
        const char *auth[] = {"AUTH", u->user, u->password};
        const char *legacy[] = {"AUTH", u->password};
        if (u->user[0] ? handshake_cmd(c, 3, auth, NULL) : handshake_cmd(c, 2, legacy, NULL))
            return "AUTH failed (wrong user or password?)";
    }
    char db[24];
    snprintf(db, sizeof(db), "%d", u->db);
    const char *select[] = {"SELECT", db};
    if (u->db && handshake_cmd(c, 2, select, NULL))
        return "SELECT failed";
    return NULL;
}

/* Which node serves the slot of mcpq's keys (KV_KEY_TAG), asked of the node c is logged in
 * to: CLUSTER KEYSLOT, then that slot's primary in CLUSTER SLOTS. 0 with host/port set. */
static int cluster_owner(redisContext *c, char *host, size_t host_size, int *port)
{
    const char *keyslot[] = {"CLUSTER", "KEYSLOT", KV_KEY_TAG};
    const char *slots[] = {"CLUSTER", "SLOTS"};
    redisReply *ks = NULL, *r = NULL;
    int rc = MCPQ_EUNAVAIL;
    if (handshake_cmd(c, 3, keyslot, &ks) == 0 && ks->type == REDIS_REPLY_INTEGER &&
        handshake_cmd(c, 2, slots, &r) == 0 && r->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r->elements && rc < 0; i++) {
            const redisReply *e = r->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
                e->element[0]->integer > ks->integer || e->element[1]->integer < ks->integer)
                continue;
            const redisReply *node = e->element[2]; /* the primary: [host, port, id, ...] */
            if (node->type != REDIS_REPLY_ARRAY || node->elements < 2 ||
                node->element[0]->type != REDIS_REPLY_STRING || node->element[0]->len >= host_size)
                continue;
            /* An empty host means "the address you reached me at" (cluster-announce). */
            if (node->element[0]->len)
                memcpy(host, node->element[0]->str, node->element[0]->len + 1);
            *port = (int)node->element[1]->integer;
            rc = 0;
        }
    }
    if (ks)
        freeReplyObject(ks);
    if (r)
        freeReplyObject(r);
    return rc;
}

/* Connects to host:port (or the socket) and logs in; NULL with errstr filled. */
static redisContext *open_logged_in(kv_target_t *t, const char *host, int port, int timeout_ms,
                                    char *errstr, size_t errstr_size)
{
    const kv_url_t *u = &t->url;
    redisContext *c = NULL;
    if (u->unix_socket) {
        struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
        c = redisConnectUnixWithTimeout(u->path, tv);
        if (!c || c->err) {
            snprintf(errstr, errstr_size, "redis %s: %s", u->path,
                     c ? c->errstr : "cannot allocate a context");
            redisFree(c);
            return NULL;
        }
        redisSetTimeout(c, tv);
    } else {
        c = open_tcp(t, host, port, timeout_ms, errstr, errstr_size);
        if (!c)
            return NULL;
    }
    const char *what = login(t, c);
    if (what) {
        snprintf(errstr, errstr_size, "redis %s: %s%s%s", t->describe, what, c->err ? ": " : "",
                 c->err ? c->errstr : "");
        redisFree(c);
        return NULL;
    }
    return c;
}

redisContext *kv_connect(kv_target_t *t, int timeout_ms, char *errstr, size_t errstr_size)
{
    char host[256];
    int port = t->url.port;
    snprintf(host, sizeof(host), "%s", t->url.host);
    if (t->nsentinels &&
        sentinel_lookup(t, timeout_ms, host, sizeof(host), &port, errstr, errstr_size) < 0)
        return NULL;
    redisContext *c = open_logged_in(t, host, port, timeout_ms, errstr, errstr_size);
    if (c && t->nsentinels && check_master(c) < 0) {
        snprintf(errstr, errstr_size, "redis %s: not a master (a failover is under way)",
                 t->describe);
        redisFree(c);
        return NULL;
    }
    if (c && t->cluster) {
        /* The URL names any node (a configuration endpoint); mcpq's keys all live in one
         * slot, so the connection goes to the primary that serves it. */
        char owner[256];
        int owner_port = port;
        snprintf(owner, sizeof(owner), "%s", host);
        if (cluster_owner(c, owner, sizeof(owner), &owner_port) < 0) {
            snprintf(errstr, errstr_size,
                     "redis %s: no node serves the slot of %s (CLUSTER SLOTS; is it a cluster?)",
                     t->describe, KV_KEY_TAG);
            redisFree(c);
            return NULL;
        }
        if (strcmp(owner, host) != 0 || owner_port != port) {
            redisFree(c);
            c = open_logged_in(t, owner, owner_port, timeout_ms, errstr, errstr_size);
        }
    }
    return c;
}

#define KV_FAILOVER_ERRSTR                                                                         \
    "READONLY or MOVED: the server no longer serves mcpq's keys (failover); reconnecting"

/* The error replies that mean "this connection goes to the wrong server now". */
static int moved_on(const redisReply *r)
{
    /* UNBLOCKED: a blocked read (XREAD BLOCK) ended because the server became a replica. */
    static const char *const codes[] = {"READONLY ", "MOVED ", "ASK ", "UNBLOCKED "};
    if (!r || r->type != REDIS_REPLY_ERROR)
        return 0;
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (r->len >= strlen(codes[i]) && strncmp(r->str, codes[i], strlen(codes[i])) == 0)
            return 1;
    return 0;
}

int kv_ctx_failover(kv_target_t *t, redisContext *c, const redisReply *r)
{
    if (!moved_on(r))
        return 0;
    if (t)
        atomic_fetch_add(&t->generation, 1);
    if (c && !c->err) {
        c->err = REDIS_ERR_OTHER;
        snprintf(c->errstr, sizeof(c->errstr), "%s", KV_FAILOVER_ERRSTR);
    }
    return 1;
}

int kv_wait(redisContext *c, int replicas, int timeout_ms)
{
    if (replicas <= 0)
        return 0;
    redisReply *r = redisCommand(c, "WAIT %d %d", replicas, timeout_ms);
    if (!r)
        return MCPQ_EIO;
    int rc = r->type == REDIS_REPLY_INTEGER && r->integer >= replicas ? 0 : MCPQ_EUNAVAIL;
    freeReplyObject(r);
    return rc;
}

int kv_set_nonblock(redisContext *c)
{
    int fl = fcntl(c->fd, F_GETFL);
    if (fl < 0 || fcntl(c->fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return MCPQ_EIO;
    c->flags &= ~REDIS_BLOCK;
    return 0;
}

struct kv_pool {
    pthread_mutex_t lock;
    kv_target_t *target;
    int timeout_ms;
    int max_idle;
    int nidle;
    redisContext **idle;
    unsigned *idle_gen; /* the target's generation when each idle context was made */
    /* Kept warm (kv_pool_warm): a keeper thread connects, the takers only wait. */
    int warm;
    int min_idle;
    int wait_ms;
    int stopping;
    atomic_int up;       /* the keeper's view: Redis answered its last check */
    pthread_cond_t more; /* an idle connection came back or was made */
    pthread_cond_t wake; /* the keeper: a connection broke, the pool ran dry, or stop */
    pthread_t keeper;
    char why[200];        /* why the pool is down (under lock) */
    struct kv_sent *sent; /* kv_pool_send's commands, oldest first, for the keeper */
    struct kv_sent **sent_tail;
    int nsent;
    atomic_ullong takes;  /* kv_pool_get that handed a context over */
    atomic_ullong queued; /* kv_pool_send commands queued for the keeper */
    /* kv_pool_sync: commands queued so far, and of those the ones the keeper is done with
     * (answered or dropped), both under lock; done_cond is signalled when done grows. */
    unsigned long long seq_queued, seq_done;
    pthread_cond_t done_cond;
};

/* One command of kv_pool_send, in the protocol's format. */
typedef struct kv_sent {
    struct kv_sent *next;
    size_t len;
    char cmd[];
} kv_sent_t;

kv_pool_t *kv_pool_new(kv_target_t *t, int timeout_ms, int max_idle)
{
    kv_pool_t *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return NULL;
    pool->idle = calloc((size_t)max_idle, sizeof(*pool->idle));
    pool->idle_gen = calloc((size_t)max_idle, sizeof(*pool->idle_gen));
    if (!pool->idle || !pool->idle_gen) {
        free(pool->idle);
        free(pool->idle_gen);
        free(pool);
        return NULL;
    }
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->more, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done_cond, NULL);
    atomic_init(&pool->up, 1);
    pool->sent_tail = &pool->sent;
    pool->target = t;
    pool->timeout_ms = timeout_ms;
    pool->max_idle = max_idle;
    return pool;
}

void kv_pool_free(kv_pool_t *pool)
{
    if (!pool)
        return;
    if (pool->warm) {
        pthread_mutex_lock(&pool->lock);
        pool->stopping = 1;
        pthread_cond_signal(&pool->wake);
        pthread_mutex_unlock(&pool->lock);
        pthread_join(pool->keeper, NULL);
    }
    for (int i = 0; i < pool->nidle; i++)
        redisFree(pool->idle[i]);
    while (pool->sent) {
        kv_sent_t *next = pool->sent->next;
        free(pool->sent);
        pool->sent = next;
    }
    pthread_cond_destroy(&pool->more);
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->done_cond);
    pthread_mutex_destroy(&pool->lock);
    free(pool->idle);
    free(pool->idle_gen);
    free(pool);
}

/* An idle context made since the last failover, or NULL; under pool->lock. */
static redisContext *take_idle(kv_pool_t *pool)
{
    unsigned gen = atomic_load(&pool->target->generation);
    redisContext *c = NULL;
    while (!c && pool->nidle > 0) {
        pool->nidle--;
        c = pool->idle[pool->nidle];
        if (pool->idle_gen[pool->nidle] != gen) { /* made before a failover */
            redisFree(c);
            c = NULL;
        }
    }
    return c;
}

/* A warm pool's taker: an idle context, waiting at most wait_ms for one; never connects. */
static redisContext *get_warm(kv_pool_t *pool, char *errstr, size_t errstr_size)
{
    struct timespec until = util_deadline_realtime(pool->wait_ms);
    redisContext *c = NULL;
    pthread_mutex_lock(&pool->lock);
    while (!c && atomic_load(&pool->up)) {
        c = take_idle(pool);
        if (c)
            break;
        pthread_cond_signal(&pool->wake); /* ran dry: the keeper makes more */
        if (pthread_cond_timedwait(&pool->more, &pool->lock, &until) != 0)
            break;
    }
    if (!c && !atomic_load(&pool->up))
        snprintf(errstr, errstr_size, "redis unavailable: %s", pool->why);
    else if (!c)
        snprintf(errstr, errstr_size, "redis: no idle connection within %d ms (pool busy)",
                 pool->wait_ms);
    pthread_mutex_unlock(&pool->lock);
    return c;
}

redisContext *kv_pool_get(kv_pool_t *pool, char *errstr, size_t errstr_size)
{
    redisContext *c = NULL;
    if (pool->warm) {
        c = get_warm(pool, errstr, errstr_size);
    } else {
        pthread_mutex_lock(&pool->lock);
        c = take_idle(pool);
        pthread_mutex_unlock(&pool->lock);
        if (!c)
            c = kv_connect(pool->target, pool->timeout_ms, errstr, errstr_size);
    }
    if (c)
        atomic_fetch_add(&pool->takes, 1);
    return c;
}

void kv_pool_stats(kv_pool_t *pool, unsigned long long *takes, unsigned long long *queued)
{
    *takes = pool ? atomic_load(&pool->takes) : 0;
    *queued = pool ? atomic_load(&pool->queued) : 0;
}

/* A connection that failed to reach Redis (lost, refused, timed out; not a failover's
 * redirection, which the next connection follows): a warm pool is down until its keeper
 * has Redis answer again, so the other takers fail at once instead of each waiting its
 * timeout. */
static void note_broken(kv_pool_t *pool, const redisContext *ctx)
{
    if (!pool->warm || ctx->err == REDIS_ERR_OTHER)
        return;
    pthread_mutex_lock(&pool->lock);
    if (atomic_exchange(&pool->up, 0))
        snprintf(pool->why, sizeof(pool->why), "a command failed: %s", ctx->errstr);
    pthread_cond_signal(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
}

/* Back to the idle list, or freed when broken, failed or the list is full. */
static void put_idle(kv_pool_t *pool, redisContext *ctx, int broken)
{
    if (!broken && !ctx->err) {
        pthread_mutex_lock(&pool->lock);
        if (pool->nidle < pool->max_idle) {
            pool->idle_gen[pool->nidle] = atomic_load(&pool->target->generation);
            pool->idle[pool->nidle++] = ctx;
            ctx = NULL;
            pthread_cond_signal(&pool->more);
        }
        pthread_mutex_unlock(&pool->lock);
    }
    if (ctx)
        redisFree(ctx);
}

void kv_pool_put(kv_pool_t *pool, redisContext *ctx, int broken)
{
    if (!ctx)
        return;
    /* A connection that broke (lost, timed out, or marked by kv_ctx_failover) may mean the
     * master is gone or demoted: the idle ones made before are dropped too (kv_pool_get)
     * rather than each failing one request. */
    if (ctx->err) {
        atomic_fetch_add(&pool->target->generation, 1);
        note_broken(pool, ctx);
    }
    put_idle(pool, ctx, broken);
}

int kv_pool_up(kv_pool_t *pool)
{
    return pool ? atomic_load(&pool->up) : 0;
}

/* PING on c, which goes back to the pool (or is freed when it failed): 1 when Redis answered,
 * else 0 with why filled. */
static int keeper_ping(kv_pool_t *pool, redisContext *c, char *why, size_t why_size)
{
    redisReply *r = redisCommand(c, "PING");
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        snprintf(why, why_size, "PING: %s", c->err ? c->errstr : "unexpected reply");
    if (r)
        freeReplyObject(r);
    /* Put back by hand: kv_pool_put would mark the pool down, which is ours to say. */
    if (c->err)
        atomic_fetch_add(&pool->target->generation, 1);
    put_idle(pool, c, !ok);
    return ok;
}

/* The keeper's check: PING on an idle connection, and when that fails (it may have been
 * dropped while idle: a restarted Redis) once more on a new one. 0 when Redis answered, else
 * MCPQ_EIO with why filled. */
static int keeper_check(kv_pool_t *pool, char *why, size_t why_size)
{
    pthread_mutex_lock(&pool->lock);
    redisContext *c = take_idle(pool);
    pthread_mutex_unlock(&pool->lock);
    if (c && keeper_ping(pool, c, why, why_size))
        return 0;
    c = kv_connect(pool->target, pool->timeout_ms, why, why_size);
    return c && keeper_ping(pool, c, why, why_size) ? 0 : MCPQ_EIO;
}

/* The keeper tops the idle connections up to min_idle (never above max_idle). */
static void keeper_fill(kv_pool_t *pool)
{
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        int need = pool->nidle < pool->min_idle && !pool->stopping && atomic_load(&pool->up);
        pthread_mutex_unlock(&pool->lock);
        if (!need)
            return;
        char why[200];
        redisContext *c = kv_connect(pool->target, pool->timeout_ms, why, sizeof(why));
        if (!c) {
            pthread_mutex_lock(&pool->lock);
            atomic_store(&pool->up, 0);
            snprintf(pool->why, sizeof(pool->why), "%s", why);
            pthread_mutex_unlock(&pool->lock);
            return;
        }
        put_idle(pool, c, 0);
    }
}

/* One check of the keeper: says up or down (logged when it changes). */
static void keeper_round(kv_pool_t *pool, int *was_up)
{
    char why[200] = "";
    int ok = keeper_check(pool, why, sizeof(why)) == 0;
    pthread_mutex_lock(&pool->lock);
    if (!ok)
        snprintf(pool->why, sizeof(pool->why), "%s", why);
    atomic_store(&pool->up, ok);
    pthread_mutex_unlock(&pool->lock);
    if (ok != *was_up)
        log_event(ok ? LOG_INFO : LOG_WARN, ok ? "redis pool up" : "redis pool down", "redis",
                  kv_target_describe(pool->target), "error", ok ? "" : why, (char *)NULL);
    *was_up = ok;
}

/* The keeper sends what kv_pool_send queued, as one pipeline on one connection; the replies
 * are read and dropped (an error reply is logged). Commands queued while Redis is down are
 * dropped by kv_pool_send itself. */
static void keeper_flush(kv_pool_t *pool)
{
    pthread_mutex_lock(&pool->lock);
    kv_sent_t *list = pool->sent;
    int n = pool->nsent;
    pool->sent = NULL;
    pool->sent_tail = &pool->sent;
    pool->nsent = 0;
    unsigned long long upto = pool->seq_queued;
    redisContext *c = list ? take_idle(pool) : NULL;
    pthread_mutex_unlock(&pool->lock);
    char why[200] = "";
    if (list && !c)
        c = kv_connect(pool->target, pool->timeout_ms, why, sizeof(why));
    for (kv_sent_t *e = list; c && e; e = e->next)
        redisAppendFormattedCommand(c, e->cmd, e->len);
    for (int i = 0; c && !c->err && i < n; i++) {
        void *reply = NULL;
        if (redisGetReply(c, &reply) != REDIS_OK)
            break;
        const redisReply *r = reply;
        /* A failover's redirection also tells the target, so the pool's idle connections
         * made before are dropped (kv_ctx_failover). */
        if (r->type == REDIS_REPLY_ERROR && !kv_ctx_failover(pool->target, c, r))
            log_event(LOG_WARN, "redis: a queued command failed", "error", r->str, (char *)NULL);
        freeReplyObject(reply);
    }
    if (list && (!c || c->err))
        log_event(LOG_WARN, "redis: queued commands lost", "error", c ? c->errstr : why,
                  (char *)NULL);
    kv_pool_put(pool, c, 0);
    while (list) {
        kv_sent_t *next = list->next;
        free(list);
        list = next;
    }
    pthread_mutex_lock(&pool->lock);
    if (upto > pool->seq_done) {
        pool->seq_done = upto;
        pthread_cond_broadcast(&pool->done_cond);
    }
    pthread_mutex_unlock(&pool->lock);
}

/* The keeper: checks Redis every KV_POOL_CHECK_MS (at once after a taker saw a connection
 * fail) and tops the idle list up whenever a taker ran dry. */
static void *keeper_thread(void *arg)
{
    kv_pool_t *pool = arg;
    int was_up = 1;
    int64_t next_check = 0;
    pthread_mutex_lock(&pool->lock);
    while (!pool->stopping) {
        pthread_mutex_unlock(&pool->lock);
        int64_t now = util_mono_ms();
        if (now >= next_check || !atomic_load(&pool->up)) {
            keeper_round(pool, &was_up);
            next_check = util_mono_ms() + KV_POOL_CHECK_MS;
        }
        if (atomic_load(&pool->up))
            keeper_fill(pool);
        keeper_flush(pool);
        int64_t left = next_check - util_mono_ms();
        struct timespec until = util_deadline_realtime(left > 0 ? (int)left : 1);
        pthread_mutex_lock(&pool->lock);
        if (!pool->stopping && !pool->sent)
            pthread_cond_timedwait(&pool->wake, &pool->lock, &until);
    }
    pthread_mutex_unlock(&pool->lock);
    keeper_flush(pool);
    return NULL;
}

int kv_pool_send(kv_pool_t *pool, int argc, const char **argv, const size_t *argvlen)
{
    char err[256];
    if (!pool->warm) { /* no keeper: the command runs here */
        redisReply *r = kv_pool_commandargv(pool, err, sizeof(err), argc, argv, argvlen);
        if (r)
            freeReplyObject(r);
        return r ? 0 : MCPQ_EUNAVAIL;
    }
    if (!atomic_load(&pool->up))
        return MCPQ_EUNAVAIL;
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
    kv_sent_t *e = len >= 0 ? malloc(sizeof(*e) + (size_t)len) : NULL;
    if (!e) {
        redisFreeCommand(cmd);
        return MCPQ_ENOMEM;
    }
    e->next = NULL;
    e->len = (size_t)len;
    memcpy(e->cmd, cmd, (size_t)len);
    redisFreeCommand(cmd);
    int rc = MCPQ_EUNAVAIL;
    pthread_mutex_lock(&pool->lock);
    if (pool->nsent < KV_POOL_SEND_MAX) {
        *pool->sent_tail = e;
        pool->sent_tail = &e->next;
        pool->nsent++;
        e = NULL;
        rc = 0;
        pool->seq_queued++;
        atomic_fetch_add(&pool->queued, 1);
        pthread_cond_signal(&pool->wake);
    }
    pthread_mutex_unlock(&pool->lock);
    free(e);
    return rc;
}

int kv_pool_sync(kv_pool_t *pool, int wait_ms)
{
    if (!pool || !pool->warm)
        return 0;
    struct timespec until = util_deadline_realtime(wait_ms);
    int rc = 0;
    pthread_mutex_lock(&pool->lock);
    unsigned long long target = pool->seq_queued;
    while (pool->seq_done < target && rc == 0) {
        pthread_cond_signal(&pool->wake);
        if (pthread_cond_timedwait(&pool->done_cond, &pool->lock, &until) != 0 &&
            pool->seq_done < target)
            rc = MCPQ_ETIMEDOUT;
    }
    pthread_mutex_unlock(&pool->lock);
    return rc;
}

int kv_pool_warm(kv_pool_t *pool, int min_idle, int wait_ms)
{
    pool->min_idle = min_idle < pool->max_idle ? min_idle : pool->max_idle;
    pool->wait_ms = wait_ms;
    keeper_fill(pool);
    pool->warm = 1;
    if (pthread_create(&pool->keeper, NULL, keeper_thread, pool) != 0) {
        pool->warm = 0;
        return MCPQ_ENOMEM;
    }
    return 0;
}

/* The reply of one attempt, the connection back in the pool. *retry is set when the server
 * refused the command because it no longer serves mcpq's keys (MOVED, READONLY, ...: the
 * command did not run there); the pool's connections are then stale and the next one it
 * gives goes to the server that does. */
static redisReply *check_reply(kv_pool_t *pool, redisContext *c, redisReply *r, char *errstr,
                               size_t errstr_size, int *retry)
{
    *retry = 0;
    if (!r) {
        snprintf(errstr, errstr_size, "redis: %s", c->err ? c->errstr : "no reply");
        kv_pool_put(pool, c, 1);
        return NULL;
    }
    int moved = kv_ctx_failover(pool->target, c, r);
    kv_pool_put(pool, c, moved);
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(errstr, errstr_size, "redis: %.*s", (int)r->len, r->str);
        freeReplyObject(r);
        *retry = moved;
        return NULL;
    }
    return r;
}

/* A failover seen by a pooled command is not the caller's problem: the command is sent once
 * more, on a connection to the server that serves the keys now (docs/redis.md). cmd is a
 * command in the protocol's format (redisFormatCommand*), freed here. */
#define KV_POOL_ATTEMPTS 2

static redisReply *pool_run(kv_pool_t *pool, char *cmd, int len, char *errstr, size_t errstr_size)
{
    redisReply *r = NULL;
    int retry = 1;
    if (len < 0) {
        snprintf(errstr, errstr_size, "redis: cannot format the command");
        return NULL;
    }
    for (int attempt = 0; attempt < KV_POOL_ATTEMPTS && retry; attempt++) {
        redisContext *c = kv_pool_get(pool, errstr, errstr_size);
        if (!c)
            break;
        void *reply = NULL;
        if (redisAppendFormattedCommand(c, cmd, (size_t)len) == REDIS_OK)
            redisGetReply(c, &reply);
        r = check_reply(pool, c, reply, errstr, errstr_size, &retry);
    }
    redisFreeCommand(cmd);
    return r;
}

redisReply *kv_pool_command(kv_pool_t *pool, char *errstr, size_t errstr_size, const char *fmt, ...)
{
    char *cmd = NULL;
    va_list ap;
    va_start(ap, fmt);
    int len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    return pool_run(pool, cmd, len, errstr, errstr_size);
}

redisReply *kv_pool_commandargv(kv_pool_t *pool, char *errstr, size_t errstr_size, int argc,
                                const char **argv, const size_t *argvlen)
{
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
    return pool_run(pool, cmd, len, errstr, errstr_size);
}

redisContext *kv_lazy_get(kv_lazy_t *l)
{
    if (l->ctx)
        return l->ctx;
    if (util_mono_ms() < l->retry_at)
        return NULL;
    char errstr[256];
    l->ctx = kv_connect(l->kvt, l->timeout_ms, errstr, sizeof(errstr));
    if (!l->ctx) {
        log_event(LOG_WARN, "redis unreachable", "component", l->what, "error", errstr,
                  (char *)NULL);
        l->retry_at = util_mono_ms() + KV_LAZY_RETRY_MS;
    }
    return l->ctx;
}

void kv_lazy_broken(kv_lazy_t *l, const char *why)
{
    if (!l->ctx || (!l->ctx->err && !why))
        return;
    log_event(LOG_WARN, "redis command failed", "component", l->what, "error",
              why ? why : l->ctx->errstr, (char *)NULL);
    redisFree(l->ctx);
    l->ctx = NULL;
}

void kv_lazy_close(kv_lazy_t *l)
{
    if (l->ctx)
        redisFree(l->ctx);
    l->ctx = NULL;
}
