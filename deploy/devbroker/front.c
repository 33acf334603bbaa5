#include "front.h"

#include "log.h"
#include "scram.h"

#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#define FRONT_MAX_BROKERS 16
#define FRONT_FRAME_MAX (64 << 20)

/* Kafka API keys and error codes the front speaks (Kafka protocol guide). */
enum {
    API_METADATA = 3,
    API_FIND_COORDINATOR = 10,
    API_SASL_HANDSHAKE = 17,
    API_API_VERSIONS = 18,
    API_CREATE_TOPICS = 19,
    API_SASL_AUTHENTICATE = 36,
};
enum {
    KERR_TOPIC_AUTHORIZATION_FAILED = 29,
    KERR_UNSUPPORTED_SASL_MECHANISM = 33,
    KERR_TOPIC_ALREADY_EXISTS = 36,
    KERR_INVALID_PARTITIONS = 37,
    KERR_INVALID_REPLICATION_FACTOR = 38,
    KERR_SASL_AUTHENTICATION_FAILED = 58,
};

struct db_front {
    rd_kafka_mock_cluster_t *mcluster;
    db_front_opts_t opts;
    SSL_CTX *ssl;
    int n;
    int mock_port[FRONT_MAX_BROKERS];
    int front_port[FRONT_MAX_BROKERS];
    int listen_fd[FRONT_MAX_BROKERS];
    char bootstraps[FRONT_MAX_BROKERS * 24];
    pthread_mutex_t lock; /* guards conns, nconns */
    pthread_cond_t gone;  /* signalled when a connection's thread ends */
    struct conn *conns;   /* every connection whose thread runs */
    int nconns;
};

typedef struct conn {
    db_front_t *f;
    int broker; /* index */
    int cfd, mfd;
    SSL *ssl;
    int authed;
    char mech[64];            /* the SaslHandshake's mechanism; "" before it */
    db_scram_t *scram;        /* a SCRAM exchange under way */
    struct conn *prev, *next; /* in f->conns */
    /* correlation ids of relayed requests whose answers are rewritten */
    struct {
        int32_t corrid;
        int16_t key, ver;
    } wait[64];
    int nwait;
} conn_t;

/* ---- byte helpers ---- */

