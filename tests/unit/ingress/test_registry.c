/* Tests ingress/core/registry.c: snapshots built from registry documents (docs/config-file.md). */
#include "check.h"
#include "registry.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

static const char *const docs[] = {
    "tenant:acme",
    "{\"id\":\"acme\",\"default_server\":\"default\",\"api_keys\":[{\"id\":\"k1\",\"sha256\":"
    "\"SHA_ACME\"}],\"rate_limits\":{\"api_key\":{\"per_second\":2.5,\"burst\":7},\"app\":{"
    "\"per_second\":0}},\"apps\":[{\"app_id\":\"a1\",\"secret\":\"s1\"},{\"app_id\":\"a2\","
    "\"secret\":\"s2\",\"rate_limit\":{\"per_second\":9}},{\"app_id\":\"a3\",\"secret\":\"\"}],"
    "\"robots\":[\"rpa-2\",\"rpa-1\"]}",
    "tenant:globex",
    "{\"id\":\"globex\",\"api_keys\":[{\"id\":\"g1\",\"sha256\":\"SHA_GLOBEX\","
    "\"rate_limit\":{\"per_second\":1,\"burst\":3}}],\"robots\":[\"g-bot\"]}",
    "server:acme:default",
    "{\"tenant\":\"acme\",\"name\":\"default\"}",
    "server:acme:ops",
    "{\"tenant\":\"acme\",\"name\":\"ops\"}",
    "server:globex:default",
    "{\"tenant\":\"globex\",\"name\":\"default\"}",
    "tool:acme:zeta",
    "{\"tenant\":\"acme\",\"server\":\"default\",\"name\":\"zeta\",\"published\":\"2\","
    "\"versions\":[{\"version\":\"1\",\"description\":\"old\"},{\"version\":\"2\","
    "\"description\":\"new\",\"timeout_ms\":1500,\"inputSchema\":{\"type\":\"object\"}}]}",
    "tool:acme:alpha",
    "{\"tenant\":\"acme\",\"server\":\"default\",\"name\":\"alpha\",\"published\":\"1\","
    "\"versions\":[{\"version\":\"1\",\"mode\":\"task\",\"fake\":{\"enabled\":true,\"result\":"
    "{\"content\":[]}}}]}",
    "tool:acme:offline",
    "{\"tenant\":\"acme\",\"server\":\"default\",\"name\":\"offline\",\"versions\":[{\"version\":"
    "\"1\"}]}",
    "tool:acme:opsy",
    "{\"tenant\":\"acme\",\"server\":\"ops\",\"name\":\"opsy\",\"published\":\"1\",\"versions\":"
    "[{\"version\":\"1\",\"inputSchema\":{\"$dynamicRef\":\"#node\"}}]}",
    "tool:globex:echo",
    "{\"tenant\":\"globex\",\"server\":\"default\",\"name\":\"echo\",\"published\":\"1\","
    "\"versions\":[{\"version\":\"1\"}]}",
    "tool:nobody:x",
    "{\"tenant\":\"nobody\",\"server\":\"default\",\"name\":\"x\",\"published\":\"1\","
    "\"versions\":[{\"version\":\"1\"}]}",
};

