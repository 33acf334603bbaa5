#include "federate.h"

#include "err.h"
#include "log.h"
#include "mcpw.h"
#include "kv.h"
#include "metrics.h"
#include "pin.h"
#include "registry.h"
#include "regstore.h"
#include "sch.h"
#include "util.h"
#include "whq.h"

#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define FED_BODY_MAX (8u << 20)
#define FED_BACKOFF_MIN_MS 1000
#define FED_BACKOFF_MAX_MS 60000
#define FED_TICK_MS 100
#define FED_NAME_MAX 50

typedef struct fed_entry {
    const cJSON *server; /* in f->config */
    long long due_ms;    /* monotonic */
    long long backoff_ms;
    int failures; /* in a row; logged at the first */
} fed_entry_t;

struct ing_federate {
    const mcpq_settings_t *set;
    kv_target_t *kvt;
    kv_pool_t *kv; /* tool.changed events (whq.h) */
    ing_metrics_t *metrics;
    cJSON *config; /* a copy: servers and tools */
    fed_entry_t *entries;
    size_t n;
    pthread_t thread;
    volatile sig_atomic_t stop;
};

/* ---- the tool documents ---- */

static int name_valid(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > FED_NAME_MAX)
        return 0;
    if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '.' || *s == '-'))
            return 0;
    return 1;
}

static int config_has_tool(const cJSON *tools, const char *tenant, const char *name)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, tools)
    {
        const char *tt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "tenant"));
        const char *tn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
        if (tt && tn && strcmp(tt, tenant) == 0 && strcmp(tn, name) == 0)
            return 1;
    }
    return 0;
}

static void skip(const char *tenant, const char *server, const char *tool, const char *why)
{
    log_event(LOG_WARN, "federation: upstream tool skipped", "tenant", tenant, "server", server,
              "tool", tool, "reason", why, (char *)NULL);
}

/* The tool document of upstream tool ut (upstream name un) served as name on server: one
 * published version "1" whose executor calls the upstream (executor type mcp). */
static cJSON *federated_tool(const cJSON *server, const cJSON *ut, const char *name, const char *un)
{
    const char *tenant = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(server, "tenant"));
    const char *sname = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(server, "name"));
    const cJSON *fed = cJSON_GetObjectItemCaseSensitive(server, "federate");
    const char *url = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fed, "url"));
    const cJSON *headers = cJSON_GetObjectItemCaseSensitive(fed, "headers");
    const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(fed, "timeout_ms");
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "tenant", tenant);
    cJSON_AddStringToObject(t, "server", sname);
    cJSON_AddStringToObject(t, "name", name);
    cJSON_AddStringToObject(t, "published", "1");
    cJSON *v = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(t, "versions"), v);
    cJSON_AddStringToObject(v, "version", "1");
    static const char *const copy[] = {"title", "description", "inputSchema", "outputSchema",
                                       "annotations"};
    for (size_t i = 0; i < sizeof(copy) / sizeof(copy[0]); i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(ut, copy[i]);
        if (x)
            cJSON_AddItemToObject(v, copy[i], cJSON_Duplicate(x, 1));
    }
    if (cJSON_IsNumber(timeout))
        cJSON_AddNumberToObject(v, "timeout_ms", timeout->valuedouble);
    cJSON_AddStringToObject(v, "mode", "sync");
    cJSON *ex = cJSON_AddObjectToObject(v, "executor");
    cJSON_AddStringToObject(ex, "type", "mcp");
    cJSON_AddStringToObject(ex, "url", url);
    cJSON_AddStringToObject(ex, "tool", un);
    if (headers)
        cJSON_AddItemToObject(ex, "headers", cJSON_Duplicate(headers, 1));
    return t;
}

