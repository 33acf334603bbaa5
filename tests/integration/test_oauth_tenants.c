/*
 * OAuth access tokens of several tenants against a real ingress (docs/authorization.md "Opaque
 * tokens and introspection", "Which tenant introspects where"): an authorization server in this
 * process serves three tenants' introspection endpoints and one tenant's JWKS; redis-server,
 * the devbroker and one mcpq-ingress (trusting 127.0.0.1 as a proxy, so X-Forwarded-For names
 * the client each phase poses as). Covered:
 *   - an opaque token is sent only to the introspection endpoint of the one tenant that
 *     introspects at the endpoint called: the attacker tenant's endpoint, which answers
 *     "active": true for every token, never receives the victim's tokens (not at the victim's
 *     server, not for a token the victim revoked) and never gets one accepted;
 *   - where two tenants introspect (/mcp, /v1, a server name both have) an opaque token is
 *     refused 401 invalid_token "ambiguous" and sent nowhere; JWTs still work there;
 *   - a client the failed-authentication limiter already refuses causes no introspection;
 *   - a slow introspection endpoint with every one of its slots taken does not make another
 *     tenant's new opaque tokens fail;
 *   - the body limit the headers earn: a 200 KiB request with a JWT whose kid is new (the
 *     issuer rotated its keys) is read and accepted, not refused 413.
 */
#include "check.h"
#include "fixture.h"
#include "util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define AUD "api://mcpq"
#define SLOW_CONNS 270 /* more than one source's (and the old global) introspection cap */

static fx_stack_t fx;
static int idp_port, ing_port;

/* ---- ES256 keys and tokens -------------------------------------------------------------- */

typedef fx_es256_t key_t_;

/* An ES256 JWT signed by k: iss, sub, aud AUD, an hour to live. Caller frees. */
static char *jwt_make(const key_t_ *k, const char *iss, const char *sub)
{
    char payload[512];
    long long now = (long long)(util_now_ms() / 1000);
    snprintf(payload, sizeof(payload),
             "{\"iss\":\"%s\",\"sub\":\"%s\",\"aud\":\"" AUD "\",\"iat\":%lld,\"exp\":%lld}", iss,
             sub, now - 5, now + 3600);
    return fx_es256_jwt(k, payload);
}

/* ---- the authorization servers of the three tenants -------------------------------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char jwks[2048];    /* the victim issuer's key set */
    int victim_hits;    /* introspections at the victim's endpoint */
    int attacker_hits;  /* at the attacker's */
    int attacker_saw_v; /* of them, tokens the victim's issuer issued ("v-...") */
    int slow_hits;      /* at the slow tenant's */
    int slow_hold;      /* 1: the slow endpoint answers only once this is 0 */
} idp;

static int idp_get(int *counter)
{
    pthread_mutex_lock(&mu);
    int n = *counter;
    pthread_mutex_unlock(&mu);
    return n;
}

/* Introspection requests at every endpoint. */
static int all_hits(void)
{
    pthread_mutex_lock(&mu);
    int n = idp.victim_hits + idp.attacker_hits + idp.slow_hits;
    pthread_mutex_unlock(&mu);
    return n;
}

