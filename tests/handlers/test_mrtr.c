/*
 * Tests ingress/mcp/mrtr.c (2026-07-28 multi round-trip requests) through ing_mcp_post with
 * synthetic requests (tests/handlers/harness.h) against a real Redis. The worker's side is
 * written as the worker writes it (docs/internals.md, "Asking the client"): the question
 * `{mcpq}:ask:<job>` as ask_open.lua leaves it and the `input`, then `result`, entries on
 * this replica's reply stream. What a client sees: the InputRequiredResult (only what it
 * declared; the rest answered for the tool), the retry with inputResponses and requestState
 * resuming the same job (no new job) and ending with the tool's result, a second question
 * answering the retry again, missing keys asked again with a new state, unknown keys ignored,
 * a state refused (tampered, other arguments, other caller, inputResponses without a state),
 * a question gone (input_lost), an answer that fails its requestedSchema (question kept open),
 * resources/read through the same path, and the fleet key kept in Redis; Redis unreachable
 * (-32603 try again, the question kept open), a question of only undeclared requests or one no
 * requestState can be made for (answered for the tool), tasks/update's bad inputResponses.
 */
#include "check.h"
#include "harness.h"
#include "names.h"

#include "kv.h"
#include "pending.h"
#include "rstate.h"
#include "tasksapi.h"
#include "rpc.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define OTHER_KEY "other-key-0123456"
#define CAPS_META(CAPS)                                                                            \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":" CAPS "}"
#define ELICIT_META CAPS_META("{\"elicitation\":{}}")
#define ELICIT_REQ(MSG)                                                                            \
    "{\"method\":\"elicitation/create\",\"params\":{\"mode\":\"form\",\"message\":\"" MSG "\","    \
    "\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},"    \
    "\"required\":[\"name\"]}}}"
#define SAMPLE_REQ                                                                                 \
    "{\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[],\"maxTokens\":5}}"
#define ACCEPT(NAME) "{\"action\":\"accept\",\"content\":{\"name\":\"" NAME "\"}}"
#define RECORD(text)                                                                               \
    "{\"job_id\":\"x\",\"status\":\"ok\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":"    \
    "\"" text "\"}]}}"

#define ECHO "\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"}"

/* clang-format off */
static const char config[] =
    "{\"tenants\": ["
    "  {\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"},"
    "   {\"id\": \"k2\", \"key\": \"" OTHER_KEY "\"}]}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}],"
    " \"tools\": ["
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"echo\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"timeout_ms\": 60000,"
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"report\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"mode\": \"task\", \"timeout_ms\": 60000,"
    "    \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    HX_KIND_OBJ("prompt", "plan", "", "\"arguments\":[{\"name\":\"q\"}]," ECHO) ","
    HX_KIND_OBJ("resource", "doc", "", "\"uri\":\"mem://doc\"," ECHO) "]}";
/* clang-format on */

static hx_t h;

/* A 2026-07-28 request of method (name: its Mcp-Name) with params, as the caller of key. */
static void modern_as(hx_ex_t *e, const char *method, const char *name, const char *params,
                      const char *key)
{
    char authz[128];
    snprintf(authz, sizeof(authz), "Bearer %s", key);
    const char *hdrs[] = {"MCP-Protocol-Version",
                          "2026-07-28",
                          "Mcp-Method",
                          method,
                          "Authorization",
                          authz,
                          "Mcp-Name",
                          name,
                          NULL};
    size_t size = strlen(params) + 300;
    char *body = malloc(size);
    snprintf(body, size, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"%s\",\"params\":%s}", method,
             params);
    hx_mcp(&h, e, NULL, body, hdrs);
    free(body);
}

static void call_echo(hx_ex_t *e, const char *params)
{
    modern_as(e, "tools/call", "echo", params, HX_API_KEY);
}

