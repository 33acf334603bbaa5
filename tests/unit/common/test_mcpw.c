/*
 * test_mcpwire.c - common/mcpw.c: SSE framing, finding the response by id in JSON and
 * SSE bodies, progress notifications on the way, and the era decisions (server/discover,
 * the legacy initialize answer).
 */
#include "check.h"
#include "err.h"
#include "names.h"
#include "mcpw.h"

#include <stdlib.h>
#include <string.h>

typedef struct events {
    int n;
    char ev[8][32];
    char data[8][256];
} events_t;

static int collect(const char *event, const char *data, size_t len, void *arg)
{
    events_t *e = arg;
    CHECK(strlen(data) == len);
    if (e->n < 8) {
        snprintf(e->ev[e->n], sizeof(e->ev[0]), "%s", event);
        snprintf(e->data[e->n], sizeof(e->data[0]), "%s", data);
    }
    e->n++;
    return 0;
}

static events_t sse(const char *body)
{
    events_t e = {0};
    CHECK_INT_EQ(mcpw_sse_each(body, strlen(body), collect, &e), e.n);
    return e;
}

static void test_sse(void)
{
    events_t e = sse("event: message\ndata: {\"a\":1}\n\n");
    CHECK_INT_EQ(e.n, 1);
    CHECK_STR_EQ(e.ev[0], "message");
    CHECK_STR_EQ(e.data[0], "{\"a\":1}");
    /* CRLF and CR line ends, comments, default event type, multi-line data, no space */
    e = sse(": keepalive\r\n\r\ndata:x\r\ndata: y\r\n\r\nevent: ping\rdata: z\r\r");
    CHECK_INT_EQ(e.n, 2);
    CHECK_STR_EQ(e.ev[0], "message");
    CHECK_STR_EQ(e.data[0], "x\ny");
    CHECK_STR_EQ(e.ev[1], "ping");
    CHECK_STR_EQ(e.data[1], "z");
    /* id/retry fields ignored; an event still open at the end counts; empty events don't */
    e = sse("id: 7\nretry: 10\n\nevent: message\ndata: last");
    CHECK_INT_EQ(e.n, 1);
    CHECK_STR_EQ(e.data[0], "last");
    e = sse("");
    CHECK_INT_EQ(e.n, 0);
    TEST_PASS("SSE framing: line ends, comments, fields, multi-line data, open last event");
}

/* The same bodies fed in pieces of every size: a line, a \r\n or an event split anywhere
 * gives the same events as the whole body. */
static void test_sse_incremental(void)
{
    static const char *const bodies[] = {
        "event: message\ndata: {\"a\":1}\n\n",
        ": keepalive\r\n\r\ndata:x\r\ndata: y\r\n\r\nevent: ping\rdata: z\r\r",
        "id: 7\nretry: 10\n\nevent: message\ndata: last",
    };
    for (size_t b = 0; b < sizeof(bodies) / sizeof(bodies[0]); b++) {
        const char *body = bodies[b];
        size_t len = strlen(body);
        events_t whole = sse(body);
        for (size_t step = 1; step <= len; step++) {
            events_t e = {0};
            mcpw_sse_t p;
            mcpw_sse_init(&p, 64);
            for (size_t off = 0; off < len; off += step)
                CHECK_INT_EQ(mcpw_sse_feed(&p, body + off, off + step <= len ? step : len - off,
                                           collect, &e),
                             0);
            CHECK_INT_EQ(mcpw_sse_finish(&p, collect, &e), 0);
            mcpw_sse_cleanup(&p);
            CHECK_INT_EQ(e.n, whole.n);
            for (int i = 0; i < e.n; i++) {
                CHECK_STR_EQ(e.ev[i], whole.ev[i]);
                CHECK_STR_EQ(e.data[i], whole.data[i]);
            }
        }
    }
    /* bounded: an event's data or a line past max is refused, not buffered */
    events_t e = {0};
    mcpw_sse_t p;
    mcpw_sse_init(&p, 8);
    CHECK_INT_EQ(mcpw_sse_feed(&p, "data: 12345678\n\n", 16, collect, &e), 0);
    CHECK_INT_EQ(e.n, 1);
    CHECK_INT_EQ(mcpw_sse_feed(&p, "data: 123456789\n", 16, collect, &e), MCPQ_ETOOBIG);
    mcpw_sse_cleanup(&p);
    mcpw_sse_init(&p, 8);
    char big[64];
    memset(big, 'x', sizeof(big));
    CHECK_INT_EQ(mcpw_sse_feed(&p, ": ", 2, collect, &e), 0);
    CHECK_INT_EQ(mcpw_sse_feed(&p, big, sizeof(big), collect, &e), MCPQ_ETOOBIG);
    mcpw_sse_cleanup(&p);
    TEST_PASS("SSE read as it arrives: any split gives the same events; bounded lines and data");
}

