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

/* item as compact JSON text, NUL-terminated, allocated with cJSON_malloc (free with
 * cJSON_free), or NULL when item is NULL, holds an invalid item (as cJSON), is out of memory
 * or its text would pass JPRINT_MAX_BYTES. */
char *jprint_unformatted(const cJSON *item);

/* Where jprint_string writes: n bytes of s (not NUL-terminated) appended to ctx. */
typedef void (*jprint_put_fn)(void *ctx, const char *s, size_t n);

/* s (NULL: "") as a JSON string with cJSON's escapes, in pieces through put(ctx, ...): the one
 * string escaper of the tree (common/log.c writes its lines with it). */
void jprint_string(const char *s, jprint_put_fn put, void *ctx);

#endif
