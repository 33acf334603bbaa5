/*
 * Tests ingress/api/adm_tools.c and adm_versions.c for the kinds other than tools: a resource
 * and a prompt created, versioned, published, read through MCP, taken offline and deleted
 * through the admin API; each kind's version checked against its own schema and cfg.c's rules
 * (MCPQ_RESOURCE_MAX_BYTES included); listings filtered by kind (tests/handlers/harness.h).
 */
#include "check.h"
#include "harness.h"

#include "rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char config[] =
    "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"}]}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}],"
    " \"tools\": [{\"tenant\": \"t\", \"server\": \"default\", \"name\": \"echo\","
    "   \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}";

#define TOOLS "/admin/v1/tenants/t/tools"

static hx_t h;

static void expect(const char *method, const char *url, const char *body, int status,
                   const char *text)
{
    hx_admin_expect(&h, method, url, body, NULL, status, text);
}

/* An MCP request (2025-06-18, no session) of method with params: e is ready to read. */
static void mcp(hx_ex_t *e, const char *method, const char *params)
{
    hx_era_rpc(&h, e, NULL, hx_eras[1], NULL, method, NULL, params, NULL);
    CHECK(!e->parked);
}

static void expect_read(const char *text)
{
    hx_ex_t e;
    mcp(&e, "resources/read", "{\"uri\":\"file:///README\"}");
    if (text)
        CHECK_STR_EQ(hx_str(&e, "result.contents.0.text"), text);
    else
        CHECK_INT_EQ(hx_rpc_code(&e), RPC_RESOURCE_NOT_FOUND);
    hx_ex_free(&e);
}

static void test_resource(void)
{
    hx_ex_t e;
    CHECK_INT_EQ(hx_admin(&h, &e, "POST", TOOLS,
                          "{\"name\":\"readme\",\"kind\":\"resource\",\"publish\":true,"
                          "\"version\":{\"version\":\"1\",\"uri\":\"file:///README\","
                          "\"mimeType\":\"text/plain\",\"text\":\"one\"}}",
                          NULL),
                 201);
    CHECK_STR_EQ(hx_str(&e, "kind"), "resource");
    CHECK_STR_EQ(hx_str(&e, "publishedVersion"), "1");
    hx_ex_free(&e);
    hx_reload(&h);
    expect_read("one");
    /* a new version from the first, published: clients read it */
    CHECK_INT_EQ(hx_admin(&h, &e, "POST", TOOLS "/readme/versions",
                          "{\"version\":\"2\",\"from_version\":\"1\",\"text\":\"two\"}", NULL),
                 201);
    CHECK_STR_EQ(hx_str(&e, "uri"), "file:///README");
    CHECK_STR_EQ(hx_str(&e, "text"), "two");
    CHECK(!cJSON_HasObjectItem(e.json, "mode")); /* a tool's member only */
    hx_ex_free(&e);
    expect("PATCH", TOOLS "/readme/versions/2", "{\"text\":\"TWO\"}", 200, NULL);
    expect("POST", TOOLS "/readme/versions/2:publish", NULL, 200, NULL);
    hx_reload(&h);
    expect_read("TWO");
    /* each kind's members only, and cfg.c's rules through the tenant's check */
    expect("POST", TOOLS "/readme/versions", "{\"version\":\"3\",\"text\":\"x\"}", 400,
           "missing required property \"uri\"");
    expect("POST", TOOLS "/readme/versions",
           "{\"version\":\"3\",\"uri\":\"file:///x\",\"text\":\"x\",\"inputSchema\":{\"type\":"
           "\"object\"}}",
           400, "inputSchema");
    expect("POST", TOOLS "/readme/versions",
           "{\"version\":\"3\",\"uri\":\"file:///x\",\"text\":\"x\",\"blob\":\"eA==\"}", 400,
           "has both \"text\" and \"blob\"");
    expect("POST", TOOLS "/readme/versions", "{\"version\":\"3\",\"uri\":\"file:///x\"}", 400,
           "missing its content");
    expect("POST", TOOLS "/readme/versions",
           "{\"version\":\"3\",\"uri\":\"file:///x\",\"blob\":\"!!\"}", 400, "not standard base64");
    /* MCPQ_RESOURCE_MAX_BYTES (16 in this test) */
    expect("POST", TOOLS "/readme/versions",
           "{\"version\":\"3\",\"uri\":\"file:///x\",\"text\":\"0123456789abcdefg\"}", 400,
           "static content of 17 bytes; at most 16 (MCPQ_RESOURCE_MAX_BYTES)");
    /* two published resources of a server may not share a uri */
    expect("POST", TOOLS,
           "{\"name\":\"copy\",\"kind\":\"resource\",\"publish\":true,\"version\":{\"version\":"
           "\"1\",\"uri\":\"file:///README\",\"text\":\"c\"}}",
           400, "is the uri of a published resource of server \"default\" already");
    expect("POST", TOOLS, "{\"name\":\"w\",\"kind\":\"widget\",\"version\":{\"version\":\"1\"}}",
           400, "$.kind: must be one of tool, resource, resource_template, prompt");
    /* a tool's schemas: JSON Schema 2020-12; a keyword mcpq does not implement is refused by
     * name and path (docs/tools.md, "Input schemas"), unknown keywords are annotations */
    expect("POST", TOOLS "/echo/versions",
           "{\"version\":\"9\",\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"},"
           "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"$dynamicRef\":"
           "\"#node\"}}}}",
           400,
           "$.inputSchema.properties.a.$dynamicRef: invalid schema: this keyword is not supported "
           "by mcpq");
    expect("POST", TOOLS "/echo/versions",
           "{\"version\":\"9\",\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"},"
           "\"inputSchema\":{\"type\":\"object\",\"x-ui\":{\"order\":1},\"properties\":"
           "{\"plan\":{\"enum\":[\"a\"],\"enumNames\":[\"A\"]}},\"if\":{\"required\":"
           "[\"plan\"]},\"then\":{\"minProperties\":1},\"unevaluatedProperties\":false}}",
           201, NULL);
    /* the name space is shared across kinds */
    expect("POST", TOOLS,
           "{\"name\":\"echo\",\"kind\":\"resource\",\"version\":{\"version\":\"1\",\"uri\":"
           "\"file:///e\",\"text\":\"e\"}}",
           409, "tenant \"t\" has a tool \"echo\" already");
    /* offline: unknown to clients; then deleted with its versions */
    expect("POST", TOOLS "/readme/versions/2:offline", NULL, 200, NULL);
    hx_reload(&h);
    expect_read(NULL);
    expect("DELETE", TOOLS "/readme/versions/2", NULL, 204, NULL);
    expect("DELETE", TOOLS "/readme/versions/1", NULL, 204, NULL);
    expect("GET", TOOLS "/readme", NULL, 404, NULL);
    TEST_PASS("admin API: a resource created, versioned, published, read, offlined and deleted; "
              "its kind's rules enforced");
}