static void sha_hex(const char *key, char out[65], unsigned char raw[32])
{
    SHA256((const unsigned char *)key, strlen(key), raw);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

#define INTRO(T, ENDPOINT)                                                                         \
    "{\"id\":\"" T "\",\"oauth\":{\"issuers\":[\"https://idp.example.com/" T "\"]" ENDPOINT "}}"
#define WITH_ENDPOINT(T)                                                                           \
    ",\"introspection\":{\"endpoint\":\"https://idp.example.com/" T "/i\",\"client_id\":\"c\","    \
    "\"client_secret\":\"s\"}"

/* Who introspects opaque tokens where: "a" and "b" introspect, "j" takes only JWTs, "n" takes no
 * tokens; "a" alone has server "only-a", "a" and "b" both have "both", "a" and "j" have "aj". */
static void test_introspector(void)
{
    const char *f[] = {
        "tenant:a",        INTRO("a", WITH_ENDPOINT("a")),
        "tenant:b",        INTRO("b", WITH_ENDPOINT("b")),
        "tenant:j",        INTRO("j", ""),
        "tenant:n",        "{\"id\":\"n\"}",
        "server:a:only-a", "{\"tenant\":\"a\",\"name\":\"only-a\"}",
        "server:a:both",   "{\"tenant\":\"a\",\"name\":\"both\"}",
        "server:b:both",   "{\"tenant\":\"b\",\"name\":\"both\"}",
        "server:a:aj",     "{\"tenant\":\"a\",\"name\":\"aj\"}",
        "server:j:aj",     "{\"tenant\":\"j\",\"name\":\"aj\"}",
        "server:n:none",   "{\"tenant\":\"n\",\"name\":\"none\"}",
    };
    enum { N = sizeof(f) / sizeof(f[0]) };
    size_t lens[N], n = 99;
    for (size_t i = 0; i < N; i++)
        lens[i] = strlen(f[i]);
    char err[256], msg[400];
    ing_registry_t *reg = ing_registry_build(f, lens, N, 1, err, sizeof(err));
    CHECK(reg != NULL);
    CHECK_STR_EQ(ing_registry_introspector(reg, "only-a", &n)->id, "a");
    CHECK_INT_EQ(n, 1);
    CHECK_STR_EQ(ing_registry_introspector(reg, "aj", &n)->id, "a"); /* j takes no opaque ones */
    CHECK_INT_EQ(n, 1);
    CHECK(ing_registry_introspector(reg, "both", &n) == NULL);
    CHECK_INT_EQ(n, 2);
    CHECK(ing_registry_introspector(reg, NULL, &n) == NULL); /* /mcp and /v1: a and b */
    CHECK_INT_EQ(n, 2);
    CHECK(ing_registry_introspector(reg, "none", &n) == NULL);
    CHECK_INT_EQ(n, 0);
    CHECK(ing_registry_introspector(reg, "missing", NULL) == NULL);
    const ing_introspector_t *amb[4];
    CHECK_INT_EQ(ing_registry_introspect_ambiguous(reg, amb, 4), 2);
    CHECK(amb[0]->server == NULL);
    CHECK_STR_EQ(amb[1]->server, "both");
    ing_registry_introspect_warning(amb[1], msg, sizeof(msg));
    CHECK_CONTAINS(msg, "opaque tokens are ambiguous at /mcp/both: 2 tenants");
    ing_registry_introspect_warning(amb[0], msg, sizeof(msg));
    CHECK_CONTAINS(msg, "at /mcp and /v1: 2 tenants");
    CHECK_INT_EQ(ing_registry_introspect_ambiguous(reg, amb, 1), 1);
    ing_registry_unref(reg);

    /* one introspecting tenant: it alone, at every resource it serves */
    ing_registry_t *one = ing_registry_build(f, lens, 2, 2, err, sizeof(err));
    CHECK(one != NULL);
    CHECK_STR_EQ(ing_registry_introspector(one, NULL, &n)->id, "a");
    CHECK_INT_EQ(ing_registry_introspect_ambiguous(one, amb, 4), 0);
    ing_registry_unref(one);
    TEST_PASS("who introspects where: one tenant per resource, ambiguous ones listed");
}

/* Builds a snapshot of f (n fields and documents). */
static ing_registry_t *build(const char *const *f, size_t n)
{
    size_t lens[64];
    char err[256];
    CHECK(n <= 64);
    for (size_t i = 0; i < n; i++)
        lens[i] = strlen(f[i]);
    ing_registry_t *reg = ing_registry_build(f, lens, n, 1, err, sizeof(err));
    CHECK(reg != NULL);
    return reg;
}

#define KDOC(KIND, NAME, VER)                                                                      \
    "{\"kind\":\"" KIND "\",\"tenant\":\"k\",\"server\":\"default\",\"name\":\"" NAME "\","        \
    "\"published\":\"1\",\"versions\":[{\"version\":\"1\"," VER "}]}"

/* Every kind in its own list of its server, sorted, with its list entry; tools see tools
 * only; lookups by kind, by uri and by template. */
static void test_kinds(void)
{
    const char *f[] = {
        "tenant:k",
        "{\"id\":\"k\"}",
        "server:k:default",
        "{\"tenant\":\"k\",\"name\":\"default\"}",
        "tool:k:echo",
        "{\"tenant\":\"k\",\"server\":\"default\",\"name\":\"echo\",\"published\":\"1\","
        "\"versions\":[{\"version\":\"1\"}]}",
        "tool:k:zreadme",
        KDOC("resource", "zreadme",
             "\"uri\":\"file:///a\",\"mimeType\":\"text/plain\","
             "\"text\":\"hello\",\"ttl_ms\":5"),
        "tool:k:blobby",
        KDOC("resource", "blobby", "\"uri\":\"file:///b\",\"blob\":\"aGk=\",\"size\":99"),
        "tool:k:dyn",
        KDOC("resource", "dyn",
             "\"uri\":\"file:///c\",\"executor\":{\"type\":\"builtin\","
             "\"name\":\"echo\"}"),
        "tool:k:logs",
        KDOC("resource_template", "logs", "\"uriTemplate\":\"file:///logs/{day}\",\"text\":\"x\""),
        "tool:k:alogs",
        KDOC("resource_template", "alogs",
             "\"uriTemplate\":\"file:///logs/{d}.txt\",\"text\":\"x\""),
        "tool:k:greet",
        KDOC("prompt", "greet",
             "\"description\":\"Greets\",\"arguments\":[{\"name\":\"who\"}],"
             "\"messages\":[]"),
        "tool:k:widget",
        KDOC("widget", "widget", "\"x\":1"),
    };
    ing_registry_t *reg = build(f, sizeof(f) / sizeof(f[0]));
    const ing_server_t *s = ing_registry_server(reg, "k", "default");
    CHECK_INT_EQ(s->ntools, 1);
    CHECK_STR_EQ(s->tools[0]->name, "echo");
    CHECK_INT_EQ(s->tools[0]->kind, ING_KIND_TOOL);
    CHECK_INT_EQ(s->nresources, 3);
    CHECK_STR_EQ(s->resources[0]->name, "blobby");
    CHECK_STR_EQ(s->resources[2]->name, "zreadme");
    CHECK_INT_EQ(s->ntemplates, 2);
    CHECK_STR_EQ(s->templates[0]->name, "alogs");
    CHECK_INT_EQ(s->nprompts, 1); /* an unknown kind is not served */
    /* list entries of each kind: the size of static content when not given */
    CHECK_STR_EQ(s->resources[2]->list_json,
                 "{\"name\":\"zreadme\",\"uri\":\"file:///a\",\"mimeType\":\"text/plain\","
                 "\"size\":5}");
    CHECK_STR_EQ(s->resources[0]->list_json,
                 "{\"name\":\"blobby\",\"uri\":\"file:///b\",\"size\":99}");
    CHECK_STR_EQ(s->resources[1]->list_json, "{\"name\":\"dyn\",\"uri\":\"file:///c\"}");
    CHECK_STR_EQ(s->templates[1]->list_json,
                 "{\"name\":\"logs\",\"uriTemplate\":\"file:///logs/{day}\"}");
    CHECK_STR_EQ(s->prompts[0]->list_json,
                 "{\"name\":\"greet\",\"description\":\"Greets\",\"arguments\":[{\"name\":"
                 "\"who\"}]}");
    /* a prompt or resource is no tool */
    CHECK(ing_registry_tool(s, "greet") == NULL);
    CHECK(ing_registry_tool(s, "zreadme") == NULL);
    CHECK(ing_registry_object(s, ING_KIND_PROMPT, "greet") == s->prompts[0]);
    CHECK(ing_registry_object(s, ING_KIND_RESOURCE, "greet") == NULL);
    CHECK(ing_registry_object(s, -1, "greet") == s->prompts[0]);
    CHECK(ing_registry_object(s, -1, "echo") == s->tools[0]);
    CHECK(ing_registry_object(s, -1, "nope") == NULL);
    CHECK_STR_EQ(ing_registry_resource(s, "file:///a")->name, "zreadme");
    CHECK_STR_EQ(ing_registry_resource(s, "file:///c")->name, "dyn");
    CHECK(ing_registry_resource(s, "file:///d") == NULL);
    /* templates by name order: alogs matches first where both do */
    cJSON *vars = NULL;
    const ing_tool_t *t = ing_registry_template_match(s, "file:///logs/mon.txt", &vars);
    CHECK_STR_EQ(t->name, "alogs");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(vars, "d")), "mon");
    cJSON_Delete(vars);
    t = ing_registry_template_match(s, "file:///logs/mon", &vars);
    CHECK_STR_EQ(t->name, "logs");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(vars, "day")), "mon");
    cJSON_Delete(vars);
    CHECK(ing_registry_template_match(s, "file:///other/mon", &vars) == NULL && vars == NULL);

    /* fingerprints: a resource change moves resources_fp only, a prompt change prompts_fp */
    unsigned char tfp[32], rfp[32], pfp[32];
    memcpy(tfp, s->tools_fp, 32);
    memcpy(rfp, s->resources_fp, 32);
    memcpy(pfp, s->prompts_fp, 32);
    f[7] = KDOC("resource", "zreadme", "\"uri\":\"file:///a\",\"text\":\"hello\"");
    ing_registry_t *r2 = build(f, sizeof(f) / sizeof(f[0]));
    const ing_server_t *s2 = ing_registry_server(r2, "k", "default");
    CHECK(memcmp(s2->tools_fp, tfp, 32) == 0);
    CHECK(memcmp(s2->resources_fp, rfp, 32) != 0);
    CHECK(memcmp(s2->prompts_fp, pfp, 32) == 0);
    ing_registry_unref(r2);
    f[13] =
        KDOC("resource_template", "logs", "\"uriTemplate\":\"file:///logs/{dy}\",\"text\":\"x\"");
    r2 = build(f, sizeof(f) / sizeof(f[0]));
    CHECK(memcmp(ing_registry_server(r2, "k", "default")->resources_fp, rfp, 32) != 0);
    ing_registry_unref(r2);
    f[17] = KDOC("prompt", "greet", "\"arguments\":[{\"name\":\"who\"}],\"messages\":[]");
    r2 = build(f, sizeof(f) / sizeof(f[0]));
    s2 = ing_registry_server(r2, "k", "default");
    CHECK(memcmp(s2->prompts_fp, pfp, 32) != 0);
    CHECK(memcmp(s2->tools_fp, tfp, 32) == 0);
    ing_registry_unref(r2);
    ing_registry_unref(reg);
    TEST_PASS("kinds: lists per kind, tools only in tools, lookups by kind, uri and template, "
              "fingerprints per list");
}

