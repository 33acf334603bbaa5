/* jprint.h: prints a cJSON tree as compact JSON text, byte for byte what cJSON_PrintUnformatted
 * of libcjson 1.7.15 prints, at a fraction of its cost on the request path (docs/benchmarks.md,
 * section "throughput"): cJSON prints every number with sprintf("%1.15g") and reads it back
 * with sscanf, and grows its buffer by reallocs; here an integral number below 10^15 is
 * written digit by digit and the buffer doubles. Other numbers take cJSON's own way
 * ("%1.15g", then "%1.17g" when the first does not read back as the same double; NaN and
 * infinities as null), strings get cJSON's escapes (\" \\ \b \f \n \r \t, other bytes below
 * 0x20 as \u00xx, everything else as it is), raw items their text.
 *
 * Thread-safe (no state). */
#ifndef MCPQ_JPRINT_H
#define MCPQ_JPRINT_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* The most text jprint_unformatted writes: a larger tree gives NULL. */
#define JPRINT_MAX_BYTES ((size_t)256 << 20)

/* A growing text: data (cJSON_malloc'd, NUL-terminated after jprint_buf_end), len bytes
 * used; failed once out of memory or past JPRINT_MAX_BYTES (everything put later is
 * dropped). Start from {0}. */
typedef struct jprint_buf {
    char *data;
    size_t len, cap;
    int failed;
} jprint_buf_t;

/* Appends n bytes of s as they are. */
void jprint_put(jprint_buf_t *b, const char *s, size_t n);

/* Appends s as a JSON string with cJSON's escapes (NULL as ""). */
void jprint_put_string(jprint_buf_t *b, const char *s);

/* Appends item as compact JSON text (b->failed when item holds an invalid item). */
void jprint_put_item(jprint_buf_t *b, const cJSON *item);

/* The text of b, NUL-terminated (the caller frees it with cJSON_free), or NULL (freed) when b
 * failed; b is empty afterwards. */
char *jprint_buf_end(jprint_buf_t *b);

/* item as compact JSON text, NUL-terminated, allocated with cJSON_malloc (free with
 * cJSON_free), or NULL when item is NULL, holds an invalid item (as cJSON), is out of memory
 * or its text would pass JPRINT_MAX_BYTES. */
char *jprint_unformatted(const cJSON *item);

#endif
