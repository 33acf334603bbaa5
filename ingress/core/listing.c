#include "listing.h"

#include "err.h"
#include "util.h"

#include <assert.h>
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A page token is base64url of: version byte, offset (8 bytes big-endian), query hash. */
enum { TOKEN_VERSION = 1, TOKEN_BYTES = 1 + 8 + 8 };
#define ECHO_MAX 40 /* characters of the client's input quoted back in a message */

static int is_word(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-';
}

static const char *skip_ws(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

/* The end of the bare word starting at p (p itself when there is none). */
static const char *word_end(const char *p)
{
    while (is_word(*p))
        p++;
    return p;
}

static int word_is(const char *w, const char *end, const char *s)
{
    return (size_t)(end - w) == strlen(s) && memcmp(w, s, (size_t)(end - w)) == 0;
}

static const ing_listing_field_t *field_find(const char *w, const char *end,
                                             const ing_listing_field_t *fields, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (word_is(w, end, fields[i].name))
            return &fields[i];
    return NULL;
}

static int unknown_field(char *err, size_t err_size, const char *param, const char *w,
                         const char *end, const ing_listing_field_t *fields, size_t n)
{
    int len = end - w > ECHO_MAX ? ECHO_MAX : (int)(end - w);
    size_t o = (size_t)snprintf(err, err_size, "%s: unknown field '%.*s'; allowed:", param, len, w);
    for (size_t i = 0; i < n && o < err_size; i++)
        o += (size_t)snprintf(err + o, err_size - o, "%s %s", i ? "," : "", fields[i].name);
    return MCPQ_EINVAL;
}

/* A quoted or bare filter value at *pp into out; advances *pp past it. */
static int parse_value(const char **pp, char *out, const char *field, char *err, size_t err_size)
{
    const char *p = *pp;
    size_t o = 0;
    if (*p == '"') {
        for (p++; *p != '"'; p++) {
            if (*p == '\\') {
                p++;
                if (*p && *p != '"' && *p != '\\')
                    return util_errf(
                        err, err_size,
                        "filter: bad escape '\\%c' in the value of '%s' (only \\\" and "
                        "\\\\)",
                        *p, field);
            }
            if (!*p)
                return util_errf(err, err_size, "filter: unterminated quoted string for '%s'",
                                 field);
            if (o + 1 >= LST_VALUE_MAX)
                return util_errf(err, err_size, "filter: the value of '%s' is longer than %d bytes",
                                 field, LST_VALUE_MAX - 1);
            out[o++] = *p;
        }
        p++;
    } else {
        const char *end = word_end(p);
        if (end == p || word_is(p, end, "AND"))
            return util_errf(err, err_size, "filter: missing value for '%s'", field);
        if (end - p >= LST_VALUE_MAX)
            return util_errf(err, err_size, "filter: the value of '%s' is longer than %d bytes",
                             field, LST_VALUE_MAX - 1);
        o = (size_t)(end - p);
        memcpy(out, p, o);
        p = end;
    }
    out[o] = '\0';
    *pp = p;
    return 0;
}

static int parse_filter(ing_listing_query_t *q, const char *p, const ing_listing_field_t *fields,
                        size_t nfields, char *err, size_t err_size)
{
    p = skip_ws(p);
    if (!*p)
        return 0;
    for (;;) {
        const char *w = p, *end = word_end(p);
        if (end == w && !*w)
            return util_errf(err, err_size, "filter: expected a field name after AND");
        if (end == w || word_is(w, end, "AND"))
            return util_errf(err, err_size, "filter: expected a field name at '%.*s'", ECHO_MAX, w);
        const ing_listing_field_t *f = field_find(w, end, fields, nfields);
        if (!f)
            return unknown_field(err, err_size, "filter", w, end, fields, nfields);
        if (q->nclauses == LST_MAX_CLAUSES)
            return util_errf(err, err_size, "filter: more than %d clauses", LST_MAX_CLAUSES);
        p = skip_ws(end);
        int negate = p[0] == '!' && p[1] == '=';
        if (p[0] != '=' && !negate)
            return util_errf(err, err_size, "filter: expected = or != after '%s'", f->name);
        p = skip_ws(p + 1 + negate);
        int rc = parse_value(&p, q->clause[q->nclauses].value, f->name, err, err_size);
        if (rc < 0)
            return rc;
        q->clause[q->nclauses].json_key = f->json_key;
        q->clause[q->nclauses++].negate = negate;
        p = skip_ws(p);
        if (!*p)
            return 0;
        end = word_end(p);
        if (!word_is(p, end, "AND"))
            return util_errf(err, err_size,
                             "filter: expected AND after the value of '%s', found '%.*s'", f->name,
                             ECHO_MAX, p);
        p = skip_ws(end);
    }
}

static int parse_order(ing_listing_query_t *q, const char *p, const ing_listing_field_t *fields,
                       size_t nfields, char *err, size_t err_size)
{
    for (;;) {
        p = skip_ws(p);
        const char *w = p, *end = word_end(p);
        if (end == w && !*w)
            return util_errf(err, err_size, "orderBy: expected a field name after ','");
        if (end == w)
            return util_errf(err, err_size, "orderBy: expected a field name at '%.*s'", ECHO_MAX,
                             w);
        const ing_listing_field_t *f = field_find(w, end, fields, nfields);
        if (!f)
            return unknown_field(err, err_size, "orderBy", w, end, fields, nfields);
        if (q->norder == LST_MAX_ORDER)
            return util_errf(err, err_size, "orderBy: more than %d fields", LST_MAX_ORDER);
        q->order[q->norder].json_key = f->json_key;
        p = skip_ws(end);
        end = word_end(p);
        if (end > p) {
            if (end - p == 4 && strncasecmp(p, "desc", 4) == 0)
                q->order[q->norder].desc = 1;
            else if (!(end - p == 3 && strncasecmp(p, "asc", 3) == 0))
                return util_errf(err, err_size,
                                 "orderBy: expected asc or desc after '%s', found '%.*s'", f->name,
                                 ECHO_MAX, p);
            p = skip_ws(end);
        }
        q->norder++;
        if (!*p)
            return 0;
        if (*p != ',')
            return util_errf(err, err_size, "orderBy: expected ',' after '%s', found '%.*s'",
                             f->name, ECHO_MAX, p);
        p++;
    }
}

/* FNV-1a over the parsed filter and order. Not a MAC: a client can forge a token, but all
 * it chooses that way is an offset; the hash only catches a token reused with another
 * query. */
static void fnv(uint64_t *h, const void *data, size_t n)
{
    for (size_t i = 0; i < n; i++)
        *h = (*h ^ ((const unsigned char *)data)[i]) * 0x100000001b3ULL;
}

static void query_hash(ing_listing_query_t *q)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < q->nclauses; i++) {
        fnv(&h, q->clause[i].json_key, strlen(q->clause[i].json_key) + 1);
        fnv(&h, q->clause[i].negate ? "!" : "=", 1);
        fnv(&h, q->clause[i].value, strlen(q->clause[i].value) + 1);
    }
    fnv(&h, "|", 1); /* the clauses end here */
    for (size_t i = 0; i < q->norder; i++) {
        fnv(&h, q->order[i].json_key, strlen(q->order[i].json_key) + 1);
        fnv(&h, q->order[i].desc ? "d" : "a", 1);
    }
    for (int i = 0; i < 8; i++)
        q->hash[i] = (unsigned char)(h >> (56 - 8 * i));
}

