#include "sch.h"

#include "err.h"
#include "jv.h"
#include "log.h"
#include "rx.h"
#include "schdoc.h"
#include "util.h"

#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_CAP 512
#define MSG_CAP 512
#define PATTERN_CACHE 8
#define PATTERN_MAX 4096 /* longest pattern source accepted */

/* Outcome of one validation step: the instance is invalid (a user error), or the schema is
 * unusable, nesting is too deep or memory ran out (stop at once, even inside anyOf/not). */
enum { V_OK = 0, V_FAIL = 1, V_HARD = 2 };

/* JSON Schema type names; bit i of a type mask stands for type_names[i]. */
static const char *const type_names[] = {"object", "array",   "string", "integer",
                                         "number", "boolean", "null"};

typedef struct pattern_entry {
    const cJSON *node;
    regex_t rx;
} pattern_entry_t;

/* A schema checked once, with its patterns compiled and its identifiers indexed. */
struct sch_compiled {
    cJSON *schema;        /* a copy, owned */
    sch_doc_index_t *idx; /* $id and $anchor of the copy */
    pattern_entry_t *rx;  /* every pattern of the copy, sorted by node */
    size_t nrx;
};

/* Which members (an object instance) or items (an array instance) some keyword evaluated
 * successfully: the annotations unevaluatedProperties and unevaluatedItems read. */
typedef struct eval {
    unsigned char *seen; /* one per member or item */
    int n;
} eval_t;

/* One validation (or schema check): the current path, the first error, compiled patterns,
 * the document and the schema resource being read. */
typedef struct vctx {
    char path[PATH_CAP];
    size_t path_len;
    char err_path[PATH_CAP];
    char err_msg[MSG_CAP];
    int oom;
    int nrx;
    pattern_entry_t rx[PATTERN_CACHE];
    /* sch_compile: every pattern compiled is kept here (grown as needed) */
    int collect;
    pattern_entry_t *all;
    size_t nall, capall;
    const sch_compiled_t *comp; /* validating a compiled schema, else NULL */
    const cJSON *doc;           /* the root document */
    sch_doc_index_t *idx;       /* its identifiers: comp's, or built on first need */
    int own_idx;
    sch_doc_loc_t cur; /* the schema resource being read (its base URI for $ref) */
    long refs;         /* $refs followed so far (SCH_MAX_REFS) */
} vctx_t;

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

static size_t path_push_key(vctx_t *c, const char *key)
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

static size_t path_push_index(vctx_t *c, int i)
{
    char seg[24];
    snprintf(seg, sizeof(seg), "[%d]", i);
    return path_append(c, seg);
}

static void path_pop(vctx_t *c, size_t saved)
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
    return code;
}

/* The instance is invalid: records "<path>: <message>" and returns V_FAIL. */
static int fail(vctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(vctx_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = verr(c, V_FAIL, "", fmt, ap);
    va_end(ap);
    return rc;
}

/* The schema is unusable: records "<path>: invalid schema: <message>", returns V_HARD. */
static int bad_schema(vctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad_schema(vctx_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = verr(c, V_HARD, "invalid schema: ", fmt, ap);
    va_end(ap);
    return rc;
}

static int too_deep(vctx_t *c)
{
    memcpy(c->err_path, c->path, c->path_len + 1);
    snprintf(c->err_msg, sizeof(c->err_msg), "nested more than %d levels deep", SCH_MAX_DEPTH);
    return V_HARD;
}

static int out_of_memory(vctx_t *c)
{
    c->oom = 1;
    memcpy(c->err_path, c->path, c->path_len + 1);
    snprintf(c->err_msg, sizeof(c->err_msg), "out of memory");
    return V_HARD;
}

/* ---- JSON Schema types and messages ---- */

/* The types v has, as a mask: an integral number is both "integer" and "number". */
static unsigned type_bits(const cJSON *v)
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
    unsigned bits = type_bits(v);
    return bits ? type_names[__builtin_ctz(bits)] : "invalid";
}

/* Appends printf-style text to the string in buf (of size), clipped to fit. */
static void appendf(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

/* ---- keyword values (shared by validation and sch_schema_check) ---- */

/* type keyword as a bit mask: 1 found, 0 absent, V_HARD (negated) on a bad value. */
static int get_types(vctx_t *c, const cJSON *s, unsigned *mask)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "type");
    *mask = 0;
    if (!t)
        return 0;
    if (!cJSON_IsString(t) && !(cJSON_IsArray(t) && t->child))
        return -bad_schema(c, "\"type\" must be a type name or a non-empty array of them");
    for (const cJSON *x = cJSON_IsArray(t) ? t->child : t; x;
         x = cJSON_IsArray(t) ? x->next : NULL) {
        unsigned bit = 0;
        for (size_t i = 0; cJSON_IsString(x) && i < sizeof(type_names) / sizeof(*type_names); i++)
            if (strcmp(x->valuestring, type_names[i]) == 0)
                bit = 1u << i;
        if (!bit)
            return -bad_schema(c, "\"type\" names an unknown type");
        *mask |= bit;
    }
    return 1;
}

/* A non-negative integer keyword (minLength, maxItems, ...): 1, 0 absent, -V_HARD. */
static int get_count(vctx_t *c, const cJSON *s, const char *kw, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, kw);
    if (!v)
        return 0;
    if (!jv_is_integral(v) || v->valuedouble < 0)
        return -bad_schema(c, "\"%s\" must be a non-negative integer", kw);
    *out = v->valuedouble;
    return 1;
}

static int get_number(vctx_t *c, const cJSON *s, const char *kw, const cJSON **out)
{
    *out = cJSON_GetObjectItemCaseSensitive(s, kw);
    if (!*out)
        return 0;
    if (!cJSON_IsNumber(*out) && !(kw[0] == 'e' && cJSON_IsBool(*out)))
        return -bad_schema(c, "\"%s\" must be a number", kw);
    return 1;
}

/* An object, array or boolean keyword of the wanted cJSON type: 1, 0 absent, -V_HARD. */
static int get_kind(vctx_t *c, const cJSON *s, const char *kw, int kind, const cJSON **out)
{
    *out = cJSON_GetObjectItemCaseSensitive(s, kw);
    if (!*out)
        return 0;
    if (kind == cJSON_Object && !cJSON_IsObject(*out))
        return -bad_schema(c, "\"%s\" must be an object", kw);
    if (kind == cJSON_Array && !cJSON_IsArray(*out))
        return -bad_schema(c, "\"%s\" must be an array", kw);
    if (kind == cJSON_Array && !(*out)->child &&
        (!strcmp(kw, "anyOf") || !strcmp(kw, "oneOf") || !strcmp(kw, "allOf")))
        return -bad_schema(c, "\"%s\" must be a non-empty array", kw);
    if (kind == cJSON_True && !cJSON_IsBool(*out))
        return -bad_schema(c, "\"%s\" must be a boolean", kw);
    return 1;
}