cJSON *ing_federate_tools(const cJSON *server, const cJSON *upstream_tools,
                          const cJSON *config_tools)
{
    const char *tenant = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(server, "tenant"));
    const char *sname = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(server, "name"));
    const cJSON *fed = cJSON_GetObjectItemCaseSensitive(server, "federate");
    const char *url = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fed, "url"));
    const char *prefix = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fed, "prefix"));
    char defprefix[80], name[160], msg[512];
    if (!tenant || !sname || !url)
        return NULL;
    if (!prefix) {
        snprintf(defprefix, sizeof(defprefix), "%s_", sname);
        prefix = defprefix;
    }
    cJSON *out = cJSON_CreateArray();
    if (!out)
        return NULL;
    const cJSON *ut;
    cJSON_ArrayForEach(ut, upstream_tools)
    {
        const char *un = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ut, "name"));
        if (!un) {
            skip(tenant, sname, "", "no name");
            continue;
        }
        int n = snprintf(name, sizeof(name), "%s%s", prefix, un);
        if (n < 0 || (size_t)n >= sizeof(name) || !name_valid(name)) {
            skip(tenant, sname, un,
                 "not a valid tool name with the prefix (1-50 of "
                 "[A-Za-z0-9_.-], a letter first)");
            continue;
        }
        if (config_has_tool(config_tools, tenant, name) || config_has_tool(out, tenant, name)) {
            skip(tenant, sname, un, "the tenant already has a tool of that name");
            continue;
        }
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(ut, "inputSchema");
        const cJSON *os = cJSON_GetObjectItemCaseSensitive(ut, "outputSchema");
        if (!cJSON_IsObject(in) || sch_schema_check(in, "inputSchema", msg, sizeof(msg)) != 0 ||
            (os && sch_schema_check(os, "outputSchema", msg, sizeof(msg)) != 0)) {
            skip(tenant, sname, un, "a schema the gateway cannot use");
            continue;
        }
        cJSON_AddItemToArray(out, federated_tool(server, ut, name, un));
    }
    return out;
}

/* ---- the blocking MCP client ---- */

typedef struct fed_conn {
    const char *url;
    const cJSON *headers;
    int modern;
    const char *version; /* legacy */
    char session[256];
    long id;
    char host[300];
} fed_conn_t;

typedef struct fed_resp {
    long status;
    char ctype[128];
    util_buf_t body;
    char session[256];
} fed_resp_t;

static size_t write_cb(char *p, size_t size, size_t n, void *arg)
{
    fed_resp_t *r = arg;
    return util_buf_append(&r->body, p, size * n) < 0 ? 0 : size * n;
}

static size_t header_cb(char *buf, size_t size, size_t n, void *arg)
{
    fed_resp_t *r = arg;
    mcpw_session_header(buf, size * n, r->session, sizeof(r->session));
    return size * n;
}

static int add_header(struct curl_slist **l, const char *name, const char *value)
{
    char line[8192];
    int n = snprintf(line, sizeof(line), "%s: %s", name, value);
    if (n < 0 || (size_t)n >= sizeof(line))
        return MCPQ_ETOOBIG;
    struct curl_slist *x = curl_slist_append(*l, line);
    if (!x)
        return MCPQ_ENOMEM;
    *l = x;
    return 0;
}

/* The JSON-RPC message (params taken over; id < 0: a notification), as text to free with
 * cJSON_free, or NULL. A 2026-07-28 request (modern_step) names its version in params._meta. */
static char *fed_message(long id, int modern_step, const char *method, cJSON *params)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "jsonrpc", "2.0");
    if (id >= 0)
        cJSON_AddNumberToObject(o, "id", (double)id);
    cJSON_AddStringToObject(o, "method", method);
    if (modern_step) {
        if (!params)
            params = cJSON_CreateObject();
        cJSON_AddStringToObject(cJSON_AddObjectToObject(params, "_meta"), MCPW_META_VERSION,
                                MCPW_MODERN_VERSION);
    }
    if (params)
        cJSON_AddItemToObject(o, "params", params);
    char *body = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return body;
}

/* The request headers on *h: content negotiation, the protocol version, the session or the
 * method (2026-07-28), and the server's configured headers but the reserved ones. 0 or
 * MCPQ_ENOMEM. */
static int fed_headers(const fed_conn_t *c, int modern_step, const char *method,
                       struct curl_slist **h)
{
    int rc = add_header(h, "Content-Type", "application/json");
    if (!rc)
        rc = add_header(h, "Accept", "application/json, text/event-stream");
    const char *version = modern_step ? MCPW_MODERN_VERSION : c->version;
    if (!rc && version)
        rc = add_header(h, "MCP-Protocol-Version", version);
    if (!rc && modern_step)
        rc = add_header(h, "Mcp-Method", method);
    if (!rc && !modern_step && c->session[0])
        rc = add_header(h, "Mcp-Session-Id", c->session);
    if (cJSON_IsObject(c->headers))
        for (const cJSON *it = c->headers->child; it && !rc; it = it->next)
            if (cJSON_IsString(it) && !mcpw_header_reserved(it->string))
                rc = add_header(h, it->string, it->valuestring);
    return rc;
}

/* POSTs one JSON-RPC message (params taken over; id < 0: a notification). modern_step: the
 * request is sent as 2026-07-28. The response with the id lands in *out (may be NULL). 0 or
 * a negative code with why filled. */
