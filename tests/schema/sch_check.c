/* sch-check: validates JSON documents against one schema with common/sch.c, for the
 * differential test against ajv (tests/schema/sch-ajv.mjs).
 *
 *   sch-check SCHEMA_FILE < DOCS.jsonl
 *
 * The schema is compiled once (sch_compile); each input line is one JSON document, answered
 * by one output line: "1" valid, "0 <error>" invalid, "E <error>" when the line is not JSON.
 * Exits 2 when the schema is refused (the reason on stderr). */
#include "err.h"
#include "sch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_BYTES (1 << 20)

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long n;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)n + 1)) && fread(text, 1, (size_t)n, f) == (size_t)n)
        text[n] = '\0';
    else {
        free(text);
        text = NULL;
    }
    fclose(f);
    return text;
}

int main(int argc, char **argv)
{
    char err[1024];
    if (argc != 2) {
        fprintf(stderr, "usage: sch-check SCHEMA_FILE < DOCS.jsonl\n");
        return 2;
    }
    char *text = read_file(argv[1]);
    cJSON *schema = text ? cJSON_Parse(text) : NULL;
    free(text);
    sch_compiled_t *comp = schema ? sch_compile(schema, "$", err, sizeof(err)) : NULL;
    cJSON_Delete(schema);
    if (!comp) {
        fprintf(stderr, "sch-check: %s: %s\n", argv[1], schema ? err : "not a JSON file");
        return 2;
    }
    char *line = malloc(LINE_MAX_BYTES);
    while (line && fgets(line, LINE_MAX_BYTES, stdin)) {
        cJSON *doc = cJSON_Parse(line);
        if (!doc) {
            printf("E not JSON\n");
            continue;
        }
        int rc = sch_compiled_validate(comp, doc, "$", err, sizeof(err));
        if (rc == 0)
            printf("1\n");
        else
            printf("%s %s\n", rc == MCPQ_EINVAL ? "0" : "E", err);
        cJSON_Delete(doc);
    }
    free(line);
    sch_compiled_free(comp);
    return 0;
}
