/*
 * fuzz_listing.c - libFuzzer driver for the list parameters clients send (ingress/core/listing.c
 * ing_listing_parse: pageSize, pageToken, filter, orderBy of the admin API lists and the system
 * server's list_tools; page tokens are base64url decoded by util_b64_decode).
 *
 * Input layout: fields separated by NUL or newline bytes: pageSize, pageToken, filter,
 * orderBy (a field the input ends before is absent).
 *
 * Checked: refusals are MCPQ_EINVAL with a message; an accepted query has 1..max items a
 * page and at most LST_MAX_CLAUSES clauses and LST_MAX_ORDER order fields; ing_listing_apply pages a
 * fixed list to at most that many items, and its next-page token parses back, with the same
 * filter and orderBy, to the offset just after the page; the same token with another
 * filter that parses to other clauses is refused.
 */
#include "err.h"
#include "fuzz.h"
#include "listing.h"

#include <string.h>

enum { F_SIZE, F_TOKEN, F_FILTER, F_ORDER, F_COUNT };

static const ing_listing_field_t fields[] = {{"name", "name"},
                                     {"server", "server"},
                                     {"published", "published"},
                                     {"create_time", "createTime"}};
static const ing_listing_field_t order_fields[] = {{"name", "name"}, {"create_time", "createTime"}};
#define NF (sizeof(fields) / sizeof(fields[0]))
#define NO (sizeof(order_fields) / sizeof(order_fields[0]))

static cJSON *items(void)
{
    static const char json[] =
        "[{\"name\":\"a\",\"server\":\"s1\",\"published\":true,\"createTime\":\"2026-01-01\"},"
        "{\"name\":\"b\",\"server\":\"s2\",\"published\":false,\"createTime\":\"2026-01-02\"},"
        "{\"name\":\"c\",\"server\":\"s1\",\"createTime\":3},{\"name\":\"d\",\"server\":null},"
        "{\"name\":\"e\",\"server\":\"s1\",\"published\":true},{\"server\":\"s3\"}]";
    return cJSON_Parse(json);
}

static int parse(ing_listing_query_t *q, const char *const f[F_COUNT], const char *token, char *err,
                 size_t err_size)
{
    return ing_listing_parse(q, f[F_SIZE], token, f[F_FILTER], f[F_ORDER], fields, NF, order_fields, NO, 2,
                     3, err, err_size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = NULL, *f[F_COUNT];
    size_t rest = 0;
    if (!fuzz_fields(data, size, &copy, f, F_COUNT, &rest))
        return 0;
    ing_listing_query_t q;
    char err[256] = "";
    const char *const *cf = (const char *const *)f;
    int rc = parse(&q, cf, f[F_TOKEN], err, sizeof(err));
    FUZZ_CHECK(rc == 0 || rc == MCPQ_EINVAL);
    if (rc != 0) {
        FUZZ_CHECK(err[0] != '\0');
        free(copy);
        return 0;
    }
    FUZZ_CHECK(q.page_size >= 1 && q.page_size <= 3);
    FUZZ_CHECK(q.nclauses <= LST_MAX_CLAUSES && q.norder <= LST_MAX_ORDER);
    cJSON *all = items();
    char *next = NULL;
    cJSON *page = all ? ing_listing_apply(&q, all, &next) : NULL;
    if (page) {
        FUZZ_CHECK(cJSON_GetArraySize(page) <= q.page_size);
        if (next) {
            ing_listing_query_t q2;
            FUZZ_CHECK(parse(&q2, cf, next, err, sizeof(err)) == 0);
            FUZZ_CHECK(q2.offset == q.offset + (size_t)q.page_size);
            /* Bound to its filter: another filter with other clauses refuses it. */
            const char *g[F_COUNT] = {f[F_SIZE], NULL, "name = \"zz-other\"", f[F_ORDER]};
            ing_listing_query_t q3;
            if (q.nclauses != 1 || strcmp(q.clause[0].value, "zz-other") != 0)
                FUZZ_CHECK(parse(&q3, g, next, err, sizeof(err)) == MCPQ_EINVAL);
        }
    }
    free(next);
    cJSON_Delete(page);
    cJSON_Delete(all);
    ing_listing_query_free(&q);
    free(copy);
    return 0;
}