static int fed_post(fed_conn_t *c, int modern_step, const char *method, cJSON *params, cJSON **out,
                    long *status, char *why, size_t why_size)
{
    long id = out ? ++c->id : -1;
    char *body = fed_message(id, modern_step, method, params);
    struct curl_slist *h = curl_slist_append(NULL, "Expect:");
    int rc = body && h ? 0 : MCPQ_ENOMEM;
    if (!rc)
        rc = fed_headers(c, modern_step, method, &h);
    fed_resp_t r = {0};
    util_buf_init(&r.body, FED_BODY_MAX);
    CURL *e = rc ? NULL : curl_easy_init();
    if (!rc && !e)
        rc = MCPQ_ENOMEM;
    if (rc) {
        snprintf(why, why_size, "cannot build the request");
        goto out;
    }
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(e, CURLOPT_URL, c->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "mcpq-ingress");
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)FED_REQUEST_TIMEOUT_MS);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    CURLcode cc = curl_easy_perform(e);
    if (cc != CURLE_OK) {
        snprintf(why, why_size, "%s: %s", method, errbuf[0] ? errbuf : curl_easy_strerror(cc));
        rc = MCPQ_EUNAVAIL;
        goto out;
    }
    char *ct = NULL;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
    curl_easy_getinfo(e, CURLINFO_CONTENT_TYPE, &ct);
    if (r.session[0])
        snprintf(c->session, sizeof(c->session), "%s", r.session);
    if (out)
        *out = mcpw_response(ct, r.body.data, r.body.len, id, NULL, NULL);
out:
    curl_easy_cleanup(e);
    curl_slist_free_all(h);
    cJSON_free(body);
    util_buf_cleanup(&r.body);
    return rc;
}

/* The upstream's tools (every page) as one new array, or NULL with why filled. */
static cJSON *fed_list(fed_conn_t *c, char *why, size_t why_size)
{
    cJSON *resp = NULL, *all = NULL;
    long status = 0;
    if (fed_post(c, 1, "server/discover", NULL, &resp, &status, why, why_size) < 0)
        return NULL;
    c->modern = mcpw_discover_modern(status, resp);
    cJSON_Delete(resp);
    resp = NULL;
    if (!c->modern) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "protocolVersion", MCPW_LEGACY_VERSION);
        cJSON_AddObjectToObject(p, "capabilities");
        cJSON *ci = cJSON_AddObjectToObject(p, "clientInfo");
        cJSON_AddStringToObject(ci, "name", "mcpq-ingress");
        cJSON_AddStringToObject(ci, "version", "1.0.0");
        c->session[0] = '\0';
        if (fed_post(c, 0, "initialize", p, &resp, &status, why, why_size) < 0)
            return NULL;
        c->version = mcpw_legacy_version(resp);
        cJSON_Delete(resp);
        resp = NULL;
        if (!c->version) {
            snprintf(why, why_size, "initialize failed (HTTP %ld)", status);
            return NULL;
        }
        if (fed_post(c, 0, "notifications/initialized", NULL, NULL, &status, why, why_size) < 0)
            return NULL;
    }
    all = cJSON_CreateArray();
    char cursor[1024] = "";
    for (int page = 0; page < FED_MAX_PAGES; page++) {
        cJSON *p = cJSON_CreateObject();
        if (cursor[0])
            cJSON_AddStringToObject(p, "cursor", cursor);
        if (fed_post(c, c->modern, "tools/list", p, &resp, &status, why, why_size) < 0)
            goto fail;
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(resp, "result");
        const cJSON *tools = cJSON_GetObjectItemCaseSensitive(res, "tools");
        if (!cJSON_IsArray(tools)) {
            const char *em = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(resp, "error"), "message"));
            snprintf(why, why_size, "tools/list failed (HTTP %ld%s%.200s)", status, em ? ": " : "",
                     em ? em : "");
            goto fail;
        }
        const cJSON *t;
        cJSON_ArrayForEach(t, tools) cJSON_AddItemToArray(all, cJSON_Duplicate(t, 1));
        const char *next =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "nextCursor"));
        if (!next || !next[0] || strlen(next) >= sizeof(cursor)) {
            cJSON_Delete(resp);
            return all;
        }
        snprintf(cursor, sizeof(cursor), "%s", next);
        cJSON_Delete(resp);
        resp = NULL;
    }
    snprintf(why, why_size, "tools/list has more than %d pages", FED_MAX_PAGES);
fail:
    cJSON_Delete(resp);
    cJSON_Delete(all);
    return NULL;
}

/* ---- pinned definitions (pin.h) ---- */

/* What the import of one server found, collected by the regstore hook in the attempt that
 * committed. */
