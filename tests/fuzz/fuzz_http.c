/*
 * fuzz_http.c - libFuzzer driver for whole requests: method, path, every header and the body
 * go through the ingress as a client sends them, over a connection libmicrohttpd parses
 * itself (a socketpair handed to the real daemon with MHD_add_connection), into routing, the
 * front door (API keys, HMAC signing, the admin token, rate limits), the MCP dispatcher of
 * every era, header decoders, batches and the parking of calls in the pending table. Redis
 * is the in-process stand-in of fakeredis.h (its running-task fixture makes tasks/result park
 * and end); Kafka is a fake producer here whose "worker" answers every job at once through
 * the reply stream, as a real worker would; the registry is built in-process.
 *
 * Input layout: byte 0 picks what the driver adds (bits 0-1: no credential, tenant t's API
 * key, tenant u's key as X-Api-Key, the admin token; bit 2: Accept of JSON and SSE; bit 3:
 * Content-Type application/json); then "METHOD PATH\n", header lines ("Name: value\n") up to
 * an empty line, and the body. Without a newline the rest is a POST /mcp body. Host,
 * Connection: close and Content-Length (unless the input names its own framing) are added.
 *
 * Checked for every input: the answer, if any, is an HTTP/1.1 status line; no 500; a JSON
 * answer parses as JSON; once the connection is gone no call is left waiting in the pending
 * table (a call parked twice, or a batch that never ends, shows up here or as a libFuzzer
 * timeout). Before the first input and every 256: a normal tools/call is answered, /metrics
 * serves, and the stand-in's running task is seen by its owner and by no other key.
 *
 * Besides API-key tenants t and u, tenants o and p take OAuth tokens and introspect opaque
 * ones (below), so the choice of the one tenant that may introspect at an endpoint
 * (ing_registry_introspector) is reached with opaque Bearer tokens.
 */
#include "fakeredis.h"
#include "names.h"
#include "fuzz.h"
#include "server.h"
#include "ctx.h"
#include "mq.h"
#include "listen.h"
#include "log.h"
#include "peer.h"
#include "auth.h"
#include "mcp.h"
#include "toolcall.h"
#include "files.h"
#include "oauth.h"
#include "registry.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define READ_DEADLINE_MS 500 /* an answer that has not ended by then (a listen stream) is cut */
/* The health check's answer may take longer on a loaded machine: its failure must mean
 * something, not a slow scheduler. */
#define HEALTH_DEADLINE_MS 10000

static ing_ctx_t ctx;
static mcpq_settings_t set;
static long long runs;

/* ---- the fake Kafka producer (the only two functions the ingress library calls) ---- */

int mq_producer_up(const mq_producer_t *p)
{
    (void)p;
    return 1;
}

/* Answers a sync job at once through its reply stream (a progress entry, then the result),
 * as a worker would; task jobs never get here (the stand-in refuses the task scripts). */
int mq_producer_send(mq_producer_t *p, const char *topic, const char *job_id, const char *key,
                     const void *value, size_t len, const char *traceparent, const char *tracestate,
                     void *opaque)
{
    (void)p, (void)topic, (void)job_id, (void)key, (void)traceparent, (void)tracestate;
    cJSON *env = cJSON_ParseWithLength(value, len);
    const char *reply = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env, "reply_to"));
    const char *job = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env, "job_id"));
    if (reply && job) {
        const char *progress[] = {"job",  job,
                                  "kind", "progress",
                                  "data", "{\"progress\":1,\"total\":2,\"message\":\"half\"}"};
        const char *log[] = {"job", job,    "kind",
                             "log", "data", "{\"level\":\"warning\",\"message\":\"careful\"}"};
        const char *result[] = {"job",
                                job,
                                "kind",
                                "result",
                                "data",
                                "{\"status\":\"ok\",\"result\":{\"content\":[{\"type\":\"text\","
                                "\"text\":\"ok\"}],\"isError\":false}}"};
        fr_xadd(reply, progress, 6);
        fr_xadd(reply, log, 6);
        fr_xadd(reply, result, 6);
    }
    cJSON_Delete(env);
    ing_toolcall_delivered(opaque, 0, &ctx);
    return 0;
}

