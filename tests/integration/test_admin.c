/*
 * The operator API /admin/v1 (ingress/api/admin.h, regstore.h, listing.h) end to end on a real
 * stack: redis-server, mcpq-devbroker, two ingress replicas with MCPQ_ADMIN_TOKEN, a third
 * without it, and a worker. Every rule is checked through what an operator sees (status
 * codes, JSON bodies, ETag) and what an MCP client sees (tools/list and tools/call on POST /mcp
 * of both replicas with the tenant's API key):
 *   - auth: no or a wrong token is 401 with WWW-Authenticate; no MCPQ_ADMIN_TOKEN is 404;
 *   - tenants (with their default server), API keys (shown once, working and revoked within
 *     1 s on both replicas), apps and webhooks (secrets shown once), servers;
 *   - tools and versions: name and parameter rules, per-tenant names, offline by
 *     default, from_version, publish/offline/rename/delete rules, at most one published
 *     version, propagation to both replicas (the time it took is printed), a call in flight
 *     finishing on the version it started with;
 *   - listing: paging, filter, orderBy, errors naming the parameter; the other
 *     lists (tenants, API keys, versions, servers) ordered by name too;
 *   - export and apply (HTTP and `mcpq-ingress --apply/--export`), idempotent, with prune;
 *   - two PATCHes racing with the same If-Match: one 200, one 412;
 *   - a duplicate server, API key, app or webhook id: 409 naming it;
 *   - no read (the export, the per-object views) shows a secret of apps, webhooks, API keys,
 *     federation and executor headers and env; a PUT of the redacted export keeps the stored
 *     secrets; "(hidden)" where nothing is stored is refused (400; --apply exits 2);
 *   - at the end every process exits with 0 and logged no sanitizer report (ASan build).
 *
 * Each rule is its own check that reports "ok - ..." or "not ok - ..." and the run goes on,
 * so one broken rule does not hide the others (check.h's CHECK exits at the first failure:
 * it is kept for the set-up). The exit status is 1 when any check failed.
 */
#include "check.h"
#include "names.h"
#include "fixture.h"
#include "sig.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TOKEN "admin-it-token-0123456789"
#define REPLY_MAX (256 * 1024)
#define PROPAGATION_MS 1000 /* admin.h: replicas pick a write up within one refresh (250 ms) */
#define POLL_MS 50

static fx_stack_t fx;
static int ports[3];              /* two replicas with the admin API, one without */
static char acme_key[128];        /* an API key of tenant acme, made by the key checks */
static char acme_app_secret[128]; /* acme-app's secret, made by the app checks */

/* ---- HTTP --------------------------------------------------------------------------------- */

typedef struct reply {
    long status;
    char what[400]; /* "PATCH :port/path", for messages */
    char body[REPLY_MAX];
    size_t len;
    int truncated;
    char etag[96];      /* the ETag header's value, quotes included; "" when absent */
    char www_auth[160]; /* WWW-Authenticate; "" when absent */
    char ctype[128];    /* Content-Type */
} reply_t;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    reply_t *r = arg;
    size_t len = size * n, room = sizeof(r->body) - 1 - r->len;
    if (len > room)
        r->truncated = 1;
    memcpy(r->body + r->len, p, len < room ? len : room);
    r->len += len < room ? len : room;
    r->body[r->len] = '\0';
    return len;
}

/* Copies the value of header `name` from line p (len bytes) into out when it is that header. */
static void header_value(const char *p, size_t len, const char *name, char *out, size_t size)
{
    size_t n = strlen(name);
    if (len <= n || strncasecmp(p, name, n) != 0 || p[n] != ':')
        return;
    p += n + 1;
    len -= n + 1;
    while (len && *p == ' ') {
        p++;
        len--;
    }
    while (len && (p[len - 1] == '\r' || p[len - 1] == '\n' || p[len - 1] == ' '))
        len--;
    snprintf(out, size, "%.*s", (int)len, p);
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    reply_t *r = arg;
    header_value(p, size * n, "ETag", r->etag, sizeof(r->etag));
    header_value(p, size * n, "WWW-Authenticate", r->www_auth, sizeof(r->www_auth));
    header_value(p, size * n, "Content-Type", r->ctype, sizeof(r->ctype));
    return size * n;
}

/* A JSON-RPC answer sent as SSE: keeps the last data line's JSON as the body. */
static void sse_unwrap(reply_t *r)
{
    if (strncmp(r->ctype, "text/event-stream", 17) != 0)
        return;
    char *last = NULL;
    for (char *p = r->body; (p = strstr(p, "data:")) != NULL; p += 5)
        if (p == r->body || p[-1] == '\n')
            last = p;
    if (!last)
        return;
    last += 5;
    while (*last == ' ')
        last++;
    size_t n = strcspn(last, "\r\n");
    memmove(r->body, last, n);
    r->body[n] = '\0';
    r->len = n;
}

/* method url with headers (NULL-terminated "Name: value") and body (NULL: none); the answer
 * in r (status 0 when none came). */
static void http(reply_t *r, const char *method, int port, const char *path,
                 const char *const hdrs[], const char *body)
{
    char url[1200];
    r->status = 0;
    r->len = 0;
    r->truncated = 0;
    r->body[0] = r->etag[0] = r->www_auth[0] = r->ctype[0] = '\0';
    snprintf(r->what, sizeof(r->what), "%s :%d%s", method, port, path);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    CHECK(c != NULL);
    struct curl_slist *h = curl_slist_append(NULL, "Expect:");
    for (size_t i = 0; hdrs && hdrs[i]; i++)
        h = curl_slist_append(h, hdrs[i]);
    if (body)
        h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    sse_unwrap(r);
}

/* An admin request at a replica with the operator token (and If-Match when if_match is set:
 * an etag without quotes, quoted here). */
static void admin_at(reply_t *r, int port, const char *method, const char *path,
                     const char *if_match, const char *body)
{
    char im[128];
    const char *hdrs[] = {"Authorization: Bearer " TOKEN, if_match ? im : NULL, NULL};
    snprintf(im, sizeof(im), "If-Match: \"%s\"", if_match ? if_match : "");
    http(r, method, port, path, hdrs, body);
}

static void admin(reply_t *r, const char *method, const char *path, const char *if_match,
                  const char *body)
{
    admin_at(r, ports[0], method, path, if_match, body);
}

/* A JSON-RPC request to POST /mcp at port with an API key, as an MCP client sends it. */
static void mcp(reply_t *r, int port, const char *key, const char *method, const char *params)
{
    char auth[200], body[4096];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key);
    const char *hdrs[] = {auth, "Accept: application/json, text/event-stream", NULL};
    snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\",\"params\":%s}",
             method, params);
    http(r, "POST", port, "/mcp", hdrs, body);
}

static void tool_call(reply_t *r, int port, const char *key, const char *name, const char *args)
{
    char params[2048];
    snprintf(params, sizeof(params), "{\"name\":\"%s\",\"arguments\":%s}", name, args);
    mcp(r, port, key, "tools/call", params);
}

/* ---- JSON of a reply ---------------------------------------------------------------------- */

static const cJSON *jpath(const cJSON *j, const char *path)
{
    char seg[128];
    while (j && *path) {
        size_t n = strcspn(path, ".");
        snprintf(seg, sizeof(seg), "%.*s", (int)n, path);
        if (cJSON_IsArray(j)) {
            char *end;
            long i = strtol(seg, &end, 10);
            j = *end ? NULL : cJSON_GetArrayItem(j, (int)i);
        } else {
            j = cJSON_GetObjectItemCaseSensitive(j, seg);
        }
        path += n + (path[n] == '.');
    }
    return j;
}

/* The value at path ("tools.0.name"; "" is the whole body) of a JSON body: a string as is,
 * anything else as compact JSON, "(missing)" when absent. The result lives in one of 16
 * rotating buffers (main thread only). */
static const char *J(const char *json, const char *path)
{
    static char bufs[16][2048];
    static int next;
    char *out = bufs[next++ % 16];
    cJSON *root = cJSON_Parse(json);
    const cJSON *v = root ? jpath(root, path) : NULL;
    if (cJSON_IsString(v)) {
        snprintf(out, 2048, "%s", v->valuestring);
    } else if (v) {
        char *s = cJSON_PrintUnformatted(v);
        snprintf(out, 2048, "%s", s ? s : "(oom)");
        cJSON_free(s);
    } else {
        snprintf(out, 2048, "(missing)");
    }
    cJSON_Delete(root);
    return out;
}

/* The `key` member of every element of the array at path, joined with commas. */
static const char *NAMES(const char *json, const char *path, const char *key)
{
    static char bufs[8][2048];
    static int next;
    char *out = bufs[next++ % 8];
    size_t len = 0;
    out[0] = '\0';
    cJSON *root = cJSON_Parse(json);
    const cJSON *arr = root ? jpath(root, path) : NULL, *e;
    cJSON_ArrayForEach(e, arr)
    {
        const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, key));
        len += (size_t)snprintf(out + len, 2048 - len, "%s%s", len ? "," : "", s ? s : "?");
        if (len >= 2048)
            break;
    }
    cJSON_Delete(root);
    return out;
}

/* ---- checks ------------------------------------------------------------------------------- */

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);                                      \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

#define EXPECT_STATUS(r, want)                                                                     \
    EXPECT((r)->status == (want) && !(r)->truncated, "%s: status %ld, want %d; body: %.700s",      \
           (r)->what, (r)->status, (int)(want), (r)->body)

#define EXPECT_STR(r, path, want)                                                                  \
    EXPECT(strcmp(J((r)->body, path), want) == 0, "%s: %s is \"%s\", want \"%s\"; body: %.500s",   \
           (r)->what, path, J((r)->body, path), want, (r)->body)

#define EXPECT_HAS(r, needle)                                                                      \
    EXPECT(strstr((r)->body, needle) != NULL, "%s: the body does not contain '%s': %.700s",        \
           (r)->what, needle, (r)->body)

#define EXPECT_LACKS(r, needle)                                                                    \
    EXPECT(strstr((r)->body, needle) == NULL, "%s: the body contains '%s': %.700s", (r)->what,     \
           needle, (r)->body)

/* The answer to the last request, shared by the checks (they run one after the other on the
 * main thread; a reply is too big for comfort on the stack). */
static reply_t R, R2;

/* The etag of the object at path (GET), "" when it cannot be read. */
static const char *etag_of(const char *path)
{
    static char e[2][64];
    static int next;
    char *out = e[next++ % 2];
    admin(&R2, "GET", path, NULL, NULL);
    snprintf(out, 64, "%s", R2.status == 200 ? J(R2.body, "etag") : "");
    return out;
}

/* A tool version body: version v, description d, the builtin executor ex, inputSchema schema
 * (NULL: {"type": "object"}). */
static const char *version_json(const char *v, const char *d, const char *ex, const char *schema)
{
    static char out[4][1024];
    static int next;
    char *o = out[next++ % 4];
    snprintf(o, 1024,
             "{\"version\":\"%s\",\"description\":\"%s\",\"inputSchema\":%s,"
             "\"executor\":{\"type\":\"builtin\",\"name\":\"%s\"}}",
             v, d, schema ? schema : "{\"type\":\"object\"}", ex);
    return o;
}

/* POST .../tools of tenant: tool name on server (NULL: the default), first version v. */
static void create_tool(reply_t *r, const char *tenant, const char *name, const char *server,
                        int publish, const char *v)
{
    char path[300], body[2048], srv[200] = "";
    snprintf(path, sizeof(path), "/admin/v1/tenants/%s/tools", tenant);
    if (server)
        snprintf(srv, sizeof(srv), "\"server\":\"%s\",", server);
    snprintf(body, sizeof(body), "{\"name\":\"%s\",%s\"publish\":%s,\"version\":%s}", name, srv,
             publish ? "true" : "false", v);
    admin(r, "POST", path, NULL, body);
}

/* Whether tools/list at port with key lists name: 1 (its description into desc), 0, or -1
 * when tools/list itself failed (*status then tells). */
static int listed(int port, const char *key, const char *name, char *desc, size_t size,
                  long *status)
{
    static reply_t r; /* main thread only */
    mcp(&r, port, key, "tools/list", "{}");
    *status = r.status;
    if (r.status != 200)
        return -1;
    cJSON *root = cJSON_Parse(r.body);
    const cJSON *tools = jpath(root, "result.tools"), *t;
    int found = -1;
    if (cJSON_IsArray(tools))
        found = 0;
    cJSON_ArrayForEach(t, tools)
    {
        const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
        if (n && strcmp(n, name) == 0) {
            const char *d =
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "description"));
            snprintf(desc, size, "%s", d ? d : "");
            found = 1;
        }
    }
    cJSON_Delete(root);
    return found;
}

