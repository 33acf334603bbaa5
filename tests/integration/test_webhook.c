/*
 * Integration test of webhook delivery (docs/webhooks.md; ingress/core/webhook.h): a real
 * redis-server and mcpq-devbroker (fx_start), mcpq-ingress processes with
 * MCPQ_WEBHOOK_RETRY_SCHEDULE=0,1,1, and a receiver (libmicrohttpd in this process) that
 * records every request and answers scripted statuses. Events are created with whq_event()
 * directly. Each scenario has its own tenant and webhook, so they run side by side:
 *   - a delivery is signed the Standard Webhooks way (the test recomputes the signature)
 *     and its body matches webhook.schema.json; during a rotation (previous_secret) it
 *     carries both signatures in one header, after previous_secret_expires only the new one;
 *   - a 503 is retried about 1 s later with the same webhook-id;
 *   - Retry-After (seconds on a 503, an HTTP-date on a 429) holds the retry back;
 *   - a 410 disables the endpoint: the next delivery to it is not sent;
 *   - a receiver that always fails: 3 attempts, then "failed", still listed;
 *   - a receiver that is down, then up: the retry gets through;
 *   - GET /v1/webhooks/deliveries: attempts, status, last_error, the log, filters, paging,
 *     401 without credentials, other tenants' deliveries invisible (the events have no task,
 *     so no owner: each tenant's key holds tasks:all, docs/security.md "Ownership model");
 *   - redelivery: same webhook-id and body; it re-enables a disabled endpoint;
 *   - the ingress killed (SIGKILL) during a retry schedule: a new one completes it;
 *   - the ingress stopped (SIGTERM) while a receiver is slow: the attempt is handed back
 *     and another ingress sends it;
 *   - MCPQ_WEBHOOK_ALLOW_PRIVATE=0: a config with a loopback webhook url is refused at
 *     start-up naming its JSON path, and a host name resolving to loopback is refused when
 *     connecting, with a clear last_error;
 *   - no secret, API key or signature appears in any ingress log.
 */
#include "check.h"
#include "names.h"
#include "fixture.h"
#include "kv.h"
#include "sch.h"
#include "util.h"
#include "whq.h"
#include "whsig.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the receiver ---- */

#define MAXSEEN 256

typedef struct seen {
    char path[64];
    char id[128];
    char ts[32];
    char sig[256];
    char ctype[64];
    char *body;
    long long at; /* monotonic ms */
} seen_t;

/* Scripted answers of one path, in order; 200 once they are used up. */
typedef struct plan {
    const char *path;
    int n, next;
    int status[6];
    const char *retry_after[6]; /* "DATE+3": an HTTP-date 3 s from now */
} plan_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int slow_hold; /* /slow answers only once this is 0 again (at most 10 s) */
static seen_t seen[MAXSEEN];
static int nseen;
static plan_t plans[] = {
    {"/r503", 1, 0, {503}, {NULL}},
    {"/ra", 1, 0, {503}, {"3"}},
    {"/radate", 1, 0, {429}, {"DATE+3"}},
    {"/gone", 1, 0, {410}, {NULL}},
    {"/fail", 6, 0, {500, 500, 500, 500, 500, 500}, {NULL}},
    {"/restart", 1, 0, {503}, {"4"}},
};

static long long mono_ms(void)
{
    return (long long)util_mono_ms();
}

static enum MHD_Result on_hook(struct MHD_Connection *conn, const char *url, const char *method,
                               const util_buf_t *b)
{
    (void)method;
    int status = 200;
    char ra[64] = "";
    pthread_mutex_lock(&mu);
    if (nseen < MAXSEEN) {
        seen_t *s = &seen[nseen++];
        const char *v;
        snprintf(s->path, sizeof(s->path), "%s", url);
#define HDR(field, name)                                                                           \
    v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);                                  \
    snprintf(s->field, sizeof(s->field), "%s", v ? v : "");
        HDR(id, "webhook-id");
        HDR(ts, "webhook-timestamp");
        HDR(sig, "webhook-signature");
        HDR(ctype, "Content-Type");
#undef HDR
        s->body = strdup(b->data ? b->data : "");
        s->at = mono_ms();
    }
    for (size_t i = 0; i < sizeof(plans) / sizeof(plans[0]); i++) {
        plan_t *p = &plans[i];
        if (strcmp(p->path, url) == 0 && p->next < p->n) {
            status = p->status[p->next];
            const char *r = p->retry_after[p->next];
            if (r && strncmp(r, "DATE+", 5) == 0) {
                time_t t = time(NULL) + atoi(r + 5);
                struct tm tm;
                gmtime_r(&t, &tm);
                strftime(ra, sizeof(ra), "%a, %d %b %Y %H:%M:%S GMT", &tm);
            } else if (r) {
                snprintf(ra, sizeof(ra), "%s", r);
            }
            p->next++;
        }
    }
    pthread_mutex_unlock(&mu);
    for (int i = 0; strcmp(url, "/slow") == 0 && atomic_load(&slow_hold) && i < 500; i++)
        fx_sleep_ms(20);
    const char *text = status < 300 ? "ok" : "nope, try later";
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (ra[0])
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static struct MHD_Daemon *receiver_start(int port)
{
    struct MHD_Daemon *d = fx_server_start(port, on_hook);
    CHECK(d != NULL);
    return d;
}

