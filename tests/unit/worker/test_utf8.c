/* Tests worker/core/utf8.c: UTF-8 validation, cutting and repair. */
#include "check.h"
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

static void test_valid(void)
{
    CHECK(wrk_utf8_valid("", 0));
    CHECK(wrk_utf8_valid("plain ascii", 11));
    CHECK(wrk_utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14));
    CHECK(wrk_utf8_valid("\xf4\x8f\xbf\xbf", 4));  /* U+10FFFF */
    CHECK(!wrk_utf8_valid("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
    CHECK(!wrk_utf8_valid("\xc0\xaf", 2));         /* overlong */
    CHECK(!wrk_utf8_valid("\xe0\x80\xaf", 3));     /* overlong */
    CHECK(!wrk_utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
    CHECK(!wrk_utf8_valid("\xc3", 1));             /* truncated */
    CHECK(!wrk_utf8_valid("\x80", 1));             /* stray continuation */
    CHECK(!wrk_utf8_valid("\xff", 1));
    CHECK(!wrk_utf8_valid("a\0b", 3)); /* NUL */
    TEST_PASS("validation");
}

static void test_cut(void)
{
    const char *s = "ab\xc3\xa9\xe2\x82\xac";
    size_t n = strlen(s); /* 7 */
    CHECK_INT_EQ(wrk_utf8_cut(s, n, 100), 7);
    CHECK_INT_EQ(wrk_utf8_cut(s, n, 7), 7);
    CHECK_INT_EQ(wrk_utf8_cut(s, n, 6), 4);
    CHECK_INT_EQ(wrk_utf8_cut(s, n, 5), 4);
    CHECK_INT_EQ(wrk_utf8_cut(s, n, 4), 4);
    CHECK_INT_EQ(wrk_utf8_cut(s, n, 3), 2);
    CHECK_INT_EQ(wrk_utf8_cut(s, n, 0), 0);
    TEST_PASS("cutting on character boundaries");
}

static void test_sanitize(void)
{
    char *s = wrk_utf8_sanitize("ok\xff\xc3\xa9\0x\xc3", 8);
    CHECK(s != NULL);
    CHECK_STR_EQ(s, "ok\xef\xbf\xbd\xc3\xa9\xef\xbf\xbdx\xef\xbf\xbd");
    CHECK(wrk_utf8_valid(s, strlen(s)));
    free(s);
    s = wrk_utf8_sanitize("", 0);
    CHECK_STR_EQ(s, "");
    free(s);
    /* Every single byte value, repaired, is valid. */
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        s = wrk_utf8_sanitize(&c, 1);
        CHECK(s != NULL);
        CHECK(wrk_utf8_valid(s, strlen(s)));
        free(s);
    }
    TEST_PASS("repair");
}

int main(void)
{
    test_valid();
    test_cut();
    test_sanitize();
    return 0;
}