/* ---- patterns: translated by rx.c, compiled once per schema (sch_compile) or validation ---- */

static int pattern_cmp(const void *a, const void *b)
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
            bsearch(&key, c->comp->rx, c->comp->nrx, sizeof(key), pattern_cmp);
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
        out_of_memory(c);
        return NULL;
    }
    if (rx != tmp)
        c->rx[c->nrx++].node = node;
    return rx;
}

/* 1 match, 0 no match, -V_HARD when the pattern is unusable. */
static int pattern_match(vctx_t *c, const cJSON *node, const char *pattern, const char *s)
{
    regex_t tmp;
    const regex_t *rx = pattern_get(c, node, pattern, &tmp);
    if (!rx && c->oom)
        return -V_HARD;
    if (!rx)
        return -bad_schema(c, "pattern \"%.100s\" is not supported (POSIX ERE subset)", pattern);
    int m = regexec(rx, s, 0, NULL, 0) == 0;
    if (rx == &tmp)
        regfree(&tmp);
    return m;
}

/* The embedded schema called name (its stable name in *stable), or NULL. */
static const cJSON *builtin_named(const char *name, const char **stable);

/* ---- $id, $anchor and $ref (schdoc.h) ---- */

/* The identifiers of the document, indexed on first need for a one-off validation. NULL
 * when memory ran out (c->oom set). */
static const sch_doc_index_t *doc_index(vctx_t *c)
{
    if (!c->idx) {
        c->idx = sch_doc_index_new(c->doc, SCH_MAX_DEPTH);
        c->own_idx = 1;
        if (!c->idx)
            out_of_memory(c);
    }
    return c->idx;
}

/* Entering schema object s: a "$id" makes it the current resource (*saved keeps the one
 * before). 0, or V_HARD when memory ran out. */
static int resource_enter(vctx_t *c, const cJSON *s, sch_doc_loc_t *saved)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(s, "$id");
    *saved = c->cur;
    if (!cJSON_IsString(id) || id->valuestring[0] == '#')
        return V_OK;
    if (!doc_index(c))
        return V_HARD;
    const sch_doc_entry_t *e = sch_doc_index_resource(c->idx, s);
    if (e)
        c->cur = (sch_doc_loc_t){s, s, e->uri};
    return V_OK;
}

/* An embedded schema by the last path segment of absolute URI abs (the part before '#'):
 * "job.schema.json#/$defs/x" from a mcpq schema. The location of its fragment, or -1. */
static int ref_builtin(const char *abs, sch_doc_loc_t *out)
{
    size_t ulen = strcspn(abs, "#"), start = ulen;
    char name[128];
    while (start > 0 && abs[start - 1] != '/')
        start--;
    if (ulen == start || ulen - start >= sizeof(name))
        return -1;
    memcpy(name, abs + start, ulen - start);
    name[ulen - start] = '\0';
    const char *stable = NULL;
    const cJSON *doc = builtin_named(name, &stable);
    if (!doc)
        return -1;
    *out = (sch_doc_loc_t){doc, doc, stable};
    return sch_doc_pointer(NULL, abs[ulen] ? abs + ulen + 1 : "", out);
}

/* Resolves "$ref" value ref from the current resource: within the document, else an
 * embedded schema. 0 with *out set, -1 unresolved, -V_HARD when memory ran out. */
static int ref_resolve(vctx_t *c, const char *ref, sch_doc_loc_t *out)
{
    char abs[SCH_DOC_URI_MAX] = "";
    if (sch_doc_ref(c->idx, &c->cur, ref, out, abs) == 0)
        return 0;
    if (ref_builtin(abs, out) == 0)
        return 0;
    if (c->idx)
        return -1;
    if (!doc_index(c))
        return -V_HARD;
    return sch_doc_ref(c->idx, &c->cur, ref, out, abs);
}

/* ---- validation ---- */

static int validate(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev);

/* validate() for a member or item (a new instance: no annotations flow back): pushes the
 * path segment, pops it after. */
static int validate_at(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, const char *key,
                       int index)
{
    size_t saved = key ? path_push_key(c, key) : path_push_index(c, index);
    int rc = validate(c, s, inst, depth + 1, NULL);
    path_pop(c, saved);
    return rc;
}

static int check_string(vctx_t *c, const cJSON *s, const cJSON *inst)
{
    double min = 0, max = 0;
    int has_min = get_count(c, s, "minLength", &min), has_max = get_count(c, s, "maxLength", &max);
    const cJSON *pat;
    if (has_min < 0 || has_max < 0)
        return V_HARD;
    if (has_min || has_max) {
        double n = 0; /* code points: every byte that does not continue a UTF-8 sequence */
        for (const unsigned char *p = (const unsigned char *)inst->valuestring; *p; p++)
            n += (*p & 0xc0) != 0x80;
        if (has_min && n < min)
            return fail(c, "must be at least %.0f character%s long", min, min == 1 ? "" : "s");
        if (has_max && n > max)
            return fail(c, "must be at most %.0f character%s long", max, max == 1 ? "" : "s");
    }
    pat = cJSON_GetObjectItemCaseSensitive(s, "pattern");
    if (pat) {
        if (!cJSON_IsString(pat))
            return bad_schema(c, "\"pattern\" must be a string");
        int m = pattern_match(c, pat, pat->valuestring, inst->valuestring);
        if (m < 0)
            return V_HARD;
        if (!m)
            return fail(c, "does not match the pattern \"%.200s\"", pat->valuestring);
    }
    return V_OK;
}

/* d as m * 10^e with m an integer of at most 17 digits: the shortest decimal that reads back
 * as d (what JSON serializers print), so 0.1 is 1 * 10^-1 rather than its binary value. */
static void decimal_of(double d, unsigned long long *m, int *e)
{
    char buf[40];
    int prec = 1, exp10 = 0, ndig = 0;
    for (; prec < 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*e", prec - 1, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    snprintf(buf, sizeof(buf), "%.*e", prec - 1, d);
    *m = 0;
    const char *p = buf;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') {
            *m = *m * 10 + (unsigned)(*p - '0');
            ndig++;
        }
    exp10 = *p == 'e' ? (int)strtol(p + 1, NULL, 10) : 0;
    *e = exp10 - (ndig - 1);
    while (*m && *m % 10 == 0) {
        *m /= 10;
        (*e)++;
    }
}

