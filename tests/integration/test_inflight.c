/*
 * test_inflight.c - what the memory of waiting calls must not cost a client or an operator
 * (docs/operations.md, "Memory of
 * waiting calls"): redis-server, mcpq-devbroker, mcpq-ingress and one
 * mcpq-worker (tests/fixture.c), clients on raw sockets. Checked:
 *   - an SSE answer to an HTTP/1.0 client (no chunked encoding, so the stream passes through
 *     libmicrohttpd's response block, 256 bytes since round two) carries a 20,000-byte result
 *     whole, after its keep-alive comment;
 *   - a tools/call with a 6,000-byte header (a large token) is still answered 200, as JSON and
 *     as SSE (the 8 KiB connection pool);
 *   - a waiting call no longer holds its request body: with MCPQ_MAX_BODY_MEMORY_BYTES=1024 a
 *     second 700-byte call is answered while a first one waits (it was 503 while the first
 *     one's body counted until its answer);
 *   - after a burst of waiting calls is answered the ingress returns the freed memory to the
 *     system (MCPQ_MEMORY_TRIM_CALLS: a debug line "memory returned to the system" with
 *     calls_waiting 0 once the last calls ended), and with MCPQ_MEMORY_TRIM_CALLS=0 it never
 *     does.
 */
#include "check.h"
#include "fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define KEY "in-key"
#define BIG 20000 /* bytes of the big tool's text */
#define BURST 12  /* calls of the trim check */

static fx_stack_t fx;

static void write_config(const char *path)
{
    char cfg[4096];
    snprintf(cfg, sizeof(cfg),
             "{\"tenants\":[{\"id\":\"in\",\"api_keys\":[{\"id\":\"k\",\"key\":\"" KEY "\"}]}],"
             "\"servers\":[{\"tenant\":\"in\",\"name\":\"default\"}],"
             "\"tools\":["
             "{\"tenant\":\"in\",\"server\":\"default\",\"name\":\"big\",\"published\":\"1\","
             "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
             "\"executor\":{\"type\":\"exec\",\"argv\":[\"sh\",\"-c\","
             "\"sleep 0.6; head -c %d /dev/zero | tr -c x x\"]}}]},"
             "{\"tenant\":\"in\",\"server\":\"default\",\"name\":\"nap\",\"published\":\"1\","
             "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
             "\"executor\":{\"type\":\"builtin\",\"name\":\"sleep\"}}]}]}",
             BIG);
    fx_write_file(path, cfg, 0600);
}

/* Opens a connection to the ingress and sends one POST of body; the socket, or -1. */
static int send_post(int port, const char *http, const char *accept, const char *extra,
                     const char *body)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char *req = NULL;
    int n = asprintf(&req,
                     "POST /mcp %s\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " KEY "\r\n"
                     "Content-Type: application/json\r\nAccept: %s\r\n%sConnection: close\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     http, accept, extra, strlen(body), body);
    if (n < 0 || send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
        free(req);
        close(fd);
        return -1;
    }
    free(req);
    return fd;
}

/* Reads fd to its end (30 s at most) into a malloc'd NUL-terminated string; closes fd. */
static char *read_all(int fd)
{
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    long long until = fx_now_ms() + 30000;
    while (buf && fx_now_ms() < until) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, 1000) <= 0)
            continue;
        if (cap - len < 4096) {
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
        ssize_t r = recv(fd, buf + len, cap - len - 1, 0);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* Reads the answer on fd: it must be 200 and hold text (what names the call in a failure). */
static void expect_answer(int fd, const char *what, const char *text)
{
    CHECK(fd >= 0);
    char *resp = read_all(fd);
    CHECK(resp != NULL);
    if (strncmp(resp + 9, "200", 3) != 0)
        fprintf(stderr, "%s: %.300s\n", what, resp);
    CHECK(strncmp(resp + 9, "200", 3) == 0);
    CHECK_CONTAINS(resp, text);
    free(resp);
}

static const char *call_body(const char *tool, const char *args)
{
    static char body[256];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
             "\"arguments\":%s}}",
             tool, args);
    return body;
}

/* The longest run of 'x' in s. */
static size_t longest_x(const char *s)
{
    size_t best = 0, run = 0;
    for (; *s; s++) {
        run = *s == 'x' ? run + 1 : 0;
        if (run > best)
            best = run;
    }
    return best;
}

static void check_sse_http10(int port)
{
    int fd = send_post(port, "HTTP/1.0", "application/json, text/event-stream", "",
                       call_body("big", "{}"));
    CHECK(fd >= 0);
    char *resp = read_all(fd);
    CHECK(resp != NULL);
    CHECK(strncmp(resp, "HTTP/1.", 7) == 0 && strncmp(resp + 9, "200", 3) == 0);
    CHECK_CONTAINS(resp, "text/event-stream");
    CHECK(strstr(resp, "Transfer-Encoding: chunked") == NULL);
    CHECK_CONTAINS(resp, ": keep-alive");
    CHECK_CONTAINS(resp, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\"");
    CHECK_INT_EQ((long long)longest_x(resp), BIG);
    free(resp);
    TEST_PASS("an SSE answer to an HTTP/1.0 client carries a 20,000-byte result whole");
}