/*
 * Polls tools/list on both replicas every POLL_MS until each shows name with description
 * desc (want 1; desc NULL: any) or does not show it (want 0). Returns the ms the slower
 * replica took, or -1 when one did not get there in 3 * PROPAGATION_MS (what it saw last is
 * printed).
 */
static long long wait_listed(const char *key, const char *name, int want, const char *desc)
{
    long long t0 = fx_now_ms(), took[2] = {-1, -1};
    char d[512];
    long status = 0;
    int seen = 0;
    for (;;) {
        long long now = fx_now_ms();
        for (int i = 0; i < 2; i++) {
            if (took[i] >= 0)
                continue;
            d[0] = '\0';
            seen = listed(ports[i], key, name, d, sizeof(d), &status);
            int ok = want ? seen == 1 && (!desc || strcmp(d, desc) == 0) : seen == 0;
            if (ok)
                took[i] = now - t0;
        }
        if (took[0] >= 0 && took[1] >= 0)
            return took[0] > took[1] ? took[0] : took[1];
        if (now - t0 > 3 * PROPAGATION_MS) {
            fprintf(stderr,
                    "  tools/list: %s %s (description \"%s\") not reached: last seen %d "
                    "(description \"%s\", status %ld)\n",
                    name, want ? "listed" : "absent", desc ? desc : "*", seen, d, status);
            return -1;
        }
        fx_sleep_ms(POLL_MS);
    }
}

/* A tools/list at port into r, as probe_fn arg says (an API key, or a signed_t). */
typedef void (*probe_fn)(reply_t *r, int port, const void *arg);

/* Polls probe on both replicas until it answers HTTP want on both; the ms it took, or -1. */
static long long wait_both(probe_fn probe, const void *arg, long want)
{
    static reply_t r;
    long long t0 = fx_now_ms(), took[2] = {-1, -1};
    for (;;) {
        long long now = fx_now_ms();
        for (int i = 0; i < 2; i++) {
            if (took[i] >= 0)
                continue;
            probe(&r, ports[i], arg);
            if (r.status == want)
                took[i] = now - t0;
        }
        if (took[0] >= 0 && took[1] >= 0)
            return took[0] > took[1] ? took[0] : took[1];
        if (now - t0 > 3 * PROPAGATION_MS) {
            fprintf(stderr, "  %s: status %ld, want %ld: %.300s\n", r.what, r.status, want, r.body);
            return -1;
        }
        fx_sleep_ms(POLL_MS);
    }
}

static void key_probe(reply_t *r, int port, const void *key)
{
    mcp(r, port, key, "tools/list", "{}");
}

/* Polls tools/list with key on both replicas until it answers HTTP want on both; the ms it
 * took, or -1. */
static long long wait_key_status(const char *key, long want)
{
    return wait_both(key_probe, key, want);
}

/* An app's credentials for a signed tools/list (signature version 1). */
typedef struct signed_req {
    const char *app, *secret;
} signed_t;

static void signed_probe(reply_t *r, int port, const void *arg)
{
    const signed_t *a = arg;
    static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";
    char h[4][200];
    fx_sign_headers(a->app, a->secret, "/mcp", body, h);
    const char *hdrs[] = {h[0], h[1], h[2], h[3], "Accept: application/json", NULL};
    http(r, "POST", port, "/mcp", hdrs, body);
}

/* Polls a tools/list signed by app with secret on both replicas until it answers want. */
static long long wait_signed_status(const char *app, const char *secret, long want)
{
    signed_t a = {app, secret};
    return wait_both(signed_probe, &a, want);
}

#define EXPECT_PROPAGATED(ms, what)                                                                \
    do {                                                                                           \
        long long ms_ = (ms);                                                                      \
        EXPECT(ms_ >= 0 && ms_ <= PROPAGATION_MS, "%s: took %lld ms (-1: never), want <= %d",      \
               what, ms_, PROPAGATION_MS);                                                         \
        printf("# %s: %lld ms on both replicas\n", what, ms_);                                     \
    } while (0)

/* ---- 1. auth ------------------------------------------------------------------------------ */

static int c_auth_missing(void)
{
    http(&R, "GET", ports[0], "/admin/v1/tenants", NULL, NULL);
    EXPECT_STATUS(&R, 401);
    EXPECT(strncmp(R.www_auth, "Bearer", 6) == 0, "WWW-Authenticate is \"%s\"", R.www_auth);
    EXPECT_HAS(&R, "MCPQ_ADMIN_TOKEN");
    return 0;
}

static int c_auth_wrong(void)
{
    const char *wrong[] = {"Authorization: Bearer " TOKEN "x", NULL};
    http(&R, "GET", ports[0], "/admin/v1/tenants", wrong, NULL);
    EXPECT_STATUS(&R, 401);
    EXPECT(strncmp(R.www_auth, "Bearer", 6) == 0, "WWW-Authenticate is \"%s\"", R.www_auth);
    const char *seed_key[] = {"Authorization: Bearer seed-key", NULL}; /* a tenant's API key */
    http(&R, "GET", ports[1], "/admin/v1/tenants", seed_key, NULL);
    EXPECT_STATUS(&R, 401);
    admin(&R, "GET", "/admin/v1/tenants", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "tenants.0.id", "seed");
    return 0;
}

static int c_auth_off(void)
{
    admin_at(&R, ports[2], "GET", "/admin/v1/tenants", NULL, NULL);
    EXPECT_STATUS(&R, 404);
    return 0;
}

/* ---- 2. tenants --------------------------------------------------------------------------- */

