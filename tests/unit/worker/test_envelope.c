/* Tests worker/core/envelope.c: the job envelope parser on valid and hostile records. */
#include "check.h"
#include "names.h"
#include "envelope.h"
#include "err.h"

#include <stdlib.h>
#include <string.h>

static const char good[] =
    "{\"v\":1,\"job_id\":\"j_4f1c\",\"call_id\":7,\"tenant\":\"acme\",\"server\":\"default\","
    "\"tool\":\"echo\",\"tool_version\":\"1\",\"arguments\":{\"text\":\"hi\"},"
    "\"attachments\":[],\"task_id\":null,\"channel_id\":\"c_1\","
    "\"executor\":{\"type\":\"http\",\"url\":\"http://x\",\"secret\":\"whsec_AAE=\"},"
    "\"mode\":\"sync\",\"timeout_ms\":60000,\"created_ms\":1767225600000,"
    "\"sent_us\":1767225600001234,"
    "\"deadline_ms\":1767225660000,\"reply_to\":\"" NAMES_KEY_REPLY "ingress-0-1a2b\","
    "\"progress_token\":\"abc\",\"request_id\":\"r-1.x~!\","
    "\"traceparent\":\"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\"}";

static int parse(wrk_envelope_t *env, const char *s, char *err)
{
    return wrk_envelope_parse(env, s, strlen(s), err, 256);
}

static void test_good(void)
{
    wrk_envelope_t env;
    char err[256] = "";
    CHECK_INT_EQ(parse(&env, good, err), 0);
    CHECK_STR_EQ(env.job_id, "j_4f1c");
    CHECK_STR_EQ(env.tenant, "acme");
    CHECK_STR_EQ(env.tool, "echo");
    CHECK_STR_EQ(env.tool_version, "1");
    CHECK_STR_EQ(env.reply_to, NAMES_KEY_REPLY "ingress-0-1a2b");
    CHECK_STR_EQ(env.exec_type, "http");
    CHECK_STR_EQ(env.traceparent, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    CHECK_INT_EQ(env.deadline_ms, 1767225660000LL);
    CHECK_INT_EQ(env.created_ms, 1767225600000LL);
    CHECK_INT_EQ(env.sent_us, 1767225600001234LL);
    CHECK_INT_EQ(env.timeout_ms, 60000);
    CHECK_STR_EQ(env.request_id, "r-1.x~!");
    CHECK(cJSON_IsObject(env.arguments));

    size_t len = 0;
    char *body = wrk_envelope_for_executor(&env, &len);
    CHECK(body != NULL);
    CHECK_INT_EQ(len, strlen(body));
    CHECK(strstr(body, "executor") == NULL);
    CHECK(strstr(body, "whsec_") == NULL);
    CHECK_CONTAINS(body, "\"arguments\":{\"text\":\"hi\"}");
    CHECK_CONTAINS(body, "\"tenant\":\"acme\"");
    CHECK_CONTAINS(body, "\"tool\":\"echo\"");
    CHECK_CONTAINS(body, "\"request_id\":\"r-1.x~!\""); /* executors get it too */
    /* Numbers as their digits (jv_add_number_ref), the same values as in the record. */
    CHECK_CONTAINS(body, "\"call_id\":7,");
    CHECK_CONTAINS(body, "\"timeout_ms\":60000,\"created_ms\":1767225600000,"
                         "\"sent_us\":1767225600001234,\"deadline_ms\":1767225660000,");
    cJSON *back = cJSON_Parse(body);
    CHECK(back != NULL);
    cJSON_Delete(back);
    free(body);
    wrk_envelope_cleanup(&env);
    wrk_envelope_cleanup(&env); /* twice is harmless */
    TEST_PASS("a complete envelope parses; the executor copy has no executor member");
}

static void test_minimal(void)
{
    wrk_envelope_t env;
    char err[256] = "";
    const char *s = " {\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\","
                    "\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"},"
                    "\"traceparent\":\"bogus\",\"request_id\":\"has space\",\"reply_to\":null}\n";
    CHECK_INT_EQ(parse(&env, s, err), 0);
    CHECK(env.request_id == NULL); /* an invalid request id is dropped, not fatal */
    CHECK(env.reply_to == NULL);
    CHECK(env.arguments == NULL);
    CHECK(env.traceparent == NULL); /* malformed trace context is dropped, not fatal */
    CHECK_INT_EQ(env.deadline_ms, 0);
    wrk_envelope_cleanup(&env);
    TEST_PASS("optional members may be absent or null");
}