static int seen_note;
static void count_note(const cJSON *note, void *arg)
{
    (void)note;
    (void)arg;
    seen_note++;
}

/* The reader hands each notification over at once and stops at the response. */
static void test_reader(void)
{
    const char *a = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":"
                    "\"notifications/progress\",\"params\":{\"progress\":1}}\n\n";
    const char *b = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n\n"
                    "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n";
    mcpw_reader_t rd;
    mcpw_reader_init(&rd, 4, 1024, count_note, NULL);
    seen_note = 0;
    CHECK_INT_EQ(mcpw_reader_feed(&rd, a, 20), 0);
    CHECK_INT_EQ(seen_note, 0);
    CHECK_INT_EQ(mcpw_reader_feed(&rd, a + 20, strlen(a) - 20), 0);
    CHECK_INT_EQ(seen_note, 1); /* before the response */
    CHECK_INT_EQ(mcpw_reader_feed(&rd, b, strlen(b)), 1);
    CHECK_INT_EQ(seen_note, 1); /* nothing after the response is read */
    cJSON *r = mcpw_reader_take(&rd);
    CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(r, "result")));
    cJSON_Delete(r);
    mcpw_reader_cleanup(&rd);
    /* a stream that ends without the response */
    mcpw_reader_init(&rd, 9, 1024, NULL, NULL);
    CHECK_INT_EQ(mcpw_reader_feed(&rd, a, strlen(a)), 0);
    CHECK(mcpw_reader_take(&rd) == NULL);
    mcpw_reader_cleanup(&rd);
    TEST_PASS("response reader: notifications as they arrive, stops at the response by id");
}

static char seen_req[256];
static void keep_request(const cJSON *req, void *arg)
{
    (void)arg;
    char *s = cJSON_PrintUnformatted(req);
    snprintf(seen_req, sizeof(seen_req), "%s", s);
    cJSON_free(s);
}

/* A request of the server on the call's stream (elicitation, ...) goes to the request
 * callback, never to note; without one it is skipped as before. The capabilities mcpq
 * declares at initialize name elicitation (form, url), sampling and roots. */
static void test_reader_request(void)
{
    const char *a = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"e1\",\"method\":"
                    "\"elicitation/create\",\"params\":{\"message\":\"name?\"}}\n\n"
                    "data: {\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"n\"}\n\n";
    mcpw_reader_t rd;
    mcpw_reader_init(&rd, 4, 1024, count_note, NULL);
    mcpw_reader_on_request(&rd, keep_request);
    seen_note = 0;
    seen_req[0] = '\0';
    CHECK_INT_EQ(mcpw_reader_feed(&rd, a, strlen(a)), 0);
    CHECK_STR_EQ(seen_req, "{\"jsonrpc\":\"2.0\",\"id\":\"e1\",\"method\":\"elicitation/"
                           "create\",\"params\":{\"message\":\"name?\"}}");
    CHECK_INT_EQ(seen_note, 1); /* the null id is a notification's */
    mcpw_reader_cleanup(&rd);
    cJSON *p = mcpw_initialize_params();
    char *s = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(p, "capabilities"));
    CHECK_STR_EQ(s, "{\"elicitation\":{\"form\":{},\"url\":{}},\"sampling\":{},\"roots\":{}}");
    cJSON_free(s);
    cJSON_Delete(p);
    TEST_PASS("server requests on a call's stream reach the request callback; capabilities "
              "declared at initialize");
}

static int notes;
static void on_note(const cJSON *note, void *arg)
{
    (void)arg;
    CHECK(cJSON_GetObjectItemCaseSensitive(note, "method") != NULL);
    notes++;
}

static void test_response(void)
{
    const char *json = "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"content\":[]}}";
    cJSON *r = mcpw_response("application/json", json, strlen(json), 5, NULL, NULL);
    CHECK(r != NULL);
    cJSON_Delete(r);
    CHECK(mcpw_response("application/json", json, strlen(json), 6, NULL, NULL) == NULL);
    r = mcpw_response(NULL, json, strlen(json), 5, NULL, NULL); /* no type: JSON */
    CHECK(r != NULL);
    cJSON_Delete(r);
    CHECK(mcpw_response("application/json", "not json", 8, 5, NULL, NULL) == NULL);
    CHECK(mcpw_response("application/json", "", 0, 5, NULL, NULL) == NULL);

    const char *stream =
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
        "\"params\":{\"progress\":1}}\n\n"
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"sampling/x\"}\n\n"
        "event: other\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}\n\n"
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32602,"
        "\"message\":\"m\"}}\n\n";
    notes = 0;
    r = mcpw_response("text/event-stream; charset=utf-8", stream, strlen(stream), 9, on_note, NULL);
    CHECK(r != NULL);
    CHECK_INT_EQ(
        (int)cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "error"), "code")
            ->valuedouble,
        -32602);
    CHECK_INT_EQ(notes, 1);
    cJSON_Delete(r);
    /* a server request with our id is not a response */
    CHECK(mcpw_response("text/event-stream", stream, strlen(stream), 3, NULL, NULL) == NULL);
    /* a batch */
    const char *batch = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}},"
                        "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"x\":1}}]";
    r = mcpw_response("application/json", batch, strlen(batch), 2, NULL, NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "result"), "x"));
    cJSON_Delete(r);
    TEST_PASS("the response by id: JSON, batch, SSE with notifications and server requests");
}

