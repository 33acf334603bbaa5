#include "loop.h"

#include "err.h"
#include "log.h"
#include "util.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOOP_MAX_EVENTS 1024

struct wrk_loop_io {
    int fd;
    uint32_t events;
    wrk_loop_io_fn cb; /* NULL once freed: pending events are dropped */
    void *arg;
    wrk_loop_io_t *next_dead;
};

struct wrk_loop {
    int epfd;
    int64_t now_ms;
    uint64_t timer_seq;
    wrk_loop_timer_t **heap;
    size_t heap_len, heap_cap;
    wrk_loop_io_t *dead; /* freed watchers, released after the current round */
};

wrk_loop_t *wrk_loop_new(void)
{
    wrk_loop_t *loop = calloc(1, sizeof(*loop));
    if (!loop)
        return NULL;
    loop->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (loop->epfd < 0) {
        log_msgf(LOG_ERROR, "epoll_create1: %s", strerror(errno));
        free(loop);
        return NULL;
    }
    loop->now_ms = util_mono_ms();
    return loop;
}

static void loop_reap_dead(wrk_loop_t *loop)
{
    while (loop->dead) {
        wrk_loop_io_t *io = loop->dead;
        loop->dead = io->next_dead;
        free(io);
    }
}

void wrk_loop_free(wrk_loop_t *loop)
{
    if (!loop)
        return;
    assert(loop->heap_len == 0);
    loop_reap_dead(loop);
    close(loop->epfd);
    free(loop->heap);
    free(loop);
}

wrk_loop_io_t *wrk_loop_io_new(wrk_loop_t *loop, int fd, uint32_t events, wrk_loop_io_fn cb,
                               void *arg)
{
    wrk_loop_io_t *io = calloc(1, sizeof(*io));
    if (!io)
        return NULL;
    io->fd = fd;
    io->events = events;
    io->cb = cb;
    io->arg = arg;
    struct epoll_event ev = {.events = events, .data.ptr = io};
    if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        log_msgf(LOG_ERROR, "epoll_ctl add fd %d: %s", fd, strerror(errno));
        free(io);
        return NULL;
    }
    return io;
}

int wrk_loop_io_set(wrk_loop_t *loop, wrk_loop_io_t *io, uint32_t events)
{
    if (io->events == events)
        return 0;
    struct epoll_event ev = {.events = events, .data.ptr = io};
    if (epoll_ctl(loop->epfd, EPOLL_CTL_MOD, io->fd, &ev) < 0) {
        log_msgf(LOG_ERROR, "epoll_ctl mod fd %d: %s", io->fd, strerror(errno));
        return MCPQ_EIO;
    }
    io->events = events;
    return 0;
}

void wrk_loop_io_free(wrk_loop_t *loop, wrk_loop_io_t *io)
{
    if (!io)
        return;
    /* EBADF/ENOENT: the owner closed the fd first, which removed it from the set. */
    epoll_ctl(loop->epfd, EPOLL_CTL_DEL, io->fd, NULL);
    io->cb = NULL;
    io->next_dead = loop->dead;
    loop->dead = io;
}

void wrk_loop_io_close(wrk_loop_t *loop, wrk_loop_io_t **io, int *fd)
{
    wrk_loop_io_free(loop, *io);
    *io = NULL;
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Min-heap on (due_ms, seq). */
static int timer_less(const wrk_loop_timer_t *a, const wrk_loop_timer_t *b)
{
    return a->due_ms < b->due_ms || (a->due_ms == b->due_ms && a->seq < b->seq);
}

ssize_t wrk_loop_read(int fd, void *buf, size_t size)
{
    ssize_t n;
    do
        n = read(fd, buf, size);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    return n > 0 ? n : WRK_LOOP_READ_END;
}

static void heap_set(wrk_loop_t *loop, size_t i, wrk_loop_timer_t *t)
{
    loop->heap[i] = t;
    t->idx = i;
}

static void heap_up(wrk_loop_t *loop, size_t i)
{
    wrk_loop_timer_t *t = loop->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!timer_less(t, loop->heap[parent]))
            break;
        heap_set(loop, i, loop->heap[parent]);
        i = parent;
    }
    heap_set(loop, i, t);
}

