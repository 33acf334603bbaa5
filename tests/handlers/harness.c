/*
 * harness.c - handler tests without a socket (harness.h).
 */
#include "harness.h"

#include "admin.h"
#include "batch.h"
#include "check.h"
#include "mcp.h"
#include "pending.h"
#include "process.h"
#include "regstore.h"

#include "cfg.h"
#include "jobsig.h"
#include "log.h"
#include <curl/curl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, const char *err)
{
    fprintf(stderr, "harness: %s: %s\n", what, err);
    exit(1);
}

static void push(hx_t *h, const char *s)
{
    if (h->argc + 1 >= (int)(sizeof(h->argv) / sizeof(h->argv[0])))
        die("settings", "too many arguments");
    h->argv[h->argc++] = strdup(s);
    h->argv[h->argc] = NULL;
}

static void load_settings(hx_t *h, const char *const args[])
{
    snprintf(h->files_dir, sizeof(h->files_dir), "%s/files", h->fx.dir);
    const char *defaults[] = {
        "--redis-url", h->fx.redis_url, "--kafka-brokers", h->fx.brokers,          "--listen",
        "127.0.0.1:0", "--files-dir",   h->files_dir,      "--admin-token",        HX_ADMIN_TOKEN,
        "--log-level", "error",         "--public-url",    "http://127.0.0.1:8080"};
    push(h, "handler-test");
    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
        push(h, defaults[i]);
    for (size_t i = 0; args && args[i]; i++)
        push(h, args[i]);
    char err[512];
    if (settings_load(&h->set, SET_INGRESS, "handler-test", "", h->argc, h->argv, err,
                      sizeof(err)) != 0)
        die("settings", err);
    log_init("ingress", h->set.log_level);
}

static void apply_config(hx_t *h, const char *config)
{
    char err[512];
    cJSON *cfg = cfg_load_string(config, strlen(config), err, sizeof(err));
    if (!cfg)
        die("config", err);
    redisContext *c = kv_connect(h->ctx.kvt, 2000, err, sizeof(err));
    if (!c)
        die("redis", err);
    int applied = 0;
    ing_regstore_summary_t sum;
    if (ing_regstore_seed(c, cfg, 0, &applied, &sum, err, sizeof(err)) < 0)
        die("seed", err);
    redisFree(c);
    cJSON_Delete(cfg);
}

void hx_reload(hx_t *h)
{
    char err[512];
    redisContext *c = kv_connect(h->ctx.kvt, 2000, err, sizeof(err));
    if (!c)
        die("redis", err);
    ing_registry_t *reg = ing_registry_fetch(c, err, sizeof(err));
    redisFree(c);
    if (!reg)
        die("registry", err);
    pthread_mutex_lock(&h->ctx.reg_lock);
    ing_registry_t *old = h->ctx.reg;
    h->ctx.reg = reg;
    pthread_mutex_unlock(&h->ctx.reg_lock);
    ing_registry_unref(old);
}

void hx_start(hx_t *h, const char *config, const char *const args[])
{
    memset(h, 0, sizeof(*h));
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&h->fx, 2) < 0)
        die("stack", "fx_start failed");
    /* Jobs are signed with the stack's key, so a worker of fx_spawn_worker() runs them. */
    setenv("MCPQ_JOB_SIGNING_KEY", h->fx.job_key, 1);
    load_settings(h, args);
    char err[512];
    jobsig_keys_t keys;
    if (jobsig_keys_load(&keys, &h->set, err, sizeof(err)) < 0)
        die("job signing key", err);
    kv_target_t *kvt = kv_target_new(&h->set, err, sizeof(err));
    if (!kvt)
        die("redis target", err);
    int code = 0;
    ing_process_opts_t opts = {.keys = &keys};
    int rc = ing_process_open(&h->ctx, &h->set, kvt, &opts, &code, err, sizeof(err));
    jobsig_keys_cleanup(&keys);
    if (rc < 0)
        die("process", err);
    atomic_store(&h->ctx.redis_up, 1);
    apply_config(h, config);
    hx_reload(h);
    for (int i = 0; i < 200 && !ing_pending_healthy(h->ctx.pending); i++)
        fx_sleep_ms(10);
}

