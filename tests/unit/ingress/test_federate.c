/*
 * test_federate.c - ingress/core/federate.c's plan: the registry documents of every kind that a
 * `mcpq/catalog` result becomes (prefix, copied fields, executor of an HTTP and of a stdio
 * upstream, sanitized resource names, uris kept), what is skipped (invalid, too long, taken by
 * an object the config or another server made, duplicates, unusable schemas, templates beyond
 * level 1, duplicate uris), a second import that changes nothing, a changed definition that
 * becomes a new published version, and pruning of what the upstream dropped (never of objects
 * it did not import).
 */
#include "cfg.h"
#include "check.h"
#include "federate.h"
#include "regstore.h"

#include <stdlib.h>
#include <string.h>

static const char *s(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static const cJSON *at(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const cJSON *version0(const cJSON *doc)
{
    return cJSON_GetArrayItem(at(doc, "versions"), 0);
}

/* The registry after writing plan into docs (null: deleted). */
static void apply(cJSON *docs, const cJSON *plan)
{
    for (const cJSON *x = plan->child; x; x = x->next) {
        cJSON_DeleteItemFromObjectCaseSensitive(docs, x->string);
        if (!cJSON_IsNull(x))
            cJSON_AddItemToObject(docs, x->string, cJSON_Duplicate(x, 1));
    }
}

/* The config loader takes the planned documents (what the registry will hold) as they are. */
static void check_loadable(const cJSON *server, const cJSON *plan)
{
    cJSON *cfg = cJSON_CreateObject();
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "id", "t");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(cfg, "tenants"), t);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(cfg, "servers"), cJSON_Duplicate(server, 1));
    cJSON *tools = cJSON_AddArrayToObject(cfg, "tools");
    for (const cJSON *x = plan->child; x; x = x->next)
        if (!cJSON_IsNull(x))
            cJSON_AddItemToArray(tools, cJSON_Duplicate(x, 1));
    ing_regstore_strip_meta(cfg);
    char *text = cJSON_PrintUnformatted(cfg), err[1024] = "";
    cJSON *doc = cfg_load_string(text, strlen(text), err, sizeof(err));
    CHECK_STR_EQ(err, "");
    CHECK(doc != NULL);
    cJSON_Delete(doc);
    cJSON_free(text);
    cJSON_Delete(cfg);
}

static const char *const CATALOG =
    "{\"protocolVersion\":\"2025-11-25\",\"serverInfo\":{\"name\":\"up\"},"
    "\"tools\":[{\"name\":\"echo\",\"title\":\"Echo\",\"description\":\"d\","
    "\"inputSchema\":{\"type\":\"object\"},\"outputSchema\":{\"type\":\"object\"},"
    "\"annotations\":{\"readOnlyHint\":true},\"icons\":[]},"
    "{\"name\":\"bad name\",\"inputSchema\":{\"type\":\"object\"}},"
    "{\"name\":\"taken\",\"inputSchema\":{\"type\":\"object\"}},"
    "{\"name\":\"other\",\"inputSchema\":{\"type\":\"object\"}},"
    "{\"name\":\"free\",\"inputSchema\":{\"type\":\"object\"}},"
    "{\"name\":\"echo\",\"inputSchema\":{\"type\":\"object\"}},"
    "{\"name\":\"noschema\"},"
    "{\"name\":\"a123456789a123456789a123456789a123456789a12345678\","
    "\"inputSchema\":{\"type\":\"object\"}}],"
    "\"prompts\":[{\"name\":\"greet\",\"description\":\"Say hi\",\"arguments\":"
    "[{\"name\":\"who\",\"required\":true}]},{\"name\":\"echo\"},"
    "{\"name\":\"badargs\",\"arguments\":{}}],"
    "\"resources\":[{\"name\":\"Read me\",\"uri\":\"file:///a/readme.md\",\"mimeType\":"
    "\"text/markdown\",\"size\":12,\"description\":\"doc\"},"
    "{\"name\":\"again\",\"uri\":\"file:///a/readme.md\"},"
    "{\"name\":\"nouri\"},{\"uri\":\"file:///noname\"}],"
    "\"resourceTemplates\":[{\"name\":\"file\",\"uriTemplate\":\"file:///a/{path}\","
    "\"mimeType\":\"text/plain\"},{\"name\":\"query\",\"uriTemplate\":\"file:///{?q}\"}]}";

