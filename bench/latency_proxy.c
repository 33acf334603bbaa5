/*
 * latency_proxy - a TCP proxy that makes every round trip through it a fixed time slower
 * (bench/sec_redislat.sh puts it between the ingress and Redis: "a Redis with 2 ms of added
 * latency", docs/benchmarks.md).
 *
 *   bench-latency_proxy --listen 127.0.0.1:P --to 127.0.0.1:Q --delay-ms D
 *
 * D is per round trip: every chunk read from either side is written to the other side D/2
 * later, so a request and its answer arrive D later than without the proxy (D may be
 * fractional: --delay-ms 0.5). Chunks keep their order. One thread, epoll, one timerfd over
 * one queue of chunks: the delay is the same for every chunk, so the queue is in due order.
 * Each direction holds at most PROXY_MAX_QUEUED bytes (queued plus not yet written); beyond
 * that its source is not read until the other side drains. When either side closes or
 * fails, what was read before is still delivered, then both sides are closed. Prints
 * "LISTENING <port>" once ready; stops on SIGINT/SIGTERM.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4 */
#endif
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
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define PROXY_CHUNK 65536
#define PROXY_MAX_QUEUED (1 << 20)
#define PROXY_MAX_EVENTS 64

typedef struct side {
    int fd;
    struct side *peer;
    struct pair *pair;
    size_t queued; /* bytes read from this side, not yet written to the peer */
    char *out;     /* due bytes for this side, not yet written */
    size_t out_len, out_off;
    int reading; /* EPOLLIN is on */
    int eof;     /* this side closed or failed: no more reads */
    int closing; /* the peer's end is due: close the pair once out is written */
} side_t;

typedef struct pair {
    side_t a, b;
    int refs;   /* chunks in the queue that point here */
    int closed; /* sockets closed; freed by sweep() once refs is 0 */
    struct pair *next_closed;
} pair_t;

typedef struct chunk {
    struct chunk *next;
    side_t *from; /* written to from->peer */
    int64_t due_ns;
    size_t len; /* 0: the end of from's stream */
    char data[];
} chunk_t;

