/*
 * loadgen.c - bench-loadgen: a fixed-rate (open-loop) HTTP/1.1 load generator.
 *
 * wrk measures peak throughput with a closed loop: each connection sends its next request
 * as soon as the previous answer arrives, so its latencies are those of a saturated server.
 * The targets (docs/benchmarks.md) also ask for the median latency at about half of peak load,
 * which needs an open loop at a fixed rate (what wrk2 does; wrk2 is not packaged in Debian).
 *
 * Method: request k is due at t0 + k / rate. Due requests go out on an idle keep-alive
 * connection of a fixed pool (--connections); when none is idle they wait in a queue. The
 * latency of a request is measured from its due time, not from when it was written, so a
 * server that stalls is charged for the requests it delayed (no coordinated omission, as in
 * wrk2). The service time (written -> answered) is reported too. Requests due during the
 * --warmup seconds are sent but not recorded. One epoll thread; timers use epoll_pwait2 with
 * a 1 us timer slack, so sends are not batched to millisecond ticks.
 *
 * With --check-result an answer counts only if it is HTTP 200 with a JSON-RPC "result" whose
 * isError is not true (the same rule as bench-inflight); otherwise any 2xx counts.
 *
 *   bench-loadgen --url http://127.0.0.1:8080/mcp --rate 5000 [--duration 10] [--warmup 2]
 *                 [--connections 64] --body JSON [-H "Name: value" ...] [--check-result]
 *   --get instead of --body sends GET requests without a body (/healthz while calls run:
 *   bench/sec_redislat.sh).
 *
 * Output: "key=value" lines (run.sh greps them); latencies in milliseconds.
 */
#include <cJSON.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RESP_MAX (1024 * 1024)
#define MAX_HEADERS 16

typedef struct lconn {
    int fd;
    int busy;       /* a request is on the wire */
    int64_t t_due;  /* due time of that request (ns) */
    int64_t t_sent; /* when it was written (ns) */
    int record;     /* outside the warm-up */
    size_t sent;    /* bytes of the request written */
    char *rbuf;
    size_t rlen, rcap;
} lconn_t;

typedef struct opts {
    struct sockaddr_in addr;
    char host[64];
    char path[256];
    const char *body;
    const char *headers[MAX_HEADERS];
    int nheaders;
    long rate, duration_s, warmup_s, connections;
    int check_result;
    int get; /* --get: GET without a body */
} opts_t;

typedef struct run {
    const opts_t *o;
    int ep;
    char *req;
    size_t req_len;
    lconn_t *conns;
    int64_t *lat, *svc; /* recorded latencies and service times (ns) */
    size_t nlat, caplat;
    long ok, bad_status, bad_result, broken, reconnects;
    int64_t *queue; /* due times waiting for an idle connection */
    size_t qhead, qtail, qcap;
    size_t max_queue;
    char first_error[200];
} run_t;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse_url(const char *url, opts_t *o)
{
    if (strncmp(url, "http://", 7) != 0)
        return -1;
    const char *h = url + 7;
    const char *slash = strchr(h, '/');
    size_t hl = slash ? (size_t)(slash - h) : strlen(h);
    if (hl == 0 || hl >= sizeof(o->host))
        return -1;
    memcpy(o->host, h, hl);
    o->host[hl] = '\0';
    snprintf(o->path, sizeof(o->path), "%s", slash ? slash : "/");
    char ip[64];
    long port = 80;
    snprintf(ip, sizeof(ip), "%s", o->host);
    char *colon = strchr(ip, ':');
    if (colon) {
        *colon = '\0';
        if (parse_long(colon + 1, 1, 65535, &port) < 0)
            return -1;
    }
    if (strcmp(ip, "localhost") == 0)
        snprintf(ip, sizeof(ip), "127.0.0.1");
    memset(&o->addr, 0, sizeof(o->addr));
    o->addr.sin_family = AF_INET;
    o->addr.sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, ip, &o->addr.sin_addr) == 1 ? 0 : -1;
}

static void note_error(run_t *r, const char *what, const char *detail, size_t len)
{
    if (!r->first_error[0])
        snprintf(r->first_error, sizeof(r->first_error), "%s: %.*s", what,
                 (int)(len < 150 ? len : 150), detail);
}

