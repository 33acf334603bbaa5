/*
 * A replica stopping while a legacy call's client is being asked (docs/internals.md, "Asking
 * the client", endings; docs/operations.md "Stopping: SIGTERM drains"), on a real
 * mcpq-ingress, Redis and devbroker. The test plays the worker: no worker runs, the test
 * writes the job's question (`{mcpq}:ask:<job_id>`, as ask_open.lua does) and its `input`
 * entry on the replica's reply stream. What the client and the operator see:
 *   - the question reaches the client as a JSON-RPC request on the call's SSE stream;
 *   - at SIGTERM (no drain delay, a 60 s grace) the call's stream ends with -32603 naming why,
 *     long before the grace is over, the job is cancelled in Redis for its worker, and the
 *     ingress exits 0.
 */
#include "check.h"
#include "fixture.h"
#include "names.h"

#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fx_stack_t fx;

static redisReply *rcmd(redisContext *c, const char *fmt, const char *a, const char *b)
{
    redisReply *r = redisCommand(c, fmt, a, b);
    CHECK(r != NULL);
    return r;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    char config[300];
    snprintf(config, sizeof(config), "%s/ask.json", fx.dir);
    fx_write_file(config,
                  "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": "
                  "\"a-key\"}]}], \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}],"
                  " \"tools\": [{\"tenant\": \"t\", \"server\": \"default\", \"name\": \"ask\","
                  " \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"timeout_ms\": "
                  "120000, \"inputSchema\": {\"type\": \"object\"}, \"executor\": {\"type\": "
                  "\"builtin\", \"name\": \"sleep\"}}]}]}",
                  0600);
    int port = fx_free_port();
    char log[300];
    const char *env[] = {"MCPQ_DRAIN_DELAY_MS=0", "MCPQ_SHUTDOWN_GRACE_MS=60000", NULL};
    pid_t ing = fx_spawn_ingress(&fx, "ingress-ask", port, config, env, log, sizeof(log));
    CHECK(ing > 0);

    /* a 2025-06-18 session of a client that declared elicitation */
    char url[128], sid_hdr[160];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    const char *init_hdrs[] = {"Authorization: Bearer a-key", "MCP-Protocol-Version: 2025-06-18",
                               NULL};
    fx_reply_t rep;
    CHECK_INT_EQ(fx_http_post(url, init_hdrs,
                              "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                              "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{"
                              "\"elicitation\":{}},\"clientInfo\":{\"name\":\"t\",\"version\":"
                              "\"1\"}}}",
                              &rep),
                 0);
    CHECK_INT_EQ((int)rep.status, 200);
    CHECK(rep.session_id[0] != '\0');
    snprintf(sid_hdr, sizeof(sid_hdr), "Mcp-Session-Id: %s", rep.session_id);

    const char *hdrs[] = {"Authorization: Bearer a-key", "MCP-Protocol-Version: 2025-06-18",
                          "Accept: application/json, text/event-stream", sid_hdr, NULL};
    fx_stream_t s;
    fx_stream_open(&s, port, "/mcp",
                   "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
                   "\"ask\",\"arguments\":{}}}",
                   hdrs);
    char line[16384], job[64] = "";
    for (long long until = fx_now_ms() + 20000;
         !fx_log_line(log, "tool call published", NULL, line, sizeof(line)) && fx_now_ms() < until;)
        fx_sleep_ms(50);
    const char *j = strstr(line, "\"job_id\":\"");
    CHECK(j != NULL);
    sscanf(j + 10, "%63[^\"]", job);
    CHECK(job[0] != '\0');

    /* the worker's part: the question, then the input entry on the replica's reply stream */
    redisContext *rc = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(rc && !rc->err);
    redisReply *r = redisCommand(rc, "KEYS %s*", NAMES_KEY_REPLY);
    CHECK(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
    char reply_key[200];
    snprintf(reply_key, sizeof(reply_key), "%s", r->element[0]->str);
    freeReplyObject(r);
    const char *reqs = "{\"q1\":{\"method\":\"elicitation/create\",\"params\":{\"message\":"
                       "\"Deploy?\",\"requestedSchema\":{\"type\":\"object\"}}}}";
    r = redisCommand(rc, "HSET " NAMES_KEY_ASK "%s n 1 reqs %s tenant t owner key:k session %s",
                     job, reqs, rep.session_id);
    CHECK(r && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    char data[512];
    snprintf(data, sizeof(data), "{\"n\":1,\"requests\":%s,\"expires_ms\":0}", reqs);
    r = redisCommand(rc, "XADD %s * job %s kind input data %s", reply_key, job, data);
    CHECK(r && r->type == REDIS_REPLY_STRING);
    freeReplyObject(r);
    char want[128];
    snprintf(want, sizeof(want), "\"id\":\"mcpq-in/1/q1/%s\"", job);
    if (!fx_stream_wait(&s, want, 1, 20000))
        fx_stream_dump(&s, "call stream");
    CHECK(fx_stream_count(&s, "\"method\":\"elicitation/create\"") == 1);
    TEST_PASS("the job's question reaches the client as a request on the call's SSE stream");

    /* SIGTERM: the call ends now, not after the 60 s grace; its job is cancelled */
    long long t0 = fx_now_ms();
    CHECK(kill(ing, SIGTERM) == 0);
    if (!fx_stream_wait_done(&s, 30000))
        fx_stream_dump(&s, "call stream");
    CHECK(fx_now_ms() - t0 < 30000);
    CHECK(fx_stream_count(&s, "\"code\":-32603") == 1);
    CHECK(fx_stream_count(&s, "stopped while the tool waited for the client's answer") == 1);
    TEST_PASS("at SIGTERM a call whose client is being asked ends with -32603 at once");
    r = rcmd(rc, "GET " NAMES_KEY_CANCEL "%s", job, NULL);
    CHECK(r->type == REDIS_REPLY_STRING);
    CHECK_CONTAINS(r->str, "stopped while the tool waited");
    freeReplyObject(r);
    TEST_PASS("its job is cancelled for the worker that waits");
    CHECK_INT_EQ(fx_wait_exit(ing, 30000), 0);
    CHECK(fx_log_count(log, "calls waiting for their client's answer ended", NULL) == 1);
    TEST_PASS("the ingress exits 0 and logs the calls it ended");

    fx_stream_close(&s);
    redisFree(rc);
    fx_stop(&fx);
    curl_global_cleanup();
    return 0;
}