static int epfd, tfd, lfd;
static chunk_t *qhead, **qtail = &qhead;
static pair_t *closed_pairs;
static int64_t delay_ns;
static volatile sig_atomic_t stop;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void arm_timer(void)
{
    struct itimerspec its = {0};
    if (qhead) {
        its.it_value.tv_sec = (time_t)(qhead->due_ns / 1000000000LL);
        its.it_value.tv_nsec = (long)(qhead->due_ns % 1000000000LL);
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
            its.it_value.tv_nsec = 1;
    }
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void watch(side_t *s)
{
    struct epoll_event ev = {.data.ptr = s};
    ev.events = (s->reading ? EPOLLIN : 0) | (s->out_len > s->out_off ? EPOLLOUT : 0);
    epoll_ctl(epfd, EPOLL_CTL_MOD, s->fd, &ev);
}

static void pair_close(pair_t *p)
{
    if (p->closed)
        return;
    p->closed = 1;
    close(p->a.fd);
    close(p->b.fd);
    p->next_closed = closed_pairs;
    closed_pairs = p;
}

/* Frees the closed pairs no chunk points to (after a round of events, never during one). */
static void sweep(void)
{
    pair_t **pp = &closed_pairs;
    while (*pp) {
        pair_t *p = *pp;
        if (p->refs > 0) {
            pp = &p->next_closed;
            continue;
        }
        *pp = p->next_closed;
        free(p->a.out);
        free(p->b.out);
        free(p);
    }
}

/* Writes what is due for s; closes the pair once the peer's end was due and all is out. */
static void flush_side(side_t *s)
{
    pair_t *p = s->pair;
    while (s->out_off < s->out_len) {
        ssize_t n = write(s->fd, s->out + s->out_off, s->out_len - s->out_off);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        if (n <= 0) {
            pair_close(p);
            return;
        }
        s->out_off += (size_t)n;
        s->peer->queued -= (size_t)n;
    }
    if (s->out_off == s->out_len)
        s->out_off = s->out_len = 0;
    if (s->closing && s->out_len == 0) {
        pair_close(p);
        return;
    }
    if (!s->peer->eof && !s->peer->reading && s->peer->queued < PROXY_MAX_QUEUED) {
        s->peer->reading = 1;
        watch(s->peer);
    }
    watch(s);
}

static void enqueue(side_t *from, const char *data, size_t len)
{
    chunk_t *c = malloc(sizeof(*c) + len);
    if (!c) {
        pair_close(from->pair);
        return;
    }
    c->next = NULL;
    c->from = from;
    c->due_ns = now_ns() + delay_ns;
    c->len = len;
    if (len)
        memcpy(c->data, data, len);
    from->pair->refs++;
    int was_empty = qhead == NULL;
    *qtail = c;
    qtail = &c->next;
    if (was_empty)
        arm_timer();
}

static void on_readable(side_t *s)
{
    static char buf[PROXY_CHUNK];
    ssize_t n = read(s->fd, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        s->eof = 1;
        s->reading = 0;
        watch(s);
        enqueue(s, NULL, 0);
        return;
    }
    s->queued += (size_t)n;
    enqueue(s, buf, (size_t)n);
    if (s->queued >= PROXY_MAX_QUEUED) {
        s->reading = 0;
        watch(s);
    }
}

/* One due chunk: its bytes to its destination's output, or the end of its stream. */
static void deliver(chunk_t *c)
{
    pair_t *p = c->from->pair;
    side_t *to = c->from->peer;
    p->refs--;
    if (p->closed)
        return;
    if (c->len == 0) {
        to->closing = 1;
    } else {
        char *o = realloc(to->out, to->out_len + c->len);
        if (!o) {
            pair_close(p);
            return;
        }
        memcpy(o + to->out_len, c->data, c->len);
        to->out = o;
        to->out_len += c->len;
    }
    flush_side(to);
}

static void on_timer(void)
{
    uint64_t ticks;
    if (read(tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
        return;
    int64_t now = now_ns();
    while (qhead && qhead->due_ns <= now) {
        chunk_t *c = qhead;
        qhead = c->next;
        if (!qhead)
            qtail = &qhead;
        deliver(c);
        free(c);
    }
    arm_timer();
}

static void add_side(side_t *s, int fd, side_t *peer, pair_t *p)
{
    int one = 1;
    s->fd = fd;
    s->peer = peer;
    s->pair = p;
    s->reading = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = s};
    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* A new client: a connection to the target (blocking: loopback answers at once), then both
 * sockets non-blocking on the epoll set. */
static void on_accept(const struct sockaddr_in *to)
{
    int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
    if (cfd < 0)
        return;
    int sfd = socket(AF_INET, SOCK_STREAM, 0);
    pair_t *p = NULL;
    if (sfd >= 0 && connect(sfd, (const struct sockaddr *)to, sizeof(*to)) == 0 &&
        fcntl(sfd, F_SETFL, fcntl(sfd, F_GETFL) | O_NONBLOCK) == 0)
        p = calloc(1, sizeof(*p));
    if (!p) {
        fprintf(stderr, "latency_proxy: cannot reach the target: %s\n", strerror(errno));
        close(cfd);
        if (sfd >= 0)
            close(sfd);
        return;
    }
    add_side(&p->a, cfd, &p->b, p);
    add_side(&p->b, sfd, &p->a, p);
}

static int parse_addr(const char *s, struct sockaddr_in *a)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof(host))
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    memset(a, 0, sizeof(*a));
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    return *end || port < 0 || port > 65535 || inet_pton(AF_INET, host, &a->sin_addr) != 1 ? -1 : 0;
}

static int open_listener(struct sockaddr_in *at)
{
    int one = 1;
    socklen_t len = sizeof(*at);
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(lfd, (struct sockaddr *)at, sizeof(*at)) < 0 || listen(lfd, 512) < 0 ||
        getsockname(lfd, (struct sockaddr *)at, &len) < 0)
        return -1;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &lfd};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);
}

static void loop(const struct sockaddr_in *to)
{
    struct epoll_event evs[PROXY_MAX_EVENTS];
    while (!stop) {
        int n = epoll_wait(epfd, evs, PROXY_MAX_EVENTS, 1000);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &lfd) {
                on_accept(to);
                continue;
            }
            if (evs[i].data.ptr == &tfd) {
                on_timer();
                continue;
            }
            side_t *s = evs[i].data.ptr;
            if (s->pair->closed)
                continue;
            if (evs[i].events & EPOLLOUT)
                flush_side(s);
            if (!s->pair->closed && (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && s->reading)
                on_readable(s);
        }
        sweep();
    }
}

int main(int argc, char **argv)
{
    struct sockaddr_in at, to;
    int have_at = 0, have_to = 0;
    double delay_ms = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--listen") == 0)
            have_at = parse_addr(argv[i + 1], &at) == 0;
        else if (strcmp(argv[i], "--to") == 0)
            have_to = parse_addr(argv[i + 1], &to) == 0;
        else if (strcmp(argv[i], "--delay-ms") == 0)
            delay_ms = strtod(argv[i + 1], NULL);
    }
    if (!have_at || !have_to || delay_ms < 0 || delay_ms > 10000) {
        fprintf(stderr, "usage: bench-latency_proxy --listen 127.0.0.1:PORT --to HOST:PORT "
                        "--delay-ms D   (D: added per round trip, D/2 each way; 0-10000)\n");
        return 2;
    }
    delay_ns = (int64_t)(delay_ms * 1e6 / 2);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    epfd = epoll_create1(0);
    tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &tfd};
    if (epfd < 0 || tfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &ev) < 0 ||
        open_listener(&at) < 0) {
        fprintf(stderr, "latency_proxy: cannot listen: %s\n", strerror(errno));
        return 1;
    }
    printf("LISTENING %d\n", ntohs(at.sin_port));
    fflush(stdout);
    loop(&to);
    return 0;
}