/* Opens (or reopens) the keep-alive connection c: blocking connect, then non-blocking. */
static int conn_open(run_t *r, lconn_t *c)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&r->o->addr, sizeof(r->o->addr)) < 0) {
        const char *e = strerror(errno);
        note_error(r, "connect", e, strlen(e));
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int fl = fcntl(fd, F_GETFL);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
        epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
        close(fd);
        return -1;
    }
    c->fd = fd;
    c->busy = 0;
    c->sent = 0;
    c->rlen = 0;
    return 0;
}

static void conn_close(lconn_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->busy = 0;
    c->rlen = 0;
}

/*
 * Looks for one complete HTTP/1.1 response at the start of b. Returns its length, 0 while
 * incomplete, -1 when malformed. On a complete response fills *status, *close_after and
 * *body (malloc'd, NUL-terminated, de-chunked; the caller frees it) and *blen.
 */
static long resp_parse(const char *b, size_t len, int *status, int *close_after, char **body,
                       size_t *blen)
{
    const char *hend = memmem(b, len, "\r\n\r\n", 4);
    if (!hend)
        return len > 65536 ? -1 : 0;
    size_t hlen = (size_t)(hend - b) + 4;
    if (len < 12 || strncmp(b, "HTTP/1.", 7) != 0)
        return -1;
    *status = (int)strtol(b + 9, NULL, 10);
    long clen = -1;
    int chunked = 0;
    *close_after = b[7] == '0'; /* HTTP/1.0 */
    for (const char *l = memmem(b, hlen, "\r\n", 2); l && l < hend;
         l = memmem(l, (size_t)(hend - l) + 2, "\r\n", 2)) {
        l += 2;
        if (strncasecmp(l, "Content-Length:", 15) == 0)
            clen = strtol(l + 15, NULL, 10);
        else if (strncasecmp(l, "Transfer-Encoding:", 18) == 0 && strstr(l, "chunked") &&
                 strstr(l, "chunked") < strstr(l, "\r\n"))
            chunked = 1;
        else if (strncasecmp(l, "Connection:", 11) == 0 && strncasecmp(l + 11, " close", 6) == 0)
            *close_after = 1;
    }
    if (!chunked) {
        if (clen < 0)
            clen = (*status == 204 || *status == 304 || *status < 200) ? 0 : -1;
        if (clen < 0)
            return -1; /* read-to-EOF bodies are not used by the servers under test */
        if (len < hlen + (size_t)clen)
            return 0;
        *body = malloc((size_t)clen + 1);
        if (!*body)
            return -1;
        memcpy(*body, b + hlen, (size_t)clen);
        (*body)[clen] = '\0';
        *blen = (size_t)clen;
        return (long)(hlen + (size_t)clen);
    }
    size_t pos = hlen, out = 0;
    char *buf = malloc(len + 1);
    if (!buf)
        return -1;
    for (;;) {
        const char *le = memmem(b + pos, len - pos, "\r\n", 2);
        if (!le) {
            free(buf);
            return 0;
        }
        long sz = strtol(b + pos, NULL, 16);
        size_t data = (size_t)(le - b) + 2;
        if (sz < 0) {
            free(buf);
            return -1;
        }
        if (sz == 0) {
            if (len < data + 2) {
                free(buf);
                return 0;
            }
            buf[out] = '\0';
            *body = buf;
            *blen = out;
            return (long)(data + 2);
        }
        if (len < data + (size_t)sz + 2) {
            free(buf);
            return 0;
        }
        memcpy(buf + out, b + data, (size_t)sz);
        out += (size_t)sz;
        pos = data + (size_t)sz + 2;
    }
}

static int answer_ok(run_t *r, int status, const char *body, size_t blen)
{
    if (status < 200 || status > 299) {
        r->bad_status++;
        char line[32];
        snprintf(line, sizeof(line), "%d", status);
        note_error(r, "HTTP status", line, strlen(line));
        return 0;
    }
    if (!r->o->check_result)
        return 1;
    cJSON *doc = cJSON_ParseWithLength(body, blen);
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(doc, "result");
    int ok = cJSON_IsObject(result) &&
             !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError"));
    cJSON_Delete(doc);
    if (!ok) {
        r->bad_result++;
        note_error(r, "JSON-RPC answer", body, blen);
    }
    return ok;
}

