/* Tests ingress/core/listing.c: pageSize, filter, orderBy and pageToken (AIP-158/160/132). */
#include "check.h"
#include "err.h"
#include "listing.h"

static const ing_listing_field_t fields[] = {
    {"name", "name"},
    {"server", "server"},
    {"published", "published"},
    {"create_time", "createTime"},
    {"n", "n"},
};
static const ing_listing_field_t order_fields[] = {
    {"name", "name"},
    {"create_time", "createTime"},
    {"n", "n"},
};
#define NF (sizeof(fields) / sizeof(fields[0]))
#define NO (sizeof(order_fields) / sizeof(order_fields[0]))

static cJSON *items;
static char err[256];

static int parse(ing_listing_query_t *q, const char *size, const char *token, const char *filter,
                 const char *order)
{
    return ing_listing_parse(q, size, token, filter, order, fields, NF, order_fields, NO, 2, 3, err,
                     sizeof(err));
}

/* The page's names, comma-separated, into out. */
static void names(const cJSON *page, char *out, size_t size)
{
    size_t o = 0;
    out[0] = '\0';
    const cJSON *it;
    cJSON_ArrayForEach(it, page)
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name"));
        o += (size_t)snprintf(out + o, size - o, "%s%s", o ? "," : "", name ? name : "?");
    }
}

/* Every page of a query, followed token by token: the names of all pages joined by '|'. */
static const char *run(const char *size, const char *filter, const char *order)
{
    static char all[512];
    char *token = NULL, page_names[256];
    size_t o = 0;
    all[0] = '\0';
    do {
        ing_listing_query_t q;
        CHECK_INT_EQ(parse(&q, size, token, filter, order), 0);
        free(token);
        cJSON *page = ing_listing_apply(&q, items, &token);
        CHECK(page);
        names(page, page_names, sizeof(page_names));
        o += (size_t)snprintf(all + o, sizeof(all) - o, "%s%s", o ? "|" : "", page_names);
        cJSON_Delete(page);
        ing_listing_query_free(&q);
    } while (token);
    return all;
}

/* Every item, in one page (page size 3 is the max here, so page size is ignored: pages are
 * joined with ',' instead). */
static const char *all(const char *filter, const char *order)
{
    static char out[512];
    snprintf(out, sizeof(out), "%s", run("3", filter, order));
    for (char *p = out; *p; p++)
        if (*p == '|')
            *p = ',';
    return out;
}

static void check_error(const char *size, const char *token, const char *filter, const char *order,
                        const char *want)
{
    ing_listing_query_t q;
    CHECK_INT_EQ(parse(&q, size, token, filter, order), MCPQ_EINVAL);
    CHECK_CONTAINS(err, want);
}

static void test_page_size(void)
{
    ing_listing_query_t q;
    const char *const sizes[] = {NULL, "", "0", "1", "3", "4", "100000000000000000"};
    const int want[] = {2, 2, 2, 1, 3, 3, 3};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        CHECK_INT_EQ(parse(&q, sizes[i], NULL, NULL, NULL), 0);
        CHECK_INT_EQ(q.page_size, want[i]);
        CHECK_INT_EQ(q.offset, 0);
    }
    check_error("-1", NULL, NULL, NULL, "pageSize: must be a non-negative integer, got '-1'");
    check_error("abc", NULL, NULL, NULL, "pageSize:");
    check_error("2.5", NULL, NULL, NULL, "pageSize:");
    check_error("1x", NULL, NULL, NULL, "pageSize:");
    check_error("999999999999999999999999", NULL, NULL, NULL, "pageSize:");
    TEST_PASS("pageSize: default, clamping and errors");
}