static int16_t rd16(const uint8_t *p)
{
    return (int16_t)((p[0] << 8) | p[1]);
}
static int32_t rd32(const uint8_t *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) |
                     p[3]);
}
static void wr16(uint8_t *p, int v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static void wr32(uint8_t *p, int32_t v)
{
    p[0] = (uint8_t)((uint32_t)v >> 24);
    p[1] = (uint8_t)((uint32_t)v >> 16);
    p[2] = (uint8_t)((uint32_t)v >> 8);
    p[3] = (uint8_t)v;
}

/* A growing response body. */
typedef struct out {
    uint8_t buf[65536];
    size_t len;
    int bad;
} out_t;

static void put(out_t *o, const void *p, size_t n)
{
    if (o->len + n > sizeof(o->buf)) {
        o->bad = 1;
        return;
    }
    memcpy(o->buf + o->len, p, n);
    o->len += n;
}
static void put16(out_t *o, int v)
{
    uint8_t b[2];
    wr16(b, v);
    put(o, b, 2);
}
static void put32(out_t *o, int32_t v)
{
    uint8_t b[4];
    wr32(b, v);
    put(o, b, 4);
}
static void putstr(out_t *o, const char *s) /* NULL: a null string */
{
    if (!s) {
        put16(o, -1);
        return;
    }
    put16(o, (int)strlen(s));
    put(o, s, strlen(s));
}

/* A bounds-checked reader. */
typedef struct in {
    const uint8_t *p, *end;
    int bad;
} in_t;

static int32_t get32(in_t *r)
{
    if (r->end - r->p < 4) {
        r->bad = 1;
        return 0;
    }
    int32_t v = rd32(r->p);
    r->p += 4;
    return v;
}
static int16_t get16(in_t *r)
{
    if (r->end - r->p < 2) {
        r->bad = 1;
        return 0;
    }
    int16_t v = rd16(r->p);
    r->p += 2;
    return v;
}
/* A string into buf (truncated to size-1); length -1 gives "". */
static void getstr(in_t *r, char *buf, size_t size)
{
    int16_t n = get16(r);
    buf[0] = '\0';
    if (n < 0)
        return;
    if (r->end - r->p < n) {
        r->bad = 1;
        return;
    }
    size_t c = (size_t)n < size - 1 ? (size_t)n : size - 1;
    memcpy(buf, r->p, c);
    buf[c] = '\0';
    r->p += n;
}

/* ---- I/O ---- */

static int cread(conn_t *c, void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t r = c->ssl ? SSL_read(c->ssl, p, (int)n) : read(c->cfd, p, n);
        if (r <= 0) {
            if (!c->ssl && r < 0 && errno == EINTR)
                continue;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int cwrite(conn_t *c, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n > 0) {
        ssize_t r = c->ssl ? SSL_write(c->ssl, p, (int)n) : write(c->cfd, p, n);
        if (r <= 0) {
            if (!c->ssl && r < 0 && errno == EINTR)
                continue;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int fdread(int fd, void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int fdwrite(int fd, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n > 0) {
        ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Reads one size-prefixed frame (malloc'd, *len bytes after the size). */
static uint8_t *frame_read(conn_t *c, int from_client, size_t *len)
{
    uint8_t hdr[4];
    if ((from_client ? cread(c, hdr, 4) : fdread(c->mfd, hdr, 4)) < 0)
        return NULL;
    int32_t n = rd32(hdr);
    if (n < 4 || n > FRONT_FRAME_MAX)
        return NULL;
    uint8_t *b = malloc((size_t)n);
    if (!b || (from_client ? cread(c, b, (size_t)n) : fdread(c->mfd, b, (size_t)n)) < 0) {
        free(b);
        return NULL;
    }
    *len = (size_t)n;
    return b;
}

/* Sends a response: size, correlation id, body. */
static int respond(conn_t *c, int32_t corrid, const out_t *body)
{
    if (body->bad)
        return -1;
    uint8_t hdr[8];
    wr32(hdr, (int32_t)(body->len + 4));
    wr32(hdr + 4, corrid);
    return cwrite(c, hdr, 8) < 0 || cwrite(c, body->buf, body->len) < 0 ? -1 : 0;
}

/* ---- requests answered here ---- */

/* 1 when mech is among list's comma-separated names. */
static int mech_listed(const char *list, const char *mech)
{
    size_t n = strlen(mech);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, mech, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

static int sasl_handshake(conn_t *c, int32_t corrid, in_t *r)
{
    const char *list = c->f->opts.sasl_mechanisms;
    char mech[64];
    getstr(r, mech, sizeof(mech));
    int ok = *mech && mech_listed(list, mech);
    snprintf(c->mech, sizeof(c->mech), "%s", ok ? mech : "");
    out_t o = {.len = 0};
    put16(&o, ok ? 0 : KERR_UNSUPPORTED_SASL_MECHANISM);
    int32_t n = 1;
    for (const char *p = list; (p = strchr(p, ',')); p++)
        n++;
    put32(&o, n);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        size_t len = strcspn(p, ",");
        put16(&o, (int)len);
        put(&o, p, len);
    }
    return respond(c, corrid, &o);
}

/* PLAIN (RFC 4616): authzid NUL authcid NUL passwd. 1 when they are the configured user's;
 * the user named into user. */
static int plain_check(conn_t *c, const uint8_t *b, size_t n, char *user, size_t user_size)
{
    const char *p = (const char *)b, *end = p + n;
    const char *u = n ? memchr(p, '\0', n) : NULL;
    const char *pw = u ? memchr(u + 1, '\0', (size_t)(end - u - 1)) : NULL;
    if (!u || !pw)
        return 0;
    size_t ulen = (size_t)(pw - u - 1), plen = (size_t)(end - pw - 1);
    snprintf(user, user_size, "%.*s", (int)ulen, u + 1);
    return strlen(c->f->opts.sasl_user) == ulen && memcmp(u + 1, c->f->opts.sasl_user, ulen) == 0 &&
           strlen(c->f->opts.sasl_password) == plen &&
           memcmp(pw + 1, c->f->opts.sasl_password, plen) == 0;
}

/* One SCRAM message (scram.h): 0 to go on, 1 authenticated, negative refused. */
static int scram_step(conn_t *c, const uint8_t *b, size_t n, char *reply, size_t reply_size,
                      char *why, size_t why_size)
{
    if (!c->scram)
        c->scram = db_scram_new(c->mech, c->f->opts.sasl_user, c->f->opts.sasl_password);
    if (!c->scram) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    return db_scram_step(c->scram, b, n, reply, reply_size, why, why_size);
}

/* SaslAuthenticate v0-1 for the mechanism of the handshake. Answers, then returns -1 when the
 * authentication failed (the caller closes the connection, as a broker does). */
static int sasl_authenticate(conn_t *c, int32_t corrid, int16_t ver, in_t *r)
{
    int32_t n = get32(r);
    char reply[512] = "", why[256] = "", user[256] = "", msg[256] = "";
    int rc = -1; /* negative: refused; 0: go on; 1: authenticated */
    if (r->bad || n < 0 || r->end - r->p < n)
        return -1;
    if (strcmp(c->mech, "PLAIN") == 0) {
        rc = plain_check(c, r->p, (size_t)n, user, sizeof(user)) ? 1 : -1;
        snprintf(msg, sizeof(msg), "Authentication failed: Invalid username or password");
    } else if (*c->mech) {
        rc = scram_step(c, r->p, (size_t)n, reply, sizeof(reply), why, sizeof(why));
        snprintf(user, sizeof(user), "%s", c->scram ? db_scram_user(c->scram) : "");
        /* what a Kafka broker answers when a SCRAM exchange fails */
        snprintf(msg, sizeof(msg),
                 "Authentication failed during authentication due to invalid credentials with "
                 "SASL mechanism %s",
                 c->mech);
    } else {
        snprintf(msg, sizeof(msg), "Authentication failed: SaslAuthenticate before SaslHandshake");
    }
    out_t o = {.len = 0};
    put16(&o, rc < 0 ? KERR_SASL_AUTHENTICATION_FAILED : 0);
    putstr(&o, rc < 0 ? msg : NULL);
    put32(&o, rc < 0 ? 0 : (int32_t)strlen(reply)); /* auth_bytes */
    put(&o, reply, rc < 0 ? 0 : strlen(reply));
    if (ver >= 1) {
        put32(&o, 0); /* session_lifetime_ms (int64) */
        put32(&o, 0);
    }
    if (rc > 0)
        log_event(LOG_INFO, "devbroker: SASL authenticated", "mechanism", c->mech, "user", user,
                  (char *)NULL);
    else if (rc < 0)
        log_event(LOG_WARN, "devbroker: SASL authentication refused", "mechanism",
                  *c->mech ? c->mech : "none", "user", user, "reason",
                  *why ? why : "wrong user or password", (char *)NULL);
    c->authed = rc > 0;
    int sent = respond(c, corrid, &o);
    return rc < 0 ? -1 : sent;
}

static int create_topics(conn_t *c, int32_t corrid, int16_t ver, in_t *r)
{
    out_t o = {.len = 0};
    if (ver >= 2)
        put32(&o, 0); /* throttle_time_ms */
    int32_t nt = get32(r);
    if (r->bad || nt < 0 || nt > 1000)
        return -1;
    put32(&o, nt);
    for (int32_t i = 0; i < nt && !r->bad; i++) {
        char name[256];
        getstr(r, name, sizeof(name));
        int32_t parts = get32(r);
        int16_t rf = get16(r);
        int32_t na = get32(r); /* assignments: skipped */
        for (int32_t a = 0; a < na && !r->bad; a++) {
            get32(r);
            int32_t nb = get32(r);
            for (int32_t b = 0; b < nb && !r->bad; b++)
                get32(r);
        }
        int32_t ncf = get32(r); /* configs: ignored */
        for (int32_t k = 0; k < ncf && !r->bad; k++) {
            char tmp[256];
            getstr(r, tmp, sizeof(tmp));
            getstr(r, tmp, sizeof(tmp));
        }
        int err = 0;
        char msg[512] = "";
        if (c->f->opts.deny_create) {
            err = KERR_TOPIC_AUTHORIZATION_FAILED;
            snprintf(msg, sizeof(msg), "Authorization failed.");
        } else if (parts == 0 || parts < -1) {
            err = KERR_INVALID_PARTITIONS;
            snprintf(msg, sizeof(msg), "Number of partitions must be larger than 0.");
        } else if (rf > c->f->n || rf == 0 || rf < -1) {
            err = KERR_INVALID_REPLICATION_FACTOR;
            snprintf(msg, sizeof(msg), "Replication factor: %d larger than available brokers: %d.",
                     rf, c->f->n);
        } else {
            rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(
                c->f->mcluster, name, parts == -1 ? 1 : parts, rf == -1 ? c->f->n : rf);
            if (e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
                err = KERR_TOPIC_ALREADY_EXISTS;
                snprintf(msg, sizeof(msg), "Topic '%s' already exists.", name);
            } else if (e) {
                err = (int)e;
                snprintf(msg, sizeof(msg), "%s", rd_kafka_err2str(e));
            }
        }
        char ps[16];
        snprintf(ps, sizeof(ps), "%d", (int)parts);
        log_event(err ? LOG_WARN : LOG_INFO, "devbroker: CreateTopics", "topic", name, "partitions",
                  ps, "error", err ? msg : "none", (char *)NULL);
        putstr(&o, name);
        put16(&o, err);
        if (ver >= 1)
            putstr(&o, err ? msg : NULL);
    }
    return r->bad ? -1 : respond(c, corrid, &o);
}

/* ---- relayed answers rewritten ---- */

static int front_port_of(const db_front_t *f, int32_t node_id)
{
    return node_id >= 1 && node_id <= f->n ? f->front_port[node_id - 1] : -1;
}

/* ApiVersions v0-2 answer (after the correlation id): error, [key min max], throttle (v1+). */
static uint8_t *rewrite_api_versions(conn_t *c, const uint8_t *b, size_t len, int16_t ver,
                                     size_t *out_len)
{
    in_t r = {b + 4, b + len, 0};
    int16_t err = get16(&r);
    int32_t n = get32(&r);
    if (r.bad || err != 0 || n < 0 || n > 1000 || ver > 2)
        return NULL; /* relayed as is */
    out_t *o = calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    put(o, b, 4); /* correlation id */
    put16(o, 0);
    int sasl = c->f->opts.sasl_user != NULL;
    put32(o, n + 1 + (sasl ? 2 : 0));
    for (int32_t i = 0; i < n && !r.bad; i++) {
        int16_t key = get16(&r), lo = get16(&r), hi = get16(&r);
        put16(o, key);
        put16(o, lo);
        put16(o, hi);
    }
    put16(o, API_CREATE_TOPICS);
    put16(o, 0);
    put16(o, 4);
    if (sasl) {
        put16(o, API_SASL_HANDSHAKE);
        put16(o, 0);
        put16(o, 1);
        put16(o, API_SASL_AUTHENTICATE);
        put16(o, 0);
        put16(o, 1);
    }
    put(o, r.p, (size_t)(r.end - r.p)); /* throttle_time_ms */
    uint8_t *res = NULL;
    if (!r.bad && !o->bad && (res = malloc(o->len))) {
        memcpy(res, o->buf, o->len);
        *out_len = o->len;
    }
    free(o);
    return res;
}

/* Metadata v0-2: the brokers' ports, in place. */
static void rewrite_metadata(conn_t *c, uint8_t *b, size_t len, int16_t ver)
{
    in_t r = {b + 4, b + len, 0};
    if (ver > 2)
        return;
    int32_t n = get32(&r);
    for (int32_t i = 0; i < n && !r.bad; i++) {
        int32_t id = get32(&r);
        char host[256];
        getstr(&r, host, sizeof(host));
        if (r.end - r.p < 4)
            return;
        int port = front_port_of(c->f, id);
        if (port > 0)
            wr32((uint8_t *)r.p, port);
        r.p += 4;
        if (ver >= 1)
            getstr(&r, host, sizeof(host)); /* rack */
    }
    /* The mock never sets its controller id (0, no such broker), so admin requests, which go
     * to the controller, would wait forever: broker 1 plays the controller. */
    if (ver < 1 || r.bad)
        return;
    if (ver >= 2) {
        char cluster[256];
        getstr(&r, cluster, sizeof(cluster));
    }
    if (r.bad || r.end - r.p < 4)
        return;
    if (front_port_of(c->f, rd32(r.p)) < 0)
        wr32((uint8_t *)r.p, 1);
}

/* FindCoordinator v0-2: the coordinator's port, in place. */
static void rewrite_coordinator(conn_t *c, uint8_t *b, size_t len, int16_t ver)
{
    in_t r = {b + 4, b + len, 0};
    if (ver > 2)
        return;
    if (ver >= 1)
        get32(&r); /* throttle */
    int16_t err = get16(&r);
    char tmp[256];
    if (ver >= 1)
        getstr(&r, tmp, sizeof(tmp));
    int32_t id = get32(&r);
    getstr(&r, tmp, sizeof(tmp));
    if (r.bad || err || r.end - r.p < 4)
        return;
    int port = front_port_of(c->f, id);
    if (port > 0)
        wr32((uint8_t *)r.p, port);
}

/* ---- the connection ---- */

static int from_client(conn_t *c)
{
    size_t len = 0;
    uint8_t *b = frame_read(c, 1, &len);
    if (!b || len < 8) {
        free(b);
        return -1;
    }
    int16_t key = rd16(b), ver = rd16(b + 2);
    int32_t corrid = rd32(b + 4);
    in_t r = {b + 8, b + len, 0};
    char client_id[256];
    getstr(&r, client_id, sizeof(client_id));
    int rc;
    if (key == API_SASL_HANDSHAKE && c->f->opts.sasl_user) {
        rc = sasl_handshake(c, corrid, &r);
    } else if (key == API_SASL_AUTHENTICATE && c->f->opts.sasl_user) {
        rc = sasl_authenticate(c, corrid, ver, &r); /* -1 after a refusal: closed */
    } else if (!c->authed && key != API_API_VERSIONS) {
        log_event(LOG_WARN, "devbroker: request before SASL authentication: connection closed",
                  "client", client_id, (char *)NULL);
        rc = -1;
    } else if (key == API_CREATE_TOPICS) {
        rc = create_topics(c, corrid, ver, &r);
    } else {
        if ((key == API_API_VERSIONS || key == API_METADATA || key == API_FIND_COORDINATOR) &&
            c->nwait < (int)(sizeof(c->wait) / sizeof(c->wait[0]))) {
            c->wait[c->nwait].corrid = corrid;
            c->wait[c->nwait].key = key;
            c->wait[c->nwait].ver = ver;
            c->nwait++;
        }
        uint8_t hdr[4];
        wr32(hdr, (int32_t)len);
        rc = fdwrite(c->mfd, hdr, 4) < 0 || fdwrite(c->mfd, b, len) < 0 ? -1 : 0;
    }
    free(b);
    return rc;
}

static int from_mock(conn_t *c)
{
    size_t len = 0;
    uint8_t *b = frame_read(c, 0, &len);
    if (!b)
        return -1;
    int32_t corrid = rd32(b);
    for (int i = 0; i < c->nwait; i++) {
        if (c->wait[i].corrid != corrid)
            continue;
        int16_t key = c->wait[i].key, ver = c->wait[i].ver;
        c->wait[i] = c->wait[--c->nwait];
        if (key == API_API_VERSIONS) {
            size_t nlen = 0;
            uint8_t *nb = rewrite_api_versions(c, b, len, ver, &nlen);
            if (nb) {
                free(b);
                b = nb;
                len = nlen;
            }
        } else if (key == API_METADATA) {
            rewrite_metadata(c, b, len, ver);
        } else {
            rewrite_coordinator(c, b, len, ver);
        }
        break;
    }
    uint8_t hdr[4];
    wr32(hdr, (int32_t)len);
    int rc = cwrite(c, hdr, 4) < 0 || cwrite(c, b, len) < 0 ? -1 : 0;
    free(b);
    return rc;
}

/* Takes c out of f->conns, closes its sockets and frees it. */
static void conn_forget(conn_t *c)
{
    db_front_t *f = c->f;
    pthread_mutex_lock(&f->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        f->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    f->nconns--;
    if (c->mfd >= 0)
        close(c->mfd);
    close(c->cfd);
    pthread_cond_broadcast(&f->gone);
    pthread_mutex_unlock(&f->lock);
    free(c);
}

static void *conn_thread(void *arg)
{
    conn_t *c = arg;
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)c->f->mock_port[c->broker]),
                              .sin_addr = {.s_addr = htonl(INADDR_LOOPBACK)}};
    c->mfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(c->cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (c->mfd < 0 || connect(c->mfd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
        goto out;
    setsockopt(c->mfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (c->f->ssl) {
        c->ssl = SSL_new(c->f->ssl);
        if (!c->ssl)
            goto out;
        SSL_set_fd(c->ssl, c->cfd);
        if (SSL_accept(c->ssl) != 1) {
            char why[256];
            ERR_error_string_n(ERR_get_error(), why, sizeof(why));
            log_event(LOG_WARN, "devbroker: TLS handshake failed", "error", why, (char *)NULL);
            goto out;
        }
    }
    for (;;) {
        if (c->ssl && SSL_pending(c->ssl) > 0) {
            if (from_client(c) < 0)
                break;
            continue;
        }
        struct pollfd p[2] = {{c->cfd, POLLIN, 0}, {c->mfd, POLLIN, 0}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[0].revents && from_client(c) < 0)
            break;
        if (p[1].revents && from_mock(c) < 0)
            break;
    }
out:
    if (c->ssl) {
        SSL_shutdown(c->ssl);
        SSL_free(c->ssl);
    }
    db_scram_free(c->scram);
    conn_forget(c);
    OPENSSL_thread_stop(); /* this thread's OpenSSL state (its error queue), now */
    return NULL;
}

typedef struct listener {
    db_front_t *f;
    int broker;
} listener_t;

static void *accept_thread(void *arg)
{
    listener_t *l = arg;
    for (;;) {
        int fd = accept4(l->f->listen_fd[l->broker], NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            break;
        }
        conn_t *c = calloc(1, sizeof(*c));
        pthread_t t;
        if (!c) {
            close(fd);
            continue;
        }
        *c = (conn_t){.f = l->f,
                      .broker = l->broker,
                      .cfd = fd,
                      .mfd = -1,
                      .authed = l->f->opts.sasl_user == NULL};
        pthread_mutex_lock(&l->f->lock);
        c->next = l->f->conns;
        if (c->next)
            c->next->prev = c;
        l->f->conns = c;
        l->f->nconns++;
        pthread_mutex_unlock(&l->f->lock);
        if (pthread_create(&t, NULL, conn_thread, c) != 0) {
            conn_forget(c);
            continue;
        }
        pthread_detach(t);
    }
    free(l);
    return NULL;
}

static SSL_CTX *tls_ctx(const db_front_opts_t *o, char *errstr, size_t errstr_size)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx)
        goto fail;
    if (SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, o->tls_key, SSL_FILETYPE_PEM) != 1)
        goto fail;
    if (o->tls_ca && *o->tls_ca) {
        if (SSL_CTX_load_verify_locations(ctx, o->tls_ca, NULL) != 1)
            goto fail;
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    return ctx;
fail : {
    char why[256];
    ERR_error_string_n(ERR_get_error(), why, sizeof(why));
    snprintf(errstr, errstr_size, "TLS: %s", why);
}
    SSL_CTX_free(ctx);
    return NULL;
}

/* Every name in list is a mechanism the front serves. */
static int mechanisms_check(const char *list, char *errstr, size_t errstr_size)
{
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        char mech[64];
        snprintf(mech, sizeof(mech), "%.*s", (int)strcspn(p, ","), p);
        if (strcmp(mech, "PLAIN") != 0 && !db_scram_known(mech)) {
            snprintf(errstr, errstr_size,
                     "SASL mechanism \"%s\" is not served (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)",
                     mech);
            return -1;
        }
    }
    return 0;
}

db_front_t *db_front_start(rd_kafka_mock_cluster_t *mcluster, const char *mock_bootstraps,
                           const db_front_opts_t *opts, char *errstr, size_t errstr_size)
{
    db_front_t *f = calloc(1, sizeof(*f));
    if (!f) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->gone, NULL);
    f->mcluster = mcluster;
    f->opts = *opts;
    if (!f->opts.sasl_mechanisms || !*f->opts.sasl_mechanisms)
        f->opts.sasl_mechanisms = "PLAIN";
    if (mechanisms_check(f->opts.sasl_mechanisms, errstr, errstr_size) < 0)
        goto fail;
    if (opts->tls_cert && *opts->tls_cert) {
        f->ssl = tls_ctx(opts, errstr, errstr_size);
        if (!f->ssl)
            goto fail;
    }
    for (const char *p = mock_bootstraps; p && *p && f->n < FRONT_MAX_BROKERS;) {
        const char *colon = strchr(p, ':');
        if (!colon)
            break;
        f->mock_port[f->n++] = atoi(colon + 1); /* the mock's own output: digits */
        p = strchr(colon, ',');
        p = p ? p + 1 : NULL;
    }
    size_t off = 0;
    for (int i = 0; i < f->n; i++) {
        struct sockaddr_in sin = {.sin_family = AF_INET,
                                  .sin_addr = {.s_addr = htonl(INADDR_LOOPBACK)}};
        socklen_t sl = sizeof(sin);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 128) < 0 ||
            getsockname(fd, (struct sockaddr *)&sin, &sl) < 0) {
            snprintf(errstr, errstr_size, "front listener: %s", strerror(errno));
            if (fd >= 0)
                close(fd);
            goto fail;
        }
        f->listen_fd[i] = fd;
        f->front_port[i] = ntohs(sin.sin_port);
        off += (size_t)snprintf(f->bootstraps + off, sizeof(f->bootstraps) - off, "%s127.0.0.1:%d",
                                i ? "," : "", f->front_port[i]);
        listener_t *l = malloc(sizeof(*l));
        pthread_t t;
        if (!l) {
            snprintf(errstr, errstr_size, "out of memory");
            goto fail;
        }
        *l = (listener_t){f, i};
        if (pthread_create(&t, NULL, accept_thread, l) != 0) {
            free(l);
            snprintf(errstr, errstr_size, "cannot start a front thread");
            goto fail;
        }
        pthread_detach(t);
    }
    return f;
fail:
    /* start-up failed: the process exits, threads already started die with it */
    return NULL;
}

void db_front_stop(db_front_t *f, int timeout_ms)
{
    struct timespec until = util_deadline_realtime(timeout_ms);
    pthread_mutex_lock(&f->lock);
    for (conn_t *c = f->conns; c; c = c->next) { /* each thread wakes, sees EOF and ends */
        shutdown(c->cfd, SHUT_RDWR);
        if (c->mfd >= 0)
            shutdown(c->mfd, SHUT_RDWR);
    }
    while (f->nconns > 0 && pthread_cond_timedwait(&f->gone, &f->lock, &until) == 0)
        ;
    pthread_mutex_unlock(&f->lock);
}

const char *db_front_bootstraps(const db_front_t *f)
{
    return f->bootstraps;
}