static void record(run_t *r, lconn_t *c, int64_t t)
{
    if (!c->record)
        return;
    if (r->nlat == r->caplat) {
        size_t ncap = r->caplat ? r->caplat * 2 : 65536;
        int64_t *a = realloc(r->lat, ncap * sizeof(*a));
        int64_t *b = a ? realloc(r->svc, ncap * sizeof(*b)) : NULL;
        if (a)
            r->lat = a;
        if (!a || !b)
            return;
        r->svc = b;
        r->caplat = ncap;
    }
    r->lat[r->nlat] = t - c->t_due;
    r->svc[r->nlat] = t - c->t_sent;
    r->nlat++;
}

/* Writes what is left of the request; 0, or -1 when the connection broke. */
static int conn_write(run_t *r, lconn_t *c)
{
    while (c->sent < r->req_len) {
        ssize_t w = send(c->fd, r->req + c->sent, r->req_len - c->sent, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return -1;
            struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLOUT, .data.ptr = c};
            epoll_ctl(r->ep, EPOLL_CTL_MOD, c->fd, &ev);
            return 0;
        }
        c->sent += (size_t)w;
    }
    return 0;
}

/* Handles readable data on c; returns 1 when a busy c became idle again (answered, or broken
 * and reopened). */
static int conn_read(run_t *r, lconn_t *c)
{
    int entry_busy = c->busy, eof = 0;
    for (;;) {
        if (c->rcap - c->rlen < 4096) {
            size_t ncap = c->rcap ? c->rcap * 2 : 16384;
            char *nb = ncap <= RESP_MAX ? realloc(c->rbuf, ncap) : NULL;
            if (!nb) {
                eof = -1;
                break;
            }
            c->rbuf = nb;
            c->rcap = ncap;
        }
        ssize_t n = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen - 1, 0);
        if (n > 0) {
            c->rlen += (size_t)n;
            continue;
        }
        if (n == 0)
            eof = 1;
        else if (errno == EINTR)
            continue;
        else if (errno != EAGAIN && errno != EWOULDBLOCK)
            eof = -1;
        break;
    }
    int became_idle = 0;
    if (c->busy && c->rlen) {
        int status = 0, close_after = 0;
        char *body = NULL;
        size_t blen = 0;
        long used = resp_parse(c->rbuf, c->rlen, &status, &close_after, &body, &blen);
        if (used > 0) {
            int64_t t = now_ns();
            if (answer_ok(r, status, body, blen)) {
                if (c->record)
                    r->ok++;
                record(r, c, t);
            }
            free(body);
            memmove(c->rbuf, c->rbuf + used, c->rlen - (size_t)used);
            c->rlen -= (size_t)used;
            c->busy = 0;
            became_idle = 1;
            if (close_after)
                eof = 1;
        } else if (used < 0) {
            note_error(r, "malformed answer", c->rbuf, c->rlen);
            eof = -1;
        }
    }
    if (eof) {
        if (c->busy) {
            r->broken++;
            if (!r->first_error[0])
                note_error(r, "connection", "closed before the answer", 23);
        }
        conn_close(c);
        r->reconnects++;
        /* An idle connection that the server closed is reopened and stays in the idle list. */
        return conn_open(r, c) == 0 ? entry_busy : 0;
    }
    return became_idle;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_ms(const int64_t *v, size_t n, double p)
{
    if (!n)
        return 0;
    size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return (double)v[i] / 1e6;
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s --url http://127.0.0.1:PORT/path --rate N (--body JSON | --get)\n"
            "          [--duration S]"
            " [--warmup S] [--connections N] [-H 'Name: value' ...] [--check-result]\n",
            prog);
}

