#include "schdoc.h"

#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- where subschemas are ---- */

/* Keywords whose value is one schema, a map of names to schemas, a list of schemas. */
static const char *const sub_one[] = {"additionalProperties",
                                      "additionalItems",
                                      "not",
                                      "propertyNames",
                                      "items",
                                      "contains",
                                      "if",
                                      "then",
                                      "else",
                                      "unevaluatedProperties",
                                      "unevaluatedItems"};
static const char *const sub_map[] = {"properties",  "patternProperties", "$defs",
                                      "definitions", "dependentSchemas",  "dependencies"};
static const char *const sub_list[] = {"anyOf", "oneOf", "allOf", "prefixItems", "items"};

static int is_schema(const cJSON *v)
{
    return cJSON_IsObject(v) || cJSON_IsBool(v);
}

int sch_doc_each_sub(const cJSON *s, sch_doc_sub_fn fn, void *arg)
{
    int rc = 0;
    if (!cJSON_IsObject(s))
        return 0;
    for (size_t i = 0; i < sizeof(sub_one) / sizeof(*sub_one) && !rc; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, sub_one[i]);
        if (is_schema(v))
            rc = fn(arg, v, sub_one[i], NULL, -1);
    }
    for (size_t i = 0; i < sizeof(sub_map) / sizeof(*sub_map) && !rc; i++) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(s, sub_map[i]);
        for (const cJSON *v = cJSON_IsObject(m) ? m->child : NULL; v && !rc; v = v->next)
            if (is_schema(v)) /* "dependencies" also holds arrays of names */
                rc = fn(arg, v, sub_map[i], v->string, -1);
    }
    for (size_t i = 0; i < sizeof(sub_list) / sizeof(*sub_list) && !rc; i++) {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(s, sub_list[i]);
        int k = 0;
        for (const cJSON *v = cJSON_IsArray(l) ? l->child : NULL; v && !rc; v = v->next, k++)
            rc = fn(arg, v, sub_list[i], NULL, k);
    }
    return rc;
}

/* ---- URIs ---- */

