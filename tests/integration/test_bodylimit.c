/*
 * How much request body the ingress reads, and for whom (docs/api.md "Limits on what a client may
 * send", "Security decisions"), over raw TCP against a real stack: redis-server, devbroker and
 * three ingresses (A: admin API on; B: admin API off; C: admin on, MCPQ_MAX_BODY_MEMORY_BYTES
 * of 1 MiB). Requests whose headers prove nothing are refused from their headers alone:
 *   - a 1 MiB PUT /admin/v1/config without (or with a wrong) admin token gets 413 at A and at
 *     B before a byte of its body is sent;
 *   - a 200 KiB POST /mcp without credentials gets 413 before its body is sent; sent chunked,
 *     it is cut at MCPQ_PREAUTH_BODY_BYTES and answered 413; a small one still gets 401;
 * while authenticated ones keep their limits:
 *   - a 900 KiB POST /mcp with an API key and a 200 KiB one signed by a known app work;
 *   - a config PUT of more than 1 MiB with the admin token works;
 * and all bodies together stay under MCPQ_MAX_BODY_MEMORY_BYTES (C): while one 900 KiB body is
 * in flight a second gets 503 (-32603, Retry-After) from its headers, a small call still works,
 * and once the first is answered the second fits again.
 */
#include "check.h"
#include "fixture.h"
#include "sig.h"
#include "util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TOKEN "bodylimit-admin-token-0123456789"
#define KEY "bodylimit-key"
#define APP "bodylimit-app"
#define APP_SECRET "bodylimit-app-secret-0123456789abcdef"

static fx_stack_t fx;
static int port_a, port_b, port_c;

/* ---- raw HTTP ----------------------------------------------------------------------------- */

typedef struct answer {
    int status; /* 0: none within the wait */
    char text[16384];
} answer_t;

static int conn_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_INT_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

/* Writes all of p; a peer that answered and closed early makes this stop quietly. */
static void send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k <= 0)
            return;
        c += k;
        n -= (size_t)k;
    }
}

/* Reads the answer until the server closes (requests say Connection: close) or wait_ms pass
 * without it; closes fd. */
static void read_answer(int fd, int wait_ms, answer_t *a)
{
    size_t len = 0;
    long long until = fx_now_ms() + wait_ms;
    a->status = 0;
    a->text[0] = '\0';
    for (;;) {
        long long left = until - fx_now_ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        char buf[65536];
        ssize_t k = recv(fd, buf, sizeof(buf), 0);
        if (k <= 0)
            break;
        size_t keep = sizeof(a->text) - 1 - len;
        memcpy(a->text + len, buf, (size_t)k < keep ? (size_t)k : keep);
        len += (size_t)k < keep ? (size_t)k : keep;
        a->text[len] = '\0';
    }
    close(fd);
    if (strncmp(a->text, "HTTP/1.", 7) == 0)
        a->status = atoi(a->text + 9);
}

/* The head of a request with Content-Length len (or chunked when len < 0) and extra headers
 * (each "Name: value\r\n", may be ""). */
static char *head_of(const char *method, const char *path, const char *extra, long long len)
{
    char *h = NULL, cl[64];
    if (len >= 0)
        snprintf(cl, sizeof(cl), "Content-Length: %lld\r\n", len);
    else
        snprintf(cl, sizeof(cl), "Transfer-Encoding: chunked\r\n");
    CHECK(asprintf(&h,
                   "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   "Accept: application/json, text/event-stream\r\nConnection: close\r\n%s%s\r\n",
                   method, path, extra, cl) > 0);
    return h;
}

/* Sends the head only (the body announced, never sent) and reads what comes within 5 s. */
static void head_only(int port, const char *method, const char *path, const char *extra,
                      long long len, answer_t *a)
{
    char *h = head_of(method, path, extra, len);
    int fd = conn_open(port);
    send_all(fd, h, strlen(h));
    free(h);
    read_answer(fd, 5000, a);
}

/* Sends a whole request (chunked in 16 KiB chunks when chunked) and reads its answer. */
static void whole(int port, const char *method, const char *path, const char *extra,
                  const char *body, int chunked, answer_t *a)
{
    size_t n = strlen(body);
    char *h = head_of(method, path, extra, chunked ? -1 : (long long)n);
    int fd = conn_open(port);
    send_all(fd, h, strlen(h));
    free(h);
    if (!chunked) {
        send_all(fd, body, n);
    } else {
        for (size_t off = 0; off < n; off += 16384) {
            size_t k = n - off < 16384 ? n - off : 16384;
            char sz[32];
            snprintf(sz, sizeof(sz), "%zx\r\n", k);
            send_all(fd, sz, strlen(sz));
            send_all(fd, body + off, k);
            send_all(fd, "\r\n", 2);
        }
        send_all(fd, "0\r\n\r\n", 5);
    }
    read_answer(fd, 20000, a);
}