typedef struct fed_pin {
    int pin; /* the server's federate.pin */
    char now[32];
    cJSON *events; /* [{tool, old, new, reason, changed, quarantined, restored}] */
} fed_pin_t;

static void pin_begin(void *arg)
{
    fed_pin_t *p = arg;
    cJSON_Delete(p->events);
    p->events = cJSON_CreateArray();
}

/* The one place an imported tool is written: pin.h's check on the stored and the fresh
 * document; a transition is noted for after the commit. */
static cJSON *pin_tool(void *arg, const cJSON *stored, cJSON *fresh)
{
    fed_pin_t *p = arg;
    ing_pin_change_t chg;
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fresh, "name"));
    char tool[64];
    snprintf(tool, sizeof(tool), "%s", name ? name : "");
    cJSON *out = ing_pin_refresh(stored, fresh, p->pin, p->now, &chg);
    if (out && ((chg.quarantined && chg.newly) || chg.restored)) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "tool", tool);
        cJSON_AddStringToObject(e, "old_sha256", chg.old_sha);
        cJSON_AddStringToObject(e, "new_sha256", chg.new_sha);
        cJSON_AddBoolToObject(e, "quarantined", chg.quarantined);
        if (chg.reason)
            cJSON_AddStringToObject(e, "reason", chg.reason);
        if (chg.changed) {
            cJSON_AddItemToObject(e, "changed", chg.changed);
            chg.changed = NULL;
        }
        cJSON_AddItemToArray(p->events, e);
    }
    ing_pin_change_cleanup(&chg);
    return out;
}

static const char *s_of(const cJSON *o, const char *k)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
    return v ? v : "";
}

/* After a committed import: each tool newly quarantined is counted, logged and sent to the
 * tenant's webhooks as tool.changed; each restored one is logged. */
static void pin_report(ing_federate_t *f, const char *tenant, const char *server,
                       const fed_pin_t *p)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, p->events)
    {
        const char *tool = s_of(e, "tool");
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "quarantined"))) {
            log_event(LOG_INFO, "federation: tool definition is the approved one again", "tenant",
                      tenant, "server", server, "tool", tool, "sha256", s_of(e, "new_sha256"),
                      (char *)NULL);
            continue;
        }
        const cJSON *changed = cJSON_GetObjectItemCaseSensitive(e, "changed");
        char *what = cJSON_PrintUnformatted(changed);
        log_event(LOG_WARN,
                  "federation: tool quarantined: its definition is not the approved one (approve "
                  "it through the admin API)",
                  "tenant", tenant, "server", server, "tool", tool, "reason", s_of(e, "reason"),
                  "old_sha256", s_of(e, "old_sha256"), "new_sha256", s_of(e, "new_sha256"),
                  "changed", what ? what : "[]", (char *)NULL);
        cJSON_free(what);
        ing_metrics_tool_quarantined(f->metrics);
        cJSON *data = cJSON_CreateObject();
        cJSON_AddStringToObject(data, "tenant", tenant);
        cJSON_AddStringToObject(data, "server", server);
        cJSON_AddStringToObject(data, "tool", tool);
        cJSON_AddStringToObject(data, "reason", s_of(e, "reason"));
        if (*s_of(e, "old_sha256"))
            cJSON_AddStringToObject(data, "old_sha256", s_of(e, "old_sha256"));
        else
            cJSON_AddNullToObject(data, "old_sha256");
        cJSON_AddStringToObject(data, "new_sha256", s_of(e, "new_sha256"));
        cJSON_AddItemToObject(data, "changed",
                              changed ? cJSON_Duplicate(changed, 1) : cJSON_CreateArray());
        char *json = cJSON_PrintUnformatted(data), err[256];
        cJSON_Delete(data);
        if (f->kv && json &&
            whq_event(f->kv, tenant, WHQ_EVENT_TOOL_CHANGED, "", json, err, sizeof(err)) < 0)
            log_event(LOG_WARN, "federation: cannot queue the tool.changed event", "tenant", tenant,
                      "tool", tool, "error", err, (char *)NULL);
        cJSON_free(json);
    }
}

