#include "metrics.h"

#include "otel.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int statuses[] = {200, 202, 400, 401, 403, 404, 405,
                               406, 413, 415, 429, 431, 500, 503};
#define NSTATUS (sizeof(statuses) / sizeof(statuses[0]) + 1) /* + "other" */

static const char *const method_names[ING_M_COUNT] = {
    "initialize",   "ping",           "tools/list", "tools/call",
    "notification", "session/delete", "other",      "none"};
static const char *const outcome_names[ING_CALL_COUNT] = {"ok",     "tool_error", "timeout",
                                                          "failed", "fake",       "cancelled"};

static const char *const wh_names[ING_WH_COUNT] = {"delivered", "retry", "failed", "disabled"};
static const char *const oi_names[ING_OI_COUNT] = {"hit", "miss", "active", "inactive", "error"};
static const char *const cfg_names[ING_CFG_COUNT] = {"applied", "unchanged", "refused"};

/* One tenant label value and its tools/call series. */
typedef struct tenant_slot {
    char name[128]; /* as written by the exposition (escaped when rendered) */
    atomic_ullong calls[ING_CALL_COUNT];
    prom_hist_t hist;
} tenant_slot_t;

/* Slots 0 and 1 are "_none" and "_other"; tenants take 2.. in the order they are first seen. */
#define SLOT_NONE 0
#define SLOT_OTHER 1

struct ing_metrics {
    atomic_ullong requests[ING_M_COUNT][NSTATUS];
    prom_hist_t hist[ING_M_COUNT];
    tenant_slot_t *tenants; /* tenants_max + 2 slots */
    size_t tenants_max;     /* slots for tenant ids */
    atomic_size_t ntenants; /* slots published (>= 2): written under tenant_lock, release */
    pthread_mutex_t tenant_lock;
    prom_hist_t delivery; /* result delivery */
    prom_hist_t stage[ING_STAGE_COUNT];
    atomic_ullong published_ok, published_failed;
    atomic_ullong wh[ING_WH_COUNT];
    prom_hist_t wh_hist[ING_WH_COUNT];
    atomic_llong wh_queued, wh_due;            /* -1 until the dispatcher looked */
    atomic_llong tasks_running, tasks_waiting; /* -1 until the dispatcher looked */
    atomic_ullong oauth_fetch_ok, oauth_fetch_failed;
    atomic_llong oauth_keys; /* -1 until the OAuth service counted them */
    atomic_ullong oauth_oi[ING_OI_COUNT];
    atomic_ullong cfg[ING_CFG_COUNT];
    atomic_int cfg_refused;    /* the last change of the config file was refused */
    atomic_ullong quarantined; /* federated tools this replica quarantined (pin.h) */
    int64_t start_ms;
};

ing_metrics_t *ing_metrics_new(size_t tenants_max)
{
    ing_metrics_t *m = calloc(1, sizeof(ing_metrics_t)); /* all-zero atomics are valid */
    if (!m)
        return NULL;
    m->tenants = calloc(tenants_max + 2, sizeof(tenant_slot_t));
    if (!m->tenants) {
        free(m);
        return NULL;
    }
    m->tenants_max = tenants_max;
    snprintf(m->tenants[SLOT_NONE].name, sizeof(m->tenants[0].name), "_none");
    snprintf(m->tenants[SLOT_OTHER].name, sizeof(m->tenants[0].name), "_other");
    atomic_store(&m->ntenants, 2);
    pthread_mutex_init(&m->tenant_lock, NULL);
    atomic_store(&m->tasks_running, -1);
    atomic_store(&m->tasks_waiting, -1);
    atomic_store(&m->wh_queued, -1);
    atomic_store(&m->wh_due, -1);
    atomic_store(&m->oauth_keys, -1);
    m->start_ms = util_now_ms();
    return m;
}

void ing_metrics_webhook_queue(ing_metrics_t *m, long long queued, long long due)
{
    atomic_store(&m->wh_queued, queued);
    atomic_store(&m->wh_due, due);
}

void ing_metrics_oauth_fetch(ing_metrics_t *m, int ok)
{
    if (m)
        atomic_fetch_add(ok ? &m->oauth_fetch_ok : &m->oauth_fetch_failed, 1);
}

void ing_metrics_oauth_keys(ing_metrics_t *m, long long keys)
{
    if (m)
        atomic_store(&m->oauth_keys, keys);
}

void ing_metrics_oauth_introspection(ing_metrics_t *m, ing_metrics_oi_t what)
{
    if (m)
        atomic_fetch_add(&m->oauth_oi[what], 1);
}

void ing_metrics_config_reload(ing_metrics_t *m, ing_metrics_cfg_t result)
{
    if (!m)
        return;
    atomic_fetch_add(&m->cfg[result], 1);
    atomic_store(&m->cfg_refused, result == ING_CFG_REFUSED);
}

