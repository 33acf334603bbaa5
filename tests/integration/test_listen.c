/*
 * The ingress's listeners (docs/operations.md "Listen addresses and the operations port") on a real
 * stack: redis-server, mcpq-devbroker and mcpq-ingress processes. What a client and an operator
 * see: a. MCPQ_OPS_LISTEN set: /healthz, /readyz, /metrics, /console/ and /admin/v1/... are 404 on
 * the public port and 200 on the ops port; MCP (POST /mcp tools/list) works on the public port and
 * is 404 on the ops port, so is the clients' /v1 API; the ready file names both bound addresses; b.
 * MCPQ_OPS_LISTEN unset: everything on MCPQ_LISTEN as before (/healthz, /metrics, /mcp); c.
 * MCPQ_LISTEN=[::1]:port: answered over IPv6, refused over IPv4; the ready file says
 *      "[::1]:port";
 *   d. MCPQ_LISTEN=[::]:port and MCPQ_OPS_LISTEN=[::]:port (dual stack): both answer over
 *      IPv6 and over IPv4;
 *   e. an MCPQ_OPS_LISTEN that is no listen address (an IPv6 literal without brackets) stops
 *      the ingress at start-up with exit status 2 and a message naming the setting.
 * c and d need IPv6 on the loopback interface (::1); without it they are skipped with a
 * message saying so.
 */
#include "check.h"
#include "fixture.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TOKEN "listen-it-admin-token-0123456789"
#define KEY "Authorization: Bearer l-key"

static fx_stack_t fx;
static char config_path[300];

typedef struct reply {
    long status;        /* 0: no HTTP answer (refused) */
    char body[1 << 17]; /* a whole /metrics */
    size_t len;
} reply_t;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    reply_t *r = arg;
    size_t len = size * n, room = sizeof(r->body) - 1 - r->len;
    memcpy(r->body + r->len, p, len < room ? len : room);
    r->len += len < room ? len : room;
    r->body[r->len] = '\0';
    return len;
}

/* GET (body NULL) or POST of body to http://host:port/path, host "127.0.0.1" or "[::1]". */
static long http(const char *host, int port, const char *path, const char *header, const char *body,
                 reply_t *r)
{
    char url[200];
    snprintf(url, sizeof(url), "http://%s:%d%s", host, port, path);
    memset(r, 0, sizeof(*r));
    CURL *c = curl_easy_init();
    CHECK(c != NULL);
    struct curl_slist *h = NULL;
    if (header)
        h = curl_slist_append(h, header);
    if (body) {
        h = curl_slist_append(h, "Content-Type: application/json");
        h = curl_slist_append(h, "Accept: application/json, text/event-stream");
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return r->status;
}

static const char tools_list[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{}}";

/* 1 when tools/list on host:port answers 200 with the config's tool. */
static int mcp_works(const char *host, int port)
{
    reply_t r;
    return http(host, port, "/mcp", KEY, tools_list, &r) == 200 && strstr(r.body, "\"nap\"");
}

/* A TCP port free a moment ago: on [::] for IPv6 and IPv4 alike when v6, else on 127.0.0.1;
 * never `other` (two listeners of one ingress must not draw the same port). */
static int free_port(int v6, int other)
{
    for (int i = 0; i < 100; i++) {
        int port = -1;
        if (v6) {
            int fd = socket(AF_INET6, SOCK_STREAM, 0), off = 0;
            struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = in6addr_any};
            socklen_t len = sizeof(a);
            if (fd >= 0 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) == 0 &&
                bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
                getsockname(fd, (struct sockaddr *)&a, &len) == 0)
                port = ntohs(a.sin6_port);
            if (fd >= 0)
                close(fd);
        } else {
            port = fx_free_port();
        }
        if (port > 0 && port != other)
            return port;
    }
    fprintf(stderr, "no free port\n");
    exit(1);
}

/* 1 when a socket can be bound to [::1] (IPv6 on the loopback interface). */
static int have_ipv6_loopback(void)
{
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = in6addr_loopback};
    int ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Starts an ingress named name with these listen settings (NULL: unset) and the admin token. */
