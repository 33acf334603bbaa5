/*
 * test_mcp_methods.c - resources, resource templates, prompts and completions served by
 * executors on a worker (docs/executors.md "Methods", docs/protocol.md "Resources, prompts and
 * completion from a worker"): redis-server, mcpq-devbroker, one mcpq-ingress and one
 * mcpq-worker (separate processes, tests/fixture.c), a client speaking MCP over HTTP.
 *
 * An exec executor (a Python script reading the envelope on stdin) serves a resource, a
 * template, a prompt with arguments and its completions; the mcp executor relays the same
 * methods to the official TypeScript SDK 1.x upstream (tests/clients/sdk-upstream.mjs). Checked:
 * what the client reads, gets and completes (legacy and 2026-07-28 with ttlMs/cacheScope), a
 * prompt's missing required argument (-32602), an exec failure and an upstream's unknown
 * resource as clear JSON-RPC errors. Jobs produced straight to Kafka check what the worker
 * answers that no client request makes here: mcpq/catalog of the SDK upstream (every list
 * its capabilities announce), mcpq/catalog on an exec executor and an unknown method (error
 * records saying why).
 */
#include "check.h"
#include "names.h"
#include "fixture.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOKEN "sekrit-upstream-token-43"
#define META_V "\"" NAMES_META_PROTOCOL_VERSION "\":\"" NAMES_PROTO_MODERN "\""

static fx_stack_t fx;
static int port, sdk_port;

/* What the exec executor runs for every method: the envelope on stdin, text on stdout. */
static const char script[] =
    "import json, sys\n"
    "env = json.load(sys.stdin)\n"
    "m = env.get('method', 'tools/call')\n"
    "a = env['arguments']\n"
    "if m == 'resources/read':\n"
    "    if a['uri'].endswith('broken'):\n"
    "        sys.stderr.write('cannot read the source\\n')\n"
    "        sys.exit(3)\n"
    "    v = a.get('variables', {})\n"
    "    print('content of ' + a['uri'] + (' topic=' + v['topic'] if 'topic' in v else ''))\n"
    "elif m == 'prompts/get':\n"
    "    p = a['arguments']\n"
    "    print('Greet ' + p['who'] + (' (' + p['style'] + ')' if 'style' in p else ''))\n"
    "elif m == 'completion/complete':\n"
    "    for s in ['formal', 'friendly', 'funny']:\n"
    "        if s.startswith(a['argument']['value']):\n"
    "            print(s)\n"
    "else:\n"
    "    print('a tool')\n";