/* 1 when x is an integral multiple of m (> 0), compared as decimals (decimal_of) exactly. */
static int is_multiple(double x, double m)
{
    unsigned long long mx, mm;
    int ex, em;
    if (x == 0)
        return 1;
    if (!isfinite(x))
        return 0;
    if (fabs(x) < 9007199254740992.0 && x == floor(x) && m == floor(m) && m < 9007199254740992.0)
        return fmod(x, m) == 0; /* both integers, exact in a double */
    decimal_of(fabs(x), &mx, &ex);
    decimal_of(m, &mm, &em);
    if (ex >= em) { /* mx * 10^(ex - em) mod mm, by repeated multiplication */
        unsigned __int128 r = mx % mm;
        for (int k = ex - em; k > 0 && r; k--)
            r = r * 10 % mm;
        return r == 0;
    }
    if (em - ex > 20) /* mm * 10^(em - ex) > 10^20 > mx */
        return 0;
    unsigned __int128 div = mm;
    for (int k = em - ex; k > 0; k--)
        div *= 10;
    return mx % div == 0;
}

static int check_multiple(vctx_t *c, const cJSON *s, const cJSON *inst)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(s, "multipleOf");
    char num[40];
    if (!m)
        return V_OK;
    if (!cJSON_IsNumber(m) || !(m->valuedouble > 0) || !isfinite(m->valuedouble))
        return bad_schema(c, "\"multipleOf\" must be a number greater than 0");
    if (is_multiple(inst->valuedouble, m->valuedouble))
        return V_OK;
    jv_number_format(m->valuedouble, num, sizeof(num));
    return fail(c, "must be a multiple of %s (multipleOf)", num);
}

