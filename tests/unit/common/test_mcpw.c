/*
 * test_mcpwire.c - common/mcpw.c: SSE framing, finding the response by id in JSON and
 * SSE bodies, progress notifications on the way, and the era decisions (server/discover,
 * the legacy initialize answer).
 */
#include "check.h"
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
    test_response();
    test_eras();
    return 0;
}