static int c_tenant_create(void)
{
    admin(&R, "POST", "/admin/v1/tenants", NULL, "{\"id\":\"acme\"}");
    EXPECT_STATUS(&R, 201);
    EXPECT_STR(&R, "id", "acme");
    EXPECT_STR(&R, "default_server", "default");
    EXPECT(strlen(J(R.body, "createTime")) == 24, "createTime \"%s\"", J(R.body, "createTime"));
    EXPECT(strlen(J(R.body, "updateTime")) == 24, "updateTime \"%s\"", J(R.body, "updateTime"));
    EXPECT(strlen(J(R.body, "etag")) == 20, "etag \"%s\"", J(R.body, "etag"));
    char quoted[64];
    snprintf(quoted, sizeof(quoted), "\"%s\"", J(R.body, "etag"));
    EXPECT(strcmp(R.etag, quoted) == 0, "ETag header %s, body etag %s", R.etag, quoted);
    admin(&R, "GET", "/admin/v1/tenants/acme/servers", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT(strcmp(NAMES(R.body, "servers", "name"), "default") == 0, "servers: %s",
           NAMES(R.body, "servers", "name"));
    admin(&R, "POST", "/admin/v1/tenants", NULL, "{\"id\":\"beta\"}");
    EXPECT_STATUS(&R, 201);
    admin(&R, "GET", "/admin/v1/tenants?filter=name%20!%3D%20%22seed%22", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    const char *ids = NAMES(R.body, "tenants", "id");
    EXPECT(strcmp(ids, "acme,beta") == 0 || strcmp(ids, "beta,acme") == 0, "tenants: %s", ids);
    return 0;
}

static int c_tenant_dup(void)
{
    admin(&R, "POST", "/admin/v1/tenants", NULL, "{\"id\":\"acme\"}");
    EXPECT_STATUS(&R, 409);
    return 0;
}

static int c_tenant_bad_id(void)
{
    const char *bad[] = {"{\"id\":\"bad id\"}", "{\"id\":\"-x\"}", "{\"id\":\"a/b\"}",
                         "{\"id\":7}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        admin(&R, "POST", "/admin/v1/tenants", NULL, bad[i]);
        EXPECT_STATUS(&R, 400);
        EXPECT_HAS(&R, "$.id");
    }
    admin(&R, "POST", "/admin/v1/tenants", NULL, "{}");
    EXPECT_STATUS(&R, 400);
    return 0;
}

static int c_tenant_if_match(void)
{
    char e0[64], e1[64];
    snprintf(e0, sizeof(e0), "%s", etag_of("/admin/v1/tenants/acme"));
    EXPECT(e0[0], "no etag for acme");
    admin(&R, "PATCH", "/admin/v1/tenants/acme", "00000000000000000000",
          "{\"rate_limits\":{\"api_key\":{\"per_second\":1000}}}");
    EXPECT_STATUS(&R, 412);
    EXPECT(strcmp(etag_of("/admin/v1/tenants/acme"), e0) == 0, "a 412 changed the etag");
    admin(&R, "PATCH", "/admin/v1/tenants/acme", e0,
          "{\"rate_limits\":{\"api_key\":{\"per_second\":1000}}}");
    EXPECT_STATUS(&R, 200);
    snprintf(e1, sizeof(e1), "%s", J(R.body, "etag"));
    EXPECT(strlen(e1) == 20 && strcmp(e1, e0) != 0, "etag %s after the PATCH, was %s", e1, e0);
    EXPECT_STR(&R, "rate_limits.api_key.per_second", "1000");
    EXPECT(strcmp(etag_of("/admin/v1/tenants/acme"), e1) == 0, "GET shows another etag");
    admin(&R, "PATCH", "/admin/v1/tenants/acme", e0, "{\"rate_limits\":null}");
    EXPECT_STATUS(&R, 412);
    return 0;
}

static int c_tenant_unknown(void)
{
    admin(&R, "GET", "/admin/v1/tenants/nope", NULL, NULL);
    EXPECT_STATUS(&R, 404);
    admin(&R, "GET", "/admin/v1/tenants/nope/servers", NULL, NULL);
    EXPECT_STATUS(&R, 404);
    return 0;
}

/* ---- 3. API keys -------------------------------------------------------------------------- */

static int c_key_create_works(void)
{
    admin(&R, "POST", "/admin/v1/tenants/acme/apiKeys", NULL, "{\"id\":\"k1\"}");
    EXPECT_STATUS(&R, 201);
    EXPECT_STR(&R, "id", "k1");
    EXPECT(strncmp(J(R.body, "key"), "mcpq_", 5) == 0, "key \"%s\"", J(R.body, "key"));
    EXPECT_LACKS(&R, "sha256");
    snprintf(acme_key, sizeof(acme_key), "%s", J(R.body, "key"));
    EXPECT_PROPAGATED(wait_key_status(acme_key, 200), "a new API key works");
    return 0;
}

static int c_key_hidden(void)
{
    admin(&R, "GET", "/admin/v1/tenants/acme/apiKeys", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT(strcmp(NAMES(R.body, "apiKeys", "id"), "k1") == 0, "apiKeys: %s",
           NAMES(R.body, "apiKeys", "id"));
    EXPECT_LACKS(&R, "\"key\"");
    EXPECT_LACKS(&R, "sha256");
    EXPECT_LACKS(&R, acme_key);
    admin(&R, "GET", "/admin/v1/tenants/acme/apiKeys/k1", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT_LACKS(&R, "\"key\"");
    EXPECT_LACKS(&R, "sha256");
    EXPECT_LACKS(&R, acme_key);
    admin(&R, "GET", "/admin/v1/tenants/acme", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT_LACKS(&R, "sha256");
    return 0;
}

static int c_key_revoke(void)
{
    char revoked[128];
    snprintf(revoked, sizeof(revoked), "%s", acme_key);
    admin(&R, "POST", "/admin/v1/tenants/acme/apiKeys", NULL, "{\"id\":\"k2\"}");
    EXPECT_STATUS(&R, 201);
    snprintf(acme_key, sizeof(acme_key), "%s", J(R.body, "key")); /* kept for the tool checks */
    admin(&R, "DELETE", "/admin/v1/tenants/acme/apiKeys/k1", NULL, NULL);
    EXPECT_STATUS(&R, 204);
    EXPECT_PROPAGATED(wait_key_status(revoked, 401), "a revoked API key gets 401");
    admin(&R, "GET", "/admin/v1/tenants/acme/apiKeys/k1", NULL, NULL);
    EXPECT_STATUS(&R, 404);
    EXPECT_PROPAGATED(wait_key_status(acme_key, 200), "the other key still works");
    return 0;
}

/* ---- 4. apps and webhooks ----------------------------------------------------------------- */

static int c_app_secret_once(void)
{
    admin(&R, "POST", "/admin/v1/tenants/acme/apps", NULL, "{\"app_id\":\"acme-app\"}");
    EXPECT_STATUS(&R, 201);
    EXPECT_STR(&R, "app_id", "acme-app");
    char secret[128];
    snprintf(secret, sizeof(secret), "%s", J(R.body, "secret"));
    snprintf(acme_app_secret, sizeof(acme_app_secret), "%s", secret);
    EXPECT(strlen(secret) >= 32, "secret \"%s\"", secret);
    admin(&R, "GET", "/admin/v1/tenants/acme/apps/acme-app", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT_LACKS(&R, "secret");
    EXPECT_LACKS(&R, secret);
    admin(&R, "GET", "/admin/v1/tenants/acme/apps", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT(strcmp(NAMES(R.body, "apps", "app_id"), "acme-app") == 0, "apps: %s",
           NAMES(R.body, "apps", "app_id"));
    EXPECT_LACKS(&R, "secret");
    EXPECT_LACKS(&R, secret);
    return 0;
}

/* :rotateSecret keeps the old secret valid for the grace (default 24 h); grace_s 0 ends it. */
static int c_app_rotate(void)
{
    char old[128], neu[128];
    snprintf(old, sizeof(old), "%s", acme_app_secret);
    EXPECT_PROPAGATED(wait_signed_status("acme-app", old, 200), "a signed request works");
    admin(&R, "POST", "/admin/v1/tenants/acme/apps/acme-app:rotateSecret", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    snprintf(neu, sizeof(neu), "%s", J(R.body, "secret"));
    EXPECT(strlen(neu) == 64 && strcmp(neu, old) != 0, "new secret \"%s\"", neu);
    int64_t until = 0, now = fx_now_ms();
    EXPECT(util_parse_utc(J(R.body, "previous_secret_expires"), &until) == 0 &&
               until > now + 86390000LL && until < now + 86410000LL,
           "previous_secret_expires %s", J(R.body, "previous_secret_expires"));
    EXPECT_LACKS(&R, old);
    admin(&R, "GET", "/admin/v1/tenants/acme/apps/acme-app", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT_LACKS(&R, old);
    EXPECT_LACKS(&R, neu);
    EXPECT_HAS(&R, "previous_secret_expires");
    EXPECT_PROPAGATED(wait_signed_status("acme-app", neu, 200), "the new secret works");
    EXPECT_PROPAGATED(wait_signed_status("acme-app", old, 200), "the old one still works");
    const char *bad[] = {"{\"grace_s\":-1}", "{\"grace_s\":2592001}", "{\"grace_s\":1.5}",
                         "{\"grace_s\":\"1\"}", "{\"other\":1}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        admin(&R, "POST", "/admin/v1/tenants/acme/apps/acme-app:rotateSecret", NULL, bad[i]);
        EXPECT_STATUS(&R, 400);
    }
    admin(&R, "POST", "/admin/v1/tenants/acme/apps/acme-app:rotateSecret", NULL, "{\"grace_s\":0}");
    EXPECT_STATUS(&R, 200);
    EXPECT_LACKS(&R, "previous_secret_expires");
    snprintf(acme_app_secret, sizeof(acme_app_secret), "%s", J(R.body, "secret"));
    EXPECT_PROPAGATED(wait_signed_status("acme-app", acme_app_secret, 200),
                      "the newest secret works");
    EXPECT_PROPAGATED(wait_signed_status("acme-app", neu, 401), "grace 0: the one before fails");
    EXPECT_PROPAGATED(wait_signed_status("acme-app", old, 401), "and so does the first");
    admin(&R, "POST", "/admin/v1/tenants/acme/apiKeys/k2:rotateSecret", NULL, NULL);
    EXPECT_STATUS(&R, 404);
    return 0;
}

/* signature_version 2: shown, and version 1 requests of the app fail. */
static int c_app_signature_version(void)
{
    admin(&R, "PATCH", "/admin/v1/tenants/acme/apps/acme-app", NULL, "{\"signature_version\":3}");
    EXPECT_STATUS(&R, 400);
    admin(&R, "PATCH", "/admin/v1/tenants/acme/apps/acme-app", NULL, "{\"signature_version\":2}");
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "signature_version", "2");
    EXPECT_PROPAGATED(wait_signed_status("acme-app", acme_app_secret, 401),
                      "signature_version 2: a version 1 request fails");
    admin(&R, "PATCH", "/admin/v1/tenants/acme/apps/acme-app", NULL,
          "{\"signature_version\":null}");
    EXPECT_STATUS(&R, 200);
    EXPECT_PROPAGATED(wait_signed_status("acme-app", acme_app_secret, 200),
                      "without it version 1 works again");
    return 0;
}

/* A literal app secret under MCPQ_APP_SECRET_MIN_BYTES (32): 400 naming the app. */
static int c_app_secret_short(void)
{
    admin(&R, "POST", "/admin/v1/tenants/acme/apps", NULL,
          "{\"app_id\":\"short-app\",\"secret\":\"0123456789012345678901234567890\"}");
    EXPECT_STATUS(&R, 400);
    EXPECT_HAS(&R, "app \\\"short-app\\\" is 31 bytes; app secrets must be at least 32 bytes");
    EXPECT_LACKS(&R, "0123456789012345678901234567890");
    admin(&R, "POST", "/admin/v1/tenants/acme/apps", NULL,
          "{\"app_id\":\"short-app\",\"secret\":\"01234567890123456789012345678901\"}");
    EXPECT_STATUS(&R, 201);
    EXPECT_LACKS(&R, "01234567890123456789012345678901"); /* chosen, so not shown back */
    admin(&R, "PATCH", "/admin/v1/tenants/acme/apps/short-app", NULL, "{\"secret\":\"short\"}");
    EXPECT_STATUS(&R, 400);
    EXPECT_HAS(&R, "is 5 bytes");
    admin(&R, "PATCH", "/admin/v1/tenants/acme/apps/short-app", NULL,
          "{\"previous_secret\":\"short\"}");
    EXPECT_STATUS(&R, 400);
    EXPECT_HAS(&R, "previous_secret of app");
    admin(&R, "DELETE", "/admin/v1/tenants/acme/apps/short-app", NULL, NULL);
    EXPECT_STATUS(&R, 204);
    return 0;
}

static int c_app_id_global(void)
{
    admin(&R, "POST", "/admin/v1/tenants/beta/apps", NULL, "{\"app_id\":\"acme-app\"}");
    EXPECT_STATUS(&R, 409);
    EXPECT_HAS(&R, "$.app_id");
    return 0;
}

static int c_app_secret_env(void)
{
    admin(&R, "POST", "/admin/v1/tenants/acme/apps", NULL,
          "{\"app_id\":\"env-app\",\"secret_env\":\"HOME\"}");
    EXPECT_STATUS(&R, 400);
    EXPECT_HAS(&R, "secret_env");
    admin(&R, "GET", "/admin/v1/tenants/acme/apps/env-app", NULL, NULL);
    EXPECT_STATUS(&R, 404);
    return 0;
}

static int c_webhook_secret_once(void)
{
    admin(&R, "POST", "/admin/v1/tenants/beta/webhooks", NULL,
          "{\"id\":\"wh1\",\"url\":\"http://127.0.0.1:9/hook\",\"events\":[\"task.completed\"]}");
    EXPECT_STATUS(&R, 201);
    EXPECT_STR(&R, "id", "wh1");
    char secret[128];
    snprintf(secret, sizeof(secret), "%s", J(R.body, "secret"));
    EXPECT(strncmp(secret, "whsec_", 6) == 0 && strlen(secret) > 30, "secret \"%s\"", secret);
    admin(&R, "GET", "/admin/v1/tenants/beta/webhooks/wh1", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "url", "http://127.0.0.1:9/hook");
    EXPECT_LACKS(&R, "secret");
    EXPECT_LACKS(&R, "whsec_");
    admin(&R, "GET", "/admin/v1/tenants/beta/webhooks", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT(strcmp(NAMES(R.body, "webhooks", "id"), "wh1") == 0, "webhooks: %s",
           NAMES(R.body, "webhooks", "id"));
    EXPECT_LACKS(&R, "whsec_");
    return 0;
}

static int c_webhook_rotate(void)
{
    admin(&R, "POST", "/admin/v1/tenants/beta/webhooks/wh1:rotateSecret", NULL,
          "{\"grace_s\":600}");
    EXPECT_STATUS(&R, 200);
    char secret[128];
    snprintf(secret, sizeof(secret), "%s", J(R.body, "secret"));
    EXPECT(strncmp(secret, "whsec_", 6) == 0 && strlen(secret) > 30, "secret \"%s\"", secret);
    int64_t until = 0, now = fx_now_ms();
    EXPECT(util_parse_utc(J(R.body, "previous_secret_expires"), &until) == 0 &&
               until > now + 590000 && until < now + 610000,
           "previous_secret_expires %s", J(R.body, "previous_secret_expires"));
    admin(&R, "GET", "/admin/v1/tenants/beta/webhooks/wh1", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT_LACKS(&R, "whsec_");
    EXPECT_HAS(&R, "previous_secret_expires");
    admin(&R, "PATCH", "/admin/v1/tenants/beta/webhooks/wh1", NULL, "{\"previous_secret\":null}");
    EXPECT_STATUS(&R, 400); /* an expiry without a previous secret */
    EXPECT_HAS(&R, "previous_secret");
    admin(&R, "PATCH", "/admin/v1/tenants/beta/webhooks/wh1", NULL,
          "{\"previous_secret\":null,\"previous_secret_expires\":null}");
    EXPECT_STATUS(&R, 200);
    EXPECT_LACKS(&R, "previous_secret");
    return 0;
}

static int c_webhook_bad_url(void)
{
    const char *bad[] = {"ftp://example.com/hook", "not a url", "http://"};
    char body[300];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(body, sizeof(body),
                 "{\"id\":\"wh-bad\",\"url\":\"%s\",\"events\":[\"task."
                 "completed\"]}",
                 bad[i]);
        admin(&R, "POST", "/admin/v1/tenants/beta/webhooks", NULL, body);
        EXPECT_STATUS(&R, 400);
        EXPECT_HAS(&R, "url");
    }
    admin(&R, "GET", "/admin/v1/tenants/beta/webhooks/wh-bad", NULL, NULL);
    EXPECT_STATUS(&R, 404);
    return 0;
}

/* ---- 5. servers --------------------------------------------------------------------------- */

static int c_server_create(void)
{
    admin(&R, "POST", "/admin/v1/tenants/acme/servers", NULL,
          "{\"name\":\"other\",\"description\":\"other tools\"}");
    EXPECT_STATUS(&R, 201);
    EXPECT_STR(&R, "name", "other");
    EXPECT_STR(&R, "tenant", "acme");
    EXPECT(strlen(J(R.body, "etag")) == 20, "etag \"%s\"", J(R.body, "etag"));
    admin(&R, "GET", "/admin/v1/tenants/acme/servers", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT(strcmp(NAMES(R.body, "servers", "name"), "default,other") == 0, "servers: %s",
           NAMES(R.body, "servers", "name"));
    return 0;
}

static int c_server_system(void)
{
    admin(&R, "POST", "/admin/v1/tenants/acme/servers", NULL, "{\"name\":\"system\"}");
    EXPECT_STATUS(&R, 403);
    admin(&R, "DELETE", "/admin/v1/tenants/acme/servers/system", NULL, NULL);
    EXPECT_STATUS(&R, 403);
    return 0;
}

static int c_server_delete_with_tools(void)
{
    create_tool(&R, "acme", "other-tool", "other", 0, version_json("1", "o", "echo", NULL));
    EXPECT_STATUS(&R, 201);
    EXPECT_STR(&R, "server", "other");
    admin(&R, "DELETE", "/admin/v1/tenants/acme/servers/other", NULL, NULL);
    EXPECT_STATUS(&R, 409);
    EXPECT_HAS(&R, "still has 1 tool");
    admin(&R, "GET", "/admin/v1/tenants/acme/servers/other", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    return 0;
}

static int c_server_delete_default(void)
{
    admin(&R, "DELETE", "/admin/v1/tenants/beta/servers/default", NULL, NULL); /* no tools */
    EXPECT_STATUS(&R, 409);
    EXPECT_HAS(&R, "default_server");
    admin(&R, "POST", "/admin/v1/tenants/beta/servers", NULL, "{\"name\":\"spare\"}");
    EXPECT_STATUS(&R, 201);
    admin(&R, "DELETE", "/admin/v1/tenants/beta/servers/spare", NULL, NULL);
    EXPECT_STATUS(&R, 204);
    admin(&R, "GET", "/admin/v1/tenants/beta/servers/spare", NULL, NULL);
    EXPECT_STATUS(&R, 404);
    return 0;
}

/* ---- 6. tools and versions ----------------------------------------------------------------- */

#define CALC_SCHEMA                                                                                \
    "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]" \
    "}"

static int c_tool_name_rules(void)
{
    char n51[60], n50[60];
    memset(n51, 'n', 51);
    n51[51] = '\0';
    memcpy(n50, n51, 50);
    n50[50] = '\0';
    const char *bad[] = {"", n51, "1abc", "a b", "a/b", "_x", "é"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        create_tool(&R, "acme", bad[i], NULL, 0, version_json("1", "d", "echo", NULL));
        EXPECT_STATUS(&R, 400);
        EXPECT_HAS(&R, "$.name");
    }
    create_tool(&R, "acme", n50, NULL, 0, version_json("1", "d", "echo", NULL));
    EXPECT_STATUS(&R, 201);
    EXPECT_STR(&R, "name", n50);
    create_tool(&R, "acme", "a.b-c_d", NULL, 0, version_json("1", "d", "echo", NULL));
    EXPECT_STATUS(&R, 201);
    EXPECT_STR(&R, "name", "a.b-c_d");
    admin(&R, "GET", "/admin/v1/tenants/acme/tools/a.b-c_d", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    return 0;
}

static int c_tool_name_unique(void)
{
    create_tool(&R, "acme", "a.b-c_d", NULL, 0, version_json("9", "again", "echo", NULL));
    EXPECT_STATUS(&R, 409);
    create_tool(&R, "acme", "a.b-c_d", "other", 0, version_json("9", "again", "echo", NULL));
    EXPECT_STATUS(&R, 409); /* per tenant, not per server */
    create_tool(&R, "beta", "a.b-c_d", NULL, 0, version_json("1", "beta's", "echo", NULL));
    EXPECT_STATUS(&R, 201);
    EXPECT_STR(&R, "tenant", "beta");
    return 0;
}

static int c_tool_offline_default(void)
{
    create_tool(&R, "acme", "calc", NULL, 0, version_json("1", "v1 desc", "echo", CALC_SCHEMA));
    EXPECT_STATUS(&R, 201);
    EXPECT_STR(&R, "published", "false");
    EXPECT_STR(&R, "publishedVersion", "null");
    EXPECT_STR(&R, "versions", "[\"1\"]");
    /* A published marker created after calc: once both replicas list it, they have seen calc. */
    create_tool(&R, "acme", "marker", NULL, 1, version_json("1", "marker", "echo", NULL));
    EXPECT_STATUS(&R, 201);
    EXPECT_STR(&R, "published", "true");
    EXPECT_PROPAGATED(wait_listed(acme_key, "marker", 1, "marker"), "a published new tool listed");
    char d[256];
    long st;
    for (int i = 0; i < 2; i++) {
        int seen = listed(ports[i], acme_key, "calc", d, sizeof(d), &st);
        EXPECT(seen == 0, "replica %d: tools/list shows the offline tool calc (%d, status %ld)", i,
               seen, st);
    }
    tool_call(&R, ports[0], acme_key, "calc", "{\"text\":\"x\"}");
    EXPECT_HAS(&R, "Unknown tool: calc");
    return 0;
}

static int c_version_from(void)
{
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc/versions", NULL,
          "{\"version\":\"2\",\"from_version\":\"1\",\"description\":\"v2 desc\"}");
    EXPECT_STATUS(&R, 201);
    EXPECT_STR(&R, "version", "2");
    EXPECT_STR(&R, "tool", "calc");
    EXPECT_STR(&R, "published", "false");
    admin(&R, "GET", "/admin/v1/tenants/acme/tools/calc/versions/2", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "description", "v2 desc");   /* overridden */
    EXPECT_STR(&R, "inputSchema", CALC_SCHEMA); /* copied */
    EXPECT_STR(&R, "executor.name", "echo");    /* copied */
    admin(&R, "GET", "/admin/v1/tenants/acme/tools/calc/versions/1", NULL, NULL);
    EXPECT_STR(&R, "description", "v1 desc"); /* the source is untouched */
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc/versions", NULL,
          "{\"version\":\"3\",\"from_version\":\"nope\"}");
    EXPECT_STATUS(&R, 400);
    EXPECT_HAS(&R, "$.from_version");
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc/versions", NULL,
          "{\"version\":\"2\",\"from_version\":\"1\"}");
    EXPECT_STATUS(&R, 409); /* versions are unique within the tool */
    return 0;
}

static int c_param_names(void)
{
    const char *bad[] = {"_x", "x_", "a-b", "1a", "a b"};
    char body[600];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(body, sizeof(body),
                 "{\"version\":\"p%zu\",\"from_version\":\"1\",\"inputSchema\":{\"type\":"
                 "\"object\",\"properties\":{\"%s\":{\"type\":\"string\"}}}}",
                 i, bad[i]);
        admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc/versions", NULL, body);
        EXPECT_STATUS(&R, 400);
        EXPECT_HAS(&R, "$.inputSchema.properties");
        EXPECT_HAS(&R, bad[i]);
    }
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc/versions", NULL,
          "{\"version\":\"p-ok\",\"from_version\":\"1\",\"inputSchema\":{\"type\":\"object\","
          "\"properties\":{\"a_1\":{\"type\":\"string\"}}}}");
    EXPECT_STATUS(&R, 201);
    create_tool(
        &R, "acme", "bad-param", NULL, 0,
        version_json("1", "d", "echo",
                     "{\"type\":\"object\",\"properties\":{\"x_\":{\"type\":\"string\"}}}"));
    EXPECT_STATUS(&R, 400); /* on a new tool's first version too */
    return 0;
}

static int c_input_schema_invalid(void)
{
    const char *bad[] = {"{\"type\":\"array\"}", "{\"properties\":{}}",
                         "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\","
                         "\"pattern\":\"(\"}}}",
                         "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":7}}}"};
    char body[600];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(body, sizeof(body),
                 "{\"version\":\"s%zu\",\"from_version\":\"1\","
                 "\"inputSchema\":%s}",
                 i, bad[i]);
        admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc/versions", NULL, body);
        EXPECT_STATUS(&R, 400);
        EXPECT_HAS(&R, "inputSchema");
    }
    admin(&R, "GET", "/admin/v1/tenants/acme/tools/calc", NULL, NULL);
    EXPECT_STR(&R, "versions", "[\"1\",\"2\",\"p-ok\"]");
    return 0;
}

static int c_publish_v1(void)
{
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc/versions/1:publish", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "published", "true");
    EXPECT_PROPAGATED(wait_listed(acme_key, "calc", 1, "v1 desc"), "publish v1 -> tools/list");
    for (int i = 0; i < 2; i++) {
        tool_call(&R, ports[i], acme_key, "calc", "{\"text\":\"hi\"}");
        EXPECT_STATUS(&R, 200);
        EXPECT_STR(&R, "result.structuredContent.text", "hi");
        EXPECT_STR(&R, "result.isError", "false");
    }
    tool_call(&R, ports[0], acme_key, "calc", "{}"); /* v1's inputSchema is enforced */
    EXPECT_STR(&R, "result.isError", "true");
    EXPECT_HAS(&R, "missing required property");
    return 0;
}

static int c_publish_v2_replaces(void)
{
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc/versions/2:publish", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    admin(&R, "GET", "/admin/v1/tenants/acme/tools/calc/versions", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    int npub = 0;
    char which[64] = "";
    cJSON *root = cJSON_Parse(R.body), *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(root, "versions"))
    {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "published"))) {
            npub++;
            snprintf(which, sizeof(which), "%s",
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "version")));
        }
    }
    cJSON_Delete(root);
    EXPECT(npub == 1 && strcmp(which, "2") == 0, "%d published versions (last %s): %.600s", npub,
           which, R.body);
    admin(&R, "GET", "/admin/v1/tenants/acme/tools/calc", NULL, NULL);
    EXPECT_STR(&R, "publishedVersion", "2");
    EXPECT_STR(&R, "description", "v2 desc");
    EXPECT_PROPAGATED(wait_listed(acme_key, "calc", 1, "v2 desc"), "publish v2 -> tools/list");
    return 0;
}

