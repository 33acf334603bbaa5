/*
 * batch.h - a 2025-03-26 JSON-RPC batch being answered: one slot per element, holding the
 * element's immediate response or the call it waits on (docs/internals.md, "Batches").
 *
 * mcp.c dispatches every element; an element that waits (tools/call, tasks/result) gets a
 * call of its own (ing_batch_call) that the pending table completes like any other, with
 * the request's own call (req->call) as the group that owns the connection (pending.h).
 * Once the group is done, server.c answers the array (ing_batch_response) or has streamed
 * every response as a frame; ing_batch_free() then takes whatever still waits out of the
 * table. A batch belongs to its request and is used by that request's HTTP thread only.
 */
#ifndef MCPQ_ING_BATCH_H
#define MCPQ_ING_BATCH_H

#include "pending.h"

#include <stddef.h>

/* At most this many messages in one batch (larger: HTTP 400, -32600). */
#define ING_BATCH_MAX 100

typedef struct ing_batch {
    size_t n;
    char **bodies;      /* [n] the element's JSON-RPC response when answered at once, or NULL */
    ing_call_t **calls; /* [n] the element's call when it may wait, or NULL */
} ing_batch_t;

/* A batch of n (1..ING_BATCH_MAX) empty slots, or NULL (out of memory). */
ing_batch_t *ing_batch_new(size_t n);
/* Takes every element still in p out of it (p may be NULL when none was added), then frees
 * everything. NULL does nothing. */
void ing_batch_free(ing_batch_t *b, ing_pending_t *p);

/* Element i's call, made zeroed on first use; NULL when out of memory. */
ing_call_t *ing_batch_call(ing_batch_t *b, size_t i);
/* Frees element i's call (it did not wait: it was answered at once). */
void ing_batch_call_drop(ing_batch_t *b, size_t i);

/* 1 when some element waits on a call. */
int ing_batch_waits(const ing_batch_t *b);

/* The JSON array answering a finished batch, elements in order: immediate responses, each
 * waiting element's response (-32603 when it ended without one). NULL when it would be
 * empty (every element was a notification or a response) or out of memory (*oom set).
 * Malloc'd. */
char *ing_batch_response(const ing_batch_t *b, int *oom);

#endif