/* ---- the registry ---- */

static const char key_t_[] = "fuzz-key-t", key_u[] = "fuzz-key-u";
/* Tenant t's second key (k3), used only by the health check: a principal of the task's tenant
 * that is not its owner. */
static const char key_t2[] = "fuzz-key-t2-health";

/* Tenants o and p take OAuth tokens and introspect opaque ones, at an endpoint where nothing
 * listens (port 9 of the loopback, which oauth.h allows over http): an opaque token reaches
 * the key service only where exactly one of them serves the endpoint called (o's /mcp/solo),
 * and the refused connection answers 503 at once. Both serve "shared" (ambiguous there and at
 * /mcp and /v1, refused 401); neither serves t's "default" (no introspector, 401). */
#define OAUTH_ISSUER(T) "http://127.0.0.1:9/" T
#define OAUTH_ENDPOINT(T) "http://127.0.0.1:9/" T "/introspect"
#define OAUTH_TENANT(T)                                                                            \
    "{\"id\":\"" T "\",\"oauth\":{\"claims\":{\"tenant\":\"org\"},\"issuers\":[\""                 \
    "http://127.0.0.1:9/" T "\"],\"introspection\":{\"client_id\":\"gw\",\"client_secret\":"       \
    "\"s\",\"endpoint\":\"http://127.0.0.1:9/" T "/introspect\"}}}"

/* The key service with the issuers of tenants o and p, as the refresh thread gives them. */
static ing_oauth_t *oauth(void)
{
    static const ing_oauth_source_t src[] = {
        {.tenant = "o",
         .issuer = OAUTH_ISSUER("o"),
         .introspection_endpoint = OAUTH_ENDPOINT("o"),
         .client_id = "gw",
         .client_secret = "s"},
        {.tenant = "p",
         .issuer = OAUTH_ISSUER("p"),
         .introspection_endpoint = OAUTH_ENDPOINT("p"),
         .client_id = "gw",
         .client_secret = "s"},
    };
    ing_oauth_t *o = ing_oauth_new(&set, ctx.metrics);
    if (o)
        ing_oauth_configure(o, src, sizeof(src) / sizeof(src[0]));
    return o;
}