/* A hand-made tool of the tenant (no "federated") and another federated server's import. */
static const char *const DOCS =
    "{\"server:t:fed\":{\"tenant\":\"t\",\"name\":\"fed\"},"
    "\"tool:t:up_taken\":{\"tenant\":\"t\",\"server\":\"fed\",\"name\":\"up_taken\","
    "\"published\":\"1\",\"versions\":[{\"version\":\"1\"}]},"
    "\"tool:t:up_other\":{\"tenant\":\"t\",\"server\":\"fed2\",\"name\":\"up_other\","
    "\"federated\":true,\"published\":\"1\",\"versions\":[{\"version\":\"1\"}]},"
    "\"tool:u:up_free\":{\"tenant\":\"u\",\"server\":\"fed\",\"name\":\"up_free\"}}";

static void test_kinds(const cJSON *server, cJSON *docs)
{
    cJSON *catalog = cJSON_Parse(CATALOG);
    ing_federate_counts_t n;
    cJSON *plan = ing_federate_plan(server, catalog, docs, "2026-11-28T20:00:00.000Z", &n);
    CHECK(plan != NULL);
    CHECK_INT_EQ(cJSON_GetArraySize(plan), 5);
    CHECK_INT_EQ(n.tools, 2);
    CHECK_INT_EQ(n.prompts, 1);
    CHECK_INT_EQ(n.resources, 1);
    CHECK_INT_EQ(n.templates, 1);
    CHECK_INT_EQ(n.created, 5);
    CHECK_INT_EQ(n.skipped, 12);

    const cJSON *t = at(plan, "tool:t:up_echo");
    CHECK_STR_EQ(s(t, "tenant"), "t");
    CHECK_STR_EQ(s(t, "server"), "fed");
    CHECK_STR_EQ(s(t, "name"), "up_echo");
    CHECK(at(t, "kind") == NULL); /* a tool: the default kind */
    CHECK(cJSON_IsTrue(at(t, "federated")));
    CHECK_STR_EQ(s(t, "published"), "1");
    CHECK_STR_EQ(s(t, "createTime"), "2026-11-28T20:00:00.000Z");
    const cJSON *v = version0(t);
    CHECK_STR_EQ(s(v, "version"), "1");
    CHECK_STR_EQ(s(v, "title"), "Echo");
    CHECK_STR_EQ(s(v, "description"), "d");
    CHECK_STR_EQ(s(v, "mode"), "sync");
    CHECK(at(v, "outputSchema") != NULL);
    CHECK(at(v, "annotations") != NULL);
    CHECK(at(v, "icons") == NULL);
    CHECK_INT_EQ((int)at(v, "timeout_ms")->valuedouble, 5000);
    const cJSON *ex = at(v, "executor");
    CHECK_STR_EQ(s(ex, "type"), "mcp");
    CHECK_STR_EQ(s(ex, "url"), "http://u/mcp");
    CHECK_STR_EQ(s(ex, "tool"), "echo");
    CHECK_STR_EQ(s(at(ex, "headers"), "Authorization"), "Bearer x");
    CHECK(at(plan, "tool:t:up_free") != NULL); /* tenant u's up_free is no collision */
    TEST_PASS("federated tools: prefix, fields, executor; bad, long, taken by the config, by "
              "another server, duplicate and schema-less skipped");

    const cJSON *p = at(plan, "tool:t:up_greet");
    CHECK_STR_EQ(s(p, "kind"), "prompt");
    v = version0(p);
    CHECK_STR_EQ(s(v, "description"), "Say hi");
    CHECK_STR_EQ(s(cJSON_GetArrayItem(at(v, "arguments"), 0), "name"), "who");
    CHECK_STR_EQ(s(at(v, "executor"), "prompt"), "greet");
    CHECK(at(at(v, "executor"), "tool") == NULL);
    CHECK(at(plan, "tool:t:up_badargs") == NULL);
    TEST_PASS("federated prompts: kind, arguments, executor prompt; a tool's name and bad "
              "arguments skipped");

    const cJSON *r = at(plan, "tool:t:up_Read_me");
    CHECK_STR_EQ(s(r, "kind"), "resource");
    v = version0(r);
    CHECK_STR_EQ(s(v, "uri"), "file:///a/readme.md");
    CHECK_STR_EQ(s(v, "mimeType"), "text/markdown");
    CHECK_INT_EQ((int)at(v, "size")->valuedouble, 12);
    CHECK_STR_EQ(s(at(v, "executor"), "url"), "http://u/mcp");
    CHECK(at(at(v, "executor"), "tool") == NULL);
    CHECK(at(plan, "tool:t:up_again") == NULL);
    const cJSON *tp = at(plan, "tool:t:up_file");
    CHECK_STR_EQ(s(tp, "kind"), "resource_template");
    CHECK_STR_EQ(s(version0(tp), "uriTemplate"), "file:///a/{path}");
    CHECK(at(plan, "tool:t:up_query") == NULL);
    TEST_PASS("federated resources and templates: sanitized names, uri and uriTemplate kept; "
              "duplicate uri, no uri, no name, level-2 template skipped");
    check_loadable(server, plan);
    TEST_PASS("federation: every planned document is a valid registry object of its kind");

    apply(docs, plan);
    cJSON_Delete(plan);
    plan = ing_federate_plan(server, catalog, docs, "2026-11-28T20:10:00.000Z", &n);
    CHECK_INT_EQ(cJSON_GetArraySize(plan), 0);
    CHECK_INT_EQ(n.created + n.updated + n.deleted, 0);
    CHECK_INT_EQ(n.tools + n.prompts + n.resources + n.templates, 5);
    cJSON_Delete(plan);
    cJSON_Delete(catalog);
    TEST_PASS("federation: importing the same catalog again changes nothing");
}

