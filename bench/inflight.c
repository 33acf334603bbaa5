/*
 * inflight.c - bench-inflight: N concurrent in-flight tools/call requests against one ingress.
 *
 * One epoll thread opens N (default 10,000) TCP connections to the ingress, each carrying one
 * HTTP/1.1 POST of a tools/call of a sleeping tool with "Connection: close" (no keep-alive:
 * every call has its own connection, as N independent clients would). Connections are ramped
 * as fast as the machine allows: non-blocking connect(), at most --max-connecting handshakes
 * outstanding at once so the listen backlog is not overrun, and a transient refusal by the
 * kernel (EAGAIN, EADDRNOTAVAIL, ENOBUFS, EMFILE) only delays that connection. It then waits
 * for every answer.
 *
 * While the run lasts it samples /proc/<pid>/status of the ingress (--pid) every 100 ms and
 * keeps the largest VmRSS and the smallest and largest thread count, which is how the target
 * of docs/benchmarks.md, "Targets" (10,000 in-flight under 128 MB with a constant thread count), is
 * checked.
 *
 * A call counts as completed when the answer is HTTP 200 with a JSON-RPC "result" whose
 * isError is not true; anything else is a failure, counted by kind (a connection's kind; the
 * calls of a batch whose answer lacks theirs count as failed_elements).
 *
 * With --batch B each connection carries one JSON-RPC batch of B tools/call (protocol version
 * 2025-03-26, which has batches: docs/internals.md, "Batches"), so n calls wait on n / B
 * connections; every element is a job of its own. With --sources S connection i is bound to
 * the source address 127.0.0.1 + (i mod S) (127.0.0.1, 127.0.0.2, ...: all of 127.0.0.0/8 is
 * loopback), so that more than one address's ephemeral port range (about 28,000) can reach
 * the ingress's one port.
 *
 * An answer may be one JSON body (an object, or the array of a batch) or an SSE stream
 * (chunked, `text/event-stream`: each `data:` line is one JSON-RPC message), which is what
 * the ingress sends a client that accepts text/event-stream once a keep-alive or a progress
 * frame went out; each JSON-RPC response in it counts.
 *
 *   bench-inflight --url http://127.0.0.1:8080/mcp --key KEY [-n 10000] [--tool sleep]
 *                  [--ms 5000] [--pid PID] [--max-connecting 1000] [--timeout-s S]
 *                  [--accept TYPES] [--protocol-version V] [--batch B] [--sources S]
 *
 * Output: human-readable "key=value" lines (run.sh greps them). Exit status 0 when every call
 * completed, 1 when some failed, 2 on a usage error.
 */
#include <cJSON.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RESP_MAX (256 * 1024) /* an answer larger than this is a failure */
#define SAMPLE_US 100000      /* /proc sampling period */

enum cstate { C_NEW, C_CONNECTING, C_SENDING, C_READING, C_DONE };

enum outcome {
    O_NONE,
    O_OK,
    O_CONNECT,  /* connect() failed for good */
    O_RESET,    /* the connection broke before a full answer */
    O_HTTP,     /* a status other than 200 */
    O_RPCERROR, /* 200 with a JSON-RPC error or isError: true, or not JSON */
    O_TIMEOUT,  /* no answer before --timeout-s */
    O_COUNT
};

static const char *const outcome_names[O_COUNT] = {"none", "ok",       "connect", "reset",
                                                   "http", "rpcerror", "timeout"};

typedef struct conn {
    long id; /* the JSON-RPC id of its call */
    int fd;
    enum cstate state;
    enum outcome outcome;
    int retries;
    long ok_calls; /* JSON-RPC results (not isError) in its answer */
    char *req;     /* the request bytes; freed once sent */
    size_t req_len, sent;
    char *rbuf;
    size_t rlen, rcap;
    int64_t t_start, t_sent, t_done; /* monotonic microseconds */
} conn_t;

typedef struct opts {
    struct sockaddr_in addr;
    char host[64];
    char path[256];
    const char *key;
    const char *tool;
    const char *protocol_version;
    const char *accept;
    long n, ms, pid, max_connecting, timeout_s;
    long batch;   /* calls per connection (1: a single call, else a JSON-RPC batch) */
    long sources; /* source addresses 127.0.0.1 .. (round robin); 0: the kernel's choice */
    long nconns;  /* n / batch */
} opts_t;

