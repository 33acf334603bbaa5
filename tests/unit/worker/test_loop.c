/* Tests worker/core/loop.c: timer order, re-arming, stopping, fd watchers and late frees. */
#include "check.h"
#include "loop.h"
#include "util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fired {
    int order[64];
    int n;
} fired_t;

typedef struct tctx {
    fired_t *f;
    int id;
} tctx_t;

static void on_timer(wrk_loop_timer_t *t, void *arg)
{
    tctx_t *c = arg;
    (void)t;
    c->f->order[c->f->n++] = c->id;
}

static void run_until(wrk_loop_t *loop, fired_t *f, int n, int max_ms)
{
    int64_t end = util_mono_ms() + max_ms;
    while (f->n < n && util_mono_ms() < end)
        wrk_loop_run_once(loop, 50);
}

static void test_timers(void)
{
    wrk_loop_t *loop = wrk_loop_new();
    CHECK(loop != NULL);
    fired_t f = {{0}, 0};
    enum { N = 40 };
    wrk_loop_timer_t t[N];
    tctx_t c[N];
    /* Delays in a scrambled order; equal delays fire in arming order. */
    int delays[N];
    for (int i = 0; i < N; i++)
        delays[i] = (i * 7) % 10 * 3;
    for (int i = 0; i < N; i++) {
        c[i].f = &f;
        c[i].id = i;
        wrk_loop_timer_init(&t[i], on_timer, &c[i]);
        CHECK_INT_EQ(wrk_loop_timer_start(loop, &t[i], delays[i]), 0);
        CHECK(wrk_loop_timer_active(&t[i]));
    }
    /* Stop a few, re-arm one later. */
    wrk_loop_timer_stop(loop, &t[5]);
    wrk_loop_timer_stop(loop, &t[17]);
    wrk_loop_timer_stop(loop, &t[5]); /* twice is harmless */
    CHECK(!wrk_loop_timer_active(&t[5]));
    CHECK_INT_EQ(wrk_loop_timer_start(loop, &t[0], 60), 0);
    run_until(loop, &f, N - 2, 2000);
    CHECK_INT_EQ(f.n, N - 2);
    CHECK_INT_EQ(f.order[N - 3], 0); /* the re-armed one fires last */
    for (int i = 1; i < N - 2; i++) {
        int a = f.order[i - 1], b = f.order[i];
        if (a == 0 || b == 0)
            continue;
        CHECK(delays[a] < delays[b] || (delays[a] == delays[b] && a < b));
    }
    for (int i = 0; i < N; i++)
        CHECK(!wrk_loop_timer_active(&t[i]));
    wrk_loop_free(loop);
    TEST_PASS("timers fire in due order, stopped ones never");
}

static int rearms;

static void on_rearm(wrk_loop_timer_t *t, void *arg)
{
    wrk_loop_t *loop = arg;
    if (++rearms < 5)
        wrk_loop_timer_start(loop, t, 0);
}

static void test_rearm_zero(void)
{
    wrk_loop_t *loop = wrk_loop_new();
    wrk_loop_timer_t t;
    wrk_loop_timer_init(&t, on_rearm, loop);
    wrk_loop_timer_start(loop, &t, 0);
    /* Each round fires it once: a zero-delay re-arm does not spin inside one round. */
    CHECK_INT_EQ(wrk_loop_run_once(loop, 0), 1);
    CHECK_INT_EQ(rearms, 1);
    for (int i = 0; i < 10 && rearms < 5; i++)
        wrk_loop_run_once(loop, 10);
    CHECK_INT_EQ(rearms, 5);
    CHECK(!wrk_loop_timer_active(&t));
    wrk_loop_free(loop);
    TEST_PASS("zero-delay re-arm runs once per round");
}

typedef struct io_ctx {
    wrk_loop_t *loop;
    wrk_loop_io_t *other;
    int calls;
} io_ctx_t;

static void on_readable(wrk_loop_io_t *io, int fd, uint32_t events, void *arg)
{
    io_ctx_t *c = arg;
    char buf[16];
    (void)io;
    CHECK(events & EPOLLIN);
    CHECK(read(fd, buf, sizeof(buf)) > 0);
    c->calls++;
    /* Freeing the other watcher while its event may be pending in this round. */
    if (c->other) {
        wrk_loop_io_free(c->loop, c->other);
        c->other = NULL;
    }
}

static void test_io(void)
{
    wrk_loop_t *loop = wrk_loop_new();
    int a[2], b[2];
    CHECK(pipe2(a, O_NONBLOCK) == 0 && pipe2(b, O_NONBLOCK) == 0);
    io_ctx_t ca = {loop, NULL, 0}, cb = {loop, NULL, 0};
    wrk_loop_io_t *ia = wrk_loop_io_new(loop, a[0], EPOLLIN, on_readable, &ca);
    wrk_loop_io_t *ib = wrk_loop_io_new(loop, b[0], EPOLLIN, on_readable, &cb);
    CHECK(ia && ib);
    ca.other = ib;
    cb.other = ia;
    CHECK(write(a[1], "x", 1) == 1 && write(b[1], "y", 1) == 1);
    CHECK_INT_EQ(wrk_loop_run_once(loop, 100), 1); /* the second one was freed first */
    CHECK_INT_EQ(ca.calls + cb.calls, 1);
    wrk_loop_io_t *left = ca.calls ? ia : ib;
    CHECK(write(a[1], "x", 1) == 1 && write(b[1], "y", 1) == 1);
    ca.other = cb.other = NULL;
    wrk_loop_run_once(loop, 100);
    CHECK_INT_EQ(ca.calls + cb.calls, 2);
    CHECK_INT_EQ(wrk_loop_io_set(loop, left, 0), 0);
    CHECK_INT_EQ(wrk_loop_run_once(loop, 0), 0);
    wrk_loop_io_free(loop, left);
    wrk_loop_io_free(loop, NULL);
    CHECK(wrk_loop_io_new(loop, -1, EPOLLIN, on_readable, &ca) == NULL);
    close(a[0]);
    close(a[1]);
    close(b[0]);
    close(b[1]);
    wrk_loop_run_once(loop, 0);
    wrk_loop_free(loop);
    TEST_PASS("fd watchers, including one freed while its event is pending");
}

/* wrk_loop_read on a non-blocking pipe: the bytes there, 0 when none are, the end once the
 * writer closed. */
static void test_read(void)
{
    int fds[2];
    char buf[16];
    CHECK_INT_EQ(pipe(fds), 0);
    CHECK_INT_EQ(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
    CHECK_INT_EQ((int)wrk_loop_read(fds[0], buf, sizeof(buf)), 0);
    CHECK_INT_EQ((int)write(fds[1], "abc", 3), 3);
    CHECK_INT_EQ((int)wrk_loop_read(fds[0], buf, sizeof(buf)), 3);
    CHECK(memcmp(buf, "abc", 3) == 0);
    close(fds[1]);
    CHECK_INT_EQ((int)wrk_loop_read(fds[0], buf, sizeof(buf)), WRK_LOOP_READ_END);
    close(fds[0]);
    CHECK_INT_EQ((int)wrk_loop_read(fds[0], buf, sizeof(buf)), WRK_LOOP_READ_END); /* EBADF */
    TEST_PASS("wrk_loop_read: bytes, nothing yet, end of file, a read error");
}

int main(void)
{
    test_timers();
    test_read();
    test_rearm_zero();
    test_io();
    return 0;
}
