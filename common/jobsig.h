/*
 * jobsig.h - the signature of a job record (docs/operations.md, "Job signing and Kafka
 * ACLs"): HMAC-SHA256 over the exact bytes of a Kafka record's value, with a key the ingress
 * and every worker share, carried in the record header "mcpq-sig" as "v1=<64 lowercase hex
 * digits>".
 *
 * A job names the program or service a worker runs, so whoever can write a record that a
 * worker accepts can run code on it. The ingress signs every job it publishes
 * (mq_producer_send); a worker checks each record before it parses or runs anything, with
 * its current key or, during a rotation, the previous one. Keys come from
 * MCPQ_JOB_SIGNING_KEY or MCPQ_JOB_SIGNING_KEY_FILE (workers: also
 * MCPQ_JOB_SIGNING_KEY_PREVIOUS[_FILE]); each is at least JOBSIG_KEY_MIN bytes, and a file's
 * trailing newline is not part of its key. With no key nothing is signed or checked, which
 * the binaries warn about at start-up.
 *
 * Nothing here logs, and no message it writes contains a key or a signature. Thread-safe:
 * the keys are read-only once loaded.
 */
#ifndef MCPQ_JOBSIG_H
#define MCPQ_JOBSIG_H

#include "settings.h"
#include "names.h"

#include <stddef.h>

#define JOBSIG_HEADER NAMES_HDR_JOBSIG
#define JOBSIG_PREFIX "v1="
#define JOBSIG_KEY_MIN 32
#define JOBSIG_KEY_MAX 1024
/* "v1=" + 64 hex digits, without the NUL. */
#define JOBSIG_VALUE_LEN (sizeof(JOBSIG_PREFIX) - 1 + 64)

typedef struct jobsig_key {
    unsigned char bytes[JOBSIG_KEY_MAX];
    size_t len;
} jobsig_key_t;

/* key[0] signs and verifies, key[1] (a rotation's previous key) only verifies. n == 0:
 * signing is off. */
typedef struct jobsig_keys {
    jobsig_key_t key[2];
    size_t n;
} jobsig_keys_t;

typedef enum {
    JOBSIG_OK = 0,
    JOBSIG_MISSING,   /* no mcpq-sig header */
    JOBSIG_MALFORMED, /* a header that is not "v1=" + 64 lowercase hex digits */
    JOBSIG_MISMATCH,  /* a well-formed signature no key made */
} jobsig_check_t;

/*
 * Loads the keys the settings name (job_signing_key[_file], and for a worker
 * job_signing_key_previous[_file]; an empty value counts as unset) into keys. 0, or
 * MCPQ_EINVAL with a message in errstr: a key and its _FILE both set, a file that cannot be
 * read, a key shorter than JOBSIG_KEY_MIN or longer than JOBSIG_KEY_MAX bytes or holding a
 * NUL byte, or a previous key without a current one.
 */
int jobsig_keys_load(jobsig_keys_t *keys, const mcpq_settings_t *s, char *errstr,
                     size_t errstr_size);

/* Overwrites the key bytes (the caller owns the struct). NULL is a no-op. */
void jobsig_keys_cleanup(jobsig_keys_t *keys);

/* The header value for payload[0..len) signed with key: JOBSIG_VALUE_LEN characters and a
 * NUL into out. */
void jobsig_sign(const jobsig_key_t *key, const void *payload, size_t len,
                 char out[JOBSIG_VALUE_LEN + 1]);

/* Checks a record's header value (value_len bytes, NULL when the header is absent) against
 * payload[0..len) with every key, in constant time per key. With no keys loaded: JOBSIG_OK. */
jobsig_check_t jobsig_verify(const jobsig_keys_t *keys, const void *payload, size_t len,
                             const void *value, size_t value_len);

/* "missing", "malformed", "mismatch" or "ok", for logs. */
const char *jobsig_check_name(jobsig_check_t c);

#endif
