/*
 * rx.h - translation of ECMAScript regular expression source (JSON Schema "pattern",
 * "patternProperties") into POSIX extended regular expressions for regcomp(REG_EXTENDED).
 *
 * Translated: the class escapes \d \w \s and their negations \D \W \S, in and outside
 * brackets (ASCII meaning; the negations never contain NUL); character classes with ranges,
 * negation and escapes, rewritten as POSIX bracket expressions (']' first, '-' last);
 * escapes \n \t \r \f \v, \xHH and \uXXXX for ASCII (1 to 0x7f), and escaped punctuation,
 * re-escaped only where ERE needs it; \b and \B kept as is (a GNU regcomp extension), and
 * inside a class \b is a backspace; non-capturing groups "(?:" become "("; a lazy quantifier
 * ("*?", "+?", "??", "{n}?") becomes the greedy one, which matches the same strings when
 * the pattern is only searched for. Everything else is copied as is, bytes >= 0x80 outside
 * classes included.
 *
 * Refused as unsupported (MCPQ_EINVAL): lookaround and named groups ("(?=", "(?!", "(?<"),
 * backreferences and other unknown escapes ("\1", "\k", "\p"), a trailing '\', \x or \u
 * without enough hex digits or outside ASCII, bytes >= 0x80 inside a class, an unclosed or
 * empty class ("[]"), a reversed range ("[z-a]"). Refused as too costly to compile: a
 * quantifier right after another one ("a**", "a{2}{3}"; a lazy '?' is still allowed), groups
 * nested deeper than RX_MAX_NEST, and patterns whose estimated regcomp size passes
 * RX_MAX_COPIES atom copies (glibc copies a repeated operand once per repeat, so stacked
 * repetitions multiply; "[a-z]{0,2000}" still fits).
 *
 * Pure functions: thread-safe.
 */
#ifndef MCPQ_RX_H
#define MCPQ_RX_H

#include "util.h"

/*
 * Appends the POSIX ERE equivalent of the ECMAScript pattern ecma (NUL-terminated) to out,
 * which the caller initialised and owns. Returns 0; MCPQ_EINVAL when the pattern uses what
 * ERE cannot express (see above); MCPQ_ETOOBIG or MCPQ_ENOMEM when out cannot grow. On
 * failure out holds a partial translation that must not be used.
 */
int rx_translate(const char *ecma, util_buf_t *out);

#endif