typedef struct stats {
    long started, connecting, sent, answered, inflight, peak_inflight;
    long transient_retries;
    long counts[O_COUNT]; /* per connection */
    long calls_ok;        /* per call */
    int64_t t_all_sent;   /* when the last request was fully written */
    long rss_max_kb, rss_first_kb, rss_last_kb, hwm_kb;
    long threads_min, threads_max, samples;
    int proc_gone;
    char first_error[200];
} stats_t;

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
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

/* http://A.B.C.D[:port][/path] (IPv4 literal: the bench is loopback-only). */
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

/* The body: one tools/call with id, or a batch of o->batch of them (ids id*batch ...). */
static char *build_body(const opts_t *o, long id, int *len)
{
    size_t cap = (size_t)o->batch * 160 + 8, used = 0;
    char *body = malloc(cap);
    if (!body)
        return NULL;
    if (o->batch > 1)
        body[used++] = '[';
    for (long j = 0; j < o->batch; j++) {
        int k = snprintf(body + used, cap - used,
                         "%s{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
                         "{\"name\":\"%s\",\"arguments\":{\"ms\":%ld}}}",
                         j ? "," : "", o->batch > 1 ? id * o->batch + j : id, o->tool, o->ms);
        if (k < 0 || (size_t)k >= cap - used) {
            free(body);
            return NULL;
        }
        used += (size_t)k;
    }
    if (o->batch > 1)
        body[used++] = ']';
    body[used] = '\0';
    *len = (int)used;
    return body;
}

static char *build_request(const opts_t *o, long id, size_t *len)
{
    int bl;
    char *body = build_body(o, id, &bl);
    if (!body)
        return NULL;
    char pv[96] = "";
    if (o->protocol_version)
        snprintf(pv, sizeof(pv), "MCP-Protocol-Version: %s\r\n", o->protocol_version);
    char *req = NULL;
    int n = asprintf(&req,
                     "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
                     "Content-Type: application/json\r\nAccept: %s\r\n%s"
                     "Connection: close\r\nContent-Length: %d\r\n\r\n%s",
                     o->path, o->host, o->key, o->accept, pv, bl, body);
    free(body);
    if (n < 0)
        return NULL;
    *len = (size_t)n;
    return req;
}

static void note_error(stats_t *st, const char *fmt, const char *detail)
{
    if (!st->first_error[0])
        snprintf(st->first_error, sizeof(st->first_error), fmt, detail);
}

/* Counts the JSON-RPC results (not isError) in one message: an object or a batch's array. */
static long count_results(const cJSON *doc)
{
    if (cJSON_IsArray(doc)) {
        long n = 0;
        const cJSON *item;
        cJSON_ArrayForEach(item, doc) n += count_results(item);
        return n;
    }
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(doc, "result");
    const cJSON *is_err = cJSON_GetObjectItemCaseSensitive(result, "isError");
    return cJSON_IsObject(result) && !cJSON_IsTrue(is_err) ? 1 : 0;
}

/* Decodes a chunked body in place (b, *len); -1 when malformed or cut short. */
static int dechunk(char *b, size_t *len)
{
    size_t in = 0, out = 0;
    for (;;) {
        char *le = memmem(b + in, *len - in, "\r\n", 2);
        if (!le)
            return -1;
        long sz = strtol(b + in, NULL, 16);
        size_t data = (size_t)(le - b) + 2;
        if (sz < 0 || data + (size_t)sz > *len)
            return -1;
        if (sz == 0)
            break;
        memmove(b + out, b + data, (size_t)sz);
        out += (size_t)sz;
        in = data + (size_t)sz + 2;
        if (in > *len)
            return -1;
    }
    b[out] = '\0';
    *len = out;
    return 0;
}

/* The results in a body: JSON (an object or an array), or SSE whose `data:` lines each hold
 * one JSON-RPC message. */
static long body_results(char *body, size_t blen, int sse)
{
    if (!sse) {
        cJSON *doc = cJSON_ParseWithLength(body, blen);
        long n = count_results(doc);
        cJSON_Delete(doc);
        return n;
    }
    long n = 0;
    for (char *line = body; line && line < body + blen;) {
        char *nl = memchr(line, '\n', (size_t)(body + blen - line));
        size_t ll = nl ? (size_t)(nl - line) : (size_t)(body + blen - line);
        if (ll > 6 && strncmp(line, "data: ", 6) == 0) {
            cJSON *doc = cJSON_ParseWithLength(line + 6, ll - 6);
            n += count_results(doc);
            cJSON_Delete(doc);
        }
        line = nl ? nl + 1 : NULL;
    }
    return n;
}