void hx_stop(hx_t *h)
{
    ing_process_close(&h->ctx);
    fx_stop(&h->fx);
    for (int i = 0; i < h->argc; i++)
        free(h->argv[i]);
    curl_global_cleanup();
}

void hx_ex_init(hx_t *h, hx_ex_t *e, const char *method, const char *uri, const char *body,
                int auth, const char *const headers[])
{
    memset(e, 0, sizeof(*e));
    size_t n = 0, max = sizeof(e->headers) / sizeof(e->headers[0]) - 1;
    for (size_t i = 0; auth && headers && headers[i] && headers[i + 1]; i += 2)
        if (strcasecmp(headers[i], "Authorization") == 0)
            auth = 0; /* the caller's credential instead */
    if (auth)
        e->headers[n++] = (ing_req_pair_t){"Authorization", "Bearer " HX_API_KEY};
    for (size_t i = 0; headers && headers[i] && headers[i + 1] && n < max; i += 2)
        e->headers[n++] = (ing_req_pair_t){headers[i], headers[i + 1]};
    e->synth.headers = e->headers;
    e->synth.args = e->args;
    if (ing_req_synthetic(&e->req, &h->ctx, method, uri, &e->synth, body, body ? strlen(body) : 0) <
        0)
        die("request", "out of memory");
}

void hx_ex_arg(hx_ex_t *e, const char *name, const char *value)
{
    size_t n = 0;
    while (e->args[n].name)
        n++;
    if (n + 1 < sizeof(e->args) / sizeof(e->args[0]))
        e->args[n] = (ing_req_pair_t){name, value};
}

void hx_ex_parse(hx_ex_t *e)
{
    cJSON_Delete(e->json);
    e->json = e->resp.body ? cJSON_Parse(e->resp.body) : NULL;
}

void hx_ex_free(hx_ex_t *e)
{
    if (e->req.has_call) {
        ing_pending_remove(e->req.ctx->pending, &e->req.call);
        e->req.has_call = 0;
    }
    if (e->req.batch) {
        ing_batch_free(e->req.batch, e->req.ctx->pending);
        e->req.batch = NULL;
    }
    ing_pending_release(&e->req.call);
    ing_req_release(&e->req);
    ing_resp_release(&e->resp);
    cJSON_Delete(e->json);
    e->json = NULL;
}

static int names(const char *const headers[], const char *name)
{
    for (size_t i = 0; headers && headers[i] && headers[i + 1]; i += 2)
        if (strcasecmp(headers[i], name) == 0)
            return 1;
    return 0;
}

void hx_mcp(hx_t *h, hx_ex_t *e, const char *server, const char *body, const char *const headers[])
{
    const char *all[48];
    size_t n = 0;
    all[n++] = "Content-Type";
    all[n++] = "application/json";
    if (!names(headers, "Accept")) {
        all[n++] = "Accept";
        all[n++] = "application/json, text/event-stream";
    }
    if (!names(headers, "MCP-Protocol-Version")) {
        all[n++] = "MCP-Protocol-Version";
        all[n++] = "2025-06-18";
    }
    for (size_t i = 0; headers && headers[i] && headers[i + 1] && n + 3 < 48; i += 2) {
        all[n++] = headers[i];
        all[n++] = headers[i + 1];
    }
    all[n] = NULL;
    char uri[160];
    snprintf(uri, sizeof(uri), "/mcp%s%s", server ? "/" : "", server ? server : "");
    hx_ex_init(h, e, "POST", uri, body, 1, all);
    e->parked = ing_mcp_post(&e->req, server, &e->resp);
    if (!e->parked)
        hx_ex_parse(e);
}

const char *const hx_eras[HX_NERAS] = {"2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"};

