#include "era.h"

#include "err.h"
#include "mcpreq.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HDR_VALUE 4096
#define SENTINEL_HEAD "=?base64?"
#define SENTINEL_TAIL "?="

const cJSON *ing_era_meta(const rpc_msg_t *msg)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(msg->params, "_meta");
    return cJSON_IsObject(m) ? m : NULL;
}

int ing_era_declares_tasks_ext(const rpc_msg_t *msg)
{
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(ing_era_meta(msg), ING_META_CLIENT_CAPS);
    const cJSON *ext = cJSON_GetObjectItemCaseSensitive(caps, "extensions");
    return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(ext, ING_EXT_TASKS));
}

int ing_era_hdr_decode(const char *raw, char *out, size_t out_size)
{
    size_t n = strlen(raw);
    size_t head = sizeof(SENTINEL_HEAD) - 1, tail = sizeof(SENTINEL_TAIL) - 1;
    if (n > MAX_HDR_VALUE || out_size == 0)
        return MCPQ_EINVAL;
    if (n >= head + tail && strncmp(raw, SENTINEL_HEAD, head) == 0 &&
        strcmp(raw + n - tail, SENTINEL_TAIL) == 0) {
        /* Strict: padding required, at most two '=' and only at the end, one encoding per
         * value (util.h); room for the NUL; a NUL inside the value is refused. */
        size_t k = 0;
        if (util_b64_decode(raw + head, n - head - tail, UTIL_B64_PAD, (unsigned char *)out,
                            out_size - 1, &k) < 0 ||
            memchr(out, '\0', k))
            return MCPQ_EINVAL;
        out[k] = '\0';
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (!(c == '\t' || (c >= 0x20 && c <= 0x7e)))
            return MCPQ_EINVAL;
    }
    if (n + 1 > out_size)
        return MCPQ_EINVAL;
    memcpy(out, raw, n + 1);
    return 0;
}

int ing_era_modern_headers_check(const ing_req_t *req, const rpc_msg_t *msg,
                                 const char *header_version, char *why, size_t why_size)
{
    const char *meta_v =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ing_era_meta(msg), ING_META_VERSION));
    if (!header_version) {
        snprintf(why, why_size, "Header mismatch: MCP-Protocol-Version header is required");
        return MCPQ_EINVAL;
    }
    if (!meta_v || strcmp(meta_v, header_version) != 0) {
        snprintf(why, why_size,
                 "Header mismatch: MCP-Protocol-Version header value '%.40s' does not match "
                 "params._meta[\"" ING_META_VERSION "\"] '%.40s'",
                 header_version, meta_v ? meta_v : "(absent)");
        return MCPQ_EINVAL;
    }
    const char *m = ing_req_header(req, "Mcp-Method");
    if (!m || strcmp(m, msg->method) != 0) {
        snprintf(why, why_size,
                 "Header mismatch: Mcp-Method header value '%.80s' does not match body value "
                 "'%.80s'",
                 m ? m : "(absent)", msg->method);
        return MCPQ_EINVAL;
    }
    /* The body field Mcp-Name mirrors: the tool's or prompt's name, the resource's uri, or the
     * task's id (tasks extension). */
    int is_read = strcmp(msg->method, "resources/read") == 0;
    int is_call = strcmp(msg->method, "tools/call") == 0 ||
                  strcmp(msg->method, "prompts/get") == 0 || is_read;
    int is_task = strcmp(msg->method, "tasks/get") == 0 ||
                  strcmp(msg->method, "tasks/update") == 0 ||
                  strcmp(msg->method, "tasks/cancel") == 0;
    const char *name =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg->params, is_read   ? "uri"
                                                                           : is_call ? "name"
                                                                                     : "taskId"));
    if (is_call || (is_task && name)) {
        const char *raw = ing_req_header(req, "Mcp-Name");
        char dec[MAX_HDR_VALUE + 1];
        if (!raw || ing_era_hdr_decode(raw, dec, sizeof(dec)) < 0 || !name ||
            strcmp(dec, name) != 0) {
            snprintf(why, why_size,
                     "Header mismatch: Mcp-Name header value '%.80s' does not match body value "
                     "'%.80s'",
                     raw ? raw : "(absent)", name ? name : "(absent)");
            return MCPQ_EINVAL;
        }
    }
    return 0;
}

/* The header text an argument value must have: string as is, integer in decimal, boolean as
 * true/false. 0, or MCPQ_EINVAL for other types. */
static int expected_text(const cJSON *v, char *out, size_t out_size)
{
    if (cJSON_IsString(v)) {
        snprintf(out, out_size, "%s", v->valuestring);
        return strlen(v->valuestring) < out_size ? 0 : MCPQ_EINVAL;
    }
    if (cJSON_IsBool(v)) {
        snprintf(out, out_size, "%s", cJSON_IsTrue(v) ? "true" : "false");
        return 0;
    }
    if (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
        fabs(v->valuedouble) <= 9007199254740991.0) {
        snprintf(out, out_size, "%.0f", v->valuedouble);
        return 0;
    }
    return MCPQ_EINVAL;
}

/* Integers compare numerically ("42.0" and "42" agree). */
static int same_value(const char *hdr, const char *want, const cJSON *v)
{
    if (cJSON_IsNumber(v)) {
        char *end;
        double d = strtod(hdr, &end);
        return *hdr && *end == '\0' && d == v->valuedouble;
    }
    return strcmp(hdr, want) == 0;
}