static ing_registry_t *registry(void)
{
    char sha_t[65], sha_t2[65], sha_u[65], tenant_t[1024], tenant_u[512];
    util_sha256_hex(key_t_, strlen(key_t_), sha_t);
    util_sha256_hex(key_t2, strlen(key_t2), sha_t2);
    util_sha256_hex(key_u, strlen(key_u), sha_u);
    snprintf(tenant_t, sizeof(tenant_t),
             "{\"id\":\"t\",\"default_server\":\"default\",\"api_keys\":[{\"id\":\"k1\","
             "\"sha256\":\"%s\"},{\"id\":\"k3\",\"sha256\":\"%s\"}],\"apps\":[{\"app_id\":"
             "\"fuzz-app\",\"secret\":\"fuzz-app-secret-0123456789abcdef0123\"}]}",
             sha_t, sha_t2);
    snprintf(tenant_u, sizeof(tenant_u),
             "{\"id\":\"u\",\"api_keys\":[{\"id\":\"k2\",\"sha256\":\"%s\","
             "\"rate_limit\":{\"per_second\":5,\"burst\":5}}]}",
             sha_u);
    const char *docs[] = {
        "tenant:t",
        tenant_t,
        "tenant:u",
        tenant_u,
        "tenant:o",
        OAUTH_TENANT("o"),
        "tenant:p",
        OAUTH_TENANT("p"),
        "server:o:solo",
        "{\"tenant\":\"o\",\"name\":\"solo\"}",
        "server:o:shared",
        "{\"tenant\":\"o\",\"name\":\"shared\"}",
        "server:p:shared",
        "{\"tenant\":\"p\",\"name\":\"shared\"}",
        "server:t:default",
        "{\"tenant\":\"t\",\"name\":\"default\"}",
        "server:t:ops",
        "{\"tenant\":\"t\",\"name\":\"ops\"}",
        "server:u:default",
        "{\"tenant\":\"u\",\"name\":\"default\"}",
        "tool:t:echo",
        "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"echo\",\"published\":\"1\","
        "\"versions\":"
        "[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{"
        "\"type\":\"string\"},\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
        "\"n\":{\"type\":\"integer\",\"x-mcp-header\":\"N\"}}},\"executor\":{\"type\":"
        "\"builtin\",\"name\":\"echo\"}}]}",
        "tool:t:task_tool",
        "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"task_tool\",\"published\":\"1\","
        "\"versions\":[{\"version\":\"1\",\"mode\":\"task\",\"executor\":{\"type\":\"builtin\","
        "\"name\":\"echo\"}}]}",
        "tool:t:fake_tool",
        "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"fake_tool\",\"published\":\"1\","
        "\"versions\":[{\"version\":\"1\",\"fake\":{\"enabled\":true,\"result\":{\"content\":[]}}}]"
        "}",
        "tool:t:opsy",
        "{\"tenant\":\"t\",\"server\":\"ops\",\"name\":\"opsy\",\"published\":\"1\",\"versions\":"
        "[{\"version\":\"1\",\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"}}]}",
        "tool:u:echo",
        "{\"tenant\":\"u\",\"server\":\"default\",\"name\":\"echo\",\"published\":\"1\","
        "\"versions\":"
        "[{\"version\":\"1\",\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"}}]}",
    };
    enum { N = sizeof(docs) / sizeof(docs[0]) };
    size_t lens[N];
    for (size_t i = 0; i < N; i++)
        lens[i] = strlen(docs[i]);
    char err[256];
    ing_registry_t *reg = ing_registry_build(docs, lens, N, 1, err, sizeof(err));
    if (!reg) {
        fprintf(stderr, "fuzz_http: registry: %s\n", err);
        abort();
    }
    return reg;
}

static void wake(void *arg)
{
    (void)arg;
}

