/* Tests ingress/http/req.c's request id and trace id on synthetic requests: a valid
 * X-Request-Id is kept, any other (or none) replaced by a new 32-hex id; the access log's trace
 * id is the call's, else a valid traceparent header's, else "". */
#include "check.h"
#include "req.h"

#include <stdio.h>
#include <string.h>

#define T "4bf92f3577b34da6a3ce929d0e0e4736"

/* The request id of a synthetic request whose X-Request-Id is sent (NULL: none), into out. */
static void id_of(const char *sent, char out[ING_REQ_ID_MAX + 1])
{
    ing_req_pair_t headers[] = {{"X-Request-Id", sent}, {NULL, NULL}};
    ing_req_synth_t synth = {.headers = sent ? headers : NULL};
    ing_req_t req;
    CHECK_INT_EQ(ing_req_synthetic(&req, NULL, "GET", "/x", &synth, NULL, 0), 0);
    ing_req_id_assign(&req);
    memcpy(out, req.request_id, ING_REQ_ID_MAX + 1);
    ing_req_release(&req);
}

static int hex32(const char *s)
{
    return strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32;
}

static void test_request_id(void)
{
    char got[ING_REQ_ID_MAX + 1], other[ING_REQ_ID_MAX + 1], longid[200];
    id_of("r-abc.123~!", got);
    CHECK_STR_EQ(got, "r-abc.123~!");
    memset(longid, 'z', 128);
    longid[128] = '\0';
    id_of(longid, got);
    CHECK_STR_EQ(got, longid);
    TEST_PASS("a valid X-Request-Id (up to 128 bytes) is kept as sent");

    static const char *const bad[] = {"", "has space", "tab\there", "caf\xc3\xa9", NULL};
    for (size_t i = 0; bad[i]; i++) {
        id_of(bad[i], got);
        CHECK(hex32(got));
    }
    longid[128] = 'z';
    longid[129] = '\0';
    id_of(longid, got);
    CHECK(hex32(got));
    id_of(NULL, got);
    id_of(NULL, other);
    CHECK(hex32(got) && hex32(other) && strcmp(got, other) != 0);
    TEST_PASS("an empty, spaced, non-ASCII or too long X-Request-Id, or none: a new 32-hex id");
}

static void test_trace_id(void)
{
    ing_req_pair_t headers[] = {{"traceparent", "00-" T "-00f067aa0ba902b7-01"}, {NULL, NULL}};
    ing_req_synth_t synth = {.headers = headers};
    ing_req_t req;
    CHECK_INT_EQ(ing_req_synthetic(&req, NULL, "GET", "/x", &synth, NULL, 0), 0);
    CHECK_STR_EQ(ing_req_trace_id(&req), T);
    snprintf(req.call.trace.trace_id, sizeof(req.call.trace.trace_id), "%s",
             "0af7651916cd43dd8448eb211c80319c");
    CHECK_STR_EQ(ing_req_trace_id(&req), "0af7651916cd43dd8448eb211c80319c");
    ing_req_release(&req);
    headers[0].value = "00-" T "-0000000000000000-01"; /* invalid: all-zero parent-id */
    CHECK_INT_EQ(ing_req_synthetic(&req, NULL, "GET", "/x", &synth, NULL, 0), 0);
    CHECK_STR_EQ(ing_req_trace_id(&req), "");
    ing_req_release(&req);
    TEST_PASS("the trace id: the call's, else a valid traceparent's, else empty");
}

int main(void)
{
    test_request_id();
    test_trace_id();
    return 0;
}