int main(void)
{
    test_introspector();
    test_kinds();
    enum { N = sizeof(docs) / sizeof(docs[0]) };
    char buf[N][1024];
    const char *fields[N];
    size_t lens[N];
    char hex_a[65], hex_g[65];
    unsigned char raw_a[32], raw_g[32], raw_x[32];
    sha_hex("acme-key", hex_a, raw_a);
    sha_hex("globex-key", hex_g, raw_g);
    for (size_t i = 0; i < N; i++) {
        const char *d = docs[i];
        char *o = buf[i];
        /* substitute the key hashes */
        size_t k = 0;
        while (*d) {
            if (strncmp(d, "SHA_ACME", 8) == 0) {
                k += (size_t)snprintf(o + k, 1024 - k, "%s", hex_a), d += 8;
            } else if (strncmp(d, "SHA_GLOBEX", 10) == 0) {
                k += (size_t)snprintf(o + k, 1024 - k, "%s", hex_g), d += 10;
            } else {
                o[k++] = *d++;
            }
        }
        o[k] = '\0';
        fields[i] = o;
        lens[i] = k;
    }
    char err[256];
    ing_registry_t *reg = ing_registry_build(fields, lens, N, 42, err, sizeof(err));
    CHECK(reg != NULL);
    CHECK_INT_EQ(ing_registry_rev(reg), 42);

    const ing_apikey_t *ka = ing_registry_auth_key(reg, raw_a);
    CHECK(ka != NULL);
    CHECK_STR_EQ(ka->tenant->id, "acme");
    CHECK_STR_EQ(ka->id, "k1");
    /* the tenant's rate_limits.api_key applies to a key that names none */
    CHECK(ka->rate.per_s == 2.5);
    CHECK_INT_EQ(ka->rate.burst, 7);
    const ing_apikey_t *kg = ing_registry_auth_key(reg, raw_g);
    CHECK_STR_EQ(kg->tenant->id, "globex");
    /* a key's own rate_limit */
    CHECK(kg->rate.per_s == 1.0);
    CHECK_INT_EQ(kg->rate.burst, 3);
    memset(raw_x, 7, sizeof(raw_x));
    CHECK(ing_registry_auth_key(reg, raw_x) == NULL);
    CHECK_STR_EQ(kg->tenant->default_server, "default");

    /* apps: the tenant's rate_limits.app (0: unlimited), an app's own, no empty secrets */
    const ing_app_t *a1 = ing_registry_app(reg, "a1");
    CHECK(a1 != NULL);
    CHECK_STR_EQ(a1->secret, "s1");
    CHECK_STR_EQ(a1->tenant->id, "acme");
    CHECK(a1->rate.per_s == 0.0);
    const ing_app_t *a2 = ing_registry_app(reg, "a2");
    CHECK(a2 != NULL && a2->rate.per_s == 9.0 && a2->rate.burst == 0);
    CHECK(ing_registry_app(reg, "a3") == NULL);
    CHECK(ing_registry_app(reg, "nope") == NULL);

    /* robots a tenant declares belong to it; any other robot is shared (no owner) */
    CHECK_STR_EQ(ing_registry_robot_owner(reg, "rpa-1")->id, "acme");
    CHECK_STR_EQ(ing_registry_robot_owner(reg, "rpa-2")->id, "acme");
    CHECK_STR_EQ(ing_registry_robot_owner(reg, "g-bot")->id, "globex");
    CHECK(ing_registry_robot_owner(reg, "rpa-3") == NULL);
    CHECK(ing_registry_robot_owner(reg, "rpa") == NULL);

    const ing_server_t *s = ing_registry_server(reg, "acme", "default");
    CHECK(s != NULL);
    /* sorted by name; the offline tool (no published version) is not served */
    CHECK_INT_EQ(s->ntools, 2);
    CHECK_STR_EQ(s->tools[0]->name, "alpha");
    CHECK_STR_EQ(s->tools[1]->name, "zeta");
    const ing_tool_t *z = ing_registry_tool(s, "zeta");
    CHECK(z != NULL);
    CHECK_STR_EQ(z->version_id, "2");
    CHECK_INT_EQ(z->timeout_ms, 1500);
    CHECK_CONTAINS(z->list_json, "\"description\":\"new\"");
    CHECK_CONTAINS(z->list_json, "\"inputSchema\":{\"type\":\"object\"}");
    const ing_tool_t *a = ing_registry_tool(s, "alpha");
    CHECK(a->task_mode && a->fake_result);
    CHECK_CONTAINS(a->list_json, "\"inputSchema\":{\"type\":\"object\"}");
    CHECK(ing_registry_tool(s, "offline") == NULL);
    CHECK(ing_registry_tool(s, "opsy") == NULL);
    CHECK(ing_registry_tool(ing_registry_server(reg, "acme", "ops"), "opsy") != NULL);
    /* inputSchemas are compiled with the snapshot; one that does not compile (stored before
     * sch.h refused $dynamicRef) is left NULL, for tools/call to validate one-off */
    CHECK(z->input_schema != NULL && a->input_schema == NULL);
    cJSON *num = cJSON_CreateNumber(1);
    CHECK(sch_compiled_validate(z->input_schema, num, "arguments", err, sizeof(err)) != 0);
    CHECK_STR_EQ(err, "arguments: expected object, got integer");
    cJSON_Delete(num);
    CHECK(ing_registry_tool(ing_registry_server(reg, "acme", "ops"), "opsy")->input_schema == NULL);
    /* tenant isolation: globex has no ops server and cannot see acme's tools */
    CHECK(ing_registry_server(reg, "globex", "ops") == NULL);
    CHECK(ing_registry_tool(ing_registry_server(reg, "globex", "default"), "zeta") == NULL);
    CHECK(ing_registry_server(reg, "nobody", "default") == NULL);

    /* tools/list fingerprints (listen.h): the same documents give the same fingerprint; a
     * changed published tool changes its server's only; so does a newly published version
     * whose tools/list entry differs, but not one whose entry is the same. */
    ing_registry_t *same = ing_registry_build(fields, lens, N, 43, err, sizeof(err));
    CHECK(same != NULL);
    CHECK(memcmp(ing_registry_server(same, "acme", "default")->tools_fp, s->tools_fp, 32) == 0);
    CHECK(memcmp(ing_registry_server(reg, "acme", "ops")->tools_fp, s->tools_fp, 32) != 0);
    ing_registry_unref(same);
    const char *zeta_v3 =
        "{\"tenant\":\"acme\",\"server\":\"default\",\"name\":\"zeta\",\"published\":\"3\","
        "\"versions\":[{\"version\":\"2\",\"description\":\"new\",\"timeout_ms\":1500,"
        "\"inputSchema\":{\"type\":\"object\"}},{\"version\":\"3\",\"description\":\"new\","
        "\"timeout_ms\":9,\"inputSchema\":{\"type\":\"object\"}}]}";
    const char *zeta_v4 =
        "{\"tenant\":\"acme\",\"server\":\"default\",\"name\":\"zeta\",\"published\":\"4\","
        "\"versions\":[{\"version\":\"4\",\"description\":\"newer\"}]}";
    const char *variants[] = {zeta_v3, zeta_v4};
    for (int v = 0; v < 2; v++) {
        const char *f2[N];
        size_t l2[N];
        for (size_t i = 0; i < N; i++) {
            f2[i] = fields[i];
            l2[i] = lens[i];
            if (i > 0 && strcmp(fields[i - 1], "tool:acme:zeta") == 0) {
                f2[i] = variants[v];
                l2[i] = strlen(variants[v]);
            }
        }
        ing_registry_t *r2 = ing_registry_build(f2, l2, N, 44, err, sizeof(err));
        CHECK(r2 != NULL);
        int differs =
            memcmp(ing_registry_server(r2, "acme", "default")->tools_fp, s->tools_fp, 32) != 0;
        CHECK_INT_EQ(differs, v == 1);
        CHECK(memcmp(ing_registry_server(r2, "acme", "ops")->tools_fp,
                     ing_registry_server(reg, "acme", "ops")->tools_fp, 32) == 0);
        CHECK(memcmp(ing_registry_server(r2, "globex", "default")->tools_fp,
                     ing_registry_server(reg, "globex", "default")->tools_fp, 32) == 0);
        ing_registry_unref(r2);
    }
    ing_registry_ref(reg);
    ing_registry_unref(reg);
    ing_registry_unref(reg);
    TEST_PASS("registry snapshot (keys, apps, robots, servers, tools)");
    TEST_PASS("tools/list fingerprints per server");

    /* The active secrets of a rotation: the previous one until it expires. */
    cJSON *o = cJSON_Parse("{\"secret\":\"new\",\"previous_secret\":\"old\","
                           "\"previous_secret_expires\":\"2026-01-01T00:00:00.000Z\"}");
    const char *sec[2];
    const int64_t expiry = 1767225600000LL;
    CHECK_INT_EQ(ing_registry_secrets(o, expiry - 1, sec), 2);
    CHECK_STR_EQ(sec[0], "new");
    CHECK_STR_EQ(sec[1], "old");
    CHECK_INT_EQ(ing_registry_secrets(o, expiry, sec), 1);
    CHECK_STR_EQ(sec[0], "new");
    cJSON_DeleteItemFromObject(o, "previous_secret_expires"); /* no end: until removed */
    CHECK_INT_EQ(ing_registry_secrets(o, expiry * 2, sec), 2);
    cJSON_AddStringToObject(o, "previous_secret_expires", "soon"); /* unreadable: over */
    CHECK_INT_EQ(ing_registry_secrets(o, 0, sec), 1);
    cJSON_DeleteItemFromObject(o, "secret");
    CHECK_INT_EQ(ing_registry_secrets(o, 0, sec), 0); /* no current secret: none at all */
    cJSON_Delete(o);
    TEST_PASS("active secrets: the previous one until previous_secret_expires");
    return 0;
}