static int check_props(const ing_req_t *req, const cJSON *schema, const cJSON *args, int depth,
                       char *why, size_t why_size)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    if (!cJSON_IsObject(props) || depth > 16)
        return 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, props)
    {
        const cJSON *v =
            cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, p->string) : NULL;
        const char *name =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "x-mcp-header"));
        if (name) {
            char hname[160];
            snprintf(hname, sizeof(hname), "Mcp-Param-%.140s", name);
            const char *raw = ing_req_header(req, hname);
            char dec[MAX_HDR_VALUE + 1], want[MAX_HDR_VALUE + 1];
            int present = v && !cJSON_IsNull(v);
            if (!present && raw) {
                snprintf(why, why_size,
                         "Header mismatch: %s header sent but arguments.%.80s is absent", hname,
                         p->string);
                return MCPQ_EINVAL;
            }
            if (present &&
                (!raw || ing_era_hdr_decode(raw, dec, sizeof(dec)) < 0 ||
                 expected_text(v, want, sizeof(want)) < 0 || !same_value(dec, want, v))) {
                snprintf(why, why_size,
                         "Header mismatch: %s header value '%.80s' does not match "
                         "arguments.%.80s",
                         hname, raw ? raw : "(absent)", p->string);
                return MCPQ_EINVAL;
            }
        }
        if (check_props(req, p, v, depth + 1, why, why_size) < 0)
            return MCPQ_EINVAL;
    }
    return 0;
}

int ing_era_param_headers_check(const ing_req_t *req, const cJSON *input_schema, const cJSON *args,
                                char *why, size_t why_size)
{
    return check_props(req, input_schema, args, 0, why, why_size);
}

/* Fields only a 2026-07-28 result has (schema.ts 2026-07-28: Result.resultType,
 * CacheableResult.ttlMs and cacheScope). */
static void drop_modern_fields(cJSON *result)
{
    cJSON_DeleteItemFromObjectCaseSensitive(result, "resultType");
    cJSON_DeleteItemFromObjectCaseSensitive(result, "ttlMs");
    cJSON_DeleteItemFromObjectCaseSensitive(result, "cacheScope");
}

/* A resource_link block rewritten in place as the text block that names it. */
static void link_as_text(cJSON *block)
{
    const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(block, "uri"));
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(block, "name"));
    const char *desc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(block, "description"));
    if (!uri)
        uri = "";
    size_t n = strlen(uri) + (name ? strlen(name) : 0) + (desc ? strlen(desc) : 0) + 8;
    char *text = malloc(n);
    if (!text)
        return; /* out of memory: the block stays as it was */
    if (name && desc)
        snprintf(text, n, "%s (%s: %s)", uri, name, desc);
    else if (name || desc)
        snprintf(text, n, "%s (%s)", uri, name ? name : desc);
    else
        snprintf(text, n, "%s", uri);
    cJSON *t = cJSON_CreateString(text);
    free(text);
    if (!t)
        return; /* out of memory: the block stays as it was */
    cJSON *annotations = cJSON_DetachItemFromObjectCaseSensitive(block, "annotations");
    cJSON *meta = cJSON_DetachItemFromObjectCaseSensitive(block, "_meta");
    while (block->child)
        cJSON_Delete(cJSON_DetachItemViaPointer(block, block->child));
    cJSON_AddStringToObject(block, "type", "text");
    cJSON_AddItemToObject(block, "text", t);
    if (annotations)
        cJSON_AddItemToObject(block, "annotations", annotations);
    if (meta)
        cJSON_AddItemToObject(block, "_meta", meta);
}

static void links_as_text(cJSON *blocks)
{
    cJSON *b;
    cJSON_ArrayForEach(b, blocks)
    {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "type"));
        if (type && strcmp(type, "resource_link") == 0)
            link_as_text(b);
    }
}

/* An upstream's serverInfo in the result's _meta (2026-07-28 upstreams send it): the client
 * talks to mcpq, not to the upstream. An _meta left empty goes too. */
static void drop_upstream_server_info(cJSON *result)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(result, "_meta");
    if (!cJSON_IsObject(meta))
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(meta, ING_META_SERVER_INFO);
    if (!meta->child)
        cJSON_DeleteItemFromObjectCaseSensitive(result, "_meta");
}

static void shape_modern(cJSON *result)
{
    drop_upstream_server_info(result);
    ing_mcpreq_modern_result(result);
}

static void shape_2025(cJSON *result)
{
    drop_modern_fields(result);
    drop_upstream_server_info(result);
}

static void shape_2025_03_26(cJSON *result)
{
    shape_2025(result);
    cJSON *content = cJSON_GetObjectItemCaseSensitive(result, "content");
    if (cJSON_IsArray(content))
        links_as_text(content);
    cJSON *messages = cJSON_GetObjectItemCaseSensitive(result, "messages");
    if (!cJSON_IsArray(messages))
        return;
    cJSON *msg;
    cJSON_ArrayForEach(msg, messages)
    {
        cJSON *c = cJSON_GetObjectItemCaseSensitive(msg, "content");
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "type"));
        if (type && strcmp(type, "resource_link") == 0)
            link_as_text(c);
    }
}

ing_call_shape_fn ing_era_result_shaper(const char *version)
{
    if (!version)
        return NULL;
    if (strcmp(version, NAMES_PROTO_MODERN) == 0)
        return shape_modern;
    if (strcmp(version, NAMES_PROTO_DEFAULT) == 0)
        return shape_2025_03_26;
    return shape_2025;
}