static void test_eras(void)
{
    cJSON *ok =
        cJSON_Parse("{\"id\":1,\"result\":{\"supportedVersions\":[\"" NAMES_PROTO_LATEST "\","
                    "\"" NAMES_PROTO_MODERN "\"]}}");
    cJSON *old =
        cJSON_Parse("{\"id\":1,\"result\":{\"supportedVersions\":[\"" NAMES_PROTO_LATEST "\"]}}");
    cJSON *bare = cJSON_Parse("{\"id\":1,\"result\":{}}");
    cJSON *err = cJSON_Parse("{\"id\":1,\"error\":{\"code\":-32601,\"message\":\"no\"}}");
    CHECK_INT_EQ(mcpw_discover_modern(200, ok), 1);
    CHECK_INT_EQ(mcpw_discover_modern(200, bare), 1);
    CHECK_INT_EQ(mcpw_discover_modern(200, old), 0);
    CHECK_INT_EQ(mcpw_discover_modern(200, err), 0);
    CHECK_INT_EQ(mcpw_discover_modern(400, ok), 0);
    CHECK_INT_EQ(mcpw_discover_modern(200, NULL), 0);
    cJSON_Delete(ok), cJSON_Delete(old), cJSON_Delete(bare), cJSON_Delete(err);

    cJSON *i1 =
        cJSON_Parse("{\"id\":1,\"result\":{\"protocolVersion\":\"" NAMES_PROTO_2025_06_18 "\"}}");
    cJSON *i2 = cJSON_Parse("{\"id\":1,\"result\":{\"protocolVersion\":\"2099-01-01\"}}");
    cJSON *i3 = cJSON_Parse("{\"id\":1,\"error\":{\"code\":-32602,\"message\":\"v\"}}");
    CHECK_STR_EQ(mcpw_legacy_version(i1), NAMES_PROTO_2025_06_18);
    CHECK(mcpw_legacy_version(i2) == NULL);
    CHECK(mcpw_legacy_version(i3) == NULL);
    CHECK(mcpw_legacy_version(NULL) == NULL);
    cJSON_Delete(i1), cJSON_Delete(i2), cJSON_Delete(i3);
    TEST_PASS("era decisions: discover result → 2026-07-28, else legacy; initialize versions");
}

static void test_headers(void)
{
    CHECK(mcpw_header_reserved("Mcp-Session-Id"));
    CHECK(mcpw_header_reserved("content-type"));
    CHECK(mcpw_header_reserved("MCP-PROTOCOL-VERSION"));
    CHECK(!mcpw_header_reserved("Authorization"));
    char sid[16] = "old";
    const char l1[] = "Content-Type: application/json\r\n";
    CHECK_INT_EQ(mcpw_session_header(l1, sizeof(l1) - 1, sid, sizeof(sid)), 0);
    CHECK_STR_EQ(sid, "old");
    const char l2[] = "mcp-session-id: \tabc-123 \r\n";
    CHECK_INT_EQ(mcpw_session_header(l2, sizeof(l2) - 1, sid, sizeof(sid)), 1);
    CHECK_STR_EQ(sid, "abc-123");
    const char l3[] = "Mcp-Session-Id: 0123456789abcdefXYZ\r\n"; /* longer than sid */
    CHECK_INT_EQ(mcpw_session_header(l3, sizeof(l3) - 1, sid, sizeof(sid)), 1);
    CHECK_STR_EQ(sid, "");
    TEST_PASS("reserved MCP header names; Mcp-Session-Id read from a raw header line");
}

static void test_request(void)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "name", "echo");
    cJSON *r = mcpw_request(3, "tools/call", p);
    char *s = cJSON_PrintUnformatted(r);
    CHECK_STR_EQ(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
                    "\"name\":\"echo\"}}");
    cJSON_free(s);
    cJSON_Delete(r);
    r = mcpw_request(-1, "notifications/initialized", NULL);
    s = cJSON_PrintUnformatted(r);
    CHECK_STR_EQ(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    cJSON_free(s);
    cJSON_Delete(r);
    TEST_PASS("requests and notifications built");
}

int main(void)
{
    test_request();
    test_headers();
    test_sse();
    test_sse_incremental();
    test_reader();
    test_reader_request();
    test_response();
    test_eras();
    return 0;
}
