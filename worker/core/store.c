#include "store.h"

#include "err.h"
#include "log.h"
#include "record.h"
#include "kv.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STORE_BATCH 1024      /* requests per pipeline */
#define STORE_NOTE_BATCH 4096 /* notifications per pipeline */
#define STORE_NOTE_MAX 100000 /* queued notifications before new ones are dropped */
#define STORE_BACKOFF_MIN_MS 100
#define STORE_BACKOFF_MAX_MS 5000
#define STORE_EXPIRE_SLOTS 64 /* distinct streams given one EXPIRE per pipeline */
#define STORE_KEY_MAX (sizeof(WRK_RESULT_PREFIX) + sizeof(WRK_CANCEL_PREFIX) + 256)
#define STORE_ASKED_PREFIX NAMES_KEY_ASKED
#define STORE_ASK_PREFIX NAMES_KEY_ASK

typedef struct store_note {
    struct store_note *next;
    char *stream, *job_id, *kind, *data;
    size_t data_len;
} store_note_t;

/* What each appended command was, so its reply can be matched. */
typedef enum {
    CMD_NOTE,
    CMD_EXPIRE,
    CMD_GET,
    CMD_SET,
    CMD_XADD,
    CMD_EXISTS,
    CMD_CGET,
    CMD_WAIT,
    CMD_ASKED, /* CHECK: GET {mcpq}:asked:<id> */
    CMD_ASKW   /* CHECK: HGET {mcpq}:ask:<id> worker */
} cmd_kind_t;

typedef struct store_cmd {
    cmd_kind_t kind;
    wrk_store_req_t *req;
} store_cmd_t;

struct wrk_store {
    kv_target_t *kvt;
    int timeout_ms;
    char ttl[24];
    redisContext *ctx;
    int up;
    int64_t retry_at;
    int backoff_ms;
    wrk_store_req_t *head, *tail;
    store_note_t *notes, *notes_tail;
    size_t nnotes;
    size_t dropped_notes;
    store_cmd_t *cmds;
    size_t ncmds, cmds_cap;
    const char *expire_streams[STORE_EXPIRE_SLOTS];
    size_t nexpire;
    unsigned long long written, retried; /* wrk_store_counts() */
    int wait_replicas, wait_timeout_ms;  /* wrk_store_set_wait(); 0: no WAIT */
    unsigned long long wait_short;       /* WAITs that came back short */
    unsigned conn_gen;                   /* bumped by every new connection */
};

wrk_store_t *wrk_store_new(kv_target_t *kvt, int timeout_ms, long long result_ttl_s)
{
    wrk_store_t *st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    st->kvt = kvt;
    st->timeout_ms = timeout_ms;
    snprintf(st->ttl, sizeof(st->ttl), "%lld", result_ttl_s);
    st->up = 1;
    st->backoff_ms = STORE_BACKOFF_MIN_MS;
    return st;
}

static void note_free(store_note_t *n)
{
    free(n->stream);
    free(n->job_id);
    free(n->kind);
    free(n->data);
    free(n);
}

void wrk_store_free(wrk_store_t *st)
{
    if (!st)
        return;
    while (st->notes) {
        store_note_t *n = st->notes;
        st->notes = n->next;
        note_free(n);
    }
    if (st->ctx)
        redisFree(st->ctx);
    free(st->cmds);
    free(st);
}

void wrk_store_set_wait(wrk_store_t *st, int replicas, int timeout_ms)
{
    st->wait_replicas = replicas > 0 ? replicas : 0;
    st->wait_timeout_ms = timeout_ms;
}

void wrk_store_submit(wrk_store_t *st, wrk_store_req_t *req)
{
    if (req->queued)
        return;
    req->submitted_us = util_mono_us();
    req->next = NULL;
    req->prev = st->tail;
    req->queued = 1;
    if (st->tail)
        st->tail->next = req;
    else
        st->head = req;
    st->tail = req;
}

void wrk_store_forget(wrk_store_t *st, wrk_store_req_t *req)
{
    if (!req->queued)
        return;
    if (req->prev)
        req->prev->next = req->next;
    else
        st->head = req->next;
    if (req->next)
        req->next->prev = req->prev;
    else
        st->tail = req->prev;
    req->queued = 0;
    req->next = req->prev = NULL;
    free(req->durable);
    req->durable = NULL;
}

