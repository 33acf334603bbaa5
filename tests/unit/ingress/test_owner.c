/* Tests ingress/core/owner.c: the owner string of each kind of principal, the servers an
 * OAuth token's aud binds it to, and the one verdict on who may see a task or delivery
 * (owner, tasks:all, tool access, token binding, tasks without an owner), on a snapshot built
 * from registry documents (registry.h). */
#include "owner.h"
#include "check.h"
#include "err.h"
#include "registry.h"

#include <string.h>

#define BASE "https://mcp.example.com"

static const char *const docs[] = {
    "tenant:acme",
    "{\"id\":\"acme\",\"api_keys\":[{\"id\":\"ci\",\"sha256\":\"" /* any 64 hex digits */
    "0000000000000000000000000000000000000000000000000000000000000001\"}]}",
    "server:acme:crm",
    "{\"tenant\":\"acme\",\"name\":\"crm\"}",
    "server:acme:hr",
    "{\"tenant\":\"acme\",\"name\":\"hr\"}",
    "tool:acme:contacts",
    "{\"tenant\":\"acme\",\"server\":\"crm\",\"name\":\"contacts\",\"published\":\"1\","
    "\"versions\":[{\"version\":\"1\"}]}",
    "tool:acme:payroll",
    "{\"tenant\":\"acme\",\"server\":\"hr\",\"name\":\"payroll\",\"published\":\"1\","
    "\"access\":{\"users\":[\"alice\",\"bob\"],\"keys\":[\"ci\"]},\"versions\":[{\"version\":\"1\"}"
    "]}",
};

/* The binding of a token whose claims are json, into out. */
static int binding(const char *json, const char *base, char *out, size_t n)
{
    static const char *const audiences[] = {"api://mcpq"};
    cJSON *claims = cJSON_Parse(json);
    CHECK(claims != NULL);
    int rc = ing_owner_binding(claims, base, audiences, 1, out, n);
    cJSON_Delete(claims);
    return rc;
}

