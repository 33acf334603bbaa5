/*
 * listing.h - the list engine of the admin API and list_tools (AIP-158 paging, AIP-160 filter subset, AIP-132
 * ordering) shared by the admin API list endpoints and the system server's list_tools.
 *
 * Pure: ing_listing_parse() turns a request's pageSize, pageToken, filter and orderBy strings into
 * an ing_listing_query_t (or a message for the client), and ing_listing_apply() filters, sorts and
 * pages a cJSON array of objects with it. Page tokens are opaque base64url strings carrying the
 * offset and a hash of the parsed filter and order they were made for.
 *
 * No globals: every function is thread-safe.
 */
#ifndef MCPQ_ING_LISTING_H
#define MCPQ_ING_LISTING_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define LST_MAX_CLAUSES 8 /* filter clauses joined by AND */
#define LST_MAX_ORDER 4   /* orderBy fields */
#define LST_VALUE_MAX 256 /* bytes of one filter value, NUL included */

/* One filterable/sortable field: the name used in filter/orderBy strings (e.g. "name",
 * "server", "published", "create_time") and the JSON key in each item holding its value
 * (e.g. "name", "server", "published", "createTime"). Values may be strings, numbers or
 * booleans (true/false). */
typedef struct ing_listing_field {
    const char *name;
    const char *json_key;
} ing_listing_field_t;

typedef struct ing_listing_query {
    int page_size; /* 1..max */
    size_t offset; /* from pageToken */
    /* Private to listing.c. json_key points into the caller's field tables, which must
     * outlive the query (they are static tables in practice). */
    struct {
        const char *json_key;
        int negate; /* != */
        char value[LST_VALUE_MAX];
    } clause[LST_MAX_CLAUSES];
    size_t nclauses;
    struct {
        const char *json_key;
        int desc;
    } order[LST_MAX_ORDER];
    size_t norder;
    unsigned char hash[8]; /* of the clauses and order, bound into page tokens */
} ing_listing_query_t;

/* Parses the request's list parameters (any may be NULL = absent; "" is the same as absent).
 *
 * page_size: absent/0 → def_size; above max_size → clamped to max_size; negative or not an
 *   integer → error.
 * filter (AIP-160 subset): clause (AND clause)*; clause = FIELD OP VALUE; OP is = or !=;
 *   VALUE is a double-quoted string (backslash escapes \" and \\), a bare word (letters,
 *   digits, _ . -), or true/false; whitespace around tokens optional; `AND` is case-sensitive
 *   uppercase (as AIP-160); at most LST_MAX_CLAUSES clauses. FIELD must be one of `fields`,
 *   else an error naming the field and listing the allowed ones.
 * order_by: "FIELD", "FIELD desc" or "FIELD asc", FIELD one of order_fields; a comma list of
 *   up to LST_MAX_ORDER such ("a desc, b"). Default: the first of order_fields ascending.
 * page_token: the opaque string ing_listing_apply() produced; it encodes the offset and a hash of
 * the filter and orderBy it was made for (as parsed, so spelling and spacing do not matter); a
 * token for a different filter/orderBy, or garbage → error "invalid pageToken".
 *
 * fields and order_fields must outlive q. Returns 0, or MCPQ_EINVAL (see common/err.h) with
 * err filled with a message for the client that names the parameter
 * ("filter: unknown field 'foo'; allowed: name, server, published").
 */
int ing_listing_parse(ing_listing_query_t *q, const char *page_size, const char *page_token,
                      const char *filter, const char *order_by, const ing_listing_field_t *fields,
                      size_t nfields, const ing_listing_field_t *order_fields, size_t norder,
                      int def_size, int max_size, char *err, size_t err_size);

/* Filters, sorts (stable; ties broken by the "name" json key if present, so pages are
 * deterministic) and pages `items` (a cJSON array of objects; not modified).
 *
 * Returns a NEW array holding duplicates of the page's items, and *next_token = malloc'd token
 * for the next page or NULL when this is the last page; the caller owns both. NULL (and
 * *next_token NULL) when out of memory.
 *
 * Matching: `published = true` matches items whose json value is true; against a string value
 * the filter value compares as a string, against a number numerically; a missing (or null)
 * key never equals anything (so `x != "a"` matches an item without x).
 * Sorting ranks values by type first (missing or null < booleans < numbers < strings < other),
 * then by value (false < true, numeric, byte-wise); desc reverses the whole order.
 */
cJSON *ing_listing_apply(const ing_listing_query_t *q, const cJSON *items, char **next_token);

/* Releases what ing_listing_parse() allocated: nothing today (the query is self-contained), kept so
 * callers need not change if it ever allocates. q may be NULL. */
void ing_listing_query_free(ing_listing_query_t *q);

#endif