int wrk_store_queued(const wrk_store_req_t *req)
{
    return req->queued;
}

int wrk_store_up(const wrk_store_t *st)
{
    return st->up;
}

int wrk_store_pending(const wrk_store_t *st)
{
    return st->head != NULL || st->notes != NULL;
}

void wrk_store_notify(wrk_store_t *st, const char *stream, const char *job_id, const char *kind,
                      const char *data, size_t len)
{
    if (st->nnotes >= STORE_NOTE_MAX) {
        if (st->dropped_notes++ % 10000 == 0)
            log_msgf(LOG_WARN, "reply stream backlog full: dropping progress/log entries");
        return;
    }
    store_note_t *n = calloc(1, sizeof(*n));
    if (!n)
        return;
    n->stream = strdup(stream);
    n->job_id = job_id ? strdup(job_id) : NULL;
    n->kind = kind ? strdup(kind) : NULL;
    n->data = malloc(len + 1);
    if (!n->stream || (job_id && !n->job_id) || (kind && !n->kind) || !n->data) {
        note_free(n);
        return;
    }
    memcpy(n->data, data, len);
    n->data[len] = '\0';
    n->data_len = len;
    if (st->notes_tail)
        st->notes_tail->next = n;
    else
        st->notes = n;
    st->notes_tail = n;
    st->nnotes++;
}

void wrk_store_publish(wrk_store_t *st, const char *channel, const char *msg, size_t len)
{
    wrk_store_notify(st, channel, NULL, NULL, msg, len);
}

static void store_down(wrk_store_t *st, const char *reason)
{
    char why[256]; /* reason may point into the context freed below */
    snprintf(why, sizeof(why), "%s", reason);
    if (st->ctx) {
        redisFree(st->ctx);
        st->ctx = NULL;
    }
    if (st->up)
        log_event(LOG_WARN, "redis unreachable: keeping results in memory and retrying", "error",
                  why, (char *)NULL);
    st->up = 0;
    st->retry_at = util_mono_ms() + st->backoff_ms;
    st->backoff_ms =
        st->backoff_ms * 2 > STORE_BACKOFF_MAX_MS ? STORE_BACKOFF_MAX_MS : st->backoff_ms * 2;
}

static int store_connect(wrk_store_t *st)
{
    if (st->ctx)
        return 0;
    if (util_mono_ms() < st->retry_at)
        return MCPQ_EUNAVAIL;
    char errstr[256];
    st->ctx = kv_connect(st->kvt, st->timeout_ms, errstr, sizeof(errstr));
    if (!st->ctx) {
        store_down(st, errstr);
        return MCPQ_EUNAVAIL;
    }
    st->conn_gen++;
    return 0;
}

/* A pipeline went through: Redis is really back (a connect alone can succeed against a
 * hung server). */
static void store_up(wrk_store_t *st)
{
    if (!st->up)
        log_msgf(LOG_INFO, "redis reachable again: sending queued results");
    st->up = 1;
    st->backoff_ms = STORE_BACKOFF_MIN_MS;
}

static int cmd_push(wrk_store_t *st, cmd_kind_t kind, wrk_store_req_t *req)
{
    if (st->ncmds == st->cmds_cap) {
        size_t cap = st->cmds_cap ? st->cmds_cap * 2 : 1024;
        store_cmd_t *c = realloc(st->cmds, cap * sizeof(*c));
        if (!c)
            return MCPQ_ENOMEM;
        st->cmds = c;
        st->cmds_cap = cap;
    }
    st->cmds[st->ncmds].kind = kind;
    st->cmds[st->ncmds].req = req;
    st->ncmds++;
    return 0;
}

