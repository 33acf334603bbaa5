/* Tests common/jobsig.c: job record signatures, key loading from settings and files,
 * rotation with a previous key. */
#include "check.h"
#include "err.h"
#include "jobsig.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEY_A "0123456789abcdef0123456789abcdef-key-a"
#define KEY_B "fedcba9876543210fedcba9876543210-key-b"

static char errstr[512];

static int load(jobsig_keys_t *k, const char *key, const char *file, const char *prev,
                const char *prev_file)
{
    mcpq_settings_t s;
    memset(&s, 0, sizeof(s));
    s.job_signing_key = key;
    s.job_signing_key_file = file;
    s.job_signing_key_previous = prev;
    s.job_signing_key_previous_file = prev_file;
    errstr[0] = '\0';
    return jobsig_keys_load(k, &s, errstr, sizeof(errstr));
}

static void test_sign_verify(void)
{
    jobsig_keys_t k;
    CHECK_INT_EQ(load(&k, KEY_A, NULL, NULL, NULL), 0);
    CHECK_INT_EQ((int)k.n, 1);
    const char *payload = "{\"v\":1,\"job_id\":\"j_1\"}";
    char sig[JOBSIG_VALUE_LEN + 1];
    jobsig_sign(&k.key[0], payload, strlen(payload), sig);
    CHECK_INT_EQ((int)strlen(sig), (int)JOBSIG_VALUE_LEN);
    CHECK(strncmp(sig, "v1=", 3) == 0);
    /* the signature is hex(HMAC-SHA256(key, payload)), what an operator can compute too */
    char want[65];
    util_hmac_sha256_hex(KEY_A, strlen(KEY_A), payload, strlen(payload), want);
    CHECK_STR_EQ(sig + 3, want);
    CHECK_INT_EQ(jobsig_verify(&k, payload, strlen(payload), sig, strlen(sig)), JOBSIG_OK);
    /* one byte of the payload changed, cut, or grown */
    CHECK_INT_EQ(
        jobsig_verify(&k, "{\"v\":1,\"job_id\":\"j_2\"}", strlen(payload), sig, strlen(sig)),
        JOBSIG_MISMATCH);
    CHECK_INT_EQ(jobsig_verify(&k, payload, strlen(payload) - 1, sig, strlen(sig)),
                 JOBSIG_MISMATCH);
    /* absent, empty, wrong version, upper-case hex, short, long */
    CHECK_INT_EQ(jobsig_verify(&k, payload, strlen(payload), NULL, 0), JOBSIG_MISSING);
    CHECK_INT_EQ(jobsig_verify(&k, payload, strlen(payload), "", 0), JOBSIG_MALFORMED);
    char bad[JOBSIG_VALUE_LEN + 2];
    memcpy(bad, sig, sizeof(sig));
    bad[1] = '2';
    CHECK_INT_EQ(jobsig_verify(&k, payload, strlen(payload), bad, JOBSIG_VALUE_LEN),
                 JOBSIG_MALFORMED);
    memcpy(bad, sig, sizeof(sig));
    for (size_t i = 3; i < JOBSIG_VALUE_LEN; i++)
        if (bad[i] >= 'a' && bad[i] <= 'f')
            bad[i] = (char)(bad[i] - 'a' + 'A');
    CHECK_INT_EQ(jobsig_verify(&k, payload, strlen(payload), bad, JOBSIG_VALUE_LEN),
                 strcmp(bad, sig) == 0 ? JOBSIG_OK : JOBSIG_MALFORMED);
    CHECK_INT_EQ(jobsig_verify(&k, payload, strlen(payload), sig, JOBSIG_VALUE_LEN - 1),
                 JOBSIG_MALFORMED);
    memcpy(bad, sig, sizeof(sig));
    bad[JOBSIG_VALUE_LEN] = '0';
    CHECK_INT_EQ(jobsig_verify(&k, payload, strlen(payload), bad, JOBSIG_VALUE_LEN + 1),
                 JOBSIG_MALFORMED);
    /* another key's signature */
    jobsig_keys_t other;
    CHECK_INT_EQ(load(&other, KEY_B, NULL, NULL, NULL), 0);
    CHECK_INT_EQ(jobsig_verify(&other, payload, strlen(payload), sig, strlen(sig)),
                 JOBSIG_MISMATCH);
    /* no keys: nothing is checked */
    jobsig_keys_t none;
    CHECK_INT_EQ(load(&none, NULL, NULL, NULL, NULL), 0);
    CHECK_INT_EQ((int)none.n, 0);
    CHECK_INT_EQ(jobsig_verify(&none, payload, strlen(payload), NULL, 0), JOBSIG_OK);
    CHECK_INT_EQ(load(&none, "", "", NULL, NULL), 0); /* empty counts as unset */
    CHECK_INT_EQ((int)none.n, 0);
    CHECK_STR_EQ(jobsig_check_name(JOBSIG_MISMATCH), "mismatch");
    jobsig_keys_cleanup(&k);
    CHECK_INT_EQ((int)k.n, 0);
    CHECK_INT_EQ((int)k.key[0].len, 0);
    TEST_PASS("sign and verify: HMAC-SHA256 over the exact bytes, v1= + lowercase hex");
}

