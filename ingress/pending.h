/*
 * pending.h - tools/call requests waiting for their result, without a thread each.
 *
 * A waiting call is an ing_call_t embedded in its HTTP request. The HTTP thread adds it
 * (ing_pending_add), publishes the job, then parks the connection (ing_pending_park, which
 * suspends it in libmicrohttpd unless the answer is already there). One reader thread
 * follows this replica's Redis reply stream (XREAD BLOCK, docs/internals.md) and completes
 * calls as results arrive; the same thread answers calls whose deadline passed with
 * -32003, after one last look at the durable result key. Completing a parked call resumes
 * its connection; the HTTP thread then sends call->response.
 *
 * Thread safety: every function is thread-safe. A call's fields are written under the
 * table's lock until done is set; after that the HTTP thread owns them.
 */
#ifndef MCPQ_ING_PENDING_H
#define MCPQ_ING_PENDING_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#define ING_JOB_ID_LEN 40

typedef struct ing_call {
    char job_id[ING_JOB_ID_LEN];
    char id_json[300];            /* the JSON-RPC id, rendered */
    int64_t deadline_mono;        /* monotonic ms */
    struct MHD_Connection *conn;
    /* table bookkeeping */
    struct ing_call *next;
    size_t heap_idx;
    int in_table;
    int parked;
    /* outcome, valid once done */
    int done;
    char *response; /* malloc'd JSON-RPC response */
    int timed_out;
} ing_call_t;

typedef struct ing_pending ing_pending_t;

/* reply_key: this replica's stream (mcpq:reply:<instance>). */
ing_pending_t *ing_pending_new(const char *redis_url, int redis_timeout_ms, const char *reply_key);
/* Completes every call still waiting with -32603 "server shutting down", stops the thread. */
void ing_pending_free(ing_pending_t *p);

void ing_pending_add(ing_pending_t *p, ing_call_t *call);
/* Suspends call->conn until completion; returns 1 (nothing suspended) if already done. Must
 * run on the connection's HTTP thread, inside the access handler. */
int ing_pending_park(ing_pending_t *p, ing_call_t *call);
/* Completes a call by job id with a JSON-RPC error (e.g. Kafka refused the job). */
void ing_pending_fail(ing_pending_t *p, const char *job_id, int code, const char *message);
/* Removes a call that never got parked (the request failed before publishing). */
void ing_pending_remove(ing_pending_t *p, ing_call_t *call);

size_t ing_pending_count(ing_pending_t *p);
/* 1 while the reader is connected to Redis. */
int ing_pending_healthy(ing_pending_t *p);
/* Completes everything still waiting with -32603 (graceful shutdown after the grace period). */
void ing_pending_fail_all(ing_pending_t *p, const char *message);

#endif
