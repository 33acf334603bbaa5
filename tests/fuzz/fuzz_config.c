/*
 * fuzz_config.c - libFuzzer driver for the config loader (common/cfg.c): the input is a
 * config file's text, given to cfg_load_string. That covers the strict text checks (UTF-8,
 * NUL, trailing bytes), cJSON, validation against the embedded schemas/config.schema.json
 * and call-tool-result.schema.json (common/sch.c, its patterns through common/rx.c and
 * glibc regcomp), sch_schema_check of every inputSchema and outputSchema, and the
 * normalization (duplicate ids, references, secrets, API key hashes).
 *
 * The schemas are compiled into mcpqcommon (sch_builtin), so the driver works from any
 * directory. "key_env" and "secret_env" read the environment, which the driver leaves as
 * it is. Checked: a refused config has an error message; an accepted one is an object with
 * "tenants", "servers" and "tools" arrays, no plaintext API key ("key", "key_env") and a
 * 64-digit "sha256" per key, no "secret_env" or "previous_secret_env" left in apps, and a
 * "previous_secret_expires" only next to a "previous_secret" and readable as a UTC time.
 */
#include "cfg.h"
#include "fuzz.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <string.h>

static void check_tenant(const cJSON *t)
{
    const cJSON *keys = cJSON_GetObjectItemCaseSensitive(t, "api_keys");
    const cJSON *apps = cJSON_GetObjectItemCaseSensitive(t, "apps");
    FUZZ_CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(t, "id")));
    FUZZ_CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(t, "default_server")));
    for (const cJSON *k = keys ? keys->child : NULL; k; k = k->next) {
        const cJSON *hash = cJSON_GetObjectItemCaseSensitive(k, "sha256");
        FUZZ_CHECK(!cJSON_HasObjectItem(k, "key") && !cJSON_HasObjectItem(k, "key_env"));
        FUZZ_CHECK(cJSON_IsString(hash) && strlen(hash->valuestring) == 64);
    }
    for (const cJSON *a = apps ? apps->child : NULL; a; a = a->next) {
        const char *until =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "previous_secret_expires"));
        int64_t ms;
        FUZZ_CHECK(!cJSON_HasObjectItem(a, "secret_env"));
        FUZZ_CHECK(!cJSON_HasObjectItem(a, "previous_secret_env"));
        FUZZ_CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(a, "secret")));
        FUZZ_CHECK(!until ||
                   (cJSON_HasObjectItem(a, "previous_secret") && util_parse_utc(until, &ms) == 0));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    memset(err, 0, sizeof(err));
    cJSON *doc = cfg_load_string((const char *)data, size, err, sizeof(err));
    if (!doc) {
        FUZZ_CHECK(err[0] != '\0' && memchr(err, '\0', sizeof(err)) != NULL);
        return 0;
    }
    const cJSON *tenants = cJSON_GetObjectItemCaseSensitive(doc, "tenants");
    FUZZ_CHECK(cJSON_IsObject(doc) && cJSON_IsArray(tenants) && tenants->child);
    FUZZ_CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "servers")));
    FUZZ_CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "tools")));
    for (const cJSON *t = tenants->child; t; t = t->next)
        check_tenant(t);
    char *printed = cJSON_PrintUnformatted(doc);
    FUZZ_CHECK(printed != NULL);
    cJSON_free(printed);
    cJSON_Delete(doc);
    return 0;
}
