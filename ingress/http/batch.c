/* batch.c - a JSON-RPC batch being answered; see batch.h. */
#include "batch.h"

#include "otel.h"
#include "rpc.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

ing_batch_t *ing_batch_new(size_t n)
{
    if (n == 0 || n > ING_BATCH_MAX)
        return NULL;
    ing_batch_t *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->n = n;
    b->bodies = calloc(n, sizeof(*b->bodies));
    b->calls = calloc(n, sizeof(*b->calls));
    if (!b->bodies || !b->calls) {
        ing_batch_free(b, NULL);
        return NULL;
    }
    return b;
}

void ing_batch_free(ing_batch_t *b, ing_pending_t *p)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++) {
        if (b->calls && b->calls[i]) {
            if (p)
                ing_pending_remove(p, b->calls[i]);
            ing_batch_call_drop(b, i);
        }
        if (b->bodies)
            free(b->bodies[i]);
    }
    free(b->bodies);
    free(b->calls);
    free(b);
}

ing_call_t *ing_batch_call(ing_batch_t *b, size_t i)
{
    if (!b->calls[i])
        b->calls[i] = calloc(1, sizeof(ing_call_t));
    return b->calls[i];
}

void ing_batch_call_drop(ing_batch_t *b, size_t i)
{
    if (b->calls[i]) {
        otel_span_end(b->calls[i]->span, 0); /* answered at once, or server.c did not end it */
        ing_pending_release(b->calls[i]);
        free(b->calls[i]);
        b->calls[i] = NULL;
    }
}

int ing_batch_waits(const ing_batch_t *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->calls[i])
            return 1;
    return 0;
}

/* Appends one element's response to the array being built; 0 or -1 (out of memory). */
static int append_one(util_buf_t *out, int *count, const char *json)
{
    if ((*count)++ && util_buf_append(out, ",", 1) < 0)
        return -1;
    return util_buf_append(out, json, strlen(json)) < 0 ? -1 : 0;
}

char *ing_batch_response(const ing_batch_t *b, int *oom)
{
    util_buf_t out;
    util_buf_init(&out, (size_t)64 << 20);
    int count = 0, rc = util_buf_append(&out, "[", 1);
    for (size_t i = 0; i < b->n && rc == 0; i++) {
        const ing_call_t *call = b->calls[i];
        if (b->bodies[i]) {
            rc = append_one(&out, &count, b->bodies[i]);
        } else if (call && call->response) {
            rc = append_one(&out, &count, call->response);
        } else if (call && !call->cancelled) { /* ended without a response */
            cJSON *id = cJSON_Parse(call->id_json);
            char *err = rpc_error_str(id, RPC_INTERNAL_ERROR, "internal error", NULL);
            cJSON_Delete(id);
            rc = err ? append_one(&out, &count, err) : -1;
            free(err);
        }
    }
    if (rc == 0)
        rc = util_buf_append(&out, "]", 1);
    *oom = rc < 0;
    if (rc < 0 || count == 0) {
        util_buf_cleanup(&out);
        return NULL;
    }
    return out.data;
}
