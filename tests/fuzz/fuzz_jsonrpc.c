/*
 * fuzz_jsonrpc.c - libFuzzer driver for common/rpc.c: the input is an HTTP request body
 * as the MCP endpoint receives it.
 *
 * Runs rpc_body_check and rpc_parse on it; when it parses, classifies the message (each
 * element of a batch), renders its id with rpc_id_str and builds a result and an error
 * response for it. Checked beyond "no crash, no leak, no UB":
 *   - a refused body always has a reason; an accepted one passes rpc_body_check;
 *   - an accepted body, printed by cJSON, is accepted again;
 *   - a classification is consistent (requests have an id and a method, notifications a
 *     method and no id, responses an id, invalid messages a reason);
 *   - the rendered id fits in RPC_MAX_ID_LEN + 2 bytes and is JSON equal to the id (or
 *     null), and both responses are JSON carrying that same id.
 */
#include "fuzz.h"
#include "rpc.h"
#include "jv.h"

#include <cjson/cJSON.h>
#include <string.h>

/* What an accepted id renders to at most (quotes included), so that buffers such as the
 * ingress's id_json[300] never cut it. */
#define FUZZ_ID_BUF (RPC_MAX_ID_LEN + 3)

/* 1 when the JSON text s holds an object whose "id" equals id (null when id is NULL). */
static int response_has_id(const char *s, const cJSON *id)
{
    cJSON *r = cJSON_Parse(s);
    const cJSON *got = cJSON_GetObjectItemCaseSensitive(r, "id");
    int ok = got && (id ? jv_equal(got, id, 4) == 1 : cJSON_IsNull(got));
    cJSON_Delete(r);
    return ok;
}

static void one_message(const cJSON *item)
{
    rpc_msg_t msg;
    char idbuf[FUZZ_ID_BUF];
    rpc_classify(item, &msg);
    switch (msg.kind) {
    case RPC_REQUEST:
        FUZZ_CHECK(msg.id && msg.method && msg.method[0]);
        break;
    case RPC_NOTIFICATION:
        FUZZ_CHECK(!msg.id && msg.method && msg.method[0]);
        break;
    case RPC_RESPONSE:
        FUZZ_CHECK(msg.id && !msg.method);
        break;
    case RPC_INVALID:
        FUZZ_CHECK(msg.why && !msg.method);
        break;
    }
    FUZZ_CHECK(!msg.id || cJSON_IsString(msg.id) || cJSON_IsNumber(msg.id));
    FUZZ_CHECK(!msg.params || cJSON_IsObject(msg.params) || cJSON_IsArray(msg.params));

    /* The rendered id is what the ingress keys requests by and puts back in responses: it
     * must fit, whole, in RPC_MAX_ID_LEN + 2 bytes (cut, it would not parse). */
    rpc_id_str(msg.id, idbuf, sizeof(idbuf));
    cJSON *back = cJSON_Parse(idbuf);
    FUZZ_CHECK(back != NULL);
    FUZZ_CHECK(msg.id ? jv_equal(back, msg.id, 4) == 1 : cJSON_IsNull(back));
    cJSON_Delete(back);

    char *res = rpc_result_str(msg.id, "{\"content\":[]}");
    FUZZ_CHECK(res != NULL);
    FUZZ_CHECK(response_has_id(res, msg.id));
    free(res);

    char *err = rpc_error_str(msg.id, RPC_INVALID_REQUEST, msg.why ? msg.why : "fuzz", msg.params);
    FUZZ_CHECK(err != NULL);
    FUZZ_CHECK(response_has_id(err, msg.id));
    free(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data, *why = NULL;
    int checked = rpc_body_check(body, size, &why);
    FUZZ_CHECK(checked == 0 || why != NULL);

    why = NULL;
    cJSON *root = rpc_parse(body, size, &why);
    if (!root) {
        FUZZ_CHECK(why != NULL);
        return 0;
    }
    FUZZ_CHECK(checked == 0);

    /* What cJSON prints of an accepted body is accepted too. */
    char *printed = cJSON_PrintUnformatted(root);
    FUZZ_CHECK(printed != NULL);
    cJSON *again = rpc_parse(printed, strlen(printed), &why);
    FUZZ_CHECK(again != NULL);
    cJSON_Delete(again);
    cJSON_free(printed);

    if (cJSON_IsArray(root)) {
        for (const cJSON *item = root->child; item; item = item->next)
            one_message(item);
    } else {
        one_message(root);
    }
    cJSON_Delete(root);
    return 0;
}