/* The question n of job as ask_open.lua writes it, and its `input` entry on our stream. */
static void ask(const char *job, int n, const char *reqs, const char *method)
{
    char ns[16], exp[32];
    snprintf(ns, sizeof(ns), "%d", n);
    snprintf(exp, sizeof(exp), "%lld", (long long)util_now_ms() + 300000);
    redisReply *r = hx_redis(&h,
                             "HSET " NAMES_KEY_ASK "%s n %s worker w-test reqs %s tenant t owner "
                             "key:k session %s method %s task %s reply_to %s expires_ms %s",
                             job, ns, reqs, "", method, "", NAMES_KEY_REPLY "elsewhere", exp);
    CHECK(r && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    size_t size = strlen(reqs) + 100;
    char *data = malloc(size);
    snprintf(data, size, "{\"n\":%d,\"requests\":%s,\"expires_ms\":%s}", n, reqs, exp);
    r = hx_redis(&h, "XADD %s * job %s kind input data %s", h.ctx.reply_key, job, data);
    CHECK(r && r->type == REDIS_REPLY_STRING);
    freeReplyObject(r);
    free(data);
}

static void entry(const char *job, const char *kind, const char *data)
{
    redisReply *r =
        hx_redis(&h, "XADD %s * job %s kind %s data %s", h.ctx.reply_key, job, kind, data);
    CHECK(r && r->type == REDIS_REPLY_STRING);
    freeReplyObject(r);
}

/* A field of the question of job, or "" (malloc'd). */
static char *qfield(const char *job, const char *field)
{
    redisReply *r = hx_redis(&h, "HGET " NAMES_KEY_ASK "%s %s", job, field);
    CHECK(r != NULL);
    char *v = strdup(r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return v;
}

/* The params of a retry of echo (arguments args) with inputResponses resp and state. */
static char *retry_params(const char *args, const char *resp, const char *state)
{
    size_t size = strlen(args) + strlen(resp) + strlen(state) + 400;
    char *p = malloc(size);
    snprintf(p, size,
             "{\"name\":\"echo\",\"arguments\":%s,\"inputResponses\":%s,\"requestState\":\"%"
             "s\"," ELICIT_META "}",
             args, resp, state);
    return p;
}

/* Starts a call of echo and answers its question: the InputRequiredResult in e (JSON), the
 * job id into job, the state into state. */
static void first_round(hx_ex_t *e, const char *reqs, char job[64], char state[1100])
{
    call_echo(e, "{\"name\":\"echo\",\"arguments\":{\"x\":1}," ELICIT_META "}");
    CHECK(e->parked);
    snprintf(job, 64, "%s", e->req.call.job_id);
    ask(job, 1, reqs, "tools/call");
    CHECK_INT_EQ(hx_mcp_wait(&h, e, 20000), 0);
    CHECK_STR_EQ(hx_str(e, "result.resultType"), "input_required");
    const char *s = hx_str(e, "result.requestState");
    CHECK(s != NULL && strncmp(s, "v1.", 3) == 0 && strlen(s) < 1024);
    snprintf(state, 1100, "%s", s);
}

/* The job's result (a text) ends the waiting call e, which answers with it; e freed. */
static void finish(hx_ex_t *e, const char *job, const char *text)
{
    char rec[300];
    snprintf(rec, sizeof(rec),
             "{\"job_id\":\"x\",\"status\":\"ok\",\"result\":{\"content\":[{\"type\":"
             "\"text\",\"text\":\"%s\"}]}}",
             text);
    entry(job, "result", rec);
    CHECK_INT_EQ(hx_mcp_wait(&h, e, 20000), 0);
    CHECK_STR_EQ(hx_str(e, "result.content.0.text"), text);
    CHECK_STR_EQ(hx_str(e, "result.resultType"), "complete");
    hx_ex_free(e);
}

/* The retry that answers job's last question (responses, state): it waits on job, whose
 * result (a text) then answers it. */
static void last_round(const char *job, const char *responses, const char *state, const char *text)
{
    hx_ex_t r;
    char *p = retry_params("{\"x\":1}", responses, state);
    call_echo(&r, p);
    free(p);
    CHECK(r.parked);
    CHECK_STR_EQ(r.req.call.job_id, job);
    finish(&r, job, text);
}

static void test_round_trip(void)
{
    hx_ex_t e, r;
    char job[64], state[1100];
    first_round(&e, "{\"who\":" ELICIT_REQ("Your name?") "}", job, state);
    CHECK_STR_EQ(hx_str(&e, "result.inputRequests.who.method"), "elicitation/create");
    CHECK_STR_EQ(hx_str(&e, "result.inputRequests.who.params.message"), "Your name?");
    CHECK_INT_EQ(e.req.call.outcome, ING_CALL_OK);
    /* The call ended: its stream closing now is no cancellation (server.c cancels a 2026-07-28
     * call only when it was still waiting). */
    CHECK_INT_EQ(ing_pending_remove(h.ctx.pending, &e.req.call), 0);
    hx_ex_free(&e);
    redisReply *cx = hx_redis(&h, "EXISTS " NAMES_KEY_CANCEL "%s", job);
    CHECK(cx && cx->type == REDIS_REPLY_INTEGER && cx->integer == 0);
    freeReplyObject(cx);
    /* The retry (members in another order) resumes the job; an unknown key is ignored. */
    char *p = retry_params("{\"x\":1}", "{\"who\":" ACCEPT("Ada") ",\"stray\":{}}", state);
    call_echo(&r, p);
    free(p);
    if (!r.parked)
        fprintf(stderr, "retry answered: %s\n", r.resp.body ? r.resp.body : "(none)");
    CHECK(r.parked);
    CHECK_STR_EQ(r.req.call.job_id, job);
    char *a = qfield(job, "a:who"), *rt = qfield(job, "reply_to"), *stray = qfield(job, "a:stray");
    CHECK_CONTAINS(a, "\"result\":{\"action\":\"accept\"");
    CHECK_CONTAINS(a, "Ada");
    CHECK_STR_EQ(rt, h.ctx.reply_key); /* the job's later entries come to this replica */
    CHECK_STR_EQ(stray, "");
    free(a);
    free(rt);
    free(stray);
    /* The worker takes the answers and asks a second question: the retry gets it. */
    redisReply *d = hx_redis(&h, "DEL " NAMES_KEY_ASK "%s", job);
    freeReplyObject(d);
    ask(job, 2, "{\"sure\":" ELICIT_REQ("Sure?") "}", "tools/call");
    CHECK_INT_EQ(hx_mcp_wait(&h, &r, 20000), 0);
    CHECK_STR_EQ(hx_str(&r, "result.resultType"), "input_required");
    CHECK_STR_EQ(hx_str(&r, "result.inputRequests.sure.params.message"), "Sure?");
    snprintf(state, sizeof(state), "%s", hx_str(&r, "result.requestState"));
    hx_ex_free(&r);
    last_round(job, "{\"sure\":" ACCEPT("yes") "}", state, "done after two questions");
    TEST_PASS("InputRequiredResult, retry on the same job, a second question, the result");
}

/* A retry of echo (arguments args, as the caller of key) answered with error code, whose
 * message contains text. */
static void retry_refused(const char *args, const char *responses, const char *state,
                          const char *key, int code, const char *text)
{
    hx_ex_t r;
    char *p = retry_params(args, responses, state);
    modern_as(&r, "tools/call", "echo", p, key);
    free(p);
    CHECK_INT_EQ(hx_rpc_code(&r), code);
    CHECK_CONTAINS(hx_rpc_message(&r), text);
    hx_ex_free(&r);
}

static void test_refused_states(void)
{
    hx_ex_t e, r;
    char job[64], state[1100];
    first_round(&e, "{\"who\":" ELICIT_REQ("Name?") "}", job, state);
    hx_ex_free(&e);
    const char *answer = "{\"who\":" ACCEPT("Ada") "}";
    /* other arguments; another caller of the same tenant; a tampered state */
    retry_refused("{\"x\":2}", answer, state, HX_API_KEY, RPC_INVALID_PARAMS,
                  "invalid or expired requestState: call again without requestState and "
                  "inputResponses");
    retry_refused("{\"x\":1}", answer, state, OTHER_KEY, RPC_INVALID_PARAMS,
                  "invalid or expired requestState");
    char forged[1100];
    snprintf(forged, sizeof(forged), "%s", state);
    forged[5] = forged[5] == 'A' ? 'B' : 'A';
    retry_refused("{\"x\":1}", answer, forged, HX_API_KEY, RPC_INVALID_PARAMS,
                  "invalid or expired requestState");
    /* responses that are no InputResponses */
    retry_refused("{\"x\":1}", "[1]", state, HX_API_KEY, RPC_INVALID_PARAMS,
                  "params.inputResponses must be an object");
    retry_refused("{\"x\":1}", "{\"who\":\"yes\"}", state, HX_API_KEY, RPC_INVALID_PARAMS,
                  "must be the client's result");
    /* inputResponses without a state; a state that is not a string */
    call_echo(&r,
              "{\"name\":\"echo\",\"arguments\":{\"x\":1},\"inputResponses\":{}," ELICIT_META "}");
    CHECK_INT_EQ(hx_rpc_code(&r), RPC_INVALID_PARAMS);
    CHECK_CONTAINS(hx_rpc_message(&r), "requestState");
    hx_ex_free(&r);
    call_echo(&r, "{\"name\":\"echo\",\"arguments\":{\"x\":1},\"requestState\":7," ELICIT_META "}");
    CHECK_INT_EQ(hx_rpc_code(&r), RPC_INVALID_PARAMS);
    hx_ex_free(&r);
    /* nothing was stored by any of them */
    char *a = qfield(job, "a:who");
    CHECK_STR_EQ(a, "");
    free(a);
    TEST_PASS("a tampered state, other arguments or caller, or no state: -32602, start over");
}

static void test_lost_and_invalid(void)
{
    hx_ex_t e, r;
    char job[64], state[1100];
    first_round(&e, "{\"who\":" ELICIT_REQ("Name?") "}", job, state);
    hx_ex_free(&e);
    /* an accepted answer that fails the requestedSchema: -32602 naming it, question open */
    retry_refused("{\"x\":1}", "{\"who\":{\"action\":\"accept\",\"content\":{}}}", state,
                  HX_API_KEY, RPC_INVALID_PARAMS, "requested schema: content");
    char *n = qfield(job, "n");
    CHECK_STR_EQ(n, "1");
    free(n);
    /* the worker died: its question expired */
    redisReply *d = hx_redis(&h, "DEL " NAMES_KEY_ASK "%s", job);
    freeReplyObject(d);
    char *p = retry_params("{\"x\":1}", "{\"who\":" ACCEPT("Ada") "}", state);
    call_echo(&r, p);
    free(p);
    CHECK_INT_EQ(hx_rpc_code(&r), RPC_INTERNAL_ERROR);
    CHECK_STR_EQ(hx_str(&r, "error.data.reason"), "input_lost");
    CHECK_CONTAINS(hx_rpc_message(&r), "call again");
    hx_ex_free(&r);
    TEST_PASS("an answer off its schema: -32602, still open; a question gone: input_lost");
}

static void test_partial_and_undeclared(void)
{
    hx_ex_t e, r;
    char job[64], state[1100];
    /* the client declared elicitation only: the sampling request is answered for the tool */
    first_round(&e, "{\"a\":" ELICIT_REQ("A?") ",\"b\":" ELICIT_REQ("B?") ",\"s\":" SAMPLE_REQ "}",
                job, state);
    CHECK(hx_str(&e, "result.inputRequests.a.method") != NULL);
    CHECK(hx_str(&e, "result.inputRequests.s.method") == NULL);
    hx_ex_free(&e);
    char *s = qfield(job, "a:s");
    CHECK_CONTAINS(s, "-32601");
    CHECK_CONTAINS(s, "did not declare the sampling capability");
    free(s);
    /* one of two answered: a new InputRequiredResult for the other, with a new state */
    char *p = retry_params("{\"x\":1}", "{\"a\":" ACCEPT("one") "}", state);
    call_echo(&r, p);
    free(p);
    CHECK(!r.parked);
    CHECK_STR_EQ(hx_str(&r, "result.resultType"), "input_required");
    CHECK(hx_str(&r, "result.inputRequests.b.method") != NULL);
    CHECK(hx_str(&r, "result.inputRequests.a.method") == NULL);
    const char *s2 = hx_str(&r, "result.requestState");
    CHECK(s2 && strncmp(s2, "v1.", 3) == 0);
    char state2[1100];
    snprintf(state2, sizeof(state2), "%s", s2);
    hx_ex_free(&r);
    last_round(job, "{\"b\":" ACCEPT("two") "}", state2, "both");
    TEST_PASS("undeclared requests answered for the tool; missing keys asked again");
}

static void test_resource_read(void)
{
    hx_ex_t e, r;
    modern_as(&e, "resources/read", "mem://doc",
              "{\"uri\":\"mem://doc\"," CAPS_META("{\"roots\":{}}") "}", HX_API_KEY);
    CHECK(e.parked);
    char job[64];
    snprintf(job, sizeof(job), "%s", e.req.call.job_id);
    ask(job, 1, "{\"r\":{\"method\":\"roots/list\",\"params\":{}}}", "resources/read");
    CHECK_INT_EQ(hx_mcp_wait(&h, &e, 20000), 0);
    CHECK_STR_EQ(hx_str(&e, "result.resultType"), "input_required");
    CHECK_STR_EQ(hx_str(&e, "result.inputRequests.r.method"), "roots/list");
    char params[1500], state[1100];
    snprintf(state, sizeof(state), "%s", hx_str(&e, "result.requestState"));
    hx_ex_free(&e);
    /* the state of a read is no tools/call's */
    retry_refused("{}", "{}", state, HX_API_KEY, RPC_INVALID_PARAMS,
                  "invalid or expired requestState");
    snprintf(params, sizeof(params),
             "{\"uri\":\"mem://doc\",\"inputResponses\":{\"r\":{\"roots\":[]}},"
             "\"requestState\":\"%s\"," CAPS_META("{\"roots\":{}}") "}",
             state);
    modern_as(&r, "resources/read", "mem://doc", params, HX_API_KEY);
    CHECK(r.parked);
    CHECK_STR_EQ(r.req.call.job_id, job);
    hx_ex_free(&r);
    /* prompts/get: the same, its arguments bound to the state */
    modern_as(&e, "prompts/get", "plan",
              "{\"name\":\"plan\",\"arguments\":{\"q\":\"x\"}," ELICIT_META "}", HX_API_KEY);
    CHECK(e.parked);
    snprintf(job, sizeof(job), "%s", e.req.call.job_id);
    ask(job, 1, "{\"who\":" ELICIT_REQ("Name?") "}", "prompts/get");
    CHECK_INT_EQ(hx_mcp_wait(&h, &e, 20000), 0);
    CHECK_STR_EQ(hx_str(&e, "result.resultType"), "input_required");
    snprintf(state, sizeof(state), "%s", hx_str(&e, "result.requestState"));
    hx_ex_free(&e);
    snprintf(params, sizeof(params),
             "{\"name\":\"plan\",\"arguments\":{\"q\":\"y\"},\"inputResponses\":{\"who\":" ACCEPT(
                 "Ada") "},\"requestState\":\"%s\"," ELICIT_META "}",
             state);
    modern_as(&r, "prompts/get", "plan", params, HX_API_KEY); /* other arguments */
    CHECK_INT_EQ(hx_rpc_code(&r), RPC_INVALID_PARAMS);
    hx_ex_free(&r);
    snprintf(params, sizeof(params),
             "{\"name\":\"plan\",\"arguments\":{\"q\":\"x\"},\"inputResponses\":{\"who\":" ACCEPT(
                 "Ada") "},\"requestState\":\"%s\"," ELICIT_META "}",
             state);
    modern_as(&r, "prompts/get", "plan", params, HX_API_KEY);
    CHECK(r.parked);
    CHECK_STR_EQ(r.req.call.job_id, job);
    hx_ex_free(&r);
    TEST_PASS("resources/read and prompts/get: InputRequiredResult, the retry on the same job");
}

#define EXT_META                                                                                   \
    CAPS_META("{\"elicitation\":{},\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}}")

/* A task of report made through the tasks extension; its id into id. */
static void make_task(char id[64])
{
    hx_ex_t e;
    modern_as(&e, "tools/call", "report", "{\"name\":\"report\",\"arguments\":{}," EXT_META "}",
              HX_API_KEY);
    CHECK_STR_EQ(hx_str(&e, "result.resultType"), "task");
    snprintf(id, 64, "%s", hx_str(&e, "result.taskId"));
    hx_ex_free(&e);
}

/* The worker asks the task's client: the task hash and the question, as ask_open.lua. */
static void task_asks(const char *id, const char *reqs)
{
    redisReply *r =
        hx_redis(&h, "HSET " NAMES_KEY_TASK "%s state running input %s input_n 1", id, reqs);
    CHECK(r && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    char exp[32];
    snprintf(exp, sizeof(exp), "%lld", (long long)util_now_ms() + 300000);
    r = hx_redis(&h,
                 "HSET " NAMES_KEY_ASK "%s n 1 worker w-test reqs %s tenant t owner key:k "
                 "session %s method tools/call task %s reply_to %s expires_ms %s",
                 id, reqs, "", id, "", exp);
    CHECK(r && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
}

static void ext_task(hx_ex_t *e, const char *method, const char *id, const char *more)
{
    char params[1200];
    snprintf(params, sizeof(params), "{\"taskId\":\"%s\"%s," EXT_META "}", id, more);
    modern_as(e, method, id, params, HX_API_KEY);
}

/* tasks/update of task id with params more is refused with code and a message holding text;
 * nothing is stored for its request "who". */
static void update_refused(const char *id, const char *more, int code, const char *text)
{
    hx_ex_t e;
    ext_task(&e, "tasks/update", id, more);
    CHECK_INT_EQ(hx_rpc_code(&e), code);
    CHECK_CONTAINS(hx_rpc_message(&e), text);
    hx_ex_free(&e);
    char *a = qfield(id, "a:who");
    CHECK_STR_EQ(a, "");
    free(a);
}

static void test_task_ext(void)
{
    char id[64];
    make_task(id);
    hx_ex_t e;
    ext_task(&e, "tasks/get", id, "");
    CHECK_STR_EQ(hx_str(&e, "result.status"), "working");
    hx_ex_free(&e);
    task_asks(id, "{\"who\":" ELICIT_REQ("Name?") "}");
    ext_task(&e, "tasks/get", id, "");
    CHECK_STR_EQ(hx_str(&e, "result.status"), "input_required");
    CHECK_STR_EQ(hx_str(&e, "result.inputRequests.who.params.message"), "Name?");
    hx_ex_free(&e);
    /* REST shows it too, and filters by it */
    hx_ex_t g;
    char url[200];
    snprintf(url, sizeof(url), "/v1/tasks/%s", id);
    hx_ex_init(&h, &g, "GET", url, NULL, 1, NULL);
    ing_tasksapi_route(&g.req, url, "GET", &g.resp);
    hx_ex_parse(&g);
    CHECK_STR_EQ(hx_str(&g, "status"), "input_required");
    CHECK_STR_EQ(hx_str(&g, "inputRequests.who.method"), "elicitation/create");
    hx_ex_free(&g);
    hx_ex_init(&h, &g, "GET", "/v1/tasks", NULL, 1, NULL);
    hx_ex_arg(&g, "status", "input_required");
    ing_tasksapi_route(&g.req, "/v1/tasks", "GET", &g.resp);
    hx_ex_parse(&g);
    CHECK_STR_EQ(hx_str(&g, "tasks.0.taskId"), id);
    hx_ex_free(&g);
    /* an answer off its schema is refused, and nothing is stored */
    update_refused(id,
                   ",\"inputResponses\":{\"who\":{\"action\":\"accept\",\"content\":{\"name\":3}}}",
                   RPC_INVALID_PARAMS, "requested schema");
    /* tasks/update answers it; a key not outstanding is ignored */
    ext_task(&e, "tasks/update", id, ",\"inputResponses\":{\"who\":" ACCEPT("Ada") ",\"x\":{}}");
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    CHECK(hx_rpc_result(&e) != NULL);
    hx_ex_free(&e);
    char *a = qfield(id, "a:who");
    CHECK_CONTAINS(a, "Ada");
    free(a);
    /* the worker took the answers: working again */
    redisReply *r = hx_redis(&h, "HDEL " NAMES_KEY_TASK "%s input input_n", id);
    freeReplyObject(r);
    ext_task(&e, "tasks/get", id, "");
    CHECK_STR_EQ(hx_str(&e, "result.status"), "working");
    CHECK(hx_str(&e, "result.inputRequests.who.method") == NULL);
    hx_ex_free(&e);
    TEST_PASS("tasks extension: input_required with inputRequests, tasks/update answers");
}

static void test_task_result_2025(void)
{
    char id[64];
    make_task(id);
    task_asks(id, "{\"who\":" ELICIT_REQ("Name?") "}");
    /* a 2025-11-25 session that declared elicitation */
    const char *const v1125[] = {"MCP-Protocol-Version", "2025-11-25", NULL};
    hx_ex_t e;
    hx_mcp(&h, &e, NULL,
           "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
           "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"elicitation\":{}},"
           "\"clientInfo\":{\"name\":\"hx\",\"version\":\"1\"}}}",
           v1125);
    char sid[80];
    snprintf(sid, sizeof(sid), "%s", e.resp.session_id);
    CHECK(sid[0]);
    hx_ex_free(&e);
    const char *const hdrs[] = {"MCP-Protocol-Version", "2025-11-25", "Mcp-Session-Id", sid, NULL};
    char body[400];
    snprintf(
        body, sizeof(body),
        "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tasks/get\",\"params\":{\"taskId\":\"%s\"}}",
        id);
    hx_mcp(&h, &e, NULL, body, hdrs);
    CHECK_STR_EQ(hx_str(&e, "result.status"), "input_required");
    CHECK(hx_str(&e, "result.inputRequests") == NULL); /* the extension's field only */
    hx_ex_free(&e);
    /* tasks/result while the question is open: it streams the question at once */
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tasks/result\",\"params\":{\"taskId\":"
             "\"%s\"}}",
             id);
    hx_mcp(&h, &e, NULL, body, hdrs);
    CHECK(e.req.has_call); /* parked, or not when the question's frame came first */
    ing_call_t *c = &e.req.call;
    CHECK_INT_EQ(ing_pending_wait(h.ctx.pending, c, 20000), 1);
    CHECK_INT_EQ(ing_pending_take(h.ctx.pending, c), ING_TAKE_STREAM);
    char *out;
    CHECK_INT_EQ(hx_drain(&h, c, &out), 0);
    char want[200];
    snprintf(want, sizeof(want), "\"id\":\"mcpq-in/1/who/%s\"", id);
    CHECK_CONTAINS(out, want);
    CHECK_CONTAINS(out, "\"method\":\"elicitation/create\"");
    CHECK_CONTAINS(out, "io.modelcontextprotocol/related-task");
    free(out);
    /* the task ends: its result is the stream's last frame */
    entry(id, "result", RECORD("task done"));
    util_buf_t all;
    util_buf_init(&all, 1 << 20);
    int ended = 0;
    for (int i = 0; i < 200 && !ended; i++) { /* polled, at most 20 s */
        (void)ing_pending_wait(h.ctx.pending, c, 100);
        ended = hx_drain(&h, c, &out);
        CHECK(util_buf_append(&all, out, strlen(out)) == 0);
        free(out);
    }
    CHECK(ended);
    CHECK(util_buf_append(&all, "", 1) == 0);
    CHECK_CONTAINS((char *)all.data, "task done");
    util_buf_cleanup(&all);
    hx_ex_free(&e);
    TEST_PASS("2025-11-25: tasks/get input_required; tasks/result streams the open question");
}

static void test_fleet_key(void)
{
    redisReply *r = hx_redis(&h, "GET " NAMES_KEY_RSTATE_KEY);
    CHECK(r && r->type == REDIS_REPLY_STRING && r->len == 64);
    freeReplyObject(r);
    TEST_PASS("without MCPQ_REQUEST_STATE_KEY the fleet key is made once in Redis");
}

/* The field of job's question once set (polled up to ms), or "" (malloc'd). */
static char *qfield_wait(const char *job, const char *field, int ms)
{
    char *s = qfield(job, field);
    for (long long until = util_now_ms() + ms; !*s && util_now_ms() < until; fx_sleep_ms(20)) {
        free(s);
        s = qfield(job, field);
    }
    return s;
}

/* A call of echo by a client that declared elicitation, parked, whose job (into job) the
 * worker asks reqs. */
static void asked(hx_ex_t *e, char job[64], const char *reqs)
{
    call_echo(e, "{\"name\":\"echo\",\"arguments\":{\"x\":1}," ELICIT_META "}");
    CHECK(e->parked);
    snprintf(job, 64, "%s", e->req.call.job_id);
    ask(job, 1, reqs, "tools/call");
}

/* Redis unreachable: the requestState key (no fleet key read yet) and the answer store. */
static void test_unavailable(void)
{
    hx_ex_t e, r;
    char job[64], state[1100];
    first_round(&e, "{\"who\":" ELICIT_REQ("Name?") "}", job, state);
    hx_ex_free(&e);
    kv_target_t *t;
    kv_pool_t *dead = hx_dead_kv(&h, &t);
    /* a replica that has not read the fleet key yet, and cannot */
    struct ing_rstate *live_rs = h.ctx.rstate;
    h.ctx.rstate = ing_rstate_new(NULL, 0, dead);
    retry_refused("{\"x\":1}", "{\"who\":" ACCEPT("Ada") "}", state, HX_API_KEY, RPC_INTERNAL_ERROR,
                  "requestState key (Redis) unavailable; try again");
    ing_rstate_free(h.ctx.rstate);
    h.ctx.rstate = live_rs;
    char *a = qfield(job, "a:who");
    CHECK_STR_EQ(a, "");
    free(a);
    /* the answer store unreachable: -32603, the question stays open for a retry */
    kv_pool_t *live = h.ctx.kv;
    h.ctx.kv = dead;
    char *p = retry_params("{\"x\":1}", "{\"who\":" ACCEPT("Ada") "}", state);
    call_echo(&r, p);
    h.ctx.kv = live;
    free(p);
    CHECK(!r.parked);
    CHECK_INT_EQ(hx_rpc_code(&r), RPC_INTERNAL_ERROR);
    CHECK_STR_EQ(hx_rpc_message(&r), "answer store (Redis) unavailable; try again");
    hx_ex_free(&r);
    a = qfield(job, "a:who");
    CHECK_STR_EQ(a, "");
    free(a);
    kv_pool_free(dead);
    kv_target_free(t);
    last_round(job, "{\"who\":" ACCEPT("Ada") "}", state, "after the outage");
    TEST_PASS("Redis unreachable on a retry: -32603 try again, the question stays open");
}

/* A question of only undeclared requests: each answered for the tool, the call keeps waiting. */
static void test_nothing_to_ask(void)
{
    hx_ex_t e;
    char job[64];
    asked(&e, job, "{\"s\":" SAMPLE_REQ "}");
    char *s = qfield_wait(job, "a:s", 20000);
    CHECK_CONTAINS(s, "did not declare the sampling capability");
    free(s);
    CHECK(!e.req.call.done); /* no InputRequiredResult with nothing in it */
    finish(&e, job, "no questions");
    TEST_PASS("a question of only undeclared requests: answered for the tool, the call waits");
}

/* tasks/update with inputResponses that are not a map of responses (-32602), or when the
 * answer store fails (-32603): nothing stored. */
static void test_task_update_bad(void)
{
    char id[64];
    make_task(id);
    task_asks(id, "{\"who\":" ELICIT_REQ("Name?") "}");
    const char *bad[] = {",\"inputResponses\":[1]", ",\"inputResponses\":\"who\"",
                         ",\"inputResponses\":{\"who\":3}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        update_refused(id, bad[i], RPC_INVALID_PARAMS, "inputResponses");
    TEST_PASS("tasks/update with malformed inputResponses: -32602 naming them, nothing stored");

    /* the answer store cannot take the answer (its script fails on requests the worker wrote
     * with trailing text): -32603 try again, nothing stored */
    redisReply *r =
        hx_redis(&h, "HSET " NAMES_KEY_ASK "%s reqs %s", id, "{\"who\":" ELICIT_REQ("Name?") "} x");
    freeReplyObject(r);
    update_refused(id, ",\"inputResponses\":{\"who\":" ACCEPT("Ada") "}", RPC_INTERNAL_ERROR,
                   "answer store (Redis) unavailable; try again");
    TEST_PASS("tasks/update when the answer store fails: -32603 try again, nothing stored");
}

/* The state of a question cannot be made (no key, Redis unreachable), or the `input` entry is
 * malformed: the gateway answers the question for the tool; the call keeps waiting. */
static void test_cannot_ask(void)
{
    kv_target_t *t;
    kv_pool_t *dead = hx_dead_kv(&h, &t);
    struct ing_rstate *live_rs = h.ctx.rstate;
    h.ctx.rstate = ing_rstate_new(NULL, 0, dead);
    hx_ex_t e;
    char job[64];
    asked(&e, job, "{\"who\":" ELICIT_REQ("Name?") "}");
    char *s = qfield_wait(job, "a:who", 20000);
    ing_rstate_free(h.ctx.rstate);
    h.ctx.rstate = live_rs;
    kv_pool_free(dead);
    kv_target_free(t);
    CHECK_CONTAINS(s, "-32601");
    free(s);
    CHECK(!e.req.call.done);
    /* a malformed `input` entry for the same call is ignored: the call still gets its result */
    redisReply *r = hx_redis(&h, "HSET " NAMES_KEY_ASK "%s n 2", job);
    freeReplyObject(r);
    entry(job, "input", "{\"n\":2,\"requests\":[1]}");
    finish(&e, job, "answered for the tool");
    TEST_PASS("no requestState can be made: the question is answered -32601 for the tool");
}

int main(void)
{
    hx_start(&h, config, NULL);
    test_round_trip();
    test_refused_states();
    test_lost_and_invalid();
    test_partial_and_undeclared();
    test_resource_read();
    test_task_ext();
    test_task_result_2025();
    test_fleet_key();
    test_unavailable();
    test_nothing_to_ask();
    test_task_update_bad();
    test_cannot_ask();
    hx_stop(&h);
    return 0;
}