static void test_filter(void)
{
    /* = and != on strings, booleans and numbers; a missing key never equals anything. */
    CHECK_STR_EQ(all("name = alpha", NULL), "alpha");
    CHECK_STR_EQ(all("name != alpha", NULL), "bravo,charlie,delta,echo");
    CHECK_STR_EQ(all("published = true", NULL), "bravo,delta,echo");
    CHECK_STR_EQ(all("published = false", NULL), "alpha");
    CHECK_STR_EQ(all("published != true", NULL), "alpha,charlie");
    CHECK_STR_EQ(all("n = 3", NULL), "delta");
    CHECK_STR_EQ(all("n = 3.0", NULL), "delta");
    CHECK_STR_EQ(all("n != 3", NULL), "alpha,bravo,charlie,echo");
    CHECK_STR_EQ(all("n = abc", NULL), "");
    CHECK_STR_EQ(all("name = true", NULL), ""); /* a bare true against a string: text */
    CHECK_STR_EQ(all("  ", NULL), "alpha,bravo,charlie,delta,echo");
    /* Quoted values: spaces, escaped quote and backslash, characters a bare word lacks. */
    CHECK_STR_EQ(all("server = \"my server\"", NULL), "bravo");
    CHECK_STR_EQ(all("server=\"say \\\"hi\\\" \\\\o/\"", NULL), "charlie");
    CHECK_STR_EQ(all("create_time = \"2026-11-24T10:00:01.000Z\"", NULL), "alpha,echo");
    CHECK_STR_EQ(all("name = \"\"", NULL), "");
    /* AND, with and without spaces. */
    CHECK_STR_EQ(all("server = default AND published = true", NULL), "delta,echo");
    CHECK_STR_EQ(all("server=default AND name!=echo", NULL), "delta");
    CHECK_STR_EQ(all("server=\"default\"AND name != \"echo\"", NULL), "delta");
    TEST_PASS("filter: = and != on strings, booleans, numbers; quoting; AND");
}

static void test_filter_errors(void)
{
    ing_listing_query_t q;
    CHECK_INT_EQ(parse(&q, NULL, NULL, "foo = 1", NULL), MCPQ_EINVAL);
    CHECK_STR_EQ(err, "filter: unknown field 'foo'; allowed: name, server, published, "
                      "create_time, n");
    check_error(NULL, NULL, "name = a AND", NULL, "filter: expected a field name after AND");
    check_error(NULL, NULL, "AND name = a", NULL,
                "filter: expected a field name at 'AND name = a'");
    check_error(NULL, NULL, "name =", NULL, "filter: missing value for 'name'");
    check_error(NULL, NULL, "name = AND server = a", NULL, "filter: missing value for 'name'");
    check_error(NULL, NULL, "name = \"abc", NULL, "filter: unterminated quoted string");
    check_error(NULL, NULL, "name = \"abc\\", NULL, "filter: unterminated quoted string");
    check_error(NULL, NULL, "name = \"a\\n\"", NULL, "filter: bad escape '\\n'");
    check_error(NULL, NULL, "name", NULL, "filter: expected = or != after 'name'");
    check_error(NULL, NULL, "name < a", NULL, "filter: expected = or != after 'name'");
    check_error(NULL, NULL, "name = a and server = b", NULL,
                "filter: expected AND after the value of 'name', found 'and server = b'");
    check_error(NULL, NULL, "name = a OR name = b", NULL, "found 'OR name = b'");
    check_error(NULL, NULL, "name = a b", NULL, "found 'b'");
    check_error(NULL, NULL, "= a", NULL, "filter: expected a field name at '= a'");
    check_error(NULL, NULL, "n=1 AND n=1 AND n=1 AND n=1 AND n=1 AND n=1 AND n=1 AND n=1 AND n=1",
                NULL, "filter: more than 8 clauses");
    char long_value[300];
    memset(long_value, 'x', sizeof(long_value) - 1);
    long_value[sizeof(long_value) - 1] = '\0';
    char long_filter[320];
    snprintf(long_filter, sizeof(long_filter), "name = %s", long_value);
    check_error(NULL, NULL, long_filter, NULL, "filter: the value of 'name' is longer than");
    TEST_PASS("filter: unknown field and syntax errors");
}

static void test_order(void)
{
    CHECK_STR_EQ(all(NULL, NULL), "alpha,bravo,charlie,delta,echo");
    CHECK_STR_EQ(all(NULL, ""), "alpha,bravo,charlie,delta,echo");
    CHECK_STR_EQ(all(NULL, "name"), "alpha,bravo,charlie,delta,echo");
    CHECK_STR_EQ(all(NULL, "name asc"), "alpha,bravo,charlie,delta,echo");
    CHECK_STR_EQ(all(NULL, "name desc"), "echo,delta,charlie,bravo,alpha");
    /* Ties (alpha and echo share a create_time) fall back to name ascending. */
    CHECK_STR_EQ(all(NULL, "create_time"), "alpha,echo,charlie,delta,bravo");
    CHECK_STR_EQ(all(NULL, "create_time desc"), "bravo,delta,charlie,alpha,echo");
    /* Several fields. */
    CHECK_STR_EQ(all(NULL, "create_time, name desc"), "echo,alpha,charlie,delta,bravo");
    CHECK_STR_EQ(all(NULL, " create_time DESC ,name desc "), "bravo,delta,charlie,echo,alpha");
    /* Numbers sort numerically (10 after 3); a missing value sorts first. */
    CHECK_STR_EQ(all(NULL, "n"), "bravo,charlie,echo,delta,alpha");
    CHECK_STR_EQ(all(NULL, "n desc"), "alpha,delta,echo,charlie,bravo");
    CHECK_STR_EQ(all("published = true", "create_time desc"), "bravo,delta,echo");

    ing_listing_query_t q;
    CHECK_INT_EQ(parse(&q, NULL, NULL, NULL, "server"), MCPQ_EINVAL);
    CHECK_STR_EQ(err, "orderBy: unknown field 'server'; allowed: name, create_time, n");
    check_error(NULL, NULL, NULL, "name up", "orderBy: expected asc or desc after 'name'");
    check_error(NULL, NULL, NULL, "name,", "orderBy: expected a field name after ','");
    check_error(NULL, NULL, NULL, ",name", "orderBy: expected a field name at ',name'");
    check_error(NULL, NULL, NULL, "name desc asc", "orderBy: expected ',' after 'name'");
    check_error(NULL, NULL, NULL, "n, n, n, n, n", "orderBy: more than 4 fields");
    TEST_PASS("orderBy: default, asc, desc, several fields, errors");
}

