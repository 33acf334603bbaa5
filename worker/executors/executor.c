#include "executor.h"

#include <string.h>

static const wrk_executor_t *const executors[] = {
    &wrk_builtin_executor, &wrk_httpexec_executor, &wrk_exec_executor,
    &wrk_agent_executor,   &wrk_mcpexec_executor,
};

const wrk_executor_t *wrk_executor_find(const char *type)
{
    if (!type)
        return NULL;
    for (size_t i = 0; i < sizeof(executors) / sizeof(executors[0]); i++)
        if (strcmp(executors[i]->type, type) == 0)
            return executors[i];
    return NULL;
}
