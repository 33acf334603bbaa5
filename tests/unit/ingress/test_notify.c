/* Unit tests of ingress/mcp/era.c (mirrored header values, results reshaped for the client's
 * era) and ingress/core/notify.c (the notifications built from reply-stream entries). */
#include "check.h"
#include "era.h"
#include "err.h"
#include "notify.h"

#include <cjson/cJSON.h>
#include <string.h>

static void test_hdr_decode(void)
{
    char out[64];
    CHECK_INT_EQ(ing_era_hdr_decode("get_weather", out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "get_weather");
    CHECK_INT_EQ(ing_era_hdr_decode("with space\tand tab", out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "with space\tand tab");
    /* the examples of the 2026-07-28 transport page */
    CHECK_INT_EQ(ing_era_hdr_decode("=?base64?SGVsbG8sIOS4lueVjA==?=", out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "Hello, \xe4\xb8\x96\xe7\x95\x8c");
    CHECK_INT_EQ(ing_era_hdr_decode("=?base64?IHBhZGRlZCA=?=", out, sizeof(out)), 0);
    CHECK_STR_EQ(out, " padded ");
    CHECK_INT_EQ(ing_era_hdr_decode("=?base64?bGluZTEKbGluZTI=?=", out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "line1\nline2");
    CHECK_INT_EQ(ing_era_hdr_decode("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "=?base64?literal?=");
    /* refused: raw control or non-ASCII bytes, broken base64, a NUL inside, too long */
    CHECK_INT_EQ(ing_era_hdr_decode("a\x01", out, sizeof(out)), MCPQ_EINVAL);
    CHECK_INT_EQ(ing_era_hdr_decode("caf\xc3\xa9", out, sizeof(out)), MCPQ_EINVAL);
    CHECK_INT_EQ(ing_era_hdr_decode("=?base64?abc?=", out, sizeof(out)), MCPQ_EINVAL);
    CHECK_INT_EQ(ing_era_hdr_decode("=?base64?a$==?=", out, sizeof(out)), MCPQ_EINVAL);
    CHECK_INT_EQ(ing_era_hdr_decode("=?base64?AA==?=", out, sizeof(out)), MCPQ_EINVAL);
    CHECK_INT_EQ(ing_era_hdr_decode("0123456789", out, 8), MCPQ_EINVAL);
    TEST_PASS("mirrored header values: plain and =?base64?...?=");
}

/* Regression: padding alone (`=?base64?====?=`) made the decoded length negative and wrote a
 * NUL below the buffer at an offset the sender chose. Every malformed padding is refused and
 * nothing outside the buffer is touched. */
static void test_hdr_decode_padding(void)
{
    static const char *const bad[] = {
        "=?base64?====?=",     "=?base64?========?=", "=?base64?============?=",
        "=?base64?=?=",        "=?base64?==?=",       "=?base64?A===?=",
        "=?base64?QQ=?=",      "=?base64?QQ===?=",    "=?base64?QUJD====?=",
        "=?base64?QQ==QQ==?=", "=?base64?Q=Q=?=",     "=?base64?QQ?=", /* unpadded */
        "=?base64?QR==?=",     "=?base64?QUI?=",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct {
            char lo[32], out[16], hi[32];
        } g;
        memset(&g, 'G', sizeof(g));
        CHECK_INT_EQ(ing_era_hdr_decode(bad[i], g.out, sizeof(g.out)), MCPQ_EINVAL);
        for (size_t k = 0; k < sizeof(g.lo); k++)
            CHECK(g.lo[k] == 'G' && g.hi[k] == 'G');
    }
    /* Exactly full: 12 decoded bytes need 13 with the NUL. */
    char out[13];
    CHECK_INT_EQ(ing_era_hdr_decode("=?base64?MDEyMzQ1Njc4OWFi?=", out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "0123456789ab");
    CHECK_INT_EQ(ing_era_hdr_decode("=?base64?MDEyMzQ1Njc4OWFi?=", out, 12), MCPQ_EINVAL);
    TEST_PASS("mirrored header values: malformed base64 padding refused, no write outside");
}

static void test_levels(void)
{
    CHECK_INT_EQ(ing_notify_level_index("debug"), 0);
    CHECK_INT_EQ(ing_notify_level_index("warning"), 3);
    CHECK_INT_EQ(ing_notify_level_index("emergency"), 7);
    CHECK_INT_EQ(ing_notify_level_index("warn"), -1);
    CHECK_INT_EQ(ing_notify_level_index(NULL), -1);
    TEST_PASS("logging levels");
}

static void test_progress(void)
{
    const char *d = "{\"progress\":2,\"total\":3,\"message\":\"step 2\"}";
    char *n = ing_notify_progress("\"tok-7\"", d, strlen(d));
    CHECK_STR_EQ(n,
                 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
                 "\"progressToken\":\"tok-7\",\"progress\":2,\"total\":3,\"message\":\"step 2\"}}");
    free(n);
    /* a numeric token 0 is a token; total and message are optional */
    d = "{\"progress\":0.5}";
    n = ing_notify_progress("0", d, strlen(d));
    CHECK_STR_EQ(n, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
                    "\"progressToken\":0,\"progress\":0.5}}");
    free(n);
    d = "{\"total\":3}";
    CHECK(ing_notify_progress("1", d, strlen(d)) == NULL);
    CHECK(ing_notify_progress("1", "{", 1) == NULL);
    TEST_PASS("notifications/progress");
}

static void test_log(void)
{
    const char *d = "{\"level\":\"warning\",\"data\":\"disk almost full\"}";
    char *n = ing_notify_log(d, strlen(d), ing_notify_level_index("info"), "report");
    CHECK_STR_EQ(n, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{"
                    "\"level\":\"warning\",\"logger\":\"report\",\"data\":\"disk almost full\"}}");
    free(n);
    /* below the threshold, no threshold, unknown level, no data: nothing */
    CHECK(ing_notify_log(d, strlen(d), ing_notify_level_index("error"), "report") == NULL);
    CHECK(ing_notify_log(d, strlen(d), -1, "report") == NULL);
    const char *bad = "{\"level\":\"loud\",\"data\":\"x\"}";
    CHECK(ing_notify_log(bad, strlen(bad), 0, NULL) == NULL);
    const char *nodata = "{\"level\":\"info\"}";
    CHECK(ing_notify_log(nodata, strlen(nodata), 0, NULL) == NULL);
    /* structured data passes through */
    const char *obj = "{\"level\":\"debug\",\"data\":{\"rows\":3}}";
    n = ing_notify_log(obj, strlen(obj), 0, NULL);
    CHECK_CONTAINS(n, "\"data\":{\"rows\":3}");
    free(n);
    TEST_PASS("notifications/message with level filtering");
}

/* The reshaped result of json for a client of version, rendered. */
static char *shaped(const char *version, const char *json)
{
    cJSON *r = cJSON_Parse(json);
    CHECK(r != NULL);
    ing_call_shape_fn fn = ing_era_result_shaper(version);
    if (fn)
        fn(r);
    char *out = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return out;
}

/* What an upstream of a newer era sends, for a client of each era
 * (docs/protocol.md, "Upstreams of another version"). */
static void test_result_shaper(void)
{
    const char *call = "{\"content\":[{\"type\":\"text\",\"text\":\"hi\"},"
                       "{\"type\":\"resource_link\",\"uri\":\"era://info\",\"name\":\"info\","
                       "\"description\":\"what it speaks\",\"mimeType\":\"text/plain\","
                       "\"annotations\":{\"priority\":1}}],"
                       "\"structuredContent\":{\"a\":1},\"resultType\":\"complete\"}";
    CHECK(ing_era_result_shaper(NULL) == NULL);
    /* an upstream's serverInfo never reaches the client; a 2026-07-28 one gets mcpq's */
    char *out =
        shaped("2026-07-28", "{\"content\":[],\"_meta\":{\"io.modelcontextprotocol/serverInfo\":"
                             "{\"name\":\"up\",\"version\":\"1\"},\"k\":1}}");
    CHECK_CONTAINS(out, "\"resultType\":\"complete\"");
    CHECK_CONTAINS(out, "\"k\":1");
    CHECK_CONTAINS(out, "{\"name\":\"mcpq\"");
    CHECK(strstr(out, "\"up\"") == NULL);
    cJSON_free(out);
    out = shaped("2025-11-25", "{\"content\":[],\"_meta\":{\"io.modelcontextprotocol/serverInfo\":"
                               "{\"name\":\"up\",\"version\":\"1\"}}}");
    CHECK_STR_EQ(out, "{\"content\":[]}");
    cJSON_free(out);
    out = shaped("2025-11-25", call);
    CHECK_STR_EQ(out, "{\"content\":[{\"type\":\"text\",\"text\":\"hi\"},"
                      "{\"type\":\"resource_link\",\"uri\":\"era://info\",\"name\":\"info\","
                      "\"description\":\"what it speaks\",\"mimeType\":\"text/plain\","
                      "\"annotations\":{\"priority\":1}}],\"structuredContent\":{\"a\":1}}");
    cJSON_free(out);
    out = shaped("2025-03-26", call);
    CHECK_STR_EQ(out, "{\"content\":[{\"type\":\"text\",\"text\":\"hi\"},"
                      "{\"type\":\"text\",\"text\":\"era://info (info: what it speaks)\","
                      "\"annotations\":{\"priority\":1}}],\"structuredContent\":{\"a\":1}}");
    cJSON_free(out);
    /* a read of 2026-07-28 (ttlMs, cacheScope) for a 2025-06-18 client */
    out =
        shaped("2025-06-18", "{\"contents\":[{\"uri\":\"a://b\",\"text\":\"x\"}],"
                             "\"ttlMs\":5,\"cacheScope\":\"public\",\"resultType\":\"complete\"}");
    CHECK_STR_EQ(out, "{\"contents\":[{\"uri\":\"a://b\",\"text\":\"x\"}]}");
    cJSON_free(out);
    /* a prompt message carrying a link, without name or description */
    out = shaped("2025-03-26", "{\"messages\":[{\"role\":\"user\",\"content\":"
                               "{\"type\":\"resource_link\",\"uri\":\"file:///x\"}}]}");
    CHECK_STR_EQ(out, "{\"messages\":[{\"role\":\"user\",\"content\":"
                      "{\"type\":\"text\",\"text\":\"file:///x\"}}]}");
    cJSON_free(out);
    /* shapes that are not what an MCP result looks like pass untouched */
    out = shaped("2025-03-26", "{\"content\":\"x\",\"messages\":[1,{\"content\":[]}]}");
    CHECK_STR_EQ(out, "{\"content\":\"x\",\"messages\":[1,{\"content\":[]}]}");
    cJSON_free(out);
    TEST_PASS("results reshaped for the client's era");
}

int main(void)
{
    test_result_shaper();
    test_hdr_decode();
    test_hdr_decode_padding();
    test_levels();
    test_progress();
    test_log();
    return 0;
}
