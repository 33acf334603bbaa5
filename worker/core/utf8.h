/*
 * utf8.h - UTF-8 checks and repair for untrusted bytes (Kafka records, executor output,
 * HTTP bodies) before they go into JSON that other components parse strictly.
 *
 * cJSON copies string bytes as they are, so output that is not UTF-8 would reach the
 * ingress as a malformed result record. Well-formed means RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF. NUL counts as invalid too (cJSON strings end there).
 *
 * Pure functions, thread-safe.
 */
#ifndef MCPQ_WORKER_UTF8_H
#define MCPQ_WORKER_UTF8_H

#include <stddef.h>

/* 1 when s[0..len) is well-formed UTF-8 without NUL, else 0. */
int wrk_utf8_valid(const char *s, size_t len);

/* The longest prefix length <= max of s[0..len) that does not end inside a multi-byte
 * sequence (when s is well-formed there). */
size_t wrk_utf8_cut(const char *s, size_t len, size_t max);

/* A NUL-terminated malloc'd copy of s[0..len) where every byte that is not part of a
 * well-formed sequence, and every NUL, becomes U+FFFD. NULL on ENOMEM; the caller frees. */
char *wrk_utf8_sanitize(const char *s, size_t len);

#endif
