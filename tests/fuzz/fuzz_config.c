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
 * Of "oauth": an "introspection" with a "client_secret" and no "client_secret_env", a
 * "jwks_uri" only with exactly one issuer, "tenant_value" only with "tenant", no
 * "offline_access" advertised; tenants that share an issuer each name claims.tenant and the
 * same jwks_uri, and the same introspection endpoint and client_id where the issuer is a
 * tenant's first (the one its introspection belongs to; cfg.h cfg_check_issuers_shared), read
 * here independently of cfg.c. No server is named "system" (the built-in one).
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

static const char *str_of(const cJSON *obj, const char *name)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, name));
}

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_oauth(const cJSON *t)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(t, "oauth");
    const cJSON *intro = cJSON_GetObjectItemCaseSensitive(o, "introspection");
    const cJSON *claims = cJSON_GetObjectItemCaseSensitive(o, "claims");
    const cJSON *e;
    if (!o)
        return;
    if (intro) {
        FUZZ_CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(intro, "client_secret")));
        FUZZ_CHECK(!cJSON_HasObjectItem(intro, "client_secret_env"));
        FUZZ_CHECK(str_of(intro, "endpoint") && str_of(intro, "client_id"));
    }
    FUZZ_CHECK(!str_of(o, "jwks_uri") ||
               cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "issuers")) == 1);
    FUZZ_CHECK(!str_of(claims, "tenant_value") || str_of(claims, "tenant"));
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "scopes_supported"))
        FUZZ_CHECK(!cJSON_IsString(e) || strcmp(e->valuestring, "offline_access") != 0);
}

/* The introspection t uses for issuer iss: its own when iss is its first issuer, else none. */
static const cJSON *introspection_for(const cJSON *t, const char *iss)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(t, "oauth");
    const char *first =
        cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "issuers"), 0));
    return first && strcmp(first, iss) == 0 ? cJSON_GetObjectItemCaseSensitive(o, "introspection")
                                            : NULL;
}

/* Tenants sharing an issuer agree on where its keys and introspection answers come from. */
static void check_shared_issuers(const cJSON *tenants)
{
    for (const cJSON *t = tenants->child; t; t = t->next)
        for (const cJSON *u = t->next; u; u = u->next) {
            const cJSON *o = cJSON_GetObjectItemCaseSensitive(t, "oauth");
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(u, "oauth"), *a, *b;
            cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(o, "issuers"))
                cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(p, "issuers"))
            {
                if (!cJSON_IsString(a) || !cJSON_IsString(b) ||
                    strcmp(a->valuestring, b->valuestring) != 0)
                    continue;
                const cJSON *ti = introspection_for(t, a->valuestring);
                const cJSON *ui = introspection_for(u, a->valuestring);
                FUZZ_CHECK(str_of(cJSON_GetObjectItemCaseSensitive(o, "claims"), "tenant"));
                FUZZ_CHECK(str_of(cJSON_GetObjectItemCaseSensitive(p, "claims"), "tenant"));
                FUZZ_CHECK(same(str_of(o, "jwks_uri"), str_of(p, "jwks_uri")));
                FUZZ_CHECK(same(str_of(ti, "endpoint"), str_of(ui, "endpoint")));
                FUZZ_CHECK(same(str_of(ti, "client_id"), str_of(ui, "client_id")));
            }
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
    for (const cJSON *t = tenants->child; t; t = t->next) {
        check_tenant(t);
        check_oauth(t);
    }
    check_shared_issuers(tenants);
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(doc, "servers"))
        FUZZ_CHECK(!same(str_of(s, "name"), "system"));
    char *printed = cJSON_PrintUnformatted(doc);
    FUZZ_CHECK(printed != NULL);
    cJSON_free(printed);
    cJSON_Delete(doc);
    return 0;
}