/* Length of "scheme:" at the start of s, or 0 when s has no scheme. */
static size_t scheme_len(const char *s)
{
    size_t i = 1;
    if (!isalpha((unsigned char)s[0]))
        return 0;
    while (isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.')
        i++;
    return s[i] == ':' ? i + 1 : 0;
}

/* Where the path of uri starts (after "scheme:" and "//authority"). */
static size_t path_start(const char *uri)
{
    size_t i = scheme_len(uri);
    if (uri[i] == '/' && uri[i + 1] == '/')
        for (i += 2; uri[i] && uri[i] != '/' && uri[i] != '?' && uri[i] != '#'; i++)
            ;
    return i;
}

/* Removes "." and ".." segments from the path of uri, in place (RFC 3986 section 5.2.4). */
static void remove_dots(char *uri)
{
    size_t start = path_start(uri), end = start, o = start;
    while (uri[end] && uri[end] != '?' && uri[end] != '#')
        end++;
    for (size_t i = start; i < end;) {
        size_t j = i + (uri[i] == '/');
        size_t k = j;
        while (k < end && uri[k] != '/')
            k++;
        if (k - j == 1 && uri[j] == '.') {
            if (k == end && o > start && uri[o - 1] != '/')
                uri[o++] = '/';
        } else if (k - j == 2 && uri[j] == '.' && uri[j + 1] == '.') {
            while (o > start && uri[o - 1] != '/')
                o--;
            if (o > start)
                o--;
            if (k == end)
                uri[o++] = '/';
        } else {
            memmove(uri + o, uri + i, k - i);
            o += k - i;
        }
        i = k;
    }
    memmove(uri + o, uri + end, strlen(uri + end) + 1);
}

int sch_doc_uri_resolve(const char *base, const char *ref, char *out, size_t size)
{
    size_t blen = strcspn(base, "#"), keep;
    int n;
    if (scheme_len(ref) || !*base) {
        keep = 0;
    } else if (ref[0] == '#' || ref[0] == '\0') {
        keep = blen;
    } else if (ref[0] == '?') {
        keep = strcspn(base, "?#");
    } else if (ref[0] == '/' && ref[1] == '/') {
        keep = scheme_len(base);
    } else if (ref[0] == '/') {
        keep = path_start(base);
    } else {
        keep = blen;
        while (keep > 0 && base[keep - 1] != '/')
            keep--;
        if (keep == 0)
            keep = scheme_len(base);
    }
    n = snprintf(out, size, "%.*s%s", (int)keep, base, ref);
    if (n < 0 || (size_t)n >= size)
        return -1;
    remove_dots(out);
    return 0;
}

/* ---- the index ---- */

static int index_add(sch_doc_index_t *idx, const char *uri, const cJSON *node, const cJSON *res,
                     const char *base)
{
    if (idx->n == idx->cap) {
        size_t cap = idx->cap ? idx->cap * 2 : 8;
        sch_doc_entry_t *v = realloc(idx->v, cap * sizeof(*v));
        if (!v)
            return -1;
        idx->v = v;
        idx->cap = cap;
    }
    char *copy = strdup(uri);
    if (!copy)
        return -1;
    idx->v[idx->n++] = (sch_doc_entry_t){copy, node, res ? res : node, base ? base : copy};
    return 0;
}

typedef struct walk {
    sch_doc_index_t *idx;
    const cJSON *res;
    const char *base;
    int depth, max_depth;
} walk_t;

static int index_node(walk_t *w, const cJSON *s);

static int index_sub(void *arg, const cJSON *sub, const char *kw, const char *name, int index)
{
    (void)kw, (void)name, (void)index;
    return index_node(arg, sub);
}

/* The anchors of s ("$anchor", "$dynamicAnchor", a draft-7 "$id": "#name"). */
static int index_anchors(walk_t *w, const cJSON *s)
{
    static const char *const kws[] = {"$anchor", "$dynamicAnchor", "$id"};
    char uri[SCH_DOC_URI_MAX];
    for (size_t i = 0; i < 3; i++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(s, kws[i]);
        const char *name = cJSON_IsString(a) ? a->valuestring : NULL;
        if (i == 2)
            name = name && name[0] == '#' && name[1] ? name + 1 : NULL;
        if (!name)
            continue;
        int n = snprintf(uri, sizeof(uri), "%.*s#%s", (int)strcspn(w->base, "#"), w->base, name);
        if (n > 0 && (size_t)n < sizeof(uri) && index_add(w->idx, uri, s, w->res, w->base) < 0)
            return -1;
    }
    return 0;
}

static int index_node(walk_t *w, const cJSON *s)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(s, "$id");
    const cJSON *res = w->res;
    const char *base = w->base;
    char uri[SCH_DOC_URI_MAX];
    int rc = 0;
    if (!cJSON_IsObject(s))
        return 0;
    if (w->depth >= w->max_depth) {
        w->idx->depth_exceeded = 1;
        return 0;
    }
    if (cJSON_IsString(id) && id->valuestring[0] != '#' &&
        sch_doc_uri_resolve(w->base, id->valuestring, uri, sizeof(uri)) == 0) {
        uri[strcspn(uri, "#")] = '\0';
        if (index_add(w->idx, uri, s, NULL, NULL) < 0)
            return -1;
        w->res = s;
        w->base = w->idx->v[w->idx->n - 1].uri;
    }
    if (index_anchors(w, s) < 0)
        return -1;
    w->depth++;
    rc = sch_doc_each_sub(s, index_sub, w);
    w->depth--;
    w->res = res;
    w->base = base;
    return rc;
}

sch_doc_index_t *sch_doc_index_new(const cJSON *root, int max_depth)
{
    sch_doc_index_t *idx = calloc(1, sizeof(*idx));
    walk_t w = {idx, root, "", 0, max_depth};
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "$id");
    /* The root is a resource even without "$id" (its URI is then ""). */
    if (!idx || (!(cJSON_IsString(id) && id->valuestring[0] != '#') &&
                 index_add(idx, "", root, NULL, NULL) < 0)) {
        sch_doc_index_free(idx);
        return NULL;
    }
    if (idx->n)
        w.base = idx->v[0].uri;
    if (index_node(&w, root) < 0) {
        sch_doc_index_free(idx);
        return NULL;
    }
    return idx;
}

void sch_doc_index_free(sch_doc_index_t *idx)
{
    if (!idx)
        return;
    for (size_t i = 0; i < idx->n; i++)
        free(idx->v[i].uri);
    free(idx->v);
    free(idx);
}

