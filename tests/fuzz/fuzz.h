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

/* Called once per input; data is size bytes (no NUL after it). Always returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(expr)                                                                           \
    do {                                                                                           \
        if (!(expr)) {                                                                             \
            fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed\n", __FILE__, __LINE__, #expr);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
