#include "cfgkinds.h"

#include "err.h"
#include "kinds.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *str_of(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* The decoded length of a base64 string of n characters (padding counted). */
static size_t b64_len(const char *s, size_t n)
{
    size_t pad = 0;
    while (pad < 2 && pad < n && s[n - 1 - pad] == '=')
        pad++;
    n -= pad;
    return n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0);
}

static int blob_ok(const char *b)
{
    size_t n = strlen(b), len = 0, cap = b64_len(b, n) + 1;
    unsigned char *buf = malloc(cap);
    int rc = buf ? util_b64_decode(b, n, UTIL_B64_PAD, buf, cap, &len) : MCPQ_ENOMEM;
    free(buf);
    return rc;
}

/* Exactly one of the members names (NULL-terminated) is present in v. */
static int one_of(const cJSON *v, const char *const *names, const char *path, char *err,
                  size_t err_size)
{
    const char *first = NULL;
    for (size_t i = 0; names[i]; i++) {
        if (!cJSON_HasObjectItem(v, names[i]))
            continue;
        if (first)
            return util_errf(err, err_size,
                             "%s: has both \"%s\" and \"%s\"; its content is one of them "
                             "(static content, or an executor that produces it)",
                             path, first, names[i]);
        first = names[i];
    }
    if (first)
        return 0;
    char list[128] = "";
    for (size_t i = 0; names[i]; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s\"%s\"",
                 i == 0         ? ""
                 : names[i + 1] ? ", "
                                : " or ",
                 names[i]);
    return util_errf(err, err_size, "%s: missing its content: one of %s", path, list);
}

/* 1 when name is in the array of objects arr by their "name" member. */
static int named_in(const cJSON *arr, const char *name)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        const char *n = str_of(e, "name");
        if (n && strcmp(n, name) == 0)
            return 1;
    }
    return 0;
}

/* The keys of "completions" name a template variable (template) or a prompt argument. */
static int completions_ok(int kind, const cJSON *v, const char *path, char *err, size_t err_size)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(v, "completions"), *e;
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(v, "arguments");
    const char *tpl = str_of(v, "uriTemplate");
    cJSON_ArrayForEach(e, c)
    {
        char brace[80];
        snprintf(brace, sizeof(brace), "{%.64s}", e->string);
        int known =
            kind == KINDS_PROMPT ? named_in(args, e->string) : tpl && strstr(tpl, brace) != NULL;
        if (!known)
            return util_errf(err, err_size, "%s.completions.%s: the %s has no %s \"%s\"", path,
                             e->string, kinds_name(kind),
                             kind == KINDS_PROMPT ? "argument" : "variable", e->string);
    }
    return 0;
}

int cfg_kinds_version(int kind, const cJSON *v, const char *path, char *err, size_t err_size)
{
    static const char *const resource_content[] = {"text", "blob", "executor", NULL};
    static const char *const prompt_content[] = {"messages", "executor", NULL};
    char why[200];
    if (kind == KINDS_TOOL)
        return 0;
    if (one_of(v, kind == KINDS_PROMPT ? prompt_content : resource_content, path, err, err_size) <
        0)
        return MCPQ_EINVAL;
    const char *blob = str_of(v, "blob");
    if (blob && blob_ok(blob) < 0)
        return util_errf(err, err_size,
                         "%s.blob: not standard base64 (RFC 4648 alphabet A-Z a-z 0-9 + /, padded "
                         "with '=', no whitespace)",
                         path);
    const char *tpl = str_of(v, "uriTemplate");
    if (kind == KINDS_TEMPLATE && kinds_template_check(tpl, why, sizeof(why)) < 0)
        return util_errf(err, err_size, "%s.uriTemplate: %s", path, why);
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(v, "arguments"), *a;
    int i = 0;
    cJSON_ArrayForEach(a, args)
    {
        const cJSON *b = args->child;
        for (int j = 0; j < i; j++, b = b->next)
            if (strcmp(str_of(a, "name"), str_of(b, "name")) == 0)
                return util_errf(err, err_size,
                                 "%s.arguments[%d].name: duplicate argument \"%s\" (also "
                                 "arguments[%d])",
                                 path, i, str_of(a, "name"), j);
        i++;
    }
    return completions_ok(kind, v, path, err, err_size);
}

size_t cfg_kinds_static_bytes(const cJSON *v)
{
    const char *text = str_of(v, "text"), *blob = str_of(v, "blob");
    return text ? strlen(text) : blob ? b64_len(blob, strlen(blob)) : 0;
}

int cfg_kinds_sizes(const cJSON *config, size_t max_bytes, char *err, size_t err_size)
{
    const cJSON *t, *v;
    int i = 0;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(config, "tools"))
    {
        int k = kinds_of(t), j = 0;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(t, "versions"))
        {
            size_t n = cfg_kinds_static_bytes(v);
            if ((k == KINDS_RESOURCE || k == KINDS_TEMPLATE) && n > max_bytes)
                return util_errf(
                    err, err_size,
                    "$.tools[%d].versions[%d]: static content of %zu bytes; at most %zu "
                    "(MCPQ_RESOURCE_MAX_BYTES); larger content belongs to an executor",
                    i, j, n, max_bytes);
            j++;
        }
        i++;
    }
    return 0;
}