static enum MHD_Result reply(struct MHD_Connection *c, int status, const char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

/* The token= value of a form body, into out. */
static void form_token(const util_buf_t *b, char *out, size_t n)
{
    out[0] = '\0';
    const char *p = b->data ? strstr(b->data, "token=") : NULL;
    size_t l = p ? strcspn(p + 6, "&") : 0;
    if (p && l < n) {
        memcpy(out, p + 6, l);
        out[l] = '\0';
    }
}

static enum MHD_Result on_idp(struct MHD_Connection *c, const char *url, const char *method,
                              const util_buf_t *b)
{
    char tok[256], body[2048];
    long long exp = (long long)(util_now_ms() / 1000) + 3600;
    form_token(b, tok, sizeof(tok));
    if (strcmp(url, "/victim/jwks") == 0) {
        pthread_mutex_lock(&mu);
        snprintf(body, sizeof(body), "%s", idp.jwks);
        pthread_mutex_unlock(&mu);
        return reply(c, 200, body);
    }
    if (strcmp(method, "POST") != 0)
        return reply(c, 404, "{}");
    if (strcmp(url, "/victim/introspect") == 0) {
        pthread_mutex_lock(&mu);
        idp.victim_hits++;
        pthread_mutex_unlock(&mu);
        if (strncmp(tok, "v-ok-", 5) != 0) /* v-revoked-...: revoked */
            return reply(c, 200, "{\"active\":false}");
        snprintf(body, sizeof(body),
                 "{\"active\":true,\"sub\":\"%s\",\"aud\":\"" AUD "\",\"exp\":%lld}", tok + 5, exp);
        return reply(c, 200, body);
    }
    if (strcmp(url, "/attacker/introspect") == 0) { /* says yes to everything */
        pthread_mutex_lock(&mu);
        idp.attacker_hits++;
        idp.attacker_saw_v += strncmp(tok, "v-", 2) == 0;
        pthread_mutex_unlock(&mu);
        snprintf(body, sizeof(body),
                 "{\"active\":true,\"sub\":\"mallory\",\"aud\":\"" AUD "\",\"exp\":%lld}", exp);
        return reply(c, 200, body);
    }
    if (strcmp(url, "/slow/introspect") == 0) {
        pthread_mutex_lock(&mu);
        idp.slow_hits++;
        pthread_mutex_unlock(&mu);
        for (int i = 0; i < 3000 && idp_get(&idp.slow_hold); i++) /* at most 30 s */
            usleep(10000);
        return reply(c, 200, "{\"active\":false}");
    }
    return reply(c, 404, "{}");
}

/* ---- requests to the ingress ------------------------------------------------------------- */

/* One tool of tenant T on server S (a builtin). */
#define TOOL(T, S, N)                                                                              \
    "{\"tenant\": \"" T "\", \"server\": \"" S "\", \"name\": \"" N "\", \"versions\": "           \
    "[{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"}, \"executor\": {\"type\": "     \
    "\"builtin\", \"name\": \"echo\"}}]}"

static const char *list = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";