static int c_patch_version(void)
{
    admin(&R, "PATCH", "/admin/v1/tenants/acme/tools/calc/versions/2", NULL,
          "{\"description\":\"edited while published\"}");
    EXPECT_STATUS(&R, 409);
    admin(&R, "GET", "/admin/v1/tenants/acme/tools/calc/versions/2", NULL, NULL);
    EXPECT_STR(&R, "description", "v2 desc");
    char e[64];
    snprintf(e, sizeof(e), "%s", etag_of("/admin/v1/tenants/acme/tools/calc/versions/1"));
    admin(&R, "PATCH", "/admin/v1/tenants/acme/tools/calc/versions/1", e,
          "{\"description\":\"v1 edited\"}");
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "description", "v1 edited");
    EXPECT_STR(&R, "published", "false");
    EXPECT(strcmp(J(R.body, "etag"), e) != 0, "the etag did not change");
    admin(&R, "PATCH", "/admin/v1/tenants/acme/tools/calc/versions/1", NULL,
          "{\"inputSchema\":{\"type\":\"array\"}}");
    EXPECT_STATUS(&R, 400); /* an edit is validated as a new version is */
    return 0;
}

static int c_offline(void)
{
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc/versions/1:offline", NULL, NULL);
    EXPECT_STATUS(&R, 409); /* 1 is not the published one */
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc/versions/2:offline", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "published", "false");
    EXPECT_PROPAGATED(wait_listed(acme_key, "calc", 0, NULL), "offline -> gone from tools/list");
    for (int i = 0; i < 2; i++) {
        tool_call(&R, ports[i], acme_key, "calc", "{\"text\":\"hi\"}");
        EXPECT_STATUS(&R, 200);
        EXPECT_STR(&R, "error.code", "-32602");
        EXPECT_STR(&R, "error.message", "Unknown tool: calc");
    }
    admin(&R, "GET", "/admin/v1/tenants/acme/tools/calc", NULL, NULL);
    EXPECT_STR(&R, "published", "false");
    return 0;
}

static int c_rename(void)
{
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc/versions/1:publish", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc:rename", NULL, "{\"name\":\"calc2\"}");
    EXPECT_STATUS(&R, 409);
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc/versions/1:offline", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc:rename", NULL, "{\"name\":\"marker\"}");
    EXPECT_STATUS(&R, 409);
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc:rename", NULL, "{\"name\":\"1bad\"}");
    EXPECT_STATUS(&R, 400);
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc:rename", NULL, "{\"name\":\"calc2\"}");
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "name", "calc2");
    EXPECT_STR(&R, "versions", "[\"1\",\"2\",\"p-ok\"]");
    admin(&R, "GET", "/admin/v1/tenants/acme/tools/calc", NULL, NULL);
    EXPECT_STATUS(&R, 404);
    admin(&R, "GET", "/admin/v1/tenants/acme/tools/calc2/versions/1", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "tool", "calc2");
    EXPECT_STR(&R, "description", "v1 edited");
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc2:rename", NULL, "{\"name\":\"marker\"}");
    EXPECT_STATUS(&R, 409);
    return 0;
}

static int c_delete_versions(void)
{
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc2/versions/1:publish", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    admin(&R, "DELETE", "/admin/v1/tenants/acme/tools/calc2/versions/1", NULL, NULL);
    EXPECT_STATUS(&R, 409);
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/calc2/versions/1:offline", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    const char *vs[] = {"2", "p-ok", "1"};
    for (size_t i = 0; i < 3; i++) {
        char path[200];
        snprintf(path, sizeof(path), "/admin/v1/tenants/acme/tools/calc2/versions/%s", vs[i]);
        admin(&R, "DELETE", path, NULL, NULL);
        EXPECT_STATUS(&R, 204);
        admin(&R, "GET", path, NULL, NULL);
        EXPECT_STATUS(&R, 404);
        if (i < 2) {
            admin(&R, "GET", "/admin/v1/tenants/acme/tools/calc2", NULL, NULL);
            EXPECT_STATUS(&R, 200);
        }
    }
    admin(&R, "GET", "/admin/v1/tenants/acme/tools/calc2", NULL, NULL);
    EXPECT_STATUS(&R, 404);
    admin(&R, "GET", "/admin/v1/tenants/acme/tools/calc2/versions", NULL, NULL);
    EXPECT_STATUS(&R, 404);
    return 0;
}