static int check_number(vctx_t *c, const cJSON *s, const cJSON *inst)
{
    static const char *const kws[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    const cJSON *v[4];
    double d = inst->valuedouble;
    char num[40];
    for (int i = 0; i < 4; i++)
        if (get_number(c, s, kws[i], &v[i]) < 0)
            return V_HARD;
    for (int i = 0; i < 2; i++) {
        const cJSON *bound = v[i], *ex = v[i + 2];
        int excl = cJSON_IsTrue(ex); /* draft 4: "exclusiveMinimum": true */
        for (int k = 0; k < 2; k++, bound = cJSON_IsNumber(ex) ? ex : NULL, excl = 1) {
            if (!bound)
                continue;
            double b = bound->valuedouble;
            int bad = i == 0 ? (excl ? d <= b : d < b) : (excl ? d >= b : d > b);
            jv_number_format(b, num, sizeof(num));
            if (bad)
                return fail(c, "must be %s%s %s", i == 0 ? ">" : "<", excl ? "" : "=", num);
        }
    }
    return check_multiple(c, s, inst);
}

/* propertyNames: the member name, as a string, against schema names. */
static int check_name(vctx_t *c, const cJSON *names, char *key, int depth)
{
    cJSON name = {.type = cJSON_String, .valuestring = key};
    size_t saved = path_push_key(c, key);
    int rc = validate(c, names, &name, depth + 1, NULL);
    path_pop(c, saved);
    if (rc == V_FAIL) {
        char msg[MSG_CAP];
        snprintf(msg, sizeof(msg), "invalid property name: %.480s", c->err_msg);
        memcpy(c->err_msg, msg, sizeof(msg));
    }
    return rc;
}

typedef struct objkw {
    const cJSON *props, *pprops, *addl, *names;
} objkw_t;

/* Member m (the i-th) against properties, patternProperties and additionalProperties;
 * the ones that apply mark it evaluated. */
static int check_member(vctx_t *c, const objkw_t *k, const cJSON *m, int i, int depth, eval_t *ev)
{
    const cJSON *ps = k->props ? cJSON_GetObjectItemCaseSensitive(k->props, m->string) : NULL;
    int rc, matched = ps != NULL;
    if (k->names && (rc = check_name(c, k->names, m->string, depth)) != V_OK)
        return rc;
    if (ps && (rc = validate_at(c, ps, m, depth, m->string, 0)) != V_OK)
        return rc;
    for (const cJSON *pp = k->pprops ? k->pprops->child : NULL; pp; pp = pp->next) {
        int hit = pattern_match(c, pp, pp->string, m->string);
        if (hit < 0)
            return V_HARD;
        if (hit && (rc = validate_at(c, pp, m, depth, m->string, 0)) != V_OK)
            return rc;
        matched |= hit;
    }
    if (!matched && k->addl) {
        if (cJSON_IsFalse(k->addl))
            return fail(c, "unknown property \"%.200s\"", m->string);
        if ((rc = validate_at(c, k->addl, m, depth, m->string, 0)) != V_OK)
            return rc;
    }
    if (ev && (matched || k->addl))
        ev->seen[i] = 1;
    return V_OK;
}

/* One entry of dependentRequired, dependentSchemas or dependencies: when inst has member
 * name, inst must have the members of list dep, or match schema dep (in place). */
static int check_dependency(vctx_t *c, const char *kw, const cJSON *dep, const cJSON *inst,
                            int depth, eval_t *ev)
{
    if (!cJSON_GetObjectItemCaseSensitive(inst, dep->string))
        return V_OK;
    if (!cJSON_IsArray(dep)) {
        if (!strcmp(kw, "dependentRequired"))
            return bad_schema(c, "\"dependentRequired\" must map names to arrays of names");
        return validate(c, dep, inst, depth + 1, ev);
    }
    for (const cJSON *r = dep->child; r; r = r->next) {
        if (!cJSON_IsString(r))
            return bad_schema(c, "\"%s\" must map names to arrays of names", kw);
        if (!cJSON_GetObjectItemCaseSensitive(inst, r->valuestring))
            return fail(c, "missing property \"%.200s\" (%s: \"%.200s\" is present)",
                        r->valuestring, kw, dep->string);
    }
    return V_OK;
}

static int check_dependencies(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev)
{
    static const char *const kws[] = {"dependentRequired", "dependentSchemas", "dependencies"};
    const cJSON *map;
    int rc;
    for (int i = 0; i < 3; i++) {
        if (get_kind(c, s, kws[i], cJSON_Object, &map) < 0)
            return V_HARD;
        for (const cJSON *d = map ? map->child : NULL; d; d = d->next)
            if ((rc = check_dependency(c, kws[i], d, inst, depth, ev)) != V_OK)
                return rc;
    }
    return V_OK;
}

static int check_object(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev)
{
    const cJSON *req;
    objkw_t k = {NULL, NULL, cJSON_GetObjectItemCaseSensitive(s, "additionalProperties"),
                 cJSON_GetObjectItemCaseSensitive(s, "propertyNames")};
    double min = 0, max = 0;
    int has_min = get_count(c, s, "minProperties", &min),
        has_max = get_count(c, s, "maxProperties", &max);
    int rc, i = 0;
    if (has_min < 0 || has_max < 0 || get_kind(c, s, "required", cJSON_Array, &req) < 0 ||
        get_kind(c, s, "properties", cJSON_Object, &k.props) < 0 ||
        get_kind(c, s, "patternProperties", cJSON_Object, &k.pprops) < 0)
        return V_HARD;
    for (const cJSON *r = req ? req->child : NULL; r; r = r->next) {
        if (!cJSON_IsString(r))
            return bad_schema(c, "\"required\" must be an array of strings");
        if (!cJSON_GetObjectItemCaseSensitive(inst, r->valuestring))
            return fail(c, "missing required property \"%.200s\"", r->valuestring);
    }
    for (const cJSON *m = inst->child; m; m = m->next, i++)
        if ((rc = check_member(c, &k, m, i, depth, ev)) != V_OK)
            return rc;
    int n = cJSON_GetArraySize(inst);
    if (has_min && n < min)
        return fail(c, "must have at least %.0f propert%s", min, min == 1 ? "y" : "ies");
    if (has_max && n > max)
        return fail(c, "must have at most %.0f propert%s", max, max == 1 ? "y" : "ies");
    return check_dependencies(c, s, inst, depth, ev);
}

typedef struct hashed {
    uint64_t h;
    int i;
    const cJSON *v;
} hashed_t;

static int hashed_cmp(const void *a, const void *b)
{
    const hashed_t *x = a, *y = b;
    return x->h < y->h ? -1 : x->h > y->h ? 1 : x->i - y->i;
}

/* uniqueItems in O(n log n): items are sorted by a structural hash, equal hashes compared. */
static int check_unique(vctx_t *c, const cJSON *inst, int depth)
{
    int n = cJSON_GetArraySize(inst), i = 0, rc = V_OK;
    hashed_t *hs = calloc((size_t)n + 1, sizeof(*hs));
    if (!hs)
        return out_of_memory(c);
    for (const cJSON *x = inst->child; x; x = x->next, i++)
        hs[i] = (hashed_t){jv_hash(x, SCH_MAX_DEPTH - depth), i, x};
    qsort(hs, (size_t)n, sizeof(*hs), hashed_cmp);
    for (i = 0; i < n && rc == V_OK; i++) {
        for (int j = i + 1; j < n && hs[j].h == hs[i].h && rc == V_OK; j++) {
            int eq = jv_equal(hs[i].v, hs[j].v, SCH_MAX_DEPTH - depth);
            if (eq < 0)
                rc = too_deep(c);
            else if (eq)
                rc = fail(c, "must not contain duplicates (items %d and %d are equal)", hs[i].i,
                          hs[j].i);
        }
    }
    free(hs);
    return rc;
}

/* contains, minContains, maxContains: the matching items are marked evaluated. */
static int check_contains(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev)
{
    const cJSON *con = cJSON_GetObjectItemCaseSensitive(s, "contains");
    double min = 1, max = 0;
    int has_min = get_count(c, s, "minContains", &min),
        has_max = get_count(c, s, "maxContains", &max);
    int i = 0, count = 0;
    if (has_min < 0 || has_max < 0)
        return V_HARD;
    if (!con)
        return V_OK;
    for (const cJSON *x = inst->child; x; x = x->next, i++) {
        size_t saved = path_push_index(c, i);
        int rc = validate(c, con, x, depth + 1, NULL);
        path_pop(c, saved);
        if (rc == V_HARD)
            return rc;
        if (rc == V_OK && ev)
            ev->seen[i] = 1;
        count += rc == V_OK;
    }
    if (count < min)
        return fail(c, "must contain at least %.0f item%s matching \"contains\" (%d do%s)", min,
                    min == 1 ? "" : "s", count, count == 1 ? "es" : "");
    if (has_max && count > max)
        return fail(c,
                    "must contain at most %.0f item%s matching \"contains\" (maxContains), "
                    "but %d do",
                    max, max == 1 ? "" : "s", count);
    return V_OK;
}

static int check_array(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items"), *uniq, *prefix;
    const cJSON *rest = items, *tuple = NULL;
    double min = 0, max = 0;
    int has_min = get_count(c, s, "minItems", &min), has_max = get_count(c, s, "maxItems", &max);
    int n = cJSON_GetArraySize(inst), i = 0, rc, has_tuple = 0;
    if (has_min < 0 || has_max < 0 || get_kind(c, s, "uniqueItems", cJSON_True, &uniq) < 0 ||
        get_kind(c, s, "prefixItems", cJSON_Array, &prefix) < 0)
        return V_HARD;
    if (has_min && n < min)
        return fail(c, "must have at least %.0f item%s", min, min == 1 ? "" : "s");
    if (has_max && n > max)
        return fail(c, "must have at most %.0f item%s", max, max == 1 ? "" : "s");
    if (prefix) { /* 2020-12: prefixItems, then items for the rest */
        tuple = prefix->child;
        has_tuple = 1;
    } else if (cJSON_IsArray(items)) { /* the older form: items as a list, additionalItems */
        tuple = items->child;
        rest = cJSON_GetObjectItemCaseSensitive(s, "additionalItems");
        has_tuple = 1;
    }
    for (const cJSON *x = inst->child; x; x = x->next, i++) {
        const cJSON *is = tuple ? tuple : rest;
        if (tuple)
            tuple = tuple->next;
        if (is && cJSON_IsFalse(is) && is == rest && has_tuple)
            return fail(c, "must have at most %d items", i);
        if (is && (rc = validate_at(c, is, x, depth, NULL, i)) != V_OK)
            return rc;
        if (is && ev)
            ev->seen[i] = 1;
    }
    if ((rc = check_contains(c, s, inst, depth, ev)) != V_OK)
        return rc;
    return cJSON_IsTrue(uniq) && n > 1 ? check_unique(c, inst, depth) : V_OK;
}

static int check_enum(vctx_t *c, const cJSON *s, const cJSON *inst, int depth)
{
    const cJSON *cst = cJSON_GetObjectItemCaseSensitive(s, "const"), *en;
    char msg[MSG_CAP] = "";
    if (get_kind(c, s, "enum", cJSON_Array, &en) < 0)
        return V_HARD;
    if (cst) {
        int eq = jv_equal(cst, inst, SCH_MAX_DEPTH - depth);
        if (eq < 0)
            return too_deep(c);
        if (!eq) {
            jv_append_clipped(msg, sizeof(msg), cst);
            return fail(c, "must be %s", msg);
        }
    }
    if (!en)
        return V_OK;
    for (const cJSON *x = en->child; x; x = x->next) {
        int eq = jv_equal(x, inst, SCH_MAX_DEPTH - depth);
        if (eq < 0)
            return too_deep(c);
        if (eq)
            return V_OK;
    }
    for (const cJSON *x = en->child; x; x = x->next) {
        if (x != en->child)
            appendf(msg, sizeof(msg), ", ");
        if (strlen(msg) > sizeof(msg) - 130) {
            appendf(msg, sizeof(msg), "...");
            break;
        }
        jv_append_clipped(msg, sizeof(msg), x);
    }
    return fail(c, "must be one of %s", msg);
}

/* ---- anyOf / oneOf ---- */

typedef struct branch_err {
    char path[PATH_CAP];
    char msg[MSG_CAP];
} branch_err_t;

/* Follows $refs from branch b (a few hops) to the schema object they name, or NULL. */
static const cJSON *deref(vctx_t *c, const cJSON *b)
{
    sch_doc_loc_t saved = c->cur, to;
    for (int hops = 0; hops < 8 && cJSON_IsObject(b); hops++) {
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(b, "$ref");
        if (!cJSON_IsString(ref))
            break;
        b = ref_resolve(c, ref->valuestring, &to) == 0 ? to.node : NULL;
        c->cur = (sch_doc_loc_t){to.res, to.res, to.base};
    }
    c->cur = saved;
    return cJSON_IsObject(b) ? b : NULL;
}

/* How branch b relates to inst by its "properties": {"k": {"const": v}}: 1 when every such
 * k present in inst equals v (and one is), -1 when one differs (*key names it), else 0. */
static int branch_disc(vctx_t *c, const cJSON *b, const cJSON *inst, const char **key)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(deref(c, b), "properties");
    int res = 0;
    if (!cJSON_IsObject(props) || !cJSON_IsObject(inst))
        return 0;
    for (const cJSON *p = props->child; p; p = p->next) {
        const cJSON *cst = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "const") : NULL;
        const cJSON *m = cst ? cJSON_GetObjectItemCaseSensitive(inst, p->string) : NULL;
        if (!m)
            continue;
        if (jv_equal(cst, m, SCH_MAX_DEPTH) != 1) {
            *key = p->string;
            return -1;
        }
        res = 1;
    }
    return res;
}

