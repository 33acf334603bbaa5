/*
 * record.h - the result record a worker writes once per job to {mcpq}:result:<job_id> and
 * sends as the `result` entry of the reply stream (docs/internals.md, "Result record"), and
 * the data of the `cancelled` entry a cancelled job sends instead.
 *
 *   {"v":1,"job_id","tenant","tool","status":"ok"|"timeout"|"error",
 *    "result":<CallToolResult> (ok) | "error":{"code","message","data"?:{"reason"}}
 *    (timeout, error),
 *    "worker","attempt","started_ms","finished_ms","finished_us"?,"picked_us"?,"exec_us"?}
 *
 * picked_us, exec_us and finished_us are Unix µs (job picked up by this worker, executor
 * started, executor ended: the ingress splits a call into stages with them, ingress/core/
 * stages.h); it observes mcpq_result_delivery_seconds from finished_us. Each is left out
 * when 0.
 *
 * Pure functions, thread-safe.
 */
#ifndef MCPQ_WORKER_RECORD_H
#define MCPQ_WORKER_RECORD_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { WRK_STATUS_OK = 0, WRK_STATUS_TIMEOUT, WRK_STATUS_ERROR } wrk_status_t;

#define WRK_ERR_TIMEOUT -32003  /* "Agent reply timeout" (docs/protocol.md) */
#define WRK_ERR_INTERNAL -32603 /* the gateway failed */

typedef struct wrk_record {
    const char *job_id, *tenant, *tool; /* tenant/tool NULL: written as "" */
    wrk_status_t status;
    const cJSON *result; /* OK: the CallToolResult */
    int err_code;        /* TIMEOUT, ERROR */
    const char *err_msg;
    const char *err_reason; /* ERROR: written as error.data.reason (NULL: no data) */
    const char *worker;
    int attempt;
    int64_t started_ms, finished_ms;
    int64_t picked_us, exec_us, finished_us; /* Unix µs; 0: not written */
    int never_ran; /* the tool was never started (deadline passed in the queue, no executor, or
                    * it could not start): written as "ran": false */
} wrk_record_t;

/* The record as compact JSON, malloc'd and NUL-terminated, *len set; NULL on ENOMEM. */
char *wrk_record_build(const wrk_record_t *r, size_t *len);

/* Bytes of a cancellation reason passed on (longer ones are cut). */
#define WRK_CANCEL_REASON_MAX 1024
#define WRK_CANCEL_REASON_DEFAULT "cancelled by the caller"

/* The data of a `cancelled` reply entry, {"reason":"..."}, from the value of
 * {mcpq}:cancel:<job_id> (untrusted, may be NULL): its "reason" when it is a JSON object with a
 * string one (made valid UTF-8 and cut to WRK_CANCEL_REASON_MAX bytes), else
 * WRK_CANCEL_REASON_DEFAULT. Malloc'd and NUL-terminated, *len set; NULL on ENOMEM. */
char *wrk_record_cancelled(const char *value, size_t value_len, size_t *len);

/* The record's "status" for status: "ok", "timeout" or "error" (a static string). */
const char *wrk_record_status_name(wrk_status_t status);

#endif
