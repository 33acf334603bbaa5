#include "schint.h"

#include "err.h"
#include "jv.h"
#include "log.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            sch_ctx_oom(c);
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

static int validate(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev);

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
                sch_ctx_appendf(msg, sizeof(msg), ", ");
            jv_append_clipped(
                msg, sizeof(msg),
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, k0), "const"));
        }
        size_t saved = sch_ctx_push_key(c, k0);
        int rc = sch_ctx_fail(c, "must be one of %s", msg);
        sch_ctx_pop(c, saved);
        return rc;
    }
    if (ndeeper == 1)
        return restore_err(c, &errs[deeper]);
    for (i = 0; i < n && strlen(msg) < sizeof(msg) - 40; i++) {
        const char *rel = errs[i].path + (strlen(errs[i].path) > c->path_len ? c->path_len : 0);
        sch_ctx_appendf(msg, sizeof(msg), "%s(%d) %s%s%s", i ? "; " : "", i + 1,
                        rel == errs[i].path ? "" : rel, rel == errs[i].path ? "" : ": ",
                        errs[i].msg);
    }
    return sch_ctx_fail(c, "does not match any alternative: %s", msg);
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
        return sch_ctx_oom(c);
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
        return sch_ctx_oom(c);
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
            rc = sch_ctx_fail(c, "must match exactly one alternative, but matches %s and %s", n1,
                              n2);
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

/* $ref: the target applies in place, in its own resource; bounded by SCH_MAX_REFS. */
static int apply_ref(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev)
{
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
    sch_doc_loc_t to, saved = c->cur;
    int rc;
    if (cJSON_GetObjectItemCaseSensitive(s, "$dynamicRef"))
        return sch_ctx_bad_schema(c, "keyword \"$dynamicRef\" is not supported");
    if (!ref)
        return V_OK;
    if (!cJSON_IsString(ref))
        return sch_ctx_bad_schema(c, "\"$ref\" must be a string");
    if (++c->refs > SCH_MAX_REFS) {
        memcpy(c->err_path, c->path, c->path_len + 1);
        snprintf(c->err_msg, sizeof(c->err_msg), "more than %d \"$ref\" followed", SCH_MAX_REFS);
        return V_HARD;
    }
    if ((rc = ref_resolve(c, ref->valuestring, &to)) < 0)
        return rc == -V_HARD
                   ? V_HARD
                   : sch_ctx_bad_schema(c, "cannot resolve \"$ref\": \"%.200s\"", ref->valuestring);
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
    if (sch_ctx_kind(c, s, "allOf", cJSON_Array, &list) < 0)
        return V_HARD;
    for (const cJSON *b = list ? list->child : NULL; b; b = b->next)
        if ((rc = validate(c, b, inst, depth + 1, ev)) != V_OK)
            return rc;
    for (int one = 0; one < 2; one++) {
        if (sch_ctx_kind(c, s, one ? "oneOf" : "anyOf", cJSON_Array, &list) < 0)
            return V_HARD;
        if (list && (rc = check_choice(c, list, inst, depth, one, ev)) != V_OK)
            return rc;
    }
    if ((neg = cJSON_GetObjectItemCaseSensitive(s, "not"))) {
        rc = validate(c, neg, inst, depth + 1, NULL);
        if (rc == V_HARD)
            return rc;
        if (rc == V_OK)
            return sch_ctx_fail(c, "must not match the schema in \"not\"");
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
    if ((rc = sch_ctx_types(c, s, &mask)) < 0)
        return V_HARD;
    if (rc && !(mask & sch_ctx_type_bits(inst)))
        return sch_ctx_type_error(c, mask, inst);
    if ((rc = sch_kw_enum(c, s, inst, depth)) != V_OK)
        return rc;
    if (cJSON_IsString(inst))
        rc = sch_kw_string(c, s, inst);
    else if (cJSON_IsNumber(inst))
        rc = sch_kw_number(c, s, inst);
    else if (cJSON_IsObject(inst))
        rc = sch_kw_object(c, s, inst, depth, ev);
    else if (cJSON_IsArray(inst))
        rc = sch_kw_array(c, s, inst, depth, ev);
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
            return sch_ctx_fail(c, "unknown property \"%.200s\" (unevaluatedProperties)",
                                x->string);
        if (cJSON_IsFalse(u))
            return sch_ctx_fail(c, "item %d is not allowed (unevaluatedItems)", i);
        if ((rc = sch_kw_at(c, u, x, depth, obj ? x->string : NULL, i)) != V_OK)
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
        return sch_ctx_too_deep(c);
    if (cJSON_IsBool(s))
        return cJSON_IsTrue(s) ? V_OK : sch_ctx_fail(c, "is not allowed here");
    if (!cJSON_IsObject(s))
        return sch_ctx_bad_schema(c, "a schema must be an object or a boolean");
    if ((rc = resource_enter(c, s, &saved)) != V_OK)
        return rc;
    const cJSON *u =
        !box ? NULL
             : cJSON_GetObjectItemCaseSensitive(s, cJSON_IsObject(inst) ? "unevaluatedProperties"
                                                                        : "unevaluatedItems");
    if (u) {
        local.n = cJSON_GetArraySize(inst);
        if (!(local.seen = calloc((size_t)local.n + 1, 1))) {
            rc = sch_ctx_oom(c);
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
    size_t saved = sch_ctx_push_key(a->c, kw);
    if (name)
        sch_ctx_push_key(a->c, name);
    else if (index >= 0)
        sch_ctx_push_index(a->c, index);
    int rc = check_schema(a->c, sub, a->depth + 1);
    sch_ctx_pop(a->c, saved);
    return rc;
}

/* The error of keyword kw of the schema at the current path. */
static int bad_keyword(vctx_t *c, const char *kw, const char *msg)
{
    size_t saved = sch_ctx_push_key(c, kw);
    int rc = sch_ctx_bad_schema(c, "%s", msg);
    sch_ctx_pop(c, saved);
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
        if (sch_ctx_kind(c, s, maps[i], cJSON_Object, &v) < 0)
            return V_HARD;
        for (v = v ? v->child : NULL; v; v = v->next) {
            if (i == 1 && sch_ctx_pattern_match(c, v, v->string, "") < 0)
                return V_HARD;
            if (!cJSON_IsObject(v) && !cJSON_IsBool(v) && !(i == 5 && cJSON_IsArray(v)))
                return bad_keyword(c, maps[i], "a schema must be an object or a boolean");
        }
    }
    for (size_t i = 0; i < sizeof(lists) / sizeof(*lists); i++)
        if (sch_ctx_kind(c, s, lists[i], cJSON_Array, &v) < 0)
            return V_HARD;
    if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(s, "items")) &&
        cJSON_GetObjectItemCaseSensitive(s, "prefixItems"))
        return sch_ctx_bad_schema(c, "\"items\" must not be an array next to \"prefixItems\"");
    return V_OK;
}

