/*
 * Tests ingress/http/auth.c through the front door (tests/handlers/harness.h) with real
 * ES256 access tokens of a test issuer whose JWKS an in-process server serves: what an OAuth
 * principal carries for the ownership model (ingress/core/owner.h, docs/security.md
 * "Ownership model"): the servers its aud binds it to, and its user, or its client when it
 * names no user.
 */
#include "check.h"
#include "frontdoor.h"
#include "harness.h"
#include "jwt.h"
#include "oauth.h"
#include "owner.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BASE "http://mcp.test"

static hx_t h;
static fx_es256_t key;
static char issuer[128], jwks_uri[128];

static enum MHD_Result on_request(struct MHD_Connection *conn, const char *url, const char *method,
                                  const util_buf_t *b)
{
    (void)method;
    (void)b;
    char body[1024];
    int status = strcmp(url, "/jwks") == 0 ? 200 : 404;
    snprintf(body, sizeof(body), "{\"keys\":[%s]}", status == 200 ? key.jwk : "");
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static atomic_int woken;

static void on_wake(void *arg)
{
    (void)arg;
    atomic_store(&woken, 1);
}

/* Lets the key service fetch what token needs (as server.c parks a request until then). */
static void keys_ready(const char *token)
{
    for (int i = 0; i < 100; i++) {
        atomic_store(&woken, 0);
        if (ing_oauth_prepare(h.ctx.oauth, token, NULL, on_wake, NULL) == ING_OAUTH_READY)
            return;
        for (int j = 0; j < 200 && !atomic_load(&woken); j++)
            fx_sleep_ms(10);
    }
    CHECK(!"the issuer's keys were fetched");
}

/* The front door's verdict for a token of these claims at uri; the principal's servers, user
 * and owner string into the outs ("-" for NULL). */
static ing_door_verdict_t enter(const char *claims, const char *uri, char *servers, char *user,
                                char *owner, size_t n)
{
    char *token = fx_es256_jwt(&key, claims), authz[JWT_TOKEN_MAX + 8];
    keys_ready(token);
    snprintf(authz, sizeof(authz), "Bearer %s", token);
    const char *hdrs[] = {"Authorization", authz, NULL};
    hx_ex_t e;
    hx_ex_init(&h, &e, "POST", uri, "{}", 0, hdrs);
    ing_door_t d;
    ing_door_verdict_t v = ing_frontdoor_enter(&e.req, ING_DOOR_TENANT, &d);
    snprintf(servers, n, "%s", v == ING_DOOR_IN && d.who.servers ? d.who.servers : "-");
    snprintf(user, n, "%s", v == ING_DOOR_IN && d.who.user ? d.who.user : "-");
    if (v != ING_DOOR_IN || ing_owner_of(&d.who, owner, n) < 0)
        snprintf(owner, n, "-");
    ing_frontdoor_leave(&d);
    hx_ex_free(&e);
    free(token);
    return v;
}

/* Claims of a token of the test issuer for aud (a JSON value), naming sub (NULL: none) and
 * client_id. */
static const char *claims_of(char *out, size_t n, const char *aud, const char *sub)
{
    long long now = fx_now_ms() / 1000;
    char subj[100] = "";
    if (sub)
        snprintf(subj, sizeof(subj), "\"sub\":\"%s\",", sub);
    snprintf(out, n,
             "{\"iss\":\"%s\",%s\"client_id\":\"svc\",\"aud\":%s,\"scope\":\"mcp:tools\","
             "\"iat\":%lld,\"exp\":%lld}",
             issuer, subj, aud, now - 5, now + 600);
    return out;
}

static void test_binding(void)
{
    static const struct {
        const char *aud, *uri, *servers;
    } cases[] = {
        {"\"" BASE "/mcp/crm\"", "/mcp/crm", "crm"},
        {"[\"" BASE "/mcp/crm\",\"" BASE "/mcp/hr\",\"account\"]", "/mcp/hr", "crm hr"},
        {"\"" BASE "\"", "/mcp/crm", "-"},   /* the gateway: the whole tenant */
        {"\"" BASE "/mcp\"", "/mcp", "-"},   /* the MCP endpoint as a whole */
        {"\"api://mcpq\"", "/mcp/crm", "-"}, /* an oauth.audiences value */
        {"[\"" BASE "/mcp/crm\",\"" BASE "\"]", "/mcp/crm", "-"},
    };
    char claims[1024], servers[128], user[128], owner[ING_OWNER_MAX];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        claims_of(claims, sizeof(claims), cases[i].aud, "alice");
        CHECK_INT_EQ(enter(claims, cases[i].uri, servers, user, owner, sizeof(servers)),
                     ING_DOOR_IN);
        CHECK_STR_EQ(servers, cases[i].servers);
        CHECK_STR_EQ(user, "alice");
        CHECK_STR_EQ(owner, "user:alice");
    }
    /* bound to crm, presented at hr: refused as before (the audience check) */
    claims_of(claims, sizeof(claims), "\"" BASE "/mcp/crm\"", "alice");
    CHECK_INT_EQ(enter(claims, "/mcp/hr", servers, user, owner, sizeof(servers)),
                 ING_DOOR_UNAUTHORIZED);
    TEST_PASS("a token's aud binds its principal to the servers it names, or to the tenant");
}

