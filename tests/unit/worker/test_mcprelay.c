/*
 * Tests worker/executors/mcprelay.c, the mcp executor's relay of an upstream's questions, on a
 * real loop with a stand-in for the worker's ask API (worker/core/ask.h; the real one is run
 * by tests/integration/test_mcp_relay.c): a legacy request becomes one question whose key
 * comes from the request's id, its answer (result or error) the JSON-RPC response to the
 * upstream, sent from the loop and never inside the call that handed the request over;
 * requests arriving while a question is open are asked one at a time in order; ping is
 * answered {} and other methods -32601 without asking; a refused question (malformed,
 * too big) answers the upstream with an error and the queue goes on; a 2026-07-28
 * inputRequests map is asked under valid keys kept and invalid ones mapped, and answered under
 * the upstream's keys; an error answer fails it with a sentence naming the method and why;
 * free abandons an open question.
 */
#include "check.h"
#include "err.h"
#include "job.h"
#include "loop.h"
#include "mcprelay.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the stand-in ask API ---- */

static cJSON *asked; /* the last question opened */
static int opens, abandons, refuse;
static wrk_mcprelay_answer_fn open_cb;
static void *open_arg;

static int fake_open(wrk_job_t *job, const cJSON *requests, wrk_mcprelay_answer_fn cb, void *arg,
                     char *errstr, size_t errstr_size)
{
    (void)job;
    if (refuse) {
        snprintf(errstr, errstr_size, "requests.x.params must be an object");
        return refuse;
    }
    cJSON_Delete(asked);
    asked = cJSON_Duplicate(requests, 1);
    opens++;
    open_cb = cb;
    open_arg = arg;
    return 0;
}

static void fake_abandon(wrk_job_t *job)
{
    (void)job;
    abandons++;
}

static const wrk_mcprelay_api_t api = {fake_open, fake_abandon};

/* Answers the open question with answers (JSON text). */
static void answer(wrk_job_t *job, const char *answers)
{
    cJSON *a = cJSON_Parse(answers);
    CHECK(a != NULL);
    wrk_mcprelay_answer_fn cb = open_cb;
    open_cb = NULL;
    CHECK(cb != NULL);
    cb(job, a, open_arg);
    cJSON_Delete(a);
}

/* ---- what the relay hands back ---- */

static cJSON *replies;
static cJSON *got_inputs;
static char got_failure[400];
static int inputs_done;

static void on_reply(cJSON *response, void *arg)
{
    (void)arg;
    cJSON_AddItemToArray(replies, response);
}

static void on_inputs(cJSON *responses, const char *failure, void *arg)
{
    (void)arg;
    inputs_done++;
    cJSON_Delete(got_inputs);
    got_inputs = responses;
    snprintf(got_failure, sizeof(got_failure), "%s", failure ? failure : "");
}

static void spin(wrk_loop_t *loop)
{
    for (int i = 0; i < 5; i++)
        wrk_loop_run_once(loop, 0);
}

static char *compact(const cJSON *j)
{
    static char buf[2048];
    char *s = cJSON_PrintUnformatted(j);
    snprintf(buf, sizeof(buf), "%s", s ? s : "(null)");
    cJSON_free(s);
    return buf;
}

static void request(wrk_mcprelay_t *a, const char *json)
{
    cJSON *r = cJSON_Parse(json);
    CHECK(r != NULL);
    wrk_mcprelay_request(a, r);
    cJSON_Delete(r);
}