static int restore_err(vctx_t *c, const branch_err_t *e)
{
    memcpy(c->err_path, e->path, sizeof(c->err_path));
    memcpy(c->err_msg, e->msg, sizeof(c->err_msg));
    return V_FAIL;
}

/* No branch matched: report the branch the instance's discriminator selects, or the only
 * branch that got past the instance itself, or else every branch's complaint. */
static int explain_none(vctx_t *c, const cJSON *list, const cJSON *inst, const branch_err_t *errs,
                        int n)
{
    char msg[MSG_CAP] = "";
    const char *k0 = NULL;
    int i = 0, sel = -1, nsel = 0, nexcl = 0, same = 1, deeper = -1, ndeeper = 0;
    for (const cJSON *b = list->child; b; b = b->next, i++) {
        const char *k = NULL;
        int d = branch_disc(c, b, inst, &k);
        if (d > 0) {
            sel = i;
            nsel++;
        } else if (d < 0) {
            nexcl++;
            same = same && (!k0 || strcmp(k, k0) == 0);
            k0 = k0 ? k0 : k;
        }
        if (strlen(errs[i].path) > c->path_len) {
            deeper = i;
            ndeeper++;
        }
    }
    if (nsel == 1)
        return restore_err(c, &errs[sel]);
    if (nexcl == n && same) {
        for (const cJSON *b = list->child; b && strlen(msg) < sizeof(msg) - 130; b = b->next) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(deref(c, b), "properties");
            if (b != list->child)
                appendf(msg, sizeof(msg), ", ");
            jv_append_clipped(
                msg, sizeof(msg),
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, k0), "const"));
        }
        size_t saved = path_push_key(c, k0);
        int rc = fail(c, "must be one of %s", msg);
        path_pop(c, saved);
        return rc;
    }
    if (ndeeper == 1)
        return restore_err(c, &errs[deeper]);
    for (i = 0; i < n && strlen(msg) < sizeof(msg) - 40; i++) {
        const char *rel = errs[i].path + (strlen(errs[i].path) > c->path_len ? c->path_len : 0);
        appendf(msg, sizeof(msg), "%s(%d) %s%s%s", i ? "; " : "", i + 1,
                rel == errs[i].path ? "" : rel, rel == errs[i].path ? "" : ": ", errs[i].msg);
    }
    return fail(c, "does not match any alternative: %s", msg);
}

static void branch_name(vctx_t *c, const cJSON *b, int i, char *buf, size_t size)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(b, "title");
    if (!cJSON_IsString(t))
        t = cJSON_GetObjectItemCaseSensitive(deref(c, b), "title");
    if (cJSON_IsString(t))
        snprintf(buf, size, "%d (%.60s)", i + 1, t->valuestring);
    else
        snprintf(buf, size, "%d", i + 1);
}

/* Branch b against inst; with ev, the branch's annotations join ev when it matches. */
static int check_branch(vctx_t *c, const cJSON *b, const cJSON *inst, int depth, eval_t *ev)
{
    eval_t bev = {NULL, ev ? ev->n : 0};
    if (ev && !(bev.seen = calloc((size_t)ev->n + 1, 1)))
        return out_of_memory(c);
    int rc = validate(c, b, inst, depth + 1, ev ? &bev : NULL);
    for (int i = 0; rc == V_OK && ev && i < ev->n; i++)
        ev->seen[i] |= bev.seen[i];
    free(bev.seen);
    return rc;
}

/* anyOf (one == 0) or oneOf (one == 1). With ev every branch is tried (annotations). */
static int check_choice(vctx_t *c, const cJSON *list, const cJSON *inst, int depth, int one,
                        eval_t *ev)
{
    int n = cJSON_GetArraySize(list), i = 0, matched = 0, first = -1, rc = V_OK;
    const cJSON *fb = NULL;
    branch_err_t *errs = calloc((size_t)n, sizeof(*errs));
    if (!errs)
        return out_of_memory(c);
    for (const cJSON *b = list->child; b; b = b->next, i++) {
        rc = check_branch(c, b, inst, depth, ev);
        if (rc == V_HARD || (rc == V_OK && !one && !ev))
            goto out;
        if (rc == V_OK && matched++ == 0) {
            first = i;
            fb = b;
        } else if (rc == V_OK && one) {
            char n1[80], n2[80];
            branch_name(c, fb, first, n1, sizeof(n1));
            branch_name(c, b, i, n2, sizeof(n2));
            rc = fail(c, "must match exactly one alternative, but matches %s and %s", n1, n2);
            goto out;
        } else if (rc != V_OK) {
            memcpy(errs[i].path, c->err_path, sizeof(errs[i].path));
            memcpy(errs[i].msg, c->err_msg, sizeof(errs[i].msg));
        }
    }
    rc = matched ? V_OK : explain_none(c, list, inst, errs, n);
out:
    free(errs);
    return rc;
}

/* ---- the validator ---- */

static int type_error(vctx_t *c, unsigned mask, const cJSON *inst)
{
    char want[96] = "";
    int left = __builtin_popcount(mask);
    for (size_t i = 0; i < sizeof(type_names) / sizeof(*type_names); i++) {
        if (!(mask & (1u << i)))
            continue;
        const char *sep = --left > 1 ? ", " : left == 1 ? " or " : "";
        appendf(want, sizeof(want), "%s%s", type_names[i], sep);
    }
    return fail(c, "expected %s, got %s", want, type_of(inst));
}