static void test_paging(void)
{
    char *before = cJSON_PrintUnformatted(items);
    /* 5 items, pageSize 2: three pages, the last without a token, together the full list. */
    CHECK_STR_EQ(run(NULL, NULL, NULL), "alpha,bravo|charlie,delta|echo");
    CHECK_STR_EQ(run("2", NULL, "create_time desc"), "bravo,delta|charlie,alpha|echo");
    CHECK_STR_EQ(run("1", "published = true", "name desc"), "echo|delta|bravo");
    CHECK_STR_EQ(run("3", NULL, NULL), "alpha,bravo,charlie|delta,echo");
    CHECK_STR_EQ(run("3", "name = nobody", NULL), "");
    char *after = cJSON_PrintUnformatted(items);
    CHECK_STR_EQ(after, before); /* items are not modified */
    free(before);
    free(after);

    /* A token is bound to its filter and orderBy (an equivalent spelling is the same query). */
    ing_listing_query_t q;
    char *token = NULL;
    CHECK_INT_EQ(parse(&q, "2", NULL, "published = true", NULL), 0);
    cJSON *page = ing_listing_apply(&q, items, &token);
    CHECK(page && token);
    cJSON_Delete(page);
    CHECK_INT_EQ(parse(&q, "2", token, "published=true", "name asc"), 0);
    CHECK_INT_EQ(q.offset, 2);
    CHECK_INT_EQ(parse(&q, "1", token, "published = true", NULL), 0); /* pageSize may change */
    check_error("2", token, "published = false", NULL, "invalid pageToken");
    check_error("2", token, NULL, NULL, "invalid pageToken");
    check_error("2", token, "published = true", "name desc", "invalid pageToken");
    CHECK_STR_EQ(err, "invalid pageToken");
    token[20] = token[20] == 'A' ? 'B' : 'A'; /* a bit of the hash */
    check_error("2", token, "published = true", NULL, "invalid pageToken");
    free(token);
    check_error(NULL, "garbage", NULL, NULL, "invalid pageToken");
    check_error(NULL, "!!!!!!!!!!!!!!!!!!!!!!!", NULL, NULL, "invalid pageToken");
    check_error(NULL, "AAAAAAAAAAAAAAAAAAAAAAA", NULL, NULL, "invalid pageToken");
    TEST_PASS("paging: tokens through 5 items; tokens bound to the query; garbage tokens");
}

int main(void)
{
    items = cJSON_Parse("[{\"name\":\"delta\",\"server\":\"default\",\"published\":true,"
                        "\"createTime\":\"2026-11-24T10:00:03.000Z\",\"n\":3},"
                        "{\"name\":\"alpha\",\"server\":\"ops\",\"published\":false,"
                        "\"createTime\":\"2026-11-24T10:00:01.000Z\",\"n\":10},"
                        "{\"name\":\"echo\",\"server\":\"default\",\"published\":true,"
                        "\"createTime\":\"2026-11-24T10:00:01.000Z\",\"n\":2},"
                        "{\"name\":\"bravo\",\"server\":\"my server\",\"published\":true,"
                        "\"createTime\":\"2026-11-24T10:00:05.000Z\"},"
                        "{\"name\":\"charlie\",\"server\":\"say \\\"hi\\\" \\\\o/\","
                        "\"createTime\":\"2026-11-24T10:00:02.000Z\",\"n\":1}]");
    CHECK(items);
    test_page_size();
    test_filter();
    test_filter_errors();
    test_order();
    test_paging();
    cJSON_Delete(items);
    return 0;
}
