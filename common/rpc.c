#include "rpc.h"

#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

/* Length of the UTF-8 sequence at p (1..4), or 0 when it is not well-formed (RFC 3629). */
static size_t utf8_seq(const unsigned char *p, size_t left)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned min;
    unsigned cp;
    if ((c & 0xE0) == 0xC0) {
        n = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n > left)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static int hex4(const unsigned char *p, size_t left, unsigned *out)
{
    unsigned v = 0;
    if (left < 4)
        return -1;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v << 4 | (unsigned)d;
    }
    *out = v;
    return 0;
}

/* The escape at p (p[0] == '\\') inside a string: its length, or 0 with *why set. JSON
 * allows only \" \\ \/ \b \f \n \r \t and \uXXXX; a \u that is a lone surrogate or U+0000 is
 * refused too: cJSON would turn the first into a wrong character and the second into the
 * end of a C string, so what was checked, logged or signed would differ from what a tool
 * gets (docs/security.md). */
static size_t escape_len(const unsigned char *p, size_t left, const char **why)
{
    unsigned hi, lo;
    if (left >= 2 && p[1] && strchr("\"\\/bfnrt", p[1]))
        return 2;
    if (left < 2 || p[1] != 'u' || hex4(p + 2, left - 2, &hi) < 0) {
        *why = "invalid escape in a JSON string";
        return 0;
    }
    if (hi == 0) {
        *why = "\\u0000 (NUL) in a JSON string is not accepted";
        return 0;
    }
    if (hi >= 0xDC00 && hi <= 0xDFFF) {
        *why = "lone low surrogate escape in a JSON string";
        return 0;
    }
    if (hi < 0xD800 || hi > 0xDBFF)
        return 6;
    if (left < 12 || p[6] != '\\' || p[7] != 'u' || hex4(p + 8, left - 8, &lo) < 0 || lo < 0xDC00 ||
        lo > 0xDFFF) {
        *why = "lone high surrogate escape in a JSON string";
        return 0;
    }
    return 12;
}

int rpc_body_check(const char *body, size_t len, const char **why)
{
    const unsigned char *p = (const unsigned char *)body;
    int in_string = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        if (c == 0) {
            *why = "NUL byte in body";
            return MCPQ_EINVAL;
        }
        if (c >= 0x80) {
            size_t n = utf8_seq(p + i, len - i);
            if (!n) {
                *why = "body is not valid UTF-8";
                return MCPQ_EINVAL;
            }
            i += n;
            continue;
        }
        if (in_string) {
            if (c < 0x20) {
                *why = "raw control character inside a string";
                return MCPQ_EINVAL;
            }
            if (c == '\\') {
                size_t n = escape_len(p + i, len - i, why);
                if (!n)
                    return MCPQ_EINVAL;
                i += n;
                continue;
            }
            if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        }
        i++;
    }
    return 0;
}

static int depth_ok(const char *body, size_t len)
{
    int depth = 0, in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char c = body[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = 0;
            continue;
        }
        if (c == '"')
            in_string = 1;
        else if (c == '{' || c == '[') {
            if (++depth > RPC_MAX_DEPTH)
                return 0;
        } else if (c == '}' || c == ']')
            depth--;
    }
    return 1;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Counts the values of the tree into *count and refuses duplicate member names in any object
 * (JSON parsers disagree on which duplicate wins, so a body that relies on one is refused
 * rather than read one way here and another way by a tool). 0, or -1 with *why set. */
static int shape_ok(const cJSON *node, size_t *count, const char **why)
{
    for (; node; node = node->next) {
        if (++*count > RPC_MAX_VALUES) {
            *why = "too many JSON values (more than " RPC_STR(RPC_MAX_VALUES) ")";
            return -1;
        }
        if (!cJSON_IsObject(node) && !cJSON_IsArray(node))
            continue;
        if (shape_ok(node->child, count, why) < 0)
            return -1;
        if (!cJSON_IsObject(node) || !node->child || !node->child->next)
            continue;
        size_t n = 0;
        for (const cJSON *c = node->child; c; c = c->next)
            n++;
        const char **names = malloc(n * sizeof(*names));
        if (!names) {
            *why = "out of memory";
            return -1;
        }
        n = 0;
        for (const cJSON *c = node->child; c; c = c->next)
            names[n++] = c->string ? c->string : "";
        qsort(names, n, sizeof(*names), cmp_names);
        int dup = 0;
        for (size_t i = 1; i < n && !dup; i++)
            dup = strcmp(names[i - 1], names[i]) == 0;
        free(names);
        if (dup) {
            *why = "duplicate member name in a JSON object";
            return -1;
        }
    }
    return 0;
}

cJSON *rpc_parse(const char *body, size_t len, const char **why)
{
    if (len == 0) {
        *why = "empty body";
        return NULL;
    }
    if (rpc_body_check(body, len, why) < 0)
        return NULL;
    if (!depth_ok(body, len)) {
        *why = "JSON nested too deeply";
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!root) {
        *why = "body is not valid JSON";
        return NULL;
    }
    /* Only whitespace may follow the value. */
    for (const char *p = end; p && p < body + len; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
            cJSON_Delete(root);
            *why = "trailing bytes after the JSON value";
            return NULL;
        }
    }
    size_t count = 0;
    if (shape_ok(root, &count, why) < 0) {
        cJSON_Delete(root);
        return NULL;
    }
    /* A scalar is JSON but not a JSON-RPC message: the caller answers -32600. */
    return root;
}

