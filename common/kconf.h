/*
 * kconf.h - the Kafka client properties a user gives mcpq (docs/kafka.md): any property
 * librdkafka 2.0.2 knows, without code per property.
 *
 * Sources, in increasing precedence:
 *   1. mcpq's built-in defaults (the `base` list each client passes to kconf_build);
 *   2. the properties file MCPQ_KAFKA_PROPERTIES (Java client / `kcat -F` format:
 *      `key=value`, `key: value` or `key value`; `#` and `!` comment lines; blank lines;
 *      whitespace around key and value trimmed; no escapes, no line continuation);
 *   3. environment overrides: MCPQ_KAFKA_PROP_<NAME>=value sets the property whose name is
 *      <NAME> lower-cased with every `_` turned into `.` (MCPQ_KAFKA_PROP_SECURITY_PROTOCOL ->
 *      security.protocol), and MCPQ_KAFKA_PROP_<NAME>_FILE=/path reads that property's value
 *      from a file (one trailing newline dropped), e.g. a mounted Kubernetes Secret.
 * Properties mcpq sets from its own settings or relies on (the reserved table in kconf.c) are
 * refused in 2 and 3 with a message saying what to set instead.
 *
 * kconf_load() checks every property against librdkafka itself (rd_kafka_conf_set on a scratch
 * configuration): an unknown name or a bad value fails with the property, librdkafka's reason
 * and where it came from (file:line or the variable's name). Each property's scope (producer,
 * consumer or both) is the C/P column of rd_kafka_conf_properties_show(), the table
 * librdkafka's CONFIGURATION.md is generated from, read from the linked library at run time;
 * kconf_build() skips, with an info line, a property that belongs to the other kind of client.
 *
 * Secrets (kconf_secret()) are never printed: kconf_print() redacts them.
 * Thread-safe after kconf_load() (the object is read-only).
 */
#ifndef MCPQ_KAFKACONF_H
#define MCPQ_KAFKACONF_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdio.h>

#define KCONF_ENV_PREFIX "MCPQ_KAFKA_PROP_"
#define KCONF_VALUE_MAX 65536 /* longest value read from a _FILE variable */
#define KCONF_REDACTED "[redacted]"

typedef enum { KCONF_PRODUCER = 1, KCONF_CONSUMER = 2 } kconf_role_t;

/* One property and where it came from ("default", "MCPQ_GROUP_ID", "file.properties:3",
 * "MCPQ_KAFKA_PROP_SASL_PASSWORD_FILE"). */
typedef struct kconf_prop {
    const char *name;
    const char *value;
    const char *origin;
} kconf_prop_t;

typedef struct kconf kconf_t;

/*
 * Reads the properties file at path (NULL or "": none) and the MCPQ_KAFKA_PROP_* variables
 * of envp (NULL-terminated "K=V" strings, e.g. environ), and validates each. NULL with
 * errstr filled ("<origin>: <reason>") on an unreadable file, a malformed line, an unknown
 * property, a bad value or a reserved property.
 */
kconf_t *kconf_load(const char *path, const char *const envp[], char *errstr, size_t errstr_size);
/* Frees k and every property it holds. NULL is a no-op. */
void kconf_free(kconf_t *k);

/* The user's i-th property in the order they apply (later ones win), owned by k; NULL when
 * i is past the last. */
const kconf_prop_t *kconf_get(const kconf_t *k, size_t i);

/* The value the user set for name (the last one), or NULL. */
const char *kconf_value(const kconf_t *k, const char *name);

/*
 * A new rd_kafka_conf_t for role: base (mcpq's defaults, may be overridden), then the user's
 * properties of k that apply to role (k may be NULL), then fixed (mcpq's own; kconf_load has
 * refused them from the user). NULL with errstr on a value librdkafka refuses. The caller
 * owns the result (rd_kafka_conf_destroy, or hand it to rd_kafka_new).
 */
rd_kafka_conf_t *kconf_build(const kconf_t *k, kconf_role_t role, const kconf_prop_t *base,
                             size_t nbase, const kconf_prop_t *fixed, size_t nfixed, char *errstr,
                             size_t errstr_size);

/* Prints the effective properties kconf_build would set, one `name=value  # origin` line
 * each, secrets redacted, and the user's properties skipped for role as comments. */
void kconf_print(FILE *out, const kconf_t *k, kconf_role_t role, const kconf_prop_t *base,
                 size_t nbase, const kconf_prop_t *fixed, size_t nfixed);

/* 1 when the property's value is a secret (passwords, secrets, private keys, JAAS config). */
int kconf_secret(const char *name);

/* The scope of a property name per librdkafka: KCONF_PRODUCER, KCONF_CONSUMER, both ORed,
 * or 0 when librdkafka does not know the name. */
unsigned kconf_scope(const char *name);

#endif
