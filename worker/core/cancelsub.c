#include "cancelsub.h"

#include "envelope.h"
#include "log.h"
#include "kv.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUB_BACKOFF_MIN_MS 100
#define SUB_BACKOFF_MAX_MS 5000
#define SUB_TICK_MS 1000      /* health checks while connected */
#define SUB_STALL_MIN_MS 1000 /* least time an answer is waited for */

typedef enum {
    SUB_DOWN = 0,  /* waiting for the reconnect timer */
    SUB_HANDSHAKE, /* connecting; AUTH/SUBSCRIBE sent, not confirmed yet */
    SUB_UP,        /* subscribed */
} sub_state_t;

struct wrk_cancelsub {
    wrk_loop_t *loop;
    kv_target_t *kvt;
    int stall_ms;
    wrk_cancelsub_fn on_cancel;
    void *arg;
    wrk_cancelsub_fn on_reply; /* messages on WRK_AGENTREPLY_CHANNEL; may be NULL */
    void *reply_arg;
    wrk_cancelsub_fn on_answer; /* messages on WRK_ANSWER_CHANNEL; may be NULL */
    void *answer_arg;
    redisContext *ctx;
    wrk_loop_io_t *io;
    uint32_t events;
    wrk_loop_timer_t timer; /* SUB_DOWN: reconnect; otherwise the health tick */
    sub_state_t state;
    int ping_pending;      /* a PING is unanswered */
    int64_t waiting_since; /* monotonic ms: handshake or PING sent, or the last reply */
    int64_t next_ping;
    int backoff_ms;
    int outage_logged; /* one warning per outage */
};

static void sub_connect(wrk_cancelsub_t *sub);

/* Drops the connection and arms the reconnect timer. The caller must not touch sub->ctx
 * afterwards. */
static void sub_down(wrk_cancelsub_t *sub, const char *reason)
{
    char why[256]; /* reason may point into the context freed below */
    snprintf(why, sizeof(why), "%s", reason);
    wrk_loop_io_free(sub->loop, sub->io);
    sub->io = NULL;
    if (sub->ctx)
        redisFree(sub->ctx);
    sub->ctx = NULL;
    sub->state = SUB_DOWN;
    if (!sub->outage_logged) {
        log_event(LOG_WARN,
                  "cancel subscriber: redis unreachable, reconnecting (running jobs are "
                  "still checked for cancellation once a second)",
                  "channel", WRK_CANCEL_CHANNEL, "error", why, (char *)NULL);
        sub->outage_logged = 1;
    } else {
        log_event(LOG_DEBUG, "cancel subscriber: reconnect failed", "error", why, (char *)NULL);
    }
    wrk_loop_timer_start(sub->loop, &sub->timer, sub->backoff_ms);
    sub->backoff_ms =
        sub->backoff_ms * 2 > SUB_BACKOFF_MAX_MS ? SUB_BACKOFF_MAX_MS : sub->backoff_ms * 2;
}

/* Sends what hiredis holds in its output buffer; watches EPOLLOUT while some is left.
 * 0, or -1 after sub_down(). */
static int sub_write(wrk_cancelsub_t *sub)
{
    int done = 0;
    if (redisBufferWrite(sub->ctx, &done) != REDIS_OK) {
        sub_down(sub, sub->ctx->errstr[0] ? sub->ctx->errstr : "write failed");
        return -1;
    }
    uint32_t want = done ? EPOLLIN : EPOLLIN | EPOLLOUT;
    if (want != sub->events && wrk_loop_io_set(sub->loop, sub->io, want) == 0)
        sub->events = want;
    return 0;
}

static void sub_message(wrk_cancelsub_t *sub, const redisReply *channel, const redisReply *payload)
{
    if (payload->type != REDIS_REPLY_STRING || payload->len > WRK_ID_MAX ||
        strlen(payload->str) != payload->len || !wrk_envelope_id_valid(payload->str)) {
        log_msgf(LOG_DEBUG, "cancel subscriber: ignoring a message that is not a job id");
        return;
    }
    if (channel->type == REDIS_REPLY_STRING && strcmp(channel->str, WRK_AGENTREPLY_CHANNEL) == 0) {
        if (sub->on_reply)
            sub->on_reply(payload->str, sub->reply_arg);
        return;
    }
    if (channel->type == REDIS_REPLY_STRING && strcmp(channel->str, WRK_ANSWER_CHANNEL) == 0) {
        if (sub->on_answer)
            sub->on_answer(payload->str, sub->answer_arg);
        return;
    }
    sub->on_cancel(payload->str, sub->arg);
}