/* "<c><n>\r\n" at p; returns the end. */
static char *resp_head(char *p, char c, size_t n)
{
    char digits[24], *d = digits + sizeof(digits);
    do {
        *--d = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    *p++ = c;
    size_t len = (size_t)(digits + sizeof(digits) - d);
    memcpy(p, d, len);
    p += len;
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

/* Appends the command as RESP (an array of bulk strings) formatted here, not by
 * redisAppendCommandArgv, whose sdscatfmt per argument was a tenth of a worker's instructions
 * per job (the workers section of docs/benchmarks.md, bench/sec_workers.sh). */
static int append_argv(wrk_store_t *st, cmd_kind_t kind, wrk_store_req_t *req, int argc,
                       const char **argv, const size_t *lens)
{
    char stack[2048], *buf = stack;
    size_t need = 24;
    for (int i = 0; i < argc; i++)
        need += lens[i] + 24 + 4;
    if (need > sizeof(stack) && !(buf = malloc(need)))
        return MCPQ_ENOMEM;
    char *p = resp_head(buf, '*', (size_t)argc);
    for (int i = 0; i < argc; i++) {
        p = resp_head(p, '$', lens[i]);
        memcpy(p, argv[i], lens[i]);
        p += lens[i];
        *p++ = '\r';
        *p++ = '\n';
    }
    int rc = cmd_push(st, kind, req) < 0 ||
                     redisAppendFormattedCommand(st->ctx, buf, (size_t)(p - buf)) != REDIS_OK
                 ? MCPQ_ENOMEM
                 : 0;
    if (buf != stack)
        free(buf);
    return rc;
}

/* XADD one entry (with the field stored_us when stored_us > 0: docs/internals.md, "Reply
 * stream"); the stream gets one EXPIRE per pipeline (or its own when slots run out). */
static int append_xadd(wrk_store_t *st, cmd_kind_t kind, wrk_store_req_t *req, const char *stream,
                       const char *job_id, const char *entry_kind, const char *data, size_t len,
                       int64_t stored_us)
{
    char su[24];
    snprintf(su, sizeof(su), "%lld", (long long)stored_us);
    const char *argv[] = {"XADD",      stream, "MAXLEN", "~",    WRK_REPLY_MAXLEN,
                          "*",         "job",  job_id,   "kind", entry_kind,
                          "stored_us", su,     "data",   data};
    int argc = stored_us > 0 ? 14 : 12;
    if (stored_us <= 0) { /* no stamp: the data field moves up */
        argv[10] = "data";
        argv[11] = data;
    }
    size_t lens[14];
    for (int i = 0; i < argc - 1; i++)
        lens[i] = strlen(argv[i]);
    lens[argc - 1] = len;
    if (append_argv(st, kind, req, argc, argv, lens) < 0)
        return MCPQ_ENOMEM;
    for (size_t i = 0; i < st->nexpire; i++)
        if (strcmp(st->expire_streams[i], stream) == 0)
            return 0;
    if (st->nexpire < STORE_EXPIRE_SLOTS) {
        st->expire_streams[st->nexpire++] = stream;
        return 0;
    }
    const char *ev[] = {"EXPIRE", stream, WRK_REPLY_TTL_S};
    size_t el[] = {6, strlen(stream), strlen(WRK_REPLY_TTL_S)};
    return append_argv(st, CMD_EXPIRE, NULL, 3, ev, el);
}

static int append_expires(wrk_store_t *st)
{
    for (size_t i = 0; i < st->nexpire; i++) {
        const char *ev[] = {"EXPIRE", st->expire_streams[i], WRK_REPLY_TTL_S};
        size_t el[] = {6, strlen(st->expire_streams[i]), strlen(WRK_REPLY_TTL_S)};
        if (append_argv(st, CMD_EXPIRE, NULL, 3, ev, el) < 0)
            return MCPQ_ENOMEM;
    }
    st->nexpire = 0;
    return 0;
}

/* Detaches up to max requests from the queue head into a NULL-terminated list. */
static wrk_store_req_t *take_batch(wrk_store_t *st, size_t max)
{
    wrk_store_req_t *first = st->head, *last = NULL;
    size_t n = 0;
    for (wrk_store_req_t *r = first; r && n < max; r = r->next, n++)
        last = r;
    if (!last)
        return NULL;
    st->head = last->next;
    if (st->head)
        st->head->prev = NULL;
    else
        st->tail = NULL;
    last->next = NULL;
    for (wrk_store_req_t *r = first; r; r = r->next)
        r->queued = 0;
    return first;
}

/* Puts the unfinished part of a batch back in front of the queue, in order. */
static void requeue_front(wrk_store_t *st, wrk_store_req_t *list)
{
    wrk_store_req_t *last = NULL;
    for (wrk_store_req_t *r = list; r; r = r->next) {
        r->queued = 1;
        r->prev = last;
        last = r;
    }
    if (!last)
        return;
    last->next = st->head;
    if (st->head)
        st->head->prev = last;
    st->head = list;
    if (!st->tail)
        st->tail = last;
}

static const char *key_of(const char *job_id, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s", WRK_RESULT_PREFIX, job_id);
    return buf;
}

static const char *cancel_key_of(const char *job_id, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s", WRK_CANCEL_PREFIX, job_id);
    return buf;
}

/* EXISTS {mcpq}:cancel:<id> (CHECK, PROBE) or GET of it (CANCEL). */
static int append_cancel_key(wrk_store_t *st, cmd_kind_t kind, wrk_store_req_t *r)
{
    char key[STORE_KEY_MAX];
    const char *argv[] = {kind == CMD_EXISTS ? "EXISTS" : "GET",
                          cancel_key_of(r->job_id, key, sizeof(key))};
    size_t lens[] = {strlen(argv[0]), strlen(argv[1])};
    return append_argv(st, kind, r, 2, argv, lens);
}

/* CHECK: GET {mcpq}:asked:<id> and HGET {mcpq}:ask:<id> worker (the redelivery rule of
 * docs/internals.md, "Asking the client"). */
static int append_ask_keys(wrk_store_t *st, wrk_store_req_t *r)
{
    char k1[STORE_KEY_MAX], k2[STORE_KEY_MAX];
    snprintf(k1, sizeof(k1), "%s%s", STORE_ASKED_PREFIX, r->job_id);
    snprintf(k2, sizeof(k2), "%s%s", STORE_ASK_PREFIX, r->job_id);
    const char *a1[] = {"GET", k1};
    size_t l1[] = {3, strlen(k1)};
    const char *a2[] = {"HGET", k2, "worker"};
    size_t l2[] = {4, strlen(k2), 6};
    if (append_argv(st, CMD_ASKED, r, 2, a1, l1) < 0 || append_argv(st, CMD_ASKW, r, 3, a2, l2) < 0)
        return MCPQ_ENOMEM;
    return 0;
}

/* Durable record bytes of a WRITE (another worker's when SET NX found one) or REPLY. */
static const char *durable_of(const wrk_store_req_t *r, size_t *len)
{
    if (r->durable) {
        *len = r->durable_len;
        return r->durable;
    }
    *len = r->record_len;
    return r->record;
}

/* Reads one reply per appended command. 0, or MCPQ_EIO when the connection broke (replies
 * of the commands read so far are in replies[]) or the server answered -READONLY: it was
 * demoted by a failover, so the connection is dropped like a lost one and kv_connect finds
 * the new master (docs/redis.md). */
static int read_replies(wrk_store_t *st, redisReply **replies)
{
    int rc = 0;
    for (size_t i = 0; i < st->ncmds; i++) {
        void *r = NULL;
        if (redisGetReply(st->ctx, &r) != REDIS_OK || !r)
            return MCPQ_EIO;
        replies[i] = r;
        if (kv_ctx_failover(st->kvt, st->ctx, replies[i]))
            rc = MCPQ_EIO;
    }
    return rc;
}

static void free_replies(redisReply **replies, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (replies[i])
            freeReplyObject(replies[i]);
    free(replies);
}

/* Appends up to STORE_NOTE_BATCH queued notifications and detaches them into *notes: they
 * are sent now, success or not (they are best effort). MCPQ_ENOMEM leaves *notes alone. */
static int append_notes(wrk_store_t *st, store_note_t **notes)
{
    size_t nn = 0;
    store_note_t *n = st->notes;
    for (; n && nn < STORE_NOTE_BATCH; n = n->next, nn++) {
        int rc;
        if (n->kind) {
            rc = append_xadd(st, CMD_NOTE, NULL, n->stream, n->job_id, n->kind, n->data,
                             n->data_len, 0);
        } else { /* wrk_store_publish */
            const char *argv[] = {"PUBLISH", n->stream, n->data};
            size_t lens[] = {7, strlen(n->stream), n->data_len};
            rc = append_argv(st, CMD_NOTE, NULL, 3, argv, lens);
        }
        if (rc < 0)
            return MCPQ_ENOMEM;
    }
    /* The notes are sent now, success or not (they are best effort). */
    *notes = st->notes;
    st->notes = n;
    if (!n)
        st->notes_tail = NULL;
    st->nnotes -= nn;
    return 0;
}

/* Appends the round-one commands of r (none when r has nothing to ask in round one). */
static int append_round_one(wrk_store_t *st, wrk_store_req_t *r)
{
    char key[STORE_KEY_MAX];
    if (r->op == WRK_STORE_CHECK) {
        const char *argv[] = {"GET", key_of(r->job_id, key, sizeof(key))};
        size_t lens[] = {3, strlen(argv[1])};
        if (append_argv(st, CMD_GET, r, 2, argv, lens) < 0 ||
            append_cancel_key(st, CMD_EXISTS, r) < 0 || append_ask_keys(st, r) < 0)
            return MCPQ_ENOMEM;
    } else if (r->op == WRK_STORE_PROBE) {
        if (append_cancel_key(st, CMD_EXISTS, r) < 0)
            return MCPQ_ENOMEM;
    } else if (r->op == WRK_STORE_CANCEL && r->phase == 0) {
        if (append_cancel_key(st, CMD_CGET, r) < 0)
            return MCPQ_ENOMEM;
    } else if (r->op == WRK_STORE_WRITE && r->phase == 0) {
        char own_ttl[24];
        const char *ttl = st->ttl;
        if (r->ttl_s > strtoll(st->ttl, NULL, 10)) {
            snprintf(own_ttl, sizeof(own_ttl), "%lld", (long long)r->ttl_s);
            ttl = own_ttl;
        }
        const char *argv[] = {
            "SET", key_of(r->job_id, key, sizeof(key)), r->record, "NX", "GET", "EX", ttl};
        size_t lens[] = {3, strlen(argv[1]), r->record_len, 2, 3, 2, strlen(ttl)};
        if (append_argv(st, CMD_SET, r, 7, argv, lens) < 0)
            return MCPQ_ENOMEM;
    }
    return 0;
}

/* Copies the string reply rep into r->durable. MCPQ_ENOMEM when out of memory. */
static int keep_durable(wrk_store_req_t *r, const redisReply *rep)
{
    r->durable = malloc(rep->len + 1);
    if (!r->durable)
        return MCPQ_ENOMEM;
    memcpy(r->durable, rep->str, rep->len);
    r->durable[rep->len] = '\0';
    r->durable_len = rep->len;
    return 0;
}

/* Applies the reply rep of a round-one command of the given kind to its request r (NULL for
 * notifications and EXPIRE). MCPQ_EUNAVAIL when Redis refused a result write (retried
 * later); else 0, also when out of memory (the request keeps its phase and is retried). */
static int round_one_reply(cmd_kind_t kind, wrk_store_req_t *r, const redisReply *rep)
{
    if (kind == CMD_GET) {
        if (rep->type == REDIS_REPLY_STRING) {
            if (keep_durable(r, rep) < 0)
                return 0; /* retried: phase stays 0 */
        } else if (rep->type == REDIS_REPLY_ERROR) {
            log_event(LOG_WARN, "result check failed; running the job", "job_id", r->job_id,
                      "error", rep->str, (char *)NULL);
        }
        r->phase = 2;
    } else if (kind == CMD_EXISTS) {
        if (rep->type == REDIS_REPLY_ERROR)
            log_event(LOG_WARN, "cancel check failed; checking again later", "job_id", r->job_id,
                      "error", rep->str, (char *)NULL);
        r->cancelled = rep->type == REDIS_REPLY_INTEGER && rep->integer > 0;
        if (r->op == WRK_STORE_PROBE)
            r->phase = 2;
    } else if (kind == CMD_ASKED) {
        r->asked = rep->type == REDIS_REPLY_STRING;
    } else if (kind == CMD_ASKW) {
        /* A question kept alive by a worker other than this one (r->self): it waits still. */
        r->ask_live =
            rep->type == REDIS_REPLY_STRING &&
            !(r->self && strlen(r->self) == rep->len && memcmp(r->self, rep->str, rep->len) == 0);
    } else if (kind == CMD_CGET) {
        /* Whatever the key holds (or nothing, or an error): the entry is sent anyway. */
        int found = rep->type == REDIS_REPLY_STRING;
        r->durable =
            wrk_record_cancelled(found ? rep->str : NULL, found ? rep->len : 0, &r->durable_len);
        if (r->durable)
            r->phase = 1; /* else retried */
    } else if (kind == CMD_SET) {
        if (rep->type == REDIS_REPLY_ERROR) {
            log_event(LOG_WARN, "result write refused; will retry", "job_id", r->job_id, "error",
                      rep->str, (char *)NULL);
            return MCPQ_EUNAVAIL;
        }
        if (rep->type == REDIS_REPLY_STRING && keep_durable(r, rep) < 0)
            return 0;
        r->stored_us = util_now_us();
        r->phase = 1;
    } else if (rep->type == REDIS_REPLY_ERROR) {
        log_msgf(LOG_DEBUG, "reply stream entry refused: %s", rep->str);
    }
    return 0;
}

/* Round 1: notifications, CHECK (GET, EXISTS), PROBE (EXISTS), WRITE (SET NX GET) and
 * CANCEL (GET). Sets each request's phase; requests whose answer is final are marked with
 * phase 2 (CHECK, PROBE) or 1 (WRITE done SET, CANCEL knows its entry). */
static int round_one(wrk_store_t *st, wrk_store_req_t *batch, store_note_t **notes)
{
    st->ncmds = 0;
    st->nexpire = 0;
    if (append_notes(st, notes) < 0)
        return MCPQ_ENOMEM;
    for (wrk_store_req_t *r = batch; r; r = r->next)
        if (append_round_one(st, r) < 0)
            return MCPQ_ENOMEM;
    if (append_expires(st) < 0)
        return MCPQ_ENOMEM;
    if (st->ncmds == 0)
        return 0;
    redisReply **replies = calloc(st->ncmds, sizeof(*replies));
    if (!replies)
        return MCPQ_ENOMEM;
    int rc = read_replies(st, replies);
    if (rc < 0)
        goto out;
    for (size_t i = 0; i < st->ncmds; i++)
        if (round_one_reply(st->cmds[i].kind, st->cmds[i].req, replies[i]) < 0)
            rc = MCPQ_EUNAVAIL;
out:
    free_replies(replies, st->ncmds);
    return rc;
}

/* Appends the entries of round two (see round_two) and, when replicas are awaited and
 * something was written, WAIT last; *nwrites counts the requests that wrote. */
static int append_round_two(wrk_store_t *st, wrk_store_req_t *batch, size_t *nwrites)
{
    for (wrk_store_req_t *r = batch; r; r = r->next) {
        if (r->phase == 4) { /* written on this connection, waiting for the replicas */
            (*nwrites)++;
            continue;
        }
        if (!(((r->op == WRK_STORE_WRITE || r->op == WRK_STORE_CANCEL) && r->phase == 1) ||
              r->op == WRK_STORE_REPLY))
            continue;
        (*nwrites)++;
        size_t len;
        const char *rec = durable_of(r, &len);
        const char *kind = r->op == WRK_STORE_CANCEL ? "cancelled" : "result";
        for (size_t i = 0; i < r->nstreams; i++)
            if (append_xadd(st, CMD_XADD, r, r->streams[i], r->job_id, kind, rec, len,
                            r->op == WRK_STORE_WRITE ? r->stored_us : 0) < 0)
                return MCPQ_ENOMEM;
        if (r->nstreams == 0)
            r->phase = 3;
    }
    if (append_expires(st) < 0)
        return MCPQ_ENOMEM;
    /* WAIT last in the same pipeline: it covers every write this connection made (the SETs
     * of round one too), and costs the replicas' acknowledgement, not another round trip. */
    char wn[16], wms[24];
    snprintf(wn, sizeof(wn), "%d", st->wait_replicas);
    snprintf(wms, sizeof(wms), "%d", st->wait_timeout_ms);
    const char *wargv[] = {"WAIT", wn, wms};
    size_t wlens[] = {4, strlen(wn), strlen(wms)};
    if (st->wait_replicas > 0 && *nwrites > 0 &&
        append_argv(st, CMD_WAIT, NULL, 3, wargv, wlens) < 0)
        return MCPQ_ENOMEM;
    return 0;
}

/* Marks the requests whose entries were answered phase 3, logging refused entries. 1 when
 * WAIT was answered with fewer replicas than asked, else 0. */
static int round_two_replies(wrk_store_t *st, redisReply **replies)
{
    int short_wait = 0;
    for (size_t i = 0; i < st->ncmds; i++) {
        if (st->cmds[i].kind == CMD_WAIT)
            short_wait =
                replies[i]->type != REDIS_REPLY_INTEGER || replies[i]->integer < st->wait_replicas;
        if (st->cmds[i].kind != CMD_XADD)
            continue;
        /* An error reply (say WRONGTYPE) cannot heal by retrying; the result is durable
         * and the ingress reads it before answering a timeout. */
        if (replies[i]->type == REDIS_REPLY_ERROR)
            log_event(LOG_WARN, "reply entry refused", "job_id", st->cmds[i].req->job_id, "error",
                      replies[i]->str, (char *)NULL);
        st->cmds[i].req->phase = 3;
    }
    return short_wait;
}

/* After WAIT answered: the written requests are done (phase 3), or wait for the replicas
 * (phase 4) when the answer was short, then MCPQ_ETIMEDOUT; else 0. */
static int settle_wait(wrk_store_t *st, wrk_store_req_t *batch, int short_wait)
{
    /* Short: fewer replicas than asked hold these writes, so none is done (no offset is
     * stored). They wait (phase 4) and the next pipeline on this connection asks WAIT
     * again, which covers them; on a new connection they are written again (wrk_store_flush),
     * since the master that lost them may be another one now. */
    if (short_wait && st->wait_short++ % 100 == 0)
        log_event(LOG_WARN, "redis WAIT: too few replicas acknowledged; results wait",
                  (char *)NULL);
    for (wrk_store_req_t *r = batch; r; r = r->next) {
        if (r->phase != 3 && r->phase != 4)
            continue;
        r->phase = short_wait ? 4 : 3;
        r->wait_gen = st->conn_gen;
    }
    return short_wait ? MCPQ_ETIMEDOUT : 0;
}

/* Sends r again from the start: what it learnt (its durable record, its phase) is dropped. */
static void restart_req(wrk_store_req_t *r)
{
    free(r->durable);
    r->durable = NULL;
    r->phase = 0;
}

/* Round 2: the result entries of WRITE (phase 1) and REPLY requests, the cancelled entries
 * of CANCEL (phase 1); marks them phase 3. */
static int round_two(wrk_store_t *st, wrk_store_req_t *batch)
{
    st->ncmds = 0;
    st->nexpire = 0;
    size_t nwrites = 0;
    if (append_round_two(st, batch, &nwrites) < 0)
        return MCPQ_ENOMEM;
    if (st->ncmds == 0)
        return 0;
    redisReply **replies = calloc(st->ncmds, sizeof(*replies));
    if (!replies)
        return MCPQ_ENOMEM;
    int rc = read_replies(st, replies);
    int short_wait = rc == 0 ? round_two_replies(st, replies) : 0;
    if (rc == 0 && st->wait_replicas > 0 && nwrites > 0) {
        rc = settle_wait(st, batch, short_wait);
    } else if (rc < 0 && st->wait_replicas > 0) {
        /* No WAIT answer (the connection broke): nothing of this batch is done. */
        for (wrk_store_req_t *r = batch; r; r = r->next)
            if (r->phase == 3 || r->phase == 4)
                restart_req(r);
    }
    free_replies(replies, st->ncmds);
    return rc;
}

static int req_finished(const wrk_store_req_t *r)
{
    return ((r->op == WRK_STORE_CHECK || r->op == WRK_STORE_PROBE) && r->phase == 2) ||
           r->phase == 3;
}

/* Sets the connection state and the next attempt's time from the outcome rc of a flush. */
static void settle_flush(wrk_store_t *st, int rc)
{
    if (rc == MCPQ_EIO) {
        store_down(st, st->ctx && st->ctx->errstr[0] ? st->ctx->errstr : "connection lost");
    } else if (rc == MCPQ_ETIMEDOUT) {
        /* A short WAIT took its timeout already: no growing backoff, so new results keep
         * going out (and are answered) while a replica is missing. */
        st->retry_at = util_mono_ms() + STORE_BACKOFF_MIN_MS;
    } else if (rc == MCPQ_EUNAVAIL) {
        st->retry_at = util_mono_ms() + st->backoff_ms;
        st->backoff_ms =
            st->backoff_ms * 2 > STORE_BACKOFF_MAX_MS ? STORE_BACKOFF_MAX_MS : st->backoff_ms * 2;
    } else if (rc == MCPQ_ENOMEM) {
        /* The pipeline may be half-built: drop the connection to start clean. */
        store_down(st, "out of memory");
    } else {
        store_up(st);
    }
}

/* Splits the batch after a flush whose outcome was rc: unfinished requests go back in
 * front of the queue, ready to be sent again; returns the finished ones, in order. */
static wrk_store_req_t *split_batch(wrk_store_t *st, wrk_store_req_t *batch, int rc)
{
    wrk_store_req_t *done = NULL, **dtail = &done, *again = NULL, **atail = &again;
    for (wrk_store_req_t *r = batch, *next; r; r = next) {
        next = r->next;
        r->next = NULL;
        if (req_finished(r)) {
            *dtail = r;
            dtail = &r->next;
        } else {
            if (r->op == WRK_STORE_WRITE || r->op == WRK_STORE_REPLY || r->op == WRK_STORE_CANCEL)
                st->retried++;
            if (r->op == WRK_STORE_CHECK || r->op == WRK_STORE_PROBE) {
                restart_req(r);
                r->cancelled = 0;
                r->asked = r->ask_live = 0;
            } else if (rc == MCPQ_EIO && r->phase == 1) {
                /* The connection was lost after the SET: it may not have reached the master
                 * that answers next (a failover), so it is sent again. */
                restart_req(r);
            }
            *atail = r;
            atail = &r->next;
        }
    }
    requeue_front(st, again);
    return done;
}

/* Calls back each finished request of the list done with its answer. */
static void finish_done(wrk_store_t *st, wrk_store_req_t *done)
{
    for (wrk_store_req_t *r = done, *next; r; r = next) {
        next = r->next;
        r->next = NULL;
        char *durable = r->durable;
        size_t dlen = r->durable_len;
        r->durable = NULL;
        r->phase = 0;
        if (r->op == WRK_STORE_WRITE)
            st->written++;
        if (r->op == WRK_STORE_CHECK || r->op == WRK_STORE_PROBE)
            r->done(r, durable, durable ? dlen : 0, r->arg);
        else if (durable)
            r->done(r, durable, dlen, r->arg);
        else
            r->done(r, r->record, r->record_len, r->arg);
        free(durable);
    }
}

int wrk_store_flush(wrk_store_t *st)
{
    if (!st->head && !st->notes)
        return 0;
    if (st->ctx && util_mono_ms() < st->retry_at)
        return 0;
    if (store_connect(st) < 0)
        return 0;
    wrk_store_req_t *batch = take_batch(st, STORE_BATCH);
    for (wrk_store_req_t *r = batch; r; r = r->next)
        if (r->phase == 4 && r->wait_gen != st->conn_gen) {
            /* Written on a connection since lost: perhaps to a master a failover left behind,
             * so written again (SET NX GET and the reply entries are idempotent for readers). */
            restart_req(r);
        }
    store_note_t *notes = NULL;
    int rc = round_one(st, batch, &notes);
    /* Notes sent in round one are released whatever happened. */
    while (notes && notes != st->notes) {
        store_note_t *n = notes;
        notes = n->next;
        note_free(n);
    }
    if (rc == 0 || rc == MCPQ_EUNAVAIL) {
        int rc2 = round_two(st, batch);
        if (rc2 < 0)
            rc = rc2;
    }
    settle_flush(st, rc);
    /* Split the batch: finished requests get their callback, the rest go back in front. */
    finish_done(st, split_batch(st, batch, rc));
    return (st->head || st->notes) && st->ctx && util_mono_ms() >= st->retry_at;
}

void wrk_store_counts(const wrk_store_t *st, unsigned long long *written,
                      unsigned long long *retried)
{
    *written = st->written;
    *retried = st->retried;
}