/* How many requests path got; *out (may be NULL) gets a copy of the i-th. */
static int seen_count(const char *path)
{
    int n = 0;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nseen; i++)
        n += strcmp(seen[i].path, path) == 0;
    pthread_mutex_unlock(&mu);
    return n;
}

static const seen_t *seen_get(const char *path, int k)
{
    const seen_t *s = NULL;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nseen && !s; i++)
        if (strcmp(seen[i].path, path) == 0 && k-- == 0)
            s = &seen[i];
    pthread_mutex_unlock(&mu);
    CHECK(s != NULL);
    return s; /* entries are never changed once recorded */
}

/* ---- the stack ---- */

typedef struct tenant {
    const char *name; /* tenant t-<name>, key wh-key-<name>, webhook wh-<name>, path /<name> */
    int down_port;    /* the url points to the port that is down at first */
    const char *prev_expires; /* a previous_secret (a rotation) until then; NULL: none */
} tenant_t;

static const tenant_t tenants[] = {
    {"sig", 0, NULL},
    {"r503", 0, NULL},
    {"ra", 0, NULL},
    {"radate", 0, NULL},
    {"gone", 0, NULL},
    {"fail", 0, NULL},
    {"down", 1, NULL},
    {"restart", 0, NULL},
    {"page", 0, NULL},
    {"slow", 0, NULL},
    {"rot", 0, "2099-01-01T00:00:00Z"},
    {"rotx", 0, "2001-01-01T00:00:00Z"},
};
#define NTENANTS ((int)(sizeof(tenants) / sizeof(tenants[0])))

static fx_stack_t fx;
static redisContext *rc;
static kv_pool_t *kv;
static int rport, dport, iport;
static char logs[5][300];
static int nlogs;
static const char *cur_log = "";

static void secret_of(int i, char *out, size_t size)
{
    snprintf(out, size, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwTest%04d", i);
}

/* The previous secret of tenant i (when it has one): another key. */
static void prev_secret_of(int i, char *out, size_t size)
{
    snprintf(out, size, "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXOldX%04d", i); /* canonical base64 */
}

static int tenant_index(const char *name)
{
    for (int i = 0; i < NTENANTS; i++)
        if (strcmp(tenants[i].name, name) == 0)
            return i;
    CHECK(0);
    return -1;
}

static void write_config(const char *path)
{
    char *doc = malloc(64 << 10);
    CHECK(doc != NULL);
    size_t n = (size_t)snprintf(doc, 64 << 10, "{\"tenants\":[");
    for (int i = 0; i < NTENANTS; i++) {
        char secret[80], prev[200] = "";
        secret_of(i, secret, sizeof(secret));
        if (tenants[i].prev_expires) {
            char old[80];
            prev_secret_of(i, old, sizeof(old));
            snprintf(prev, sizeof(prev),
                     "\"previous_secret\":\"%s\",\"previous_secret_expires\":\"%s\",", old,
                     tenants[i].prev_expires);
        }
        const char *t = tenants[i].name;
        n += (size_t)snprintf(
            doc + n, (64 << 10) - n,
            "%s{\"id\":\"t-%s\",\"api_keys\":[{\"id\":\"k\",\"key\":\"wh-key-%s\","
            "\"scopes\":[\"tasks:all\"]}],"
            "\"webhooks\":[{\"id\":\"wh-%s\",\"url\":\"http://127.0.0.1:%d/%s\","
            "\"secret\":\"%s\",%s\"events\":[\"task.completed\"]}]}",
            i ? "," : "", t, t, t, tenants[i].down_port ? dport : rport, t, secret, prev);
    }
    snprintf(doc + n, (64 << 10) - n, "]}");
    fx_write_file(path, doc, 0600);
    free(doc);
}

static void dump_log(void)
{
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "tail -n 30 %s >&2", cur_log);
    if (system(cmd) != 0)
        fprintf(stderr, "(no log)\n");
}