const sch_doc_entry_t *sch_doc_index_find(const sch_doc_index_t *idx, const char *uri)
{
    for (size_t i = 0; idx && i < idx->n; i++)
        if (strcmp(idx->v[i].uri, uri) == 0)
            return &idx->v[i];
    return NULL;
}

const sch_doc_entry_t *sch_doc_index_resource(const sch_doc_index_t *idx, const cJSON *node)
{
    for (size_t i = 0; idx && i < idx->n; i++)
        if (idx->v[i].node == node && idx->v[i].res == node && !strchr(idx->v[i].uri, '#'))
            return &idx->v[i];
    return NULL;
}

const char *sch_doc_index_duplicate(const sch_doc_index_t *idx)
{
    for (size_t i = 0; idx && i < idx->n; i++)
        for (size_t j = i + 1; j < idx->n; j++)
            if (strcmp(idx->v[i].uri, idx->v[j].uri) == 0 && idx->v[i].node != idx->v[j].node)
                return idx->v[i].uri;
    return NULL;
}

/* ---- $ref ---- */

/* The next token of pointer *p (after its '/'), unescaped into tok; -1 when too long. */
static int pointer_token(const char **p, char *tok, size_t size)
{
    size_t n = 0;
    for ((*p)++; **p && **p != '/'; (*p)++) {
        char ch = **p;
        if (ch == '~' && ((*p)[1] == '0' || (*p)[1] == '1')) {
            ch = *++(*p) == '0' ? '~' : '/';
        } else if (ch == '%' && isxdigit((unsigned char)(*p)[1]) &&
                   isxdigit((unsigned char)(*p)[2])) {
            char hex[3] = {(*p)[1], (*p)[2], 0};
            ch = (char)strtol(hex, NULL, 16);
            *p += 2;
        }
        if (n + 1 >= size)
            return -1;
        tok[n++] = ch;
    }
    tok[n] = '\0';
    return 0;
}

int sch_doc_pointer(const sch_doc_index_t *idx, const char *ptr, sch_doc_loc_t *loc)
{
    const cJSON *at = loc->node;
    char tok[256];
    if (*ptr && *ptr != '/')
        return -1;
    while (*ptr == '/' && at) {
        if (pointer_token(&ptr, tok, sizeof(tok)) < 0)
            return -1;
        if (cJSON_IsArray(at)) {
            long long i;
            at = util_parse_ll(tok, 0, 1 << 20, &i) == 0 ? cJSON_GetArrayItem(at, (int)i) : NULL;
        } else {
            at = cJSON_IsObject(at) ? cJSON_GetObjectItemCaseSensitive(at, tok) : NULL;
        }
        const sch_doc_entry_t *e = at ? sch_doc_index_resource(idx, at) : NULL;
        if (e) {
            loc->res = e->node;
            loc->base = e->uri;
        }
    }
    loc->node = at;
    return at ? 0 : -1;
}

int sch_doc_ref(const sch_doc_index_t *idx, const sch_doc_loc_t *cur, const char *ref,
                sch_doc_loc_t *out, char *abs)
{
    char frag[SCH_DOC_URI_MAX];
    const sch_doc_entry_t *e;
    if (sch_doc_uri_resolve(cur->base, ref, abs, SCH_DOC_URI_MAX) < 0)
        return -1;
    size_t ulen = strcspn(abs, "#");
    const char *f = abs[ulen] ? abs + ulen + 1 : "";
    char *uri = strndup(abs, ulen);
    if (!uri)
        return -1;
    if (strncmp(cur->base, abs, ulen) == 0 && cur->base[ulen] == '\0')
        *out = (sch_doc_loc_t){cur->res, cur->res, cur->base};
    else if ((e = sch_doc_index_find(idx, uri)) != NULL)
        *out = (sch_doc_loc_t){e->node, e->res, e->base};
    else
        out->node = NULL;
    free(uri);
    if (!out->node)
        return -1;
    if (*f == '\0' || *f == '/')
        return sch_doc_pointer(idx, f, out);
    /* An anchor: "<resource>#<name>". */
    int n = snprintf(frag, sizeof(frag), "%.*s#%s", (int)ulen, abs, f);
    if (n < 0 || (size_t)n >= sizeof(frag) || !(e = sch_doc_index_find(idx, frag)))
        return -1;
    *out = (sch_doc_loc_t){e->node, e->res, e->base};
    return 0;
}