/* Runs the open loop on the connected pool and prints the report. */
static void run_and_report(run_t *r, size_t *idle, size_t nidle, const char *url)
{
    const opts_t *o = r->o;
    const int64_t NS = 1000000000;
    int64_t t0 = now_ns() + NS / 20;
    int64_t warm_end = t0 + o->warmup_s * NS, end = warm_end + o->duration_s * NS;
    long long total = (long long)o->rate * (o->warmup_s + o->duration_s), k = 0;
    int64_t drain_until = end + 10 * NS;
    long busy = 0, lost_queue = 0;
    struct epoll_event evs[256];
    for (;;) {
        int64_t now = now_ns();
        while (k < total) {
            int64_t due = t0 + (int64_t)((double)k * 1e9 / (double)o->rate);
            if (due > now)
                break;
            if (r->qtail - r->qhead < r->qcap)
                r->queue[r->qtail++ % r->qcap] = due;
            else
                lost_queue++;
            k++;
        }
        if (r->qtail - r->qhead > r->max_queue)
            r->max_queue = r->qtail - r->qhead;
        while (r->qhead != r->qtail && nidle) {
            lconn_t *c = &r->conns[idle[--nidle]];
            c->t_due = r->queue[r->qhead++ % r->qcap];
            c->record = c->t_due >= warm_end;
            c->busy = 1;
            c->sent = 0;
            c->t_sent = now_ns();
            busy++;
            if (conn_write(r, c) < 0) {
                r->broken++;
                busy--;
                conn_close(c);
                r->reconnects++;
                if (conn_open(r, c) == 0)
                    idle[nidle++] = (size_t)(c - r->conns);
            }
        }
        if (k >= total && r->qhead == r->qtail && busy == 0)
            break;
        if (now > drain_until)
            break;
        struct timespec ts = {0, 100000000};
        if (k < total) {
            int64_t due = t0 + (int64_t)((double)k * 1e9 / (double)o->rate);
            int64_t d = due - now_ns();
            if (d < 0)
                d = 0;
            ts.tv_sec = (time_t)(d / NS);
            ts.tv_nsec = (long)(d % NS);
        }
        int ne = epoll_pwait2(r->ep, evs, 256, &ts, NULL);
        for (int i = 0; i < ne; i++) {
            lconn_t *c = evs[i].data.ptr;
            if (c->fd < 0)
                continue;
            int was_busy = c->busy;
            if ((evs[i].events & EPOLLOUT) && c->busy && c->sent < r->req_len) {
                if (conn_write(r, c) < 0) {
                    c->rlen = 0;
                    shutdown(c->fd, SHUT_RDWR);
                }
                if (c->sent == r->req_len) {
                    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
                    epoll_ctl(r->ep, EPOLL_CTL_MOD, c->fd, &ev);
                }
            }
            if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                if (conn_read(r, c)) {
                    if (was_busy)
                        busy--;
                    idle[nidle++] = (size_t)(c - r->conns);
                } else if (c->fd < 0 && was_busy) {
                    busy--; /* broken and could not reconnect: the connection is gone */
                }
            }
        }
    }
    long outstanding = busy + (long)(r->qtail - r->qhead) + lost_queue;

    qsort(r->lat, r->nlat, sizeof(*r->lat), cmp_i64);
    qsort(r->svc, r->nlat, sizeof(*r->svc), cmp_i64);
    printf("# bench-loadgen: %ld req/s for %ld s (+%ld s warm-up) on %ld connections to %s\n",
           o->rate, o->duration_s, o->warmup_s, o->connections, url);
    printf("rate_target=%ld\n", o->rate);
    printf("recorded=%zu\n", r->nlat);
    printf("achieved_rps=%.1f\n", (double)r->nlat / (double)o->duration_s);
    printf("errors=%ld\n", r->bad_status + r->bad_result + r->broken + outstanding);
    printf("errors_status=%ld\nerrors_result=%ld\nerrors_broken=%ld\nunanswered=%ld\n",
           r->bad_status, r->bad_result, r->broken, outstanding);
    if (r->first_error[0])
        printf("first_error=%s\n", r->first_error);
    printf("max_queue=%zu\n", r->max_queue);
    printf("latency_p50_ms=%.3f\n", pct_ms(r->lat, r->nlat, 50));
    printf("latency_p90_ms=%.3f\n", pct_ms(r->lat, r->nlat, 90));
    printf("latency_p99_ms=%.3f\n", pct_ms(r->lat, r->nlat, 99));
    printf("latency_p999_ms=%.3f\n", pct_ms(r->lat, r->nlat, 99.9));
    printf("latency_max_ms=%.3f\n", r->nlat ? (double)r->lat[r->nlat - 1] / 1e6 : 0.0);
    printf("service_p50_ms=%.3f\n", pct_ms(r->svc, r->nlat, 50));
    printf("service_p99_ms=%.3f\n", pct_ms(r->svc, r->nlat, 99));
}