static void check_big_header(int port)
{
    char *big = malloc(6100);
    CHECK(big != NULL);
    memcpy(big, "X-Big: ", 7);
    memset(big + 7, 'h', 6000);
    memcpy(big + 6007, "\r\n", 3);
    const char *accepts[] = {"application/json", "application/json, text/event-stream"};
    for (size_t i = 0; i < 2; i++)
        expect_answer(
            send_post(port, "HTTP/1.1", accepts[i], big, call_body("nap", "{\"ms\":700}")),
            accepts[i], "slept 700 ms");
    free(big);
    TEST_PASS("a tools/call with a 6,000-byte header is answered, as JSON and as SSE");
}

/* BURST calls of nap waiting at once on port; every answer must be a result. */
static void burst(int port)
{
    int fds[BURST];
    for (int i = 0; i < BURST; i++) {
        fds[i] =
            send_post(port, "HTTP/1.1", "application/json", "", call_body("nap", "{\"ms\":1500}"));
        CHECK(fds[i] >= 0);
    }
    for (int i = 0; i < BURST; i++) {
        char *resp = read_all(fds[i]);
        CHECK(resp != NULL);
        CHECK_CONTAINS(resp, "slept 1500 ms");
        free(resp);
    }
}

static void check_body_budget(const char *cfg)
{
    char log[400], body[800], pad[601];
    int bport = fx_free_port();
    const char *env[] = {"MCPQ_MAX_BODY_MEMORY_BYTES=1024", NULL};
    pid_t ing = fx_spawn_ingress(&fx, "budget", bport, cfg, env, log, sizeof(log));
    CHECK(ing > 0);
    memset(pad, 'p', 600);
    pad[600] = '\0';
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"nap\",\"arguments\":{\"ms\":%d,\"pad\":\"%s\"}}}",
             3000, pad);
    char wlog[400];
    snprintf(wlog, sizeof(wlog), "%s/w1.log", fx.dir);
    const char *start = "\"job start\"", *nap = "\"tool\":\"nap\"";
    int started = fx_log_count(wlog, start, nap);
    int first = send_post(bport, "HTTP/1.1", "application/json", "", body);
    CHECK(first >= 0);
    long long until = fx_now_ms() + 20000; /* the worker runs it: the ingress parked it */
    while (fx_log_count(wlog, start, nap) == started && fx_now_ms() < until)
        fx_sleep_ms(20);
    CHECK_INT_EQ(fx_log_count(wlog, start, nap), started + 1);
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"nap\",\"arguments\":{\"ms\":%d,\"pad\":\"%s\"}}}",
             10, pad);
    expect_answer(send_post(bport, "HTTP/1.1", "application/json", "", body), "second call",
                  "slept 10 ms");
    expect_answer(first, "first call", "slept 3000 ms");
    CHECK_INT_EQ(fx_stop_pid(ing, 15000), 0);
    TEST_PASS("a waiting call's body no longer counts in MCPQ_MAX_BODY_MEMORY_BYTES");
}

static void check_trim(const char *cfg)
{
    char on_log[400], off_log[400];
    int on_port = fx_free_port(), off_port = fx_free_port();
    const char *on_env[] = {"MCPQ_MEMORY_TRIM_CALLS=5", "MCPQ_LOG_LEVEL=debug", NULL};
    const char *off_env[] = {"MCPQ_MEMORY_TRIM_CALLS=0", "MCPQ_LOG_LEVEL=debug", NULL};
    pid_t on = fx_spawn_ingress(&fx, "trim-on", on_port, cfg, on_env, on_log, sizeof(on_log));
    pid_t off = fx_spawn_ingress(&fx, "trim-off", off_port, cfg, off_env, off_log, sizeof(off_log));
    CHECK(on > 0 && off > 0);

    burst(on_port);
    const char *msg = "\"memory returned to the system\"";
    long long until = fx_now_ms() + 20000; /* the reader's next pass (a 1 s XREAD block) */
    while (fx_log_count(on_log, msg, "\"calls_waiting\":\"0\"") == 0 && fx_now_ms() < until)
        fx_sleep_ms(50);
    CHECK(fx_log_count(on_log, msg, "\"calls_waiting\":\"0\"") > 0);
    CHECK(fx_log_count(on_log, msg, "\"rss_kb\":\"") > 0);

    burst(off_port);
    fx_sleep_ms(1500); /* a trim would be logged within a reader pass: none may come */
    CHECK_INT_EQ(fx_log_count(off_log, msg, NULL), 0);
    CHECK_INT_EQ(fx_stop_pid(on, 15000), 0);
    CHECK_INT_EQ(fx_stop_pid(off, 15000), 0);
    TEST_PASS("freed memory goes back to the system after a burst; "
              "MCPQ_MEMORY_TRIM_CALLS=0 never trims");
}

int main(void)
{
    char cfg[300], ilog[400];
    if (fx_start(&fx, 2) < 0)
        return 1;
    snprintf(cfg, sizeof(cfg), "%s/in.json", fx.dir);
    write_config(cfg);
    int port = fx_free_port();
    const char *ienv[] = {"MCPQ_SSE_KEEPALIVE_MS=200", NULL};
    pid_t ing = fx_spawn_ingress(&fx, "ingress", port, cfg, ienv, ilog, sizeof(ilog));
    CHECK(ing > 0);
    pid_t w = fx_spawn_worker(&fx, "w1", NULL);
    CHECK(w > 0);

    check_sse_http10(port);
    check_big_header(port);
    check_body_budget(cfg);
    check_trim(cfg);

    CHECK_INT_EQ(fx_stop_pid(w, 15000), 0);
    CHECK_INT_EQ(fx_stop_pid(ing, 15000), 0);
    fx_stop(&fx);
    return 0;
}
