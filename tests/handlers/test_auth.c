/*
 * Tests ingress/http/auth.c where OAuth access tokens meet it before and at the front door
 * (tests/handlers/harness.h): how much body a token's headers earn (ing_auth_known: a cheap,
 * lenient look that verifies no signature and fetches nothing) and the refusal of an opaque
 * token where several tenants introspect (docs/authorization.md "Which tenant introspects
 * where"), with its Bearer challenge.
 */
#include "check.h"
#include "frontdoor.h"
#include "harness.h"

#include "auth.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

#define IDP "https://idp.example.com/"
#define INTROSPECTION(T)                                                                           \
    ",\"introspection\":{\"endpoint\":\"" IDP T "/i\",\"client_id\":\"c\",\"client_secret\":"      \
    "\"s\"}"

/* a and b introspect opaque tokens, j takes JWTs only; only a has the server "only-a". */
static const char config[] =
    "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"}]},"
    " {\"id\": \"a\", \"oauth\": {\"issuers\": [\"" IDP "a\"]" INTROSPECTION(
        "a") "}},"
             " {\"id\": \"b\", \"oauth\": {\"issuers\": [\"" IDP
             "b\"]" INTROSPECTION("b") "}},"
                                       " {\"id\": \"j\", \"oauth\": {\"issuers\": [\"" IDP
                                       "j\"]}}],"
                                       " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"},"
                                       "  {\"tenant\": \"a\", \"name\": \"default\"}, {\"tenant\": "
                                       "\"a\", \"name\": \"only-a\"},"
                                       "  {\"tenant\": \"b\", \"name\": \"default\"}, {\"tenant\": "
                                       "\"j\", \"name\": \"default\"}]}";

static hx_t h;

/* A JWT of iss expiring exp_in_s from now, with a kid no key set has and a signature nobody
 * made: what a key rotation, or a forger, presents. */
static void jwt_unsigned(const char *iss, long exp_in_s, char *out, size_t n)
{
    char header[] = "{\"alg\":\"ES256\",\"typ\":\"JWT\",\"kid\":\"rotated-in\"}", payload[256];
    char h64[128], p64[400];
    snprintf(payload, sizeof(payload),
             "{\"iss\":\"%s\",\"sub\":\"alice\",\"aud\":\"api://mcpq\",\"exp\":%lld}", iss,
             (long long)(util_now_ms() / 1000) + exp_in_s);
    util_b64url_encode((const unsigned char *)header, strlen(header), h64);
    util_b64url_encode((const unsigned char *)payload, strlen(payload), p64);
    snprintf(out, n, "%s.%s.c2lnbmF0dXJlLW5vYm9keS1tYWRl", h64, p64);
}

/* ing_auth_known of a POST to uri with Authorization: Bearer token. */
static int known(const char *uri, const char *token)
{
    char authz[1024];
    snprintf(authz, sizeof(authz), "Bearer %s", token);
    const char *headers[] = {"Authorization", authz, NULL};
    hx_ex_t e;
    hx_ex_init(&h, &e, "POST", uri, "{}", 0, headers);
    ing_registry_t *reg = ing_ctx_registry(&h.ctx);
    int k = ing_auth_known(&e.req, reg);
    ing_registry_unref(reg);
    hx_ex_free(&e);
    return k;
}

/* The body limit's look at a token: no signature check, no fetch; only what the token says. */
static void test_known(void)
{
    char tok[1024];
    jwt_unsigned(IDP "j", 600, tok, sizeof(tok));
    CHECK_INT_EQ(known("/mcp", tok), 1); /* an unknown kid and an unchecked signature */
    CHECK_INT_EQ(known("/mcp/only-a", tok), 1);
    jwt_unsigned(IDP "a", 600, tok, sizeof(tok));
    CHECK_INT_EQ(known("/mcp", tok), 1);
    jwt_unsigned("https://elsewhere.example.com/", 600, tok, sizeof(tok));
    CHECK_INT_EQ(known("/mcp", tok), 0); /* no tenant trusts the issuer */
    jwt_unsigned(IDP "j", -3600, tok, sizeof(tok));
    CHECK_INT_EQ(known("/mcp", tok), 0); /* expired */
    CHECK_INT_EQ(known("/mcp", "eyJ.not-json.x"), 0);
    TEST_PASS("body limit: a JWT of a trusted issuer, unexpired, earns it without a signature "
              "check (a rotated key is no 413); others do not");
    CHECK_INT_EQ(known("/mcp/only-a", "opaque-token-0123"), 1); /* one tenant introspects */
    CHECK_INT_EQ(known("/mcp", "opaque-token-0123"), 0);        /* a and b: ambiguous */
    CHECK_INT_EQ(known("/v1/files/presign-upload", "opaque-token-0123"), 0);
    CHECK_INT_EQ(known("/mcp", HX_API_KEY), 1); /* API keys as before */
    TEST_PASS("body limit: an opaque token earns it only where one tenant introspects");
}

/* The front door refuses an opaque token where two tenants introspect, asking nobody. */
static void test_ambiguous(void)
{
    const char *headers[] = {"Authorization", "Bearer opaque-token-0123", "Host", "127.0.0.1:8080",
                             NULL};
    const char *paths[] = {"/mcp", "/mcp/default", "/v1/files/presign-upload"};
    for (size_t i = 0; i < 3; i++) {
        hx_ex_t e;
        ing_door_t d;
        hx_ex_init(&h, &e, "POST", paths[i], "{}", 0, headers);
        CHECK_INT_EQ(ing_frontdoor_enter(&e.req, ING_DOOR_TENANT, &d), ING_DOOR_UNAUTHORIZED);
        CHECK_INT_EQ(d.status, 401);
        CHECK_CONTAINS(d.why, "opaque tokens are ambiguous at this endpoint");
        CHECK_CONTAINS(d.www_auth, "error=\"invalid_token\"");
        CHECK_CONTAINS(d.www_auth, "error_description=\"opaque tokens are ambiguous");
        ing_frontdoor_leave(&d);
        hx_ex_free(&e);
    }
    hx_ex_t e;
    ing_door_t d;
    hx_ex_init(&h, &e, "POST", "/mcp/nobody-has-it", "{}", 0, headers);
    CHECK_INT_EQ(ing_frontdoor_enter(&e.req, ING_DOOR_TENANT, &d), ING_DOOR_UNAUTHORIZED);
    CHECK_CONTAINS(d.why, "no tenant introspects opaque tokens at this endpoint");
    ing_frontdoor_leave(&d);
    hx_ex_free(&e);
    TEST_PASS("an opaque token where two tenants introspect (or none): 401 invalid_token saying "
              "why");
}

int main(void)
{
    const char *args[] = {"--auth-fail-per-min", "0", NULL};
    hx_start(&h, config, args);
    test_known();
    test_ambiguous();
    hx_stop(&h);
    return 0;
}
