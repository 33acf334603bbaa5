/* Tests common/jv.c: numbers added as digits (jv_add_int, jv_add_number_ref). */
#include "check.h"
#include "jv.h"

#include <stdint.h>
#include <stdlib.h>

static void int_prints(int64_t v, const char *want)
{
    cJSON *o = cJSON_CreateObject();
    CHECK(jv_add_int(o, "n", v) != NULL);
    char *s = cJSON_PrintUnformatted(o);
    CHECK_STR_EQ(s, want);
    free(s);
    cJSON_Delete(o);
}

static void test_add_int(void)
{
    int_prints(0, "{\"n\":0}");
    int_prints(7, "{\"n\":7}");
    int_prints(-42, "{\"n\":-42}");
    int_prints(1767225600000000LL, "{\"n\":1767225600000000}");
    int_prints(INT64_MAX, "{\"n\":9223372036854775807}");
    int_prints(INT64_MIN, "{\"n\":-9223372036854775808}");
    TEST_PASS("jv_add_int prints digits, zero, negatives and the int64 limits included");
}

static void test_add_number_ref(void)
{
    cJSON *src = cJSON_Parse("[3, 2.25, 9007199254740992, 18014398509481984, -0.0]");
    cJSON *o = cJSON_CreateObject();
    const char *names[] = {"a", "b", "c", "d", "e"};
    int i = 0;
    for (cJSON *it = src->child; it; it = it->next, i++)
        CHECK(jv_add_number_ref(o, names[i], it) != NULL);
    char *s = cJSON_PrintUnformatted(o);
    CHECK_STR_EQ(s, "{\"a\":3,\"b\":2.25,\"c\":9007199254740992,\"d\":18014398509481984,"
                    "\"e\":-0}");
    free(s);
    cJSON_Delete(o);
    cJSON_Delete(src); /* o borrowed b and d: freed before src */
    TEST_PASS("jv_add_number_ref: integers up to 2^53 as digits, other numbers borrowed");
}

int main(void)
{
    test_add_int();
    test_add_number_ref();
    return 0;
}
