/* bench-sch_validate: the cost of checking tools/call arguments against an inputSchema with
 * patterns, one-off (sch_validate: patterns compiled on every call) against compiled once
 * (sch_compile + sch_compiled_validate, what tools/call does since the registry snapshot
 * compiles each inputSchema).
 *
 *   build/bench-sch_validate [ITERATIONS]      prints microseconds per validation */
#include "sch.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char schema_text[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"repo\",\"branch\"],"
    "\"properties\":{"
    "\"repo\":{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$\"},"
    "\"branch\":{\"type\":\"string\",\"pattern\":\"^[a-z0-9][a-z0-9/_-]{0,99}$\"},"
    "\"sha\":{\"type\":\"string\",\"pattern\":\"^[0-9a-f]{40}$\"},"
    "\"email\":{\"type\":\"string\",\"format\":\"email\",\"pattern\":\"^[^@ ]+@[^@ ]+$\"},"
    "\"labels\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"pattern\":\"^\\\\w+$\"},"
    "\"uniqueItems\":true},"
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100}},"
    "\"patternProperties\":{\"^x-[a-z]+$\":{\"type\":\"string\"}}}";

static const char instance_text[] =
    "{\"repo\":\"mcpq/mcpq\",\"branch\":\"feature/schema-2020\","
    "\"sha\":\"0123456789abcdef0123456789abcdef01234567\",\"email\":\"dev@example.com\","
    "\"labels\":[\"bug\",\"schema\",\"perf\"],\"limit\":20,\"x-trace\":\"on\"}";

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    cJSON *schema = cJSON_Parse(schema_text), *inst = cJSON_Parse(instance_text);
    char err[512];
    if (!schema || !inst || n <= 0)
        return 2;
    double t0 = now_us();
    for (long i = 0; i < n; i++)
        if (sch_validate(schema, inst, "arguments", err, sizeof(err)) != 0) {
            fprintf(stderr, "invalid: %s\n", err);
            return 1;
        }
    double one_off = (now_us() - t0) / (double)n;
    t0 = now_us();
    sch_compiled_t *comp = sch_compile(schema, "inputSchema", err, sizeof(err));
    double compile = now_us() - t0;
    if (!comp) {
        fprintf(stderr, "not compiled: %s\n", err);
        return 1;
    }
    t0 = now_us();
    for (long i = 0; i < n; i++)
        if (sch_compiled_validate(comp, inst, "arguments", err, sizeof(err)) != 0)
            return 1;
    double compiled = (now_us() - t0) / (double)n;
    printf("sch_validate (one-off): %.2f us/call\n", one_off);
    printf("sch_compile once: %.2f us; sch_compiled_validate: %.2f us/call (%.1fx)\n", compile,
           compiled, one_off / compiled);
    sch_compiled_free(comp);
    cJSON_Delete(schema);
    cJSON_Delete(inst);
    return 0;
}