static void test_owner_of(const ing_tenant_t *t)
{
    char out[ING_OWNER_MAX];
    ing_principal_t key = {.tenant = t, .kind = 'k', .id = "ci"};
    ing_principal_t app = {.tenant = t, .kind = 'a', .id = "billing", .app = "billing"};
    ing_principal_t user = {.tenant = t, .kind = 'o', .id = "alice", .app = "web", .user = "alice"};
    ing_principal_t client = {.tenant = t, .kind = 'o', .id = "alice", .app = "alice"};
    CHECK_INT_EQ(ing_owner_of(&key, out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "key:ci");
    CHECK_INT_EQ(ing_owner_of(&app, out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "app:billing");
    CHECK_INT_EQ(ing_owner_of(&user, out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "user:alice");
    /* a client named like a user is not that user */
    CHECK_INT_EQ(ing_owner_of(&client, out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "client:alice");
    CHECK_INT_EQ(ing_owner_of(NULL, out, sizeof(out)), MCPQ_EINVAL);
    CHECK_STR_EQ(out, "");
    ing_principal_t nameless = {.tenant = t, .kind = 'k', .id = ""};
    CHECK_INT_EQ(ing_owner_of(&nameless, out, sizeof(out)), MCPQ_EINVAL);
    CHECK_INT_EQ(ing_owner_of(&user, out, 6), MCPQ_ETOOBIG);
    CHECK_STR_EQ(out, "");
    TEST_PASS("owner strings: key:, app:, user:, client: (a client is never a user)");
}

static void test_binding(void)
{
    char out[64];
    CHECK_INT_EQ(binding("{\"aud\":\"" BASE "/mcp/crm\"}", BASE, out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "crm");
    CHECK_INT_EQ(binding("{\"aud\":[\"" BASE "/mcp/crm\",\"account\",\"" BASE "/mcp/hr\","
                         "\"" BASE "/mcp/crm\"]}",
                         BASE, out, sizeof(out)),
                 0);
    CHECK_STR_EQ(out, "crm hr");
    /* the whole tenant: the base, the base's /mcp, or an oauth.audiences value */
    static const char *const whole[] = {"{\"aud\":\"" BASE "\"}",
                                        "{\"aud\":\"" BASE "/\"}",
                                        "{\"aud\":\"" BASE "/mcp\"}",
                                        "{\"aud\":\"" BASE "/mcp/\"}",
                                        "{\"aud\":\"api://mcpq\"}",
                                        "{\"aud\":[\"" BASE "/mcp/crm\",\"" BASE "\"]}",
                                        "{\"aud\":[\"api://mcpq\",\"" BASE "/mcp/hr\"]}"};
    for (size_t i = 0; i < sizeof(whole) / sizeof(whole[0]); i++) {
        snprintf(out, sizeof(out), "x");
        CHECK_INT_EQ(binding(whole[i], BASE, out, sizeof(out)), 0);
        CHECK_STR_EQ(out, "");
    }
    /* values naming nothing of this gateway */
    static const char *const none[] = {
        "{\"aud\":\"https://mcp.example.com.evil.example/mcp/crm\"}",
        "{\"aud\":\"" BASE "/mcp/crm/x\"}",
        "{\"aud\":\"" BASE "/v1/tasks\"}",
        "{\"aud\":[\"account\", 5]}",
        "{\"sub\":\"no aud\"}",
    };
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
        CHECK_INT_EQ(binding(none[i], BASE, out, sizeof(out)), MCPQ_ENOTFOUND);
    /* no trusted base: only oauth.audiences count */
    CHECK_INT_EQ(binding("{\"aud\":\"" BASE "/mcp/crm\"}", NULL, out, sizeof(out)), MCPQ_ENOTFOUND);
    CHECK_INT_EQ(binding("{\"aud\":\"api://mcpq\"}", NULL, out, sizeof(out)), 0);
    CHECK_INT_EQ(binding("{\"aud\":[\"" BASE "/mcp/crm\",\"" BASE "/mcp/hr\"]}", BASE, out, 5),
                 MCPQ_ETOOBIG);
    CHECK_STR_EQ(out, "");
    /* a whole-tenant value wins wherever it stands, even after more servers than fit */
    CHECK_INT_EQ(
        binding("{\"aud\":[\"" BASE "/mcp/crm\",\"" BASE "/mcp/hr\",\"" BASE "\"]}", BASE, out, 5),
        0);
    CHECK_STR_EQ(out, "");
    CHECK_INT_EQ(binding("{\"aud\":[\"" BASE "/mcp/crm\",\"" BASE "/mcp/hr\",\"api://mcpq\"]}",
                         BASE, out, 5),
                 0);
    CHECK_STR_EQ(out, "");
    TEST_PASS("a token's aud binds it to the servers it names, or to the whole tenant");
}

static void test_may(const ing_registry_t *reg, const ing_tenant_t *t)
{
    ing_principal_t ci = {.tenant = t, .kind = 'k', .id = "ci", .perms = ""};
    ing_principal_t other = {.tenant = t, .kind = 'k', .id = "other", .perms = ""};
    ing_principal_t all = {.tenant = t, .kind = 'k', .id = "other", .perms = "tools tasks:all"};
    ing_principal_t alice_crm = {.tenant = t,
                                 .kind = 'o',
                                 .id = "alice",
                                 .user = "alice",
                                 .perms = "tasks:all",
                                 .servers = "crm"};
    ing_principal_t alice = {.tenant = t, .kind = 'o', .id = "alice", .user = "alice", .perms = ""};
    ing_principal_t carol = {
        .tenant = t, .kind = 'o', .id = "carol", .user = "carol", .perms = "tasks:all"};
    CHECK(ing_owner_bound(&ci, "hr"));
    CHECK(ing_owner_bound(&alice_crm, "crm"));
    CHECK(!ing_owner_bound(&alice_crm, "hr"));
    CHECK(!ing_owner_bound(&alice_crm, "cr"));
    CHECK(!ing_owner_bound(&alice_crm, ""));
    CHECK(!ing_owner_bound(NULL, "crm"));
    /* the owner, and nobody else without the permission */
    CHECK(ing_owner_may(reg, &ci, "key:ci", "crm", "contacts"));
    CHECK(!ing_owner_may(reg, &other, "key:ci", "crm", "contacts"));
    CHECK(!ing_owner_may(reg, &alice, "key:ci", "crm", "contacts"));
    CHECK(!ing_owner_may(reg, &alice, "client:alice", "crm", "contacts"));
    CHECK(ing_owner_may(reg, &alice, "user:alice", "crm", "contacts"));
    CHECK(ing_owner_may(reg, &all, "key:ci", "crm", "contacts"));
    /* a task without an owner: the permission only */
    CHECK(!ing_owner_may(reg, &ci, "", "crm", "contacts"));
    CHECK(!ing_owner_may(reg, &ci, NULL, "crm", "contacts"));
    CHECK(ing_owner_may(reg, &all, "", "crm", "contacts"));
    /* a token bound to crm: not an hr task, even its own or with the permission */
    CHECK(ing_owner_may(reg, &alice_crm, "key:ci", "crm", "contacts"));
    CHECK(!ing_owner_may(reg, &alice_crm, "user:alice", "hr", "payroll"));
    CHECK(ing_owner_may(reg, &alice, "user:alice", "hr", "payroll"));
    /* a tool hidden from the caller: not even with the permission */
    CHECK(!ing_owner_may(reg, &carol, "key:ci", "hr", "payroll"));
    CHECK(!ing_owner_may(reg, &all, "key:ci", "hr", "payroll"));
    CHECK(!ing_owner_may(reg, NULL, "key:ci", "crm", "contacts"));
    TEST_PASS("who may see a task: its owner or tasks:all, within tool access and the binding");
}

int main(void)
{
    enum { N = sizeof(docs) / sizeof(docs[0]) };
    size_t lens[N];
    char err[256];
    for (size_t i = 0; i < N; i++)
        lens[i] = strlen(docs[i]);
    ing_registry_t *reg = ing_registry_build(docs, lens, N, 1, err, sizeof(err));
    CHECK(reg != NULL);
    const ing_tenant_t *t = ing_registry_tenant(reg, "acme");
    CHECK(t != NULL);
    test_owner_of(t);
    test_binding();
    test_may(reg, t);
    ing_registry_unref(reg);
    return 0;
}