#define WAIT_FOR(expr, ms)                                                                         \
    do {                                                                                           \
        long long until_ = mono_ms() + (ms);                                                       \
        while (!(expr)) {                                                                          \
            if (mono_ms() > until_) {                                                              \
                fprintf(stderr, "%s:%d: timed out waiting for %s\n", __FILE__, __LINE__, #expr);   \
                dump_log();                                                                        \
                exit(1);                                                                           \
            }                                                                                      \
            fx_sleep_ms(20);                                                                       \
        }                                                                                          \
    } while (0)

static pid_t spawn_ingress(const char *name, const char *config, int allow_private)
{
    const char *env[] = {"MCPQ_WEBHOOK_RETRY_SCHEDULE=0,1,1",
                         allow_private ? "MCPQ_WEBHOOK_ALLOW_PRIVATE=1"
                                       : "MCPQ_WEBHOOK_ALLOW_PRIVATE=0",
                         "MCPQ_SHUTDOWN_GRACE_MS=500", NULL};
    iport = fx_free_port();
    CHECK(nlogs < 5);
    pid_t pid = fx_spawn_ingress(&fx, name, iport, config, env, logs[nlogs], sizeof(logs[0]));
    CHECK(pid > 0);
    cur_log = logs[nlogs++];
    return pid;
}

/* A field of a delivery ("" when absent), valid until the next call. */
static const char *hget(const char *id, const char *field)
{
    static char buf[2][65536];
    static int k;
    char *out = buf[k++ % 2];
    redisReply *r = redisCommand(rc, "HGET " NAMES_KEY_WH_DELIVERY "%s %s", id, field);
    CHECK(r != NULL);
    snprintf(out, sizeof(buf[0]), "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return out;
}

static int status_is(const char *id, const char *status)
{
    return strcmp(hget(id, "status"), status) == 0;
}

/* The k-th newest delivery id of tenant t-<name>. */
static void newest(const char *name, int k, char *id, size_t size)
{
    redisReply *r = redisCommand(rc, "ZREVRANGE " NAMES_KEY_WH_INDEX "t-%s %d %d", name, k, k);
    CHECK(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
    snprintf(id, size, "%s", r->element[0]->str);
    freeReplyObject(r);
}

static void event(const char *name, const char *task)
{
    char data[512], err[256], tenant[64];
    snprintf(tenant, sizeof(tenant), "t-%s", name);
    snprintf(data, sizeof(data),
             "{\"TaskId\":\"%s\", \"TaskStatus\":\"complete\",\"tool\":\"echo\",\"result\":"
             "{\"content\":[{\"type\":\"text\",\"text\":\"d\\u00e9j\\u00e0 1.50\"}],"
             "\"isError\":false}}",
             task);
    CHECK_INT_EQ(whq_event(kv, tenant, "task.completed", task, data, err, sizeof(err)), 1);
}

/* The signature of a received request verifies with the tenant's secret; its timestamp is
 * within Standard Webhooks' 300 s of now. */
static void check_signed(const seen_t *s, const char *name)
{
    char secret[80], want[WHSIG_LEN];
    secret_of(tenant_index(name), secret, sizeof(secret));
    long long ts = atoll(s->ts);
    long long now = fx_now_ms() / 1000;
    CHECK(ts > now - 300 && ts <= now + 1);
    CHECK_INT_EQ(whsig_sign(secret, s->id, ts, s->body, strlen(s->body), want, sizeof(want)), 0);
    CHECK_STR_EQ(s->sig, want);
    CHECK_STR_EQ(s->ctype, "application/json");
}

/* ---- the tenant API ---- */

typedef struct reply {
    long status;
    char body[1 << 17];
    size_t len;
} reply_t;

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    reply_t *r = ud;
    size_t len = size * n;
    if (r->len + len >= sizeof(r->body))
        return 0;
    memcpy(r->body + r->len, p, len);
    r->len += len;
    r->body[r->len] = '\0';
    return len;
}

/* GET (post = 0) or an empty POST to the ingress, as tenant name's API key (NULL: none). */
static void api(int post, const char *path, const char *name, reply_t *r)
{
    char url[512], auth[128];
    memset(r, 0, sizeof(*r));
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", iport, path);
    struct curl_slist *h = NULL;
    if (name) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer wh-key-%s", name);
        h = curl_slist_append(h, auth);
    }
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (post)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    CHECK_INT_EQ(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
}

static cJSON *api_json(int post, const char *path, const char *name, long want_status)
{
    static reply_t r;
    api(post, path, name, &r);
    if (r.status != want_status)
        fprintf(stderr, "%s %s -> %ld %s\n", post ? "POST" : "GET", path, r.status, r.body);
    CHECK_INT_EQ(r.status, want_status);
    CHECK(strstr(r.body, "whsec_") == NULL && strstr(r.body, "v1,") == NULL &&
          strstr(r.body, "http://") == NULL);
    cJSON *j = cJSON_Parse(r.body);
    CHECK(j != NULL);
    return j;
}

static const char *jstr(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static double jnum(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    CHECK(cJSON_IsNumber(v));
    return v->valuedouble;
}

/* ---- scenarios ---- */

/* A rotation: while the previous secret is active a delivery carries one signature per
 * secret in one webhook-signature header (new first), each verifiable alone; an expired
 * previous secret signs nothing. */
static void test_rotation(void)
{
    char id[128], now_sig[WHSIG_LEN], old_sig[WHSIG_LEN], secret[80], old[80], want[128];
    for (int expired = 0; expired < 2; expired++) {
        const char *name = expired ? "rotx" : "rot";
        char path[16];
        int i = tenant_index(name);
        snprintf(path, sizeof(path), "/%s", name);
        newest(name, 0, id, sizeof(id));
        WAIT_FOR(status_is(id, "delivered"), 20000);
        const seen_t *s = seen_get(path, 0);
        secret_of(i, secret, sizeof(secret));
        prev_secret_of(i, old, sizeof(old));
        long long ts = atoll(s->ts);
        CHECK_INT_EQ(
            whsig_sign(secret, s->id, ts, s->body, strlen(s->body), now_sig, sizeof(now_sig)), 0);
        CHECK_INT_EQ(whsig_sign(old, s->id, ts, s->body, strlen(s->body), old_sig, sizeof(old_sig)),
                     0);
        if (expired)
            snprintf(want, sizeof(want), "%s", now_sig);
        else
            snprintf(want, sizeof(want), "%s %s", now_sig, old_sig);
        CHECK_STR_EQ(s->sig, want);
    }
    TEST_PASS("a rotation: one webhook-signature header with a signature per active secret; "
              "an expired previous secret signs nothing");
}

static void test_signed(void)
{
    char id[128], err[256];
    newest("sig", 0, id, sizeof(id));
    WAIT_FOR(status_is(id, "delivered"), 20000);
    CHECK_INT_EQ(seen_count("/sig"), 1);
    const seen_t *s = seen_get("/sig", 0);
    CHECK_STR_EQ(s->id, id);
    check_signed(s, "sig");
    CHECK_STR_EQ(s->body, hget(id, "body"));
    CHECK(strstr(s->body, "\"data\":{\"TaskId\":\"task-sig\", \"TaskStatus\"") != NULL);
    CHECK(strstr(s->body, "d\\u00e9j\\u00e0 1.50") != NULL); /* not re-encoded */
    cJSON *doc = cJSON_Parse(s->body);
    CHECK(doc != NULL);
    CHECK_INT_EQ(sch_validate(sch_builtin("webhook.schema.json"), doc, "$", err, sizeof(err)), 0);
    cJSON_Delete(doc);
    CHECK_STR_EQ(hget(id, "attempts"), "1");
    CHECK_STR_EQ(hget(id, "last_status"), "200");
    TEST_PASS("a delivery is signed the Standard Webhooks way; the body is the event as created");
}

static void check_log(const char *id, int n, int first_status)
{
    cJSON *log = cJSON_Parse(hget(id, "log"));
    CHECK(cJSON_IsArray(log));
    CHECK_INT_EQ(cJSON_GetArraySize(log), n);
    const cJSON *e = cJSON_GetArrayItem(log, 0);
    CHECK_INT_EQ(jnum(e, "status"), first_status);
    CHECK(jnum(e, "at_ms") > 1.6e12);
    CHECK(jnum(e, "ms") >= 0);
    CHECK(jstr(e, "error") != NULL);
    cJSON_Delete(log);
}

static void test_retry(void)
{
    char id[128];
    newest("r503", 0, id, sizeof(id));
    WAIT_FOR(status_is(id, "delivered"), 20000);
    CHECK_INT_EQ(seen_count("/r503"), 2);
    const seen_t *a = seen_get("/r503", 0), *b = seen_get("/r503", 1);
    CHECK_STR_EQ(a->id, id);
    CHECK_STR_EQ(b->id, id);
    CHECK_STR_EQ(a->body, b->body);
    check_signed(a, "r503");
    check_signed(b, "r503");
    CHECK(b->at - a->at >= 900); /* the schedule's 1 s */
    CHECK_STR_EQ(hget(id, "attempts"), "2");
    check_log(id, 2, 503);
    TEST_PASS("a 503 is retried after the schedule's delay with the same webhook-id");
}

static void test_retry_after(void)
{
    const char *names[] = {"ra", "radate"};
    const long long at_least[] = {2900, 1900}; /* Retry-After 3 s vs. the schedule's 1 s */
    for (int i = 0; i < 2; i++) {
        char id[128], path[32];
        newest(names[i], 0, id, sizeof(id));
        snprintf(path, sizeof(path), "/%s", names[i]);
        WAIT_FOR(status_is(id, "delivered"), 20000);
        CHECK_INT_EQ(seen_count(path), 2);
        const seen_t *a = seen_get(path, 0), *b = seen_get(path, 1);
        CHECK_STR_EQ(b->id, a->id);
        if (b->at - a->at < at_least[i])
            fprintf(stderr, "%s: retried after %lld ms\n", path, b->at - a->at);
        CHECK(b->at - a->at >= at_least[i]);
        check_log(id, 2, i == 0 ? 503 : 429);
    }
    TEST_PASS("Retry-After (seconds on 503, an HTTP-date on 429) holds the retry back");
}

static void test_gone(char *second, size_t size)
{
    char id[128];
    newest("gone", 0, id, sizeof(id));
    WAIT_FOR(status_is(id, "disabled"), 20000);
    CHECK_STR_EQ(hget(id, "last_status"), "410");
    redisReply *r = redisCommand(rc, "GET " NAMES_KEY_WH_DISABLED "t-gone:wh-gone");
    CHECK(r && r->type == REDIS_REPLY_STRING);
    freeReplyObject(r);
    event("gone", "task-gone-2");
    newest("gone", 0, second, size);
    CHECK(strcmp(second, id) != 0);
    WAIT_FOR(status_is(second, "disabled"), 20000);
    CHECK_CONTAINS(hget(second, "last_error"), "disabled");
    CHECK_STR_EQ(hget(second, "attempts"), "0");
    CHECK_INT_EQ(seen_count("/gone"), 1);
    TEST_PASS("a 410 disables the endpoint: the next delivery to it is not sent");
}

static void test_exhausted(char *id, size_t size)
{
    newest("fail", 0, id, size);
    WAIT_FOR(status_is(id, "failed"), 20000);
    CHECK_INT_EQ(seen_count("/fail"), 3);
    CHECK_STR_EQ(hget(id, "attempts"), "3");
    CHECK_STR_EQ(hget(id, "last_status"), "500");
    CHECK_CONTAINS(hget(id, "last_error"), "HTTP 500: nope, try later");
    CHECK_STR_EQ(hget(id, "next_ms"), "");
    check_log(id, 3, 500);
    redisReply *r = redisCommand(rc, "ZSCORE " NAMES_KEY_WH_DUE " %s", id);
    CHECK(r && r->type == REDIS_REPLY_NIL); /* nothing more scheduled */
    freeReplyObject(r);
    for (int i = 0; i < 3; i++)
        check_signed(seen_get("/fail", i), "fail");
    TEST_PASS("after the schedule's 3 attempts the delivery is failed and kept");
}

static void test_down(void)
{
    char id[128];
    event("down", "task-down");
    newest("down", 0, id, sizeof(id));
    WAIT_FOR(strcmp(hget(id, "attempts"), "0") != 0, 20000);
    CHECK(hget(id, "last_error")[0] != '\0');
    CHECK_STR_EQ(hget(id, "last_status"), "");
    CHECK(status_is(id, "pending"));
    struct MHD_Daemon *d = receiver_start(dport);
    WAIT_FOR(status_is(id, "delivered"), 20000);
    CHECK_INT_EQ(seen_count("/down"), 1);
    CHECK_STR_EQ(seen_get("/down", 0)->id, id);
    MHD_stop_daemon(d);
    TEST_PASS("a receiver that is down gets the delivery once it is up again");
}

static void test_api(const char *fail_id)
{
    reply_t r;
    api(0, "/v1/webhooks/deliveries", NULL, &r);
    CHECK_INT_EQ(r.status, 401);
    CHECK_CONTAINS(r.body, "missing credentials");
    api(0, "/v1/webhooks/deliveries", "nobody", &r);
    CHECK_INT_EQ(r.status, 401);

    cJSON *j = api_json(0, "/v1/webhooks/deliveries", "fail", 200);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "deliveries");
    CHECK_INT_EQ(cJSON_GetArraySize(list), 1);
    const cJSON *d = cJSON_GetArrayItem(list, 0);
    CHECK_STR_EQ(jstr(d, "id"), fail_id);
    CHECK_STR_EQ(jstr(d, "webhook"), "wh-fail");
    CHECK_STR_EQ(jstr(d, "event"), "task.completed");
    CHECK_STR_EQ(jstr(d, "task"), "task-fail");
    CHECK_STR_EQ(jstr(d, "status"), "failed");
    CHECK_INT_EQ(jnum(d, "attempts"), 3);
    CHECK_INT_EQ(jnum(d, "last_status"), 500);
    CHECK_CONTAINS(jstr(d, "last_error"), "HTTP 500");
    CHECK(jnum(d, "created_ms") > 1.6e12);
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(d, "next_ms")));
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(d, "log")), 3);
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "next_cursor")));
    CHECK(!cJSON_GetObjectItemCaseSensitive(d, "body"));
    cJSON_Delete(j);

    j = api_json(0, "/v1/webhooks/deliveries", "sig", 200);
    list = cJSON_GetObjectItemCaseSensitive(j, "deliveries");
    CHECK_INT_EQ(cJSON_GetArraySize(list), 1);
    CHECK(strcmp(jstr(cJSON_GetArrayItem(list, 0), "id"), fail_id) != 0);
    cJSON_Delete(j);
    TEST_PASS("GET /v1/webhooks/deliveries shows attempts, status, last_error and the log of "
              "the caller's tenant only; 401 without credentials");

    static const struct {
        const char *query;
        int n;
    } filters[] = {{"?status=failed", 1},   {"?status=delivered", 0}, {"?task=task-fail", 1},
                   {"?task=task-other", 0}, {"?limit=1", 1},          {"?limit=200", 1}};
    for (size_t i = 0; i < sizeof(filters) / sizeof(filters[0]); i++) {
        char path[128];
        snprintf(path, sizeof(path), "/v1/webhooks/deliveries%s", filters[i].query);
        j = api_json(0, path, "fail", 200);
        CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "deliveries")),
                     filters[i].n);
        cJSON_Delete(j);
    }
    static const char *const bad[] = {"?status=lost", "?limit=0",         "?limit=201",
                                      "?limit=x",     "?cursor=nonsense", "?cursor=12.a%2Fb"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char path[128];
        snprintf(path, sizeof(path), "/v1/webhooks/deliveries%s", bad[i]);
        cJSON_Delete(api_json(0, path, "fail", 400));
    }
    char path[256];
    snprintf(path, sizeof(path), "/v1/webhooks/deliveries/%s/redeliver", fail_id);
    cJSON *e = api_json(1, path, "sig", 404); /* another tenant's id: as if missing */
    CHECK_STR_EQ(jstr(e, "error"), "no such delivery");
    cJSON_Delete(e);
    cJSON_Delete(api_json(1, "/v1/webhooks/deliveries/msg_nope_1/redeliver", "sig", 404));
    cJSON_Delete(api_json(1, "/v1/webhooks/deliveries/..%2Fx/redeliver", "sig", 404));
    cJSON_Delete(api_json(0, path, "fail", 405));
    cJSON_Delete(api_json(1, "/v1/webhooks/deliveries", "fail", 405));
    api(1, path, NULL, &r);
    CHECK_INT_EQ(r.status, 401);
    TEST_PASS("filters by status and task, bad parameters are 400, another tenant's or an "
              "unknown delivery is 404");

    /* Paging, newest first: 5 deliveries, 2 a page. */
    for (int i = 0; i < 5; i++) {
        char task[32];
        snprintf(task, sizeof(task), "task-page-%d", i);
        event("page", task);
    }
    char cursor[160] = "", ids[5][128];
    int got = 0;
    double last_created = 1e300;
    for (int page = 0; page < 4; page++) {
        snprintf(path, sizeof(path), "/v1/webhooks/deliveries?limit=2%s%s",
                 cursor[0] ? "&cursor=" : "", cursor);
        j = api_json(0, path, "page", 200);
        list = cJSON_GetObjectItemCaseSensitive(j, "deliveries");
        const cJSON *it;
        cJSON_ArrayForEach(it, list)
        {
            CHECK(got < 5);
            snprintf(ids[got], sizeof(ids[0]), "%s", jstr(it, "id"));
            for (int k = 0; k < got; k++)
                CHECK(strcmp(ids[k], ids[got]) != 0);
            got++;
            CHECK(jnum(it, "created_ms") <= last_created);
            last_created = jnum(it, "created_ms");
        }
        const char *next = jstr(j, "next_cursor");
        CHECK_INT_EQ(cJSON_GetArraySize(list), next ? 2 : 1);
        snprintf(cursor, sizeof(cursor), "%s", next ? next : "");
        cJSON_Delete(j);
        if (!next)
            break;
    }
    CHECK_INT_EQ(got, 5);
    CHECK(cursor[0] == '\0');
    TEST_PASS("paging with limit and cursor lists every delivery once, newest first");
}