/* Parses a complete answer in c->rbuf; returns 1 when complete (c->outcome and c->ok_calls
 * set), else 0. A body without Content-Length (chunked: SSE) is complete at EOF. */
static int check_answer(conn_t *c, int eof, long expect, stats_t *st)
{
    char *hend = c->rbuf ? strstr(c->rbuf, "\r\n\r\n") : NULL;
    if (!hend) {
        if (eof) {
            c->outcome = O_RESET;
            return 1;
        }
        return 0;
    }
    size_t hlen = (size_t)(hend - c->rbuf) + 4;
    long clen = -1;
    int chunked = 0, sse = 0;
    for (char *line = strstr(c->rbuf, "\r\n"); line && line < hend; line = strstr(line, "\r\n")) {
        line += 2;
        if (strncasecmp(line, "Content-Length:", 15) == 0)
            clen = strtol(line + 15, NULL, 10);
        else if (strncasecmp(line, "Transfer-Encoding: chunked", 26) == 0)
            chunked = 1;
        else if (strncasecmp(line, "Content-Type: text/event-stream", 31) == 0)
            sse = 1;
    }
    int partial = clen >= 0 ? c->rlen < hlen + (size_t)clen : !eof; /* else read to EOF */
    if (partial) {
        if (!eof)
            return 0;
        c->outcome = O_RESET;
        return 1;
    }
    int status = 0;
    if (strncmp(c->rbuf, "HTTP/1.", 7) == 0 && c->rlen > 12)
        status = (int)strtol(c->rbuf + 9, NULL, 10);
    if (status != 200) {
        c->outcome = O_HTTP;
        char line[120];
        snprintf(line, sizeof(line), "%.*s", (int)strcspn(c->rbuf, "\r\n"), c->rbuf);
        note_error(st, "HTTP answer: %s", line);
        return 1;
    }
    size_t blen = clen >= 0 ? (size_t)clen : c->rlen - hlen;
    if (chunked && dechunk(c->rbuf + hlen, &blen) < 0) {
        c->outcome = O_RESET;
        note_error(st, "%s", "a chunked answer cut short");
        return 1;
    }
    c->ok_calls = body_results(c->rbuf + hlen, blen, sse);
    if (c->ok_calls == expect) {
        c->outcome = O_OK;
    } else {
        c->outcome = O_RPCERROR;
        char body[160];
        snprintf(body, sizeof(body), "%.*s", (int)(blen < 150 ? blen : 150), c->rbuf + hlen);
        note_error(st, "JSON-RPC answer: %s", body);
    }
    return 1;
}

static void finish(conn_t *c, enum outcome oc, stats_t *st)
{
    if (oc != O_NONE)
        c->outcome = oc;
    if (c->fd >= 0)
        close(c->fd); /* also removes it from the epoll set */
    c->fd = -1;
    if (c->state == C_READING) {
        st->inflight--;
        st->answered++;
    }
    if (c->state == C_CONNECTING)
        st->connecting--;
    c->state = C_DONE;
    c->t_done = now_us();
    st->counts[c->outcome]++;
    st->calls_ok += c->ok_calls;
    free(c->req);
    c->req = NULL;
    free(c->rbuf);
    c->rbuf = NULL;
}

static void do_send(conn_t *c, int ep, stats_t *st)
{
    while (c->sent < c->req_len) {
        ssize_t w = send(c->fd, c->req + c->sent, c->req_len - c->sent, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            if (errno == EINTR)
                continue;
            note_error(st, "send: %s", strerror(errno));
            finish(c, O_RESET, st);
            return;
        }
        c->sent += (size_t)w;
    }
    free(c->req);
    c->req = NULL;
    c->state = C_READING;
    c->t_sent = now_us();
    st->sent++;
    st->inflight++;
    if (st->inflight > st->peak_inflight)
        st->peak_inflight = st->inflight;
    if (c->t_sent > st->t_all_sent)
        st->t_all_sent = c->t_sent;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void do_read(conn_t *c, long expect, stats_t *st)
{
    for (;;) {
        if (c->rcap - c->rlen < 4096) {
            size_t ncap = c->rcap ? c->rcap * 2 : 4096;
            if (ncap > RESP_MAX + 1) {
                note_error(st, "%s", "answer too large");
                finish(c, O_RPCERROR, st);
                return;
            }
            char *nb = realloc(c->rbuf, ncap);
            if (!nb) {
                finish(c, O_RESET, st);
                return;
            }
            c->rbuf = nb;
            c->rcap = ncap;
        }
        ssize_t r = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen - 1, 0);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (check_answer(c, 0, expect, st))
                    finish(c, O_NONE, st);
                return;
            }
            if (errno == EINTR)
                continue;
            note_error(st, "recv: %s", strerror(errno));
            if (!check_answer(c, 1, expect, st))
                c->outcome = O_RESET;
            finish(c, O_NONE, st);
            return;
        }
        c->rlen += (size_t)r;
        c->rbuf[c->rlen] = '\0';
        if (r == 0) {
            check_answer(c, 1, expect, st);
            finish(c, O_NONE, st);
            return;
        }
    }
}