static void test_prompt(void)
{
    hx_ex_t e;
    CHECK_INT_EQ(
        hx_admin(&h, &e, "POST", TOOLS,
                 "{\"name\":\"greet\",\"kind\":\"prompt\",\"publish\":true,\"version\":{"
                 "\"version\":\"1\",\"arguments\":[{\"name\":\"who\",\"required\":true}],"
                 "\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":"
                 "\"Hi {{who}}\"}}]}}",
                 NULL),
        201);
    CHECK_STR_EQ(hx_str(&e, "kind"), "prompt");
    hx_ex_free(&e);
    hx_reload(&h);
    mcp(&e, "prompts/get", "{\"name\":\"greet\",\"arguments\":{\"who\":\"Bo\"}}");
    CHECK_STR_EQ(hx_str(&e, "result.messages.0.content.text"), "Hi Bo");
    hx_ex_free(&e);
    mcp(&e, "prompts/list", "{}");
    CHECK_STR_EQ(hx_str(&e, "result.prompts.0.name"), "greet");
    hx_ex_free(&e);
    expect("POST", TOOLS "/greet/versions",
           "{\"version\":\"2\",\"arguments\":[{\"name\":\"a\"},{\"name\":\"a\"}],\"messages\":"
           "[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"x\"}}]}",
           400, "duplicate argument \"a\"");
    expect("POST", TOOLS "/greet/versions", "{\"version\":\"2\",\"uri\":\"file:///x\"}", 400,
           "uri");
    /* listings filter by kind */
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", TOOLS "?filter=kind = \"prompt\"", NULL, NULL), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e.json, "tools")), 1);
    CHECK_STR_EQ(hx_str(&e, "tools.0.name"), "greet");
    hx_ex_free(&e);
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", TOOLS "?filter=kind = \"tool\"", NULL, NULL), 200);
    CHECK_STR_EQ(hx_str(&e, "tools.0.name"), "echo");
    CHECK_STR_EQ(hx_str(&e, "tools.0.kind"), "tool");
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e.json, "tools")), 1);
    hx_ex_free(&e);
    expect("POST", TOOLS "/greet/versions/1:offline", NULL, 200, NULL);
    hx_reload(&h);
    mcp(&e, "prompts/get", "{\"name\":\"greet\",\"arguments\":{\"who\":\"Bo\"}}");
    CHECK_STR_EQ(hx_rpc_message(&e), "Unknown prompt: greet");
    hx_ex_free(&e);
    expect("DELETE", TOOLS "/greet/versions/1", NULL, 204, NULL);
    expect("GET", TOOLS "/greet", NULL, 404, NULL);
    TEST_PASS("admin API: a prompt created, published, got, listed by kind, offlined, deleted");
}

int main(void)
{
    static const char *const args[] = {"--resource-max-bytes", "16", NULL};
    hx_start(&h, config, args);
    test_resource();
    test_prompt();
    hx_stop(&h);
    return 0;
}