/* $ref: the target applies in place, in its own resource; bounded by SCH_MAX_REFS. */
static int apply_ref(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev)
{
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
    sch_doc_loc_t to, saved = c->cur;
    int rc;
    if (cJSON_GetObjectItemCaseSensitive(s, "$dynamicRef"))
        return bad_schema(c, "keyword \"$dynamicRef\" is not supported");
    if (!ref)
        return V_OK;
    if (!cJSON_IsString(ref))
        return bad_schema(c, "\"$ref\" must be a string");
    if (++c->refs > SCH_MAX_REFS) {
        memcpy(c->err_path, c->path, c->path_len + 1);
        snprintf(c->err_msg, sizeof(c->err_msg), "more than %d \"$ref\" followed", SCH_MAX_REFS);
        return V_HARD;
    }
    if ((rc = ref_resolve(c, ref->valuestring, &to)) < 0)
        return rc == -V_HARD
                   ? V_HARD
                   : bad_schema(c, "cannot resolve \"$ref\": \"%.200s\"", ref->valuestring);
    c->cur = (sch_doc_loc_t){to.res, to.res, to.base};
    rc = validate(c, to.node, inst, depth + 1, ev);
    c->cur = saved;
    return rc;
}

/* if, then, else: the branch taken applies in place; "if"'s annotations count when it holds. */
static int apply_cond(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev)
{
    const cJSON *cond = cJSON_GetObjectItemCaseSensitive(s, "if"), *next;
    if (!cond)
        return V_OK;
    int rc = check_branch(c, cond, inst, depth, ev);
    if (rc == V_HARD)
        return rc;
    next = cJSON_GetObjectItemCaseSensitive(s, rc == V_OK ? "then" : "else");
    return next ? validate(c, next, inst, depth + 1, ev) : V_OK;
}

/* allOf, anyOf, oneOf, not, if/then/else. */
static int apply_logic(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev)
{
    const cJSON *list, *neg;
    int rc;
    if (get_kind(c, s, "allOf", cJSON_Array, &list) < 0)
        return V_HARD;
    for (const cJSON *b = list ? list->child : NULL; b; b = b->next)
        if ((rc = validate(c, b, inst, depth + 1, ev)) != V_OK)
            return rc;
    for (int one = 0; one < 2; one++) {
        if (get_kind(c, s, one ? "oneOf" : "anyOf", cJSON_Array, &list) < 0)
            return V_HARD;
        if (list && (rc = check_choice(c, list, inst, depth, one, ev)) != V_OK)
            return rc;
    }
    if ((neg = cJSON_GetObjectItemCaseSensitive(s, "not"))) {
        rc = validate(c, neg, inst, depth + 1, NULL);
        if (rc == V_HARD)
            return rc;
        if (rc == V_OK)
            return fail(c, "must not match the schema in \"not\"");
    }
    return apply_cond(c, s, inst, depth, ev);
}

/* Every keyword of schema object s but unevaluatedProperties and unevaluatedItems. */
static int apply(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev)
{
    unsigned mask;
    int rc;
    if ((rc = apply_ref(c, s, inst, depth, ev)) != V_OK)
        return rc;
    if ((rc = get_types(c, s, &mask)) < 0)
        return V_HARD;
    if (rc && !(mask & type_bits(inst)))
        return type_error(c, mask, inst);
    if ((rc = check_enum(c, s, inst, depth)) != V_OK)
        return rc;
    if (cJSON_IsString(inst))
        rc = check_string(c, s, inst);
    else if (cJSON_IsNumber(inst))
        rc = check_number(c, s, inst);
    else if (cJSON_IsObject(inst))
        rc = check_object(c, s, inst, depth, ev);
    else if (cJSON_IsArray(inst))
        rc = check_array(c, s, inst, depth, ev);
    if (rc != V_OK)
        return rc;
    return apply_logic(c, s, inst, depth, ev);
}

/* unevaluatedProperties or unevaluatedItems (u) for the members or items ev has not seen. */
static int check_unevaluated(vctx_t *c, const cJSON *u, const cJSON *inst, int depth, eval_t *ev)
{
    int obj = cJSON_IsObject(inst), i = 0, rc;
    for (const cJSON *x = inst->child; x; x = x->next, i++) {
        if (ev->seen[i])
            continue;
        if (cJSON_IsFalse(u) && obj)
            return fail(c, "unknown property \"%.200s\" (unevaluatedProperties)", x->string);
        if (cJSON_IsFalse(u))
            return fail(c, "item %d is not allowed (unevaluatedItems)", i);
        if ((rc = validate_at(c, u, x, depth, obj ? x->string : NULL, i)) != V_OK)
            return rc;
        ev->seen[i] = 1;
    }
    return V_OK;
}

/* Schema s against inst. ev (NULL: not wanted) collects which members or items of inst the
 * keywords of s and its in-place subschemas evaluated, for an enclosing unevaluated*. */
static int validate(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev)
{
    sch_doc_loc_t saved;
    eval_t local = {NULL, 0};
    int rc, box = cJSON_IsObject(inst) || cJSON_IsArray(inst);
    if (depth > SCH_MAX_DEPTH)
        return too_deep(c);
    if (cJSON_IsBool(s))
        return cJSON_IsTrue(s) ? V_OK : fail(c, "is not allowed here");
    if (!cJSON_IsObject(s))
        return bad_schema(c, "a schema must be an object or a boolean");
    if ((rc = resource_enter(c, s, &saved)) != V_OK)
        return rc;
    const cJSON *u =
        !box ? NULL
             : cJSON_GetObjectItemCaseSensitive(s, cJSON_IsObject(inst) ? "unevaluatedProperties"
                                                                        : "unevaluatedItems");
    if (u) {
        local.n = cJSON_GetArraySize(inst);
        if (!(local.seen = calloc((size_t)local.n + 1, 1))) {
            rc = out_of_memory(c);
            goto out;
        }
    }
    rc = apply(c, s, inst, depth, u ? &local : box ? ev : NULL);
    if (rc == V_OK && u)
        rc = check_unevaluated(c, u, inst, depth, &local);
    for (int i = 0; rc == V_OK && u && ev && i < local.n; i++)
        ev->seen[i] |= local.seen[i];
out:
    free(local.seen);
    c->cur = saved;
    return rc;
}

/* ---- checking a schema itself ---- */

/* Validation keywords of JSON Schema (2020-12 and older drafts) that mcpq does not
 * implement: a schema using one is refused (sch.h). */
static const char *const refused_keywords[] = {"$dynamicRef", "$recursiveRef", "$recursiveAnchor",
                                               "extends",     "disallow",      "divisibleBy"};

static int check_schema(vctx_t *c, const cJSON *s, int depth);

typedef struct check_arg {
    vctx_t *c;
    int depth;
} check_arg_t;