static void test_legacy(wrk_job_t *job, wrk_loop_t *loop)
{
    replies = cJSON_CreateArray();
    wrk_mcprelay_t *a = wrk_mcprelay_new(job, &api, on_reply, NULL, NULL);
    CHECK(a != NULL);
    opens = abandons = 0;
    request(a, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/create\",\"params\":"
               "{\"message\":\"Your name?\",\"requestedSchema\":{\"type\":\"object\"}}}");
    CHECK_INT_EQ(opens, 1);
    CHECK_STR_EQ(compact(asked), "{\"7\":{\"method\":\"elicitation/create\",\"params\":{"
                                 "\"message\":\"Your name?\",\"requestedSchema\":{\"type\":"
                                 "\"object\"}}}}");
    CHECK_INT_EQ(wrk_mcprelay_open(a), 1);
    /* two more while the first is open: queued; a ping and an unknown method answered now */
    request(a, "{\"jsonrpc\":\"2.0\",\"id\":\"s/1\",\"method\":\"sampling/createMessage\","
               "\"params\":{\"messages\":[],\"maxTokens\":5}}");
    request(a, "{\"jsonrpc\":\"2.0\",\"id\":\"r-2\",\"method\":\"roots/list\"}");
    request(a, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}");
    request(a, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\"}");
    CHECK_INT_EQ(opens, 1);
    CHECK_INT_EQ(cJSON_GetArraySize(replies), 0); /* never inside the handing over */
    spin(loop);
    CHECK_STR_EQ(compact(replies),
                 "[{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}},{\"jsonrpc\":\"2.0\",\"id\":9,"
                 "\"error\":{\"code\":-32601,\"message\":\"mcpq does not relay tools/list to its "
                 "client\"}}]");
    cJSON_Delete(replies);
    replies = cJSON_CreateArray();
    /* the client accepts: the upstream gets its result; the next request is asked */
    answer(job, "{\"7\":{\"result\":{\"action\":\"accept\",\"content\":{\"name\":\"Ada\"}}}}");
    CHECK_INT_EQ(opens, 1); /* never inside the ask API's callback */
    spin(loop);
    CHECK_INT_EQ(opens, 2);
    CHECK_STR_EQ(compact(asked), "{\"q1\":{\"method\":\"sampling/createMessage\",\"params\":{"
                                 "\"messages\":[],\"maxTokens\":5}}}");
    CHECK_STR_EQ(compact(replies), "[{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"action\":"
                                   "\"accept\",\"content\":{\"name\":\"Ada\"}}}]");
    cJSON_Delete(replies);
    replies = cJSON_CreateArray();
    /* an error answer (the client did not declare sampling) goes back as the JSON-RPC error */
    answer(job, "{\"q1\":{\"error\":{\"code\":-32601,\"message\":\"the client did not declare "
                "the sampling capability\"}}}");
    spin(loop);
    CHECK_INT_EQ(opens, 3);
    CHECK_STR_EQ(compact(asked), "{\"r-2\":{\"method\":\"roots/list\",\"params\":{}}}");
    CHECK_STR_EQ(compact(replies),
                 "[{\"jsonrpc\":\"2.0\",\"id\":\"s/1\",\"error\":{\"code\":-32601,\"message\":"
                 "\"the client did not declare the sampling capability\"}}]");
    cJSON_Delete(replies);
    replies = cJSON_CreateArray();
    /* free while r-2 is open: abandoned, no reply */
    wrk_mcprelay_free(a);
    CHECK_INT_EQ(abandons, 1);
    spin(loop);
    CHECK_INT_EQ(cJSON_GetArraySize(replies), 0);
    /* a question the ask API refuses: the upstream gets -32602 with why, the next is asked */
    a = wrk_mcprelay_new(job, &api, on_reply, NULL, NULL);
    refuse = MCPQ_EINVAL;
    request(a, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"elicitation/create\",\"params\":3}");
    refuse = 0;
    CHECK_INT_EQ(wrk_mcprelay_open(a), 0);
    request(a, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"roots/list\"}");
    CHECK_INT_EQ(wrk_mcprelay_open(a), 1);
    spin(loop);
    CHECK_STR_EQ(compact(replies), "[{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,"
                                   "\"message\":\"requests.x.params must be an object\"}}]");
    abandons = 0;
    wrk_mcprelay_free(a);
    CHECK_INT_EQ(abandons, 1);
    cJSON_Delete(replies);
    replies = NULL;
    TEST_PASS("legacy requests: one question at a time, keys from ids, answers and errors back "
              "to the upstream from the loop, ping and other methods answered at once");
}