static void write_config(const char *path, const char *script_path)
{
    char exec[512], mcp[512], cfg[8192];
    snprintf(exec, sizeof(exec), "{\"type\":\"exec\",\"argv\":[\"python3\",\"%s\"]}", script_path);
    snprintf(mcp, sizeof(mcp),
             "\"type\":\"mcp\",\"url\":\"http://127.0.0.1:%d/mcp\",\"headers\":{"
             "\"Authorization\":\"Bearer " TOKEN "\"}",
             sdk_port);
    snprintf(
        cfg, sizeof(cfg),
        "{\"tenants\":[{\"id\":\"m\",\"api_keys\":[{\"id\":\"k\",\"key\":\"mcp-key\"}]}],"
        "\"servers\":[{\"tenant\":\"m\",\"name\":\"default\"}],\"tools\":["
        /* exec */
        "{\"tenant\":\"m\",\"server\":\"default\",\"kind\":\"resource\",\"name\":\"exec_readme\","
        "\"published\":\"1\",\"versions\":[{\"version\":\"1\",\"uri\":\"docs://exec/readme\","
        "\"mimeType\":\"text/markdown\",\"ttl_ms\":30000,\"cache_scope\":\"public\","
        "\"timeout_ms\":20000,\"executor\":%s}]},"
        "{\"tenant\":\"m\",\"server\":\"default\",\"kind\":\"resource\",\"name\":\"exec_broken\","
        "\"published\":\"1\",\"versions\":[{\"version\":\"1\",\"uri\":\"docs://exec/broken\","
        "\"timeout_ms\":20000,\"executor\":%s}]},"
        "{\"tenant\":\"m\",\"server\":\"default\",\"kind\":\"resource_template\",\"name\":"
        "\"exec_notes\",\"published\":\"1\",\"versions\":[{\"version\":\"1\",\"uriTemplate\":"
        "\"notes://{topic}\",\"mimeType\":\"text/plain\",\"timeout_ms\":20000,\"executor\":%s}]},"
        "{\"tenant\":\"m\",\"server\":\"default\",\"kind\":\"prompt\",\"name\":\"exec_greet\","
        "\"published\":\"1\",\"versions\":[{\"version\":\"1\",\"description\":\"Greet someone\","
        "\"arguments\":[{\"name\":\"who\",\"required\":true},{\"name\":\"style\"}],"
        "\"timeout_ms\":20000,\"executor\":%s}]},"
        /* mcp, against the SDK upstream */
        "{\"tenant\":\"m\",\"server\":\"default\",\"kind\":\"resource\",\"name\":\"sdk_readme\","
        "\"published\":\"1\",\"versions\":[{\"version\":\"1\",\"uri\":\"sdk://readme\","
        "\"timeout_ms\":20000,\"executor\":{%s}}]},"
        "{\"tenant\":\"m\",\"server\":\"default\",\"kind\":\"resource\",\"name\":\"sdk_missing\","
        "\"published\":\"1\",\"versions\":[{\"version\":\"1\",\"uri\":\"sdk://missing\","
        "\"timeout_ms\":20000,\"executor\":{%s}}]},"
        "{\"tenant\":\"m\",\"server\":\"default\",\"kind\":\"resource_template\",\"name\":"
        "\"sdk_notes\",\"published\":\"1\",\"versions\":[{\"version\":\"1\",\"uriTemplate\":"
        "\"sdk://notes/{topic}\",\"timeout_ms\":20000,\"executor\":{%s}}]},"
        "{\"tenant\":\"m\",\"server\":\"default\",\"kind\":\"prompt\",\"name\":\"sdk_greet\","
        "\"published\":\"1\",\"versions\":[{\"version\":\"1\",\"arguments\":[{\"name\":\"name\","
        "\"required\":true},{\"name\":\"style\"}],\"timeout_ms\":20000,\"executor\":{%s,"
        "\"prompt\":\"greet\"}}]}"
        "]}",
        exec, exec, exec, exec, mcp, mcp, mcp, mcp);
    fx_write_file(path, cfg, 0600);
}

/* POSTs one request of method with params (JSON text) to /mcp; modern: 2026-07-28 headers
 * and _meta (name: Mcp-Name, or NULL). Returns the parsed answer (HTTP 200 expected). */
static cJSON *request(const char *method, const char *params, int modern, const char *name)
{
    char url[128], body[4096], mh[128], nh[600];
    fx_reply_t r;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    size_t n = strlen(params);
    CHECK(n >= 2 && params[n - 1] == '}');
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"%s\",\"params\":%.*s%s}", method,
             (int)n - 1, params,
             modern ? (n > 2 ? ",\"_meta\":{" META_V "}}" : "\"_meta\":{" META_V "}}") : "}");
    snprintf(mh, sizeof(mh), "Mcp-Method: %s", method);
    snprintf(nh, sizeof(nh), "Mcp-Name: %s", name ? name : "");
    const char *legacy_h[] = {"Authorization: Bearer mcp-key", NULL};
    const char *modern_h[] = {"Authorization: Bearer mcp-key",
                              "MCP-Protocol-Version: " NAMES_PROTO_MODERN, mh, name ? nh : NULL,
                              NULL};
    CHECK_INT_EQ(fx_http_post(url, modern ? modern_h : legacy_h, body, &r), 0);
    if (r.status != 200)
        fprintf(stderr, "HTTP %ld: %s\n", r.status, r.body);
    CHECK_INT_EQ(r.status, 200);
    cJSON *j = cJSON_Parse(r.body);
    CHECK(j != NULL);
    return j;
}