/* More servers than the front door keeps for a request: refused, unless a value of the same
 * aud names the whole tenant, wherever it stands (here last). */
static void test_binding_overflow(void)
{
    char aud[8192] = "[\"" BASE "/mcp/crm\",", claims[9216], servers[128], user[128],
         owner[ING_OWNER_MAX];
    for (int i = 0; i < 30; i++) /* 30 names of 120 bytes: more than ING_AUTH_STORE */
        snprintf(aud + strlen(aud), sizeof(aud) - strlen(aud), "\"" BASE "/mcp/%0120d\",", i);
    size_t at = strlen(aud);
    snprintf(aud + at, sizeof(aud) - at, "\"" BASE "\"]");
    claims_of(claims, sizeof(claims), aud, "alice");
    CHECK_INT_EQ(enter(claims, "/mcp/crm", servers, user, owner, sizeof(servers)), ING_DOOR_IN);
    CHECK_STR_EQ(servers, "-");
    CHECK_STR_EQ(owner, "user:alice");
    snprintf(aud + at - 1, sizeof(aud) - at + 1, "]"); /* without the whole-tenant value */
    claims_of(claims, sizeof(claims), aud, "alice");
    CHECK_INT_EQ(enter(claims, "/mcp/crm", servers, user, owner, sizeof(servers)),
                 ING_DOOR_UNAUTHORIZED);
    TEST_PASS("a whole-tenant aud value wins after more servers than fit; without it, refused");
}

static void test_client_token(void)
{
    char claims[1024], servers[128], user[128], owner[ING_OWNER_MAX];
    claims_of(claims, sizeof(claims), "\"" BASE "/mcp/crm\"", NULL);
    CHECK_INT_EQ(enter(claims, "/mcp/crm", servers, user, owner, sizeof(servers)), ING_DOOR_IN);
    CHECK_STR_EQ(user, "-");
    CHECK_STR_EQ(owner, "client:svc");
    CHECK_STR_EQ(servers, "crm");
    /* a user named like the client is that user, not the client */
    claims_of(claims, sizeof(claims), "\"" BASE "/mcp/crm\"", "svc");
    CHECK_INT_EQ(enter(claims, "/mcp/crm", servers, user, owner, sizeof(servers)), ING_DOOR_IN);
    CHECK_STR_EQ(owner, "user:svc");
    TEST_PASS("a token without a user is its client's (client:<id>), never a user's");
}

int main(void)
{
    fx_es256_new(&key, "k1");
    int port = fx_free_port();
    struct MHD_Daemon *srv = fx_server_start(port, on_request);
    CHECK(srv != NULL);
    snprintf(issuer, sizeof(issuer), "http://127.0.0.1:%d/r", port);
    snprintf(jwks_uri, sizeof(jwks_uri), "http://127.0.0.1:%d/jwks", port);
    char config[2048];
    snprintf(config, sizeof(config),
             "{\"tenants\": [{\"id\": \"o\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY
             "\"}],"
             "  \"oauth\": {\"issuers\": [\"%s\"], \"jwks_uri\": \"%s\","
             "   \"audiences\": [\"api://mcpq\"]}}],"
             " \"servers\": [{\"tenant\": \"o\", \"name\": \"default\"},"
             "  {\"tenant\": \"o\", \"name\": \"crm\"}, {\"tenant\": \"o\", \"name\": \"hr\"}]}",
             issuer, jwks_uri);
    const char *const args[] = {"--public-url", BASE, NULL};
    hx_start(&h, config, args);
    /* what the refresh thread does once a registry is in (ingress/refresh.c) */
    ing_oauth_source_t src = {.issuer = issuer, .jwks_uri = jwks_uri};
    ing_oauth_configure(h.ctx.oauth, &src, 1);
    test_binding();
    test_binding_overflow();
    test_client_token();
    hx_stop(&h);
    MHD_stop_daemon(srv);
    fx_es256_free(&key);
    return 0;
}