/* POSTs body (list when NULL) to path with Authorization: Bearer token, as client. */
static void post(const char *path, const char *token, const char *client, const char *body,
                 fx_reply_t *r)
{
    char url[160], authz[4200], xff[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", ing_port, path);
    snprintf(authz, sizeof(authz), "Authorization: Bearer %s", token);
    snprintf(xff, sizeof(xff), "X-Forwarded-For: %s", client);
    const char *hdrs[] = {authz, xff, "MCP-Protocol-Version: 2025-06-18", NULL};
    CHECK_INT_EQ(fx_http_post(url, hdrs, body ? body : list, r), 0);
}

/* The tool names tools/list answered, or the error; to tell which tenant took the token. */
static void expect_tenant_tool(const fx_reply_t *r, const char *tool)
{
    if (r->status != 200 || !strstr(r->body, tool))
        fprintf(stderr, "status %ld: %s\n", r->status, r->body);
    CHECK_INT_EQ(r->status, 200);
    CHECK_CONTAINS(r->body, tool);
}

/* Item 1: each opaque token goes to one tenant's endpoint, chosen by the endpoint called. */
static void t_one_introspecting_tenant(void)
{
    fx_reply_t r;
    int a0 = idp_get(&idp.attacker_hits);
    post("/mcp/vs", "v-ok-alice", "10.1.0.1", NULL, &r);
    expect_tenant_tool(&r, "victim_tool");
    post("/mcp/vs", "v-revoked-bob", "10.1.0.1", NULL, &r); /* only the victim is asked */
    CHECK_INT_EQ(r.status, 401);
    CHECK_CONTAINS(r.body, "not active");
    CHECK_INT_EQ(idp_get(&idp.attacker_hits), a0);
    CHECK_INT_EQ(idp_get(&idp.attacker_saw_v), 0);
    TEST_PASS("an opaque token at the victim's server goes to the victim's endpoint only; a "
              "revoked one is 401, never tried at the attacker's");

    int v0 = idp_get(&idp.victim_hits);
    const char *ambiguous[] = {"/mcp", "/mcp/shared", "/v1/files/presign-upload"};
    char client[32];
    for (size_t i = 0; i < 3; i++) {
        snprintf(client, sizeof(client), "10.2.0.%zu", i + 1);
        post(ambiguous[i], "v-ok-carol", client, NULL, &r);
        if (r.status != 401)
            fprintf(stderr, "%s: %ld %s\n", ambiguous[i], r.status, r.body);
        CHECK_INT_EQ(r.status, 401);
        CHECK_CONTAINS(r.body, "ambiguous");
    }
    CHECK_INT_EQ(idp_get(&idp.attacker_hits), a0);
    CHECK_INT_EQ(idp_get(&idp.victim_hits), v0);
    CHECK_INT_EQ(idp_get(&idp.attacker_saw_v), 0);
    TEST_PASS("where two tenants introspect (/mcp, a shared server name, /v1) an opaque token "
              "is 401 ambiguous and sent nowhere");

    post("/mcp/as", "anything-at-all", "10.1.0.3", NULL, &r); /* the attacker's own resource */
    expect_tenant_tool(&r, "attacker_tool");
    CHECK_INT_EQ(idp_get(&idp.attacker_saw_v), 0);
    TEST_PASS("the attacker's endpoint decides only at the attacker's own server");
}

/* Item 3: a client the failed-authentication limiter refuses causes no introspection. */
static void t_blocked_client(const key_t_ *k)
{
    fx_reply_t r = {0};
    int refused = 0;
    char *foreign = jwt_make(k, "https://untrusted.example.com", "x"); /* 401, no fetch */
    for (int i = 0; i < 6 && r.status != 429; i++) { /* MCPQ_AUTH_FAIL_PER_MIN=3 */
        post("/mcp/vs", foreign, "10.3.0.1", NULL, &r);
        refused += r.status == 401;
    }
    free(foreign);
    CHECK(refused >= 1);
    CHECK_INT_EQ(r.status, 429);
    int v0 = idp_get(&idp.victim_hits), all0 = all_hits();
    char tok[64];
    for (int i = 0; i < 5; i++) {
        snprintf(tok, sizeof(tok), "v-ok-new%d", i);
        post("/mcp/vs", tok, "10.3.0.1", NULL, &r);
        CHECK_INT_EQ(r.status, 429);
    }
    CHECK_INT_EQ(all_hits(), all0);
    post("/mcp/vs", "v-ok-other", "10.3.0.2", NULL, &r); /* another client is not held up */
    expect_tenant_tool(&r, "victim_tool");
    CHECK_INT_EQ(idp_get(&idp.victim_hits), v0 + 1);
    TEST_PASS("a client the failed-authentication limiter refuses causes no introspection");
}

/* Opens a connection and sends a whole POST of list to path with token; the socket. */
static int send_raw(const char *path, const char *token, const char *client)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)ing_port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_INT_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    char req[1024];
    int n = snprintf(req, sizeof(req),
                     "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                     "X-Forwarded-For: %s\r\nContent-Type: application/json\r\n"
                     "Accept: application/json, text/event-stream\r\n"
                     "MCP-Protocol-Version: 2025-06-18\r\nContent-Length: %zu\r\n\r\n%s",
                     path, token, client, strlen(list), list);
    CHECK_INT_EQ(write(fd, req, (size_t)n), n);
    return fd;
}