static void init(void)
{
    static char url[128], dir[] = "/tmp/mcpq-fuzz-http-XXXXXX";
    signal(SIGPIPE, SIG_IGN);
    if (fr_start(url, sizeof(url)) < 0 || !mkdtemp(dir))
        abort();
    const char *args[] = {"fuzz-http",
                          "--redis-url",
                          url,
                          "--kafka-brokers",
                          "fake:9092",
                          "--listen",
                          "127.0.0.1:0",
                          "--files-dir",
                          dir,
                          "--admin-token",
                          "fuzz-admin-token",
                          "--log-level",
                          "error",
                          "--threads",
                          "2",
                          "--sse-keepalive-ms",
                          "100",
                          "--max-listeners",
                          "32",
                          "--public-url",
                          "http://127.0.0.1:8080",
                          "--redis-timeout-ms",
                          "1000",
                          "--auth-fail-id-per-min",
                          "0",
                          NULL};
    static char *argv[sizeof(args) / sizeof(args[0])]; /* kept: settings point into it */
    for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++)
        argv[i] = args[i] ? strdup(args[i]) : NULL; /* settings_load takes char ** */
    char err[256];
    if (settings_load(&set, SET_INGRESS, "fuzz-http", "", (int)(sizeof(argv) / sizeof(argv[0])) - 1,
                      argv, err, sizeof(err)) != 0) {
        fprintf(stderr, "fuzz_http: settings: %s\n", err);
        abort();
    }
    log_init("ingress", set.log_level);
    ctx.set = &set;
    pthread_mutex_init(&ctx.reg_lock, NULL);
    atomic_init(&ctx.redis_up, 1);
    atomic_init(&ctx.stopping, 0);
    snprintf(ctx.instance, sizeof(ctx.instance), "fuzz");
    snprintf(ctx.reply_key, sizeof(ctx.reply_key), NAMES_KEY_REPLY "fuzz");
    ctx.metrics = ing_metrics_new(100);
    ctx.kvt = kv_target_new(&set, err, sizeof(err));
    ctx.kv = kv_pool_new(ctx.kvt, (int)set.redis_timeout_ms, (int)set.redis_pool_size);
    ctx.pending = ing_pending_new(ctx.kvt, (int)set.redis_timeout_ms, ctx.reply_key,
                                  (int)set.sse_keepalive_ms);
    ctx.rl = ing_ratelimit_new(ctx.kv, NULL, set.rate_limit_lease_ms, 0);
    ctx.authfail = (ing_authfail_t){
        .rl = ing_ratelimit_new(ctx.kv, NAMES_KEY_AUTHFAIL, 1, ING_AUTHFAIL_MAX_BUCKETS),
        .addr_per_min = set.auth_fail_per_min,
        .id_per_min = set.auth_fail_id_per_min};
    ctx.trusted = ing_peer_nets_parse(set.trusted_proxies, err, sizeof(err));
    ctx.producer = (mq_producer_t *)&ctx; /* never dereferenced: the fakes above */
    ctx.files = ing_files_new(&ctx);
    ctx.listen = ing_listen_new(&ctx, wake, NULL);
    ctx.reg = registry();
    ctx.oauth = oauth();
    if (!ctx.metrics || !ctx.kv || !ctx.pending || !ctx.rl || !ctx.authfail.rl || !ctx.trusted ||
        !ctx.files || !ctx.listen || !ctx.oauth || ing_server_start(&ctx, err, sizeof(err)) < 0) {
        fprintf(stderr, "fuzz_http: start: %s\n", err);
        abort();
    }
    for (int i = 0; i < 200 && !ing_pending_healthy(ctx.pending); i++)
        usleep(10 * 1000); /* the reply reader's first XADD */
}

static void health(void);

/* ---- one exchange ---- */

typedef struct {
    char *data;
    size_t len, cap;
} buf_t;

static void add(buf_t *b, const void *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->data = realloc(b->data, b->cap);
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void adds(buf_t *b, const char *s)
{
    add(b, s, strlen(s));
}

/* Sends req over a fresh connection of the daemon from peer_addr (an IPv4 address in host
 * order: the failed-authentication limits count per address); the answer's bytes
 * (malloc'd). */
static buf_t exchange(const buf_t *req, uint32_t peer_addr, int deadline_ms)
{
    buf_t resp = {0};
    add(&resp, "", 0);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return resp;
    struct sockaddr_in peer = {
        .sin_family = AF_INET, .sin_port = htons(40000), .sin_addr.s_addr = htonl(peer_addr)};
    if (MHD_add_connection(ctx.daemon, sv[1], (struct sockaddr *)&peer, sizeof(peer)) != MHD_YES) {
        close(sv[0]);
        close(sv[1]);
        return resp;
    }
    int64_t deadline = util_mono_ms() + deadline_ms;
    size_t off = 0;
    for (;;) {
        int64_t left = deadline - util_mono_ms();
        if (left <= 0)
            break;
        struct pollfd pfd = {.fd = sv[0], .events = POLLIN | (off < req->len ? POLLOUT : 0)};
        if (poll(&pfd, 1, (int)left) <= 0)
            break;
        if ((pfd.revents & POLLOUT) && off < req->len) {
            ssize_t n = send(sv[0], req->data + off, req->len - off, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0)
                off += (size_t)n;
            else if (n < 0)
                off = req->len; /* the server closed its side: stop sending */
        }
        if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
            char chunk[16384];
            ssize_t n = recv(sv[0], chunk, sizeof(chunk), MSG_DONTWAIT);
            if (n > 0)
                add(&resp, chunk, (size_t)n);
            else if (n == 0 || !(pfd.revents & POLLIN))
                break;
        }
    }
    close(sv[0]);
    return resp;
}

