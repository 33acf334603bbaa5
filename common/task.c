#include "task.h"

#include "kv.h"
#include "rscript.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The script of each task_script_t: common/lua/task_<name>.lua. */
static const char *const script_names[TASK_SCRIPT_COUNT] = {
    [TASK_SCRIPT_CREATE] = "task_create",     [TASK_SCRIPT_ENQUEUE] = "task_enqueue",
    [TASK_SCRIPT_CLAIM] = "task_claim",       [TASK_SCRIPT_HEARTBEAT] = "task_heartbeat",
    [TASK_SCRIPT_PROGRESS] = "task_progress", [TASK_SCRIPT_FINISH] = "task_finish",
    [TASK_SCRIPT_REAP] = "task_reap",         [TASK_SCRIPT_RELEASE] = "task_release",
    [TASK_SCRIPT_HANDBACK] = "task_handback", [TASK_SCRIPT_ABANDON] = "task_abandon",
    [TASK_SCRIPT_CANCEL] = "task_cancel",
};

redisReply *task_script_run(redisContext *c, task_script_t s, int argc, const char *const *argv,
                            char *errstr, size_t errstr_size)
{
    if (s < 0 || s >= TASK_SCRIPT_COUNT || argc < 0 || argc > 64) {
        snprintf(errstr, errstr_size, "task script unavailable");
        return NULL;
    }
    return rscript_run(c, rscript_get(script_names[s]), 0, argc, argv, NULL, errstr, errstr_size);
}

void task_id_new(char out[TASK_ID_LEN])
{
    char hex[33];
    util_random_hex(hex, 16);
    hex[12] = '4';
    static const char variant[] = "89ab";
    hex[16] = variant[(unsigned char)hex[16] % 4];
    snprintf(out, TASK_ID_LEN, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16,
             hex + 20);
}

int task_robot_ok(const char *robot)
{
    size_t n = robot ? strlen(robot) : 0;
    if (n == 0 || n > TASK_ROBOT_MAX)
        return 0;
    for (const char *p = robot; *p; p++) {
        char ch = *p;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '.' || ch == ':' || ch == '-'))
            return 0;
    }
    return 1;
}

const char *task_mcp_status(const char *state, const char *fault, int ext)
{
    if (!state || strcmp(state, "waiting") == 0 || strcmp(state, "running") == 0)
        return "working";
    if (strcmp(state, "complete") == 0)
        return "completed";
    if (strcmp(state, "terminated") == 0)
        return ext && !(fault && *fault) ? "completed" : "failed";
    return "cancelled";
}
