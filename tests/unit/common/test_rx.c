/* Tests common/rx.c: the exact ERE produced for class escapes, classes, escapes, groups and
 * quantifiers; every ASCII byte against \d \w \s and their negations in and outside
 * brackets; the constructs refused; buffer errors; and real patterns compiled with regcomp
 * and run with regexec. */
#include "check.h"
#include "err.h"
#include "rx.h"
#include "util.h"

#include <regex.h>

static char out[4096];

/* rx_translate into out (the empty string when nothing was written); returns its result. */
static int tr(const char *ecma)
{
    util_buf_t b;
    util_buf_init(&b, 1 << 16);
    int rc = rx_translate(ecma, &b);
    snprintf(out, sizeof(out), "%s", b.data ? b.data : "");
    util_buf_cleanup(&b);
    return rc;
}

/* Translates, with exactly this ERE as the result. */
#define XLATE(ecma, ere)                                                                           \
    do {                                                                                           \
        CHECK_INT_EQ(tr(ecma), 0);                                                                 \
        CHECK_STR_EQ(out, ere);                                                                    \
    } while (0)

/* Refused as something ERE cannot express. */
#define REFUSED(ecma)                                                                              \
    do {                                                                                           \
        int rc_ = tr(ecma);                                                                        \
        if (rc_ != MCPQ_EINVAL)                                                                    \
            fprintf(stderr, "%s:%d: \"%s\" was not refused (\"%s\")\n", __FILE__, __LINE__, ecma,  \
                    out);                                                                          \
        CHECK_INT_EQ(rc_, MCPQ_EINVAL);                                                            \
    } while (0)

/* Translates and compiles ecma the way sch.c does. */
static void compile(const char *ecma, regex_t *re)
{
    CHECK_INT_EQ(tr(ecma), 0);
    int rc = regcomp(re, out, REG_EXTENDED | REG_NOSUB);
    if (rc != 0)
        fprintf(stderr, "regcomp refused \"%s\" (from \"%s\")\n", out, ecma);
    CHECK_INT_EQ(rc, 0);
}

/* 1 when the translated ecma finds a match in s. */
static int matches(const char *ecma, const char *s)
{
    regex_t re;
    compile(ecma, &re);
    int m = regexec(&re, s, 0, NULL, 0) == 0;
    regfree(&re);
    return m;
}

#define MATCH(ecma, s)                                                                             \
    do {                                                                                           \
        if (!matches(ecma, s))                                                                     \
            fprintf(stderr, "%s:%d: \"%s\" should match \"%s\"\n", __FILE__, __LINE__, ecma, s);   \
        CHECK(matches(ecma, s));                                                                   \
    } while (0)

#define NO_MATCH(ecma, s)                                                                          \
    do {                                                                                           \
        if (matches(ecma, s))                                                                      \
            fprintf(stderr, "%s:%d: \"%s\" should not match \"%s\"\n", __FILE__, __LINE__, ecma,   \
                    s);                                                                            \
        CHECK(!matches(ecma, s));                                                                  \
    } while (0)

/* ECMAScript's ASCII meaning of the class escapes. */
static int is_digit(int ch)
{
    return ch >= '0' && ch <= '9';
}

static int is_word(int ch)
{
    return is_digit(ch) || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
}

static int is_space(int ch)
{
    return (ch >= '\t' && ch <= '\r') || ch == ' ';
}

static int not_digit(int ch)
{
    return !is_digit(ch);
}

static int not_word(int ch)
{
    return !is_word(ch);
}

static int not_space(int ch)
{
    return !is_space(ch);
}

static int digit_or_space(int ch)
{
    return is_digit(ch) || is_space(ch);
}