void hx_session(hx_t *h, const char *server, const char *v, const char *const hdrs[], char sid[80])
{
    char body[400];
    const char *all[16] = {"MCP-Protocol-Version", v};
    size_t n = 2;
    for (size_t i = 0; hdrs && hdrs[i] && n + 3 < 16; i++)
        all[n++] = hdrs[i];
    all[n] = NULL;
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
             "\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"hx\","
             "\"version\":\"1\"}}}",
             v);
    hx_ex_t e;
    hx_mcp(h, &e, server, body, all);
    CHECK_INT_EQ(e.resp.status, 200);
    CHECK(e.resp.session_id[0] != '\0');
    snprintf(sid, 80, "%s", e.resp.session_id);
    hx_ex_free(&e);
}

void hx_era_rpc(hx_t *h, hx_ex_t *e, const char *server, const char *v, const char *sid,
                const char *method, const char *name, const char *params, const char *const hdrs[])
{
    int modern = strcmp(v, hx_eras[HX_NERAS - 1]) == 0;
    size_t plen = strlen(params), blen = plen + strlen(method) + 200;
    char *body = malloc(blen);
    CHECK(body != NULL && params[0] == '{');
    if (modern)
        snprintf(body, blen,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\",\"params\":{\"_meta\":{"
                 "\"io.modelcontextprotocol/protocolVersion\":\"%s\"}%s%s}",
                 method, v, plen > 2 ? "," : "", params + 1);
    else
        snprintf(body, blen, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\",\"params\":%s}",
                 method, params);
    const char *all[24] = {"MCP-Protocol-Version", v};
    size_t n = 2;
    if (modern) {
        all[n++] = "Mcp-Method";
        all[n++] = method;
        if (name) {
            all[n++] = "Mcp-Name";
            all[n++] = name;
        }
    } else if (sid) {
        all[n++] = "Mcp-Session-Id";
        all[n++] = sid;
    }
    for (size_t i = 0; hdrs && hdrs[i] && n + 3 < 24; i++)
        all[n++] = hdrs[i];
    all[n] = NULL;
    hx_mcp(h, e, server, body, all);
    free(body);
}

int hx_drain(hx_t *h, ing_call_t *c, char **out)
{
    util_buf_t b;
    util_buf_init(&b, 1 << 20);
    char buf[512];
    int ended = 0;
    for (;;) {
        ssize_t n = ing_pending_read(h->ctx.pending, c, buf, sizeof(buf));
        if (n == MHD_CONTENT_READER_END_OF_STREAM) {
            ended = 1;
            break;
        }
        if (n == 0) /* parked again: nothing more now */
            break;
        CHECK(util_buf_append(&b, buf, (size_t)n) == 0);
    }
    CHECK(util_buf_append(&b, "", 1) == 0);
    *out = (char *)b.data;
    return ended;
}

int hx_mcp_wait(hx_t *h, hx_ex_t *e, int timeout_ms)
{
    ing_call_t *call = &e->req.call;
    if (!ing_pending_wait(h->ctx.pending, call, timeout_ms))
        return -1;
    if (ing_pending_take(h->ctx.pending, call) != ING_TAKE_JSON)
        return -1;
    e->resp.status = 200;
    if (e->req.batch) {
        int oom = 0;
        e->resp.body = ing_batch_response(e->req.batch, &oom);
    } else {
        e->resp.body = call->response;
        call->response = NULL;
    }
    e->req.has_call = 0;
    e->parked = 0;
    hx_ex_parse(e);
    return 0;
}