/* ---- 7. a call in flight keeps its version ------------------------------------------------ */

typedef struct bg_call {
    reply_t r;
    long long ms;
} bg_call_t;

static void *slow_call(void *arg)
{
    bg_call_t *c = arg;
    long long t0 = fx_now_ms();
    tool_call(&c->r, ports[1], acme_key, "slow", "{\"ms\":1500}");
    c->ms = fx_now_ms() - t0;
    return NULL;
}

static int c_inflight(void)
{
    create_tool(&R, "acme", "slow", NULL, 1, version_json("a", "sleeps", "sleep", NULL));
    EXPECT_STATUS(&R, 201);
    EXPECT_PROPAGATED(wait_listed(acme_key, "slow", 1, "sleeps"), "slow version a listed");
    static bg_call_t bg;
    pthread_t th;
    CHECK_INT_EQ(pthread_create(&th, NULL, slow_call, &bg), 0);
    fx_sleep_ms(300);
    admin(&R, "POST", "/admin/v1/tenants/acme/tools/slow/versions", NULL,
          "{\"version\":\"b\",\"publish\":true,\"description\":\"echoes\",\"inputSchema\":{"
          "\"type\":\"object\"},\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"}}");
    long long published_at = fx_now_ms();
    int rc = R.status == 201 ? 0 : -1;
    long long ms = rc == 0 ? wait_listed(acme_key, "slow", 1, "echoes") : -1;
    long long listed_at = fx_now_ms();
    pthread_join(th, NULL);
    long long done_at = fx_now_ms();
    EXPECT_STATUS(&R, 201);
    EXPECT_STR(&R, "published", "true");
    EXPECT_PROPAGATED(ms, "version b published during the call");
    EXPECT(listed_at < done_at - 100, "b was listed %lld ms after the call ended",
           listed_at - done_at);
    EXPECT(published_at < done_at, "the publish was not during the call");
    EXPECT_STATUS(&bg.r, 200);
    EXPECT_STR(&bg.r, "result.content.0.text", "slept 1500 ms");
    EXPECT_STR(&bg.r, "result.structuredContent.slept_ms", "1500");
    tool_call(&R, ports[1], acme_key, "slow", "{\"ms\":1500}");
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "result.structuredContent", "{\"ms\":1500}"); /* b: echo */
    return 0;
}

/* ---- 8. listing --------------------------------------------------------------------------- */

static void list_tools(reply_t *r, const char *query)
{
    char path[1200];
    snprintf(path, sizeof(path), "/admin/v1/tenants/lst/tools%s", query);
    admin(r, "GET", path, NULL, NULL);
}

/* "?filter=<escaped f>" (plus more, already a query fragment). */
static const char *q_filter(const char *f, const char *more)
{
    static char out[1000];
    char *e = curl_easy_escape(NULL, f, 0);
    snprintf(out, sizeof(out), "?filter=%s%s", e ? e : "", more ? more : "");
    curl_free(e);
    return out;
}

static int c_list_setup(void)
{
    admin(&R, "POST", "/admin/v1/tenants", NULL, "{\"id\":\"lst\"}");
    EXPECT_STATUS(&R, 201);
    admin(&R, "POST", "/admin/v1/tenants/lst/servers", NULL, "{\"name\":\"other\"}");
    EXPECT_STATUS(&R, 201);
    /* Created in this order, a few ms apart so createTime orders them. */
    const struct {
        const char *name, *server;
        int publish;
    } tools[] = {{"delta", NULL, 0},
                 {"alpha", NULL, 1},
                 {"echo", NULL, 0},
                 {"charlie", "other", 1},
                 {"bravo", "other", 0}};
    for (size_t i = 0; i < 5; i++) {
        create_tool(&R, "lst", tools[i].name, tools[i].server, tools[i].publish,
                    version_json("1", tools[i].name, "echo", NULL));
        EXPECT_STATUS(&R, 201);
        fx_sleep_ms(5);
    }
    return 0;
}

static int c_list_paging(void)
{
    char all[512] = "", token[512] = "", query[700];
    int pages = 0;
    do {
        if (token[0]) {
            char *e = curl_easy_escape(NULL, token, 0);
            snprintf(query, sizeof(query), "?pageSize=2&pageToken=%s", e);
            curl_free(e);
        } else {
            snprintf(query, sizeof(query), "?pageSize=2");
        }
        list_tools(&R, query);
        EXPECT_STATUS(&R, 200);
        const char *names = NAMES(R.body, "tools", "name");
        size_t n = strlen(names) ? 1 : 0;
        for (const char *p = names; *p; p++)
            n += *p == ',';
        EXPECT(n == (pages < 2 ? 2u : 1u), "page %d: %s", pages, names);
        size_t len = strlen(all);
        snprintf(all + len, sizeof(all) - len, "%s%s", len ? "," : "", names);
        const char *next = J(R.body, "nextPageToken");
        snprintf(token, sizeof(token), "%s", strcmp(next, "(missing)") == 0 ? "" : next);
        pages++;
    } while (token[0] && pages < 10);
    EXPECT(pages == 3, "%d pages", pages);
    EXPECT(strcmp(all, "alpha,bravo,charlie,delta,echo") == 0, "pages joined: %s", all);
    list_tools(&R, "");
    EXPECT_STATUS(&R, 200);
    EXPECT(strcmp(NAMES(R.body, "tools", "name"), all) == 0, "one page: %s",
           NAMES(R.body, "tools", "name"));
    EXPECT(strcmp(J(R.body, "nextPageToken"), "(missing)") == 0, "a last page has a token");
    return 0;
}

static int c_list_filter_published(void)
{
    list_tools(&R, q_filter("published = true", NULL));
    EXPECT_STATUS(&R, 200);
    EXPECT(strcmp(NAMES(R.body, "tools", "name"), "alpha,charlie") == 0, "published: %s",
           NAMES(R.body, "tools", "name"));
    return 0;
}

static int c_list_filter_server(void)
{
    list_tools(&R, q_filter("server = \"other\"", NULL));
    EXPECT_STATUS(&R, 200);
    EXPECT(strcmp(NAMES(R.body, "tools", "name"), "bravo,charlie") == 0, "server other: %s",
           NAMES(R.body, "tools", "name"));
    return 0;
}

static int c_list_filter_and(void)
{
    list_tools(&R, q_filter("name != \"x\" AND published = false", NULL));
    EXPECT_STATUS(&R, 200);
    EXPECT(strcmp(NAMES(R.body, "tools", "name"), "bravo,delta,echo") == 0, "and: %s",
           NAMES(R.body, "tools", "name"));
    list_tools(&R, q_filter("name != \"bravo\" AND published = false", NULL));
    EXPECT_STATUS(&R, 200);
    EXPECT(strcmp(NAMES(R.body, "tools", "name"), "delta,echo") == 0, "and: %s",
           NAMES(R.body, "tools", "name"));
    return 0;
}

static int c_list_order(void)
{
    list_tools(&R, "?orderBy=create_time%20desc");
    EXPECT_STATUS(&R, 200);
    EXPECT(strcmp(NAMES(R.body, "tools", "name"), "bravo,charlie,echo,alpha,delta") == 0,
           "create_time desc: %s", NAMES(R.body, "tools", "name"));
    list_tools(&R, "?orderBy=create_time");
    EXPECT_STATUS(&R, 200);
    EXPECT(strcmp(NAMES(R.body, "tools", "name"), "delta,alpha,echo,charlie,bravo") == 0,
           "create_time: %s", NAMES(R.body, "tools", "name"));
    list_tools(&R, "?orderBy=name%20desc&pageSize=2");
    EXPECT_STATUS(&R, 200);
    EXPECT(strcmp(NAMES(R.body, "tools", "name"), "echo,delta") == 0, "name desc: %s",
           NAMES(R.body, "tools", "name"));
    return 0;
}

/* The other lists order by their id or name too: tenants, API keys, versions. */
static int c_list_order_others(void)
{
    admin(&R, "POST", "/admin/v1/tenants/lst/apiKeys", NULL, "{\"id\":\"kb\"}");
    EXPECT_STATUS(&R, 201);
    admin(&R, "POST", "/admin/v1/tenants/lst/apiKeys", NULL, "{\"id\":\"ka\"}");
    EXPECT_STATUS(&R, 201);
    admin(&R, "POST", "/admin/v1/tenants/lst/tools/alpha/versions", NULL,
          "{\"version\":\"3\",\"from_version\":\"1\"}");
    EXPECT_STATUS(&R, 201);
    admin(&R, "POST", "/admin/v1/tenants/lst/tools/alpha/versions", NULL,
          "{\"version\":\"2\",\"from_version\":\"1\"}");
    EXPECT_STATUS(&R, 201);
    const struct {
        const char *path, *array, *key, *asc, *desc;
    } lists[] = {
        {"/admin/v1/tenants", "tenants", "id", "acme,beta,lst,seed", "seed,lst,beta,acme"},
        {"/admin/v1/tenants/lst/apiKeys", "apiKeys", "id", "ka,kb", "kb,ka"},
        {"/admin/v1/tenants/lst/tools/alpha/versions", "versions", "version", "1,2,3", "3,2,1"},
        {"/admin/v1/tenants/lst/servers", "servers", "name", "default,other", "other,default"},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        char path[300];
        for (int desc = 0; desc < 2; desc++) {
            snprintf(path, sizeof(path), "%s%s", lists[i].path, desc ? "?orderBy=name%20desc" : "");
            admin(&R, "GET", path, NULL, NULL);
            EXPECT_STATUS(&R, 200);
            const char *got = NAMES(R.body, lists[i].array, lists[i].key);
            const char *want = desc ? lists[i].desc : lists[i].asc;
            if (strcmp(got, want) != 0) {
                fprintf(stderr, "  GET %s: %s, want %s\n", path, got, want);
                bad++;
            }
        }
    }
    EXPECT(bad == 0, "%d lists out of order", bad);
    return 0;
}

static int c_list_bad_filter(void)
{
    list_tools(&R, q_filter("colour = \"red\"", NULL));
    EXPECT_STATUS(&R, 400);
    EXPECT_HAS(&R, "colour");
    EXPECT_HAS(&R, "filter");
    list_tools(&R, "?orderBy=colour");
    EXPECT_STATUS(&R, 400);
    EXPECT_HAS(&R, "colour");
    list_tools(&R, "?pageSize=-1");
    EXPECT_STATUS(&R, 400);
    EXPECT_HAS(&R, "pageSize");
    return 0;
}

static int c_list_bad_token(void)
{
    list_tools(&R, "?pageToken=not-a-token");
    EXPECT_STATUS(&R, 400);
    EXPECT_HAS(&R, "pageToken");
    /* A real token used with another filter. */
    list_tools(&R, "?pageSize=1");
    EXPECT_STATUS(&R, 200);
    char token[512], query[800];
    snprintf(token, sizeof(token), "%s", J(R.body, "nextPageToken"));
    char *e = curl_easy_escape(NULL, token, 0);
    snprintf(query, sizeof(query), "&pageToken=%s", e);
    curl_free(e);
    list_tools(&R, q_filter("published = true", query));
    EXPECT_STATUS(&R, 400);
    EXPECT_HAS(&R, "pageToken");
    return 0;
}

static int c_list_meta(void)
{
    list_tools(&R, "");
    EXPECT_STATUS(&R, 200);
    for (int i = 0; i < 5; i++) {
        char p[64];
        const char *keys[] = {"createTime", "updateTime", "etag"};
        for (int k = 0; k < 3; k++) {
            snprintf(p, sizeof(p), "tools.%d.%s", i, keys[k]);
            EXPECT(strlen(J(R.body, p)) >= 20, "%s is %s", p, J(R.body, p));
        }
    }
    return 0;
}