/* A ping whose params carry pad bytes: a valid JSON-RPC request of about that size. */
static char *ping_of(size_t pad)
{
    char *b = malloc(pad + 128);
    CHECK(b != NULL);
    int n = snprintf(b, 128,
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"pad\":\"");
    memset(b + n, 'x', pad);
    memcpy(b + n + pad, "\"}}", 4);
    return b;
}

#define EXPECT_ANSWER(a, want)                                                                     \
    do {                                                                                           \
        if ((a)->status != (want)) {                                                               \
            fprintf(stderr, "%s:%d: want HTTP %d, got %d: %.300s\n", __FILE__, __LINE__, (want),   \
                    (a)->status, (a)->text);                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* ---- the checks --------------------------------------------------------------------------- */

static void unauthenticated_admin(void)
{
    answer_t a;
    head_only(port_b, "PUT", "/admin/v1/config", "", 1 << 20, &a);
    EXPECT_ANSWER(&a, 413);
    CHECK_CONTAINS(a.text, "larger than 65536 bytes");
    head_only(port_a, "PUT", "/admin/v1/config", "", 1 << 20, &a);
    EXPECT_ANSWER(&a, 413);
    head_only(port_a, "PUT", "/admin/v1/config", "Authorization: Bearer not-the-token\r\n", 1 << 20,
              &a);
    EXPECT_ANSWER(&a, 413);
    head_only(port_a, "PUT", "/admin/v1/config", "Authorization: Bearer " KEY "\r\n", 1 << 20, &a);
    EXPECT_ANSWER(&a, 413); /* a tenant's key proves nothing on /admin */
    TEST_PASS("a 1 MiB config PUT without the admin token gets 413 from its headers (admin off "
              "and on)");
}

static void unauthenticated_mcp(void)
{
    answer_t a;
    head_only(port_a, "POST", "/mcp", "", 200 * 1024, &a);
    EXPECT_ANSWER(&a, 413);
    head_only(port_a, "POST", "/mcp", "Authorization: Bearer wrong-key\r\n", 200 * 1024, &a);
    EXPECT_ANSWER(&a, 413);
    char *body = ping_of(200 * 1024);
    whole(port_a, "POST", "/mcp", "", body, 1, &a);
    EXPECT_ANSWER(&a, 413);
    CHECK_CONTAINS(a.text, "-32600");
    free(body);
    whole(port_a, "POST", "/mcp", "", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 0, &a);
    EXPECT_ANSWER(&a, 401);
    TEST_PASS("a 200 KiB POST /mcp without credentials gets 413 (announced: unread; chunked: cut "
              "at 64 KiB); a small one still 401");
}

static void authenticated_mcp(void)
{
    answer_t a;
    char *body = ping_of(900 * 1024);
    whole(port_a, "POST", "/mcp", "Authorization: Bearer " KEY "\r\n", body, 0, &a);
    EXPECT_ANSWER(&a, 200);
    CHECK_CONTAINS(a.text, "\"result\":{}");
    whole(port_a, "POST", "/mcp", "X-Api-Key: " KEY "\r\n", body, 1, &a);
    EXPECT_ANSWER(&a, 200);
    free(body);

    body = ping_of(200 * 1024);
    char sh[4][200], hdrs[900];
    fx_sign_headers(APP, APP_SECRET, "/mcp", body, sh);
    snprintf(hdrs, sizeof(hdrs), "%s\r\n%s\r\n%s\r\n%s\r\n", sh[0], sh[1], sh[2], sh[3]);
    whole(port_a, "POST", "/mcp", hdrs, body, 0, &a);
    EXPECT_ANSWER(&a, 200);
    CHECK_CONTAINS(a.text, "\"result\":{}");
    free(body);
    TEST_PASS("a 900 KiB POST /mcp with an API key and a 200 KiB one signed by a known app work");
}

static void admin_config_put(void)
{
    size_t pad = (size_t)1300 * 1024;
    char *doc = malloc(pad + 1024);
    CHECK(doc != NULL);
    int n = snprintf(doc, 1024,
                     "{\"tenants\": [{\"id\": \"big\"}], \"servers\": [{\"tenant\": \"big\", "
                     "\"name\": \"default\"}], \"tools\": [{\"tenant\": \"big\", \"server\": "
                     "\"default\", \"name\": \"large\", \"versions\": [{\"version\": \"1\", "
                     "\"inputSchema\": {\"type\": \"object\"}, \"executor\": {\"type\": "
                     "\"builtin\", \"name\": \"echo\"}, \"description\": \"");
    memset(doc + n, 'd', pad);
    memcpy(doc + n + pad, "\"}]}]}", 7);
    answer_t a;
    whole(port_a, "PUT", "/admin/v1/config", "Authorization: Bearer " TOKEN "\r\n", doc, 0, &a);
    EXPECT_ANSWER(&a, 200);
    CHECK_CONTAINS(a.text, "\"created\":");
    free(doc);
    TEST_PASS("a 1.3 MiB config PUT with the admin token is applied");
}

static void memory_cap(void)
{
    /* One 900 KiB body in flight at C (cap 1 MiB): its head and a first piece, no more. */
    char *body = ping_of(900 * 1024);
    size_t n = strlen(body);
    char *h = head_of("POST", "/mcp", "Authorization: Bearer " KEY "\r\n", (long long)n);
    int first = conn_open(port_c);
    send_all(first, h, strlen(h));
    send_all(first, body, 1000);
    fx_sleep_ms(500);

    answer_t a;
    head_only(port_c, "POST", "/mcp", "Authorization: Bearer " KEY "\r\n", (long long)n, &a);
    EXPECT_ANSWER(&a, 503);
    CHECK_CONTAINS(a.text, "-32603");
    CHECK_CONTAINS(a.text, "MCPQ_MAX_BODY_MEMORY_BYTES");
    CHECK(strcasestr(a.text, "\r\nRetry-After: 1\r\n") != NULL);
    whole(port_c, "POST", "/mcp", "Authorization: Bearer " KEY "\r\n",
          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 0, &a);
    EXPECT_ANSWER(&a, 200);
    TEST_PASS("while a 900 KiB body is in flight under a 1 MiB cap, a second gets 503 with "
              "-32603 and Retry-After; a small call works");

    send_all(first, body + 1000, n - 1000);
    read_answer(first, 20000, &a);
    EXPECT_ANSWER(&a, 200);
    whole(port_c, "POST", "/mcp", "Authorization: Bearer " KEY "\r\n", body, 0, &a);
    EXPECT_ANSWER(&a, 200);
    free(h);
    free(body);
    TEST_PASS("once the first body is answered its memory is released: the next one fits");
}

static void write_config(const char *path)
{
    fx_write_file(path,
                  "{\"tenants\": [{\"id\": \"t1\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" KEY
                  "\"}], \"apps\": [{\"app_id\": \"" APP "\", \"secret\": \"" APP_SECRET "\"}]}],"
                  " \"servers\": [{\"tenant\": \"t1\", \"name\": \"default\"}],"
                  " \"tools\": [{\"tenant\": \"t1\", \"server\": \"default\", \"name\": \"echo\","
                  " \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"},"
                  " \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}\n",
                  0600);
}

int main(void)
{
    if (fx_start(&fx, 2) < 0)
        return 1;
    char cfg[300];
    snprintf(cfg, sizeof(cfg), "%s/bodylimit.json", fx.dir);
    write_config(cfg);
    port_a = fx_free_port();
    do
        port_b = fx_free_port();
    while (port_b == port_a);
    do
        port_c = fx_free_port();
    while (port_c == port_a || port_c == port_b);
    const char *env_a[] = {"MCPQ_ADMIN_TOKEN=" TOKEN, NULL};
    const char *env_c[] = {"MCPQ_ADMIN_TOKEN=" TOKEN, "MCPQ_MAX_BODY_MEMORY_BYTES=1048576", NULL};
    pid_t a = fx_spawn_ingress(&fx, "ingress-a", port_a, cfg, env_a, NULL, 0);
    pid_t b = fx_spawn_ingress(&fx, "ingress-b", port_b, cfg, NULL, NULL, 0);
    pid_t c = fx_spawn_ingress(&fx, "ingress-c", port_c, cfg, env_c, NULL, 0);
    CHECK(a > 0 && b > 0 && c > 0);

    unauthenticated_admin();
    unauthenticated_mcp();
    authenticated_mcp();
    admin_config_put();
    memory_cap();

    CHECK_INT_EQ(fx_stop_pid(a, 10000), 0);
    CHECK_INT_EQ(fx_stop_pid(b, 10000), 0);
    CHECK_INT_EQ(fx_stop_pid(c, 10000), 0);
    TEST_PASS("every ingress exits with 0");
    fx_stop(&fx);
    return 0;
}