static pid_t ingress(const char *name, int port, const char *listen, const char *ops)
{
    char e_l[80], e_o[80];
    snprintf(e_l, sizeof(e_l), "MCPQ_LISTEN=%s", listen ? listen : "");
    snprintf(e_o, sizeof(e_o), "MCPQ_OPS_LISTEN=%s", ops ? ops : "");
    const char *env[] = {"MCPQ_ADMIN_TOKEN=" TOKEN, e_o, listen ? e_l : NULL, NULL};
    pid_t pid = fx_spawn_ingress(&fx, name, port, config_path, env, NULL, 0);
    CHECK(pid > 0);
    return pid;
}

static void test_split(void)
{
    int pub = free_port(0, 0), ops = free_port(0, pub);
    char o[64];
    snprintf(o, sizeof(o), "127.0.0.1:%d", ops);
    pid_t pid = ingress("split", pub, NULL, o);
    reply_t r;
    static const char *const ops_paths[] = {"/healthz", "/readyz", "/metrics", "/console/",
                                            "/admin/v1/tenants"};
    for (size_t i = 0; i < sizeof(ops_paths) / sizeof(ops_paths[0]); i++) {
        const char *auth =
            strncmp(ops_paths[i], "/admin", 6) == 0 ? "Authorization: Bearer " TOKEN : NULL;
        CHECK_INT_EQ(http("127.0.0.1", pub, ops_paths[i], auth, NULL, &r), 404);
        CHECK_INT_EQ(http("127.0.0.1", ops, ops_paths[i], auth, NULL, &r), 200);
    }
    CHECK_CONTAINS(r.body, "\"t\""); /* the tenant list, through the ops port */
    CHECK_INT_EQ(http("127.0.0.1", ops, "/metrics", NULL, NULL, &r), 200);
    CHECK_CONTAINS(r.body, "mcpq_");
    CHECK_INT_EQ(fx_promtool_check(r.body), 0);
    /* A POST of the admin API on the public port is refused before its body is read. */
    CHECK_INT_EQ(http("127.0.0.1", pub, "/admin/v1/tenants", "Authorization: Bearer " TOKEN,
                      "{\"id\":\"x\"}", &r),
                 404);
    CHECK(mcp_works("127.0.0.1", pub));
    CHECK_INT_EQ(http("127.0.0.1", ops, "/mcp", KEY, tools_list, &r), 404);
    CHECK_INT_EQ(http("127.0.0.1", ops, "/v1/webhooks", KEY, NULL, &r), 404);
    char ready[400], path[400], want[200];
    snprintf(path, sizeof(path), "%s/split.ready", fx.dir);
    fx_read_file(path, ready, sizeof(ready));
    snprintf(want, sizeof(want), "127.0.0.1:%d\n127.0.0.1:%d\n", pub, ops);
    CHECK_STR_EQ(ready, want);
    CHECK_INT_EQ(fx_stop_pid(pid, 10000), 0);
    TEST_PASS(
        "a: MCPQ_OPS_LISTEN set: probes, metrics, /console and /admin only on the ops port (404 on "
        "the public one); MCP only on the public port");
}

static void test_single(void)
{
    int pub = free_port(0, 0);
    pid_t pid = ingress("single", pub, NULL, NULL);
    reply_t r;
    CHECK_INT_EQ(http("127.0.0.1", pub, "/healthz", NULL, NULL, &r), 200);
    CHECK_INT_EQ(http("127.0.0.1", pub, "/readyz", NULL, NULL, &r), 200);
    CHECK_INT_EQ(http("127.0.0.1", pub, "/metrics", NULL, NULL, &r), 200);
    CHECK_INT_EQ(fx_promtool_check(r.body), 0);
    CHECK_INT_EQ(http("127.0.0.1", pub, "/console/", NULL, NULL, &r), 200);
    CHECK_CONTAINS(r.body, "<title>mcpq console</title>");
    CHECK_INT_EQ(
        http("127.0.0.1", pub, "/admin/v1/tenants", "Authorization: Bearer " TOKEN, NULL, &r), 200);
    CHECK(mcp_works("127.0.0.1", pub));
    CHECK_INT_EQ(fx_stop_pid(pid, 10000), 0);
    TEST_PASS("b: MCPQ_OPS_LISTEN unset: everything on MCPQ_LISTEN as before");
}