static void test_refresh(const cJSON *server, cJSON *docs)
{
    /* echo's description changed; free, greet and the template dropped; a resource added */
    cJSON *catalog = cJSON_Parse(
        "{\"tools\":[{\"name\":\"echo\",\"title\":\"Echo\",\"description\":\"changed\","
        "\"inputSchema\":{\"type\":\"object\"},\"outputSchema\":{\"type\":\"object\"},"
        "\"annotations\":{\"readOnlyHint\":true}}],"
        "\"resources\":[{\"name\":\"Read me\",\"uri\":\"file:///a/readme.md\",\"mimeType\":"
        "\"text/markdown\",\"size\":12,\"description\":\"doc\"},"
        "{\"name\":\"new\",\"uri\":\"file:///b\"}]}");
    ing_federate_counts_t n;
    cJSON *plan = ing_federate_plan(server, catalog, docs, "2026-11-28T20:20:00.000Z", &n);
    CHECK_INT_EQ(n.updated, 1);
    CHECK_INT_EQ(n.created, 1);
    CHECK_INT_EQ(n.deleted, 3);
    CHECK_INT_EQ(cJSON_GetArraySize(plan), 5);
    const cJSON *t = at(plan, "tool:t:up_echo");
    CHECK_STR_EQ(s(t, "published"), "2");
    CHECK_STR_EQ(s(t, "createTime"), "2026-11-28T20:00:00.000Z");
    CHECK_STR_EQ(s(t, "updateTime"), "2026-11-28T20:20:00.000Z");
    CHECK_INT_EQ(cJSON_GetArraySize(at(t, "versions")), 2);
    CHECK_STR_EQ(s(version0(t), "description"), "d");
    CHECK_STR_EQ(s(cJSON_GetArrayItem(at(t, "versions"), 1), "description"), "changed");
    CHECK_STR_EQ(s(cJSON_GetArrayItem(at(t, "versions"), 1), "version"), "2");
    CHECK(cJSON_IsNull(at(plan, "tool:t:up_free")));
    CHECK(cJSON_IsNull(at(plan, "tool:t:up_greet")));
    CHECK(cJSON_IsNull(at(plan, "tool:t:up_file")));
    CHECK(at(plan, "tool:t:up_new") != NULL);
    CHECK(at(plan, "tool:t:up_taken") == NULL); /* hand-made: never pruned */
    CHECK(at(plan, "tool:t:up_other") == NULL); /* another server's import */
    CHECK(at(plan, "tool:u:up_free") == NULL);
    apply(docs, plan);
    cJSON_Delete(plan);
    cJSON_Delete(catalog);
    TEST_PASS("federation refresh: a changed definition is a new published version, dropped "
              "objects are deleted, hand-made and other servers' objects are kept");

    /* versions beyond FED_VERSIONS_KEPT are dropped, oldest first */
    for (int i = 0; i < FED_VERSIONS_KEPT + 2; i++) {
        char text[400];
        snprintf(text, sizeof(text),
                 "{\"tools\":[{\"name\":\"echo\",\"description\":\"round %d\","
                 "\"inputSchema\":{\"type\":\"object\"}}]}",
                 i);
        catalog = cJSON_Parse(text);
        plan = ing_federate_plan(server, catalog, docs, "2026-11-28T21:00:00.000Z", NULL);
        apply(docs, plan);
        cJSON_Delete(plan);
        cJSON_Delete(catalog);
    }
    t = at(docs, "tool:t:up_echo");
    CHECK_INT_EQ(cJSON_GetArraySize(at(t, "versions")), FED_VERSIONS_KEPT);
    CHECK_STR_EQ(s(t, "published"), "9");
    CHECK_STR_EQ(s(version0(t), "version"), "5");
    /* an operator took it offline: a changed definition is a new version, still offline */
    cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(docs, "tool:t:up_echo"),
                                           "published", cJSON_CreateNull());
    catalog = cJSON_Parse("{\"tools\":[{\"name\":\"echo\",\"description\":\"round 6\","
                          "\"inputSchema\":{\"type\":\"object\"}}]}");
    plan = ing_federate_plan(server, catalog, docs, "2026-11-28T21:00:00.000Z", &n);
    CHECK_INT_EQ(cJSON_GetArraySize(plan), 0); /* the newest version is unchanged */
    cJSON_Delete(plan);
    cJSON_Delete(catalog);
    catalog = cJSON_Parse("{\"tools\":[{\"name\":\"echo\",\"description\":\"round 7\","
                          "\"inputSchema\":{\"type\":\"object\"}}]}");
    plan = ing_federate_plan(server, catalog, docs, "2026-11-28T21:00:00.000Z", &n);
    CHECK_INT_EQ(n.updated, 1);
    t = at(plan, "tool:t:up_echo");
    CHECK(cJSON_IsNull(at(t, "published")));
    CHECK_STR_EQ(s(cJSON_GetArrayItem(at(t, "versions"), FED_VERSIONS_KEPT - 1), "version"), "10");
    apply(docs, plan);
    cJSON_Delete(plan);
    cJSON_Delete(catalog);
    /* an empty catalog (the upstream lists nothing now) prunes everything it imported */
    catalog = cJSON_Parse("{}");
    plan = ing_federate_plan(server, catalog, docs, "2026-11-28T21:00:00.000Z", &n);
    CHECK_INT_EQ(n.deleted, 1);
    apply(docs, plan);
    CHECK(at(docs, "tool:t:up_taken") != NULL);
    CHECK(at(docs, "tool:t:up_other") != NULL);
    CHECK(at(docs, "tool:t:up_echo") == NULL);
    cJSON_Delete(plan);
    cJSON_Delete(catalog);
    TEST_PASS("federation refresh: versions kept bounded; an object taken offline stays offline; "
              "an empty catalog prunes every import");
}

