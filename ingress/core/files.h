/*
 * files.h - uploaded files and tool-call attachments (docs/api.md, "Files and attachments").
 *
 * A file is presigned by its tenant (POST /v1/files/presign-upload), uploaded once with a
 * signed PUT URL that needs no other credential, and handed to tools as a signed, expiring
 * download URL (GET /v1/files/{id}/content?exp=..&sig=..). The bytes live in one directory
 * (MCPQ_FILES_DIR, a volume every replica shares), named by the file id; the metadata lives
 * in Redis, `{mcpq}:file:<id>` (hash: tenant filename content_type size sha256 state
 * created_ms uploaded_ms; state pending|ready), expiring MCPQ_FILES_TTL_S after the presign.
 * Per tenant, for its quotas.file_bytes (quota.h): `{mcpq}:files:<tenant>` (zset of its file ids
 * by expiry, ms) and `{mcpq}:files:<tenant>:sizes` (hash: file id -> size, and `total`), kept
 * by the presign script, which drops expired files from the total before it adds a new one.
 * A sweep thread in every ingress deletes stored files whose metadata has expired (replicas
 * may sweep the same directory at once: deleting is idempotent).
 *
 * URL signatures: sig = hex(HMAC-SHA256(MCPQ_FILES_SECRET, METHOD "\n" file_id "\n" exp)),
 * exp in Unix seconds; a PUT signature does not open a GET and the other way round. Without
 * MCPQ_FILES_SECRET each process draws a random key, so a URL signed by one replica is
 * refused by another: set it whenever there is more than one replica.
 *
 * The HTTP handlers are in filesapi.c. Thread-safe, except ing_files_new/_free.
 */
#ifndef MCPQ_ING_FILES_H
#define MCPQ_ING_FILES_H

#include "ctx.h"
#include "names.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#define ING_FILE_KEY_PREFIX NAMES_KEY_FILE
#define ING_FILE_ID_LEN 34      /* "f_" and 32 hex digits */
#define ING_FILE_NAME_MAX 255   /* bytes of a filename */
#define ING_FILE_CTYPE_MAX 127  /* bytes of a content type */
#define ING_FILES_ATTACH_MAX 32 /* attachments of one tools/call */
#define ING_FILES_URL_MAX 1024  /* an absolute signed URL */

/* A tenant's files for its quota (above): ING_FILES_TENANT_PREFIX <tenant> [SIZES_SUFFIX]. */
#define ING_FILES_TENANT_PREFIX NAMES_KEY_FILES
#define ING_FILES_SIZES_SUFFIX NAMES_SUFFIX_SIZES

typedef struct ing_files ing_files_t;

/* The files module of ctx (its settings; ctx->kv must be set): makes the storage directory
 * (a failure is logged and the files API answers 503 until the directory can be made) and
 * picks the URL key. NULL when out of memory. */
ing_files_t *ing_files_new(ing_ctx_t *ctx);
/* Starts the expiry sweep thread: 0 or MCPQ_EIO. */
int ing_files_start(ing_files_t *f);
/* Stops the sweep and frees f; NULL does nothing. */
void ing_files_free(ing_files_t *f);

/* 1 when the storage directory exists (made now if it can be). */
int ing_files_dir_ok(ing_files_t *f);
/* <dir>/<name> into out: 0 or MCPQ_ETOOBIG. */
int ing_files_path(const ing_files_t *f, const char *name, char *out, size_t size);

/* --- pure functions (tests/unit/ingress/test_files.c) --- */

/* 1 when id is "f_" and 32 lowercase hex digits. */
int ing_files_id_ok(const char *id);
/* 1 for a filename of 1-255 bytes of valid UTF-8 without '/', '\\', control characters
 * (C0, DEL), and other than "." and "..". */
int ing_files_filename_ok(const char *name);
/* 1 for a media type `type/subtype` of RFC 9110 token characters, optionally followed by
 * parameters (`; name=value`) of printable ASCII, at most ING_FILE_CTYPE_MAX bytes. */
int ing_files_ctype_ok(const char *ct);
/* 1 when two content types are the same (case-insensitive; blanks around ';' ignored). */
int ing_files_ctype_eq(const char *a, const char *b);
/* hex(HMAC-SHA256(key, method "\n" file_id "\n" exp)) into out[65]. */
void ing_files_sign(const void *key, size_t keylen, const char *method, const char *file_id,
                    long long exp, char out[65]);
/* Checks a URL's exp and sig (strings as received, may be NULL) for method and file_id at
 * now_s: 0, MCPQ_EINVAL (missing or wrong signature) or MCPQ_ETIMEDOUT (expired). The
 * signature is compared in constant time and checked before the expiry. */
int ing_files_verify(const void *key, size_t keylen, const char *method, const char *file_id,
                     const char *exp, const char *sig, long long now_s);
/* The Content-Disposition value `attachment; filename="<ASCII fallback>";
 * filename*=UTF-8''<percent-encoded>` (RFC 6266, RFC 8187) for filename into out:
 * 0 or MCPQ_ETOOBIG. Quotes, backslashes and non-ASCII become '_' in the fallback. */
int ing_files_disposition(const char *filename, char *out, size_t size);

/* --- URLs and attachments --- */

/* Why ing_files_url answered MCPQ_EUNAVAIL, for the client. */
#define ING_FILES_NO_BASE                                                                          \
    "file URLs need MCPQ_PUBLIC_URL: this request's Host is neither a loopback host nor listed "   \
    "in MCPQ_ALLOWED_HOSTS"

/* The absolute signed URL of method (PUT or GET) for file_id valid until exp (Unix s):
 * MCPQ_PUBLIC_URL; else http:// and the request's Host header (host may be NULL: the listen
 * address) when that is a loopback host (localhost, 127.0.0.1, [::1], any port) or listed in
 * MCPQ_ALLOWED_HOSTS; then /v1/files/<id>/content?exp=..&sig=... A Host the caller chose
 * never decides where the URL points: 0, MCPQ_EUNAVAIL (no trusted base: ING_FILES_NO_BASE)
 * or MCPQ_ETOOBIG. */
int ing_files_url(const ing_files_t *f, const char *host, const char *method, const char *file_id,
                  long long exp, char *out, size_t size);
/* Verifies exp and sig of a request's URL (ing_files_verify with the process key). */
int ing_files_check(const ing_files_t *f, const char *method, const char *file_id, const char *exp,
                    const char *sig);

/*
 * Resolves the `attachments` argument of a tools/call (docs/protocol.md) for tenant: *out gets a
 * new array of {file_id, filename, content_type, size, sha256, url} (caller owns it), the
 * url a signed GET valid for valid_s seconds. A file must exist, be uploaded (ready) and
 * belong to tenant. The caller's `filename` replaces the stored one in the envelope (a
 * display name; the download keeps its own); a `content_type` given by the caller must
 * equal the stored one. atts NULL or JSON null: an empty array. Returns 0; MCPQ_EINVAL
 * with why naming the index (`attachments[1]: unknown file_id`, the same for another
 * tenant's file) for -32602; MCPQ_EUNAVAIL with why set when Redis is unreachable or no
 * URL can be built (ING_FILES_NO_BASE), for -32603.
 */
int ing_files_attach(ing_files_t *f, const char *host, const char *tenant, const cJSON *atts,
                     long long valid_s, cJSON **out, char *why, size_t why_size);

#endif
