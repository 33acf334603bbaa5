/*
 * Tests the parts of common/whq.c that need no Redis: the event names, the shape of the Lua
 * source other scripts prepend, and whq_event's argument checks (which refuse before any
 * Redis round trip). tests/integration/test_whq.c runs the Lua against a real Redis.
 */
#include "check.h"
#include "err.h"
#include "kv.h"
#include "settings.h"
#include "rscript.h"
#include "whq.h"

#include <string.h>

static void test_events(void)
{
    CHECK(whq_event_known("task.running"));
    CHECK(whq_event_known("task.input_required"));
    CHECK(whq_event_known("task.completed"));
    CHECK(whq_event_known("task.terminated"));
    CHECK(whq_event_known("task.cancelled"));
    CHECK(whq_event_known("tool.changed"));
    CHECK(!whq_event_known("task.complete"));
    CHECK(!whq_event_known("Task.running"));
    CHECK(!whq_event_known(""));
    CHECK(!whq_event_known(NULL));
    TEST_PASS("the four task events are known, nothing else");
}

static void test_source(void)
{
    /* It defines one local function with the agreed signature and calls nothing at load. */
    const char *sig = "local function whq_enqueue(tenant, event, task_id, data_json, iso_ts, "
                      "now_ms, id_base)\n";
    /* common/lua/lib_whq.lua as loaded: its header comment, then the function. */
    const char *lib = rscript_text(rscript_get("lib_whq"));
    CHECK(lib != NULL);
    const char *WHQ_LUA_ENQUEUE = strstr(lib, "\nlocal function") + 1;
    CHECK(strncmp(WHQ_LUA_ENQUEUE, sig, strlen(sig)) == 0);
    size_t n = strlen(WHQ_LUA_ENQUEUE);
    CHECK(n > 4 && strcmp(WHQ_LUA_ENQUEUE + n - 4, "end\n") == 0);
    /* Every other line is indented: no top-level statement besides the definition. */
    for (const char *p = strchr(WHQ_LUA_ENQUEUE, '\n') + 1; *p; p = strchr(p, '\n') + 1) {
        if (strncmp(p, "end\n", 4) == 0) {
            CHECK(p[4] == '\0');
            break;
        }
        CHECK(p[0] == ' ');
    }
    /* The body is concatenated, never re-encoded. */
    CHECK(strstr(WHQ_LUA_ENQUEUE, "'\",\"data\":' .. data_json .. '}'") != NULL);
    CHECK(strstr(WHQ_LUA_ENQUEUE, "cjson.encode") == NULL);
    TEST_PASS("lib_whq.lua only defines whq_enqueue and passes data through");
}

static void test_args(void)
{
    char err[256];
    mcpq_settings_t set = {.redis_url = "redis://127.0.0.1:1/0"}; /* never reached */
    kv_target_t *kvt = kv_target_new(&set, err, sizeof(err));
    CHECK(kvt != NULL);
    kv_pool_t *kv = kv_pool_new(kvt, 100, 1);
    CHECK(kv != NULL);
    CHECK_INT_EQ(whq_event(kv, "", "task.completed", "t", "{}", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_INT_EQ(whq_event(kv, "a", "task.done", "t", "{}", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_INT_EQ(whq_event(kv, "a", "task.completed", "", "{}", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_INT_EQ(whq_event(kv, "a", "task.completed", "t", NULL, err, sizeof(err)), MCPQ_EINVAL);
    CHECK_INT_EQ(whq_event(kv, "a", "task.completed", "t", "[1]", err, sizeof(err)), MCPQ_EINVAL);
    CHECK_INT_EQ(whq_event(kv, "a", "task.completed", "t", "{\"a\":", err, sizeof(err)),
                 MCPQ_EINVAL);
    CHECK_CONTAINS(err, "not a JSON object");
    CHECK_INT_EQ(whq_event(NULL, "a", "task.completed", "t", "{}", err, sizeof(err)), MCPQ_EINVAL);
    /* Valid arguments reach Redis, which is not there. */
    CHECK_INT_EQ(whq_event(kv, "a", "task.completed", "t", "{}", err, sizeof(err)), MCPQ_EUNAVAIL);
    kv_pool_free(kv);
    kv_target_free(kvt);
    TEST_PASS("whq_event refuses bad arguments before Redis, and says when Redis is down");
}

int main(void)
{
    test_events();
    test_source();
    test_args();
    return 0;
}