static int parse_token(ing_listing_query_t *q, const char *tok)
{
    unsigned char b[TOKEN_BYTES];
    size_t len = 0;
    if (strlen(tok) != UTIL_B64URL_LEN(TOKEN_BYTES) ||
        util_b64_decode(tok, strlen(tok), UTIL_B64_URL | UTIL_B64_NOPAD, b, sizeof(b), &len) < 0 ||
        len != TOKEN_BYTES || b[0] != TOKEN_VERSION || memcmp(b + 9, q->hash, 8) != 0)
        return MCPQ_EINVAL;
    uint64_t off = 0;
    for (int i = 1; i <= 8; i++)
        off = off << 8 | b[i];
#if SIZE_MAX < UINT64_MAX
    if (off > SIZE_MAX)
        return MCPQ_EINVAL;
#endif
    if (off == 0) /* ing_listing_apply never makes a token for the first page */
        return MCPQ_EINVAL;
    q->offset = (size_t)off;
    return 0;
}

int ing_listing_parse(ing_listing_query_t *q, const char *page_size, const char *page_token,
                      const char *filter, const char *order_by, const ing_listing_field_t *fields,
                      size_t nfields, const ing_listing_field_t *order_fields, size_t norder,
                      int def_size, int max_size, char *err, size_t err_size)
{
    assert(err && err_size > 0 && def_size >= 1 && max_size >= 1);
    memset(q, 0, sizeof(*q));
    err[0] = '\0';
    long long size = 0;
    if (page_size && *page_size && util_parse_ll(page_size, 0, LLONG_MAX, &size) < 0)
        return util_errf(err, err_size, "pageSize: must be a non-negative integer, got '%.*s'",
                         ECHO_MAX, page_size);
    if (size == 0)
        size = def_size;
    q->page_size = size > max_size ? max_size : (int)size;

    int rc = parse_filter(q, filter ? filter : "", fields, nfields, err, err_size);
    if (rc < 0)
        return rc;
    if (order_by && *skip_ws(order_by))
        rc = parse_order(q, order_by, order_fields, norder, err, err_size);
    else if (norder > 0)
        q->order[q->norder++].json_key = order_fields[0].json_key;
    if (rc < 0)
        return rc;
    query_hash(q);
    if (page_token && *page_token && parse_token(q, page_token) < 0)
        return util_errf(err, err_size, "invalid pageToken");
    return 0;
}

