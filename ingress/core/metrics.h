/*
 * metrics.h - the ingress's Prometheus metrics (docs/operations.md "Metrics"): requests by MCP
 * method and HTTP status, request latency histograms, in-flight calls, published jobs and their
 * failures, tool call outcomes and end-to-end latency per tenant, result delivery latency, the
 * stages of a call (stages.h),
 * webhook delivery attempts by outcome and their latency, open notification streams, the
 * webhook queue, task states, OAuth key fetches and token introspection, config file reloads,
 * quarantined federated tools (pin.h), build info and the process_* series (prom.h).
 * Durations are observed in microseconds into the histograms of prom.h (100 µs to 60 s).
 * Counters are lock-free atomics; every function is thread-safe.
 * ing_metrics_render() writes the text exposition format.
 *
 * Tenant labels: the series of tools/call carry tenant="<id>" for at most tenants_max distinct
 * tenant ids per process (MCPQ_METRICS_TENANTS_MAX), first come first served; later tenants are
 * counted under tenant="_other", calls with no tenant under tenant="_none". Tenant ids come
 * from the configured tenants only (a request gets a tenant once it authenticated), never a job,
 * call or request id. The slot table is filled under a mutex the first time a tenant is seen
 * and published by an atomic count (release); the hot path reads the count (acquire) and scans
 * the published slots without a lock (at most tenants_max string compares).
 */
#ifndef MCPQ_ING_METRICS_H
#define MCPQ_ING_METRICS_H

#include "prom.h"
#include "stages.h"
#include "util.h"

#include <stddef.h>
#include <stdint.h>

typedef enum {
    ING_M_INITIALIZE,
    ING_M_PING,
    ING_M_TOOLS_LIST,
    ING_M_TOOLS_CALL,
    ING_M_NOTIFICATION,
    ING_M_SESSION_DELETE,
    ING_M_OTHER,
    ING_M_NONE, /* no JSON-RPC method: unparsable body, auth failure, ... */
    ING_M_COUNT
} ing_method_t;

typedef enum {
    ING_CALL_OK,
    ING_CALL_TOOL_ERROR,
    ING_CALL_TIMEOUT,
    ING_CALL_FAILED,
    ING_CALL_FAKE,
    ING_CALL_CANCELLED,
    ING_CALL_COUNT
} ing_call_outcome_t;

/* What one webhook HTTP attempt led to (ingress/core/webhook.c). */
typedef enum {
    ING_WH_DELIVERED, /* 2xx */
    ING_WH_RETRY,     /* failed; another attempt is scheduled */
    ING_WH_FAILED,    /* failed; the schedule is exhausted */
    ING_WH_DISABLED,  /* 410 Gone: the endpoint is disabled */
    ING_WH_COUNT
} ing_metrics_wh_outcome_t;

/* What one token introspection lookup or request came to (ingress/core/oauth.c). */
typedef enum {
    ING_OI_HIT,      /* the answer was in the cache */
    ING_OI_MISS,     /* not cached: a request was started */
    ING_OI_ACTIVE,   /* a request answered active */
    ING_OI_INACTIVE, /* a request answered inactive (or active but expired) */
    ING_OI_ERROR,    /* a request failed (transport, status, unusable answer) */
    ING_OI_COUNT
} ing_metrics_oi_t;

/* What one change of the config file came to (ingress/refresh.c, cfgwatch.h). */
typedef enum {
    ING_CFG_APPLIED,   /* this replica applied it to the registry */
    ING_CFG_UNCHANGED, /* already applied (by another replica, or the registry held it) */
    ING_CFG_REFUSED,   /* unreadable, invalid or clashing with the registry: not applied */
    ING_CFG_COUNT
} ing_metrics_cfg_t;

typedef struct ing_metrics ing_metrics_t;

/* tenants_max: distinct tenant label values kept (0: every call counts under "_other"). */
ing_metrics_t *ing_metrics_new(size_t tenants_max);
void ing_metrics_free(ing_metrics_t *m);