/* Starts connection c. Returns 0 when started (or failed for good), -1 on a transient refusal
 * (the caller retries it later). */
static int do_connect(conn_t *c, int ep, const opts_t *o, stats_t *st)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            return -1;
        note_error(st, "socket: %s", strerror(errno));
        finish(c, O_CONNECT, st);
        return 0;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (o->sources > 0) {
        /* The port is picked at connect() for the whole 4-tuple, not at bind(). */
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
        struct sockaddr_in src = {.sin_family = AF_INET};
        src.sin_addr.s_addr = htonl(0x7f000001u + (uint32_t)((c->id - 1) % o->sources));
        if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0) {
            int e = errno;
            close(fd);
            if (e == EADDRINUSE || e == EADDRNOTAVAIL)
                return -1;
            note_error(st, "bind: %s", strerror(e));
            finish(c, O_CONNECT, st);
            return 0;
        }
    }
    if (!c->req) {
        c->req = build_request(o, c->id, &c->req_len);
        if (!c->req) {
            close(fd);
            return -1;
        }
    }
    if (!c->t_start)
        c->t_start = now_us();
    int rc = connect(fd, (struct sockaddr *)&o->addr, sizeof(o->addr));
    if (rc < 0 && errno != EINPROGRESS) {
        int e = errno;
        close(fd);
        if (e == EAGAIN || e == EADDRNOTAVAIL || e == ENOBUFS || e == EINTR)
            return -1;
        note_error(st, "connect: %s", strerror(e));
        finish(c, O_CONNECT, st);
        return 0;
    }
    c->fd = fd;
    c->state = C_CONNECTING;
    st->connecting++;
    struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
        note_error(st, "epoll_ctl: %s", strerror(errno));
        finish(c, O_CONNECT, st);
    }
    return 0;
}

static void on_connected(conn_t *c, int ep, const opts_t *o, stats_t *st)
{
    int err = 0;
    socklen_t el = sizeof(err);
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
    if (err) {
        /* A refused handshake under a burst is retried a few times, like a client would. */
        close(c->fd);
        c->fd = -1;
        c->state = C_NEW;
        st->connecting--;
        if (++c->retries <= 3) {
            st->transient_retries++;
            return; /* back in the queue: the main loop restarts C_NEW connections */
        }
        note_error(st, "connect: %s", strerror(err));
        finish(c, O_CONNECT, st);
        return;
    }
    st->connecting--;
    c->state = C_SENDING;
    do_send(c, ep, st);
}

static void sample_proc(long pid, stats_t *st)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        st->proc_gone = 1;
        return;
    }
    long rss = -1, hwm = -1, threads = -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "VmRSS:", 6) == 0)
            rss = strtol(line + 6, NULL, 10);
        else if (strncmp(line, "VmHWM:", 6) == 0)
            hwm = strtol(line + 6, NULL, 10);
        else if (strncmp(line, "Threads:", 8) == 0)
            threads = strtol(line + 8, NULL, 10);
    }
    fclose(f);
    if (rss < 0 || threads < 0)
        return;
    if (!st->samples) {
        st->rss_first_kb = rss;
        st->threads_min = st->threads_max = threads;
    }
    st->samples++;
    st->rss_last_kb = rss;
    if (rss > st->rss_max_kb)
        st->rss_max_kb = rss;
    if (hwm > st->hwm_kb)
        st->hwm_kb = hwm;
    if (threads < st->threads_min)
        st->threads_min = threads;
    if (threads > st->threads_max)
        st->threads_max = threads;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(const int64_t *v, size_t n, double p)
{
    if (!n)
        return 0;
    size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return (double)v[i] / 1000.0;
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s --url http://127.0.0.1:PORT/mcp --key KEY [-n N] [--tool NAME] [--ms MS]\n"
            "          [--pid INGRESS_PID] [--max-connecting N] [--timeout-s S]\n"
            "          [--protocol-version V] [--accept 'application/json'] [--batch B]\n"
            "          [--sources S]\n",
            prog);
}

