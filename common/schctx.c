#include "schint.h"

#include "jv.h"
#include "rx.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* JSON Schema type names; bit i of a type mask stands for type_names[i]. */
static const char *const type_names[] = {"object", "array",   "string", "integer",
                                         "number", "boolean", "null"};

/* ---- paths and errors ---- */

static size_t path_append(vctx_t *c, const char *seg)
{
    size_t saved = c->path_len, n = strlen(seg);
    if (c->path_len + n < PATH_CAP) {
        memcpy(c->path + c->path_len, seg, n + 1);
        c->path_len += n;
    } else if (c->path_len + 4 < PATH_CAP &&
               (c->path_len < 3 || strcmp(c->path + c->path_len - 3, "...") != 0)) {
        memcpy(c->path + c->path_len, "...", 4);
        c->path_len += 3;
    }
    return saved;
}

size_t sch_ctx_push_key(vctx_t *c, const char *key)
{
    char seg[160];
    size_t n = 0, i;
    int plain = key[0] != '\0';
    for (i = 0; key[i] && plain; i++)
        plain = (key[i] >= 'a' && key[i] <= 'z') || (key[i] >= 'A' && key[i] <= 'Z') ||
                (key[i] >= '0' && key[i] <= '9') || key[i] == '_' || key[i] == '-' || key[i] == '$';
    if (plain && strlen(key) < sizeof(seg) - 1) {
        seg[0] = '.';
        memcpy(seg + 1, key, strlen(key) + 1);
        return path_append(c, seg);
    }
    seg[n++] = '[';
    seg[n++] = '"';
    for (i = 0; key[i] && n < sizeof(seg) - 8; i++) {
        unsigned char ch = (unsigned char)key[i];
        if (ch == '"' || ch == '\\')
            seg[n++] = '\\';
        seg[n++] = ch < 0x20 ? '?' : (char)ch;
    }
    if (key[i]) {
        memcpy(seg + n, "...", 3);
        n += 3;
    }
    memcpy(seg + n, "\"]", 3);
    return path_append(c, seg);
}

size_t sch_ctx_push_index(vctx_t *c, int i)
{
    char seg[24];
    snprintf(seg, sizeof(seg), "[%d]", i);
    return path_append(c, seg);
}

void sch_ctx_pop(vctx_t *c, size_t saved)
{
    c->path_len = saved;
    c->path[saved] = '\0';
}