/* The member at a dotted path ("result.contents.0.text": digits index arrays), or NULL. */
static const cJSON *at(const cJSON *j, const char *path)
{
    const cJSON *x = j;
    while (x && *path) {
        char part[64];
        size_t n = strcspn(path, ".");
        CHECK(n < sizeof(part));
        memcpy(part, path, n);
        part[n] = '\0';
        path += n + (path[n] == '.');
        x = part[0] >= '0' && part[0] <= '9' ? cJSON_GetArrayItem(x, (int)strtol(part, NULL, 10))
                                             : cJSON_GetObjectItemCaseSensitive(x, part);
    }
    return x;
}

static const char *str(const cJSON *j, const char *path)
{
    const char *s = cJSON_GetStringValue(at(j, path));
    return s ? s : "(none)";
}

static double num(const cJSON *j, const char *path)
{
    const cJSON *x = at(j, path);
    CHECK(cJSON_IsNumber(x));
    return x->valuedouble;
}

static void show_if_error(const cJSON *j)
{
    if (at(j, "error")) {
        char *s = cJSON_PrintUnformatted(j);
        fprintf(stderr, "answer: %s\n", s);
        free(s);
    }
}

static void test_exec_resources(void)
{
    cJSON *j = request("resources/read", "{\"uri\":\"docs://exec/readme\"}", 0, NULL);
    show_if_error(j);
    CHECK_STR_EQ(str(j, "result.contents.0.uri"), "docs://exec/readme");
    CHECK_STR_EQ(str(j, "result.contents.0.mimeType"), "text/markdown");
    CHECK_STR_EQ(str(j, "result.contents.0.text"), "content of docs://exec/readme");
    CHECK(at(j, "result.ttlMs") == NULL); /* a 2026-07-28 member only */
    cJSON_Delete(j);

    j = request("resources/read", "{\"uri\":\"docs://exec/readme\"}", 1, "docs://exec/readme");
    show_if_error(j);
    CHECK_STR_EQ(str(j, "result.contents.0.text"), "content of docs://exec/readme");
    CHECK_STR_EQ(str(j, "result.resultType"), "complete");
    CHECK_INT_EQ(num(j, "result.ttlMs"), 30000);
    CHECK_STR_EQ(str(j, "result.cacheScope"), "public");
    cJSON_Delete(j);

    j = request("resources/read", "{\"uri\":\"notes://kafka\"}", 0, NULL);
    show_if_error(j);
    CHECK_STR_EQ(str(j, "result.contents.0.uri"), "notes://kafka");
    CHECK_STR_EQ(str(j, "result.contents.0.mimeType"), "text/plain");
    CHECK_STR_EQ(str(j, "result.contents.0.text"), "content of notes://kafka topic=kafka");
    cJSON_Delete(j);

    j = request("resources/read", "{\"uri\":\"docs://exec/broken\"}", 0, NULL);
    CHECK_INT_EQ(num(j, "error.code"), -32603);
    CHECK_CONTAINS(str(j, "error.message"), "cannot read the source");
    CHECK(at(j, "result") == NULL);
    cJSON_Delete(j);
    TEST_PASS("exec: a resource and a template read through a worker; a failure is -32603 with "
              "its text");
}

static void test_exec_prompt(void)
{
    cJSON *j = request("prompts/get",
                       "{\"name\":\"exec_greet\",\"arguments\":{\"who\":\"Ann\",\"style\":"
                       "\"formal\"}}",
                       0, NULL);
    show_if_error(j);
    CHECK_STR_EQ(str(j, "result.messages.0.role"), "user");
    CHECK_STR_EQ(str(j, "result.messages.0.content.type"), "text");
    CHECK_STR_EQ(str(j, "result.messages.0.content.text"), "Greet Ann (formal)");
    cJSON_Delete(j);

    j = request("prompts/get", "{\"name\":\"exec_greet\",\"arguments\":{\"style\":\"x\"}}", 0,
                NULL);
    CHECK_INT_EQ(num(j, "error.code"), -32602);
    CHECK_STR_EQ(str(j, "error.message"),
                 "Missing required argument \"who\" of prompt \"exec_greet\"");
    cJSON_Delete(j);

    j = request("completion/complete",
                "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"exec_greet\"},\"argument\":{"
                "\"name\":\"style\",\"value\":\"f\"}}",
                1, NULL);
    show_if_error(j);
    CHECK_INT_EQ(cJSON_GetArraySize(at(j, "result.completion.values")), 3);
    CHECK_STR_EQ(str(j, "result.completion.values.1"), "friendly");
    CHECK_INT_EQ(num(j, "result.completion.total"), 3);
    CHECK(cJSON_IsFalse(at(j, "result.completion.hasMore")));
    CHECK_STR_EQ(str(j, "result.resultType"), "complete");
    cJSON_Delete(j);
    TEST_PASS("exec: a prompt got with its arguments (a missing required one is -32602) and "
              "completed");
}