ing_method_t ing_metrics_method(const char *rpc_method);
/* One HTTP request answered (its response queued) duration_us after its first callback. */
void ing_metrics_request(ing_metrics_t *m, ing_method_t method, int http_status,
                         int64_t duration_us);
/* A tools/call of tenant (NULL or "": none) ended as outcome duration_us after its request
 * arrived (mcpq_tool_calls_total{tenant,outcome}, mcpq_tool_call_duration_seconds{tenant});
 * duration_us < 0: counted, not observed. */
void ing_metrics_call(ing_metrics_t *m, const char *tenant, ing_call_outcome_t outcome,
                      int64_t duration_us);
/* A worker's result reached its response: from the record's finished_us (the worker's wall
 * clock) to the response queued (this ingress's), clamped at 0; assumes NTP-synced clocks
 * (mcpq_result_delivery_seconds). */
void ing_metrics_result_delivery(ing_metrics_t *m, int64_t delivery_us);
/* One stage of a tools/call a worker answered took us µs (stages.h;
 * mcpq_call_stage_seconds{stage}). */
void ing_metrics_stage(ing_metrics_t *m, ing_stage_t stage, int64_t us);
void ing_metrics_published(ing_metrics_t *m, int ok);
/* One webhook HTTP attempt and how long it took, in µs (mcpq_webhook_attempts_total{outcome},
 * mcpq_webhook_delivery_seconds{outcome}). */
void ing_metrics_webhook(ing_metrics_t *m, ing_metrics_wh_outcome_t outcome, int64_t duration_us);

/* The webhook queue as the dispatcher last saw it (ingress/core/webhook.c, every
 * ING_METRICS_WH_QUEUE_MS on its own thread, never at scrape time): deliveries waiting in
 * {mcpq}:wh:due, and how many of them are due now. */
void ing_metrics_webhook_queue(ing_metrics_t *m, long long queued, long long due);
#define ING_METRICS_WH_QUEUE_MS 5000

/* Tasks (tasks.h) as the webhook dispatcher last counted them, on the same thread and period:
 * running (leased to a worker, {mcpq}:task:leases) and waiting (queued for a worker, the task
 * queues); mcpq_tasks{state}. Left out of the exposition until first set. */
void ing_metrics_tasks(ing_metrics_t *m, long long running, long long waiting);

/* OAuth (ingress/core/oauth.c): one key fetch of an issuer ended (discovery and JWKS together),
 * the keys known now across issuers, one introspection lookup or request. */
void ing_metrics_oauth_fetch(ing_metrics_t *m, int ok);
void ing_metrics_oauth_keys(ing_metrics_t *m, long long keys);
void ing_metrics_oauth_introspection(ing_metrics_t *m, ing_metrics_oi_t what);

/* One change of the config file seen by this replica and what it came to; also sets the gauge
 * mcpq_config_refused (1 after a refusal, 0 after anything else). */
void ing_metrics_config_reload(ing_metrics_t *m, ing_metrics_cfg_t result);

/* A federated tool quarantined by this replica's import (federate.c, pin.h): counts
 * mcpq_tools_quarantined_total. m may be NULL. */
void ing_metrics_tool_quarantined(ing_metrics_t *m);

/* What the ingress is doing now, read at scrape time. */
typedef struct ing_metrics_now {
    size_t inflight;    /* tools/call requests waiting for a result */
    size_t quarantined; /* tools quarantined in the current registry snapshot (pin.h) */
    size_t listeners;   /* open notification streams (listen.h) */
    int kafka_up, redis_up;
    unsigned long long redis_takes, redis_queued; /* the Redis pool's counters (kv_pool_stats) */
} ing_metrics_now_t;

/* Appends the exposition text. */
int ing_metrics_render(ing_metrics_t *m, util_buf_t *out, const ing_metrics_now_t *now);

#endif
