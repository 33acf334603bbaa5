/*
 * util.h - small helpers every component needs: clocks, random ids, SHA-256 and HMAC
 * in hex, base64url, constant-time comparison, bounded integer parsing and a growable byte
 * buffer with a hard maximum. All functions are thread-safe.
 */
#ifndef MCPQ_UTIL_H
#define MCPQ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

/* Wall clock in Unix milliseconds / a monotonic clock in milliseconds. */
int64_t util_now_ms(void);
int64_t util_mono_ms(void);
/* The same in microseconds: durations inside one process use util_mono_us(); instants that
 * cross processes (a job's sent_us, a record's finished_us) use util_now_us(). */
int64_t util_now_us(void);
int64_t util_mono_us(void);

/* The CLOCK_REALTIME instant timeout_ms from now, as pthread_cond_timedwait takes it. */
struct timespec util_deadline_realtime(int timeout_ms);

/* Unix ms as RFC 3339 UTC with milliseconds ("2026-01-01T00:00:00.000Z"; out at least 25
 * bytes). */
void util_format_utc(int64_t ms, char *out, size_t size);

/* An RFC 3339 UTC time "YYYY-MM-DDTHH:MM:SS[.digits]Z" (what util_format_utc writes, with
 * or without the fraction) as Unix ms: 0, or MCPQ_EINVAL. */
int util_parse_utc(const char *s, int64_t *ms);

/* host[:port] of url for messages and logs, never its userinfo, path or query; "(invalid
 * url)" when it does not parse. */
void util_url_host(const char *url, char *out, size_t size);

/* Writes the 2*n lowercase hex characters of in[0..n) plus a NUL to out. */
void util_hex(const unsigned char *in, size_t n, char *out);

/* Unpadded base64url (RFC 4648 section 5) of in[0..n) plus a NUL into out, which must hold
 * UTIL_B64URL_LEN(n) + 1 bytes. */
#define UTIL_B64URL_LEN(n) (((n) / 3) * 4 + ((n) % 3 ? (n) % 3 + 1 : 0))
void util_b64url_encode(const unsigned char *in, size_t n, char *out);

/* The one base64 decoder of the tree (RFC 4648): the alphabet and the padding rule are the
 * caller's, everything else is strict, so each byte string has exactly one accepted encoding:
 * no whitespace, no character outside the alphabet, no non-zero unused trailing bits, at most
 * two '=' and only at the end. UTIL_B64_URL: the base64url alphabet (-_) instead of +/.
 * UTIL_B64_PAD: padding required (the length a multiple of 4); UTIL_B64_NOPAD: padding
 * refused; neither: optional (when present, the length must be a multiple of 4).
 * Decodes s[0..n) into out (size bytes) and sets *len. 0, or MCPQ_EINVAL (bad character,
 * padding or length, or more than size bytes). out is only written within [0, size). */
#define UTIL_B64_URL 1
#define UTIL_B64_PAD 2
#define UTIL_B64_NOPAD 4
int util_b64_decode(const char *s, size_t n, int flags, unsigned char *out, size_t size,
                    size_t *len);

/* Writes 2*nbytes lowercase hex characters of cryptographic randomness plus a NUL; nbytes at
 * most 64 (MCPQ_EINVAL), MCPQ_EIO when OpenSSL's generator fails. The bytes come from
 * RAND_bytes through a per-thread pool (util.c): thread-safe, and a process never repeats the
 * ids of the process it was forked from. */
int util_random_hex(char *out, size_t nbytes);

/* hex(SHA-256(data)) into out[65]. */
void util_sha256_hex(const void *data, size_t len, char out[65]);

/* hex(HMAC-SHA256(key, data)) into out[65]. */
void util_hmac_sha256_hex(const void *key, size_t keylen, const void *data, size_t len,
                          char out[65]);

/* 1 when a and b (both len bytes) are equal; time depends only on len. */
int util_ct_equal(const void *a, const void *b, size_t len);

/* Writes the printf-formatted message into err (err_size bytes, truncated; nothing when
 * err_size is 0) and returns MCPQ_EINVAL: the one line of a validator that refuses input with
 * a message the caller passes on. */
int util_errf(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 1 when s[0..len) is an id: 1..max bytes of [A-Za-z0-9_-] and the characters of extra ("" for
 * none; ".:" for channel and job ids). Task, delivery, channel and job ids, request nonces. */
int util_id_ok(const char *s, size_t len, size_t max, const char *extra);

/* 1 when word[0..len) (len > 0) is one of the space-separated words of list (NULL: none):
 * permissions and OAuth scopes. */
int util_word_in(const char *list, const char *word, size_t len);

/* Appends word[0..len) to the space-separated list out (a string in n bytes) unless it is
 * there already or empty: 0, or -1 when it does not fit (out unchanged). */
int util_word_add(char *out, size_t n, const char *word, size_t len);

/* Parses a whole decimal string into [min, max]; 0 or MCPQ_EINVAL. */
int util_parse_ll(const char *s, long long min, long long max, long long *out);

/*
 * The one reader of secret files (a mounted Kubernetes Secret named by a *_FILE setting):
 * the content of path into out (size bytes), its trailing CR/LF dropped, NUL-terminated,
 * its length in *len. MCPQ_EINVAL with errstr naming the setting `name` and the path when the
 * file cannot be read, holds size - 1 bytes or more, or holds a NUL byte (out is wiped then).
 */
int util_read_secret(const char *path, const char *name, char *out, size_t size, size_t *len,
                     char *errstr, size_t errstr_size);

/* A listen address parsed by util_parse_listen(). */
typedef struct util_listen {
    struct sockaddr_storage addr; /* AF_INET or AF_INET6 */
    socklen_t len;                /* sizeof the family's sockaddr */
    int dual_stack; /* [::]: an IPv6 socket with IPV6_V6ONLY off, so IPv4 clients connect too */
} util_listen_t;

/* A listen address into a socket address (docs/operations.md "Listen addresses and the operations
 * port"):
 *   "[v6]:port"  an IPv6 literal in brackets ("[::1]:8080", "[fe80::1%eth0]:8080"); "[::]" is
 *                every interface, IPv6 and IPv4 alike (dual stack);
 *   "v4:port"    a dotted quad ("127.0.0.1:8080", "0.0.0.0:8080");
 *   "localhost:port" 127.0.0.1; ":port" and "*:port" every IPv4 interface.
 * Port 0-65535. Any other name, or an IPv6 literal without brackets, is MCPQ_EINVAL. Used by
 * the ingress's HTTP servers and the worker's metrics server. */
int util_parse_listen(const char *listen, util_listen_t *out);

/* A socket address as a listen address string: "127.0.0.1:8080" or "[::1]:8080" ("?" for
 * another family). */
void util_listen_format(const struct sockaddr *sa, char *out, size_t size);

/* A byte buffer that refuses to grow past max (curl's dynbuf). Always NUL-terminated. */
typedef struct util_buf {
    char *data;
    size_t len;
    size_t cap;
    size_t max;
} util_buf_t;

/* An empty buffer in caller-owned b that allocates nothing until the first append. */
void util_buf_init(util_buf_t *b, size_t max);
/* Frees b's data and leaves it empty (b itself is the caller's). */
void util_buf_cleanup(util_buf_t *b);
/* 0, MCPQ_ETOOBIG when len+n would pass max (nothing appended), or MCPQ_ENOMEM. */
int util_buf_append(util_buf_t *b, const void *p, size_t n);

#endif