static void test_sdk(void)
{
    cJSON *j = request("resources/read", "{\"uri\":\"sdk://readme\"}", 0, NULL);
    show_if_error(j);
    CHECK_STR_EQ(str(j, "result.contents.0.text"), "# SDK readme");
    CHECK_STR_EQ(str(j, "result.contents.0.mimeType"), "text/markdown");
    cJSON_Delete(j);

    j = request("resources/read", "{\"uri\":\"sdk://notes/redis\"}", 1, "sdk://notes/redis");
    show_if_error(j);
    CHECK_STR_EQ(str(j, "result.contents.0.uri"), "sdk://notes/redis");
    CHECK_STR_EQ(str(j, "result.contents.0.text"), "notes on redis");
    CHECK_INT_EQ(num(j, "result.ttlMs"), 0);
    CHECK_STR_EQ(str(j, "result.cacheScope"), "private");
    cJSON_Delete(j);

    j = request("prompts/get",
                "{\"name\":\"sdk_greet\",\"arguments\":{\"name\":\"Bo\",\"style\":\"funny\"}}", 0,
                NULL);
    show_if_error(j);
    CHECK_STR_EQ(str(j, "result.description"), "A greeting");
    CHECK_STR_EQ(str(j, "result.messages.0.content.text"), "Greet Bo in a funny way");
    cJSON_Delete(j);

    j = request("completion/complete",
                "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"sdk_greet\"},\"argument\":{"
                "\"name\":\"style\",\"value\":\"fr\"}}",
                0, NULL);
    show_if_error(j);
    CHECK_INT_EQ(cJSON_GetArraySize(at(j, "result.completion.values")), 1);
    CHECK_STR_EQ(str(j, "result.completion.values.0"), "friendly");
    cJSON_Delete(j);

    j = request("completion/complete",
                "{\"ref\":{\"type\":\"ref/resource\",\"uri\":\"sdk://notes/{topic}\"},"
                "\"argument\":{\"name\":\"topic\",\"value\":\"k\"}}",
                0, NULL);
    show_if_error(j);
    CHECK_INT_EQ(cJSON_GetArraySize(at(j, "result.completion.values")), 2);
    CHECK_STR_EQ(str(j, "result.completion.values.0"), "kafka");
    CHECK_STR_EQ(str(j, "result.completion.values.1"), "kubernetes");
    cJSON_Delete(j);

    j = request("resources/read", "{\"uri\":\"sdk://missing\"}", 0, NULL);
    CHECK(at(j, "result") == NULL);
    CHECK(num(j, "error.code") != 0);
    CHECK_CONTAINS(str(j, "error.message"), "sdk://missing");
    cJSON_Delete(j);
    TEST_PASS("mcp executor: an SDK upstream's resource, template, prompt and completions "
              "relayed; its error passed on");
}

/* Produces a job envelope for method with arguments and executor (JSON text) to the jobs
 * topic and waits (40 s) for its result record in Redis. */