static void test_mrtr(wrk_job_t *job, wrk_loop_t *loop)
{
    char why[300];
    wrk_mcprelay_t *a = wrk_mcprelay_new(job, &api, NULL, on_inputs, NULL);
    cJSON *ir = cJSON_Parse(
        "{\"github_login\":{\"method\":\"elicitation/create\",\"params\":{\"message\":\"login?\"}},"
        "\"what is 2+2?\":{\"method\":\"sampling/createMessage\",\"params\":{\"maxTokens\":3}}}");
    opens = 0;
    CHECK_INT_EQ(wrk_mcprelay_inputs(a, ir, why, sizeof(why)), 0);
    CHECK_INT_EQ(opens, 1);
    CHECK_STR_EQ(compact(asked), "{\"github_login\":{\"method\":\"elicitation/create\",\"params\":"
                                 "{\"message\":\"login?\"}},\"k1\":{\"method\":\"sampling/"
                                 "createMessage\",\"params\":{\"maxTokens\":3}}}");
    CHECK_INT_EQ(wrk_mcprelay_inputs(a, ir, why, sizeof(why)), MCPQ_EEXIST);
    answer(job, "{\"github_login\":{\"result\":{\"action\":\"accept\",\"content\":{\"l\":\"o\"}}},"
                "\"k1\":{\"result\":{\"role\":\"assistant\",\"content\":{\"type\":\"text\","
                "\"text\":\"4\"}}}}");
    CHECK_INT_EQ(inputs_done, 0);
    spin(loop);
    CHECK_INT_EQ(inputs_done, 1);
    CHECK_STR_EQ(compact(got_inputs),
                 "{\"github_login\":{\"action\":\"accept\",\"content\":{\"l\":\"o\"}},\"what is "
                 "2+2?\":{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"4\"}}}");
    /* an error answer: a failure naming the method and the reason */
    CHECK_INT_EQ(wrk_mcprelay_inputs(a, ir, why, sizeof(why)), 0);
    answer(job, "{\"github_login\":{\"result\":{\"action\":\"decline\"}},\"k1\":{\"error\":{"
                "\"code\":-32001,\"message\":\"the client did not answer within 300 ms\"}}}");
    spin(loop);
    CHECK_INT_EQ(inputs_done, 2);
    CHECK(got_inputs == NULL);
    CHECK_STR_EQ(got_failure, "the tool's upstream MCP server asked the client "
                              "(sampling/createMessage) and got no answer: the client did not "
                              "answer within 300 ms");
    cJSON_Delete(ir);
    /* a method mcpq does not relay: refused, nothing asked */
    ir = cJSON_Parse("{\"a\":{\"method\":\"tools/call\",\"params\":{}}}");
    opens = 0;
    CHECK_INT_EQ(wrk_mcprelay_inputs(a, ir, why, sizeof(why)), MCPQ_EINVAL);
    CHECK_STR_EQ(why, "inputRequests.a asks tools/call, which mcpq does not relay");
    CHECK_INT_EQ(opens, 0);
    cJSON_Delete(ir);
    wrk_mcprelay_free(a);
    TEST_PASS("2026-07-28 inputRequests: keys kept or mapped, answered under the upstream's keys, "
              "an error answer fails the round");
}

int main(void)
{
    wrk_loop_t *loop = wrk_loop_new();
    CHECK(loop != NULL);
    wrk_rt_t rt = {.loop = loop};
    wrk_job_t job = {.rt = &rt};
    job.env.job_id = "j_test";
    test_legacy(&job, loop);
    test_mrtr(&job, loop);
    cJSON_Delete(asked);
    cJSON_Delete(got_inputs);
    wrk_loop_free(loop);
    return 0;
}
