/*
 * jwt.h - JSON Web Tokens as an OAuth resource server receives them (ingress/core/oauth.c
 * fetches the keys, ingress/http/auth.c decides what a token grants): a compact JWS (RFC 7515)
 * parsed strictly, a JWKS document (RFC 7517) turned into public keys, the signature checked
 * with OpenSSL, and the time and audience claims (RFC 7519) checked. Pure: no I/O, no
 * logging, no clock (the caller passes the time).
 *
 * Accepted: alg RS256, PS256 (salt length 32, MGF1 SHA-256), ES256 and EdDSA (Ed25519) only.
 * "none", every HS* (an HMAC keyed with a public key is the "alg confusion" attack) and any
 * other alg are refused, and so is a key of the wrong type for the token's alg.
 *
 * Bounds: a token is at most JWT_TOKEN_MAX bytes, a JWKS document at most JWT_JWKS_MAX bytes
 * with at most JWT_KEYS_MAX entries in "keys".
 *
 * Errors are the JWT_E* codes below; where a function takes `why`, *why is set to a short
 * static message meant for a client (never containing any part of the token or a key).
 *
 * Thread-safety: every function is reentrant. A jwt_t and a jwt_keyset_t are read-only after
 * they are built, so one of each may be used by several threads at once (jwt_verify on a
 * shared key set included); jwt_free / jwt_keyset_free must not race with a reader.
 */
#ifndef MCPQ_JWT_H
#define MCPQ_JWT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define JWT_TOKEN_MAX (16 * 1024) /* bytes of a compact token */
#define JWT_JWKS_MAX (256 * 1024) /* bytes of a JWKS document */
#define JWT_KEYS_MAX 64           /* entries of a JWKS "keys" array */

typedef struct jwt jwt_t;               /* a parsed compact JWS */
typedef struct jwt_keyset jwt_keyset_t; /* the usable public keys of one JWKS document */

enum {
    JWT_OK = 0,
    JWT_EMALFORMED = -1, /* not a compact JWS / JWKS we accept, or a claim of the wrong type */
    JWT_EALG = -2,       /* alg refused, or the key named by kid does not fit the alg */
    JWT_EKID = -3,       /* kid names no key of the set (the caller may refetch the keys) */
    JWT_ESIG = -4,       /* the signature does not verify */
    JWT_EEXPIRED = -5,   /* exp missing or passed (with the skew) */
    JWT_ENOTYET = -6,    /* nbf or iat in the future (with the skew) */
    JWT_EISS = -7,       /* iss not the expected issuer (the callers' check) */
    JWT_EAUD = -8,       /* aud names none of the accepted audiences */
};

/*
 * Parses token[0..len) (NUL-termination not needed; a NUL inside is refused): exactly three
 * '.'-separated segments of unpadded base64url (RFC 4648 section 5, strict: no '=', no
 * character outside the alphabet, no stray bits); the header a JSON object with a string
 * "alg", "kid" a string when present, no "crit"; the payload a JSON object. The signature
 * segment may be empty (jwt_verify then refuses it). Does not verify anything else.
 * 0 with *out set (the caller frees it with jwt_free), or JWT_EMALFORMED with *why set
 * (also when out of memory).
 */
int jwt_parse(const char *token, size_t len, jwt_t **out, const char **why);

/* 1 when the NUL-terminated token has the shape of a compact JWS (at most JWT_TOKEN_MAX bytes,
 * three base64url segments, the header decoding to a JSON object), else 0: how a bearer token
 * is told from an opaque one. token may be NULL (0). */
int jwt_looks_like(const char *token);

/* The header's "alg" (never NULL) and "kid" (NULL when absent), the payload object, and its
 * "iss" when a string (else NULL): all borrowed from t, valid until jwt_free(t). */
const char *jwt_alg(const jwt_t *t);
const char *jwt_kid(const jwt_t *t);
const cJSON *jwt_claims(const jwt_t *t);
const char *jwt_iss(const jwt_t *t);

/* Frees t; NULL does nothing. */
void jwt_free(jwt_t *t);

/*
 * Builds the key set of a JWKS document json[0..len) ({"keys": [...]}, at most JWT_JWKS_MAX
 * bytes and JWT_KEYS_MAX entries). Keeps the keys it can verify with: kty "RSA" with n and e
 * (modulus 2048..8192 bits), kty "EC" crv "P-256" with x and y (32 bytes each, a point on the
 * curve), kty "OKP" crv "Ed25519" with x (32 bytes). Skips (without failing the document)
 * keys with "use" other than "sig", an unknown kty or crv, a JWK "alg" other than one the key
 * type can serve (RS256/PS256 for RSA, ES256 for EC, EdDSA for OKP), and keys whose material
 * is missing or invalid. Returns a set the caller frees with jwt_keyset_free, or NULL with
 * *why set: not JSON, no "keys" array, too big, too many keys, no usable key, out of memory.
 */
jwt_keyset_t *jwt_keyset_parse(const char *json, size_t len, const char **why);

/* The number of usable keys in ks (0 for NULL). */
size_t jwt_keyset_count(const jwt_keyset_t *ks);

/* 1 when a key of ks has this kid, else 0 (also for NULL arguments). */
int jwt_keyset_has_kid(const jwt_keyset_t *ks, const char *kid);

/* Frees ks; NULL does nothing. */
void jwt_keyset_free(jwt_keyset_t *ks);

/*
 * Checks the signature of t only: alg must be RS256, PS256, ES256 or EdDSA (none, HS*,
 * anything else: JWT_EALG); the key (by kid; without kid, every key of the alg's type) must be
 * of the alg's type (RSA for RS/PS, EC P-256 for ES256, Ed25519 for EdDSA) and, when the JWK
 * says "alg", that alg. JWT_OK, JWT_EALG (alg refused, or no key named kid fits the alg),
 * JWT_EKID (kid names no key; without kid: no key of the alg's type), JWT_ESIG (no fitting key
 * verifies), with *why set on failure. ks NULL is an empty set.
 */
int jwt_verify(const jwt_t *t, const jwt_keyset_t *ks, const char **why);

/*
 * The time claims at now_s (Unix seconds) with skew_s seconds of clock skew allowed: "exp"
 * required, expired when now_s >= exp + skew_s (JWT_EEXPIRED); "nbf" when present, not yet
 * when now_s + skew_s < nbf, and "iat" when present, refused when iat > now_s + skew_s
 * (JWT_ENOTYET); a time claim that is not a number: JWT_EMALFORMED. JWT_OK, else *why set.
 */
int jwt_check_time(const jwt_t *t, long long now_s, int skew_s, const char **why);

/*
 * JWT_OK when naud is 0, or when "aud" (a string, or an array of strings) contains one of
 * auds[0..naud) (exact, case-sensitive); else JWT_EAUD (aud missing or of another type too).
 */
int jwt_check_aud(const jwt_t *t, const char *const *auds, size_t naud);

/* jwt_check_aud on a claims object of any source (a token's payload, an introspection
 * answer, RFC 7662 "aud" has the same form). */
int jwt_claims_aud(const cJSON *claims, const char *const *auds, size_t naud);

#endif