/* Length of s as a JSON string, as cJSON and rpc_id_str print it: quotes and escapes
 * included (a control character takes 6 bytes, "\u0001"). */
static size_t json_string_len(const char *s)
{
    size_t n = 2;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\' || *p == '\b' || *p == '\f' || *p == '\n' || *p == '\r' ||
            *p == '\t')
            n += 2;
        else
            n += *p < 0x20 ? 6 : 1;
    }
    return n;
}

int rpc_id_valid(const cJSON *v)
{
    if (cJSON_IsNumber(v))
        return isfinite(v->valuedouble);
    /* The limit is on the id as JSON, which is how it is kept (rpc_id_str into the ingress's
     * 300-byte buffers) and sent back: 256 bytes of control characters printed as 1538 and
     * were cut, the response no longer JSON (tests/fuzz/corpus/jsonrpc/regress-id-escapes). */
    return cJSON_IsString(v) && json_string_len(v->valuestring) <= RPC_MAX_ID_LEN + 2;
}

void rpc_classify(const cJSON *item, rpc_msg_t *msg)
{
    memset(msg, 0, sizeof(*msg));
    msg->kind = RPC_INVALID;
    if (!cJSON_IsObject(item)) {
        msg->why = "a JSON-RPC message must be an object";
        return;
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "id");
    if (rpc_id_valid(id))
        msg->id = id;
    const cJSON *jv = cJSON_GetObjectItemCaseSensitive(item, "jsonrpc");
    if (!cJSON_IsString(jv) || strcmp(jv->valuestring, "2.0") != 0) {
        msg->why = "\"jsonrpc\" must be \"2.0\"";
        return;
    }
    if (id && !cJSON_IsString(id) && !cJSON_IsNumber(id)) {
        msg->why = "\"id\" must be a string or a number";
        return;
    }
    if (id && cJSON_IsNumber(id) && !msg->id) {
        msg->why = "\"id\" must be a finite number";
        return;
    }
    if (id && !msg->id) {
        msg->why = "\"id\" is too long";
        return;
    }
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(item, "method");
    if (!method) {
        if (id && (cJSON_HasObjectItem(item, "result") || cJSON_HasObjectItem(item, "error"))) {
            msg->kind = RPC_RESPONSE;
            return;
        }
        msg->why = "missing \"method\"";
        return;
    }
    if (!cJSON_IsString(method) || method->valuestring[0] == '\0') {
        msg->why = "\"method\" must be a non-empty string";
        return;
    }
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(item, "params");
    if (params && !cJSON_IsObject(params) && !cJSON_IsArray(params)) {
        msg->why = "\"params\" must be an object or an array";
        return;
    }
    msg->method = method->valuestring;
    msg->params = params;
    msg->kind = id ? RPC_REQUEST : RPC_NOTIFICATION;
}

const char *rpc_id_str(const cJSON *id, char *buf, size_t size)
{
    if (!id) {
        snprintf(buf, size, "null");
        return buf;
    }
    if (cJSON_IsNumber(id)) {
        double d = id->valuedouble;
        /* The range first: converting a double outside long long's range is undefined
         * (tests/fuzz/corpus/jsonrpc/regress-id-cast-overflow). */
        if (d < 9e15 && d > -9e15 && d == (double)(long long)d)
            snprintf(buf, size, "%lld", (long long)d);
        else
            snprintf(buf, size, "%.17g", d);
        return buf;
    }
    char *s = cJSON_PrintUnformatted(id);
    snprintf(buf, size, "%s", s ? s : "null");
    cJSON_free(s);
    return buf;
}

/* The id as JSON text, malloc'd (never clipped, unlike rpc_id_str into a buffer); numbers as
 * rpc_id_str renders them. NULL on ENOMEM. */
static char *id_json(const cJSON *id)
{
    char num[64];
    if (id && !cJSON_IsNumber(id))
        return cJSON_PrintUnformatted(id);
    rpc_id_str(id, num, sizeof(num));
    return strdup(num);
}

char *rpc_result_str(const cJSON *id, const char *result_json)
{
    char *idj = id_json(id), *out = NULL;
    if (!idj)
        return NULL;
    size_t n = strlen(idj) + strlen(result_json) + 48;
    out = malloc(n);
    if (out)
        snprintf(out, n, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}", idj, result_json);
    free(idj);
    return out;
}

char *rpc_error_str(const cJSON *id, int code, const char *message, const cJSON *data)
{
    /* The id is rendered by id_json, as in rpc_result_str, not by cJSON's printer: cJSON
     * prints a number with 15 significant digits whenever that reads back within its epsilon,
     * so an id such as 12345678901234567 came back as 1.23456789012346e+16
     * (tests/fuzz/corpus/jsonrpc/regress-error-id-precision). */
    char *idj, *out = NULL;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "code", code);
    cJSON_AddStringToObject(e, "message", message);
    if (data)
        cJSON_AddItemToObject(e, "data", cJSON_Duplicate(data, 1));
    char *es = cJSON_PrintUnformatted(e);
    cJSON_Delete(e);
    idj = es ? id_json(id) : NULL;
    if (idj) {
        size_t n = strlen(idj) + strlen(es) + 40;
        out = malloc(n);
        if (out)
            snprintf(out, n, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":%s}", idj, es);
    }
    free(idj);
    cJSON_free(es);
    return out;
}