rd_kafka_t *hx_jobs_reader(hx_t *h, const char *group)
{
    rd_kafka_t *rk = fx_kafka_new(&h->fx, group, NULL);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(2);
    for (int32_t p = 0; p < 2; p++) /* hx_start's stack has two partitions */
        rd_kafka_topic_partition_list_add(parts, h->set.topic_jobs, p)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
    CHECK_INT_EQ(rd_kafka_assign(rk, parts), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(parts);
    return rk;
}

void hx_ex_query(hx_ex_t *e, char *path)
{
    char *q = strchr(path, '?');
    if (!q)
        return;
    *q = '\0';
    snprintf(e->query, sizeof(e->query), "%s", q + 1);
    char *save = NULL;
    for (char *kv = strtok_r(e->query, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        if (eq)
            *eq++ = '\0';
        hx_ex_arg(e, kv, eq ? eq : "");
    }
}

int hx_admin(hx_t *h, hx_ex_t *e, const char *method, const char *url, const char *body,
             const char *if_match)
{
    char path[512];
    snprintf(path, sizeof(path), "%s", url);
    const char *headers[] = {"Authorization",
                             "Bearer " HX_ADMIN_TOKEN,
                             "Content-Type",
                             "application/json",
                             if_match ? "If-Match" : NULL,
                             if_match,
                             NULL};
    hx_ex_init(h, e, method, url, body, 0, headers);
    hx_ex_query(e, path);
    ing_admin_api(&e->req, path, method, &e->resp);
    hx_ex_parse(e);
    return e->resp.status;
}

void hx_admin_expect(hx_t *h, const char *method, const char *url, const char *body,
                     const char *if_match, int status, const char *text)
{
    hx_ex_t e;
    int got = hx_admin(h, &e, method, url, body, if_match);
    if (got != status)
        fprintf(stderr, "%s %s: %s\n", method, url, e.resp.body ? e.resp.body : "(no body)");
    CHECK_INT_EQ(got, status);
    /* an error's message as written, or the body as sent (JSON escapes included) */
    const char *msg = hx_str(&e, "error");
    if (text && !(msg && strstr(msg, text)))
        CHECK_CONTAINS(e.resp.body, text);
    hx_ex_free(&e);
}

const char *hx_str(const hx_ex_t *e, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    const cJSON *o = e->json;
    char *save = NULL;
    for (char *p = strtok_r(buf, ".", &save); p && o; p = strtok_r(NULL, ".", &save))
        o = cJSON_IsArray(o) ? cJSON_GetArrayItem(o, atoi(p))
                             : cJSON_GetObjectItemCaseSensitive(o, p);
    return cJSON_GetStringValue(o);
}

int hx_rpc_code(const hx_ex_t *e)
{
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(e->json, "error");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
    return cJSON_IsNumber(code) ? (int)code->valuedouble : 0;
}

const char *hx_rpc_message(const hx_ex_t *e)
{
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(e->json, "error");
    const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
    return m ? m : "";
}

const cJSON *hx_rpc_result(const hx_ex_t *e)
{
    return cJSON_GetObjectItemCaseSensitive(e->json, "result");
}

void hx_task_call(hx_t *h, const char *tool, const char *args, const char *const hdrs[], char *id,
                  size_t size)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"%s\",\"arguments\":%s}}",
             tool, args);
    hx_ex_t e;
    hx_mcp(h, &e, NULL, body, hdrs);
    CHECK(!e.parked);
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "structuredContent");
    const char *tid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sc, "TaskId"));
    CHECK(tid != NULL && strlen(tid) == 36);
    snprintf(id, size, "%s", tid ? tid : "");
    hx_ex_free(&e);
}

kv_pool_t *hx_dead_kv(hx_t *h, kv_target_t **t)
{
    mcpq_settings_t s = h->set;
    s.redis_url = "redis://127.0.0.1:1";
    s.redis_sentinels = NULL;
    char err[256];
    if (!(*t = kv_target_new(&s, err, sizeof(err))))
        die("redis", err);
    kv_pool_t *p = kv_pool_new(*t, 500, 1);
    if (!p)
        die("redis", "out of memory");
    return p;
}

redisReply *hx_redis(hx_t *h, const char *fmt, ...)
{
    char err[256];
    redisContext *c = kv_connect(h->ctx.kvt, 2000, err, sizeof(err));
    if (!c)
        die("redis", err);
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

const char *hx_resp_header(const ing_resp_t *resp, const char *name)
{
    for (size_t i = 0; i < resp->nheaders; i++)
        if (strcmp(resp->headers[i].name, name) == 0)
            return resp->headers[i].value;
    return NULL;
}

char *hx_repo_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    CHECK(buf != NULL);
    CHECK_INT_EQ(fread(buf, 1, (size_t)n, f), n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}
