#include "sch.h"

#include "err.h"
#include "jv.h"
#include "log.h"
#include "rx.h"
#include "util.h"

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

/* One validation (or schema check): the current path, the first error, compiled patterns. */
typedef struct vctx {
    char path[PATH_CAP];
    size_t path_len;
    char err_path[PATH_CAP];
    char err_msg[MSG_CAP];
    int oom;
    int nrx;
    pattern_entry_t rx[PATTERN_CACHE];
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

/* ---- patterns: translated by rx.c, compiled once per validation ---- */

/* Compiles pattern text (the value of node, cached per node). NULL on a bad pattern. */
static const regex_t *pattern_get(vctx_t *c, const cJSON *node, const char *pattern, regex_t *tmp)
{
    for (int i = 0; i < c->nrx; i++)
        if (c->rx[i].node == node)
            return &c->rx[i].rx;
    if (strlen(pattern) > PATTERN_MAX)
        return NULL;
    util_buf_t ere;
    util_buf_init(&ere, 16 * PATTERN_MAX);
    int rc = rx_translate(pattern, &ere);
    regex_t *rx = c->nrx < PATTERN_CACHE ? &c->rx[c->nrx].rx : tmp;
    if (rc == 0)
        rc = regcomp(rx, ere.data ? ere.data : "", REG_EXTENDED | REG_NOSUB) == 0 ? 0 : -1;
    util_buf_cleanup(&ere);
    if (rc < 0)
        return NULL;
    if (rx != tmp)
        c->rx[c->nrx++].node = node;
    return rx;
}

/* 1 match, 0 no match, -V_HARD when the pattern is unusable. */
static int pattern_match(vctx_t *c, const cJSON *node, const char *pattern, const char *s)
{
    regex_t tmp;
    const regex_t *rx = pattern_get(c, node, pattern, &tmp);
    if (!rx)
        return -bad_schema(c, "pattern \"%.100s\" is not supported (POSIX ERE subset)", pattern);
    int m = regexec(rx, s, 0, NULL, 0) == 0;
    if (rx == &tmp)
        regfree(&tmp);
    return m;
}

/* ---- $ref ---- */

/* Resolves ref against root; *doc becomes the document it lands in. NULL if unresolvable. */
static const cJSON *ref_resolve(const cJSON *root, const char *ref, const cJSON **doc)
{
    const char *hash = strchr(ref, '#');
    const cJSON *at = root;
    if (hash != ref && *ref) {
        char name[128];
        size_t n = hash ? (size_t)(hash - ref) : strlen(ref);
        if (n >= sizeof(name))
            return NULL;
        memcpy(name, ref, n);
        name[n] = '\0';
        at = sch_builtin(name);
        if (!at)
            return NULL;
    }
    *doc = at;
    const char *p = hash ? hash + 1 : "";
    if (*p && *p != '/')
        return NULL; /* anchors ("#foo") are not supported */
    while (*p == '/' && at) {
        char tok[256];
        size_t n = 0;
        for (p++; *p && *p != '/'; p++) {
            char ch = *p;
            if (ch == '~' && (p[1] == '0' || p[1] == '1'))
                ch = *++p == '0' ? '~' : '/';
            else if (ch == '%' && p[1] && p[2]) {
                char hex[3] = {p[1], p[2], 0};
                ch = (char)strtol(hex, NULL, 16);
                p += 2;
            }
            if (n + 1 >= sizeof(tok))
                return NULL;
            tok[n++] = ch;
        }
        tok[n] = '\0';
        if (cJSON_IsArray(at)) {
            long long i;
            at = util_parse_ll(tok, 0, 1 << 20, &i) == 0 ? cJSON_GetArrayItem(at, (int)i) : NULL;
        } else {
            at = cJSON_IsObject(at) ? cJSON_GetObjectItemCaseSensitive(at, tok) : NULL;
        }
    }
    return at;
}

/* ---- validation ---- */

static int validate(vctx_t *c, const cJSON *root, const cJSON *s, const cJSON *inst, int depth);

/* validate() for a member or item: pushes the path segment, pops it after. */
static int validate_at(vctx_t *c, const cJSON *root, const cJSON *s, const cJSON *inst, int depth,
                       const char *key, int index)
{
    size_t saved = key ? path_push_key(c, key) : path_push_index(c, index);
    int rc = validate(c, root, s, inst, depth + 1);
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
    return V_OK;
}

/* propertyNames: the member name, as a string, against schema names. */
static int check_name(vctx_t *c, const cJSON *root, const cJSON *names, char *key, int depth)
{
    cJSON name = {.type = cJSON_String, .valuestring = key};
    size_t saved = path_push_key(c, key);
    int rc = validate(c, root, names, &name, depth + 1);
    path_pop(c, saved);
    if (rc == V_FAIL) {
        char msg[MSG_CAP];
        snprintf(msg, sizeof(msg), "invalid property name: %.480s", c->err_msg);
        memcpy(c->err_msg, msg, sizeof(msg));
    }
    return rc;
}

static int check_object(vctx_t *c, const cJSON *root, const cJSON *s, const cJSON *inst, int depth)
{
    const cJSON *req, *props, *pprops,
        *addl = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(s, "propertyNames");
    double min = 0, max = 0;
    int has_min = get_count(c, s, "minProperties", &min),
        has_max = get_count(c, s, "maxProperties", &max);
    int rc;
    if (has_min < 0 || has_max < 0 || get_kind(c, s, "required", cJSON_Array, &req) < 0 ||
        get_kind(c, s, "properties", cJSON_Object, &props) < 0 ||
        get_kind(c, s, "patternProperties", cJSON_Object, &pprops) < 0)
        return V_HARD;
    for (const cJSON *r = req ? req->child : NULL; r; r = r->next) {
        if (!cJSON_IsString(r))
            return bad_schema(c, "\"required\" must be an array of strings");
        if (!cJSON_GetObjectItemCaseSensitive(inst, r->valuestring))
            return fail(c, "missing required property \"%.200s\"", r->valuestring);
    }
    for (const cJSON *m = inst->child; m; m = m->next) {
        const cJSON *ps = props ? cJSON_GetObjectItemCaseSensitive(props, m->string) : NULL;
        if (names && (rc = check_name(c, root, names, m->string, depth)) != V_OK)
            return rc;
        int matched = ps != NULL;
        if (ps && (rc = validate_at(c, root, ps, m, depth, m->string, 0)) != V_OK)
            return rc;
        for (const cJSON *pp = pprops ? pprops->child : NULL; pp; pp = pp->next) {
            int hit = pattern_match(c, pp, pp->string, m->string);
            if (hit < 0)
                return V_HARD;
            if (hit && (rc = validate_at(c, root, pp, m, depth, m->string, 0)) != V_OK)
                return rc;
            matched |= hit;
        }
        if (matched || !addl)
            continue;
        if (cJSON_IsFalse(addl))
            return fail(c, "unknown property \"%.200s\"", m->string);
        if ((rc = validate_at(c, root, addl, m, depth, m->string, 0)) != V_OK)
            return rc;
    }
    int n = cJSON_GetArraySize(inst);
    if (has_min && n < min)
        return fail(c, "must have at least %.0f propert%s", min, min == 1 ? "y" : "ies");
    if (has_max && n > max)
        return fail(c, "must have at most %.0f propert%s", max, max == 1 ? "y" : "ies");
    return V_OK;
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

static int check_array(vctx_t *c, const cJSON *root, const cJSON *s, const cJSON *inst, int depth)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items"), *uniq;
    const cJSON *addl = cJSON_GetObjectItemCaseSensitive(s, "additionalItems");
    double min = 0, max = 0;
    int has_min = get_count(c, s, "minItems", &min), has_max = get_count(c, s, "maxItems", &max);
    int n = cJSON_GetArraySize(inst), i = 0, rc;
    if (has_min < 0 || has_max < 0 || get_kind(c, s, "uniqueItems", cJSON_True, &uniq) < 0)
        return V_HARD;
    if (has_min && n < min)
        return fail(c, "must have at least %.0f item%s", min, min == 1 ? "" : "s");
    if (has_max && n > max)
        return fail(c, "must have at most %.0f item%s", max, max == 1 ? "" : "s");
    const cJSON *tuple = cJSON_IsArray(items) ? items->child : NULL;
    for (const cJSON *x = inst->child; x; x = x->next, i++) {
        const cJSON *is = cJSON_IsArray(items) ? (tuple ? tuple : addl) : items;
        if (tuple)
            tuple = tuple->next;
        if (is && cJSON_IsFalse(is) && is == addl)
            return fail(c, "must have at most %d items", i);
        if (is && (rc = validate_at(c, root, is, x, depth, NULL, i)) != V_OK)
            return rc;
    }
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
static const cJSON *deref(const cJSON *root, const cJSON *b)
{
    const cJSON *doc = root;
    for (int hops = 0; hops < 8 && cJSON_IsObject(b); hops++) {
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(b, "$ref");
        if (!cJSON_IsString(ref))
            return b;
        b = ref_resolve(doc, ref->valuestring, &doc);
    }
    return cJSON_IsObject(b) ? b : NULL;
}

/* How branch b relates to inst by its "properties": {"k": {"const": v}}: 1 when every such
 * k present in inst equals v (and one is), -1 when one differs (*key names it), else 0. */
static int branch_disc(const cJSON *root, const cJSON *b, const cJSON *inst, const char **key)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(deref(root, b), "properties");
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
static int explain_none(vctx_t *c, const cJSON *root, const cJSON *list, const cJSON *inst,
                        const branch_err_t *errs, int n)
{
    char msg[MSG_CAP] = "";
    const char *k0 = NULL;
    int i = 0, sel = -1, nsel = 0, nexcl = 0, same = 1, deeper = -1, ndeeper = 0;
    for (const cJSON *b = list->child; b; b = b->next, i++) {
        const char *k = NULL;
        int d = branch_disc(root, b, inst, &k);
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
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(deref(root, b), "properties");
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

static void branch_name(const cJSON *root, const cJSON *b, int i, char *buf, size_t size)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(b, "title");
    if (!cJSON_IsString(t))
        t = cJSON_GetObjectItemCaseSensitive(deref(root, b), "title");
    if (cJSON_IsString(t))
        snprintf(buf, size, "%d (%.60s)", i + 1, t->valuestring);
    else
        snprintf(buf, size, "%d", i + 1);
}

/* anyOf (one == 0) or oneOf (one == 1). */
static int check_choice(vctx_t *c, const cJSON *root, const cJSON *list, const cJSON *inst,
                        int depth, int one)
{
    int n = cJSON_GetArraySize(list), i = 0, matched = 0, first = -1, rc = V_OK;
    const cJSON *fb = NULL;
    branch_err_t *errs = calloc((size_t)n, sizeof(*errs));
    if (!errs)
        return out_of_memory(c);
    for (const cJSON *b = list->child; b; b = b->next, i++) {
        rc = validate(c, root, b, inst, depth + 1);
        if (rc == V_HARD || (rc == V_OK && !one))
            goto out;
        if (rc == V_OK && matched++ == 0) {
            first = i;
            fb = b;
        } else if (rc == V_OK) {
            char n1[80], n2[80];
            branch_name(root, fb, first, n1, sizeof(n1));
            branch_name(root, b, i, n2, sizeof(n2));
            rc = fail(c, "must match exactly one alternative, but matches %s and %s", n1, n2);
            goto out;
        } else {
            memcpy(errs[i].path, c->err_path, sizeof(errs[i].path));
            memcpy(errs[i].msg, c->err_msg, sizeof(errs[i].msg));
        }
    }
    rc = matched ? V_OK : explain_none(c, root, list, inst, errs, n);
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

static int validate(vctx_t *c, const cJSON *root, const cJSON *s, const cJSON *inst, int depth)
{
    const cJSON *ref, *list, *neg;
    unsigned mask;
    int rc;
    if (depth > SCH_MAX_DEPTH)
        return too_deep(c);
    if (cJSON_IsBool(s))
        return cJSON_IsTrue(s) ? V_OK : fail(c, "is not allowed here");
    if (!cJSON_IsObject(s))
        return bad_schema(c, "a schema must be an object or a boolean");
    if ((ref = cJSON_GetObjectItemCaseSensitive(s, "$ref"))) {
        const cJSON *doc = root, *target;
        if (!cJSON_IsString(ref))
            return bad_schema(c, "\"$ref\" must be a string");
        if (!(target = ref_resolve(root, ref->valuestring, &doc)))
            return bad_schema(c, "cannot resolve \"$ref\": \"%.200s\"", ref->valuestring);
        if ((rc = validate(c, doc, target, inst, depth + 1)) != V_OK)
            return rc;
    }
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
        rc = check_object(c, root, s, inst, depth);
    else if (cJSON_IsArray(inst))
        rc = check_array(c, root, s, inst, depth);
    if (rc != V_OK)
        return rc;
    if (get_kind(c, s, "allOf", cJSON_Array, &list) < 0)
        return V_HARD;
    for (const cJSON *b = list ? list->child : NULL; b; b = b->next)
        if ((rc = validate(c, root, b, inst, depth + 1)) != V_OK)
            return rc;
    for (int one = 0; one < 2; one++) {
        if (get_kind(c, s, one ? "oneOf" : "anyOf", cJSON_Array, &list) < 0)
            return V_HARD;
        if (list && (rc = check_choice(c, root, list, inst, depth, one)) != V_OK)
            return rc;
    }
    if ((neg = cJSON_GetObjectItemCaseSensitive(s, "not"))) {
        rc = validate(c, root, neg, inst, depth + 1);
        if (rc == V_HARD)
            return rc;
        if (rc == V_OK)
            return fail(c, "must not match the schema in \"not\"");
    }
    return V_OK;
}

/* ---- checking a schema itself ---- */

static int check_schema(vctx_t *c, const cJSON *root, const cJSON *s, int depth);

static int check_sub(vctx_t *c, const cJSON *root, const cJSON *s, int depth, const char *kw,
                     const char *name, int index)
{
    size_t saved = path_push_key(c, kw);
    if (name)
        path_push_key(c, name);
    else if (index >= 0)
        path_push_index(c, index);
    int rc = check_schema(c, root, s, depth + 1);
    path_pop(c, saved);
    return rc;
}

static int check_schema(vctx_t *c, const cJSON *root, const cJSON *s, int depth)
{
    static const char *const counts[] = {"minLength", "maxLength",     "minItems",
                                         "maxItems",  "minProperties", "maxProperties"};
    static const char *const numbers[] = {"minimum", "maximum", "exclusiveMinimum",
                                          "exclusiveMaximum"};
    static const char *const one[] = {"additionalProperties", "additionalItems", "not",
                                      "propertyNames", "items"};
    static const char *const maps[] = {"properties", "patternProperties", "$defs", "definitions"};
    static const char *const lists[] = {"anyOf", "oneOf", "allOf", "items"};
    const cJSON *v, *doc = root;
    unsigned mask;
    double n;
    int rc = V_OK;
    if (depth > SCH_MAX_DEPTH)
        return too_deep(c);
    if (cJSON_IsBool(s))
        return V_OK;
    if (!cJSON_IsObject(s))
        return bad_schema(c, "a schema must be an object or a boolean");
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
    if ((v = cJSON_GetObjectItemCaseSensitive(s, "pattern")) &&
        (!cJSON_IsString(v) || pattern_match(c, v, v->valuestring, "") < 0))
        return cJSON_IsString(v) ? V_HARD : bad_schema(c, "\"pattern\" must be a string");
    if ((v = cJSON_GetObjectItemCaseSensitive(s, "$ref")) &&
        (!cJSON_IsString(v) || !ref_resolve(root, v->valuestring, &doc)))
        return cJSON_IsString(v)
                   ? bad_schema(c, "cannot resolve \"$ref\": \"%.200s\"", v->valuestring)
                   : bad_schema(c, "\"$ref\" must be a string");
    for (size_t i = 0; i < 5 && rc == V_OK; i++) {
        v = cJSON_GetObjectItemCaseSensitive(s, one[i]);
        if (v && !(i == 4 && cJSON_IsArray(v)))
            rc = check_sub(c, root, v, depth, one[i], NULL, -1);
    }
    for (size_t i = 0; i < 4 && rc == V_OK; i++) {
        if (get_kind(c, s, maps[i], cJSON_Object, &v) < 0)
            return V_HARD;
        for (v = v ? v->child : NULL; v && rc == V_OK; v = v->next) {
            if (i == 1 && pattern_match(c, v, v->string, "") < 0)
                return V_HARD;
            rc = check_sub(c, root, v, depth, maps[i], v->string, -1);
        }
    }
    for (size_t i = 0; i < 4 && rc == V_OK; i++) {
        if (i == 3 && !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(s, "items")))
            break;
        if (get_kind(c, s, lists[i], cJSON_Array, &v) < 0)
            return V_HARD;
        int k = 0;
        for (v = v ? v->child : NULL; v && rc == V_OK; v = v->next, k++)
            rc = check_sub(c, root, v, depth, lists[i], NULL, k);
    }
    return rc;
}

/* ---- public API ---- */

static vctx_t *ctx_new(const char *root)
{
    vctx_t *c = calloc(1, sizeof(*c));
    if (c) {
        snprintf(c->path, sizeof(c->path), "%s", root ? root : "$");
        c->path_len = strlen(c->path);
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
    free(c);
    return ret;
}

int sch_validate(const cJSON *schema, const cJSON *instance, const char *root, char *errstr,
                 size_t errstr_size)
{
    vctx_t *c = ctx_new(root);
    if (!c) {
        if (errstr && errstr_size)
            snprintf(errstr, errstr_size, "%s: out of memory", root ? root : "$");
        return MCPQ_ENOMEM;
    }
    int rc = schema && instance ? validate(c, schema, schema, instance, 0)
                                : bad_schema(c, "no schema or no instance given");
    return ctx_finish(c, rc, errstr, errstr_size);
}

int sch_schema_check(const cJSON *schema, const char *root, char *errstr, size_t errstr_size)
{
    vctx_t *c = ctx_new(root);
    if (!c) {
        if (errstr && errstr_size)
            snprintf(errstr, errstr_size, "%s: out of memory", root ? root : "$");
        return MCPQ_ENOMEM;
    }
    int rc = schema ? check_schema(c, schema, schema, 0) : bad_schema(c, "no schema given");
    return ctx_finish(c, rc, errstr, errstr_size);
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

const cJSON *sch_builtin(const char *name)
{
    if (!name || pthread_once(&builtin_once, builtin_parse) != 0 || !builtin_docs)
        return NULL;
    for (size_t i = 0; sch_embedded_files[i].name; i++)
        if (strcmp(sch_embedded_files[i].name, name) == 0)
            return builtin_docs[i];
    return NULL;
}
