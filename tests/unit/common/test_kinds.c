/* Tests common/kinds.c: kind names, and the URI template rule (check and match). */
#include "check.h"
#include "err.h"
#include "kinds.h"

#include <stdlib.h>

static char err[256];

static void test_names(void)
{
    CHECK_INT_EQ(kinds_parse(NULL), KINDS_TOOL);
    CHECK_INT_EQ(kinds_parse("tool"), KINDS_TOOL);
    CHECK_INT_EQ(kinds_parse("resource"), KINDS_RESOURCE);
    CHECK_INT_EQ(kinds_parse("resource_template"), KINDS_TEMPLATE);
    CHECK_INT_EQ(kinds_parse("prompt"), KINDS_PROMPT);
    CHECK_INT_EQ(kinds_parse("Prompt"), -1);
    CHECK_STR_EQ(kinds_name(KINDS_TEMPLATE), "resource_template");
    cJSON *o = cJSON_Parse("{\"kind\":7}");
    CHECK_INT_EQ(kinds_of(o), -1);
    cJSON_Delete(o);
    o = cJSON_Parse("{}");
    CHECK_INT_EQ(kinds_of(o), KINDS_TOOL);
    cJSON_Delete(o);
    TEST_PASS("kind names");
}

#define BAD(tpl, needle)                                                                           \
    do {                                                                                           \
        CHECK_INT_EQ(kinds_template_check(tpl, err, sizeof(err)), MCPQ_EINVAL);                    \
        CHECK_CONTAINS(err, needle);                                                               \
    } while (0)

static void test_check(void)
{
    CHECK_INT_EQ(kinds_template_check("file:///logs/{day}.txt", err, sizeof(err)), 0);
    CHECK_INT_EQ(kinds_template_check("db://{schema}/{table}", err, sizeof(err)), 0);
    BAD("file:///x", "has no {variable}");
    BAD("file:///{a", "unclosed '{' at byte 8");
    BAD("file:///a}", "'}' without '{' at byte 9");
    BAD("file:///{+path}", "level 1");
    BAD("file:///{a:3}", "level 1");
    BAD("file:///{}", "level 1");
    BAD("x://{a}{b}", "follows another variable");
    BAD("x://{a}/{a}", "variable \"a\" appears twice");
    BAD("", "must be 1-2048 bytes");
    TEST_PASS("template check");
}

static void expect(const char *tpl, const char *uri, const char *vars_json)
{
    cJSON *vars = (cJSON *)1;
    int rc = kinds_template_match(tpl, uri, &vars);
    if (!vars_json) {
        CHECK_INT_EQ(rc, 0);
        CHECK(vars == NULL);
        return;
    }
    CHECK_INT_EQ(rc, 1);
    char *got = cJSON_PrintUnformatted(vars);
    CHECK_STR_EQ(got, vars_json);
    free(got);
    cJSON_Delete(vars);
}

static void test_match(void)
{
    expect("file:///logs/{day}.txt", "file:///logs/2026-11-28.txt", "{\"day\":\"2026-11-28\"}");
    expect("file:///logs/{day}.txt", "file:///logs/.txt", NULL);      /* 1+ characters */
    expect("file:///logs/{day}.txt", "file:///logs/a/b.txt", NULL);   /* no '/' */
    expect("file:///logs/{day}.txt", "file:///logs/a.txt.bak", NULL); /* whole uri */
    expect("db://{schema}/{table}", "db://s/t", "{\"schema\":\"s\",\"table\":\"t\"}");
    expect("db://{schema}/{table}", "db://s/t/u", NULL);
    /* backtracking: each variable takes the shortest value that lets the rest match */
    expect("x://{a}.txt", "x://b.txt.txt", "{\"a\":\"b.txt\"}");
    expect("x://{a}-{b}", "x://1-2-3", "{\"a\":\"1\",\"b\":\"2-3\"}");
    /* no match without the vars out-parameter: only the answer */
    CHECK_INT_EQ(kinds_template_match("x://{a}", "x://q", NULL), 1);
    /* a pathological uri is bounded: many dashes, no match */
    char big[KINDS_URI_MAX + 1];
    memset(big, '-', KINDS_URI_MAX);
    memcpy(big, "x://", 4);
    big[KINDS_URI_MAX] = '\0';
    expect("x://{a}-{b}-{c}-{d}-{e}.z", big, NULL);
    char huge[KINDS_URI_MAX + 3];
    memset(huge, 'a', sizeof(huge) - 1);
    memcpy(huge, "x://", 4);
    huge[sizeof(huge) - 1] = '\0';
    expect("x://{a}", huge, NULL); /* longer than KINDS_URI_MAX */
    TEST_PASS("template match");
}

/* The mcpq:resource:updated message: the three members, JSON-escaped. */
static void test_updated_message(void)
{
    char *m = kinds_updated_message("t", "srv", "file:///a \"b\"");
    CHECK_STR_EQ(m, "{\"tenant\":\"t\",\"server\":\"srv\",\"uri\":\"file:///a \\\"b\\\"\"}");
    cJSON_free(m);
    TEST_PASS("resource-updated message");
}

int main(void)
{
    test_names();
    test_check();
    test_match();
    test_updated_message();
    return 0;
}