static int check_sub(void *arg, const cJSON *sub, const char *kw, const char *name, int index)
{
    check_arg_t *a = arg;
    size_t saved = path_push_key(a->c, kw);
    if (name)
        path_push_key(a->c, name);
    else if (index >= 0)
        path_push_index(a->c, index);
    int rc = check_schema(a->c, sub, a->depth + 1);
    path_pop(a->c, saved);
    return rc;
}

/* The error of keyword kw of the schema at the current path. */
static int bad_keyword(vctx_t *c, const char *kw, const char *msg)
{
    size_t saved = path_push_key(c, kw);
    int rc = bad_schema(c, "%s", msg);
    path_pop(c, saved);
    return rc;
}

/* Keywords whose value must be a schema, a map of them, or a list of them (sch_doc_each_sub
 * skips the values that are none). */
static int check_shapes(vctx_t *c, const cJSON *s)
{
    static const char *const one[] = {"additionalProperties",
                                      "additionalItems",
                                      "not",
                                      "propertyNames",
                                      "contains",
                                      "if",
                                      "then",
                                      "else",
                                      "unevaluatedProperties",
                                      "unevaluatedItems",
                                      "items"};
    static const char *const maps[] = {"properties",  "patternProperties", "$defs",
                                       "definitions", "dependentSchemas",  "dependencies"};
    static const char *const lists[] = {"anyOf", "oneOf", "allOf", "prefixItems"};
    const cJSON *v;
    for (size_t i = 0; i < sizeof(one) / sizeof(*one); i++)
        if ((v = cJSON_GetObjectItemCaseSensitive(s, one[i])) && !cJSON_IsObject(v) &&
            !cJSON_IsBool(v) && !(i == 10 && cJSON_IsArray(v)))
            return bad_keyword(c, one[i], "a schema must be an object or a boolean");
    for (size_t i = 0; i < sizeof(maps) / sizeof(*maps); i++) {
        if (get_kind(c, s, maps[i], cJSON_Object, &v) < 0)
            return V_HARD;
        for (v = v ? v->child : NULL; v; v = v->next) {
            if (i == 1 && pattern_match(c, v, v->string, "") < 0)
                return V_HARD;
            if (!cJSON_IsObject(v) && !cJSON_IsBool(v) && !(i == 5 && cJSON_IsArray(v)))
                return bad_keyword(c, maps[i], "a schema must be an object or a boolean");
        }
    }
    for (size_t i = 0; i < sizeof(lists) / sizeof(*lists); i++)
        if (get_kind(c, s, lists[i], cJSON_Array, &v) < 0)
            return V_HARD;
    if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(s, "items")) &&
        cJSON_GetObjectItemCaseSensitive(s, "prefixItems"))
        return bad_schema(c, "\"items\" must not be an array next to \"prefixItems\"");
    return V_OK;
}

/* The names in dependentRequired and the arrays of dependencies. */
static int check_dep_names(vctx_t *c, const cJSON *s)
{
    const cJSON *map;
    for (int i = 0; i < 2; i++) {
        const char *kw = i ? "dependencies" : "dependentRequired";
        if (get_kind(c, s, kw, cJSON_Object, &map) < 0)
            return V_HARD;
        for (const cJSON *d = map ? map->child : NULL; d; d = d->next) {
            int ok = cJSON_IsArray(d) || (i == 1 && !cJSON_IsArray(d));
            for (const cJSON *n = cJSON_IsArray(d) ? d->child : NULL; n; n = n->next)
                ok = ok && cJSON_IsString(n);
            if (!ok)
                return bad_schema(c, "\"%s\" must map names to arrays of names", kw);
        }
    }
    return V_OK;
}

/* Identifiers and references: "$id", "$anchor" strings, every "$ref" resolves, no keyword
 * of refused_keywords. */
static int check_refs(vctx_t *c, const cJSON *s)
{
    static const char *const strs[] = {"$id", "$anchor", "$dynamicAnchor", "$ref"};
    const cJSON *v;
    sch_doc_loc_t to;
    for (size_t i = 0; i < sizeof(refused_keywords) / sizeof(*refused_keywords); i++)
        if (cJSON_GetObjectItemCaseSensitive(s, refused_keywords[i]))
            return bad_keyword(c, refused_keywords[i],
                               "this keyword is not supported by mcpq (docs/tools.md, "
                               "\"Input schemas\")");
    for (size_t i = 0; i < sizeof(strs) / sizeof(*strs); i++)
        if ((v = cJSON_GetObjectItemCaseSensitive(s, strs[i])) && !cJSON_IsString(v))
            return bad_schema(c, "\"%s\" must be a string", strs[i]);
    if ((v = cJSON_GetObjectItemCaseSensitive(s, "$ref"))) {
        int rc = ref_resolve(c, v->valuestring, &to);
        if (rc == -V_HARD)
            return V_HARD;
        if (rc < 0)
            return bad_schema(c, "cannot resolve \"$ref\": \"%.200s\"", v->valuestring);
    }
    return check_dep_names(c, s);
}

/* Keywords with a scalar value: type, enum, required, counts, bounds, multipleOf, pattern. */
static int check_values(vctx_t *c, const cJSON *s)
{
    static const char *const counts[] = {"minLength",   "maxLength",     "minItems",
                                         "maxItems",    "minProperties", "maxProperties",
                                         "minContains", "maxContains"};
    static const char *const numbers[] = {"minimum", "maximum", "exclusiveMinimum",
                                          "exclusiveMaximum"};
    const cJSON *v;
    unsigned mask;
    double n;
    if (get_types(c, s, &mask) < 0 || get_kind(c, s, "enum", cJSON_Array, &v) < 0 ||
        get_kind(c, s, "uniqueItems", cJSON_True, &v) < 0 ||
        get_kind(c, s, "required", cJSON_Array, &v) < 0)
        return V_HARD;
    for (v = v ? v->child : NULL; v; v = v->next)
        if (!cJSON_IsString(v))
            return bad_schema(c, "\"required\" must be an array of strings");
    for (size_t i = 0; i < sizeof(counts) / sizeof(*counts); i++)
        if (get_count(c, s, counts[i], &n) < 0)
            return V_HARD;
    for (size_t i = 0; i < sizeof(numbers) / sizeof(*numbers); i++)
        if (get_number(c, s, numbers[i], &v) < 0)
            return V_HARD;
    if ((v = cJSON_GetObjectItemCaseSensitive(s, "multipleOf")) &&
        (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || !isfinite(v->valuedouble)))
        return bad_schema(c, "\"multipleOf\" must be a number greater than 0");
    if ((v = cJSON_GetObjectItemCaseSensitive(s, "pattern")) &&
        (!cJSON_IsString(v) || pattern_match(c, v, v->valuestring, "") < 0))
        return cJSON_IsString(v) ? V_HARD : bad_schema(c, "\"pattern\" must be a string");
    return V_OK;
}