/* The system server's list_tools tool: the same listing, for an MCP client of the tenant. */
static int c_list_tools_mcp(void)
{
    static char key[128];
    admin(&R, "POST", "/admin/v1/tenants/lst/apiKeys", NULL, "{}");
    EXPECT_STATUS(&R, 201);
    snprintf(key, sizeof(key), "%s", J(R.body, "key"));
    EXPECT_PROPAGATED(wait_key_status(key, 200), "a key of tenant lst");
    char auth[200];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key);
    const char *hdrs[] = {auth, "Accept: application/json, text/event-stream", NULL};
    http(&R, "POST", ports[1], "/mcp/system", hdrs,
         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
         "\"list_tools\",\"arguments\":{\"pageSize\":2,\"filter\":\"published = false\","
         "\"orderBy\":\"create_time\"}}}");
    EXPECT_STATUS(&R, 200);
    EXPECT(strcmp(NAMES(R.body, "result.structuredContent.tools", "name"), "delta,echo") == 0,
           "list_tools page 1: %s", R.body);
    EXPECT(strlen(J(R.body, "result.structuredContent.nextPageToken")) > 8,
           "list_tools page 1 has a nextPageToken: %s", R.body);
    EXPECT(strlen(J(R.body, "result.structuredContent.tools.0.etag")) == 20, "etag: %s", R.body);
    http(&R, "POST", ports[1], "/mcp/system", hdrs,
         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
         "\"list_tools\",\"arguments\":{\"filter\":\"colour = red\"}}}");
    EXPECT(strcmp(J(R.body, "error.code"), "-32602") == 0 &&
               strstr(J(R.body, "error.message"), "colour"),
           "an unknown filter field -> -32602 naming it: %s", R.body);
    return 0;
}

/* ---- 9. export and apply ------------------------------------------------------------------ */

static long long registry_rev(void)
{
    redisContext *c = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(c != NULL && !c->err);
    redisReply *r = redisCommand(c, "GET " NAMES_KEY_REGISTRY_REV);
    long long rev = r && r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return rev;
}

static char exported[REPLY_MAX];

static int c_export(void)
{
    admin(&R, "GET", "/admin/v1/config", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    snprintf(exported, sizeof(exported), "%s", R.body);
    EXPECT(strcmp(NAMES(R.body, "tenants", "id"), "acme,beta,lst,seed") == 0, "tenants: %s",
           NAMES(R.body, "tenants", "id"));
    EXPECT_LACKS(&R, "createTime");
    EXPECT_LACKS(&R, "updateTime");
    EXPECT_LACKS(&R, acme_key);
    EXPECT_HAS(&R, "sha256");
    cJSON *root = cJSON_Parse(R.body);
    int ntools = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "tools"));
    cJSON_Delete(root);
    EXPECT(ntools >= 10, "%d tools exported", ntools);
    return 0;
}

static int c_apply_same(void)
{
    EXPECT(exported[0], "no export to start from");
    char e_tool[64], e_tenant[64], e_version[64];
    snprintf(e_tool, sizeof(e_tool), "%s", etag_of("/admin/v1/tenants/lst/tools/alpha"));
    snprintf(e_tenant, sizeof(e_tenant), "%s", etag_of("/admin/v1/tenants/acme"));
    snprintf(e_version, sizeof(e_version), "%s",
             etag_of("/admin/v1/tenants/acme/tools/slow/versions/a"));
    long long rev = registry_rev();
    admin(&R, "PUT", "/admin/v1/config", NULL, exported);
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "created", "0");
    EXPECT_STR(&R, "updated", "0");
    EXPECT_STR(&R, "deleted", "0");
    char want[32];
    snprintf(want, sizeof(want), "%lld", rev);
    EXPECT_STR(&R, "revision", want);
    EXPECT(registry_rev() == rev, "revision %lld -> %lld", rev, registry_rev());
    EXPECT(strcmp(etag_of("/admin/v1/tenants/lst/tools/alpha"), e_tool) == 0, "tool etag changed");
    EXPECT(strcmp(etag_of("/admin/v1/tenants/acme"), e_tenant) == 0, "tenant etag changed");
    EXPECT(strcmp(etag_of("/admin/v1/tenants/acme/tools/slow/versions/a"), e_version) == 0,
           "version etag changed");
    admin_at(&R, ports[1], "PUT", "/admin/v1/config", NULL, exported);
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "created", "0");
    EXPECT_STR(&R, "updated", "0");
    EXPECT_STR(&R, "revision", want);
    return 0;
}

/* The export with tool foxtrot added to tenant lst (malloc'd). */
static char *export_plus_foxtrot(void)
{
    cJSON *root = cJSON_Parse(exported);
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "tools"))) {
        cJSON_Delete(root);
        return NULL;
    }
    cJSON *t = cJSON_Parse("{\"tenant\":\"lst\",\"server\":\"default\",\"name\":\"foxtrot\","
                           "\"published\":\"1\",\"versions\":[{\"version\":\"1\",\"description\":"
                           "\"fox\",\"inputSchema\":{\"type\":\"object\"},\"executor\":{"
                           "\"type\":\"builtin\",\"name\":\"echo\"}}]}");
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(root, "tools"), t);
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

static int c_apply_add(void)
{
    EXPECT(exported[0], "no export to start from");
    char *doc = export_plus_foxtrot();
    EXPECT(doc != NULL, "the export is not a config document");
    admin(&R, "PUT", "/admin/v1/config", NULL, doc);
    cJSON_free(doc);
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "created", "1");
    EXPECT_STR(&R, "updated", "0");
    EXPECT_STR(&R, "deleted", "0");
    admin(&R, "GET", "/admin/v1/tenants/lst/tools/foxtrot", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "publishedVersion", "1");
    EXPECT(strlen(J(R.body, "createTime")) == 24, "createTime %s", J(R.body, "createTime"));
    return 0;
}

static int c_apply_prune(void)
{
    /* Tenant lst alone, without foxtrot: with prune, foxtrot goes and nothing else. */
    EXPECT(exported[0], "no export to start from");
    cJSON *root = cJSON_Parse(exported), *doc = cJSON_CreateObject();
    const char *arrays[] = {"tenants", "servers", "tools"};
    for (int k = 0; k < 3; k++) {
        cJSON *out = cJSON_AddArrayToObject(doc, arrays[k]), *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, arrays[k]))
        {
            const char *owner =
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, k ? "tenant" : "id"));
            if (owner && strcmp(owner, "lst") == 0)
                cJSON_AddItemToArray(out, cJSON_Duplicate(e, 1));
        }
    }
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(root);
    cJSON_Delete(doc);
    CHECK(text != NULL);
    admin(&R, "PUT", "/admin/v1/config?prune=true", NULL, text);
    cJSON_free(text);
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "deleted", "1");
    EXPECT_STR(&R, "created", "0");
    EXPECT_STR(&R, "updated", "0");
    admin(&R, "GET", "/admin/v1/tenants/lst/tools/foxtrot", NULL, NULL);
    EXPECT_STATUS(&R, 404);
    list_tools(&R, "");
    EXPECT(strcmp(NAMES(R.body, "tools", "name"), "alpha,bravo,charlie,delta,echo") == 0,
           "lst tools after prune: %s", NAMES(R.body, "tools", "name"));
    admin(&R, "GET", "/admin/v1/tenants/acme/tools/marker", NULL, NULL);
    EXPECT_STATUS(&R, 200); /* other tenants are not pruned */
    return 0;
}

static int c_apply_invalid(void)
{
    long long rev = registry_rev();
    admin(&R, "PUT", "/admin/v1/config", NULL,
          "{\"tenants\":[{\"id\":\"inv\"}],\"servers\":[{\"tenant\":\"inv\",\"name\":"
          "\"default\"}],\"tools\":[{\"tenant\":\"inv\",\"server\":\"default\",\"name\":\"t\","
          "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
          "\"executor\":{\"type\":\"builtin\"}}]}]}");
    EXPECT_STATUS(&R, 400);
    EXPECT_HAS(&R, "$.tools[0].versions[0].executor");
    admin(&R, "PUT", "/admin/v1/config", NULL,
          "{\"tenants\":[{\"id\":\"inv\"}],\"tools\":[{\"tenant\":\"inv\",\"server\":\"nope\","
          "\"name\":\"t\",\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
          "\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"}}]}]}");
    EXPECT_STATUS(&R, 400);
    EXPECT_HAS(&R, "$.tools[0].server");
    admin(&R, "PUT", "/admin/v1/config", NULL, "{\"servers\":[]}");
    EXPECT_STATUS(&R, 400);
    EXPECT_HAS(&R, "tenants");
    admin(&R, "GET", "/admin/v1/tenants/inv", NULL, NULL);
    EXPECT_STATUS(&R, 404);
    EXPECT(registry_rev() == rev, "a refused config changed the revision");
    return 0;
}

/* Runs mcpq-ingress with args against the test Redis; its output (stdout and stderr) into out.
 * The exit status, or -1. */
static int run_cli(const char *a1, const char *a2, char *out, size_t size)
{
    static int seq;
    char bin[300], log[300], e_r[200], e_b[300];
    snprintf(bin, sizeof(bin), "%s/mcpq-ingress", fx_bin_dir());
    snprintf(log, sizeof(log), "%s/cli-%d.log", fx.dir, ++seq);
    snprintf(e_r, sizeof(e_r), "MCPQ_REDIS_URL=%s", fx.redis_url);
    snprintf(e_b, sizeof(e_b), "MCPQ_KAFKA_BROKERS=%s", fx.brokers);
    const char *argv[] = {bin, a1, a2, NULL};
    const char *env[] = {e_r, e_b, NULL};
    pid_t pid = fx_spawn(argv, env, log);
    CHECK(pid > 0);
    int status = fx_wait_exit(pid, 30000);
    if (status < 0) { /* still running: stop it and report the hang */
        fx_stop_pid(pid, 1000);
        status = -1;
    }
    fx_read_file(log, out, size);
    return status;
}

static char cli_out[REPLY_MAX];

static int c_cli_apply(void)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/cli.json", fx.dir);
    fx_write_file(path,
                  "{\"tenants\": [{\"id\": \"cli\", \"api_keys\": [{\"id\": \"k\", \"key\": "
                  "\"cli-key\"}]}],"
                  " \"servers\": [{\"tenant\": \"cli\", \"name\": \"default\"}],"
                  " \"tools\": [{\"tenant\": \"cli\", \"server\": \"default\", \"name\": "
                  "\"hello\", \"versions\": [{\"version\": \"1\", \"description\": \"hi\","
                  " \"inputSchema\": {\"type\": \"object\"},"
                  " \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}\n",
                  0600);
    int st = run_cli("--apply", path, cli_out, sizeof(cli_out));
    EXPECT(st == 0, "--apply exited %d: %.800s", st, cli_out);
    EXPECT(strstr(cli_out, "applied ") && strstr(cli_out, "created 3, updated 0"),
           "--apply said: %.800s", cli_out);
    printf("# %.*s\n", (int)strcspn(strstr(cli_out, "applied "), "\n"),
           strstr(cli_out, "applied "));
    st = run_cli("--apply", path, cli_out, sizeof(cli_out));
    EXPECT(st == 0, "second --apply exited %d: %.800s", st, cli_out);
    EXPECT(strstr(cli_out, "created 0, updated 0, unchanged 3, deleted 0"),
           "second --apply said: %.800s", cli_out);
    EXPECT_PROPAGATED(wait_listed("cli-key", "hello", 1, "hi"), "--apply -> tools/list");
    admin(&R, "GET", "/admin/v1/tenants/cli/tools/hello", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    return 0;
}

static int c_cli_export(void)
{
    int st = run_cli("--export", NULL, cli_out, sizeof(cli_out));
    EXPECT(st == 0, "--export exited %d: %.800s", st, cli_out);
    const char *start = strstr(cli_out, "{\n");
    EXPECT(start != NULL, "--export printed no JSON document: %.800s", cli_out);
    cJSON *doc = cJSON_ParseWithOpts(start, NULL, 0);
    EXPECT(doc != NULL, "--export printed no JSON: %.800s", start);
    char *compact = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    char names[256];
    snprintf(names, sizeof(names), "%s", NAMES(compact, "tenants", "id"));
    int has_hello = strstr(compact, "\"name\":\"hello\"") != NULL;
    cJSON_free(compact);
    EXPECT(strcmp(names, "acme,beta,cli,lst,seed") == 0, "--export tenants: %s", names);
    EXPECT(has_hello, "--export lacks the tool hello");
    return 0;
}