typedef struct bad_case {
    const char *rec;
    const char *why; /* substring of the error */
    int has_id, has_reply;
} bad_case_t;

static void test_bad(void)
{
    static const bad_case_t cases[] = {
        {"", "empty", 0, 0},
        {"garbage", "not JSON", 0, 0},
        {"[1,2]", "not a JSON object", 0, 0},
        {"{\"v\":1} x", "trailing", 0, 0},
        {"{\"v\":1}", "job_id", 0, 0},
        {"{\"job_id\":\"a b\"}", "job_id", 0, 0},
        {"{\"job_id\":7}", "job_id", 0, 0},
        {"{\"job_id\":\"j1\",\"reply_to\":\"" NAMES_KEY_REGISTRY "\"}", "reply_to", 1, 0},
        {"{\"job_id\":\"j1\",\"reply_to\":5}", "reply_to", 1, 0},
        {"{\"job_id\":\"j1\",\"reply_to\":\"" NAMES_KEY_REPLY "a\"}", "version", 1, 1},
        {"{\"v\":2,\"job_id\":\"j1\",\"reply_to\":\"" NAMES_KEY_REPLY "a\"}", "version", 1, 1},
        {"{\"v\":1,\"job_id\":\"j1\",\"reply_to\":\"" NAMES_KEY_REPLY "a\",\"tool\":\"x\","
         "\"executor\":{\"type\":\"builtin\"}}",
         "tenant", 1, 1},
        {"{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"\","
         "\"executor\":{\"type\":\"builtin\"}}",
         "tool", 1, 0},
        {"{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"a\\u0001b\","
         "\"executor\":{\"type\":\"builtin\"}}",
         "tool", 1, 0},
        {"{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\"}", "executor", 1, 0},
        {"{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\",\"executor\":{}}",
         "executor.type", 1, 0},
        {"{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\",\"executor\":[]}", "executor",
         1, 0},
        {"{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\",\"arguments\":[1],"
         "\"executor\":{\"type\":\"builtin\"}}",
         "arguments", 1, 0},
        {"{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\",\"deadline_ms\":-5,"
         "\"executor\":{\"type\":\"builtin\"}}",
         "deadline_ms", 1, 0},
        {"{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\",\"deadline_ms\":1.5,"
         "\"executor\":{\"type\":\"builtin\"}}",
         "deadline_ms", 1, 0},
        {"{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\",\"sent_us\":-1,"
         "\"executor\":{\"type\":\"builtin\"}}",
         "sent_us", 1, 0},
        {"{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\",\"timeout_ms\":\"9\","
         "\"executor\":{\"type\":\"builtin\"}}",
         "timeout_ms", 1, 0},
        {"{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\",\"tool_version\":1,"
         "\"executor\":{\"type\":\"builtin\"}}",
         "tool_version", 1, 0},
        {"{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\",\"request_id\":7,"
         "\"executor\":{\"type\":\"builtin\"}}",
         "request_id", 1, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wrk_envelope_t env;
        char err[256] = "";
        CHECK_INT_EQ(parse(&env, cases[i].rec, err), MCPQ_EINVAL);
        CHECK_CONTAINS(err, cases[i].why);
        CHECK_INT_EQ(env.job_id != NULL, cases[i].has_id);
        CHECK_INT_EQ(env.reply_to != NULL, cases[i].has_reply);
        wrk_envelope_cleanup(&env);
    }
    TEST_PASS("malformed envelopes are refused with a reason, keeping id and reply_to");
}

static void test_hostile_bytes(void)
{
    wrk_envelope_t env;
    char err[256];
    /* Invalid UTF-8 inside a string. */
    const char bad_utf8[] = "{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\xff\",\"tool\":\"x\","
                            "\"executor\":{\"type\":\"builtin\"}}";
    CHECK_INT_EQ(wrk_envelope_parse(&env, bad_utf8, strlen(bad_utf8), err, sizeof(err)),
                 MCPQ_EINVAL);
    CHECK_CONTAINS(err, "UTF-8");
    wrk_envelope_cleanup(&env);
    /* A NUL byte in the middle: the length counts, not the terminator. */
    const char nul[] = "{\"v\":1}\0{\"x\":1}";
    CHECK_INT_EQ(wrk_envelope_parse(&env, nul, sizeof(nul) - 1, err, sizeof(err)), MCPQ_EINVAL);
    wrk_envelope_cleanup(&env);
    /* Deep nesting is refused without exhausting the stack. */
    size_t depth = 100000;
    char *deep = malloc(depth * 2 + 1);
    CHECK(deep != NULL);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[depth * 2] = '\0';
    CHECK_INT_EQ(wrk_envelope_parse(&env, deep, depth * 2, err, sizeof(err)), MCPQ_EINVAL);
    wrk_envelope_cleanup(&env);
    free(deep);
    /* Not NUL-terminated: the parser stays inside len. */
    char *exact = malloc(strlen(good));
    CHECK(exact != NULL);
    memcpy(exact, good, strlen(good));
    CHECK_INT_EQ(wrk_envelope_parse(&env, exact, strlen(good), err, sizeof(err)), 0);
    wrk_envelope_cleanup(&env);
    free(exact);
    CHECK_INT_EQ(wrk_envelope_parse(&env, NULL, 0, err, sizeof(err)), MCPQ_EINVAL);
    wrk_envelope_cleanup(&env);
    TEST_PASS("hostile bytes are refused safely");
}

static void test_ids(void)
{
    CHECK(wrk_envelope_id_valid("j_4f1c-a.b:c"));
    CHECK(!wrk_envelope_id_valid(""));
    CHECK(!wrk_envelope_id_valid(NULL));
    CHECK(!wrk_envelope_id_valid("a/b"));
    char longid[WRK_ID_MAX + 2];
    memset(longid, 'a', sizeof(longid) - 1);
    longid[WRK_ID_MAX] = '\0';
    CHECK(wrk_envelope_id_valid(longid));
    longid[WRK_ID_MAX] = 'a';
    longid[WRK_ID_MAX + 1] = '\0';
    CHECK(!wrk_envelope_id_valid(longid));
    TEST_PASS("job id charset and length");
}

/* An envelope for method (NULL: no member) with arguments args (JSON text). */
static int parse_method(wrk_envelope_t *env, const char *method, const char *args, char *err)
{
    char rec[1024];
    snprintf(rec, sizeof(rec),
             "{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\",%s%s%s"
             "\"arguments\":%s,\"mime_type\":\"text/markdown\","
             "\"executor\":{\"type\":\"exec\",\"command\":\"/bin/true\"}}",
             method ? "\"method\":\"" : "", method ? method : "", method ? "\"," : "", args);
    return parse(env, rec, err);
}

static void test_methods(void)
{
    static const struct {
        const char *method, *args;
        kinds_method_t want;
    } ok[] = {
        {NULL, "{}", KINDS_METHOD_CALL},
        {"tools/call", "{}", KINDS_METHOD_CALL},
        {"resources/read", "{\"uri\":\"file:///a\",\"variables\":{}}", KINDS_METHOD_READ},
        {"prompts/get", "{\"name\":\"p\",\"arguments\":{\"a\":\"1\"}}", KINDS_METHOD_PROMPT},
        {"completion/complete",
         "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"p\"},\"argument\":{\"name\":\"a\","
         "\"value\":\"x\"}}",
         KINDS_METHOD_COMPLETE},
        {"resources/subscribe", "{\"uri\":\"u:1\"}", KINDS_METHOD_SUBSCRIBE},
        {"resources/unsubscribe", "{\"uri\":\"u:1\"}", KINDS_METHOD_UNSUBSCRIBE},
        {"mcpq/catalog", "{}", KINDS_METHOD_CATALOG},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        wrk_envelope_t env;
        char err[256] = "";
        CHECK_INT_EQ(parse_method(&env, ok[i].method, ok[i].args, err), 0);
        CHECK_INT_EQ(env.method_id, ok[i].want);
        CHECK_STR_EQ(env.method, ok[i].method ? ok[i].method : "tools/call");
        CHECK_STR_EQ(kinds_method_name(env.method_id), env.method);
        CHECK_STR_EQ(env.mime_type, "text/markdown");
        wrk_envelope_cleanup(&env);
    }
    static const struct {
        const char *method, *args, *why;
    } bad[] = {
        {"tools/list", "{}", "unknown method \"tools/list\""},
        {"resources/read", "{}", "resources/read needs a string arguments.uri"},
        {"resources/subscribe", "{\"uri\":7}", "resources/subscribe needs a string"},
        {"prompts/get", "{\"arguments\":{}}", "prompts/get needs a string arguments.name"},
        {"completion/complete", "{\"ref\":{}}", "completion/complete needs objects"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        wrk_envelope_t env;
        char err[256] = "";
        CHECK_INT_EQ(parse_method(&env, bad[i].method, bad[i].args, err), MCPQ_EINVAL);
        CHECK_CONTAINS(err, bad[i].why);
        CHECK_STR_EQ(env.job_id, "j1"); /* the worker can still answer with an error record */
        wrk_envelope_cleanup(&env);
    }
    wrk_envelope_t env;
    char err[256] = "";
    const char *s = "{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\",\"method\":7,"
                    "\"executor\":{\"type\":\"exec\"}}";
    CHECK_INT_EQ(parse(&env, s, err), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "method is not a string");
    wrk_envelope_cleanup(&env);
    TEST_PASS("method: each known one parses with what it needs; unknown ones fail clearly");
}

/* "owner", "session_id" and "client": who called and what it can be asked (ask.h). */
static void test_caller(void)
{
    static const char base[] = "{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\","
                               "\"executor\":{\"type\":\"builtin\"}";
    char buf[2048], err[256];
    wrk_envelope_t env;
    snprintf(buf, sizeof(buf),
             "%s,\"owner\":\"key:k1\",\"session_id\":\"s-9\",\"client\":{\"protocol_version\":"
             "\"2025-11-25\",\"capabilities\":{\"elicitation\":{\"form\":{}},\"sampling\":{}}}}",
             base);
    memset(&env, 0, sizeof(env));
    CHECK_INT_EQ(parse(&env, buf, err), 0);
    CHECK_STR_EQ(env.owner, "key:k1");
    CHECK_STR_EQ(env.session_id, "s-9");
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(env.client, "capabilities"), "sampling") != NULL);
    wrk_envelope_cleanup(&env);

    snprintf(buf, sizeof(buf), "%s}", base);
    memset(&env, 0, sizeof(env));
    CHECK_INT_EQ(parse(&env, buf, err), 0);
    CHECK(env.owner == NULL && env.session_id == NULL && env.client == NULL);
    wrk_envelope_cleanup(&env);

    static const struct {
        const char *member, *why;
    } bad[] = {
        {"\"owner\":7", "owner"},
        {"\"session_id\":[]", "session_id"},
        {"\"client\":\"x\"", "client is not an object"},
        {"\"client\":{\"protocol_version\":1}", "client.protocol_version"},
        {"\"client\":{\"capabilities\":[]}", "client.capabilities is not an object"},
        {"\"client\":{\"capabilities\":{\"elicitation\":true}}",
         "client.capabilities.elicitation is not an object"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(buf, sizeof(buf), "%s,%s}", base, bad[i].member);
        memset(&env, 0, sizeof(env));
        CHECK_INT_EQ(parse(&env, buf, err), MCPQ_EINVAL);
        CHECK_CONTAINS(err, bad[i].why);
        wrk_envelope_cleanup(&env);
    }
    TEST_PASS("owner, session_id and client parse; a malformed client is refused");
}

/* The executor's copy keeps every number's value: integers as digits, others as cJSON
 * prints them. */
static void test_body_numbers(void)
{
    wrk_envelope_t env;
    char err[256] = "";
    const char *s = "{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\","
                    "\"executor\":{\"type\":\"http\",\"url\":\"http://x\"},\"call_id\":1.5,"
                    "\"big\":1e300,\"neg\":-42,\"edge\":9007199254740992,\"over\":9007199254740994,"
                    "\"round_us\":1767225600000000}";
    CHECK_INT_EQ(parse(&env, s, err), 0);
    size_t len = 0;
    char *body = wrk_envelope_for_executor(&env, &len);
    CHECK_CONTAINS(body, "\"call_id\":1.5,\"big\":1e+300,\"neg\":-42,"
                         "\"edge\":9007199254740992,\"over\":9007199254740994,"
                         "\"round_us\":1767225600000000}");
    cJSON *back = cJSON_Parse(body);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(back, "over")) == 9007199254740994.0);
    cJSON_Delete(back);
    free(body);
    wrk_envelope_cleanup(&env);
    TEST_PASS("the executor copy prints integers as digits and keeps other numbers");
}

int main(void)
{
    test_caller();
    test_methods();
    test_good();
    test_minimal();
    test_body_numbers();
    test_bad();
    test_hostile_bytes();
    test_ids();
    return 0;
}