static int verr(vctx_t *c, int code, const char *prefix, const char *fmt, va_list ap)
{
    size_t n = strlen(prefix);
    memcpy(c->err_path, c->path, c->path_len + 1);
    memcpy(c->err_msg, prefix, n + 1);
    vsnprintf(c->err_msg + n, sizeof(c->err_msg) - n, fmt, ap);
    /* names and patterns come from users: the message stays one line */
    for (char *p = c->err_msg; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = '?';
    return code;
}

/* The instance is invalid: records "<path>: <message>" and returns V_FAIL. */
int sch_ctx_fail(vctx_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = verr(c, V_FAIL, "", fmt, ap);
    va_end(ap);
    return rc;
}

/* The schema is unusable: records "<path>: invalid schema: <message>", returns V_HARD. */
int sch_ctx_bad_schema(vctx_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = verr(c, V_HARD, "invalid schema: ", fmt, ap);
    va_end(ap);
    return rc;
}

int sch_ctx_too_deep(vctx_t *c)
{
    memcpy(c->err_path, c->path, c->path_len + 1);
    snprintf(c->err_msg, sizeof(c->err_msg), "nested more than %d levels deep", SCH_MAX_DEPTH);
    return V_HARD;
}

int sch_ctx_oom(vctx_t *c)
{
    c->oom = 1;
    memcpy(c->err_path, c->path, c->path_len + 1);
    snprintf(c->err_msg, sizeof(c->err_msg), "out of memory");
    return V_HARD;
}

/* ---- JSON Schema types and messages ---- */

/* The types v has, as a mask: an integral number is both "integer" and "number". */
unsigned sch_ctx_type_bits(const cJSON *v)
{
    if (cJSON_IsNumber(v))
        return jv_is_integral(v) ? 8u | 16u : 16u;
    return cJSON_IsObject(v)   ? 1u
           : cJSON_IsArray(v)  ? 2u
           : cJSON_IsString(v) ? 4u
           : cJSON_IsBool(v)   ? 32u
           : cJSON_IsNull(v)   ? 64u
                               : 0u;
}

static const char *type_of(const cJSON *v)
{
    unsigned bits = sch_ctx_type_bits(v);
    return bits ? type_names[__builtin_ctz(bits)] : "invalid";
}

/* Appends printf-style text to the string in buf (of size), clipped to fit. */
void sch_ctx_appendf(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

/* ---- keyword values (shared by validation and sch_schema_check) ---- */

/* type keyword as a bit mask: 1 found, 0 absent, V_HARD (negated) on a bad value. */
int sch_ctx_types(vctx_t *c, const cJSON *s, unsigned *mask)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "type");
    *mask = 0;
    if (!t)
        return 0;
    if (!cJSON_IsString(t) && !(cJSON_IsArray(t) && t->child))
        return -sch_ctx_bad_schema(c, "\"type\" must be a type name or a non-empty array of them");
    for (const cJSON *x = cJSON_IsArray(t) ? t->child : t; x;
         x = cJSON_IsArray(t) ? x->next : NULL) {
        unsigned bit = 0;
        for (size_t i = 0; cJSON_IsString(x) && i < sizeof(type_names) / sizeof(*type_names); i++)
            if (strcmp(x->valuestring, type_names[i]) == 0)
                bit = 1u << i;
        if (!bit)
            return -sch_ctx_bad_schema(c, "\"type\" names an unknown type");
        *mask |= bit;
    }
    return 1;
}

/* A non-negative integer keyword (minLength, maxItems, ...): 1, 0 absent, -V_HARD. */
int sch_ctx_count(vctx_t *c, const cJSON *s, const char *kw, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, kw);
    if (!v)
        return 0;
    if (!jv_is_integral(v) || v->valuedouble < 0)
        return -sch_ctx_bad_schema(c, "\"%s\" must be a non-negative integer", kw);
    *out = v->valuedouble;
    return 1;
}

int sch_ctx_number(vctx_t *c, const cJSON *s, const char *kw, const cJSON **out)
{
    *out = cJSON_GetObjectItemCaseSensitive(s, kw);
    if (!*out)
        return 0;
    if (!cJSON_IsNumber(*out) && !(kw[0] == 'e' && cJSON_IsBool(*out)))
        return -sch_ctx_bad_schema(c, "\"%s\" must be a number", kw);
    return 1;
}

/* An object, array or boolean keyword of the wanted cJSON type: 1, 0 absent, -V_HARD. */
int sch_ctx_kind(vctx_t *c, const cJSON *s, const char *kw, int kind, const cJSON **out)
{
    *out = cJSON_GetObjectItemCaseSensitive(s, kw);
    if (!*out)
        return 0;
    if (kind == cJSON_Object && !cJSON_IsObject(*out))
        return -sch_ctx_bad_schema(c, "\"%s\" must be an object", kw);
    if (kind == cJSON_Array && !cJSON_IsArray(*out))
        return -sch_ctx_bad_schema(c, "\"%s\" must be an array", kw);
    if (kind == cJSON_Array && !(*out)->child &&
        (!strcmp(kw, "anyOf") || !strcmp(kw, "oneOf") || !strcmp(kw, "allOf")))
        return -sch_ctx_bad_schema(c, "\"%s\" must be a non-empty array", kw);
    if (kind == cJSON_True && !cJSON_IsBool(*out))
        return -sch_ctx_bad_schema(c, "\"%s\" must be a boolean", kw);
    return 1;
}

