#include "jobsig.h"

#include "err.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Copies a key of len bytes into k after checking its size and content; name is the
 * setting it came from, for the message. */
static int key_set(jobsig_key_t *k, const char *bytes, size_t len, const char *name, char *errstr,
                   size_t errstr_size)
{
    if (memchr(bytes, '\0', len)) {
        snprintf(errstr, errstr_size, "%s holds a NUL byte", name);
        return MCPQ_EINVAL;
    }
    if (len < JOBSIG_KEY_MIN || len > JOBSIG_KEY_MAX) {
        snprintf(errstr, errstr_size, "%s must be %d to %d bytes long (it is %zu)", name,
                 JOBSIG_KEY_MIN, JOBSIG_KEY_MAX, len);
        return MCPQ_EINVAL;
    }
    memcpy(k->bytes, bytes, len);
    k->len = len;
    return 0;
}

/* Reads the key in path (its trailing CR/LF dropped) into k. */
static int key_read(jobsig_key_t *k, const char *path, const char *name, char *errstr,
                    size_t errstr_size)
{
    char buf[JOBSIG_KEY_MAX + 3];
    size_t n;
    int rc = util_read_secret(path, name, buf, sizeof(buf), &n, errstr, errstr_size);
    if (rc == 0)
        rc = key_set(k, buf, n, name, errstr, errstr_size);
    memset(buf, 0, sizeof(buf));
    return rc;
}

/* One key from its two settings (either may be NULL or empty). 1 when loaded, 0 when
 * neither is set, MCPQ_EINVAL. */
static int key_load(jobsig_key_t *k, const char *value, const char *file, const char *name,
                    char *errstr, size_t errstr_size)
{
    int has_value = value && *value, has_file = file && *file;
    if (has_value && has_file) {
        snprintf(errstr, errstr_size, "%s and %s_FILE are both set: set one", name, name);
        return MCPQ_EINVAL;
    }
    int rc = 0;
    if (has_value)
        rc = key_set(k, value, strlen(value), name, errstr, errstr_size);
    else if (has_file)
        rc = key_read(k, file, name, errstr, errstr_size);
    else
        return 0;
    return rc < 0 ? rc : 1;
}

int jobsig_keys_load(jobsig_keys_t *keys, const mcpq_settings_t *s, char *errstr,
                     size_t errstr_size)
{
    memset(keys, 0, sizeof(*keys));
    int cur = key_load(&keys->key[0], s->job_signing_key, s->job_signing_key_file,
                       "MCPQ_JOB_SIGNING_KEY", errstr, errstr_size);
    int prev = cur < 0 ? 0
                       : key_load(&keys->key[1], s->job_signing_key_previous,
                                  s->job_signing_key_previous_file, "MCPQ_JOB_SIGNING_KEY_PREVIOUS",
                                  errstr, errstr_size);
    int rc = 0;
    if (cur < 0 || prev < 0) {
        rc = MCPQ_EINVAL;
    } else if (prev && !cur) {
        snprintf(errstr, errstr_size,
                 "MCPQ_JOB_SIGNING_KEY_PREVIOUS is set without MCPQ_JOB_SIGNING_KEY");
        rc = MCPQ_EINVAL;
    }
    if (rc < 0) {
        jobsig_keys_cleanup(keys);
        return rc;
    }
    keys->n = (size_t)cur + (size_t)prev;
    return 0;
}

void jobsig_keys_cleanup(jobsig_keys_t *keys)
{
    if (!keys)
        return;
    /* volatile: the wipe is not an optimizable dead store. */
    volatile unsigned char *p = (volatile unsigned char *)keys;
    for (size_t i = 0; i < sizeof(*keys); i++)
        p[i] = 0;
}

void jobsig_sign(const jobsig_key_t *key, const void *payload, size_t len,
                 char out[JOBSIG_VALUE_LEN + 1])
{
    size_t pl = sizeof(JOBSIG_PREFIX) - 1;
    memcpy(out, JOBSIG_PREFIX, pl);
    util_hmac_sha256_hex(key->bytes, key->len, payload, len, out + pl);
}

static int lower_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

jobsig_check_t jobsig_verify(const jobsig_keys_t *keys, const void *payload, size_t len,
                             const void *value, size_t value_len)
{
    if (keys->n == 0)
        return JOBSIG_OK;
    if (!value)
        return JOBSIG_MISSING;
    size_t pl = sizeof(JOBSIG_PREFIX) - 1;
    const char *v = value;
    if (value_len != JOBSIG_VALUE_LEN || memcmp(v, JOBSIG_PREFIX, pl) != 0 ||
        !lower_hex(v + pl, value_len - pl))
        return JOBSIG_MALFORMED;
    int ok = 0;
    for (size_t i = 0; i < keys->n; i++) {
        char want[JOBSIG_VALUE_LEN + 1];
        jobsig_sign(&keys->key[i], payload, len, want);
        ok |= util_ct_equal(want, v, JOBSIG_VALUE_LEN);
    }
    return ok ? JOBSIG_OK : JOBSIG_MISMATCH;
}

const char *jobsig_check_name(jobsig_check_t c)
{
    switch (c) {
    case JOBSIG_OK:
        return "ok";
    case JOBSIG_MISSING:
        return "missing";
    case JOBSIG_MALFORMED:
        return "malformed";
    case JOBSIG_MISMATCH:
        return "mismatch";
    }
    return "?";
}