void ing_metrics_tool_quarantined(ing_metrics_t *m)
{
    if (m)
        atomic_fetch_add(&m->quarantined, 1);
}

void ing_metrics_tasks(ing_metrics_t *m, long long running, long long waiting)
{
    atomic_store(&m->tasks_running, running);
    atomic_store(&m->tasks_waiting, waiting);
}

void ing_metrics_free(ing_metrics_t *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->tenant_lock);
    free(m->tenants);
    free(m);
}

/* The slot of tenant among the published ones, or 0. */
static size_t tenant_find(ing_metrics_t *m, const char *tenant, size_t n)
{
    for (size_t i = 2; i < n; i++)
        if (strcmp(m->tenants[i].name, tenant) == 0)
            return i;
    return 0;
}

/* The slot of tenant's series (see the header): lock-free once the tenant was seen. */
static tenant_slot_t *tenant_slot(ing_metrics_t *m, const char *tenant)
{
    if (!tenant || !*tenant)
        return &m->tenants[SLOT_NONE];
    size_t n = atomic_load_explicit(&m->ntenants, memory_order_acquire);
    size_t i = tenant_find(m, tenant, n);
    if (i)
        return &m->tenants[i];
    if (n >= m->tenants_max + 2 || strlen(tenant) >= sizeof(m->tenants[0].name))
        return &m->tenants[SLOT_OTHER];
    pthread_mutex_lock(&m->tenant_lock);
    n = atomic_load_explicit(&m->ntenants, memory_order_relaxed);
    i = tenant_find(m, tenant, n); /* another thread may have added it meanwhile */
    if (!i && n < m->tenants_max + 2) {
        i = n;
        snprintf(m->tenants[i].name, sizeof(m->tenants[i].name), "%s", tenant);
        atomic_store_explicit(&m->ntenants, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&m->tenant_lock);
    return &m->tenants[i ? i : SLOT_OTHER];
}

ing_method_t ing_metrics_method(const char *rpc_method)
{
    if (!rpc_method)
        return ING_M_NONE;
    if (strcmp(rpc_method, "tools/call") == 0)
        return ING_M_TOOLS_CALL;
    if (strcmp(rpc_method, "tools/list") == 0)
        return ING_M_TOOLS_LIST;
    if (strcmp(rpc_method, "initialize") == 0)
        return ING_M_INITIALIZE;
    if (strcmp(rpc_method, "ping") == 0)
        return ING_M_PING;
    if (strncmp(rpc_method, "notifications/", 14) == 0)
        return ING_M_NOTIFICATION;
    return ING_M_OTHER;
}

void ing_metrics_request(ing_metrics_t *m, ing_method_t method, int http_status,
                         int64_t duration_us)
{
    size_t si = NSTATUS - 1;
    for (size_t i = 0; i < NSTATUS - 1; i++)
        if (statuses[i] == http_status)
            si = i;
    atomic_fetch_add(&m->requests[method][si], 1);
    prom_observe_us(&m->hist[method], duration_us);
}

void ing_metrics_call(ing_metrics_t *m, const char *tenant, ing_call_outcome_t outcome,
                      int64_t duration_us)
{
    tenant_slot_t *t = tenant_slot(m, tenant);
    atomic_fetch_add(&t->calls[outcome], 1);
    if (duration_us >= 0)
        prom_observe_us(&t->hist, duration_us);
}

void ing_metrics_result_delivery(ing_metrics_t *m, int64_t delivery_us)
{
    prom_observe_us(&m->delivery, delivery_us);
}

void ing_metrics_stage(ing_metrics_t *m, ing_stage_t stage, int64_t us)
{
    prom_observe_us(&m->stage[stage], us);
}

void ing_metrics_published(ing_metrics_t *m, int ok)
{
    atomic_fetch_add(ok ? &m->published_ok : &m->published_failed, 1);
}

void ing_metrics_webhook(ing_metrics_t *m, ing_metrics_wh_outcome_t outcome, int64_t duration_us)
{
    atomic_fetch_add(&m->wh[outcome], 1);
    prom_observe_us(&m->wh_hist[outcome], duration_us);
}

/* The tools/call series of every tenant slot in use. */
static void render_calls(ing_metrics_t *m, util_buf_t *out)
{
    size_t n = atomic_load_explicit(&m->ntenants, memory_order_acquire);
    char tenant[2 * sizeof(m->tenants[0].name)], labels[sizeof(tenant) + 16];
    prom_head(out, "mcpq_tool_calls_total", "counter", "tools/call outcomes, by tenant.");
    for (size_t i = 0; i < n; i++) {
        tenant_slot_t *t = &m->tenants[i];
        prom_label_escape(t->name, tenant, sizeof(tenant));
        for (int o = 0; o < ING_CALL_COUNT; o++) {
            unsigned long long v = atomic_load(&t->calls[o]);
            if (v || i >= 2) /* a tenant's every outcome once it called; _none/_other when used */
                prom_line(out, "mcpq_tool_calls_total{tenant=\"%s\",outcome=\"%s\"} %llu\n", tenant,
                          outcome_names[o], v);
        }
    }
    prom_head(out, "mcpq_tool_call_duration_seconds", "histogram",
              "tools/call end to end at the ingress, request in to response queued, by tenant.");
    for (size_t i = 0; i < n; i++) {
        if (i < 2 && !prom_hist_count(&m->tenants[i].hist)) /* _none, _other: once used */
            continue;
        prom_label_escape(m->tenants[i].name, tenant, sizeof(tenant));
        snprintf(labels, sizeof(labels), "tenant=\"%s\"", tenant);
        prom_histogram(out, "mcpq_tool_call_duration_seconds", labels, &m->tenants[i].hist);
    }
    prom_head(out, "mcpq_result_delivery_seconds", "histogram",
              "From a worker's end of a job (its finished_us) to the response queued at this "
              "ingress (assumes NTP-synced clocks).");
    prom_histogram(out, "mcpq_result_delivery_seconds", "", &m->delivery);
    prom_histograms(out, "mcpq_call_stage_seconds",
                    "Where the time of a tools/call a worker answered goes, by stage "
                    "(docs/operations.md, Access log; cross-process stages assume synced clocks).",
                    "stage", ing_stages_names, m->stage, ING_STAGE_COUNT, 0);
}

/* The webhook series: attempts by outcome, their latency, the queue. */
static void render_webhooks(ing_metrics_t *m, util_buf_t *out)
{
    prom_line(out, "# HELP mcpq_webhook_attempts_total Webhook HTTP attempts by outcome (retry: "
                   "failed, another attempt scheduled).\n");
    prom_line(out, "# TYPE mcpq_webhook_attempts_total counter\n");
    for (int i = 0; i < ING_WH_COUNT; i++)
        prom_line(out, "mcpq_webhook_attempts_total{outcome=\"%s\"} %llu\n", wh_names[i],
                  atomic_load(&m->wh[i]));
    prom_histograms(out, "mcpq_webhook_delivery_seconds",
                    "How long one webhook HTTP attempt took, by outcome.", "outcome", wh_names,
                    m->wh_hist, ING_WH_COUNT, 0);
    long long queued = atomic_load(&m->wh_queued), due = atomic_load(&m->wh_due);
    if (queued >= 0) { /* left out until the dispatcher has looked once */
        prom_head(out, "mcpq_webhook_queue_deliveries", "gauge",
                  "Webhook deliveries waiting for an attempt (first or retry), fleet-wide, as "
                  "this ingress's dispatcher last saw them.");
        prom_line(out, "mcpq_webhook_queue_deliveries %lld\n", queued);
        prom_head(out, "mcpq_webhook_queue_due_deliveries", "gauge",
                  "Of those, deliveries whose attempt is due now (the dispatchers' backlog).");
        prom_line(out, "mcpq_webhook_queue_due_deliveries %lld\n", due);
    }
    long long running = atomic_load(&m->tasks_running), waiting = atomic_load(&m->tasks_waiting);
    if (running >= 0) {
        prom_head(out, "mcpq_tasks", "gauge",
                  "Tasks fleet-wide by state as this ingress last counted them: running (leased "
                  "to a worker) and waiting (queued for one).");
        prom_line(out, "mcpq_tasks{state=\"running\"} %lld\n", running);
        prom_line(out, "mcpq_tasks{state=\"waiting\"} %lld\n", waiting);
    }
}

/* The OAuth series, left out while no tenant uses OAuth (the service never counted keys). */
static void render_oauth(ing_metrics_t *m, util_buf_t *out)
{
    long long keys = atomic_load(&m->oauth_keys);
    if (keys < 0)
        return;
    prom_head(out, "mcpq_oauth_fetches_total", "counter",
              "Key fetches from OAuth authorization servers (metadata discovery and JWKS).");
    prom_line(out, "mcpq_oauth_fetches_total{result=\"ok\"} %llu\n",
              atomic_load(&m->oauth_fetch_ok));
    prom_line(out, "mcpq_oauth_fetches_total{result=\"error\"} %llu\n",
              atomic_load(&m->oauth_fetch_failed));
    prom_head(out, "mcpq_oauth_keys", "gauge",
              "Public keys known now, all trusted issuers together.");
    prom_line(out, "mcpq_oauth_keys %lld\n", keys);
    prom_head(out, "mcpq_oauth_introspection_total", "counter",
              "Token introspection: cache hits and misses, and the answers of requests.");
    for (int i = 0; i < ING_OI_COUNT; i++)
        prom_line(out, "mcpq_oauth_introspection_total{result=\"%s\"} %llu\n", oi_names[i],
                  atomic_load(&m->oauth_oi[i]));
}

/* Pinned tool definitions (pin.h). */
static void render_pin(ing_metrics_t *m, util_buf_t *out, const ing_metrics_now_t *now)
{
    prom_head(out, "mcpq_tools_quarantined_total", "counter",
              "Federated tools this replica quarantined because their definition was not the "
              "approved one (federate.pin, docs/security.md).");
    prom_line(out, "mcpq_tools_quarantined_total %llu\n", atomic_load(&m->quarantined));
    prom_head(out, "mcpq_tools_quarantined", "gauge",
              "Tools quarantined now in the registry this replica serves, waiting for an "
              "operator's approval.");
    prom_line(out, "mcpq_tools_quarantined %zu\n", now->quarantined);
}

int ing_metrics_render(ing_metrics_t *m, util_buf_t *out, const ing_metrics_now_t *now)
{
    prom_line(out, "# HELP mcpq_http_requests_total HTTP requests by MCP method and status.\n");
    prom_line(out, "# TYPE mcpq_http_requests_total counter\n");
    for (int mi = 0; mi < ING_M_COUNT; mi++)
        for (size_t si = 0; si < NSTATUS; si++) {
            unsigned long long v = atomic_load(&m->requests[mi][si]);
            if (!v)
                continue;
            char st[16];
            if (si < NSTATUS - 1)
                snprintf(st, sizeof(st), "%d", statuses[si]);
            else
                snprintf(st, sizeof(st), "other");
            prom_line(out, "mcpq_http_requests_total{method=\"%s\",status=\"%s\"} %llu\n",
                      method_names[mi], st, v);
        }
    prom_histograms(out, "mcpq_request_duration_seconds",
                    "Time from request (its first callback) to response queued, by MCP method "
                    "(the methods this ingress answered).",
                    "method", method_names, m->hist, ING_M_COUNT, 1);
    render_calls(m, out);
    prom_line(out, "# HELP mcpq_jobs_published_total Jobs handed to Kafka.\n");
    prom_line(out, "# TYPE mcpq_jobs_published_total counter\n");
    prom_line(out, "mcpq_jobs_published_total{result=\"ok\"} %llu\n",
              atomic_load(&m->published_ok));
    prom_line(out, "mcpq_jobs_published_total{result=\"failed\"} %llu\n",
              atomic_load(&m->published_failed));
    render_webhooks(m, out);
    prom_line(out, "# HELP mcpq_inflight_calls tools/call requests waiting for a result.\n");
    prom_line(out, "# TYPE mcpq_inflight_calls gauge\n");
    prom_line(out, "mcpq_inflight_calls %zu\n", now->inflight);
    prom_head(out, "mcpq_notification_streams", "gauge",
              "Open notification streams (GET /mcp streams and subscriptions/listen).");
    prom_line(out, "mcpq_notification_streams %zu\n", now->listeners);
    render_oauth(m, out);
    otel_metrics_render(out); /* the span exporter's own series (otel.h) */
    prom_head(out, "mcpq_config_reload_total", "counter",
              "Changes of the config file (MCPQ_CONFIG_WATCH_MS) this replica saw, by what they "
              "came to: applied here, already applied (by another replica), or refused.");
    for (int i = 0; i < ING_CFG_COUNT; i++)
        prom_line(out, "mcpq_config_reload_total{result=\"%s\"} %llu\n", cfg_names[i],
                  atomic_load(&m->cfg[i]));
    prom_head(out, "mcpq_config_refused", "gauge",
              "1 while the config file holds a change this replica refused (the registry is "
              "as it was before it), 0 once a change is applied or found applied.");
    prom_line(out, "mcpq_config_refused %d\n", atomic_load(&m->cfg_refused));
    render_pin(m, out, now);
    prom_line(out, "# HELP mcpq_dependency_up 1 while the dependency is reachable.\n");
    prom_line(out, "# TYPE mcpq_dependency_up gauge\n");
    prom_line(out, "mcpq_dependency_up{dependency=\"kafka\"} %d\n", now->kafka_up);
    prom_line(out, "mcpq_dependency_up{dependency=\"redis\"} %d\n", now->redis_up);
    prom_head(out, "mcpq_redis_pool_commands_total", "counter",
              "Redis work of the shared connection pool: waited, a connection taken by a thread "
              "that waits for its answer (the HTTP threads and the services on them; at least "
              "one round trip each); queued, a write handed to the pool's keeper thread.");
    prom_line(out, "mcpq_redis_pool_commands_total{how=\"waited\"} %llu\n", now->redis_takes);
    prom_line(out, "mcpq_redis_pool_commands_total{how=\"queued\"} %llu\n", now->redis_queued);
    return prom_process(out, "ingress", m->start_ms, MHD_get_version());
}
