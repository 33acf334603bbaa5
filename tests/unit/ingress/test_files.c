/*
 * Unit tests of the pure parts of ingress/core/files.c: URL signatures, file id, filename and
 * content-type validation, and the Content-Disposition header.
 */
#include "check.h"
#include "err.h"
#include "files.h"
#include "util.h"

#include <string.h>

#define ID "f_0123456789abcdef0123456789abcdef"

static void test_sign(void)
{
    const char *key = "k3y";
    char sig[65], want[65];
    ing_files_sign(key, 3, "GET", ID, 1700000000, sig);
    util_hmac_sha256_hex(key, 3, "GET\n" ID "\n1700000000", strlen("GET\n" ID "\n1700000000"),
                         want);
    CHECK_STR_EQ(sig, want);
    CHECK_INT_EQ(ing_files_verify(key, 3, "GET", ID, "1700000000", sig, 1699999999), 0);
    CHECK_INT_EQ(ing_files_verify(key, 3, "GET", ID, "1700000000", sig, 1700000000), 0);
    CHECK_INT_EQ(ing_files_verify(key, 3, "GET", ID, "1700000000", sig, 1700000001),
                 MCPQ_ETIMEDOUT);
    CHECK_INT_EQ(ing_files_verify(key, 3, "PUT", ID, "1700000000", sig, 0), MCPQ_EINVAL);
    CHECK_INT_EQ(ing_files_verify(key, 3, "GET", ID, "1700000001", sig, 0), MCPQ_EINVAL);
    CHECK_INT_EQ(ing_files_verify("other", 5, "GET", ID, "1700000000", sig, 0), MCPQ_EINVAL);
    CHECK_INT_EQ(
        ing_files_verify(key, 3, "GET", "f_0123456789abcdef0123456789abcdee", "1700000000", sig, 0),
        MCPQ_EINVAL);
    CHECK_INT_EQ(ing_files_verify(key, 3, "GET", ID, NULL, sig, 0), MCPQ_EINVAL);
    CHECK_INT_EQ(ing_files_verify(key, 3, "GET", ID, "1700000000", NULL, 0), MCPQ_EINVAL);
    CHECK_INT_EQ(ing_files_verify(key, 3, "GET", ID, "17e8", sig, 0), MCPQ_EINVAL);
    CHECK_INT_EQ(ing_files_verify(key, 3, "GET", ID, "1700000000", "abc", 0), MCPQ_EINVAL);
    /* an expired URL with a wrong signature says "bad signature", not "expired" */
    char bad[65];
    memcpy(bad, sig, 65);
    bad[0] = bad[0] == '0' ? '1' : '0';
    CHECK_INT_EQ(ing_files_verify(key, 3, "GET", ID, "1700000000", bad, 1800000000), MCPQ_EINVAL);
    TEST_PASS("signatures cover method, file id and expiry; expiry is checked after the sig");
}

static void test_ids(void)
{
    CHECK(ing_files_id_ok(ID));
    CHECK(!ing_files_id_ok("f_0123456789ABCDEF0123456789abcdef"));
    CHECK(!ing_files_id_ok("f_0123456789abcdef0123456789abcde"));
    CHECK(!ing_files_id_ok("g_0123456789abcdef0123456789abcdef"));
    CHECK(!ing_files_id_ok("../0123456789abcdef0123456789abcdef"));
    CHECK(!ing_files_id_ok(""));
    CHECK(!ing_files_id_ok(NULL));
    TEST_PASS("file ids are f_ and 32 lowercase hex digits");
}