/* The whole pattern ecma (one character wide) against every ASCII byte but NUL. */
static void check_bytes(const char *ecma, int (*want)(int))
{
    regex_t re;
    compile(ecma, &re);
    for (int ch = 1; ch < 0x80; ch++) {
        char s[2] = {(char)ch, '\0'};
        int got = regexec(&re, s, 0, NULL, 0) == 0;
        if (got != want(ch))
            fprintf(stderr, "\"%s\" (ERE \"%s\") on byte 0x%02x: got %d\n", ecma, out, ch, got);
        CHECK_INT_EQ(got, want(ch));
    }
    regfree(&re);
}

static void test_class_escapes(void)
{
    XLATE("\\d", "[0-9]");
    XLATE("\\w", "[0-9A-Z_a-z]");
    XLATE("\\s", "[\t-\r ]");
    XLATE("[\\d]", "[0-9]");
    XLATE("[^\\d]", "[^0-9]");
    XLATE("[\\d\\s]", "[\t-\r 0-9]");
    XLATE("[^\\w.]", "[^.0-9A-Z_a-z]");
    /* The negations are written out byte by byte, never with NUL, ']' first and '-' last. */
    CHECK_INT_EQ(tr("\\D"), 0);
    CHECK(out[0] == '[' && out[1] == ']' && out[2] == '\x01' && out[strlen(out) - 2] == '-');
    CHECK(strchr(out, '0') == NULL);

    check_bytes("^\\d$", is_digit);
    check_bytes("^[\\d]$", is_digit);
    check_bytes("^[^\\D]$", is_digit);
    check_bytes("^\\D$", not_digit);
    check_bytes("^[\\D]$", not_digit);
    check_bytes("^[^\\d]$", not_digit);
    check_bytes("^\\w$", is_word);
    check_bytes("^[\\w]$", is_word);
    check_bytes("^[^\\W]$", is_word);
    check_bytes("^\\W$", not_word);
    check_bytes("^[\\W]$", not_word);
    check_bytes("^[^\\w]$", not_word);
    check_bytes("^\\s$", is_space);
    check_bytes("^[\\s]$", is_space);
    check_bytes("^[^\\S]$", is_space);
    check_bytes("^\\S$", not_space);
    check_bytes("^[\\S]$", not_space);
    check_bytes("^[^\\s]$", not_space);
    check_bytes("^[\\d\\s]$", digit_or_space);
    TEST_PASS("class escapes \\d \\w \\s and negations");
}

