/*
 * jv.h - generic helpers on cJSON values: whether a number is integral, deep equality
 * and a structural hash that agrees with it, and rendering numbers and values for error
 * messages. Values may come from users, so the recursive functions take a depth bound
 * instead of trusting the nesting of their input.
 *
 * Pure functions, values are only read: thread-safe.
 */
#ifndef MCPQ_JSONVAL_H
#define MCPQ_JSONVAL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* 1 when v is a finite number without a fractional part, else 0. */
int jv_is_integral(const cJSON *v);

/*
 * Deep equality as JSON Schema defines it: numbers by value (1 equals 1.0), strings byte
 * for byte, arrays item by item, objects by members in any order. Returns 1 equal, 0
 * different, -1 when a or b nests more than max_depth levels below itself before a
 * difference is found (max_depth < 0 gives -1 at once).
 */
int jv_equal(const cJSON *a, const cJSON *b, int max_depth);

/*
 * A 64-bit hash (FNV-1a based) equal for values jv_equal calls equal, object members in any
 * order. Levels more than max_depth below v contribute only their type.
 */
uint64_t jv_hash(const cJSON *v, int max_depth);

/*
 * Writes d into buf (of size): integral values below 1e15 in magnitude without a fraction
 * ("3", "-12"), others with %.15g. Output is clipped to fit.
 */
void jv_number_format(double d, char *buf, size_t size);

/*
 * Adds member name = v to obj as digits cJSON prints verbatim (a raw item), in place of a
 * number item, which cJSON prints through sprintf("%1.15g"), a sscanf to check it and, for
 * 16 or more digits, sprintf("%1.17g") again: the worker prints a few timestamps per job
 * and that was most of the cost of its records (the workers section of
 * docs/benchmarks.md, bench/sec_workers.sh).
 * The text is the same number a number item gives. Only for an object that is printed, never
 * read back as a number. The new item, or NULL out of memory.
 */
cJSON *jv_add_int(cJSON *obj, const char *name, int64_t v);

/*
 * Adds member name to obj standing for the number item n: digits (jv_add_int) when n is
 * integral and at most 2^53 in magnitude (-0 excepted), else a reference to n (which obj
 * then borrows).
 * For a copy of a parsed document that is printed at once. The new item, or NULL.
 */
cJSON *jv_add_number_ref(cJSON *obj, const char *name, const cJSON *n);

/*
 * Appends the compact JSON text of v (at most 120 characters, the longer ones clipped and
 * ending in "...") to the NUL-terminated string in buf (of size), clipped to fit; "?" when v
 * is NULL or cannot be printed.
 */
void jv_append_clipped(char *buf, size_t size, const cJSON *v);

#endif