static void check_answer(const buf_t *resp)
{
    if (resp->len == 0)
        return; /* closed without an answer (a request libmicrohttpd gave up on, or cut) */
    FUZZ_CHECK(resp->len >= 12 && memcmp(resp->data, "HTTP/1.", 7) == 0);
    int status = atoi(resp->data + 9);
    FUZZ_CHECK(status >= 100 && status <= 599);
    FUZZ_CHECK(status != 500);
    const char *sep = strstr(resp->data, "\r\n\r\n");
    if (!sep || !strcasestr(resp->data, "\r\nContent-Type: application/json") ||
        strcasestr(resp->data, "\r\nTransfer-Encoding: chunked") ||
        (size_t)(sep - resp->data) > resp->len)
        return;
    const char *body = sep + 4;
    size_t blen = resp->len - (size_t)(body - resp->data);
    if (blen == 0)
        return;
    cJSON *j = cJSON_ParseWithLength(body, blen);
    FUZZ_CHECK(j != NULL);
    cJSON_Delete(j);
}

/* No call may be left waiting once its connection is gone (up to 5 s for a loaded machine). */
static void check_nothing_waits(void)
{
    for (int i = 0; i < 500 && ing_pending_count(ctx.pending) > 0; i++)
        usleep(10 * 1000);
    FUZZ_CHECK(ing_pending_count(ctx.pending) == 0);
}

/* tasks/get of the stand-in's running task tk-fixture with credential cred; the answer. */
static buf_t task_get(const char *cred)
{
    static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tasks/"
                               "get\",\"params\":{\"taskId\":\"tk-fixture\"}}";
    char head[512];
    snprintf(head, sizeof(head),
             "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Type: application/json\r\n"
             "Accept: application/json\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n",
             cred, sizeof(body) - 1);
    buf_t req = {0};
    adds(&req, head);
    adds(&req, body);
    buf_t resp = exchange(&req, INADDR_LOOPBACK, HEALTH_DEADLINE_MS);
    free(req.data);
    return resp;
}

/* tasks/get of tk-fixture by who (a header line) answers with both want and also. */
static void task_expect(const char *who, const char *want, const char *also)
{
    buf_t task = task_get(who);
    if (!strstr(task.data, want) || !strstr(task.data, also))
        fprintf(stderr, "fuzz_http: tasks/get with %s got: %.*s\n", who, (int)task.len, task.data);
    FUZZ_CHECK(strstr(task.data, want) != NULL);
    FUZZ_CHECK(strstr(task.data, also) != NULL);
    free(task.data);
}

static void health(void)
{
    /* The stand-in's task fixture is alive (its owner sees it; another key of its tenant does
     * not), else every seed that parks on a task tests nothing. */
    char other[64];
    snprintf(other, sizeof(other), "X-Api-Key: %s\r\n", key_t2);
    task_expect("Authorization: Bearer fuzz-key-t\r\n", "\"id\":8,\"result\"",
                "\"taskId\":\"tk-fixture\"");
    task_expect(other, "\"id\":8,\"error\"", "Task not found");

    static const char call[] =
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer fuzz-key-t\r\n"
        "Content-Type: application/json\r\nAccept: application/json\r\nConnection: close\r\n"
        "Content-Length: 86\r\n\r\n"
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/"
        "call\",\"params\":{\"name\":\"echo\",\"arguments\":{}}}";
    buf_t req = {0};
    adds(&req, call);
    buf_t resp = exchange(&req, INADDR_LOOPBACK, HEALTH_DEADLINE_MS);
    if (!(resp.len > 12 && strncmp(resp.data, "HTTP/1.1 200", 12) == 0))
        fprintf(stderr, "fuzz_http: the health call got: %.*s\n", (int)resp.len, resp.data);
    FUZZ_CHECK(resp.len > 12 && strncmp(resp.data, "HTTP/1.1 200", 12) == 0);
    FUZZ_CHECK(strstr(resp.data, "\"id\":7,\"result\"") != NULL);
    free(req.data);
    free(resp.data);
    static const char metrics[] =
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    req = (buf_t){0};
    adds(&req, metrics);
    resp = exchange(&req, INADDR_LOOPBACK, HEALTH_DEADLINE_MS);
    FUZZ_CHECK(resp.len > 12 && strncmp(resp.data, "HTTP/1.1 200", 12) == 0);
    free(req.data);
    free(resp.data);
}

