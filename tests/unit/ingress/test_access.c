/* Tests ingress/core/access.c: the verdict of ing_access_check for API keys, apps and OAuth
 * principals built by hand, on a snapshot built from registry documents (registry.h), and the
 * registry surface it reads (tenant oauth, key and app perms, access rules). */
#include "access.h"
#include "auth.h"
#include "check.h"
#include "registry.h"

#include <stdlib.h>
#include <string.h>

static const char *const docs[] = {
    "tenant:acme",
    "{\"id\":\"acme\",\"api_keys\":[{\"id\":\"ci\",\"sha256\":\"" /* any 64 hex digits */
    "0000000000000000000000000000000000000000000000000000000000000001\",\"scopes\":[\"tools\","
    "\"crm:write\"]}],\"apps\":[{\"app_id\":\"billing\",\"secret\":\"s\",\"scopes\":[\"tools\"]}],"
    "\"oauth\":{\"issuers\":[\"https://idp.example.com/a\",\"https://idp.example.com/b\"],"
    "\"claims\":{\"tenant\":\"org\"},\"scopes\":{\"mcp:tools\":[\"tools\"],"
    "\"mcp:admin\":[\"tools\",\"crm:write\"],\"crm\":[\"crm:write\"]},"
    "\"scopes_supported\":[\"mcp:tools\"],\"introspection\":{\"endpoint\":"
    "\"https://idp.example.com/i\",\"client_id\":\"mcpq\",\"client_secret\":\"cs\"}}}",
    "tenant:plain",
    "{\"id\":\"plain\",\"oauth\":{\"issuers\":[\"https://idp.example.com/p\"],"
    "\"jwks_uri\":\"https://idp.example.com/p/jwks\",\"claims\":{\"user\":\"email\"}}}",
    "tenant:none",
    "{\"id\":\"none\"}",
    "server:acme:default",
    "{\"tenant\":\"acme\",\"name\":\"default\"}",
    "server:acme:crm",
    "{\"tenant\":\"acme\",\"name\":\"crm\",\"access\":{\"scopes\":[\"tools\"]}}",
    "server:plain:default",
    "{\"tenant\":\"plain\",\"name\":\"default\"}",
    "tool:acme:open",
    "{\"tenant\":\"acme\",\"server\":\"default\",\"name\":\"open\",\"published\":\"1\","
    "\"versions\":[{\"version\":\"1\"}]}",
    "tool:acme:write",
    "{\"tenant\":\"acme\",\"server\":\"crm\",\"name\":\"write\",\"published\":\"1\","
    "\"access\":{\"scopes\":[\"crm:write\"]},\"versions\":[{\"version\":\"1\"}]}",
    "tool:acme:named",
    "{\"tenant\":\"acme\",\"server\":\"default\",\"name\":\"named\",\"published\":\"1\","
    "\"access\":{\"keys\":[\"ci\"],\"apps\":[\"billing\",\"web-client\"],\"users\":[\"alice\"]},"
    "\"versions\":[{\"version\":\"1\"}]}",
    "tool:acme:draft",
    "{\"tenant\":\"acme\",\"server\":\"default\",\"name\":\"draft\",\"access\":{\"users\":"
    "[\"bob\"]},\"versions\":[{\"version\":\"1\"}]}",
    "tool:plain:p",
    "{\"tenant\":\"plain\",\"server\":\"default\",\"name\":\"p\",\"published\":\"1\","
    "\"access\":{\"scopes\":[\"read\",\"write\"]},\"versions\":[{\"version\":\"1\"}]}",
};