/* Sorting ---------------------------------------------------------------------------- */

typedef struct ing_listing_entry {
    const cJSON *item;
    const ing_listing_query_t *q;
    size_t idx; /* position in the input: the last tie-break, so the sort is stable */
} ing_listing_entry_t;

static int type_rank(const cJSON *v)
{
    if (!v || cJSON_IsNull(v))
        return 0;
    if (cJSON_IsBool(v))
        return 1;
    if (cJSON_IsNumber(v))
        return 2;
    if (cJSON_IsString(v) && v->valuestring)
        return 3;
    return 4;
}

static int value_cmp(const cJSON *a, const cJSON *b)
{
    int ra = type_rank(a), rb = type_rank(b);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    if (ra == 1)
        return cJSON_IsTrue(a) - cJSON_IsTrue(b);
    if (ra == 2)
        return (a->valuedouble > b->valuedouble) - (a->valuedouble < b->valuedouble);
    if (ra == 3) {
        int c = strcmp(a->valuestring, b->valuestring);
        return (c > 0) - (c < 0);
    }
    return 0;
}

static int entry_cmp(const void *pa, const void *pb)
{
    const ing_listing_entry_t *a = pa, *b = pb;
    const ing_listing_query_t *q = a->q;
    for (size_t i = 0; i < q->norder; i++) {
        const char *k = q->order[i].json_key;
        int c = value_cmp(cJSON_GetObjectItemCaseSensitive(a->item, k),
                          cJSON_GetObjectItemCaseSensitive(b->item, k));
        if (c)
            return q->order[i].desc ? -c : c;
    }
    int c = value_cmp(cJSON_GetObjectItemCaseSensitive(a->item, "name"),
                      cJSON_GetObjectItemCaseSensitive(b->item, "name"));
    if (c)
        return c;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Filtering and paging --------------------------------------------------------------- */

static int value_eq(const cJSON *v, const char *lit)
{
    if (cJSON_IsString(v) && v->valuestring)
        return strcmp(v->valuestring, lit) == 0;
    if (cJSON_IsBool(v))
        return strcmp(lit, cJSON_IsTrue(v) ? "true" : "false") == 0;
    if (cJSON_IsNumber(v)) {
        char *end = NULL;
        double d = strtod(lit, &end);
        return end != lit && *end == '\0' && d == v->valuedouble;
    }
    return 0; /* missing, null, object or array */
}

static int item_matches(const ing_listing_query_t *q, const cJSON *item)
{
    for (size_t i = 0; i < q->nclauses; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, q->clause[i].json_key);
        if (value_eq(v, q->clause[i].value) == q->clause[i].negate)
            return 0;
    }
    return 1;
}

static char *token_new(const ing_listing_query_t *q, size_t offset)
{
    unsigned char b[TOKEN_BYTES];
    b[0] = TOKEN_VERSION;
    for (int i = 0; i < 8; i++)
        b[1 + i] = (unsigned char)((uint64_t)offset >> (56 - 8 * i));
    memcpy(b + 9, q->hash, 8);
    char *tok = malloc(UTIL_B64URL_LEN(TOKEN_BYTES) + 1);
    if (tok)
        util_b64url_encode(b, sizeof(b), tok);
    return tok;
}

cJSON *ing_listing_apply(const ing_listing_query_t *q, const cJSON *items, char **next_token)
{
    assert(q->page_size >= 1);
    *next_token = NULL;
    size_t n = 0, m = 0;
    const cJSON *first = cJSON_IsArray(items) ? items->child : NULL;
    for (const cJSON *it = first; it; it = it->next)
        n++;
    ing_listing_entry_t *e = n ? malloc(n * sizeof(*e)) : NULL;
    cJSON *page = cJSON_CreateArray();
    if ((n && !e) || !page)
        goto fail;
    n = 0;
    for (const cJSON *it = first; it; it = it->next, n++)
        if (cJSON_IsObject(it) && item_matches(q, it))
            e[m++] = (ing_listing_entry_t){.item = it, .q = q, .idx = n};
    if (m > 1)
        qsort(e, m, sizeof(*e), entry_cmp);
    size_t end = q->offset;
    if (q->offset < m)
        end += m - q->offset < (size_t)q->page_size ? m - q->offset : (size_t)q->page_size;
    for (size_t i = q->offset; i < end; i++) {
        cJSON *dup = cJSON_Duplicate(e[i].item, 1);
        if (!dup)
            goto fail;
        cJSON_AddItemToArray(page, dup);
    }
    if (end < m && !(*next_token = token_new(q, end)))
        goto fail;
    free(e);
    return page;
fail:
    free(e);
    cJSON_Delete(page);
    return NULL;
}

void ing_listing_query_free(ing_listing_query_t *q)
{
    (void)q;
}