static cJSON *raw_job(const char *job_id, const char *method, const char *arguments,
                      const char *executor)
{
    char buf[2048], key[256];
    int n = snprintf(buf, sizeof(buf),
                     "{\"v\":1,\"job_id\":\"%s\",\"tenant\":\"m\",\"server\":\"default\","
                     "\"tool\":\"fed\",\"tool_version\":\"1\",\"method\":\"%s\","
                     "\"arguments\":%s,\"executor\":%s,\"mode\":\"sync\",\"timeout_ms\":30000,"
                     "\"created_ms\":%lld}",
                     job_id, method, arguments, executor, fx_now_ms());
    CHECK(n > 0 && (size_t)n < sizeof(buf));
    rd_kafka_t *producer = fx_kafka_new(&fx, NULL, NULL);
    CHECK_INT_EQ(rd_kafka_producev(producer, RD_KAFKA_V_TOPIC("mcpq.jobs"),
                                   RD_KAFKA_V_KEY(job_id, strlen(job_id)),
                                   RD_KAFKA_V_VALUE(buf, (size_t)n),
                                   RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                   RD_KAFKA_V_HEADER("job_id", job_id, -1), RD_KAFKA_V_END),
                 0);
    CHECK_INT_EQ(rd_kafka_flush(producer, 10000), 0);
    rd_kafka_destroy(producer);
    redisContext *r = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(r != NULL && !r->err);
    snprintf(key, sizeof(key), NAMES_KEY_RESULT "%s", job_id);
    cJSON *rec = NULL;
    for (long long end = fx_now_ms() + 40000; !rec && fx_now_ms() < end;) {
        redisReply *rep = redisCommand(r, "GET %s", key);
        CHECK(rep != NULL);
        if (rep->type == REDIS_REPLY_STRING)
            rec = cJSON_Parse(rep->str);
        freeReplyObject(rep);
        if (!rec)
            fx_sleep_ms(50);
    }
    redisFree(r);
    CHECK(rec != NULL);
    return rec;
}

static void test_worker_methods(int with_sdk)
{
    cJSON *rec =
        raw_job("j_unknown_method", "tools/list", "{}", "{\"type\":\"builtin\",\"name\":\"echo\"}");
    CHECK_STR_EQ(str(rec, "status"), "error");
    CHECK_CONTAINS(str(rec, "error.message"), "unknown method \"tools/list\"");
    cJSON_Delete(rec);
    rec =
        raw_job("j_catalog_exec", "mcpq/catalog", "{}", "{\"type\":\"builtin\",\"name\":\"echo\"}");
    CHECK_STR_EQ(str(rec, "status"), "error");
    CHECK_CONTAINS(str(rec, "error.message"), "mcpq/catalog needs the mcp executor");
    cJSON_Delete(rec);
    if (with_sdk) {
        char ex[256];
        snprintf(ex, sizeof(ex),
                 "{\"type\":\"mcp\",\"url\":\"http://127.0.0.1:%d/mcp\",\"headers\":{"
                 "\"Authorization\":\"Bearer " TOKEN "\"}}",
                 sdk_port);
        rec = raw_job("j_catalog_sdk", "mcpq/catalog", "{}", ex);
        if (at(rec, "error"))
            fprintf(stderr, "catalog: %s\n", str(rec, "error.message"));
        CHECK_STR_EQ(str(rec, "status"), "ok");
        CHECK_STR_EQ(str(rec, "result.serverInfo.name"), "sdk-upstream");
        CHECK(cJSON_IsObject(at(rec, "result.capabilities.resources")));
        CHECK_INT_EQ(cJSON_GetArraySize(at(rec, "result.tools")), 2);
        CHECK_STR_EQ(str(rec, "result.resources.0.uri"), "sdk://readme");
        CHECK_STR_EQ(str(rec, "result.resourceTemplates.0.uriTemplate"), "sdk://notes/{topic}");
        CHECK_STR_EQ(str(rec, "result.prompts.0.name"), "greet");
        CHECK_STR_EQ(str(rec, "result.prompts.0.arguments.0.name"), "name");
        cJSON_Delete(rec);
    }
    TEST_PASS("worker: an unknown method and a catalog without the mcp executor are error "
              "records; mcpq/catalog lists the SDK upstream");
}

/* Jobs for a stdio upstream, @modelcontextprotocol/server-everything run by the worker
 * (index_js): mcpq/catalog lists it once its first process has opened (the handshake's
 * capabilities), and a resources/read and a prompts/get of what it lists are relayed. */