static void heap_down(wrk_loop_t *loop, size_t i)
{
    wrk_loop_timer_t *t = loop->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const wrk_loop_timer_t *best = t;
        if (l < loop->heap_len && timer_less(loop->heap[l], best)) {
            m = l;
            best = loop->heap[l];
        }
        if (r < loop->heap_len && timer_less(loop->heap[r], best))
            m = r;
        if (m == i)
            break;
        heap_set(loop, i, loop->heap[m]);
        i = m;
    }
    heap_set(loop, i, t);
}

void wrk_loop_timer_init(wrk_loop_timer_t *timer, wrk_loop_timer_fn cb, void *arg)
{
    memset(timer, 0, sizeof(*timer));
    timer->idx = SIZE_MAX;
    timer->cb = cb;
    timer->arg = arg;
}

int wrk_loop_timer_active(const wrk_loop_timer_t *timer)
{
    return timer->idx != SIZE_MAX;
}

void wrk_loop_timer_stop(wrk_loop_t *loop, wrk_loop_timer_t *timer)
{
    size_t i = timer->idx;
    if (i == SIZE_MAX)
        return;
    assert(i < loop->heap_len && loop->heap[i] == timer);
    timer->idx = SIZE_MAX;
    loop->heap_len--;
    if (i == loop->heap_len)
        return;
    wrk_loop_timer_t *moved = loop->heap[loop->heap_len];
    heap_set(loop, i, moved);
    heap_up(loop, i);
    if (moved->idx == i)
        heap_down(loop, i);
}

int wrk_loop_timer_start(wrk_loop_t *loop, wrk_loop_timer_t *timer, int64_t delay_ms)
{
    wrk_loop_timer_stop(loop, timer);
    if (loop->heap_len == loop->heap_cap) {
        size_t cap = loop->heap_cap ? loop->heap_cap * 2 : 256;
        wrk_loop_timer_t **h = realloc(loop->heap, cap * sizeof(*h));
        if (!h)
            return MCPQ_ENOMEM;
        loop->heap = h;
        loop->heap_cap = cap;
    }
    timer->due_ms = loop->now_ms + (delay_ms > 0 ? delay_ms : 0);
    timer->seq = ++loop->timer_seq;
    loop->heap[loop->heap_len] = timer;
    timer->idx = loop->heap_len++;
    heap_up(loop, timer->idx);
    return 0;
}

static int loop_wait_ms(const wrk_loop_t *loop, int max_wait_ms)
{
    if (loop->heap_len == 0)
        return max_wait_ms;
    int64_t d = loop->heap[0]->due_ms - util_mono_ms();
    if (d < 0)
        d = 0;
    if (d > 60000)
        d = 60000;
    if (max_wait_ms >= 0 && d > max_wait_ms)
        d = max_wait_ms;
    return (int)d;
}

static int loop_fire_timers(wrk_loop_t *loop)
{
    /* Only timers due now and armed before this pass: one re-armed with delay 0 from its
     * own callback waits for the next round instead of spinning here. */
    uint64_t last_seq = loop->timer_seq;
    int fired = 0;
    while (loop->heap_len > 0) {
        wrk_loop_timer_t *t = loop->heap[0];
        if (t->due_ms > loop->now_ms || t->seq > last_seq)
            break;
        wrk_loop_timer_stop(loop, t);
        t->cb(t, t->arg);
        fired++;
    }
    return fired;
}

int wrk_loop_run_once(wrk_loop_t *loop, int max_wait_ms)
{
    struct epoll_event evs[LOOP_MAX_EVENTS];
    int n = epoll_wait(loop->epfd, evs, LOOP_MAX_EVENTS, loop_wait_ms(loop, max_wait_ms));
    if (n < 0) {
        if (errno != EINTR) {
            log_msgf(LOG_ERROR, "epoll_wait: %s", strerror(errno));
            return MCPQ_EIO;
        }
        n = 0;
    }
    loop->now_ms = util_mono_ms();
    int ran = 0;
    for (int i = 0; i < n; i++) {
        wrk_loop_io_t *io = evs[i].data.ptr;
        if (!io->cb)
            continue;
        io->cb(io, io->fd, evs[i].events, io->arg);
        ran++;
    }
    loop_reap_dead(loop);
    loop->now_ms = util_mono_ms();
    ran += loop_fire_timers(loop);
    loop_reap_dead(loop);
    return ran;
}
