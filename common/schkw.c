#include "schint.h"

#include "jv.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the keywords of one instance type (their subschemas applied through c->validate) ---- */

/* validate() for a member or item (a new instance: no annotations flow back): pushes the
 * path segment, pops it after. */
int sch_kw_at(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, const char *key, int index)
{
    size_t saved = key ? sch_ctx_push_key(c, key) : sch_ctx_push_index(c, index);
    int rc = c->validate(c, s, inst, depth + 1, NULL);
    sch_ctx_pop(c, saved);
    return rc;
}

int sch_kw_string(vctx_t *c, const cJSON *s, const cJSON *inst)
{
    double min = 0, max = 0;
    int has_min = sch_ctx_count(c, s, "minLength", &min),
        has_max = sch_ctx_count(c, s, "maxLength", &max);
    const cJSON *pat;
    if (has_min < 0 || has_max < 0)
        return V_HARD;
    if (has_min || has_max) {
        double n = 0; /* code points: every byte that does not continue a UTF-8 sequence */
        for (const unsigned char *p = (const unsigned char *)inst->valuestring; *p; p++)
            n += (*p & 0xc0) != 0x80;
        if (has_min && n < min)
            return sch_ctx_fail(c, "must be at least %.0f character%s long", min,
                                min == 1 ? "" : "s");
        if (has_max && n > max)
            return sch_ctx_fail(c, "must be at most %.0f character%s long", max,
                                max == 1 ? "" : "s");
    }
    pat = cJSON_GetObjectItemCaseSensitive(s, "pattern");
    if (pat) {
        if (!cJSON_IsString(pat))
            return sch_ctx_bad_schema(c, "\"pattern\" must be a string");
        int m = sch_ctx_pattern_match(c, pat, pat->valuestring, inst->valuestring);
        if (m < 0)
            return V_HARD;
        if (!m)
            return sch_ctx_fail(c, "does not match the pattern \"%.200s\"", pat->valuestring);
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
        return sch_ctx_bad_schema(c, "\"multipleOf\" must be a number greater than 0");
    if (is_multiple(inst->valuedouble, m->valuedouble))
        return V_OK;
    jv_number_format(m->valuedouble, num, sizeof(num));
    return sch_ctx_fail(c, "must be a multiple of %s (multipleOf)", num);
}

int sch_kw_number(vctx_t *c, const cJSON *s, const cJSON *inst)
{
    static const char *const kws[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    const cJSON *v[4];
    double d = inst->valuedouble;
    char num[40];
    for (int i = 0; i < 4; i++)
        if (sch_ctx_number(c, s, kws[i], &v[i]) < 0)
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
                return sch_ctx_fail(c, "must be %s%s %s", i == 0 ? ">" : "<", excl ? "" : "=", num);
        }
    }
    return check_multiple(c, s, inst);
}