static void test_anchors_and_escapes(void)
{
    XLATE("^abc$", "^abc$");
    XLATE("", "");
    XLATE("a.b", "a.b");
    XLATE("\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\",
          "\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\");
    XLATE("\\/\\-\\,\\:\\=\\!\\ ", "/-,:=! "); /* punctuation ERE does not need escaped */
    XLATE("\\n\\t\\r\\f\\v", "\n\t\r\f\v");
    XLATE("\\x41\\u0042", "AB");
    XLATE("\\x2e\\u002A", "\\.\\*"); /* hex escapes of specials stay literal */
    XLATE("\\bword\\B", "\\bword\\B");
    XLATE("(a|b)(?:cd)", "(a|b)(cd)");
    XLATE("a*?b+?c??d{2,3}?", "a*b+c?d{2,3}"); /* lazy becomes greedy: same search result */
    MATCH("^abc$", "abc");
    NO_MATCH("^abc$", "xabc");
    NO_MATCH("^abc$", "abcx");
    MATCH("b", "abc"); /* unanchored: a search */
    MATCH("^a\\.b$", "a.b");
    NO_MATCH("^a\\.b$", "axb");
    MATCH("^\\x41\\u0042\\/$", "AB/");
    MATCH("\\bword\\b", "a word here");
    NO_MATCH("\\bword\\b", "swordfish");
    MATCH("^(?:ab)+?$", "abab");
    TEST_PASS("anchors, escapes, groups, quantifiers");
}

static void test_brackets(void)
{
    XLATE("[abc]", "[a-c]");
    XLATE("[ab]", "[ab]");
    XLATE("[a-z0-9]", "[0-9a-z]");
    XLATE("[\\]\\-a]", "[]a-]"); /* ']' first, '-' last */
    XLATE("[a\\-z]", "[az-]");
    XLATE("[-a]", "[a-]");
    XLATE("[a-]", "[a-]");
    XLATE("[\\]\\-^]", "[]^-]");
    XLATE("[\\^]", "\\^");
    XLATE("[\\^\\-]", "[-^]"); /* only '^' and '-': '^' first would negate */
    XLATE("[-^]", "[-^]");
    MATCH("^[\\^\\-]+$", "^-");
    NO_MATCH("^[\\^\\-]+$", "x");
    XLATE("[^\\]]", "[^]]");
    XLATE("[^]", "."); /* ECMAScript: any character */
    XLATE("[.*+?(){}|$]", "[$(-+.?{-}]");
    XLATE("[\\x41-\\x43]", "[A-C]");
    XLATE("[\\b]", "[\b]"); /* backspace inside a class */
    MATCH("^[\\]\\-a]+$", "]-a");
    NO_MATCH("^[\\]\\-a]+$", "]-b");
    MATCH("^[a\\-z]+$", "-az");
    NO_MATCH("^[a\\-z]+$", "b");
    MATCH("^[^\\]]+$", "abc");
    NO_MATCH("^[^\\]]+$", "a]c");
    MATCH("^[.*]+$", "*.");
    NO_MATCH("^[.*]+$", "a");
    TEST_PASS("brackets with ']', '-', '^' and ranges");
}

static void test_refused(void)
{
    REFUSED("(?=a)");      /* lookahead */
    REFUSED("a(?!b)");     /* negative lookahead */
    REFUSED("(?<=a)b");    /* lookbehind */
    REFUSED("(?<x>a)");    /* named group */
    REFUSED("(?");         /* truncated group */
    REFUSED("(a)\\1");     /* backreference */
    REFUSED("\\k<x>");     /* named backreference */
    REFUSED("\\p{L}");     /* Unicode property */
    REFUSED("\\0");        /* NUL */
    REFUSED("\\c");        /* unknown escape */
    REFUSED("abc\\");      /* trailing backslash */
    REFUSED("\\x4");       /* short hex */
    REFUSED("\\xzz");      /* not hex */
    REFUSED("\\x80");      /* outside ASCII */
    REFUSED("\\u00e9");    /* outside ASCII */
    REFUSED("[abc");       /* unclosed class */
    REFUSED("[]");         /* empty class: never matches */
    REFUSED("[z-a]");      /* reversed range */
    REFUSED("[a-\\d]");    /* range to a class */
    REFUSED("[\xc3\xa9]"); /* non-ASCII in a class */
    REFUSED("[\\1]");
    /* A lazy quantifier is not refused: for a search it matches what the greedy one does. */
    CHECK_INT_EQ(tr("a*?"), 0);
    CHECK_STR_EQ(out, "a*");
    TEST_PASS("unsupported constructs refused");
}

/* Patterns glibc's regcomp would take gigabytes or seconds to compile
 * (tests/fuzz/corpus/config/regress-regcomp-*): stacked quantifiers are refused, as in
 * ECMAScript, and so is an estimated size above RX_MAX_NODES nodes. */
static void test_expansion_budget(void)
{
    regex_t re;
    REFUSED("a**"); /* nothing to repeat */
    REFUSED("a+*");
    REFUSED("a?+");
    REFUSED("a{2}{3}");
    REFUSED("a{2}?*");
    REFUSED("a???");
    REFUSED("\\+++++++++++++d{3}");
    REFUSED("(a{100}){100}");  /* nested bounds multiply */
    REFUSED("[a-z]{0,10000}"); /* one bound over the budget */
    REFUSED("(a?){,10000}");   /* glibc reads {,m} as {0,m} */
    REFUSED("(a|b+){1000}");   /* alternatives add up */
    REFUSED("x{1000}y{1047}"); /* so does a sequence */
    REFUSED("((a*)*){100}");   /* a repetition of repetitions weighs more */
    /* 65 nested groups */
    REFUSED("(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((a)))))))))))))))))"
            ")))))))))))))))))))))))))))))))))))))))))))))))))");
    XLATE("x{1000}y{1045}", "x{1000}y{1045}"); /* 2048 nodes */
    XLATE("(?:a{50}){9}", "(a{50}){9}");       /* a repeated repetition: 4 x 52 x 9 + 1 nodes */
    XLATE("a{,}b{2}?{", "a{,}b{2}{");          /* not every '{' starts a bound */
    XLATE("a}*", "a}*");                       /* a literal '}' can be repeated */
    XLATE("^([a-z]+(-[a-z]+)*)(\\.([a-z]+(-[a-z]+)*))*$",
          "^([a-z]+(-[a-z]+)*)(\\.([a-z]+(-[a-z]+)*))*$");
    compile("^[a-z]{0,2000}$", &re);
    CHECK(regexec(&re, "abc", 0, NULL, 0) == 0);
    regfree(&re);
    TEST_PASS("stacked quantifiers and expansion budget for regcomp");
}

static void test_buffer_errors(void)
{
    util_buf_t b;
    util_buf_init(&b, 8);
    CHECK_INT_EQ(rx_translate("abcdefghijklmnop", &b), MCPQ_ETOOBIG);
    util_buf_cleanup(&b);
    util_buf_init(&b, 8);
    CHECK_INT_EQ(rx_translate("\\D", &b), MCPQ_ETOOBIG); /* inside a bracket expression */
    util_buf_cleanup(&b);
    util_buf_init(&b, 8);
    CHECK_INT_EQ(rx_translate("x[^\\w\\s]", &b), MCPQ_ETOOBIG); /* inside a class */
    util_buf_cleanup(&b);
    util_buf_init(&b, 8);
    CHECK_INT_EQ(rx_translate("(?=a)", &b), MCPQ_EINVAL); /* refused before the limit */
    util_buf_cleanup(&b);
    TEST_PASS("buffer limit reported");
}

static void test_real_patterns(void)
{
    const char *date = "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$";
    MATCH(date, "2026-01-01T00:00:00Z");
    MATCH(date, "2026-01-01T00:00:00.123Z");
    NO_MATCH(date, "2026-1-01T00:00:00Z");
    NO_MATCH(date, "2026-01-01 00:00:00Z");
    NO_MATCH(date, "2026-01-01T00:00:00.Z");

    const char *email = "^[\\w.+-]+@[\\w-]+(\\.[\\w-]+)*\\.[a-z]{2,}$";
    MATCH(email, "first.last+tag@mail-1.example.com");
    NO_MATCH(email, "no at.example.com");
    NO_MATCH(email, "a@b.c");
    NO_MATCH(email, "a b@example.com");

    const char *tool = "^[A-Za-z][\\w.-]{0,63}$";
    MATCH(tool, "rpa_report.v2-beta");
    NO_MATCH(tool, "9lives");
    NO_MATCH(tool, "has space");
    NO_MATCH(tool, "slash/name");

    const char *token = "^\\S+$";
    MATCH(token, "abc");
    NO_MATCH(token, "a\tb");
    NO_MATCH(token, "");

    const char *url = "^https?://[^\\s/]+(/\\S*)?$";
    MATCH(url, "http://host");
    MATCH(url, "https://host/a/b?c=d");
    NO_MATCH(url, "ftp://host");
    NO_MATCH(url, "https://ho st/");
    TEST_PASS("real patterns compiled and run");
}

int main(void)
{
    test_class_escapes();
    test_anchors_and_escapes();
    test_brackets();
    test_refused();
    test_expansion_budget();
    test_buffer_errors();
    test_real_patterns();
    return 0;
}