int main(void)
{
    enum { N = sizeof(docs) / sizeof(docs[0]) };
    size_t lens[N];
    char err[256], scope[256];
    for (size_t i = 0; i < N; i++)
        lens[i] = strlen(docs[i]);
    ing_registry_t *reg = ing_registry_build(docs, lens, N, 1, err, sizeof(err));
    CHECK(reg != NULL);

    /* the registry surface: tenants by index, oauth with defaults, perms */
    CHECK_INT_EQ(ing_registry_tenant_count(reg), 3);
    CHECK(ing_registry_tenant_at(reg, 3) == NULL);
    const ing_tenant_t *acme = ing_registry_tenant(reg, "acme");
    const ing_tenant_t *plain = ing_registry_tenant(reg, "plain");
    int seen = 0;
    for (size_t i = 0; i < ing_registry_tenant_count(reg); i++)
        seen += ing_registry_tenant_at(reg, i) == acme;
    CHECK_INT_EQ(seen, 1);
    CHECK(ing_registry_tenant(reg, "none")->oauth == NULL);
    const ing_tenant_oauth_t *o = acme->oauth;
    CHECK(o != NULL);
    CHECK_INT_EQ(o->n_issuers, 2);
    CHECK_STR_EQ(o->issuers[1], "https://idp.example.com/b");
    CHECK_INT_EQ(o->n_audiences, 0);
    CHECK(o->jwks_uri == NULL);
    CHECK_STR_EQ(o->claim_user, "sub");
    CHECK_STR_EQ(o->claim_app, "azp");
    CHECK_STR_EQ(o->claim_tenant, "org");
    CHECK_STR_EQ(o->tenant_value, "acme"); /* default: the tenant id */
    CHECK(o->scopes != NULL && cJSON_IsObject(o->scopes));
    CHECK_INT_EQ(o->n_scopes_supported, 1);
    CHECK_STR_EQ(o->scopes_supported[0], "mcp:tools");
    CHECK_STR_EQ(o->introspection_endpoint, "https://idp.example.com/i");
    CHECK_STR_EQ(o->client_id, "mcpq");
    CHECK_STR_EQ(o->client_secret, "cs");
    CHECK_STR_EQ(plain->oauth->claim_user, "email");
    CHECK_STR_EQ(plain->oauth->jwks_uri, "https://idp.example.com/p/jwks");
    CHECK(plain->oauth->claim_tenant == NULL && plain->oauth->tenant_value == NULL);
    CHECK(plain->oauth->scopes == NULL && plain->oauth->introspection_endpoint == NULL);
    unsigned char sha[32] = {0};
    sha[31] = 1;
    const ing_apikey_t *key = ing_registry_auth_key(reg, sha);
    CHECK(key != NULL);
    CHECK_STR_EQ(key->perms, "tools crm:write");
    CHECK_STR_EQ(ing_registry_app(reg, "billing")->perms, "tools");
    CHECK(ing_registry_server(reg, "acme", "crm")->access != NULL);
    CHECK(ing_registry_server(reg, "acme", "default")->access == NULL);
    CHECK(ing_registry_oauth_used(reg));
    CHECK(!ing_registry_oauth_used(NULL));
    {
        const char *one[] = {"tenant:none", "{\"id\":\"none\"}"};
        size_t one_len[] = {strlen(one[0]), strlen(one[1])};
        ing_registry_t *r1 = ing_registry_build(one, one_len, 2, 1, err, sizeof(err));
        CHECK(r1 != NULL && !ing_registry_oauth_used(r1));
        ing_registry_unref(r1);
    }
    TEST_PASS("registry: tenants by index, oauth with its defaults, perms, access rules");

    /* API keys and apps: a missing permission or name hides the tool */
    ing_principal_t k = {.tenant = acme, .kind = 'k', .id = "ci", .perms = "tools crm:write"};
    ing_principal_t k2 = {.tenant = acme, .kind = 'k', .id = "other", .perms = "tools"};
    ing_principal_t a = {
        .tenant = acme, .kind = 'a', .id = "billing", .app = "billing", .perms = "tools"};
    CHECK_INT_EQ(ing_access_check(reg, &k, "default", "open", NULL, 0), ING_ACCESS_OK);
    CHECK_INT_EQ(ing_access_check(reg, &k, "crm", "write", NULL, 0), ING_ACCESS_OK);
    CHECK_INT_EQ(ing_access_check(reg, &k2, "crm", "write", NULL, 0), ING_ACCESS_HIDDEN);
    CHECK_INT_EQ(ing_access_check(reg, &a, "crm", "write", NULL, 0), ING_ACCESS_HIDDEN);
    CHECK_INT_EQ(ing_access_check(reg, &k, "default", "named", NULL, 0), ING_ACCESS_OK);
    CHECK_INT_EQ(ing_access_check(reg, &a, "default", "named", NULL, 0), ING_ACCESS_OK);
    CHECK_INT_EQ(ing_access_check(reg, &k2, "default", "named", NULL, 0), ING_ACCESS_HIDDEN);
    /* "tools" is a server-level permission: a key without it sees nothing of crm */
    ing_principal_t k3 = {.tenant = acme, .kind = 'k', .id = "ci", .perms = "crm:write"};
    CHECK_INT_EQ(ing_access_check(reg, &k3, "crm", "write", NULL, 0), ING_ACCESS_HIDDEN);
    /* a tool not served (no published version) is judged by its document's rule */
    CHECK_INT_EQ(ing_access_check(reg, &k, "default", "draft", NULL, 0), ING_ACCESS_HIDDEN);
    /* no caller: fail closed; no name and no permission: only open tools */
    CHECK_INT_EQ(ing_access_check(reg, NULL, "default", "open", NULL, 0), ING_ACCESS_HIDDEN);
    CHECK_INT_EQ(ing_access_rules(NULL, NULL, NULL, NULL, 0), ING_ACCESS_OK);
    CHECK_INT_EQ(
        ing_access_rules(NULL, ing_registry_server(reg, "acme", "crm")->access, NULL, NULL, 0),
        ING_ACCESS_HIDDEN);
    /* "system" has no rules */
    CHECK_INT_EQ(ing_access_check(reg, &k2, "system", "list_tools", NULL, 0), ING_ACCESS_OK);
    TEST_PASS("API keys and apps: named and holding every permission, else hidden");

    /* OAuth: not named is hidden; a missing permission is insufficient_scope with the scopes
     * that grant it (the map inverted) after the token's own */
    ing_principal_t t = {.tenant = acme,
                         .kind = 'o',
                         .id = "alice",
                         .user = "alice",
                         .app = "web-client",
                         .perms = "tools",
                         .token_scopes = "mcp:tools openid"};
    CHECK_INT_EQ(ing_access_check(reg, &t, "default", "named", NULL, 0), ING_ACCESS_OK);
    ing_principal_t t_app = {.tenant = acme,
                             .kind = 'o',
                             .id = "carol",
                             .user = "carol",
                             .app = "web-client",
                             .perms = "",
                             .token_scopes = ""};
    CHECK_INT_EQ(ing_access_check(reg, &t_app, "default", "named", NULL, 0), ING_ACCESS_OK);
    ing_principal_t t_no = {.tenant = acme,
                            .kind = 'o',
                            .id = "carol",
                            .user = "carol",
                            .app = "other",
                            .perms = "tools crm:write",
                            .token_scopes = "mcp:admin"};
    CHECK_INT_EQ(ing_access_check(reg, &t_no, "default", "named", scope, sizeof(scope)),
                 ING_ACCESS_HIDDEN);
    /* a token without a user claim is known by its client id (auth.c): that id is no user, so
     * it never satisfies "users", even when a user of that name is listed */
    ing_principal_t t_client = {.tenant = acme,
                                .kind = 'o',
                                .id = "alice",
                                .app = "alice",
                                .perms = "tools crm:write",
                                .token_scopes = "mcp:tools"};
    CHECK_INT_EQ(ing_access_check(reg, &t_client, "default", "named", NULL, 0), ING_ACCESS_HIDDEN);
    CHECK_INT_EQ(ing_access_check(reg, &t, "crm", "write", scope, sizeof(scope)), ING_ACCESS_SCOPE);
    CHECK_STR_EQ(scope, "mcp:tools openid mcp:admin crm");
    ing_principal_t t0 = {.tenant = acme,
                          .kind = 'o',
                          .id = "alice",
                          .user = "alice",
                          .perms = "",
                          .token_scopes = ""};
    CHECK_INT_EQ(ing_access_check(reg, &t0, "crm", "write", scope, sizeof(scope)),
                 ING_ACCESS_SCOPE);
    CHECK_STR_EQ(scope, "mcp:tools mcp:admin crm");
    /* without a map: the permission itself */
    ing_principal_t tp = {
        .tenant = plain, .kind = 'o', .id = "x@y", .perms = "read", .token_scopes = "read"};
    CHECK_INT_EQ(ing_access_check(reg, &tp, "default", "p", scope, sizeof(scope)),
                 ING_ACCESS_SCOPE);
    CHECK_STR_EQ(scope, "read write");
    tp.perms = "read write";
    CHECK_INT_EQ(ing_access_check(reg, &tp, "default", "p", scope, sizeof(scope)), ING_ACCESS_OK);
    /* a buffer too small keeps whole scopes */
    tp.perms = "";
    tp.token_scopes = "";
    CHECK_INT_EQ(ing_access_check(reg, &tp, "default", "p", scope, 8), ING_ACCESS_SCOPE);
    CHECK_STR_EQ(scope, "read");
    TEST_PASS("OAuth: hidden when not named, insufficient_scope with the scopes to ask for");

    /* a rule changed changes the server's tools/list fingerprint (listen.h tells clients) */
    unsigned char fp[32];
    memcpy(fp, ing_registry_server(reg, "acme", "crm")->tools_fp, 32);
    static const char *const variants[] = {
        "{\"tenant\":\"acme\",\"server\":\"crm\",\"name\":\"write\",\"published\":\"1\","
        "\"access\":{\"scopes\":[\"crm:write\"]},\"versions\":[{\"version\":\"1\"}]}",
        "{\"tenant\":\"acme\",\"server\":\"crm\",\"name\":\"write\",\"published\":\"1\","
        "\"access\":{\"scopes\":[\"crm:read\"]},\"versions\":[{\"version\":\"1\"}]}"};
    for (int v = 0; v < 2; v++) {
        const char *d2[N];
        size_t l2[N];
        for (size_t i = 0; i < N; i++) {
            d2[i] = i == 15 ? variants[v] : docs[i]; /* tool:acme:write */
            l2[i] = strlen(d2[i]);
        }
        ing_registry_t *r2 = ing_registry_build(d2, l2, N, 2, err, sizeof(err));
        CHECK(r2 != NULL);
        CHECK_INT_EQ(memcmp(ing_registry_server(r2, "acme", "crm")->tools_fp, fp, 32) == 0, v == 0);
        ing_registry_unref(r2);
    }
    TEST_PASS("a changed access rule changes the server's tools/list fingerprint");

    /* a key's scopes changed changes what it lists: the fingerprint of a server with rules
     * (crm) changes, that of one without any (plain's default) does not */
    unsigned char plain_fp[32];
    memcpy(plain_fp, ing_registry_server(reg, "plain", "default")->tools_fp, 32);
    {
        const char *d2[N];
        size_t l2[N];
        char *acme_doc = strdup(docs[1]);
        char *at = strstr(acme_doc, "\"crm:write\"]}],\"apps\"");
        CHECK(at != NULL);
        memcpy(at + 5, "wrote", 5); /* the key's scope "crm:write" becomes "crm:wrote" */
        for (size_t i = 0; i < N; i++) {
            d2[i] = i == 1 ? acme_doc : docs[i];
            l2[i] = strlen(d2[i]);
        }
        ing_registry_t *r2 = ing_registry_build(d2, l2, N, 2, err, sizeof(err));
        CHECK(r2 != NULL);
        CHECK(memcmp(ing_registry_server(r2, "acme", "crm")->tools_fp, fp, 32) != 0);
        CHECK(memcmp(ing_registry_server(r2, "plain", "default")->tools_fp, plain_fp, 32) == 0);
        ing_registry_unref(r2);
        free(acme_doc);
    }
    TEST_PASS("a key's scopes changed changes the fingerprint of servers with rules only");

    ing_registry_unref(reg);
    return 0;
}