/* propertyNames: the member name, as a string, against schema names. */
static int check_name(vctx_t *c, const cJSON *names, char *key, int depth)
{
    cJSON name = {.type = cJSON_String, .valuestring = key};
    size_t saved = sch_ctx_push_key(c, key);
    int rc = c->validate(c, names, &name, depth + 1, NULL);
    sch_ctx_pop(c, saved);
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
    if (ps && (rc = sch_kw_at(c, ps, m, depth, m->string, 0)) != V_OK)
        return rc;
    for (const cJSON *pp = k->pprops ? k->pprops->child : NULL; pp; pp = pp->next) {
        int hit = sch_ctx_pattern_match(c, pp, pp->string, m->string);
        if (hit < 0)
            return V_HARD;
        if (hit && (rc = sch_kw_at(c, pp, m, depth, m->string, 0)) != V_OK)
            return rc;
        matched |= hit;
    }
    if (!matched && k->addl) {
        if (cJSON_IsFalse(k->addl))
            return sch_ctx_fail(c, "unknown property \"%.200s\"", m->string);
        if ((rc = sch_kw_at(c, k->addl, m, depth, m->string, 0)) != V_OK)
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
            return sch_ctx_bad_schema(c, "\"dependentRequired\" must map names to arrays of names");
        return c->validate(c, dep, inst, depth + 1, ev);
    }
    for (const cJSON *r = dep->child; r; r = r->next) {
        if (!cJSON_IsString(r))
            return sch_ctx_bad_schema(c, "\"%s\" must map names to arrays of names", kw);
        if (!cJSON_GetObjectItemCaseSensitive(inst, r->valuestring))
            return sch_ctx_fail(c, "missing property \"%.200s\" (%s: \"%.200s\" is present)",
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
        if (sch_ctx_kind(c, s, kws[i], cJSON_Object, &map) < 0)
            return V_HARD;
        for (const cJSON *d = map ? map->child : NULL; d; d = d->next)
            if ((rc = check_dependency(c, kws[i], d, inst, depth, ev)) != V_OK)
                return rc;
    }
    return V_OK;
}

int sch_kw_object(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev)
{
    const cJSON *req;
    objkw_t k = {NULL, NULL, cJSON_GetObjectItemCaseSensitive(s, "additionalProperties"),
                 cJSON_GetObjectItemCaseSensitive(s, "propertyNames")};
    double min = 0, max = 0;
    int has_min = sch_ctx_count(c, s, "minProperties", &min),
        has_max = sch_ctx_count(c, s, "maxProperties", &max);
    int rc, i = 0;
    if (has_min < 0 || has_max < 0 || sch_ctx_kind(c, s, "required", cJSON_Array, &req) < 0 ||
        sch_ctx_kind(c, s, "properties", cJSON_Object, &k.props) < 0 ||
        sch_ctx_kind(c, s, "patternProperties", cJSON_Object, &k.pprops) < 0)
        return V_HARD;
    for (const cJSON *r = req ? req->child : NULL; r; r = r->next) {
        if (!cJSON_IsString(r))
            return sch_ctx_bad_schema(c, "\"required\" must be an array of strings");
        if (!cJSON_GetObjectItemCaseSensitive(inst, r->valuestring))
            return sch_ctx_fail(c, "missing required property \"%.200s\"", r->valuestring);
    }
    for (const cJSON *m = inst->child; m; m = m->next, i++)
        if ((rc = check_member(c, &k, m, i, depth, ev)) != V_OK)
            return rc;
    int n = cJSON_GetArraySize(inst);
    if (has_min && n < min)
        return sch_ctx_fail(c, "must have at least %.0f propert%s", min, min == 1 ? "y" : "ies");
    if (has_max && n > max)
        return sch_ctx_fail(c, "must have at most %.0f propert%s", max, max == 1 ? "y" : "ies");
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
        return sch_ctx_oom(c);
    for (const cJSON *x = inst->child; x; x = x->next, i++)
        hs[i] = (hashed_t){jv_hash(x, SCH_MAX_DEPTH - depth), i, x};
    qsort(hs, (size_t)n, sizeof(*hs), hashed_cmp);
    for (i = 0; i < n && rc == V_OK; i++) {
        for (int j = i + 1; j < n && hs[j].h == hs[i].h && rc == V_OK; j++) {
            int eq = jv_equal(hs[i].v, hs[j].v, SCH_MAX_DEPTH - depth);
            if (eq < 0)
                rc = sch_ctx_too_deep(c);
            else if (eq)
                rc = sch_ctx_fail(c, "must not contain duplicates (items %d and %d are equal)",
                                  hs[i].i, hs[j].i);
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
    int has_min = sch_ctx_count(c, s, "minContains", &min),
        has_max = sch_ctx_count(c, s, "maxContains", &max);
    int i = 0, count = 0;
    if (has_min < 0 || has_max < 0)
        return V_HARD;
    if (!con)
        return V_OK;
    for (const cJSON *x = inst->child; x; x = x->next, i++) {
        size_t saved = sch_ctx_push_index(c, i);
        int rc = c->validate(c, con, x, depth + 1, NULL);
        sch_ctx_pop(c, saved);
        if (rc == V_HARD)
            return rc;
        if (rc == V_OK && ev)
            ev->seen[i] = 1;
        count += rc == V_OK;
    }
    if (count < min)
        return sch_ctx_fail(c, "must contain at least %.0f item%s matching \"contains\" (%d do%s)",
                            min, min == 1 ? "" : "s", count, count == 1 ? "es" : "");
    if (has_max && count > max)
        return sch_ctx_fail(c,
                            "must contain at most %.0f item%s matching \"contains\" (maxContains), "
                            "but %d do",
                            max, max == 1 ? "" : "s", count);
    return V_OK;
}

int sch_kw_array(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items"), *uniq, *prefix;
    const cJSON *rest = items, *tuple = NULL;
    double min = 0, max = 0;
    int has_min = sch_ctx_count(c, s, "minItems", &min),
        has_max = sch_ctx_count(c, s, "maxItems", &max);
    int n = cJSON_GetArraySize(inst), i = 0, rc, has_tuple = 0;
    if (has_min < 0 || has_max < 0 || sch_ctx_kind(c, s, "uniqueItems", cJSON_True, &uniq) < 0 ||
        sch_ctx_kind(c, s, "prefixItems", cJSON_Array, &prefix) < 0)
        return V_HARD;
    if (has_min && n < min)
        return sch_ctx_fail(c, "must have at least %.0f item%s", min, min == 1 ? "" : "s");
    if (has_max && n > max)
        return sch_ctx_fail(c, "must have at most %.0f item%s", max, max == 1 ? "" : "s");
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
            return sch_ctx_fail(c, "must have at most %d items", i);
        if (is && (rc = sch_kw_at(c, is, x, depth, NULL, i)) != V_OK)
            return rc;
        if (is && ev)
            ev->seen[i] = 1;
    }
    if ((rc = check_contains(c, s, inst, depth, ev)) != V_OK)
        return rc;
    return cJSON_IsTrue(uniq) && n > 1 ? check_unique(c, inst, depth) : V_OK;
}

int sch_kw_enum(vctx_t *c, const cJSON *s, const cJSON *inst, int depth)
{
    const cJSON *cst = cJSON_GetObjectItemCaseSensitive(s, "const"), *en;
    char msg[MSG_CAP] = "";
    if (sch_ctx_kind(c, s, "enum", cJSON_Array, &en) < 0)
        return V_HARD;
    if (cst) {
        int eq = jv_equal(cst, inst, SCH_MAX_DEPTH - depth);
        if (eq < 0)
            return sch_ctx_too_deep(c);
        if (!eq) {
            jv_append_clipped(msg, sizeof(msg), cst);
            return sch_ctx_fail(c, "must be %s", msg);
        }
    }
    if (!en)
        return V_OK;
    for (const cJSON *x = en->child; x; x = x->next) {
        int eq = jv_equal(x, inst, SCH_MAX_DEPTH - depth);
        if (eq < 0)
            return sch_ctx_too_deep(c);
        if (eq)
            return V_OK;
    }
    for (const cJSON *x = en->child; x; x = x->next) {
        if (x != en->child)
            sch_ctx_appendf(msg, sizeof(msg), ", ");
        if (strlen(msg) > sizeof(msg) - 130) {
            sch_ctx_appendf(msg, sizeof(msg), "...");
            break;
        }
        jv_append_clipped(msg, sizeof(msg), x);
    }
    return sch_ctx_fail(c, "must be one of %s", msg);
}