/* The names in dependentRequired and the arrays of dependencies. */
static int check_dep_names(vctx_t *c, const cJSON *s)
{
    const cJSON *map;
    for (int i = 0; i < 2; i++) {
        const char *kw = i ? "dependencies" : "dependentRequired";
        if (sch_ctx_kind(c, s, kw, cJSON_Object, &map) < 0)
            return V_HARD;
        for (const cJSON *d = map ? map->child : NULL; d; d = d->next) {
            int ok = cJSON_IsArray(d) || (i == 1 && !cJSON_IsArray(d));
            for (const cJSON *n = cJSON_IsArray(d) ? d->child : NULL; n; n = n->next)
                ok = ok && cJSON_IsString(n);
            if (!ok)
                return sch_ctx_bad_schema(c, "\"%s\" must map names to arrays of names", kw);
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
            return sch_ctx_bad_schema(c, "\"%s\" must be a string", strs[i]);
    if ((v = cJSON_GetObjectItemCaseSensitive(s, "$ref"))) {
        int rc = ref_resolve(c, v->valuestring, &to);
        if (rc == -V_HARD)
            return V_HARD;
        if (rc < 0)
            return sch_ctx_bad_schema(c, "cannot resolve \"$ref\": \"%.200s\"", v->valuestring);
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
    if (sch_ctx_types(c, s, &mask) < 0 || sch_ctx_kind(c, s, "enum", cJSON_Array, &v) < 0 ||
        sch_ctx_kind(c, s, "uniqueItems", cJSON_True, &v) < 0 ||
        sch_ctx_kind(c, s, "required", cJSON_Array, &v) < 0)
        return V_HARD;
    for (v = v ? v->child : NULL; v; v = v->next)
        if (!cJSON_IsString(v))
            return sch_ctx_bad_schema(c, "\"required\" must be an array of strings");
    for (size_t i = 0; i < sizeof(counts) / sizeof(*counts); i++)
        if (sch_ctx_count(c, s, counts[i], &n) < 0)
            return V_HARD;
    for (size_t i = 0; i < sizeof(numbers) / sizeof(*numbers); i++)
        if (sch_ctx_number(c, s, numbers[i], &v) < 0)
            return V_HARD;
    if ((v = cJSON_GetObjectItemCaseSensitive(s, "multipleOf")) &&
        (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || !isfinite(v->valuedouble)))
        return sch_ctx_bad_schema(c, "\"multipleOf\" must be a number greater than 0");
    if ((v = cJSON_GetObjectItemCaseSensitive(s, "pattern")) &&
        (!cJSON_IsString(v) || sch_ctx_pattern_match(c, v, v->valuestring, "") < 0))
        return cJSON_IsString(v) ? V_HARD : sch_ctx_bad_schema(c, "\"pattern\" must be a string");
    return V_OK;
}

static int check_schema(vctx_t *c, const cJSON *s, int depth)
{
    sch_doc_loc_t saved;
    int rc;
    if (depth > SCH_MAX_DEPTH)
        return sch_ctx_too_deep(c);
    if (cJSON_IsBool(s))
        return V_OK;
    if (!cJSON_IsObject(s))
        return sch_ctx_bad_schema(c, "a schema must be an object or a boolean");
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
        c->validate = validate;
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
                                : sch_ctx_bad_schema(c, "no schema or no instance given");
    return ctx_finish(c, rc, errstr, errstr_size);
}

/* The whole check of schema in c: identifiers indexed, then every subschema. */
static int check_document(vctx_t *c, const cJSON *schema)
{
    const char *dup;
    if (!schema)
        return sch_ctx_bad_schema(c, "no schema given");
    if (!doc_index(c))
        return V_HARD;
    if ((dup = sch_doc_index_duplicate(c->idx)))
        return sch_ctx_bad_schema(c, "two subschemas are identified as \"%.200s\"", dup);
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
            qsort(comp->rx, comp->nrx, sizeof(*comp->rx), sch_ctx_pattern_cmp);
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
                              : sch_ctx_bad_schema(c, "no schema or no instance given");
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
