/*
 * Tests the parts of common/task.c that need no Redis: task ids, RobotId rules and the
 * mapping of task states to the MCP Tasks statuses of each surface (docs/protocol.md). The scripts
 * run against a real Redis in tests/integration/test_tasks.c and tests/clients/tasks.test.mjs.
 */
#include "check.h"
#include "task.h"

#include <string.h>

static void test_ids(void)
{
    char a[TASK_ID_LEN], b[TASK_ID_LEN];
    task_id_new(a);
    task_id_new(b);
    CHECK_INT_EQ((int)strlen(a), 36);
    CHECK(strcmp(a, b) != 0);
    CHECK(a[8] == '-' && a[13] == '-' && a[18] == '-' && a[23] == '-');
    CHECK(a[14] == '4');                  /* version 4 */
    CHECK(strchr("89ab", a[19]) != NULL); /* RFC 4122 variant */
    TEST_PASS("task ids are random UUIDv4");
}

static void test_robot(void)
{
    CHECK(task_robot_ok("robot-1"));
    CHECK(task_robot_ok("pool.a:b_c"));
    CHECK(!task_robot_ok(""));
    CHECK(!task_robot_ok("has space"));
    CHECK(!task_robot_ok("slash/no"));
    char longest[TASK_ROBOT_MAX + 2];
    memset(longest, 'r', sizeof(longest) - 1);
    longest[TASK_ROBOT_MAX] = '\0';
    CHECK(task_robot_ok(longest));
    longest[TASK_ROBOT_MAX] = 'r';
    longest[TASK_ROBOT_MAX + 1] = '\0';
    CHECK(!task_robot_ok(longest));
    TEST_PASS("RobotId: 1..128 of [A-Za-z0-9_.:-]");
}

static void test_status(void)
{
    for (int ext = 0; ext <= 1; ext++) {
        CHECK_STR_EQ(task_mcp_status("waiting", "", ext), "working");
        CHECK_STR_EQ(task_mcp_status("running", "", ext), "working");
        CHECK_STR_EQ(task_mcp_status("complete", "", ext), "completed");
        CHECK_STR_EQ(task_mcp_status("cancelled", "", ext), "cancelled");
        CHECK_STR_EQ(task_mcp_status("terminated", TASK_FAULT_TIMEOUT, ext), "failed");
        CHECK_STR_EQ(task_mcp_status("terminated", TASK_FAULT_INTERNAL, ext), "failed");
    }
    /* The tool's own isError result: failed for 2025-11-25, completed for the extension. */
    CHECK_STR_EQ(task_mcp_status("terminated", "", 0), "failed");
    CHECK_STR_EQ(task_mcp_status("terminated", NULL, 0), "failed");
    CHECK_STR_EQ(task_mcp_status("terminated", "", 1), "completed");
    CHECK_STR_EQ(task_mcp_status("terminated", NULL, 1), "completed");
    TEST_PASS("task states map to each surface's MCP Tasks status");
}

int main(void)
{
    test_ids();
    test_robot();
    test_status();
    return 0;
}