static void test_redeliver(const char *gone_second)
{
    char id[128], path[256];
    newest("sig", 0, id, sizeof(id));
    snprintf(path, sizeof(path), "/v1/webhooks/deliveries/%s/redeliver", id);
    cJSON *j = api_json(1, path, "sig", 202);
    CHECK_STR_EQ(jstr(j, "id"), id);
    CHECK_STR_EQ(jstr(j, "status"), "pending");
    cJSON_Delete(j);
    WAIT_FOR(seen_count("/sig") == 2 && status_is(id, "delivered"), 20000);
    const seen_t *a = seen_get("/sig", 0), *b = seen_get("/sig", 1);
    CHECK_STR_EQ(b->id, id);
    CHECK_STR_EQ(b->body, a->body);
    check_signed(b, "sig");
    CHECK_STR_EQ(hget(id, "attempts"), "2");
    TEST_PASS("a redelivery sends the same webhook-id and body again");

    snprintf(path, sizeof(path), "/v1/webhooks/deliveries/%s/redeliver", gone_second);
    cJSON_Delete(api_json(1, path, "gone", 202));
    WAIT_FOR(status_is(gone_second, "delivered"), 20000);
    CHECK_INT_EQ(seen_count("/gone"), 2);
    CHECK_STR_EQ(seen_get("/gone", 1)->id, gone_second);
    redisReply *r = redisCommand(rc, "EXISTS " NAMES_KEY_WH_DISABLED "t-gone:wh-gone");
    CHECK_INT_EQ(r->integer, 0);
    freeReplyObject(r);
    TEST_PASS("redelivering to a disabled endpoint re-enables it");
}

