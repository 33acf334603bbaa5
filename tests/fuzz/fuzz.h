/*
 * fuzz.h - what every libFuzzer driver in tests/fuzz/ shares (h2o fuzz/ style): the entry
 * point libFuzzer (or tests/fuzz/replay.c) calls, and FUZZ_CHECK, which aborts with a
 * message when a property of a parser's output does not hold, so that libFuzzer keeps the
 * input as a crash. A driver is one file, fuzz_<name>.c, built both ways by CMakeLists.txt;
 * docs/fuzzing.md says what each covers.
 */
#ifndef MCPQ_FUZZ_H
#define MCPQ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Called once per input; data is size bytes (no NUL after it). Always returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(expr)                                                                           \
    do {                                                                                           \
        if (!(expr)) {                                                                             \
            fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed\n", __FILE__, __LINE__, #expr);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/*
 * Splits the input into fields separated by NUL or newline bytes, for drivers whose input is a
 * list of strings: copies data into a malloc'd, NUL-terminated buffer (*copy, the caller frees
 * it), points f[0..n) at the fields (a field the input ends before stays NULL, like a missing
 * header) and returns what follows the n-th separator (empty when the input ends first), whose
 * length goes to *rest_len. NULL when out of memory.
 */
static inline const char *fuzz_fields(const uint8_t *data, size_t size, char **copy, char **f,
                                      int n, size_t *rest_len)
{
    char *c = malloc(size + 1);
    if (!c)
        return NULL;
    memcpy(c, data, size);
    c[size] = '\0';
    char *p = c, *end = c + size;
    for (int i = 0; i < n; i++)
        f[i] = NULL;
    for (int i = 0; i < n && p <= end; i++) {
        f[i] = p;
        char *sep = p;
        while (sep < end && *sep != '\0' && *sep != '\n')
            sep++;
        *sep = '\0';
        p = sep + 1;
    }
    *copy = c;
    *rest_len = p <= end ? (size_t)(end - p) : 0;
    return p <= end ? p : end;
}

#endif