static void test_stdio_methods(const char *index_js)
{
    char ex[1024];
    snprintf(ex, sizeof(ex), "{\"type\":\"mcp\",\"command\":\"node\",\"args\":[\"%s\",\"stdio\"]}",
             index_js);
    cJSON *rec = raw_job("j_catalog_stdio", "mcpq/catalog", "{}", ex);
    if (at(rec, "error"))
        fprintf(stderr, "catalog: %s\n", str(rec, "error.message"));
    CHECK_STR_EQ(str(rec, "status"), "ok");
    CHECK(cJSON_IsObject(at(rec, "result.serverInfo")));
    CHECK(cJSON_GetArraySize(at(rec, "result.tools")) > 0);
    CHECK(cJSON_GetArraySize(at(rec, "result.resources")) > 0);
    CHECK(cJSON_GetArraySize(at(rec, "result.prompts")) > 0);
    char args[600];
    snprintf(args, sizeof(args), "{\"uri\":\"%s\"}", str(rec, "result.resources.0.uri"));
    const char *prompt = NULL;
    const cJSON *p;
    cJSON_ArrayForEach(p, at(rec, "result.prompts"))
    {
        if (!cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(p, "arguments")))
            prompt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "name"));
    }
    CHECK(prompt != NULL);
    cJSON *read = raw_job("j_read_stdio", "resources/read", args, ex);
    CHECK_STR_EQ(str(read, "status"), "ok");
    CHECK(cJSON_GetArraySize(at(read, "result.contents")) > 0);
    CHECK_STR_EQ(str(read, "result.contents.0.uri"), str(rec, "result.resources.0.uri"));
    cJSON_Delete(read);
    snprintf(ex, sizeof(ex),
             "{\"type\":\"mcp\",\"command\":\"node\",\"args\":[\"%s\",\"stdio\"],\"prompt\":"
             "\"%s\"}",
             index_js, prompt);
    cJSON *got = raw_job("j_prompt_stdio", "prompts/get", "{\"name\":\"x\",\"arguments\":{}}", ex);
    CHECK_STR_EQ(str(got, "status"), "ok");
    CHECK(cJSON_GetArraySize(at(got, "result.messages")) > 0);
    cJSON_Delete(got);
    cJSON_Delete(rec);
    TEST_PASS("stdio upstream (server-everything): mcpq/catalog after its handshake, a resource "
              "read and a prompt got through the worker's process pool");
}

/* The official SDK upstream (tests/clients/sdk-upstream.mjs), when node and the npm packages
 * of tests/clients/install.sh are there; else 0. */
static pid_t sdk_start(char *deps, size_t size)
{
    pid_t pid = fx_sdk_upstream(&fx, sdk_port, TOKEN, deps, size);
    CHECK(pid >= 0);
    return pid;
}

int main(void)
{
    char cfg[300], spath[300], ilog[400], deps[500];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    sdk_port = fx_free_port();
    pid_t sdk = sdk_start(deps, sizeof(deps));
    snprintf(spath, sizeof(spath), "%s/methods.py", fx.dir);
    fx_write_file(spath, script, 0600);
    snprintf(cfg, sizeof(cfg), "%s/mcp.json", fx.dir);
    write_config(cfg, spath);
    port = fx_free_port();
    pid_t ing = fx_spawn_ingress(&fx, "ingress", port, cfg, NULL, ilog, sizeof(ilog));
    CHECK(ing > 0);
    /* No signing key on the worker: it takes the test's own unsigned records too. */
    const char *wenv[] = {"MCPQ_JOB_SIGNING_KEY=", NULL};
    pid_t w = fx_spawn_worker(&fx, "w1", wenv);
    CHECK(w > 0);

    test_exec_resources();
    test_exec_prompt();
    test_worker_methods(sdk > 0);
    char index_js[700];
    snprintf(index_js, sizeof(index_js),
             "%s/node_modules/@modelcontextprotocol/server-everything/dist/index.js", deps);
    if (sdk > 0 && access(index_js, R_OK) == 0)
        test_stdio_methods(index_js);
    else
        TEST_SKIP("stdio upstream: no %s (tests/clients/install.sh)", index_js);
    if (sdk > 0)
        test_sdk();
    else
        TEST_SKIP("official SDK upstream: no node or no npm packages in %s "
                  "(tests/clients/install.sh)",
                  deps);

    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
    CHECK_INT_EQ(fx_stop_pid(ing, 10000), 0);
    if (sdk > 0)
        fx_stop_pid(sdk, 5000);
    fx_stop(&fx);
    curl_global_cleanup();
    return TEST_EXIT();
}