/* ---- patterns: translated by rx.c, compiled once per schema (sch_compile) or validation ---- */

int sch_ctx_pattern_cmp(const void *a, const void *b)
{
    const pattern_entry_t *x = a, *y = b;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* Compiles pattern text into rx. 0, or -1 when the pattern is unusable. */
static int pattern_compile(const char *pattern, regex_t *rx)
{
    if (strlen(pattern) > PATTERN_MAX)
        return -1;
    util_buf_t ere;
    util_buf_init(&ere, 16 * PATTERN_MAX);
    int rc = rx_translate(pattern, &ere);
    if (rc == 0)
        rc = regcomp(rx, ere.data ? ere.data : "", REG_EXTENDED | REG_NOSUB) == 0 ? 0 : -1;
    util_buf_cleanup(&ere);
    return rc;
}

/* sch_compile: keeps the compiled pattern of node. NULL when memory ran out (rx freed). */
static const regex_t *pattern_keep(vctx_t *c, const cJSON *node, regex_t *rx)
{
    if (c->nall == c->capall) {
        size_t cap = c->capall ? c->capall * 2 : 16;
        pattern_entry_t *all = realloc(c->all, cap * sizeof(*all));
        if (!all) {
            regfree(rx);
            return NULL;
        }
        c->all = all;
        c->capall = cap;
    }
    c->all[c->nall] = (pattern_entry_t){node, *rx};
    return &c->all[c->nall++].rx;
}

/* The compiled pattern of node (text pattern): the compiled schema's, else compiled now and
 * cached per validation (tmp when the cache is full). NULL on a bad pattern. */
static const regex_t *pattern_get(vctx_t *c, const cJSON *node, const char *pattern, regex_t *tmp)
{
    if (c->comp && c->comp->nrx) {
        pattern_entry_t key = {.node = node};
        const pattern_entry_t *e =
            bsearch(&key, c->comp->rx, c->comp->nrx, sizeof(key), sch_ctx_pattern_cmp);
        if (e)
            return &e->rx;
    }
    for (int i = 0; i < c->nrx; i++)
        if (c->rx[i].node == node)
            return &c->rx[i].rx;
    regex_t *rx = c->collect || c->nrx >= PATTERN_CACHE ? tmp : &c->rx[c->nrx].rx;
    if (pattern_compile(pattern, rx) < 0)
        return NULL;
    if (c->collect) {
        if (pattern_keep(c, node, rx))
            return &c->all[c->nall - 1].rx;
        sch_ctx_oom(c);
        return NULL;
    }
    if (rx != tmp)
        c->rx[c->nrx++].node = node;
    return rx;
}

/* 1 match, 0 no match, -V_HARD when the pattern is unusable. */
int sch_ctx_pattern_match(vctx_t *c, const cJSON *node, const char *pattern, const char *s)
{
    regex_t tmp;
    const regex_t *rx = pattern_get(c, node, pattern, &tmp);
    if (!rx && c->oom)
        return -V_HARD;
    if (!rx)
        return -sch_ctx_bad_schema(c, "pattern \"%.100s\" is not supported (POSIX ERE subset)",
                                   pattern);
    int m = regexec(rx, s, 0, NULL, 0) == 0;
    if (rx == &tmp)
        regfree(&tmp);
    return m;
}

/* The embedded schema called name (its stable name in *stable), or NULL. */

int sch_ctx_type_error(vctx_t *c, unsigned mask, const cJSON *inst)
{
    char want[96] = "";
    int left = __builtin_popcount(mask);
    for (size_t i = 0; i < sizeof(type_names) / sizeof(*type_names); i++) {
        if (!(mask & (1u << i)))
            continue;
        const char *sep = --left > 1 ? ", " : left == 1 ? " or " : "";
        sch_ctx_appendf(want, sizeof(want), "%s%s", type_names[i], sep);
    }
    return sch_ctx_fail(c, "expected %s, got %s", want, type_of(inst));
}