/* The request the input stands for (see the top of the file). */
static buf_t build(const uint8_t *data, size_t size)
{
    buf_t req = {0};
    unsigned flags = size ? data[0] : 0;
    const char *in = size ? (const char *)data + 1 : "";
    size_t n = size ? size - 1 : 0;
    const char *nl = memchr(in, '\n', n);
    const char *body = in;
    size_t blen = n, hlen = 0;
    const char *headers = NULL;
    if (nl) {
        add(&req, in, (size_t)(nl - in)); /* "METHOD PATH" */
        headers = nl + 1;
        const char *end = in + n, *p = headers;
        while (p < end && *p != '\n') { /* header lines until an empty one */
            const char *e = memchr(p, '\n', (size_t)(end - p));
            p = e ? e + 1 : end;
        }
        hlen = (size_t)(p - headers);
        body = p < end ? p + 1 : end;
        blen = (size_t)(end - body);
    } else {
        adds(&req, "POST /mcp");
    }
    adds(&req, " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    static const char *const creds[] = {NULL, "Authorization: Bearer fuzz-key-t\r\n",
                                        "X-Api-Key: fuzz-key-u\r\n",
                                        "Authorization: Bearer fuzz-admin-token\r\n"};
    if (creds[flags & 3])
        adds(&req, creds[flags & 3]);
    if (flags & 4)
        adds(&req, "Accept: application/json, text/event-stream\r\n");
    if (flags & 8)
        adds(&req, "Content-Type: application/json\r\n");
    int framed = 0;
    for (size_t i = 0; headers && i < hlen;) {
        const char *e = memchr(headers + i, '\n', hlen - i);
        size_t l = e ? (size_t)(e - (headers + i)) : hlen - i;
        if (l) {
            add(&req, headers + i, l);
            adds(&req, "\r\n");
            framed |= (l >= 15 && strncasecmp(headers + i, "Content-Length:", 15) == 0) ||
                      (l >= 18 && strncasecmp(headers + i, "Transfer-Encoding:", 18) == 0);
        }
        i += l + 1;
    }
    if (!framed) {
        char cl[48];
        snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", blen);
        adds(&req, cl);
    }
    adds(&req, "\r\n");
    add(&req, body, blen);
    return req;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int started;
    if (!started) {
        init();
        started = 1;
        health(); /* once before the inputs: a short replay checks the fixtures too */
    }
    if (size > (2u << 20))
        return 0;
    buf_t req = build(data, size);
    /* Every input from an address of its own (10.0.0.0/8), so that the failed-authentication
     * limit of one address does not shut the fuzzer out after twenty bad credentials. */
    buf_t resp = exchange(&req, 0x0a000000u | (uint32_t)(runs & 0xffffff), READ_DEADLINE_MS);
    check_answer(&resp);
    free(req.data);
    free(resp.data);
    check_nothing_waits();
    if (++runs % 256 == 0) {
        fr_reset(); /* sessions, nonces and the rest stay bounded */
        health();
    }
    return 0;
}
