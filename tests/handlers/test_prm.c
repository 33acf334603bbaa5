/*
 * Tests ingress/http/prm.c through ing_prm_route and the 401 of ing_mcp_post with synthetic
 * requests (tests/handlers/harness.h), as a caller without a credential sees them
 * (docs/security.md, "What is public"): the Protected Resource Metadata names the issuers and
 * scopes of the tenants that take tokens, the same lists for the root, /mcp and every
 * /mcp/{server}; a server some tenant serves and one no tenant serves answer alike, both the
 * metadata and the 401 challenge, so neither tells which server names exist.
 */
#include "check.h"
#include "harness.h"

#include "mcp.h"
#include "prm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tenant a takes tokens and has a server crm; b takes tokens from another issuer; t (the
 * harness's key) takes none. */
static const char config[] =
    "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"}]},"
    " {\"id\": \"a\", \"oauth\": {\"issuers\": [\"https://idp.example.com/a\"],"
    "  \"scopes_supported\": [\"mcp:a\"]}},"
    " {\"id\": \"b\", \"oauth\": {\"issuers\": [\"https://idp.example.com/b\"],"
    "  \"scopes_supported\": [\"mcp:b\"]}}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}, {\"tenant\": \"a\", \"name\": "
    "\"default\"}, {\"tenant\": \"a\", \"name\": \"crm\"}, {\"tenant\": \"b\", \"name\": "
    "\"default\"}]}";

static hx_t h;

/* GET of the metadata at ING_PRM_PATH + rest: its status, and its body parsed into e. */
static int prm_get(hx_ex_t *e, const char *rest)
{
    char url[256];
    snprintf(url, sizeof(url), ING_PRM_PATH "%s", rest);
    const char *hdrs[] = {"Host", "127.0.0.1:8080", NULL};
    hx_ex_init(&h, e, "GET", url, NULL, 0, hdrs);
    ing_prm_route(&e->req, url, "GET", &e->resp);
    hx_ex_parse(e);
    return e->resp.status;
}

/* The members of the metadata that must not depend on the resource, as one string. */
static void lists_of(const hx_ex_t *e, char *out, size_t n)
{
    char *a =
        cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(e->json, "authorization_servers"));
    char *s = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(e->json, "scopes_supported"));
    snprintf(out, n, "%s %s", a ? a : "-", s ? s : "-");
    cJSON_free(a);
    cJSON_free(s);
}

static void test_metadata_alike(void)
{
    hx_ex_t e;
    char root[512], mcp[512], crm[512], none[512];
    CHECK_INT_EQ(prm_get(&e, ""), 200);
    CHECK_STR_EQ(hx_str(&e, "resource"), "http://127.0.0.1:8080");
    lists_of(&e, root, sizeof(root));
    hx_ex_free(&e);
    /* the issuers and scopes of the tenants that take tokens are public (security.md) */
    CHECK_CONTAINS(root, "\"https://idp.example.com/a\"");
    CHECK_CONTAINS(root, "\"https://idp.example.com/b\"");
    CHECK_CONTAINS(root, "\"mcp:a\"");
    CHECK_CONTAINS(root, "\"mcp:b\"");
    CHECK_INT_EQ(prm_get(&e, "/mcp"), 200);
    lists_of(&e, mcp, sizeof(mcp));
    hx_ex_free(&e);
    CHECK_INT_EQ(prm_get(&e, "/mcp/crm"), 200); /* a's server */
    CHECK_STR_EQ(hx_str(&e, "resource"), "http://127.0.0.1:8080/mcp/crm");
    lists_of(&e, crm, sizeof(crm));
    hx_ex_free(&e);
    CHECK_INT_EQ(prm_get(&e, "/mcp/nosuchserver"), 200); /* nobody's */
    CHECK_STR_EQ(hx_str(&e, "resource"), "http://127.0.0.1:8080/mcp/nosuchserver");
    lists_of(&e, none, sizeof(none));
    hx_ex_free(&e);
    CHECK_STR_EQ(mcp, root);
    CHECK_STR_EQ(crm, root);
    CHECK_STR_EQ(none, root);
    CHECK_INT_EQ(prm_get(&e, "/mcp/no such"), 404); /* not a server name at all */
    hx_ex_free(&e);
    TEST_PASS("the metadata of /mcp/crm (served) and /mcp/nosuchserver (not) are alike, and the "
              "root's and /mcp's");
}

/* POST /mcp/<server> without a credential: the 401 and its WWW-Authenticate. */
static void unauthenticated(hx_ex_t *e, const char *server, char *challenge, size_t n)
{
    char url[128];
    snprintf(url, sizeof(url), "/mcp/%s", server);
    const char *hdrs[] = {"Host",
                          "127.0.0.1:8080",
                          "Content-Type",
                          "application/json",
                          "Accept",
                          "application/json, text/event-stream",
                          "MCP-Protocol-Version",
                          "2025-06-18",
                          NULL};
    hx_ex_init(&h, e, "POST", url, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", 0,
               hdrs);
    CHECK(!ing_mcp_post(&e->req, server, &e->resp));
    hx_ex_parse(e);
    CHECK_INT_EQ(e->resp.status, 401);
    snprintf(challenge, n, "%s", e->resp.www_auth);
}

static void test_challenge_alike(void)
{
    hx_ex_t e;
    char crm[1024], none[1024];
    unauthenticated(&e, "crm", crm, sizeof(crm));
    char *crm_body = cJSON_PrintUnformatted(e.json);
    hx_ex_free(&e);
    unauthenticated(&e, "nosuchserver", none, sizeof(none));
    char *none_body = cJSON_PrintUnformatted(e.json);
    hx_ex_free(&e);
    static const char crm_md[] =
        "Bearer resource_metadata=\"http://127.0.0.1:8080" ING_PRM_PATH "/mcp/crm\", ";
    static const char none_md[] =
        "Bearer resource_metadata=\"http://127.0.0.1:8080" ING_PRM_PATH "/mcp/nosuchserver\", ";
    CHECK(strncmp(crm, crm_md, strlen(crm_md)) == 0);
    CHECK(strncmp(none, none_md, strlen(none_md)) == 0);
    CHECK_STR_EQ(crm + strlen(crm_md), none + strlen(none_md)); /* the scopes: every tenant's */
    CHECK_CONTAINS(crm + strlen(crm_md), "mcp:b");
    CHECK_STR_EQ(crm_body, none_body);
    cJSON_free(crm_body);
    cJSON_free(none_body);
    TEST_PASS("the 401 of /mcp/crm and of /mcp/nosuchserver are alike (but for the resource)");
}

int main(void)
{
    hx_start(&h, config, NULL);
    test_metadata_alike();
    test_challenge_alike();
    hx_stop(&h);
    return 0;
}
