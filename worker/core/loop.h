/*
 * loop.h - the worker's event loop: one epoll instance with fd watchers and a min-heap of
 * timers, run by one thread (libuv's loop, reduced to what the worker needs).
 *
 * Everything a worker waits for goes through it: the Kafka consumer queue's wake-up pipe,
 * libcurl's sockets and timer, child-process pipes and pidfds, builtin sleeps and job
 * deadlines. Thousands of jobs wait at once with no thread per job.
 *
 * Watchers (wrk_loop_io_t) are allocated by the loop and freed late: wrk_loop_io_free() unregisters
 * the fd at once but releases the memory only after the current dispatch round, so an event
 * already fetched for a freed watcher is dropped instead of touching freed memory. The loop
 * never closes fds; their owners do, after wrk_loop_io_free(). Watchers are level-triggered.
 *
 * Timers (wrk_loop_timer_t) live in their owner's memory; stop a timer before freeing it. Times
 * are monotonic milliseconds. A timer's callback runs after it left the heap, so it may
 * re-arm or free its timer.
 *
 * Thread safety: none. Every function runs on the loop's thread.
 */
#ifndef MCPQ_WORKER_LOOP_H
#define MCPQ_WORKER_LOOP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/types.h>

typedef struct wrk_loop wrk_loop_t;
typedef struct wrk_loop_io wrk_loop_io_t;
typedef struct wrk_loop_timer wrk_loop_timer_t;

/* Called with the epoll events (EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP) of fd. */
typedef void (*wrk_loop_io_fn)(wrk_loop_io_t *io, int fd, uint32_t events, void *arg);
typedef void (*wrk_loop_timer_fn)(wrk_loop_timer_t *timer, void *arg);

struct wrk_loop_timer {
    int64_t due_ms; /* monotonic */
    size_t idx;     /* position in the heap; SIZE_MAX when idle */
    uint64_t seq;   /* arming order: equal due times fire first-armed first */
    wrk_loop_timer_fn cb;
    void *arg;
};

/* An empty loop with its own epoll instance. NULL on ENOMEM or when epoll_create1 fails
 * (logged). */
wrk_loop_t *wrk_loop_new(void);
/* Frees the loop; every watcher must be freed and every timer stopped before. */
void wrk_loop_free(wrk_loop_t *loop);

/* Watches fd for events (EPOLLIN and/or EPOLLOUT; 0 keeps it registered but quiet).
 * NULL when epoll refuses the fd (logged). */
wrk_loop_io_t *wrk_loop_io_new(wrk_loop_t *loop, int fd, uint32_t events, wrk_loop_io_fn cb,
                               void *arg);
/* Changes the events watched; 0 or MCPQ_EIO. */
int wrk_loop_io_set(wrk_loop_t *loop, wrk_loop_io_t *io, uint32_t events);
/* Unregisters io (the fd stays open) and frees it after the current round. NULL is a no-op. */
void wrk_loop_io_free(wrk_loop_t *loop, wrk_loop_io_t *io);
/* wrk_loop_io_free(*io), then closes *fd when it is open; sets *io = NULL and *fd = -1. */
void wrk_loop_io_close(wrk_loop_t *loop, wrk_loop_io_t **io, int *fd);
/* One read(2) of a non-blocking fd into buf, retried on EINTR: the bytes read (> 0), 0 when
 * nothing is there now (EAGAIN), WRK_LOOP_READ_END at end of file or on a read error. What
 * an io callback's loop of reads asks each time (the exec executor, the stdio pools). */
#define WRK_LOOP_READ_END (-1)
ssize_t wrk_loop_read(int fd, void *buf, size_t size);

/* An idle timer in caller-owned memory that calls cb(timer, arg) when it fires. */
void wrk_loop_timer_init(wrk_loop_timer_t *timer, wrk_loop_timer_fn cb, void *arg);
/* (Re)arms timer to fire delay_ms from now (negative counts as 0). 0 or MCPQ_ENOMEM. */
int wrk_loop_timer_start(wrk_loop_t *loop, wrk_loop_timer_t *timer, int64_t delay_ms);
/* Disarms timer; a no-op when it is idle. */
void wrk_loop_timer_stop(wrk_loop_t *loop, wrk_loop_timer_t *timer);
/* 1 while timer is armed, else 0. */
int wrk_loop_timer_active(const wrk_loop_timer_t *timer);

/*
 * One round: waits for events up to max_wait_ms (-1: until the next timer or event; 0: no
 * wait), dispatches fd events, then fires due timers. Returns the number of callbacks run,
 * or MCPQ_EIO when epoll_wait failed for a reason other than EINTR.
 */
int wrk_loop_run_once(wrk_loop_t *loop, int max_wait_ms);

#endif
