/* Unit tests for common/rscript.c: every script of common/lua builds, with its libraries
 * prepended and every @NAME@ replaced by its names.h value. */
#include "check.h"
#include "names.h"
#include "rscript.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

static void test_all_build(void)
{
    int n = 0;
    for (const char *f; (f = rscript_file_name(n)) != NULL; n++) {
        char name[64];
        size_t len = strlen(f);
        CHECK(len > 4 && len < sizeof(name) && strcmp(f + len - 4, ".lua") == 0);
        snprintf(name, sizeof(name), "%.*s", (int)(len - 4), f);
        const rscript_t *s = rscript_get(name);
        if (!s)
            fprintf(stderr, "script %s does not build\n", f);
        CHECK(s != NULL);
        const char *text = rscript_text(s);
        /* Nothing left to substitute, no key spelled other than from names.h. */
        CHECK(strchr(text, '@') == NULL);
        /* Its own header comment is in the text: "-- <file>: ..." or "-- <file> (...)". */
        char head[80];
        snprintf(head, sizeof(head), "-- %s", f);
        CHECK(strstr(text, head) != NULL);
        unsigned char d[SHA_DIGEST_LENGTH];
        char hex[41];
        SHA1((const unsigned char *)text, strlen(text), d);
        for (int j = 0; j < SHA_DIGEST_LENGTH; j++)
            snprintf(hex + 2 * j, 3, "%02x", d[j]);
        CHECK_STR_EQ(rscript_sha(s), hex);
    }
    CHECK(n >= 20);
    TEST_PASS("every embedded script builds, fully substituted, with its SHA1");
}

static void test_compose(void)
{
    /* A task script gets lib_whq, lib_clock and lib_task first, in that order. */
    const char *t = rscript_text(rscript_get("task_cancel"));
    CHECK(t != NULL);
    const char *w = strstr(t, "local function whq_enqueue("),
               *c = strstr(t, "local function now_ms("), *q = strstr(t, "local function qkey("),
               *body = strstr(t, "-- task_cancel.lua");
    CHECK(w && c && q && body && w < c && c < q && q < body);
    /* Keys and channels come from names.h. */
    CHECK(strstr(t, "'" NAMES_KEY_CANCEL "' .. ARGV[1]") != NULL);
    CHECK(strstr(t, "'" NAMES_CHAN_CANCEL "'") != NULL);
    CHECK(strstr(t, "'" NAMES_KEY_TASK "' .. id .. '" NAMES_SUFFIX_WAITERS "'") != NULL);
    CHECK(rscript_get("no_such_script") == NULL);
    CHECK(rscript_get(NULL) == NULL);
    TEST_PASS("libraries prepended in order, names.h keys substituted");
}

int main(void)
{
    test_all_build();
    test_compose();
    return 0;
}