/* ---- 10. racing writes -------------------------------------------------------------------- */

typedef struct racer {
    pthread_barrier_t *go;
    const char *etag;
    int n;
    reply_t r;
} racer_t;

static void *race_patch(void *arg)
{
    racer_t *x = arg;
    char body[200];
    snprintf(body, sizeof(body), "{\"rate_limits\":{\"api_key\":{\"per_second\":%d}}}", x->n);
    pthread_barrier_wait(x->go);
    admin_at(&x->r, ports[x->n % 2], "PATCH", "/admin/v1/tenants/beta", x->etag, body);
    return NULL;
}

static int c_concurrent_patch(void)
{
    static racer_t x[2];
    for (int round = 0; round < 5; round++) {
        char e[64];
        snprintf(e, sizeof(e), "%s", etag_of("/admin/v1/tenants/beta"));
        EXPECT(e[0], "no etag for beta");
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        pthread_t th[2];
        for (int i = 0; i < 2; i++) {
            x[i].go = &go;
            x[i].etag = e;
            x[i].n = 100 * round + i + 1;
            CHECK_INT_EQ(pthread_create(&th[i], NULL, race_patch, &x[i]), 0);
        }
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&go);
        int ok = x[0].r.status == 200 ? 0 : 1;
        EXPECT((x[0].r.status == 200 && x[1].r.status == 412) ||
                   (x[0].r.status == 412 && x[1].r.status == 200),
               "round %d: statuses %ld and %ld: %.300s | %.300s", round, x[0].r.status,
               x[1].r.status, x[0].r.body, x[1].r.body);
        admin(&R, "GET", "/admin/v1/tenants/beta", NULL, NULL);
        char want[32];
        snprintf(want, sizeof(want), "%d", x[ok].n);
        EXPECT_STR(&R, "rate_limits.api_key.per_second", want); /* the winner's write stands */
        EXPECT_STR(&R, "etag", J(x[ok].r.body, "etag"));
    }
    return 0;
}

/* ---- 11. duplicate ids within a tenant ----------------------------------------------------- */

/* Last: a replica that mishandled these (a use after free in ingress/api/admin.c, found by this
 * check, which killed a replica under ASan) must not hide the other checks. */
static int c_sub_dup(void)
{
    const struct {
        const char *path, *body, *msg;
    } dups[] = {
        {"/admin/v1/tenants/acme/servers", "{\"name\":\"other\"}",
         "server \"other\" exists already"},
        {"/admin/v1/tenants/acme/apiKeys", "{\"id\":\"k2\"}", "API key \"k2\" exists already"},
        {"/admin/v1/tenants/acme/apps", "{\"app_id\":\"acme-app\"}",
         "app \"acme-app\" exists already"},
        {"/admin/v1/tenants/beta/webhooks",
         "{\"id\":\"wh1\",\"url\":\"http://127.0.0.1:9/x\",\"events\":[\"task.completed\"]}",
         "webhook \"wh1\" exists already"},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof(dups) / sizeof(dups[0]); i++) {
        admin_at(&R, ports[1], "POST", dups[i].path, NULL, dups[i].body);
        const char *e = J(R.body, "error");
        if (R.status != 409 || !e || !strstr(e, dups[i].msg)) {
            fprintf(stderr, "  %s: status %ld, want 409 with '%s': %.300s\n", R.what, R.status,
                    dups[i].msg, R.body);
            bad++;
        }
    }
    EXPECT(bad == 0, "%d of 4 duplicates answered wrong", bad);
    return 0;
}

/* ---- 10. no read shows a secret; a PUT of the export keeps them -------------------------- */

#define SEC_KEY "sec-api-key-4f1d0a9b"
#define SEC_APP "sec-app-secret-0c9e7d2a51f6b3e8-4a7d19"
#define SEC_WHSEC "whsec_c2VjLXdlYmhvb2stc2VjcmV0LTAxMjM0NTY3ODk="
#define SEC_HTTP_WHSEC "whsec_c2VjLWh0dHAtZXhlY3V0b3Itc2VjcmV0LTAxMjM="
#define SEC_FED_HDR "Bearer sec-federation-token-77aa"
#define SEC_HTTP_HDR "sec-http-header-value-19bd"
#define SEC_MCP_HDR "Bearer sec-mcp-header-value-5c2e"
#define SEC_AGENT_HDR "sec-agent-header-value-8d41"
#define SEC_ENV "sec-env-password-e630"

/* Every secret the sec tenant holds, and the hash of its API key. */
static const char *const sec_secrets[] = {SEC_KEY,     SEC_APP,      SEC_WHSEC,   SEC_HTTP_WHSEC,
                                          SEC_FED_HDR, SEC_HTTP_HDR, SEC_MCP_HDR, SEC_AGENT_HDR,
                                          SEC_ENV,     NULL};
static char sec_key_sha[65];
static char sec_export[REPLY_MAX];

/* The registry hash in Redis, every field, as one text (for looking for the stored secrets). */
static char *registry_text(void)
{
    redisContext *c = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(c != NULL && !c->err);
    redisReply *r = redisCommand(c, "HGETALL " NAMES_KEY_REGISTRY);
    CHECK(r != NULL && r->type == REDIS_REPLY_ARRAY);
    size_t n = 1;
    for (size_t i = 0; i < r->elements; i++)
        n += r->element[i]->len + 1;
    char *out = malloc(n), *p = out;
    CHECK(out != NULL);
    for (size_t i = 0; i < r->elements; i++) {
        memcpy(p, r->element[i]->str, r->element[i]->len);
        p += r->element[i]->len;
        *p++ = '\n';
    }
    *p = '\0';
    freeReplyObject(r);
    redisFree(c);
    return out;
}

static int c_secret_setup(void)
{
    util_sha256_hex(SEC_KEY, strlen(SEC_KEY), sec_key_sha);
    admin(&R, "PUT", "/admin/v1/config", NULL,
          "{\"tenants\":[{\"id\":\"sec\",\"api_keys\":[{\"id\":\"k\",\"key\":\"" SEC_KEY "\"}],"
          "\"apps\":[{\"app_id\":\"sec-app\",\"secret\":\"" SEC_APP "\"}],"
          "\"webhooks\":[{\"id\":\"wh\",\"url\":\"http://127.0.0.1:9/hook\",\"events\":"
          "[\"task.completed\"],\"secret\":\"" SEC_WHSEC "\"}]}],"
          "\"servers\":[{\"tenant\":\"sec\",\"name\":\"default\"},{\"tenant\":\"sec\",\"name\":"
          "\"fed\",\"federate\":{\"url\":\"http://127.0.0.1:9/mcp\",\"prefix\":\"up_\","
          "\"headers\":{\"Authorization\":\"" SEC_FED_HDR "\"}}}],"
          "\"tools\":[{\"tenant\":\"sec\",\"server\":\"default\",\"name\":\"h\",\"versions\":"
          "[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},\"executor\":{\"type\":"
          "\"http\",\"url\":\"http://127.0.0.1:9/run\",\"headers\":{\"X-Api-Token\":\"" SEC_HTTP_HDR
          "\"},\"secret\":\"" SEC_HTTP_WHSEC "\"}}]},"
          "{\"tenant\":\"sec\",\"server\":\"default\",\"name\":\"m\",\"versions\":[{\"version\":"
          "\"1\",\"inputSchema\":{\"type\":\"object\"},\"executor\":{\"type\":\"mcp\",\"url\":"
          "\"http://127.0.0.1:9/mcp\",\"tool\":\"t\",\"headers\":{\"Authorization\":\"" SEC_MCP_HDR
          "\"}}}]},"
          "{\"tenant\":\"sec\",\"server\":\"default\",\"name\":\"a\",\"versions\":[{\"version\":"
          "\"1\",\"inputSchema\":{\"type\":\"object\"},\"executor\":{\"type\":\"agent\",\"url\":"
          "\"http://127.0.0.1:9/agent\",\"headers\":{\"X-Agent-Key\":\"" SEC_AGENT_HDR "\"}}}]},"
          "{\"tenant\":\"sec\",\"server\":\"default\",\"name\":\"e\",\"versions\":[{\"version\":"
          "\"1\",\"inputSchema\":{\"type\":\"object\"},\"executor\":{\"type\":\"exec\",\"argv\":"
          "[\"true\"],\"env\":{\"API_PASSWORD\":\"" SEC_ENV "\"}}}]}]}");
    EXPECT_STATUS(&R, 200);
    char *reg = registry_text();
    int missing = 0;
    for (size_t i = 1; sec_secrets[i]; i++) /* [0], the key, is stored as its hash */
        missing += strstr(reg, sec_secrets[i]) == NULL;
    missing += strstr(reg, sec_key_sha) == NULL;
    free(reg);
    EXPECT(missing == 0, "%d secrets not stored by the set-up", missing);
    return 0;
}

static int c_secret_export(void)
{
    admin(&R, "GET", "/admin/v1/config", NULL, NULL);
    EXPECT_STATUS(&R, 200);
    snprintf(sec_export, sizeof(sec_export), "%s", R.body);
    for (size_t i = 0; sec_secrets[i]; i++)
        EXPECT_LACKS(&R, sec_secrets[i]);
    EXPECT_LACKS(&R, sec_key_sha);
    EXPECT_HAS(&R, "\"Authorization\":\"(hidden)\"");
    EXPECT_HAS(&R, "\"API_PASSWORD\":\"(hidden)\"");
    EXPECT_HAS(&R, "\"secret\":\"(hidden)\"");
    EXPECT_HAS(&R, "\"sha256\":\"(hidden)\"");
    cJSON *doc = cJSON_Parse(R.body), *t;
    int shown = 0;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(doc, "tenants"))
    {
        cJSON *k;
        cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(t, "api_keys"))
        {
            const char *h = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(k, "sha256"));
            shown += !h || strcmp(h, "(hidden)") != 0;
        }
    }
    cJSON_Delete(doc);
    EXPECT(shown == 0, "%d API key hashes shown by the export", shown);
    /* the per-object views hide the same values */
    static const char *const views[] = {
        "/admin/v1/tenants/sec/apps/sec-app",       "/admin/v1/tenants/sec/webhooks/wh",
        "/admin/v1/tenants/sec/servers/fed",        "/admin/v1/tenants/sec/tools/h/versions/1",
        "/admin/v1/tenants/sec/tools/m/versions/1", "/admin/v1/tenants/sec/tools/a/versions/1",
        "/admin/v1/tenants/sec/tools/e/versions/1", "/admin/v1/tenants/sec/apiKeys/k"};
    for (size_t v = 0; v < sizeof(views) / sizeof(views[0]); v++) {
        admin(&R, "GET", views[v], NULL, NULL);
        EXPECT_STATUS(&R, 200);
        for (size_t i = 0; sec_secrets[i]; i++)
            EXPECT_LACKS(&R, sec_secrets[i]);
        EXPECT_LACKS(&R, sec_key_sha);
    }
    admin(&R, "GET", "/admin/v1/tenants/sec/servers/fed", NULL, NULL);
    EXPECT_HAS(&R, "\"headers\":{\"Authorization\":\"(hidden)\"}");
    return 0;
}

static int c_secret_roundtrip(void)
{
    EXPECT(sec_export[0], "no export to start from");
    long long rev = registry_rev();
    admin(&R, "PUT", "/admin/v1/config", NULL, sec_export);
    EXPECT_STATUS(&R, 200);
    EXPECT_STR(&R, "created", "0");
    EXPECT_STR(&R, "updated", "0");
    EXPECT(registry_rev() == rev, "revision %lld -> %lld", rev, registry_rev());
    char *reg = registry_text();
    int missing = 0;
    for (size_t i = 1; sec_secrets[i]; i++)
        missing += strstr(reg, sec_secrets[i]) == NULL;
    missing += strstr(reg, sec_key_sha) == NULL;
    int placeholders = strstr(reg, "(hidden)") != NULL;
    free(reg);
    EXPECT(missing == 0, "%d stored secrets lost by a PUT of the redacted export", missing);
    EXPECT(!placeholders, "a placeholder was stored");
    return 0;
}

