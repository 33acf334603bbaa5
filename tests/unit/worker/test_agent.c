/* Unit tests of worker/executors/agent.c's pure helpers: the chat_message, agent_reply → result, and
 * turns. */
#include "agent.h"
#include "check.h"
#include "sch.h"

#include <stdlib.h>
#include <string.h>

static const char env_json[] =
    "{\"v\":1,\"job_id\":\"j_1\",\"tenant\":\"t1\",\"tool\":\"ask\",\"arguments\":{\"q\":\"hi\"},"
    "\"attachments\":[{\"file_id\":\"f_1\"}],\"executor\":{\"type\":\"agent\",\"url\":\"http://"
    "a\"},"
    "\"deadline_ms\":1000}";

static cJSON *parse(const char *s)
{
    cJSON *o = cJSON_Parse(s);
    CHECK(o != NULL);
    return o;
}

int main(void)
{
    wrk_envelope_t env;
    char why[200];
    CHECK_INT_EQ(wrk_envelope_parse(&env, env_json, strlen(env_json), why, sizeof(why)), 0);

    cJSON *turns = parse("[{\"in\":{\"message_id\":\"j_0\",\"tool\":\"ask\",\"arguments\":{},"
                         "\"at_ms\":1},\"out\":{\"content\":[],\"isError\":false}}]");
    cJSON *m = wrk_agent_chat_message(&env, "j_1", "c_1", turns);
    CHECK(m != NULL);
    CHECK_INT_EQ(sch_validate(sch_builtin("chat-message.schema.json"), m, "m", why, sizeof(why)),
                 0);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItem(m, "turns")), 1);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItem(m, "attachments")), 1);
    cJSON_Delete(m);
    TEST_PASS("chat_message carries the call, attachments and turns, schema-valid");

    cJSON *r = parse("{\"type\":\"agent_reply\",\"in_reply_to\":\"j_1\",\"text\":\"yo\"}");
    cJSON *res = wrk_agent_reply_result(r, "j_1", why, sizeof(why));
    CHECK(res != NULL);
    CHECK_STR_EQ(
        cJSON_GetArrayItem(cJSON_GetObjectItem(res, "content"), 0)->child->next->valuestring, "yo");
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(res, "isError")));
    cJSON *turn = wrk_agent_turn(&env, "j_1", 5, res);
    CHECK(turn != NULL);
    CHECK_STR_EQ(cJSON_GetObjectItem(cJSON_GetObjectItem(turn, "in"), "tool")->valuestring, "ask");
    cJSON_Delete(turn);
    cJSON_Delete(res);
    cJSON_Delete(r);
    TEST_PASS("a text reply becomes one text block; a turn records the call and the result");

    r = parse("{\"type\":\"agent_reply\",\"in_reply_to\":\"j_1\",\"isError\":true,"
              "\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"image\",\"data\":\"x\","
              "\"mimeType\":\"image/png\"}]}");
    res = wrk_agent_reply_result(r, "j_1", why, sizeof(why));
    CHECK(res != NULL);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItem(res, "content")), 2);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(res, "isError")));
    cJSON_Delete(res);
    cJSON_Delete(r);
    TEST_PASS("a content reply passes through with isError");

    const char *bad[] = {"{\"type\":\"chat_message\",\"text\":\"x\"}",
                         "{\"type\":\"agent_reply\",\"in_reply_to\":\"j_2\",\"text\":\"x\"}",
                         "{\"type\":\"agent_reply\",\"in_reply_to\":\"j_1\"}",
                         "{\"type\":\"agent_reply\",\"content\":[{\"text\":\"no type\"}]}",
                         "{\"type\":\"agent_reply\",\"content\":\"x\"}",
                         "[1]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = parse(bad[i]);
        why[0] = '\0';
        CHECK(wrk_agent_reply_result(r, "j_1", why, sizeof(why)) == NULL);
        CHECK(why[0] != '\0');
        cJSON_Delete(r);
    }
    TEST_PASS("wrong type, in_reply_to, missing text/content and untyped blocks are refused");
    wrk_envelope_cleanup(&env);
    return 0;
}