/* One import of e; 0 or a negative code (logged). */
static int fed_import(ing_federate_t *f, fed_entry_t *e, redisContext **rc)
{
    const cJSON *fed = cJSON_GetObjectItemCaseSensitive(e->server, "federate");
    const char *tenant =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e->server, "tenant"));
    const char *sname = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e->server, "name"));
    fed_conn_t c = {
        .url = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fed, "url")),
        .headers = cJSON_GetObjectItemCaseSensitive(fed, "headers"),
    };
    util_url_host(c.url, c.host, sizeof(c.host));
    char why[512] = "", err[256];
    cJSON *up = fed_list(&c, why, sizeof(why));
    if (!up) {
        if (!e->failures++)
            log_event(LOG_WARN, "federation: cannot list the upstream's tools (will retry)",
                      "tenant", tenant, "server", sname, "upstream", c.host, "error", why,
                      (char *)NULL);
        return MCPQ_EUNAVAIL;
    }
    cJSON *tools =
        ing_federate_tools(e->server, up, cJSON_GetObjectItemCaseSensitive(f->config, "tools"));
    cJSON_Delete(up);
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(doc, "servers"), cJSON_Duplicate(e->server, 1));
    if (tools)
        cJSON_AddItemToObject(doc, "tools", tools);
    int rcode = 0;
    if (!*rc)
        *rc = kv_connect(f->kvt, (int)f->set->redis_timeout_ms, err, sizeof(err));
    ing_regstore_summary_t sum;
    fed_pin_t pin = {.pin = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fed, "pin"))};
    ing_regstore_now(pin.now, sizeof(pin.now));
    ing_regstore_hook_t hook = {.begin = pin_begin, .tool = pin_tool, .arg = &pin};
    if (!*rc || ing_regstore_apply_hooked(*rc, doc, 0, &hook, &sum, err, sizeof(err)) < 0) {
        if (!e->failures++)
            log_event(LOG_WARN, "federation: cannot store the imported tools (will retry)",
                      "tenant", tenant, "server", sname, "error", err, (char *)NULL);
        redisFree(*rc);
        *rc = NULL;
        rcode = MCPQ_EUNAVAIL;
    } else {
        char n[24];
        snprintf(n, sizeof(n), "%d", cJSON_GetArraySize(tools));
        log_event(LOG_INFO, "federation: upstream tools imported", "tenant", tenant, "server",
                  sname, "upstream", c.host, "version", c.modern ? MCPW_MODERN_VERSION : c.version,
                  "tools", n, (char *)NULL);
        e->failures = 0;
        pin_report(f, tenant, sname, &pin);
    }
    cJSON_Delete(pin.events);
    cJSON_Delete(doc);
    return rcode;
}

static void *fed_thread(void *arg)
{
    ing_federate_t *f = arg;
    redisContext *rc = NULL;
    while (!f->stop) {
        long long now = (long long)util_mono_ms();
        for (size_t i = 0; i < f->n && !f->stop; i++) {
            fed_entry_t *e = &f->entries[i];
            if (e->due_ms > now)
                continue;
            if (fed_import(f, e, &rc) == 0) {
                e->backoff_ms = 0;
                e->due_ms = (long long)util_mono_ms() + f->set->federate_refresh_ms;
            } else {
                e->backoff_ms = e->backoff_ms ? e->backoff_ms * 2 : FED_BACKOFF_MIN_MS;
                if (e->backoff_ms > FED_BACKOFF_MAX_MS)
                    e->backoff_ms = FED_BACKOFF_MAX_MS;
                e->due_ms = (long long)util_mono_ms() + e->backoff_ms;
            }
        }
        usleep(FED_TICK_MS * 1000);
    }
    redisFree(rc);
    return NULL;
}

ing_federate_t *ing_federate_start(ing_ctx_t *ctx, const cJSON *config)
{
    size_t n = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(config, "servers"))
    {
        n += cJSON_GetObjectItemCaseSensitive(s, "federate") != NULL;
    }
    if (n == 0)
        return NULL;
    ing_federate_t *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->set = ctx->set;
    f->kvt = ctx->kvt;
    f->kv = ctx->kv;
    f->metrics = ctx->metrics;
    f->config = cJSON_CreateObject();
    f->entries = calloc(n, sizeof(*f->entries));
    if (!f->config || !f->entries)
        goto fail;
    cJSON_AddItemToObject(f->config, "servers",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(config, "servers"), 1));
    cJSON_AddItemToObject(f->config, "tools",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(config, "tools"), 1));
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(f->config, "servers"))
    {
        if (cJSON_GetObjectItemCaseSensitive(s, "federate"))
            f->entries[f->n++].server = s;
    }
    if (pthread_create(&f->thread, NULL, fed_thread, f) != 0) {
        log_event(LOG_ERROR, "federation: cannot start its thread", (char *)NULL);
        goto fail;
    }
    return f;
fail:
    cJSON_Delete(f->config);
    free(f->entries);
    free(f);
    return NULL;
}

void ing_federate_stop(ing_federate_t *f)
{
    if (!f)
        return;
    f->stop = 1;
    pthread_join(f->thread, NULL);
    cJSON_Delete(f->config);
    free(f->entries);
    free(f);
}