static void test_ipv6(void)
{
    int pub = free_port(1, 0), ops = free_port(1, pub);
    char l[64], o[64];
    reply_t r;
    snprintf(l, sizeof(l), "[::1]:%d", pub);
    pid_t pid = ingress("v6", pub, l, NULL);
    CHECK_INT_EQ(http("[::1]", pub, "/healthz", NULL, NULL, &r), 200);
    CHECK(mcp_works("[::1]", pub));
    CHECK_INT_EQ(http("127.0.0.1", pub, "/healthz", NULL, NULL, &r), 0); /* IPv6 only */
    char ready[400], path[400], want[200];
    snprintf(path, sizeof(path), "%s/v6.ready", fx.dir);
    fx_read_file(path, ready, sizeof(ready));
    snprintf(want, sizeof(want), "[::1]:%d\n", pub);
    CHECK_STR_EQ(ready, want);
    CHECK_INT_EQ(fx_stop_pid(pid, 10000), 0);
    TEST_PASS("c: MCPQ_LISTEN=[::1]:port answers over IPv6 only");

    snprintf(l, sizeof(l), "[::]:%d", pub);
    snprintf(o, sizeof(o), "[::]:%d", ops);
    pid = ingress("dual", pub, l, o);
    CHECK(mcp_works("[::1]", pub));
    CHECK(mcp_works("127.0.0.1", pub));
    CHECK_INT_EQ(http("[::1]", ops, "/readyz", NULL, NULL, &r), 200);
    CHECK_INT_EQ(http("127.0.0.1", ops, "/readyz", NULL, NULL, &r), 200);
    CHECK_INT_EQ(http("127.0.0.1", pub, "/readyz", NULL, NULL, &r), 404);
    CHECK_INT_EQ(fx_stop_pid(pid, 10000), 0);
    TEST_PASS("d: MCPQ_LISTEN=[::]:port and MCPQ_OPS_LISTEN=[::]:port answer over IPv6 and "
              "IPv4");
}

static void test_bad(void)
{
    char text[4096];
    const char *env[] = {"MCPQ_OPS_LISTEN=::1:9000", NULL};
    CHECK_INT_EQ(fx_ingress_exit(&fx, "bad-ops", config_path, env, text, sizeof(text), NULL, 0), 2);
    CHECK_CONTAINS(text, "MCPQ_OPS_LISTEN");
    TEST_PASS("e: an MCPQ_OPS_LISTEN that is no listen address stops the start with exit 2");
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CHECK_INT_EQ(fx_start(&fx, 1), 0);
    snprintf(config_path, sizeof(config_path), "%s/listen.json", fx.dir);
    fx_write_file(config_path,
                  "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": "
                  "\"l-key\"}]}], \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}], "
                  "\"tools\": [{\"tenant\": \"t\", \"server\": \"default\", \"name\": \"nap\", "
                  "\"published\": \"1\", \"versions\": [{\"version\": \"1\", \"inputSchema\": "
                  "{\"type\": \"object\"}, \"executor\": {\"type\": \"builtin\", \"name\": "
                  "\"sleep\"}}]}]}",
                  0600);
    test_split();
    test_single();
    if (have_ipv6_loopback())
        test_ipv6();
    else
        TEST_SKIP("c, d: no IPv6 on the loopback interface (binding [::1] failed; "
                  "`ip -6 addr show lo` shows no ::1): IPv6 listen addresses not tested");
    test_bad();
    fx_stop(&fx);
    curl_global_cleanup();
    return TEST_EXIT();
}