int main(int argc, char **argv)
{
    opts_t o = {.duration_s = 10, .warmup_s = 2, .connections = 64};
    const char *url = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--check-result") == 0) {
            o.check_result = 1;
            continue;
        }
        if (strcmp(a, "--get") == 0) {
            o.get = 1;
            continue;
        }
        int bad = 0;
        if (!v)
            bad = 1; /* every remaining option takes a value */
        else if (strcmp(a, "--url") == 0)
            url = v;
        else if (strcmp(a, "--body") == 0)
            o.body = v;
        else if (strcmp(a, "-H") == 0 && o.nheaders < MAX_HEADERS)
            o.headers[o.nheaders++] = v;
        else if (strcmp(a, "--rate") == 0)
            bad = parse_long(v, 1, 10000000, &o.rate);
        else if (strcmp(a, "--duration") == 0)
            bad = parse_long(v, 1, 3600, &o.duration_s);
        else if (strcmp(a, "--warmup") == 0)
            bad = parse_long(v, 0, 3600, &o.warmup_s);
        else if (strcmp(a, "--connections") == 0)
            bad = parse_long(v, 1, 10000, &o.connections);
        else
            bad = 1;
        if (bad) {
            usage(argv[0]);
            return 2;
        }
        i++;
    }
    if (!url || !o.rate || !(o.body || o.get) || parse_url(url, &o) < 0) {
        usage(argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

    int rc = 1;
    size_t *idle = NULL;
    run_t r;
    memset(&r, 0, sizeof(r));
    r.ep = -1;
    r.o = &o;
    char hdrs[4096];
    size_t hl = 0;
    hdrs[0] = '\0';
    for (int i = 0; i < o.nheaders; i++)
        hl += (size_t)snprintf(hdrs + hl, sizeof(hdrs) - hl, "%s\r\n", o.headers[i]);
    int n;
    if (o.get)
        n = asprintf(&r.req, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", o.path, o.host, hdrs);
    else
        n = asprintf(&r.req, "POST %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %zu\r\n\r\n%s",
                     o.path, o.host, hdrs, strlen(o.body), o.body);
    if (n < 0)
        r.req = NULL;
    r.ep = epoll_create1(EPOLL_CLOEXEC);
    r.conns = calloc((size_t)o.connections, sizeof(*r.conns));
    idle = malloc((size_t)o.connections * sizeof(*idle));
    r.qcap = 1 << 20;
    r.queue = malloc(r.qcap * sizeof(*r.queue));
    if (n < 0 || r.ep < 0 || !r.conns || !idle || !r.queue) {
        fprintf(stderr, "bench-loadgen: out of memory\n");
        goto out;
    }
    r.req_len = (size_t)n;
    for (long i = 0; i < o.connections; i++)
        r.conns[i].fd = -1;
    size_t nidle = 0;
    for (long i = 0; i < o.connections; i++) {
        if (conn_open(&r, &r.conns[i]) < 0) {
            fprintf(stderr, "bench-loadgen: cannot connect to %s: %s\n", url, r.first_error);
            goto out;
        }
        idle[nidle++] = (size_t)i;
    }

    run_and_report(&r, idle, nidle, url);
    rc = 0;
out:
    for (long i = 0; r.conns && i < o.connections; i++) {
        conn_close(&r.conns[i]);
        free(r.conns[i].rbuf);
    }
    free(r.conns);
    free(idle);
    free(r.queue);
    free(r.lat);
    free(r.svc);
    free(r.req);
    if (r.ep >= 0)
        close(r.ep);
    return rc;
}