static void test_rotation(void)
{
    jobsig_keys_t old_ingress, new_ingress, worker;
    CHECK_INT_EQ(load(&old_ingress, KEY_A, NULL, NULL, NULL), 0);
    CHECK_INT_EQ(load(&new_ingress, KEY_B, NULL, NULL, NULL), 0);
    CHECK_INT_EQ(load(&worker, KEY_B, NULL, KEY_A, NULL), 0);
    CHECK_INT_EQ((int)worker.n, 2);
    const char *p = "payload";
    char s_old[JOBSIG_VALUE_LEN + 1], s_new[JOBSIG_VALUE_LEN + 1];
    jobsig_sign(&old_ingress.key[0], p, 7, s_old);
    jobsig_sign(&new_ingress.key[0], p, 7, s_new);
    CHECK_INT_EQ(jobsig_verify(&worker, p, 7, s_old, JOBSIG_VALUE_LEN), JOBSIG_OK);
    CHECK_INT_EQ(jobsig_verify(&worker, p, 7, s_new, JOBSIG_VALUE_LEN), JOBSIG_OK);
    CHECK_INT_EQ(jobsig_verify(&new_ingress, p, 7, s_old, JOBSIG_VALUE_LEN), JOBSIG_MISMATCH);
    /* the worker's current key signs, never the previous one */
    char s_w[JOBSIG_VALUE_LEN + 1];
    jobsig_sign(&worker.key[0], p, 7, s_w);
    CHECK_STR_EQ(s_w, s_new);
    TEST_PASS("rotation: a worker with a previous key accepts both signatures");
}

static void test_load_errors(void)
{
    jobsig_keys_t k;
    CHECK_INT_EQ(load(&k, "short", NULL, NULL, NULL), MCPQ_EINVAL);
    CHECK_CONTAINS(errstr, "MCPQ_JOB_SIGNING_KEY must be 32 to 1024 bytes long (it is 5)");
    CHECK(strstr(errstr, "short") == NULL); /* the message never holds the key */
    CHECK_INT_EQ((int)k.n, 0);
    char big[JOBSIG_KEY_MAX + 2];
    memset(big, 'k', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK_INT_EQ(load(&k, big, NULL, NULL, NULL), MCPQ_EINVAL);
    big[JOBSIG_KEY_MAX] = '\0';
    CHECK_INT_EQ(load(&k, big, NULL, NULL, NULL), 0);
    CHECK_INT_EQ(load(&k, KEY_A, "/nonexistent/key", NULL, NULL), MCPQ_EINVAL);
    CHECK_CONTAINS(errstr, "MCPQ_JOB_SIGNING_KEY and MCPQ_JOB_SIGNING_KEY_FILE are both set");
    CHECK_INT_EQ(load(&k, NULL, NULL, KEY_A, NULL), MCPQ_EINVAL);
    CHECK_CONTAINS(errstr, "MCPQ_JOB_SIGNING_KEY_PREVIOUS is set without MCPQ_JOB_SIGNING_KEY");
    CHECK_INT_EQ(load(&k, KEY_A, NULL, "short", NULL), MCPQ_EINVAL);
    CHECK_CONTAINS(errstr, "MCPQ_JOB_SIGNING_KEY_PREVIOUS must be 32 to 1024 bytes long");
    CHECK_INT_EQ((int)k.n, 0);
    CHECK_INT_EQ(load(&k, NULL, "/nonexistent/key", NULL, NULL), MCPQ_EINVAL);
    CHECK_CONTAINS(errstr, "MCPQ_JOB_SIGNING_KEY: cannot open /nonexistent/key");
    TEST_PASS("bad keys are refused at start-up with a message that names the setting");
}

static void write_file(const char *path, const char *content, size_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK_INT_EQ((int)fwrite(content, 1, len, f), (int)len);
    CHECK_INT_EQ(fclose(f), 0);
}

static void test_files(void)
{
    char dir[] = "/tmp/mcpq-jobsig-XXXXXX", a[64], b[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(a, sizeof(a), "%s/a", dir);
    snprintf(b, sizeof(b), "%s/b", dir);
    /* a Kubernetes Secret mounted as a file, with or without its trailing newline */
    write_file(a, KEY_A "\n", strlen(KEY_A) + 1);
    write_file(b, KEY_B "\r\n", strlen(KEY_B) + 2);
    jobsig_keys_t from_file, from_env;
    CHECK_INT_EQ(load(&from_file, NULL, b, NULL, a), 0);
    CHECK_INT_EQ(load(&from_env, KEY_B, NULL, KEY_A, NULL), 0);
    CHECK_INT_EQ((int)from_file.n, 2);
    CHECK_INT_EQ((int)from_file.key[0].len, (int)strlen(KEY_B));
    CHECK(memcmp(from_file.key[0].bytes, KEY_B, strlen(KEY_B)) == 0);
    CHECK(memcmp(from_file.key[1].bytes, KEY_A, strlen(KEY_A)) == 0);
    /* a NUL byte inside, and a file too short */
    write_file(a, KEY_A "\0x", strlen(KEY_A) + 2);
    CHECK_INT_EQ(load(&from_file, NULL, a, NULL, NULL), MCPQ_EINVAL);
    CHECK_CONTAINS(errstr, "MCPQ_JOB_SIGNING_KEY holds a NUL byte");
    write_file(a, "tiny\n", 5);
    CHECK_INT_EQ(load(&from_file, NULL, a, NULL, NULL), MCPQ_EINVAL);
    CHECK_CONTAINS(errstr, "(it is 4)");
    unlink(a);
    unlink(b);
    rmdir(dir);
    TEST_PASS("keys from files: the trailing newline is not part of the key");
}

int main(void)
{
    test_sign_verify();
    test_rotation();
    test_load_errors();
    test_files();
    return 0;
}