/* Item 3: every introspection slot of the slow tenant taken; the victim's new tokens work. */
static void t_slow_tenant(void)
{
    static int fds[SLOW_CONNS];
    char tok[64], client[32];
    pthread_mutex_lock(&mu);
    idp.slow_hold = 1;
    pthread_mutex_unlock(&mu);
    int s0 = idp_get(&idp.slow_hits);
    for (int i = 0; i < SLOW_CONNS; i++) {
        snprintf(tok, sizeof(tok), "s-%d", i);
        snprintf(client, sizeof(client), "10.4.%d.%d", i / 200, i % 200 + 1);
        fds[i] = send_raw("/mcp/ss", tok, client);
    }
    /* every slot the slow endpoint can have is taken: its count stops growing at the cap */
    int last = -1, now = idp_get(&idp.slow_hits);
    for (int i = 0; i < 200 && (now != last || now - s0 < 200); i++) {
        fx_sleep_ms(100);
        last = now;
        now = idp_get(&idp.slow_hits);
    }
    CHECK(now - s0 >= 200);
    fx_reply_t r;
    post("/mcp/vs", "v-ok-dora", "10.4.9.1", NULL, &r);
    expect_tenant_tool(&r, "victim_tool");
    CHECK(r.ms < 5000);
    TEST_PASS("a slow tenant's endpoint with every slot taken: another tenant's new opaque token "
              "is still accepted at once");
    pthread_mutex_lock(&mu);
    idp.slow_hold = 0;
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < SLOW_CONNS; i++)
        close(fds[i]);
}

/* Item 5: a large body with a JWT whose kid the ingress has not seen (a key rotation). */
static void t_large_body_rotation(const key_t_ *k1, const key_t_ *k2)
{
    char iss[128];
    snprintf(iss, sizeof(iss), "http://127.0.0.1:%d/victim", idp_port);
    size_t pad = 200 * 1024; /* MCPQ_PREAUTH_BODY_BYTES is 64 KiB */
    char *body = malloc(pad + 128);
    CHECK(body != NULL);
    int n = snprintf(body, 128, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",");
    memset(body + n, ' ', pad);
    snprintf(body + n + pad, 32, "\"params\":{}}");
    char *old = jwt_make(k1, iss, "erin"), *rotated = jwt_make(k2, iss, "erin");
    fx_reply_t r;
    post("/mcp", old, "10.5.0.1", body, &r); /* a JWT: unambiguous at /mcp */
    expect_tenant_tool(&r, "victim_default");
    pthread_mutex_lock(&mu); /* the issuer rotates to k2 */
    snprintf(idp.jwks, sizeof(idp.jwks), "{\"keys\":[%s,%s]}", k1->jwk, k2->jwk);
    pthread_mutex_unlock(&mu);
    /* within MCPQ_OAUTH_JWKS_MIN_REFRESH_S (1 s) of the last fetch the new kid is 401 (the body
     * read all the same); then it makes the keys be fetched again and is accepted */
    char client[32];
    for (int i = 0; i < 50; i++) {
        snprintf(client, sizeof(client), "10.5.1.%d", i + 1);
        post("/mcp", rotated, client, body, &r);
        CHECK(r.status != 413);
        if (r.status != 401)
            break;
        fx_sleep_ms(100);
    }
    expect_tenant_tool(&r, "victim_default");
    TEST_PASS("a 200 KiB request with a JWT of a rotated key is read and accepted (no 413)");
    post("/mcp", "v-ok-large", "10.5.0.2", body, &r); /* opaque and ambiguous: small limit */
    CHECK_INT_EQ(r.status, 413);
    free(old);
    free(rotated);
    free(body);
}

/* Three tenants that take opaque tokens, each with its own introspection endpoint ("IDP" stands
 * for the authorization server's base URL); the attacker and the victim both have a server
 * named "shared" (and "default"); the slow tenant alone has "ss". */