/* One reply. 0, or -1 after sub_down(). */
static int sub_reply(wrk_cancelsub_t *sub, const redisReply *r)
{
    sub->waiting_since = util_mono_ms(); /* an answer: the connection lives */
    if (r->type == REDIS_REPLY_ERROR) {
        char why[300];
        snprintf(why, sizeof(why), "redis error: %s", r->str);
        sub_down(sub, why);
        return -1;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return 0;
    const char *kind = r->element[0]->str;
    if (strcmp(kind, "message") == 0 && r->elements == 3) {
        sub_message(sub, r->element[1], r->element[2]);
    } else if (strcmp(kind, "pong") == 0) {
        sub->ping_pending = 0;
    } else if (strcmp(kind, "subscribe") == 0 && sub->state == SUB_HANDSHAKE) {
        sub->state = SUB_UP;
        sub->backoff_ms = SUB_BACKOFF_MIN_MS;
        sub->next_ping = util_mono_ms() + WRK_CANCELSUB_PING_MS;
        log_event(sub->outage_logged ? LOG_INFO : LOG_DEBUG, "cancel subscriber: subscribed",
                  "channel", WRK_CANCEL_CHANNEL, (char *)NULL);
        sub->outage_logged = 0;
    }
    return 0;
}

static void sub_on_io(wrk_loop_io_t *io, int fd, uint32_t events, void *arg)
{
    wrk_cancelsub_t *sub = arg;
    (void)io;
    (void)fd;
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) && sub_write(sub) < 0)
        return;
    if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
        return;
    /* One read (up to 16 KiB) per event: the watcher is level-triggered, so what is left
     * comes back next round and other fds get their turn meanwhile. */
    if (redisBufferRead(sub->ctx) != REDIS_OK) {
        sub_down(sub, sub->ctx->errstr[0] ? sub->ctx->errstr : "read failed");
        return;
    }
    for (;;) {
        void *reply = NULL;
        if (redisGetReply(sub->ctx, &reply) != REDIS_OK) {
            sub_down(sub, sub->ctx->errstr[0] ? sub->ctx->errstr : "protocol error");
            return;
        }
        if (!reply)
            return;
        int rc = sub_reply(sub, reply);
        freeReplyObject(reply);
        if (rc < 0)
            return;
    }
}

static void sub_on_timer(wrk_loop_timer_t *t, void *arg)
{
    wrk_cancelsub_t *sub = arg;
    if (sub->state == SUB_DOWN) {
        sub_connect(sub);
        return;
    }
    int64_t now = util_mono_ms();
    int waiting = sub->state == SUB_HANDSHAKE || sub->ping_pending;
    if (waiting && now - sub->waiting_since >= sub->stall_ms) {
        char why[128];
        snprintf(why, sizeof(why), "no answer for %lld ms", (long long)(now - sub->waiting_since));
        sub_down(sub, why);
        return;
    }
    if (sub->state == SUB_UP && !sub->ping_pending && now >= sub->next_ping) {
        if (redisAppendCommand(sub->ctx, "PING") != REDIS_OK) {
            sub_down(sub, "out of memory");
            return;
        }
        sub->ping_pending = 1;
        sub->waiting_since = now;
        sub->next_ping = now + WRK_CANCELSUB_PING_MS;
        if (sub_write(sub) < 0)
            return;
    }
    wrk_loop_timer_start(sub->loop, t, SUB_TICK_MS);
}

static void sub_connect(wrk_cancelsub_t *sub)
{
    char err[256];
    /* Connected, logged in (and over TLS, or at the master the sentinels name) by
     * kv_connect, which blocks the loop for at most stall_ms; then the loop drives it. */
    sub->ctx = kv_connect(sub->kvt, sub->stall_ms, err, sizeof(err));
    if (!sub->ctx) {
        sub_down(sub, err);
        return;
    }
    if (kv_set_nonblock(sub->ctx) < 0) {
        sub_down(sub, "cannot make the connection non-blocking");
        return;
    }
    sub->ping_pending = 0;
    if (redisAppendCommand(sub->ctx, "SUBSCRIBE %s %s %s", WRK_CANCEL_CHANNEL,
                           WRK_AGENTREPLY_CHANNEL, WRK_ANSWER_CHANNEL) != REDIS_OK) {
        sub_down(sub, "out of memory");
        return;
    }
    sub->events = EPOLLIN | EPOLLOUT; /* EPOLLOUT: SUBSCRIBE is still to be sent */
    sub->io = wrk_loop_io_new(sub->loop, sub->ctx->fd, sub->events, sub_on_io, sub);
    if (!sub->io) {
        sub_down(sub, "cannot watch the connection");
        return;
    }
    sub->state = SUB_HANDSHAKE;
    sub->waiting_since = util_mono_ms();
    wrk_loop_timer_start(sub->loop, &sub->timer, SUB_TICK_MS);
}

wrk_cancelsub_t *wrk_cancelsub_new(wrk_loop_t *loop, kv_target_t *kvt, int timeout_ms,
                                   wrk_cancelsub_fn on_cancel, void *arg)
{
    wrk_cancelsub_t *sub = calloc(1, sizeof(*sub));
    if (!sub) {
        log_msgf(LOG_ERROR, "cancel subscriber: out of memory");
        return NULL;
    }
    sub->kvt = kvt;
    sub->loop = loop;
    sub->stall_ms = timeout_ms > SUB_STALL_MIN_MS ? timeout_ms : SUB_STALL_MIN_MS;
    sub->on_cancel = on_cancel;
    sub->arg = arg;
    sub->backoff_ms = SUB_BACKOFF_MIN_MS;
    wrk_loop_timer_init(&sub->timer, sub_on_timer, sub);
    sub_connect(sub);
    return sub;
}

void wrk_cancelsub_free(wrk_cancelsub_t *sub)
{
    if (!sub)
        return;
    wrk_loop_timer_stop(sub->loop, &sub->timer);
    wrk_loop_io_free(sub->loop, sub->io);
    if (sub->ctx)
        redisFree(sub->ctx);
    free(sub);
}

int wrk_cancelsub_up(const wrk_cancelsub_t *sub)
{
    return sub && sub->state == SUB_UP;
}

void wrk_cancelsub_on_reply(wrk_cancelsub_t *sub, wrk_cancelsub_fn on_reply, void *arg)
{
    sub->on_reply = on_reply;
    sub->reply_arg = arg;
}

void wrk_cancelsub_on_answer(wrk_cancelsub_t *sub, wrk_cancelsub_fn on_answer, void *arg)
{
    sub->on_answer = on_answer;
    sub->answer_arg = arg;
}
