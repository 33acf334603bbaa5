/*
 * fuzz_schema.c - libFuzzer driver for common/sch.c and common/schdoc.c (JSON Schema 2020-12:
 * the keywords, $ref through $id and $anchor, URI resolution, the compiled form): a tool's
 * inputSchema and an elicitation's requestedSchema come from users and upstream servers, the
 * instances from clients.
 *
 * The input is the schema as JSON on its first line (up to a NUL or newline), then the
 * instance as JSON.
 *
 * Checked (sch.h is the contract):
 *   - sch_validate answers 0, MCPQ_EINVAL or MCPQ_ENOMEM, and a failure's message is one line
 *     starting with the root name ("$: " or "$." or "$[");
 *   - sch_schema_check and sch_compile agree: a schema the check accepts compiles, one it
 *     refuses does not, with the same message;
 *   - a compiled schema answers exactly as sch_validate does (result and message), and
 *     sch_compiled_schema is a copy of the schema (it prints alike);
 *   - both terminate within the bounds (SCH_MAX_DEPTH, SCH_MAX_REFS), which the replay's
 *     timeout and libFuzzer's -timeout see.
 */
#include "err.h"
#include "fuzz.h"
#include "sch.h"

#include <cjson/cJSON.h>

static void check_message(const char *err)
{
    FUZZ_CHECK(strchr(err, '\n') == NULL);
    FUZZ_CHECK(strncmp(err, "$", 1) == 0 && (err[1] == ':' || err[1] == '.' || err[1] == '['));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = NULL, *f[1];
    size_t rest_len = 0;
    const char *rest = fuzz_fields(data, size, &copy, f, 1, &rest_len);
    cJSON *schema = rest && f[0] ? cJSON_Parse(f[0]) : NULL;
    cJSON *inst = schema ? cJSON_ParseWithLength(rest, rest_len) : NULL;
    char e1[1024] = "", e2[1024] = "", e3[1024] = "";
    if (!inst)
        goto out;
    int r1 = sch_validate(schema, inst, "$", e1, sizeof(e1));
    FUZZ_CHECK(r1 == 0 || r1 == MCPQ_EINVAL || r1 == MCPQ_ENOMEM);
    if (r1 != 0)
        check_message(e1);
    int chk = sch_schema_check(schema, "$", e2, sizeof(e2));
    sch_compiled_t *comp = sch_compile(schema, "$", e3, sizeof(e3));
    if (chk == MCPQ_ENOMEM || (!comp && strstr(e3, "out of memory")))
        goto out_comp;
    FUZZ_CHECK((chk == 0) == (comp != NULL));
    if (!comp) {
        FUZZ_CHECK(strcmp(e2, e3) == 0);
        check_message(e2);
        goto out_comp;
    }
    /* the copy prints alike (jv_equal would not do: a schema may repeat a member name) */
    char *p1 = cJSON_PrintUnformatted(schema),
         *p2 = cJSON_PrintUnformatted(sch_compiled_schema(comp));
    FUZZ_CHECK(!p1 || !p2 || strcmp(p1, p2) == 0);
    cJSON_free(p1);
    cJSON_free(p2);
    int r2 = sch_compiled_validate(comp, inst, "$", e3, sizeof(e3));
    FUZZ_CHECK(r2 == r1);
    if (r1 != 0)
        FUZZ_CHECK(strcmp(e1, e3) == 0);
out_comp:
    sch_compiled_free(comp);
out:
    cJSON_Delete(inst);
    cJSON_Delete(schema);
    free(copy);
    return 0;
}