/* The value of one sample line of /metrics text ("name{labels} value"), or -1. */
static double sample(const char *text, const char *series)
{
    char want[200];
    snprintf(want, sizeof(want), "\n%s ", series);
    const char *p = strstr(text, want);
    return p ? strtod(p + strlen(want), NULL) : -1;
}

static void test_metrics(void)
{
    static reply_t r;
    api(0, "/metrics", NULL, &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_INT_EQ(fx_promtool_check(r.body), 0);
    /* This replica has, by now, delivered (sig, ...), scheduled a retry (r503), exhausted a
     * schedule (fail) and been told 410 (gone). */
    const char *outcomes[] = {"delivered", "retry", "failed", "disabled"};
    for (size_t i = 0; i < 4; i++) {
        char series[100];
        snprintf(series, sizeof(series), "mcpq_webhook_attempts_total{outcome=\"%s\"}",
                 outcomes[i]);
        double v = sample(r.body, series);
        if (v < 1)
            fprintf(stderr, "%s = %g\n", series, v);
        CHECK(v >= 1);
    }
    CHECK(sample(r.body, "mcpq_webhook_attempts_total{outcome=\"retry\"}") >= 2);
    CHECK(sample(r.body, "mcpq_webhook_delivery_seconds_sum{outcome=\"delivered\"}") > 0);
    CHECK(sample(r.body, "mcpq_webhook_delivery_seconds_count{outcome=\"retry\"}") >= 2);
    TEST_PASS("/metrics counts webhook attempts by outcome (delivered, retry, failed, disabled)");
}

static pid_t test_restart(pid_t ing, const char *cfg)
{
    char id[128];
    event("restart", "task-restart");
    newest("restart", 0, id, sizeof(id));
    WAIT_FOR(strcmp(hget(id, "attempts"), "1") == 0, 20000); /* 503, Retry-After: 4 */
    CHECK(status_is(id, "pending"));
    CHECK(kill(ing, SIGKILL) == 0);
    CHECK(fx_wait_exit(ing, 10000) >= 0);
    long long killed = mono_ms();
    CHECK_INT_EQ(seen_count("/restart"), 1);
    pid_t next = spawn_ingress("wh-1", cfg, 1);
    WAIT_FOR(status_is(id, "delivered"), 30000);
    CHECK_INT_EQ(seen_count("/restart"), 2);
    const seen_t *b = seen_get("/restart", 1);
    CHECK_STR_EQ(b->id, id);
    CHECK(b->at > killed);
    check_signed(b, "restart");
    CHECK_STR_EQ(hget(id, "attempts"), "2");
    TEST_PASS("an ingress killed during a retry schedule: a new one completes the delivery");
    return next;
}

static pid_t test_handback(pid_t ing, const char *cfg)
{
    char id[128];
    atomic_store(&slow_hold, 1);
    event("slow", "task-slow");
    newest("slow", 0, id, sizeof(id));
    WAIT_FOR(seen_count("/slow") == 1, 20000);
    CHECK_INT_EQ(fx_stop_pid(ing, 10000), 0); /* SIGTERM; the receiver has not answered */
    CHECK(status_is(id, "pending"));
    CHECK_STR_EQ(hget(id, "claim"), "");
    CHECK_STR_EQ(hget(id, "attempts"), "0");
    redisReply *t = redisCommand(rc, "TIME"),
               *due = redisCommand(rc, "ZSCORE " NAMES_KEY_WH_DUE " %s", id);
    CHECK(due && due->type == REDIS_REPLY_STRING);
    CHECK(atoll(due->str) <= atoll(t->element[0]->str) * 1000 + 1000); /* due now, not in 60 s */
    freeReplyObject(t);
    freeReplyObject(due);
    atomic_store(&slow_hold, 0);
    pid_t next = spawn_ingress("wh-2", cfg, 1);
    WAIT_FOR(status_is(id, "delivered"), 20000);
    CHECK_INT_EQ(seen_count("/slow"), 2);
    CHECK_STR_EQ(seen_get("/slow", 1)->id, id);
    TEST_PASS("an ingress stopped while a receiver is slow hands the attempt back; another "
              "ingress sends it at once");
    return next;
}

static void test_private(const char *cfg)
{
    /* A config naming a loopback webhook url literally is refused at start-up. */
    CHECK(nlogs < 5);
    const char *strict[] = {"MCPQ_WEBHOOK_ALLOW_PRIVATE=0", NULL};
    char text[4096];
    CHECK_INT_EQ(fx_ingress_exit(&fx, "wh-strict", cfg, strict, text, sizeof(text), logs[nlogs],
                                 sizeof(logs[0])),
                 2);
    nlogs++;
    CHECK_CONTAINS(text, "$.tenants[0].webhooks[0].url: host 127.0.0.1 is a loopback address");
    TEST_PASS("MCPQ_WEBHOOK_ALLOW_PRIVATE=0: a loopback webhook url in the config is refused at "
              "start-up, naming its JSON path");

    /* A host name that resolves to loopback is refused when connecting. */
    char cfg2[300], doc[512], secret[80];
    snprintf(cfg2, sizeof(cfg2), "%s/private.json", fx.dir);
    secret_of(99, secret, sizeof(secret));
    snprintf(
        doc, sizeof(doc),
        "{\"tenants\":[{\"id\":\"t-priv\",\"api_keys\":[{\"id\":\"k\",\"key\":"
        "\"wh-key-priv\",\"scopes\":[\"tasks:all\"]}],\"webhooks\":[{\"id\":\"wh-priv\",\"url\":"
        "\"http://localhost:%d/priv\",\"secret\":\"%s\",\"events\":[\"task.completed\"]}]}]}",
        rport, secret);
    fx_write_file(cfg2, doc, 0600);
    pid_t ing = spawn_ingress("wh-priv", cfg2, 0);
    redisReply *r;
    WAIT_FOR((r = redisCommand(rc, "HEXISTS " NAMES_KEY_REGISTRY " tenant:t-priv")) &&
                 (r->integer == 1 || (freeReplyObject(r), 0)),
             20000);
    freeReplyObject(r);
    char err[256], id[128];
    CHECK_INT_EQ(whq_event(kv, "t-priv", "task.completed", "task-priv", "{\"TaskId\":\"p\"}", err,
                           sizeof(err)),
                 1);
    newest("priv", 0, id, sizeof(id));
    WAIT_FOR(status_is(id, "failed"), 20000);
    CHECK_STR_EQ(hget(id, "attempts"), "3");
    const char *why = hget(id, "last_error");
    CHECK_CONTAINS(why, "refused");
    CHECK_CONTAINS(why, "loopback");
    CHECK_INT_EQ(seen_count("/priv"), 0);
    cJSON *j = api_json(0, "/v1/webhooks/deliveries", "priv", 200);
    CHECK_CONTAINS(jstr(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "deliveries"), 0),
                        "last_error"),
                   "refused");
    cJSON_Delete(j);
    CHECK_INT_EQ(fx_stop_pid(ing, 10000), 0);
    TEST_PASS("MCPQ_WEBHOOK_ALLOW_PRIVATE=0: a host resolving to loopback is refused when "
              "connecting, with a clear last_error");
}