static const char config[] =
    "{\"tenants\": ["
    " {\"id\": \"a-attacker\", \"oauth\": {\"issuers\": [\"IDP/attacker\"],"
    "  \"audiences\": [\"" AUD "\"], \"introspection\": {\"endpoint\": "
    "\"IDP/attacker/introspect\", \"client_id\": \"a\", \"client_secret\": \"a-secret\"}}},"
    " {\"id\": \"v-victim\", \"oauth\": {\"issuers\": [\"IDP/victim\"],"
    "  \"jwks_uri\": \"IDP/victim/jwks\", \"audiences\": [\"" AUD "\"], \"introspection\": {"
    "  \"endpoint\": \"IDP/victim/introspect\", \"client_id\": \"v\", \"client_secret\": "
    "\"v-secret\"}}},"
    " {\"id\": \"s-slow\", \"oauth\": {\"issuers\": [\"IDP/slow\"],"
    "  \"audiences\": [\"" AUD "\"], \"introspection\": {\"endpoint\": "
    "\"IDP/slow/introspect\", \"client_id\": \"s\", \"client_secret\": \"s-secret\"}}}],"
    " \"servers\": [{\"tenant\": \"a-attacker\", \"name\": \"default\"},"
    "  {\"tenant\": \"a-attacker\", \"name\": \"as\"},"
    "  {\"tenant\": \"a-attacker\", \"name\": \"shared\"},"
    "  {\"tenant\": \"v-victim\", \"name\": \"default\"},"
    "  {\"tenant\": \"v-victim\", \"name\": \"vs\"},"
    "  {\"tenant\": \"v-victim\", \"name\": \"shared\"},"
    "  {\"tenant\": \"s-slow\", \"name\": \"ss\"}],"
    " \"tools\": [" TOOL("a-attacker", "as", "attacker_tool") "," TOOL(
        "v-victim", "vs", "victim_tool") "," TOOL("v-victim", "default", "victim_default") "]}";

/* config with IDP replaced by the authorization server's base URL, written to path. */
static void write_config(const char *path)
{
    char cfg[8192], base[64];
    size_t at = 0;
    snprintf(base, sizeof(base), "http://127.0.0.1:%d", idp_port);
    for (const char *p = config; *p && at + sizeof(base) < sizeof(cfg);) {
        if (strncmp(p, "IDP", 3) == 0) {
            at += (size_t)snprintf(cfg + at, sizeof(cfg) - at, "%s", base);
            p += 3;
        } else {
            cfg[at++] = *p++;
        }
    }
    cfg[at] = '\0';
    fx_write_file(path, cfg, 0600);
}

int main(void)
{
    if (fx_start(&fx, 2) < 0)
        return 1;
    key_t_ k1, k2;
    fx_es256_new(&k1, "k1");
    fx_es256_new(&k2, "k2");
    snprintf(idp.jwks, sizeof(idp.jwks), "{\"keys\":[%s]}", k1.jwk);
    idp_port = fx_free_port();
    struct MHD_Daemon *d = fx_server_start(idp_port, on_idp);
    CHECK(d != NULL);
    char cfg[300], log[400];
    snprintf(cfg, sizeof(cfg), "%s/tenants.json", fx.dir);
    write_config(cfg);
    ing_port = fx_free_port();
    const char *env[] = {"MCPQ_TRUSTED_PROXIES=127.0.0.1", "MCPQ_AUTH_FAIL_PER_MIN=3",
                         "MCPQ_OAUTH_FETCH_TIMEOUT_MS=30000", "MCPQ_OAUTH_JWKS_MIN_REFRESH_S=1",
                         NULL};
    pid_t ing = fx_spawn_ingress(&fx, "ingress", ing_port, cfg, env, log, sizeof(log));
    CHECK(ing > 0);
    t_one_introspecting_tenant();
    t_blocked_client(&k1);
    t_large_body_rotation(&k1, &k2);
    t_slow_tenant();
    CHECK(fx_log_line(log, "opaque tokens are ambiguous", "/mcp/shared", NULL, 0));
    TEST_PASS("the ingress logs where opaque tokens are ambiguous when the registry is swapped in");
    fx_stop_pid(ing, 10000);
    MHD_stop_daemon(d);
    fx_es256_free(&k1);
    fx_es256_free(&k2);
    fx_stop(&fx);
    return 0;
}
