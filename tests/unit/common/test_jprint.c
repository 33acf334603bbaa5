/* Tests common/jprint.c: the text of every tree is byte for byte what cJSON_PrintUnformatted
 * prints (numbers of every kind, escapes, nesting, raw items, empty containers), and NULL and
 * invalid items give NULL. */
#include "check.h"
#include "jprint.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* jprint_unformatted(item) must equal cJSON_PrintUnformatted(item). */
static void same(const cJSON *item)
{
    char *want = cJSON_PrintUnformatted(item);
    char *got = jprint_unformatted(item);
    CHECK(want != NULL && got != NULL);
    CHECK_STR_EQ(got, want);
    cJSON_free(want);
    cJSON_free(got);
}

static void test_numbers(void)
{
    static const double v[] = {0,
                               -0.0,
                               1,
                               -1,
                               7,
                               42,
                               60000,
                               2147483647.0,
                               2147483648.0,
                               -2147483649.0,
                               1e14,
                               999999999999999.0,
                               1e15,
                               -1e15,
                               1764364800123.0,
                               1764364800123456.0,
                               1764364800123450.0,
                               9007199254740992.0,
                               9007199254740993.0,
                               1e16,
                               1e21,
                               1e300,
                               -1e300,
                               0.1,
                               0.5,
                               1.5,
                               -2.25,
                               3.141592653589793,
                               1.0 / 3.0,
                               1e-7,
                               5e-324,
                               123456789.123,
                               2.5e15 + 0.5,
                               NAN,
                               INFINITY,
                               -INFINITY};
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        cJSON *n = cJSON_CreateNumber(v[i]);
        same(n);
        cJSON_Delete(n);
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(v[i]));
    }
    same(arr);
    cJSON_Delete(arr);
    /* numbers as a parser makes them */
    for (long long i = -3000; i <= 3000; i += 7) {
        char text[64];
        snprintf(text, sizeof(text), "[%lld, %lld.25, %lld000000000, %llde-3]", i, i, i, i);
        cJSON *p = cJSON_Parse(text);
        CHECK(p != NULL);
        same(p);
        cJSON_Delete(p);
    }
    TEST_PASS("numbers print as cJSON prints them");
}

static void test_trees(void)
{
    static const char *const docs[] = {
        "{}",
        "[]",
        "null",
        "true",
        "false",
        "\"\"",
        "{\"a\":{},\"b\":[],\"c\":[[],{}],\"d\":null,\"e\":true,\"f\":false}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"x\\\"y\",\"result\":{\"content\":[{\"type\":\"text\","
        "\"text\":\"{\\\"text\\\":\\\"hello\\\"}\"}],\"structuredContent\":{\"text\":\"hello\"}}}",
        "\"q\\\"b\\\\s\\/\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f caf\\u00e9 \\ud83d\\ude00 end\"",
        "{\"k\\u0000ey\":1}",
        "[1,[2,[3,[4,[5,{\"six\":[6.5]}]]]]]",
        "{\"dup\":1,\"dup\":2}",
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        cJSON *p = cJSON_Parse(docs[i]);
        CHECK(p != NULL);
        same(p);
        cJSON_Delete(p);
    }
    /* invalid UTF-8 and every byte from 1 to 255 in a string and a key */
    char all[256];
    for (int c = 1; c < 256; c++)
        all[c - 1] = (char)c;
    all[255] = '\0';
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, all, all);
    cJSON_AddItemToObject(o, "raw", cJSON_CreateRaw("{\"as\":\"is\"}"));
    cJSON *s = cJSON_CreateString("x");
    cJSON_free(s->valuestring);
    s->valuestring = NULL; /* a string without text prints as "" */
    cJSON_AddItemToObject(o, "nostr", s);
    same(o);
    cJSON_Delete(o);
    TEST_PASS("trees, escapes and raw items print as cJSON prints them");
}

static void test_failures(void)
{
    CHECK(jprint_unformatted(NULL) == NULL);
    cJSON *o = cJSON_CreateObject();
    cJSON *bad = cJSON_CreateNull();
    bad->type = cJSON_Invalid;
    cJSON_AddItemToObject(o, "bad", bad);
    CHECK(cJSON_PrintUnformatted(o) == NULL); /* cJSON refuses it too */
    CHECK(jprint_unformatted(o) == NULL);
    cJSON_Delete(o);
    cJSON *raw = cJSON_CreateRaw("1");
    cJSON_free(raw->valuestring);
    raw->valuestring = NULL;
    CHECK(jprint_unformatted(raw) == NULL);
    cJSON_Delete(raw);

    TEST_PASS("NULL and invalid items give NULL");
}

int main(void)
{
    test_numbers();
    test_trees();
    test_failures();
    return 0;
}