static void test_stdio_and_prefix(void)
{
    cJSON *server = cJSON_Parse(
        "{\"tenant\":\"t\",\"name\":\"fs\",\"federate\":{\"command\":\"npx\",\"args\":[\"-y\","
        "\"server\"],\"env\":{\"TOKEN\":{\"env\":\"FS_TOKEN\"}},\"cwd\":\"/srv\","
        "\"limits\":{\"processes\":2}}}");
    cJSON *catalog = cJSON_Parse("{\"tools\":[{\"name\":\"read\",\"inputSchema\":"
                                 "{\"type\":\"object\"}}],\"resources\":[{\"name\":\"3d\","
                                 "\"uri\":\"x:/3\"}]}");
    cJSON *plan = ing_federate_plan(server, catalog, NULL, "2026-11-28T20:00:00.000Z", NULL);
    const cJSON *ex = at(version0(at(plan, "tool:t:fs_read")), "executor");
    CHECK_STR_EQ(s(ex, "type"), "mcp");
    CHECK_STR_EQ(s(ex, "command"), "npx");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetArrayItem(at(ex, "args"), 1)), "server");
    CHECK_STR_EQ(s(at(at(ex, "env"), "TOKEN"), "env"), "FS_TOKEN");
    CHECK_STR_EQ(s(ex, "cwd"), "/srv");
    CHECK(at(ex, "limits") != NULL);
    CHECK(at(ex, "url") == NULL);
    CHECK(at(plan, "tool:t:fs_3d") != NULL);
    cJSON_Delete(plan);
    /* without a prefix a name must itself start with a letter */
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(server, "federate"), "prefix", "");
    plan = ing_federate_plan(server, catalog, NULL, "2026-11-28T20:00:00.000Z", NULL);
    CHECK(at(plan, "tool:t:read") != NULL);
    CHECK(at(plan, "tool:t:3d") == NULL);
    cJSON_Delete(plan);
    CHECK(ing_federate_plan(catalog, catalog, NULL, "x", NULL) == NULL); /* not a server */
    cJSON_Delete(catalog);
    cJSON_Delete(server);
    TEST_PASS("federation: a stdio upstream's executor, the default and the empty prefix");
}