static void test_logs(void)
{
    for (int i = 0; i < nlogs; i++) {
        FILE *f = fopen(logs[i], "r");
        CHECK(f != NULL);
        static char text[4 << 20];
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        text[n] = '\0';
        fclose(f);
        CHECK(n > 0);
        CHECK(strstr(text, "whsec_") == NULL);
        CHECK(strstr(text, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") == NULL);
        CHECK(strstr(text, "wh-key-") == NULL);
        CHECK(strstr(text, "v1,") == NULL);
        pthread_mutex_lock(&mu);
        for (int k = 0; k < nseen; k++)
            CHECK(!seen[k].sig[0] || strstr(text, seen[k].sig + 3) == NULL);
        pthread_mutex_unlock(&mu);
    }
    TEST_PASS("no secret, API key or signature in any ingress log");
}

int main(void)
{
    char err[256], cfg[300], gone_second[128], fail_id[128];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 1) < 0)
        return 1;
    mcpq_settings_t set = {.redis_url = fx.redis_url};
    kv_target_t *kvt = kv_target_new(&set, err, sizeof(err));
    CHECK(kvt != NULL);
    rc = kv_connect(kvt, 5000, err, sizeof(err));
    CHECK(rc != NULL);
    kv = kv_pool_new(kvt, 5000, 2);
    rport = fx_free_port();
    do
        dport = fx_free_port();
    while (dport == rport);
    struct MHD_Daemon *recv = receiver_start(rport);
    snprintf(cfg, sizeof(cfg), "%s/webhooks.json", fx.dir);
    write_config(cfg);
    pid_t ing = spawn_ingress("wh-0", cfg, 1);
    redisReply *r;
    WAIT_FOR((r = redisCommand(rc, "HEXISTS " NAMES_KEY_REGISTRY " tenant:t-page")) &&
                 (r->integer == 1 || (freeReplyObject(r), 0)),
             20000);
    freeReplyObject(r);

    /* These run side by side; each is then checked on its own. */
    const char *firsts[] = {"sig", "r503", "ra", "radate", "gone", "fail", "rot", "rotx"};
    for (size_t i = 0; i < sizeof(firsts) / sizeof(firsts[0]); i++) {
        char task[64];
        snprintf(task, sizeof(task), "task-%s", firsts[i]);
        event(firsts[i], task);
    }
    test_signed();
    test_rotation();
    test_retry();
    test_retry_after();
    test_gone(gone_second, sizeof(gone_second));
    test_exhausted(fail_id, sizeof(fail_id));
    test_down();
    test_api(fail_id);
    test_redeliver(gone_second);
    test_metrics();
    WAIT_FOR((r = redisCommand(rc, "ZCARD " NAMES_KEY_WH_DUE)) &&
                 (r->integer == 0 || (freeReplyObject(r), 0)),
             20000);
    freeReplyObject(r);
    ing = test_restart(ing, cfg);
    ing = test_handback(ing, cfg);
    CHECK_INT_EQ(fx_stop_pid(ing, 10000), 0);
    test_private(cfg);
    test_logs();

    MHD_stop_daemon(recv);
    for (int i = 0; i < nseen; i++)
        free(seen[i].body);
    kv_pool_free(kv);
    kv_target_free(kvt);
    redisFree(rc);
    fx_stop(&fx);
    curl_global_cleanup();
    return 0;
}
