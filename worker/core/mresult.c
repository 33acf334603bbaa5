#include "mresult.h"

#include "utf8.h"

#include <stdio.h>
#include <string.h>

static const char *item_type(const cJSON *item)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "type"));
}

static int type_is(const cJSON *item, const char *type)
{
    const char *t = item_type(item);
    return t && strcmp(t, type) == 0;
}

/* The text items of call joined by "\n", cut at a character boundary to fit msg. */
static void error_text(const cJSON *call, char *msg, size_t msg_size)
{
    size_t n = 0;
    msg[0] = '\0';
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(call, "content"))
    {
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "text"));
        if (!type_is(item, "text") || !text)
            continue;
        if (n > 0 && n + 1 < msg_size)
            msg[n++] = '\n';
        size_t len = strlen(text), room = msg_size - 1 - n;
        size_t take = len <= room ? len : wrk_utf8_cut(text, len, room);
        memcpy(msg + n, text, take);
        n += take;
        msg[n] = '\0';
    }
    if (n == 0)
        snprintf(msg, msg_size, "the executor answered an error without text");
}

static int add_copy(cJSON *obj, const char *name, const cJSON *v)
{
    cJSON *copy = cJSON_Duplicate(v, 1);
    if (copy && cJSON_AddItemToObject(obj, name, copy))
        return 0;
    cJSON_Delete(copy);
    return -1;
}

/* One ResourceContents for a content item, NULL when the item has none (or ENOMEM). */
static cJSON *read_item(const wrk_envelope_t *env, const cJSON *item)
{
    const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env->arguments, "uri"));
    if (type_is(item, "resource")) {
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(item, "resource");
        return cJSON_IsObject(res) ? cJSON_Duplicate(res, 1) : NULL;
    }
    const cJSON *data = NULL, *text = NULL;
    const char *mime = env->mime_type;
    if (type_is(item, "text")) {
        text = cJSON_GetObjectItemCaseSensitive(item, "text");
    } else if (type_is(item, "image") || type_is(item, "audio")) {
        data = cJSON_GetObjectItemCaseSensitive(item, "data");
        mime = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "mimeType"));
    }
    if (!cJSON_IsString(text) && !cJSON_IsString(data))
        return NULL;
    cJSON *c = cJSON_CreateObject();
    int ok = c && cJSON_AddStringToObject(c, "uri", uri ? uri : "") &&
             (!mime || cJSON_AddStringToObject(c, "mimeType", mime)) &&
             add_copy(c, text ? "text" : "blob", text ? text : data) == 0;
    if (!ok) {
        cJSON_Delete(c);
        return NULL;
    }
    return c;
}

static cJSON *map_read(const wrk_envelope_t *env, const cJSON *content)
{
    cJSON *res = cJSON_CreateObject();
    cJSON *contents = cJSON_AddArrayToObject(res, "contents");
    if (!contents) {
        cJSON_Delete(res);
        return NULL;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, content)
    {
        cJSON *c = read_item(env, item);
        if (c)
            cJSON_AddItemToArray(contents, c);
    }
    return res;
}

static cJSON *map_prompt(const cJSON *content)
{
    cJSON *res = cJSON_CreateObject();
    cJSON *messages = cJSON_AddArrayToObject(res, "messages");
    if (!messages) {
        cJSON_Delete(res);
        return NULL;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, content)
    {
        if (!cJSON_IsObject(item) || !item_type(item))
            continue;
        cJSON *m = cJSON_CreateObject();
        if (!m || !cJSON_AddStringToObject(m, "role", "user") || add_copy(m, "content", item) < 0) {
            cJSON_Delete(m);
            cJSON_Delete(res);
            return NULL;
        }
        cJSON_AddItemToArray(messages, m);
    }
    return res;
}

/* Adds the lines of text to values (up to the maximum); counts every line in *total. */
static int add_lines(cJSON *values, const char *text, int *total)
{
    const char *p = text;
    while (*p) {
        size_t n = strcspn(p, "\n");
        size_t len = n > 0 && p[n - 1] == '\r' ? n - 1 : n;
        if (len > 0) {
            if (*total < WRK_MRESULT_MAX_VALUES) {
                char *line = cJSON_malloc(len + 1);
                if (!line)
                    return -1;
                memcpy(line, p, len);
                line[len] = '\0';
                cJSON *v = cJSON_CreateString(line);
                cJSON_free(line);
                if (!v)
                    return -1;
                cJSON_AddItemToArray(values, v);
            }
            (*total)++;
        }
        p += n;
        if (*p == '\n')
            p++;
    }
    return 0;
}

static cJSON *map_complete(const cJSON *content)
{
    cJSON *res = cJSON_CreateObject();
    cJSON *completion = cJSON_AddObjectToObject(res, "completion");
    cJSON *values = cJSON_AddArrayToObject(completion, "values");
    int total = 0;
    if (!values)
        goto fail;
    const cJSON *item;
    cJSON_ArrayForEach(item, content)
    {
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "text"));
        if (type_is(item, "text") && text && add_lines(values, text, &total) < 0)
            goto fail;
    }
    if (!cJSON_AddNumberToObject(completion, "total", total) ||
        !cJSON_AddBoolToObject(completion, "hasMore", total > WRK_MRESULT_MAX_VALUES))
        goto fail;
    return res;
fail:
    cJSON_Delete(res);
    return NULL;
}

cJSON *wrk_mresult_from_call(const wrk_envelope_t *env, const cJSON *call, int *code, char *msg,
                             size_t msg_size)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(call, "content");
    cJSON *res = NULL;
    *code = WRK_MRESULT_ERR_CODE;
    if (env->method_id == KINDS_METHOD_CALL) {
        res = cJSON_Duplicate(call, 1); /* an isError result is a tool's answer */
        if (!res)
            snprintf(msg, msg_size, "out of memory");
        return res;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(call, "isError"))) {
        error_text(call, msg, msg_size);
        return NULL;
    }
    switch (env->method_id) {
    case KINDS_METHOD_CALL: /* answered above */
    case KINDS_METHOD_READ:
        res = map_read(env, content);
        break;
    case KINDS_METHOD_PROMPT:
        res = map_prompt(content);
        break;
    case KINDS_METHOD_COMPLETE:
        res = map_complete(content);
        break;
    case KINDS_METHOD_SUBSCRIBE:
    case KINDS_METHOD_UNSUBSCRIBE:
        res = cJSON_CreateObject();
        break;
    case KINDS_METHOD_CATALOG:
        snprintf(msg, msg_size,
                 "mcpq/catalog needs the mcp executor; this object's executor is "
                 "\"%.32s\"",
                 env->exec_type ? env->exec_type : "");
        return NULL;
    }
    if (!res)
        snprintf(msg, msg_size, "out of memory");
    return res;
}