/* A name that changes kind upstream keeps only versions of its new kind; names and uris are
 * case-sensitive. */
static void test_kind_change_and_case(void)
{
    cJSON *server = cJSON_Parse("{\"tenant\":\"t\",\"name\":\"fed\",\"federate\":{\"url\":"
                                "\"http://u/mcp\",\"prefix\":\"up_\"}}");
    cJSON *docs = cJSON_Parse("{\"server:t:fed\":{\"tenant\":\"t\",\"name\":\"fed\"}}");
    cJSON *catalog = cJSON_Parse(
        "{\"tools\":[{\"name\":\"echo\",\"inputSchema\":{\"type\":\"object\"}},"
        "{\"name\":\"Echo\",\"inputSchema\":{\"type\":\"object\"}}],"
        "\"resources\":[{\"name\":\"a\",\"uri\":\"x:/A\"},{\"name\":\"b\",\"uri\":\"x:/a\"}]}");
    cJSON *plan = ing_federate_plan(server, catalog, docs, "2026-11-28T20:00:00.000Z", NULL);
    CHECK(at(plan, "tool:t:up_echo") != NULL);
    CHECK(at(plan, "tool:t:up_Echo") != NULL);
    CHECK(at(plan, "tool:t:up_a") != NULL);
    CHECK(at(plan, "tool:t:up_b") != NULL);
    apply(docs, plan);
    cJSON_Delete(plan);
    cJSON_Delete(catalog);
    catalog = cJSON_Parse("{\"prompts\":[{\"name\":\"echo\",\"description\":\"now a prompt\"}]}");
    plan = ing_federate_plan(server, catalog, docs, "2026-11-28T20:01:00.000Z", NULL);
    const cJSON *d = at(plan, "tool:t:up_echo");
    CHECK_STR_EQ(s(d, "kind"), "prompt");
    CHECK_INT_EQ(cJSON_GetArraySize(at(d, "versions")), 1);
    CHECK_STR_EQ(s(version0(d), "version"), "2");
    CHECK_STR_EQ(s(d, "published"), "2");
    CHECK(at(version0(d), "inputSchema") == NULL);
    CHECK(cJSON_IsNull(at(plan, "tool:t:up_Echo")));
    check_loadable(server, plan);
    cJSON_Delete(plan);
    cJSON_Delete(catalog);
    cJSON_Delete(docs);
    cJSON_Delete(server);
    TEST_PASS("federation: a name that changes kind keeps only versions of its new kind; names "
              "and uris are case-sensitive");
}

int main(void)
{
    cJSON *server = cJSON_Parse(
        "{\"tenant\":\"t\",\"name\":\"fed\",\"federate\":{\"url\":\"http://u/mcp\","
        "\"prefix\":\"up_\",\"headers\":{\"Authorization\":\"Bearer x\"},\"timeout_ms\":5000}}");
    cJSON *docs = cJSON_Parse(DOCS);
    test_kinds(server, docs);
    test_refresh(server, docs);
    cJSON_Delete(docs);
    cJSON_Delete(server);
    test_stdio_and_prefix();
    test_kind_change_and_case();
    return TEST_EXIT();
}