static int check_schema(vctx_t *c, const cJSON *s, int depth)
{
    sch_doc_loc_t saved;
    int rc;
    if (depth > SCH_MAX_DEPTH)
        return too_deep(c);
    if (cJSON_IsBool(s))
        return V_OK;
    if (!cJSON_IsObject(s))
        return bad_schema(c, "a schema must be an object or a boolean");
    if ((rc = resource_enter(c, s, &saved)) != V_OK)
        return rc;
    if ((rc = check_values(c, s)) == V_OK && (rc = check_shapes(c, s)) == V_OK &&
        (rc = check_refs(c, s)) == V_OK) {
        check_arg_t a = {c, depth};
        rc = sch_doc_each_sub(s, check_sub, &a);
    }
    c->cur = saved;
    return rc;
}

/* ---- public API ---- */

static vctx_t *ctx_new(const char *root, const cJSON *doc)
{
    vctx_t *c = calloc(1, sizeof(*c));
    if (c) {
        snprintf(c->path, sizeof(c->path), "%s", root ? root : "$");
        c->path_len = strlen(c->path);
        c->doc = doc;
        c->cur = (sch_doc_loc_t){doc, doc, ""};
    }
    return c;
}

/* Frees c and turns rc into the public result, filling errstr on failure. */
static int ctx_finish(vctx_t *c, int rc, char *errstr, size_t errstr_size)
{
    int ret = rc == V_OK ? 0 : c->oom ? MCPQ_ENOMEM : MCPQ_EINVAL;
    if (rc != V_OK && errstr && errstr_size)
        snprintf(errstr, errstr_size, "%s: %s", c->err_path, c->err_msg);
    for (int i = 0; i < c->nrx; i++)
        regfree(&c->rx[i].rx);
    for (size_t i = 0; i < c->nall; i++)
        regfree(&c->all[i].rx);
    free(c->all);
    if (c->own_idx)
        sch_doc_index_free(c->idx);
    free(c);
    return ret;
}

static int no_memory(const char *root, char *errstr, size_t errstr_size)
{
    if (errstr && errstr_size)
        snprintf(errstr, errstr_size, "%s: out of memory", root ? root : "$");
    return MCPQ_ENOMEM;
}

int sch_validate(const cJSON *schema, const cJSON *instance, const char *root, char *errstr,
                 size_t errstr_size)
{
    vctx_t *c = ctx_new(root, schema);
    if (!c)
        return no_memory(root, errstr, errstr_size);
    int rc = schema && instance ? validate(c, schema, instance, 0, NULL)
                                : bad_schema(c, "no schema or no instance given");
    return ctx_finish(c, rc, errstr, errstr_size);
}

/* The whole check of schema in c: identifiers indexed, then every subschema. */
static int check_document(vctx_t *c, const cJSON *schema)
{
    const char *dup;
    if (!schema)
        return bad_schema(c, "no schema given");
    if (!doc_index(c))
        return V_HARD;
    if ((dup = sch_doc_index_duplicate(c->idx)))
        return bad_schema(c, "two subschemas are identified as \"%.200s\"", dup);
    return check_schema(c, schema, 0);
}

int sch_schema_check(const cJSON *schema, const char *root, char *errstr, size_t errstr_size)
{
    vctx_t *c = ctx_new(root, schema);
    if (!c)
        return no_memory(root, errstr, errstr_size);
    return ctx_finish(c, check_document(c, schema), errstr, errstr_size);
}

void sch_compiled_free(sch_compiled_t *comp)
{
    if (!comp)
        return;
    for (size_t i = 0; i < comp->nrx; i++)
        regfree(&comp->rx[i].rx);
    free(comp->rx);
    sch_doc_index_free(comp->idx);
    cJSON_Delete(comp->schema);
    free(comp);
}

sch_compiled_t *sch_compile(const cJSON *schema, const char *root, char *errstr, size_t errstr_size)
{
    sch_compiled_t *comp = calloc(1, sizeof(*comp));
    vctx_t *c = NULL;
    if (!comp || (schema && !(comp->schema = cJSON_Duplicate(schema, 1))) ||
        !(c = ctx_new(root, comp->schema))) {
        sch_compiled_free(comp);
        no_memory(root, errstr, errstr_size);
        return NULL;
    }
    c->collect = 1;
    int rc = check_document(c, comp->schema);
    if (rc == V_OK) {
        comp->idx = c->idx;
        c->own_idx = 0;
        comp->rx = c->all;
        comp->nrx = c->nall;
        c->all = NULL;
        c->nall = 0;
        if (comp->nrx > 1)
            qsort(comp->rx, comp->nrx, sizeof(*comp->rx), pattern_cmp);
    }
    if (ctx_finish(c, rc, errstr, errstr_size) != 0) {
        sch_compiled_free(comp);
        return NULL;
    }
    return comp;
}

int sch_compiled_validate(const sch_compiled_t *comp, const cJSON *instance, const char *root,
                          char *errstr, size_t errstr_size)
{
    vctx_t *c = ctx_new(root, comp ? comp->schema : NULL);
    if (!c)
        return no_memory(root, errstr, errstr_size);
    c->comp = comp;
    c->idx = comp ? comp->idx : NULL;
    int rc = comp && instance ? validate(c, comp->schema, instance, 0, NULL)
                              : bad_schema(c, "no schema or no instance given");
    return ctx_finish(c, rc, errstr, errstr_size);
}

const cJSON *sch_compiled_schema(const sch_compiled_t *comp)
{
    return comp ? comp->schema : NULL;
}

/* The table CMakeLists.txt generates from the schemas directory, ending with a NULL name. */
struct sch_embedded {
    const char *name;
    const unsigned char *text;
    size_t len;
};
extern const struct sch_embedded sch_embedded_files[];

/* The parsed embedded schemas: written once under pthread_once, read-only afterwards, kept
 * for the life of the process (the only process-wide state of this module). */
static cJSON **builtin_docs;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static void builtin_parse(void)
{
    size_t n = 0;
    while (sch_embedded_files[n].name)
        n++;
    cJSON **docs = calloc(n + 1, sizeof(*docs));
    if (!docs)
        return;
    for (size_t i = 0; i < n; i++) {
        docs[i] = cJSON_ParseWithLength((const char *)sch_embedded_files[i].text,
                                        sch_embedded_files[i].len);
        if (!docs[i])
            log_msgf(LOG_ERROR, "embedded schema %s is not valid JSON", sch_embedded_files[i].name);
    }
    builtin_docs = docs;
}

static const cJSON *builtin_named(const char *name, const char **stable)
{
    if (!name || pthread_once(&builtin_once, builtin_parse) != 0 || !builtin_docs)
        return NULL;
    for (size_t i = 0; sch_embedded_files[i].name; i++)
        if (strcmp(sch_embedded_files[i].name, name) == 0) {
            *stable = sch_embedded_files[i].name;
            return builtin_docs[i];
        }
    return NULL;
}

const cJSON *sch_builtin(const char *name)
{
    const char *stable;
    return builtin_named(name, &stable);
}