/* The export with the app sec-app2 {"secret": "(hidden)"} added to tenant sec (malloc'd). */
static char *export_with_new_hidden(void)
{
    cJSON *doc = cJSON_Parse(sec_export), *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(doc, "tenants"))
    {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "id"));
        if (id && strcmp(id, "sec") == 0)
            cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(t, "apps"),
                                 cJSON_Parse("{\"app_id\":\"sec-app2\",\"secret\":\"(hidden)\"}"));
    }
    char *s = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    return s;
}

static int c_secret_new_placeholder(void)
{
    EXPECT(sec_export[0], "no export to start from");
    long long rev = registry_rev();
    char *doc = export_with_new_hidden();
    EXPECT(doc != NULL, "the export is not a config document");
    admin(&R, "PUT", "/admin/v1/config", NULL, doc);
    cJSON_free(doc);
    EXPECT_STATUS(&R, 400);
    EXPECT_HAS(&R, ".apps[1].secret: \\\"(hidden)\\\" stands for the stored value");
    EXPECT(registry_rev() == rev, "a refused config changed the revision");
    /* a placeholder where the admin API takes a body of one object is refused too */
    admin(&R, "POST", "/admin/v1/tenants/sec/tools/h/versions", NULL,
          "{\"version\":\"2\",\"from_version\":\"1\",\"executor\":{\"type\":\"http\",\"url\":"
          "\"http://127.0.0.1:9/run\",\"headers\":{\"X-Api-Token\":\"(hidden)\"}}}");
    EXPECT_STATUS(&R, 400);
    EXPECT_HAS(&R, "placeholder of a redacted export");
    EXPECT(registry_rev() == rev, "a refused version changed the revision");
    return 0;
}

static int c_secret_cli(void)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/redacted.json", fx.dir);
    fx_write_file(path,
                  "{\"tenants\": [{\"id\": \"sec\", \"apps\": [{\"app_id\": \"sec-app\", "
                  "\"secret\": \"(hidden)\"}]}]}\n",
                  0600);
    int st = run_cli("--apply", path, cli_out, sizeof(cli_out));
    EXPECT(st == 2, "--apply of a placeholder exited %d: %.800s", st, cli_out);
    EXPECT(strstr(cli_out, "$.tenants[0].apps[0].secret: \"(hidden)\" is the placeholder"),
           "--apply said: %.800s", cli_out);
    st = run_cli("--export", NULL, cli_out, sizeof(cli_out));
    EXPECT(st == 0, "--export exited %d: %.800s", st, cli_out);
    EXPECT(strstr(cli_out, SEC_APP) && strstr(cli_out, SEC_HTTP_HDR) && strstr(cli_out, SEC_ENV),
           "--export (the backup with secrets) lacks them");
    return 0;
}

/* ---- main --------------------------------------------------------------------------------- */

typedef struct check {
    const char *name;
    int (*fn)(void);
} check_t;

static const check_t checks[] = {
    {"auth: no token -> 401 with WWW-Authenticate", c_auth_missing},
    {"auth: a wrong token (or a tenant's API key) -> 401", c_auth_wrong},
    {"auth: an ingress without MCPQ_ADMIN_TOKEN -> 404", c_auth_off},
    {"tenants: create -> 201 with createTime, updateTime, etag; default server listed",
     c_tenant_create},
    {"tenants: duplicate id -> 409", c_tenant_dup},
    {"tenants: a bad id -> 400 naming $.id", c_tenant_bad_id},
    {"tenants: PATCH with a stale If-Match -> 412, with the current etag -> 200 and a new etag",
     c_tenant_if_match},
    {"tenants: GET of an unknown tenant -> 404", c_tenant_unknown},
    {"api keys: POST returns the key once; it works on /mcp of both replicas within 1 s",
     c_key_create_works},
    {"api keys: GET (list and one) never shows the key or its sha256", c_key_hidden},
    {"api keys: DELETE revokes; the key gets 401 on both replicas within 1 s", c_key_revoke},
    {"apps: POST returns the secret once; GET never shows it", c_app_secret_once},
    {"apps: :rotateSecret keeps the old secret valid for grace_s (24 h by default), 0 ends it",
     c_app_rotate},
    {"apps: signature_version 2 refuses version 1 requests", c_app_signature_version},
    {"apps: a literal secret under 32 bytes -> 400 naming the app", c_app_secret_short},
    {"apps: app_id is unique across tenants -> 409", c_app_id_global},
    {"apps: secret_env in a body -> 400", c_app_secret_env},
    {"webhooks: POST returns a whsec_ secret once; GET hides it", c_webhook_secret_once},
    {"webhooks: :rotateSecret keeps the old secret for grace_s; PATCH ends the grace",
     c_webhook_rotate},
    {"webhooks: a bad url -> 400", c_webhook_bad_url},
    {"servers: create -> 201 and listed", c_server_create},
    {"servers: \"system\" -> 403", c_server_system},
    {"servers: DELETE of a server that has tools -> 409", c_server_delete_with_tools},
    {"servers: DELETE of the default server -> 409 (an empty other one -> 204)",
     c_server_delete_default},
    {"tools: names empty, 51 chars, digit first, space, '/' -> 400; 50 chars and a.b-c_d OK",
     c_tool_name_rules},
    {"tools: names are unique per tenant (409), the same name in another tenant is fine",
     c_tool_name_unique},
    {"tools: a new tool's first version is offline -> not in tools/list", c_tool_offline_default},
    {"versions: from_version copies description/inputSchema, given fields win", c_version_from},
    {"versions: parameter names _x, x_, a-b, 1a -> 400; a_1 OK", c_param_names},
    {"versions: an invalid inputSchema (not type object, broken pattern) -> 400",
     c_input_schema_invalid},
    {"versions: publish v1 -> listed on both replicas within 1 s; tools/call works", c_publish_v1},
    {"versions: publish v2 replaces v1 (one published; tools/list shows v2)",
     c_publish_v2_replaces},
    {"versions: PATCH of the published version -> 409, of an offline one -> 200", c_patch_version},
    {"versions: offline -> gone from tools/list on both within 1 s; tools/call unknown tool",
     c_offline},
    {"tools: rename while published -> 409; after offline -> 200 and the old name 404; onto an "
     "existing name -> 409",
     c_rename},
    {"versions: DELETE of the published version -> 409; the last DELETE removes the tool",
     c_delete_versions},
    {"in flight: a call started on version A returns A's result after B is published", c_inflight},
    {"listing: set-up of tenant lst with 5 tools", c_list_setup},
    {"listing: pageSize=2 pages through 5 tools with nextPageToken, sorted by name", c_list_paging},
    {"listing: filter published = true", c_list_filter_published},
    {"listing: filter server = \"other\"", c_list_filter_server},
    {"listing: filter name != \"x\" AND published = false", c_list_filter_and},
    {"listing: orderBy create_time desc (and asc, name desc)", c_list_order},
    {"listing: tenants, API keys, versions, servers are ordered by name (default, name desc)",
     c_list_order_others},
    {"listing: an unknown filter/orderBy field -> 400 naming it; bad pageSize -> 400",
     c_list_bad_filter},
    {"listing: a bad pageToken (or one for another filter) -> 400", c_list_bad_token},
    {"listing: every item has createTime, updateTime, etag", c_list_meta},
    {"listing: the system server's list_tools gives MCP clients the same listing",
     c_list_tools_mcp},
    {"config: GET /admin/v1/config exports the registry without metadata or keys", c_export},
    {"config: PUT of the export -> created 0, updated 0; revision and etags unchanged",
     c_apply_same},
    {"config: PUT adding a tool -> created 1", c_apply_add},
    {"config: PUT ?prune=true deletes a tool the document does not name", c_apply_prune},
    {"config: an invalid config -> 400 naming the JSON path; nothing written", c_apply_invalid},
    {"cli: mcpq-ingress --apply prints \"applied ...\", exit 0; twice: created 0, updated 0",
     c_cli_apply},
    {"cli: mcpq-ingress --export prints the registry as JSON", c_cli_export},
    {"race: two PATCHes with the same If-Match -> exactly one 200 and one 412", c_concurrent_patch},
    {"duplicates: a server, API key, app or webhook id taken in the tenant -> 409 naming it",
     c_sub_dup},
    {"secrets: set-up of tenant sec with an app, a webhook, a federated server and http, mcp, "
     "agent and exec tools with secrets",
     c_secret_setup},
    {"secrets: GET /admin/v1/config and the per-object views show none (\"(hidden)\" instead)",
     c_secret_export},
    {"secrets: PUT of the redacted export -> unchanged; every stored secret kept",
     c_secret_roundtrip},
    {"secrets: \"(hidden)\" for a value never stored (new app, a version body) -> 400",
     c_secret_new_placeholder},
    {"secrets: --apply refuses \"(hidden)\"; --export (the CLI backup) keeps the secrets",
     c_secret_cli},
};

/* 1 when the log at <dir>/<name>.log holds a sanitizer report (printed). */
static int sanitizer_report(const char *name)
{
    char path[300], line[1024];
    snprintf(path, sizeof(path), "%s/%s.log", fx.dir, name);
    FILE *f = fopen(path, "r");
    int found = 0;
    while (f && fgets(line, sizeof(line), f)) {
        if (strstr(line, "ERROR: AddressSanitizer") || strstr(line, "ERROR: LeakSanitizer") ||
            strstr(line, "runtime error:")) {
            fprintf(stderr, "  %s: %s", name, line);
            found = 1;
        }
    }
    if (f)
        fclose(f);
    return found;
}

static void write_seed_config(const char *path)
{
    fx_write_file(path,
                  "{\"tenants\": [{\"id\": \"seed\", \"api_keys\": [{\"id\": \"k\", \"key\": "
                  "\"seed-key\"}]}],"
                  " \"servers\": [{\"tenant\": \"seed\", \"name\": \"default\"}],"
                  " \"tools\": [{\"tenant\": \"seed\", \"server\": \"default\", \"name\": "
                  "\"ping\", \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": "
                  "\"object\"}, \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}\n",
                  0600);
}

int main(void)
{
    long long t0 = fx_now_ms();
    char cfg[300];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    snprintf(cfg, sizeof(cfg), "%s/seed.json", fx.dir);
    write_seed_config(cfg);
    for (int i = 0; i < 3; i++) {
        int p;
        do
            p = fx_free_port();
        while (p > 0 && i > 0 && (p == ports[0] || p == ports[1]));
        ports[i] = p;
    }
    const char *with_admin[] = {"MCPQ_ADMIN_TOKEN=" TOKEN, "MCPQ_WEBHOOK_ALLOW_PRIVATE=1", NULL};
    pid_t i1 = fx_spawn_ingress(&fx, "ingress-1", ports[0], cfg, with_admin, NULL, 0);
    pid_t i2 = fx_spawn_ingress(&fx, "ingress-2", ports[1], cfg, with_admin, NULL, 0);
    pid_t i3 = fx_spawn_ingress(&fx, "ingress-3", ports[2], cfg, NULL, NULL, 0);
    pid_t w = fx_spawn_worker(&fx, "worker", NULL);
    CHECK(i1 > 0 && i2 > 0 && i3 > 0 && w > 0);

    int failed = 0;
    size_t n = sizeof(checks) / sizeof(checks[0]);
    for (size_t i = 0; i < n; i++) {
        fflush(stdout);
        int rc = checks[i].fn();
        fflush(stderr);
        if (rc == 0) {
            TEST_PASS(checks[i].name);
        } else {
            printf("not ok - %s\n", checks[i].name);
            failed++;
        }
    }

    /* The processes exit cleanly (under ASan: no leak) and logged no sanitizer report. */
    const char *names[] = {"worker", "ingress-1", "ingress-2", "ingress-3"};
    pid_t pids[] = {w, i1, i2, i3};
    int unclean = 0;
    for (int i = 0; i < 4; i++) {
        int st = fx_stop_pid(pids[i], 10000);
        if (st != 0)
            fprintf(stderr, "  %s exited with status %d\n", names[i], st);
        unclean += st != 0;
        unclean += sanitizer_report(names[i]);
    }
    if (unclean == 0) {
        TEST_PASS("processes: every ingress and the worker exit with 0, no sanitizer report");
    } else {
        printf("not ok - processes: every ingress and the worker exit with 0, no sanitizer "
               "report\n");
        failed++;
    }
    printf("# %zu checks, %d failed, %lld ms\n", n + 1, failed, fx_now_ms() - t0);
    fx_stop(&fx);
    curl_global_cleanup();
    return failed ? 1 : 0;
}
