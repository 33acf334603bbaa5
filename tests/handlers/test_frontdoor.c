/*
 * Tests ingress/http/frontdoor.c: the verdict of the one front door for tenant credentials
 * and the operator token, as a value (tests/handlers/harness.h).
 */
#include "check.h"
#include "frontdoor.h"
#include "harness.h"

#include <string.h>

static const char config[] =
    "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"},"
    "  {\"id\": \"slow\", \"key\": \"slow-key-0123456789\","
    "   \"rate_limit\": {\"per_second\": 0.01, \"burst\": 1}}]}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}]}";

static hx_t h;

/* The verdict for a request with these headers (name, value, ..., NULL). */
static ing_door_verdict_t enter(ing_door_kind_t kind, const char *const headers[], ing_door_t *d,
                                char *tenant, size_t tenant_size)
{
    hx_ex_t e;
    hx_ex_init(&h, &e, "POST", "/mcp", "{}", 0, headers);
    ing_door_verdict_t v = ing_frontdoor_enter(&e.req, kind, d);
    snprintf(tenant, tenant_size, "%s", e.req.tenant);
    ing_frontdoor_leave(d);
    hx_ex_free(&e);
    return v;
}

static void test_tenant(void)
{
    ing_door_t d;
    char tenant[128];
    const char *key[] = {"Authorization", "Bearer " HX_API_KEY, NULL};
    CHECK_INT_EQ(enter(ING_DOOR_TENANT, key, &d, tenant, sizeof(tenant)), ING_DOOR_IN);
    CHECK_INT_EQ(d.status, 200);
    CHECK_STR_EQ(tenant, "t");
    CHECK_STR_EQ(d.who.id, "k");
    CHECK(d.reg == NULL); /* dropped by ing_frontdoor_leave */

    const char *none[] = {NULL};
    CHECK_INT_EQ(enter(ING_DOOR_TENANT, none, &d, tenant, sizeof(tenant)), ING_DOOR_UNAUTHORIZED);
    CHECK_INT_EQ(d.status, 401);
    CHECK_STR_EQ(d.www_auth, "Bearer realm=\"mcpq\"");
    CHECK_STR_EQ(tenant, "");

    const char *wrong[] = {"X-Api-Key", "not-a-key-of-anyone", NULL};
    CHECK_INT_EQ(enter(ING_DOOR_TENANT, wrong, &d, tenant, sizeof(tenant)), ING_DOOR_UNAUTHORIZED);
    CHECK_INT_EQ(d.status, 401);

    const char *origin[] = {"Authorization", "Bearer " HX_API_KEY, "Origin", "http://evil.example",
                            NULL};
    CHECK_INT_EQ(enter(ING_DOOR_TENANT, origin, &d, tenant, sizeof(tenant)), ING_DOOR_FORBIDDEN);
    CHECK_INT_EQ(d.status, 403);
    CHECK_STR_EQ(d.why, "Origin or Host not allowed");

    /* burst 1 at 0.01/s: the second request of the key waits ~100 s */
    const char *slow[] = {"Authorization", "Bearer slow-key-0123456789", NULL};
    CHECK_INT_EQ(enter(ING_DOOR_TENANT, slow, &d, tenant, sizeof(tenant)), ING_DOOR_IN);
    CHECK_INT_EQ(enter(ING_DOOR_TENANT, slow, &d, tenant, sizeof(tenant)), ING_DOOR_LIMITED);
    CHECK_INT_EQ(d.status, 429);
    CHECK(d.retry_after_ms > 1000);
    CHECK_CONTAINS(d.why, "rate limit of this API key exceeded");

    /* no registry loaded yet: 503, nothing authenticated */
    pthread_mutex_lock(&h.ctx.reg_lock);
    ing_registry_t *reg = h.ctx.reg;
    h.ctx.reg = NULL;
    pthread_mutex_unlock(&h.ctx.reg_lock);
    CHECK_INT_EQ(enter(ING_DOOR_TENANT, key, &d, tenant, sizeof(tenant)), ING_DOOR_NOT_READY);
    CHECK_INT_EQ(d.status, 503);
    pthread_mutex_lock(&h.ctx.reg_lock);
    h.ctx.reg = reg;
    pthread_mutex_unlock(&h.ctx.reg_lock);
    TEST_PASS("tenant door: API key in, none or wrong 401 with a challenge, Origin 403, rate "
              "limit 429 with the wait, no registry 503");
}

static void test_operator(void)
{
    ing_door_t d;
    char tenant[128];
    const char *token[] = {"Authorization", "Bearer " HX_ADMIN_TOKEN, NULL};
    CHECK_INT_EQ(enter(ING_DOOR_OPERATOR, token, &d, tenant, sizeof(tenant)), ING_DOOR_IN);
    const char *key[] = {"Authorization", "Bearer " HX_API_KEY, NULL};
    CHECK_INT_EQ(enter(ING_DOOR_OPERATOR, key, &d, tenant, sizeof(tenant)), ING_DOOR_UNAUTHORIZED);
    CHECK_INT_EQ(d.status, 401);
    CHECK_STR_EQ(d.www_auth, "Bearer realm=\"mcpq-admin\"");
    /* a tenant's key is no operator token, and the operator token is no tenant key */
    CHECK_INT_EQ(enter(ING_DOOR_TENANT, token, &d, tenant, sizeof(tenant)), ING_DOOR_UNAUTHORIZED);
    hx_ex_t e;
    hx_ex_init(&h, &e, "GET", "/admin/v1/tenants", NULL, 0, token);
    CHECK(ing_frontdoor_operator_token(&e.req));
    hx_ex_free(&e);
    hx_ex_init(&h, &e, "GET", "/admin/v1/tenants", NULL, 0, key);
    CHECK(!ing_frontdoor_operator_token(&e.req));
    hx_ex_free(&e);
    TEST_PASS("operator door: the token in, anything else 401 with the admin challenge");
}

int main(void)
{
    hx_start(&h, config, NULL);
    test_tenant();
    test_operator();
    hx_stop(&h);
    return 0;
}