static void test_filenames(void)
{
    char longname[300];
    memset(longname, 'a', 255);
    longname[255] = '\0';
    CHECK(ing_files_filename_ok("report.pdf"));
    CHECK(ing_files_filename_ok("r\xc3\xa9sum\xc3\xa9 \"final\" (2).txt"));
    CHECK(ing_files_filename_ok("\xe6\x8a\xa5\xe5\x91\x8a.docx"));
    CHECK(ing_files_filename_ok(longname));
    longname[255] = 'a';
    longname[256] = '\0';
    CHECK(!ing_files_filename_ok(longname));
    CHECK(!ing_files_filename_ok(""));
    CHECK(!ing_files_filename_ok(NULL));
    CHECK(!ing_files_filename_ok("a/b"));
    CHECK(!ing_files_filename_ok("a\\b"));
    CHECK(!ing_files_filename_ok("."));
    CHECK(!ing_files_filename_ok(".."));
    CHECK(!ing_files_filename_ok("a\nb"));
    CHECK(!ing_files_filename_ok("a\rb"));
    CHECK(!ing_files_filename_ok("a\tb"));
    CHECK(!ing_files_filename_ok("a\x7f"));
    CHECK(!ing_files_filename_ok("a\xc2\x85"));     /* C1 NEL */
    CHECK(!ing_files_filename_ok("a\xff"));         /* not UTF-8 */
    CHECK(!ing_files_filename_ok("a\xc0\xaf"));     /* overlong '/' */
    CHECK(!ing_files_filename_ok("a\xed\xa0\x80")); /* surrogate */
    TEST_PASS("filenames: 1-255 bytes of UTF-8, no separators, controls or dot names");
}

static void test_ctypes(void)
{
    CHECK(ing_files_ctype_ok("text/plain"));
    CHECK(ing_files_ctype_ok("application/vnd.openxmlformats-officedocument.wordprocessingml."
                             "document"));
    CHECK(ing_files_ctype_ok("text/plain; charset=utf-8"));
    CHECK(ing_files_ctype_ok("image/svg+xml"));
    CHECK(!ing_files_ctype_ok("text"));
    CHECK(!ing_files_ctype_ok("text/"));
    CHECK(!ing_files_ctype_ok("/plain"));
    CHECK(!ing_files_ctype_ok("text plain"));
    CHECK(!ing_files_ctype_ok("text/plain\r\nX-Evil: 1"));
    CHECK(!ing_files_ctype_ok("text/plain junk"));
    CHECK(!ing_files_ctype_ok("text/pl\xc3\xa4in"));
    CHECK(!ing_files_ctype_ok(""));
    CHECK(!ing_files_ctype_ok(NULL));
    CHECK(ing_files_ctype_eq("text/plain", "Text/PLAIN"));
    CHECK(ing_files_ctype_eq("text/plain;charset=utf-8", "text/plain; charset=UTF-8"));
    CHECK(!ing_files_ctype_eq("text/plain", "text/plain; charset=utf-8"));
    CHECK(!ing_files_ctype_eq("text/plain", "text/html"));
    TEST_PASS("content types: type/subtype tokens with optional parameters; compared "
              "case-insensitively");
}

static void test_disposition(void)
{
    char out[512];
    CHECK_INT_EQ(ing_files_disposition("q3.pdf", out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "attachment; filename=\"q3.pdf\"; filename*=UTF-8''q3.pdf");
    CHECK_INT_EQ(ing_files_disposition("a \"b\"\\c;d%.txt", out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "attachment; filename=\"a _b__c;d%.txt\"; "
                      "filename*=UTF-8''a%20%22b%22%5Cc%3Bd%25.txt");
    CHECK_INT_EQ(ing_files_disposition("\xe6\x8a\xa5.txt", out, sizeof(out)), 0);
    CHECK_STR_EQ(out, "attachment; filename=\"___.txt\"; filename*=UTF-8''%E6%8A%A5.txt");
    char small[20];
    CHECK_INT_EQ(ing_files_disposition("q3.pdf", small, sizeof(small)), MCPQ_ETOOBIG);
    TEST_PASS("Content-Disposition: ASCII fallback with quotes replaced, RFC 8187 filename*");
}

int main(void)
{
    test_sign();
    test_ids();
    test_filenames();
    test_ctypes();
    test_disposition();
    return 0;
}