int main(int argc, char **argv)
{
    opts_t o = {.accept = "application/json",
                .tool = "sleep",
                .n = 10000,
                .ms = 5000,
                .max_connecting = 1000,
                .batch = 1};
    const char *url = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!v)
            bad = 1; /* every remaining option takes a value */
        else if (strcmp(a, "--url") == 0)
            url = v;
        else if (strcmp(a, "--key") == 0)
            o.key = v;
        else if (strcmp(a, "--tool") == 0)
            o.tool = v;
        else if (strcmp(a, "--protocol-version") == 0)
            o.protocol_version = v;
        else if (strcmp(a, "--accept") == 0)
            o.accept = v;
        else if (strcmp(a, "-n") == 0)
            bad = parse_long(v, 1, 1000000, &o.n);
        else if (strcmp(a, "--ms") == 0)
            bad = parse_long(v, 0, 3600000, &o.ms);
        else if (strcmp(a, "--pid") == 0)
            bad = parse_long(v, 1, 1L << 30, &o.pid);
        else if (strcmp(a, "--max-connecting") == 0)
            bad = parse_long(v, 1, 1000000, &o.max_connecting);
        else if (strcmp(a, "--batch") == 0)
            bad = parse_long(v, 1, 1000, &o.batch);
        else if (strcmp(a, "--sources") == 0)
            bad = parse_long(v, 1, 1 << 24, &o.sources);
        else if (strcmp(a, "--timeout-s") == 0)
            bad = parse_long(v, 1, 86400, &o.timeout_s);
        else
            bad = 1;
        if (bad) {
            usage(argv[0]);
            return 2;
        }
        i++;
    }
    if (!url || !o.key || parse_url(url, &o) < 0 || strlen(o.tool) > 64 || strlen(o.accept) > 200 ||
        strpbrk(o.accept, "\r\n") || o.n % o.batch != 0) {
        usage(argv[0]);
        return 2;
    }
    o.nconns = o.n / o.batch;
    if (o.batch > 1 && !o.protocol_version)
        o.protocol_version = "2025-03-26"; /* the version with batches */
    if (!o.timeout_s)
        o.timeout_s = o.ms / 1000 + 60;
    signal(SIGPIPE, SIG_IGN);

    /* One fd per connection plus a few: raise the soft limit to the hard one. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < o.n / o.batch + 16)
        fprintf(stderr, "bench-inflight: warning: RLIMIT_NOFILE %ld < n + 16; raise ulimit -n\n",
                (long)rl.rlim_cur);

    conn_t *conns = calloc((size_t)o.nconns, sizeof(*conns));
    long *queue = malloc((size_t)o.nconns * sizeof(*queue)); /* connections waiting to (re)start */
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (!conns || !queue || ep < 0) {
        fprintf(stderr, "bench-inflight: out of memory\n");
        return 1;
    }
    for (long i = 0; i < o.nconns; i++) {
        conns[i].id = i + 1;
        conns[i].fd = -1;
        queue[i] = i;
    }
    long qhead = 0, qtail = o.nconns; /* ring of indices: [qhead, qtail) mod n */

    stats_t st;
    memset(&st, 0, sizeof(st));
    if (o.pid)
        sample_proc(o.pid, &st);
    long threads_before = st.threads_max, rss_before = st.rss_max_kb;

    int64_t t0 = now_us(), deadline = t0 + (int64_t)o.timeout_s * 1000000;
    int64_t next_sample = t0 + SAMPLE_US, retry_at = 0;
    long done = 0;
    struct epoll_event evs[1024];
    while (done < o.nconns) {
        int64_t now = now_us();
        if (now >= deadline)
            break;
        /* Start (or restart) queued connections, a bounded number of handshakes at a time. */
        while (qhead != qtail && st.connecting < o.max_connecting && now >= retry_at) {
            conn_t *c = &conns[queue[qhead % o.nconns]];
            if (do_connect(c, ep, &o, &st) < 0) {
                st.transient_retries++;
                retry_at = now + 2000; /* the kernel is out of something: back off 2 ms */
                break;
            }
            qhead++;
            if (c->state == C_DONE)
                done++;
        }
        int timeout_ms = (int)((next_sample - now) / 1000);
        if (qhead != qtail && st.connecting < o.max_connecting)
            timeout_ms = retry_at > now ? (int)((retry_at - now) / 1000) + 1 : 0;
        if (timeout_ms < 0)
            timeout_ms = 0;
        int ne = epoll_wait(ep, evs, 1024, timeout_ms);
        for (int i = 0; i < ne; i++) {
            conn_t *c = evs[i].data.ptr;
            enum cstate before = c->state;
            if (c->state == C_CONNECTING)
                on_connected(c, ep, &o, &st);
            else if (c->state == C_SENDING)
                do_send(c, ep, &st);
            else if (c->state == C_READING)
                do_read(c, o.batch, &st);
            if (c->state == C_NEW && before != C_NEW)
                queue[qtail++ % o.nconns] = c - conns; /* a refused handshake: try again */
            if (c->state == C_DONE && before != C_DONE)
                done++;
        }
        now = now_us();
        if (o.pid && now >= next_sample) {
            sample_proc(o.pid, &st);
            next_sample += SAMPLE_US;
            if (next_sample < now)
                next_sample = now + SAMPLE_US;
        }
    }
    int64_t t_end = now_us();
    for (long i = 0; i < o.nconns; i++)
        if (conns[i].state != C_DONE)
            finish(&conns[i], O_TIMEOUT, &st);
    if (o.pid)
        sample_proc(o.pid, &st);

    int64_t *lat = malloc((size_t)o.nconns * sizeof(*lat));
    size_t nl = 0;
    for (long i = 0; i < o.nconns; i++)
        if (conns[i].outcome == O_OK)
            lat[nl++] = conns[i].t_done - conns[i].t_start;
    qsort(lat, nl, sizeof(*lat), cmp_i64);

    printf("# bench-inflight: %ld x tools/call %s(ms=%ld) to %s, %ld per connection\n", o.n, o.tool,
           o.ms, url, o.batch);
    printf("n=%ld\n", o.n);
    printf("connections=%ld\n", o.nconns);
    printf("batch=%ld\n", o.batch);
    printf("sources=%ld\n", o.sources);
    printf("completed=%ld\n", st.calls_ok);
    printf("failed=%ld\n", o.n - st.calls_ok);
    for (int k = O_CONNECT; k < O_COUNT; k++)
        if (st.counts[k])
            printf("failed_%s=%ld\n", outcome_names[k], st.counts[k]); /* connections */
    if (st.first_error[0])
        printf("first_error=%s\n", st.first_error);
    printf("peak_inflight=%ld\n", st.peak_inflight * o.batch); /* calls */
    printf("all_sent_s=%.3f\n", st.sent ? (double)(st.t_all_sent - t0) / 1e6 : 0.0);
    printf("connect_retries=%ld\n", st.transient_retries);
    printf("wall_s=%.3f\n", (double)(t_end - t0) / 1e6);
    printf("latency_p50_ms=%.1f\n", pct(lat, nl, 50));
    printf("latency_p99_ms=%.1f\n", pct(lat, nl, 99));
    printf("latency_max_ms=%.1f\n", nl ? (double)lat[nl - 1] / 1000.0 : 0.0);
    if (o.pid) {
        printf("pid=%ld\n", o.pid);
        printf("samples=%ld\n", st.samples);
        printf("rss_before_kb=%ld\n", rss_before);
        printf("rss_max_kb=%ld\n", st.rss_max_kb);
        printf("rss_max_mib=%.1f\n", (double)st.rss_max_kb / 1024.0);
        printf("rss_after_kb=%ld\n", st.rss_last_kb);
        printf("vmhwm_kb=%ld\n", st.hwm_kb);
        printf("threads_before=%ld\n", threads_before);
        printf("threads_min=%ld\n", st.threads_min);
        printf("threads_max=%ld\n", st.threads_max);
        if (st.proc_gone)
            printf("warning=the ingress process disappeared during the run\n");
    }
    free(lat);
    free(queue);
    free(conns);
    close(ep);
    return st.calls_ok == o.n ? 0 : 1;
}
