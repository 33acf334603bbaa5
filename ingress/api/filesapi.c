/*
 * filesapi.c - the HTTP side of files (files.h, docs/api.md "Files and attachments"):
 *
 *   POST /v1/files/presign-upload {filename, content_type, size}
 *        -> 200 {file_id, upload_url, expires_at, ...}        (API key or HMAC app signing)
 *   PUT  /v1/files/{id}/content?exp=..&sig=..   the bytes     -> 201 {file_id, sha256, ...}
 *   GET  /v1/files/{id}/content?exp=..&sig=..                 -> the bytes (from the fd)
 *   GET  /v1/files/{id}                                       -> metadata (owning tenant)
 *
 * An upload is streamed: every check that the headers allow (signature, expiry, state,
 * Content-Type, Content-Length) is made before a byte of the body is read; the body goes to
 * a temporary file in the storage directory while its SHA-256 is computed (OpenSSL EVP),
 * and the finished file is linked to its final name, which fails if another upload of the
 * same id won (409). A body without Content-Length is counted as it comes.
 */
#include "api.h"
#include "rscript.h"
#include "err.h"
#include "files.h"
#include "filesapi.h"
#include "log.h"
#include "quota.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Body bytes past the announced size that are read (and dropped) before the connection of
 * an upload without Content-Length is closed. */
#define EXCESS_MAX (64 * 1024)

struct ing_upload {
    char id[ING_FILE_ID_LEN + 1];
    char tmp[4096];
    int fd;
    long long want, got;
    int failed; /* a write failed: 500 at the end */
    EVP_MD_CTX *md;
};

int ing_filesapi_is_content(const char *url)
{
    static const char base[] = "/v1/files/", tail[] = "/content";
    size_t ul = strlen(url), bl = sizeof(base) - 1, tl = sizeof(tail) - 1;
    return ul > bl + tl && strncmp(url, base, bl) == 0 && strcmp(url + ul - tl, tail) == 0;
}

/* The id of /v1/files/<id>/content (or /v1/files/<id> when tail is ""), into out; 0 when
 * the url has another shape or the id is malformed. */
static int url_id(const char *url, const char *tail, char out[ING_FILE_ID_LEN + 1])
{
    static const char base[] = "/v1/files/";
    size_t bl = sizeof(base) - 1, ul = strlen(url), tl = strlen(tail);
    if (ul < bl + tl || strncmp(url, base, bl) != 0 || strcmp(url + ul - tl, tail) != 0)
        return 0;
    size_t n = ul - bl - tl;
    if (n != ING_FILE_ID_LEN)
        return 0;
    memcpy(out, url + bl, n);
    out[n] = '\0';
    return ing_files_id_ok(out);
}

static const char *arg(ing_req_t *req, const char *name)
{
    return ing_req_arg(req, name);
}

/* HMGET of the file's fields into a reply the caller frees; NULL when Redis is away. */
static redisReply *file_get(ing_ctx_t *ctx, const char *id, int nf, const char **fields)
{
    char key[64], err[256];
    const char *argv[12] = {"HMGET", key};
    snprintf(key, sizeof(key), ING_FILE_KEY_PREFIX "%s", id);
    for (int i = 0; i < nf && i < 10; i++)
        argv[2 + i] = fields[i];
    redisReply *r = kv_pool_commandargv(ctx->kv, err, sizeof(err), 2 + nf, argv, NULL);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != (size_t)nf) {
        log_event(LOG_ERROR, "files: metadata lookup failed", "file_id", id, "error",
                  r ? "unexpected reply" : err, (char *)NULL);
        if (r)
            freeReplyObject(r);
        return NULL;
    }
    return r;
}

static const char *field(const redisReply *r, int i)
{
    return r->element[i]->type == REDIS_REPLY_STRING ? r->element[i]->str : NULL;
}

static void iso_time(long long s, char out[32])
{
    time_t t = (time_t)s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The presign body {filename, content_type, size}: 1 when well-formed, else answers 400. */
static int presign_body_ok(const cJSON *body, const mcpq_settings_t *set, ing_resp_t *resp)
{
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(body, "filename");
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(body, "content_type");
    const cJSON *sz = cJSON_GetObjectItemCaseSensitive(body, "size");
    char msg[360];
    if (!cJSON_IsObject(body)) {
        ing_api_error(resp, 400, "body must be a JSON object {filename, content_type, size}");
        return 0;
    }
    if (!cJSON_IsString(fn) || !ing_files_filename_ok(fn->valuestring)) {
        ing_api_error(resp, 400,
                      "filename must be 1-255 bytes of UTF-8 without '/', '\\' or control "
                      "characters");
        return 0;
    }
    if (!cJSON_IsString(ct) || !ing_files_ctype_ok(ct->valuestring)) {
        ing_api_error(resp, 400,
                      "content_type must be a media type type/subtype (at most 127 "
                      "bytes)");
        return 0;
    }
    if (!cJSON_IsNumber(sz) || sz->valuedouble != (double)(long long)sz->valuedouble ||
        sz->valuedouble < 1 || sz->valuedouble > (double)set->files_max_bytes) {
        snprintf(msg, sizeof(msg), "size must be an integer from 1 to %lld (bytes)",
                 set->files_max_bytes);
        ing_api_error(resp, 400, msg);
        return 0;
    }
    return 1;
}

/* 200 {file_id, upload_url, method, expires_at, headers}: where and how to PUT the bytes. */
static void presign_answer(ing_resp_t *resp, const char *id, const char *url, long long exp,
                           const char *content_type)
{
    char at[32];
    iso_time(exp, at);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file_id", id);
    cJSON_AddStringToObject(o, "upload_url", url);
    cJSON_AddStringToObject(o, "method", "PUT");
    cJSON_AddStringToObject(o, "expires_at", at);
    cJSON *h = cJSON_AddObjectToObject(o, "headers");
    cJSON_AddStringToObject(h, "Content-Type", content_type);
    ing_api_body(resp, 200, o);
}

static void presign(ing_req_t *req, const ing_tenant_t *t, ing_resp_t *resp)
{
    ing_ctx_t *ctx = req->ctx;
    const mcpq_settings_t *set = ctx->set;
    cJSON *body = ing_api_json(req, resp);
    if (!body)
        return;
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(body, "filename");
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(body, "content_type");
    const cJSON *sz = cJSON_GetObjectItemCaseSensitive(body, "size");
    char msg[360];
    if (!presign_body_ok(body, set, resp))
        goto out;
    if (!ing_files_dir_ok(ctx->files)) {
        ing_api_error(resp, 503, "file storage unavailable");
        goto out;
    }
    char hex[33], id[ING_FILE_ID_LEN + 1], key[64], size[24], created[24], ttl[24], err[256];
    char idx[192], sizes[200], max[24];
    if (util_random_hex(hex, 16) < 0) {
        ing_api_error(resp, 500, "no randomness");
        goto out;
    }
    snprintf(id, sizeof(id), "f_%s", hex);
    snprintf(key, sizeof(key), ING_FILE_KEY_PREFIX "%s", id);
    snprintf(size, sizeof(size), "%lld", (long long)sz->valuedouble);
    long long now_ms = util_now_ms();
    long long exp = now_ms / 1000 + set->files_url_ttl_s;
    char url[ING_FILES_URL_MAX];
    int urc =
        ing_files_url(ctx->files, ing_req_header(req, "Host"), "PUT", id, exp, url, sizeof(url));
    if (urc < 0) { /* before anything is stored */
        ing_api_error(resp, urc == MCPQ_EUNAVAIL ? 503 : 500,
                      urc == MCPQ_EUNAVAIL ? ING_FILES_NO_BASE : "MCPQ_PUBLIC_URL too long");
        goto out;
    }
    snprintf(created, sizeof(created), "%lld", now_ms);
    snprintf(ttl, sizeof(ttl), "%lld", set->files_ttl_s);
    long long quota = ing_quota_limit(t, ING_QUOTA_FILE_BYTES, set);
    snprintf(idx, sizeof(idx), ING_FILES_TENANT_PREFIX "%s", t->id);
    snprintf(sizes, sizeof(sizes), ING_FILES_TENANT_PREFIX "%s" ING_FILES_SIZES_SUFFIX, t->id);
    snprintf(max, sizeof(max), "%lld", quota);
    const char *argv[] = {key,     idx, sizes, t->id, fn->valuestring, ct->valuestring, size,
                          created, ttl, max,   id};
    redisReply *r = rscript_pool_run(ctx->kv, rscript_get("filesapi_presign"), 3, 11, argv, NULL,
                                     err, sizeof(err));
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_INTEGER || r->element[1]->type != REDIS_REPLY_INTEGER) {
        log_event(LOG_ERROR, "files: presign failed", "tenant", t->id, "error",
                  r ? "unexpected reply" : err, (char *)NULL);
        if (r)
            freeReplyObject(r);
        ing_api_error(resp, 503, "file store (Redis) unavailable; try again");
        goto out;
    }
    if (r->element[0]->integer < 0) {
        char q[160];
        ing_quota_message(ING_QUOTA_FILE_BYTES, quota, q, sizeof(q));
        snprintf(msg, sizeof(msg), "%s; %lld in use, this file needs %s", q, r->element[1]->integer,
                 size);
        freeReplyObject(r);
        ing_api_error(resp, 429, msg);
        goto out;
    }
    freeReplyObject(r);
    log_event(LOG_INFO, "files: upload presigned", "tenant", t->id, "file_id", id, "size", size,
              (char *)NULL);
    presign_answer(resp, id, url, exp, ct->valuestring);
out:
    cJSON_Delete(body);
}

static void metadata(ing_req_t *req, const ing_tenant_t *t, const char *id, ing_resp_t *resp)
{
    static const char *fields[] = {"tenant", "filename", "content_type", "size",
                                   "sha256", "state",    "created_ms",   "uploaded_ms"};
    redisReply *r = file_get(req->ctx, id, 8, fields);
    if (!r) {
        ing_api_error(resp, 503, "file store (Redis) unavailable; try again");
        return;
    }
    const char *tenant = field(r, 0);
    if (!tenant || strcmp(tenant, t->id) != 0) {
        freeReplyObject(r);
        ing_api_error(resp, 404, "no such file"); /* another tenant's too */
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file_id", id);
    cJSON_AddStringToObject(o, "filename", field(r, 1) ? field(r, 1) : "");
    cJSON_AddStringToObject(o, "content_type", field(r, 2) ? field(r, 2) : "");
    long long n = 0;
    util_parse_ll(field(r, 3) ? field(r, 3) : "0", 0, 1LL << 50, &n);
    cJSON_AddNumberToObject(o, "size", (double)n);
    if (field(r, 4))
        cJSON_AddStringToObject(o, "sha256", field(r, 4));
    else
        cJSON_AddNullToObject(o, "sha256");
    cJSON_AddStringToObject(o, "state", field(r, 5) ? field(r, 5) : "pending");
    n = 0;
    util_parse_ll(field(r, 6) ? field(r, 6) : "0", 0, 1LL << 53, &n);
    cJSON_AddNumberToObject(o, "created_ms", (double)n);
    freeReplyObject(r);
    ing_api_body(resp, 200, o);
}

void ing_filesapi_route(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp)
{
    char id[ING_FILE_ID_LEN + 1];
    int is_presign = strcmp(url, "/v1/files/presign-upload") == 0;
    int is_meta = !is_presign && url_id(url, "", id);
    if (!is_presign && !is_meta) {
        ing_api_error(resp, 404, "not found");
        return;
    }
    int is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (is_presign ? strcmp(method, "POST") != 0 : !is_get) {
        ing_api_error(resp, 405, "method not allowed");
        resp->allow = is_presign ? "POST" : "GET, HEAD";
        return;
    }
    ing_registry_t *reg = NULL;
    const ing_tenant_t *t = ing_api_front(req, &reg, resp);
    if (t) {
        if (is_presign)
            presign(req, t, resp);
        else
            metadata(req, t, id, resp);
    }
    ing_registry_unref(reg);
}

/* 403 for a URL whose signature is wrong, missing or expired. */
static int signed_ok(ing_req_t *req, const char *method, const char *id, ing_resp_t *resp)
{
    int rc = ing_files_check(req->ctx->files, method, id, arg(req, "exp"), arg(req, "sig"));
    if (rc == MCPQ_ETIMEDOUT) {
        ing_api_error(resp, 403, "this URL has expired");
        return 0;
    }
    if (rc < 0) {
        ing_api_error(resp, 403, "bad or missing URL signature");
        return 0;
    }
    return 1;
}

void ing_filesapi_download(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp)
{
    static const char *fields[] = {"state", "content_type", "size", "sha256", "filename"};
    char id[ING_FILE_ID_LEN + 1], path[4096], disp[2048];
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        ing_api_error(resp, 405, "method not allowed");
        resp->allow = "GET, HEAD, PUT";
        return;
    }
    if (!url_id(url, "/content", id)) {
        ing_api_error(resp, 403, "bad or missing URL signature");
        return;
    }
    if (!signed_ok(req, "GET", id, resp))
        return;
    redisReply *r = file_get(req->ctx, id, 5, fields);
    if (!r) {
        ing_api_error(resp, 503, "file store (Redis) unavailable; try again");
        return;
    }
    long long size = -1;
    const char *state = field(r, 0), *ct = field(r, 1), *sha = field(r, 3), *fn = field(r, 4);
    if (!state || strcmp(state, "ready") != 0 || !ct || !fn || !field(r, 2) ||
        util_parse_ll(field(r, 2), 0, 1LL << 50, &size) < 0) {
        freeReplyObject(r);
        ing_api_error(resp, 404, "no such file (expired or not uploaded)");
        return;
    }
    int fd = -1;
    struct stat st;
    if (ing_files_path(req->ctx->files, id, path, sizeof(path)) < 0 ||
        (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) < 0 || st.st_size != size) {
        if (fd >= 0)
            close(fd);
        freeReplyObject(r);
        log_event(LOG_ERROR, "files: stored file missing or damaged", "file_id", id, "error",
                  strerror(errno), (char *)NULL);
        ing_api_error(resp, 404, "no such file (expired or not uploaded)");
        return;
    }
    resp->status = 200;
    resp->has_fd = 1; /* fd is now the answer's */
    resp->fd = fd;
    resp->fd_size = (uint64_t)size;
    int bad = ing_resp_header(resp, "Content-Type", ct) < 0;
    if (ing_files_disposition(fn, disp, sizeof(disp)) == 0)
        bad |= ing_resp_header(resp, "Content-Disposition", disp) < 0;
    else
        bad |= ing_resp_header(resp, "Content-Disposition", "attachment") < 0;
    bad |= ing_resp_header(resp, "X-Content-Type-Options", "nosniff") < 0;
    bad |= ing_resp_header(resp, "Cache-Control", "private, no-store") < 0;
    if (sha) {
        char etag[80];
        snprintf(etag, sizeof(etag), "\"%s\"", sha);
        bad |= ing_resp_header(resp, "ETag", etag) < 0;
        bad |= ing_resp_header(resp, "X-Checksum-Sha256", sha) < 0;
    }
    freeReplyObject(r);
    if (bad) {
        ing_resp_release(resp);
        ing_api_error(resp, 500, "out of memory");
    }
}

/* The presigned file id, still pending, and the request's Content-Type the presigned one: 1
 * with the presigned size in *want, else 0 (answered). */
static int upload_expected(ing_req_t *req, const char *id, long long *want, ing_resp_t *resp)
{
    static const char *fields[] = {"state", "content_type", "size"};
    char msg[200];
    redisReply *r = file_get(req->ctx, id, 3, fields);
    if (!r) {
        ing_api_error(resp, 503, "file store (Redis) unavailable; try again");
        return 0;
    }
    int ok = 0;
    const char *state = field(r, 0), *want_ct = field(r, 1);
    const char *ct = ing_req_header(req, "Content-Type");
    if (!state || !want_ct || !field(r, 2) || util_parse_ll(field(r, 2), 1, 1LL << 50, want) < 0) {
        ing_api_error(resp, 404, "no such file (its presign has expired)");
    } else if (strcmp(state, "pending") != 0) {
        ing_api_error(resp, 409, "this file has been uploaded already");
    } else if (!ct || !ing_files_ctype_eq(ct, want_ct)) {
        snprintf(msg, sizeof(msg), "Content-Type must be %.120s, as presigned", want_ct);
        ing_api_error(resp, 415, msg);
    } else {
        ok = 1;
    }
    freeReplyObject(r);
    return ok;
}

int ing_filesapi_upload_begin(ing_req_t *req, const char *url, ing_resp_t *resp)
{
    char id[ING_FILE_ID_LEN + 1], msg[200];
    ing_ctx_t *ctx = req->ctx;
    if (!url_id(url, "/content", id)) {
        ing_api_error(resp, 403, "bad or missing URL signature");
        return 0;
    }
    if (!signed_ok(req, "PUT", id, resp))
        return 0;
    long long want = -1;
    if (!upload_expected(req, id, &want, resp))
        return 0;
    const char *cl = ing_req_header(req, "Content-Length");
    long long n;
    if (cl && util_parse_ll(cl, 0, 1LL << 62, &n) == 0 && n != want) {
        snprintf(msg, sizeof(msg), "body must be exactly %lld bytes, as presigned (got %lld)", want,
                 n);
        ing_api_error(resp, n > want ? 413 : 400, msg);
        return 0;
    }
    if (!ing_files_dir_ok(ctx->files)) {
        ing_api_error(resp, 503, "file storage unavailable");
        return 0;
    }
    struct ing_upload *up = calloc(1, sizeof(*up));
    char hex[17];
    if (!up || util_random_hex(hex, 8) < 0) {
        free(up);
        ing_api_error(resp, 500, "out of memory");
        return 0;
    }
    up->fd = -1;
    snprintf(up->id, sizeof(up->id), "%s", id);
    up->want = want;
    char name[64];
    snprintf(name, sizeof(name), ".tmp-%s-%s", id, hex);
    if (ing_files_path(ctx->files, name, up->tmp, sizeof(up->tmp)) < 0 ||
        (up->fd = open(up->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640)) < 0 ||
        !(up->md = EVP_MD_CTX_new()) || EVP_DigestInit_ex(up->md, EVP_sha256(), NULL) != 1) {
        log_event(LOG_ERROR, "files: cannot start an upload", "file_id", id, "error",
                  strerror(errno), (char *)NULL);
        ing_filesapi_upload_free(up);
        ing_api_error(resp, 503, "file storage unavailable");
        return 0;
    }
    req->upload = up;
    return 1;
}

int ing_filesapi_upload_data(ing_req_t *req, const char *data, size_t n)
{
    struct ing_upload *up = req->upload;
    long long room = up->want - up->got;
    size_t take = room <= 0 ? 0 : (size_t)room < n ? (size_t)room : n;
    up->got += (long long)n;
    if (take && !up->failed) {
        EVP_DigestUpdate(up->md, data, take);
        for (size_t off = 0; off < take;) {
            ssize_t w = write(up->fd, data + off, take - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                log_event(LOG_ERROR, "files: write failed", "file_id", up->id, "error",
                          strerror(errno), (char *)NULL);
                up->failed = 1;
                break;
            }
            off += (size_t)w;
        }
    }
    return up->got - up->want > EXCESS_MAX ? -1 : 0;
}

void ing_filesapi_upload_end(ing_req_t *req, ing_resp_t *resp)
{
    struct ing_upload *up = req->upload;
    ing_ctx_t *ctx = req->ctx;
    char msg[200], path[4096], sha[65], key[64], now[24], err[256];
    if (up->got != up->want) {
        snprintf(msg, sizeof(msg), "body must be exactly %lld bytes, as presigned (got %lld)",
                 up->want, up->got);
        ing_api_error(resp, up->got > up->want ? 413 : 400, msg);
        return;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    if (up->failed || fsync(up->fd) < 0 || EVP_DigestFinal_ex(up->md, md, &mdlen) != 1 ||
        mdlen != 32) {
        ing_api_error(resp, 503, "file storage failed; try again");
        return;
    }
    for (unsigned i = 0; i < 32; i++)
        snprintf(sha + 2 * i, 3, "%02x", md[i]);
    if (ing_files_path(ctx->files, up->id, path, sizeof(path)) < 0) {
        ing_api_error(resp, 500, "storage path too long");
        return;
    }
    /* link, not rename: a second upload of the same id that finishes later fails here. */
    if (link(up->tmp, path) < 0) {
        if (errno == EEXIST) {
            ing_api_error(resp, 409, "this file has been uploaded already");
        } else {
            log_event(LOG_ERROR, "files: cannot store an upload", "file_id", up->id, "error",
                      strerror(errno), (char *)NULL);
            ing_api_error(resp, 503, "file storage failed; try again");
        }
        return;
    }
    snprintf(key, sizeof(key), ING_FILE_KEY_PREFIX "%s", up->id);
    snprintf(now, sizeof(now), "%lld", (long long)util_now_ms());
    const char *argv[] = {key, sha, now};
    redisReply *r = rscript_pool_run(ctx->kv, rscript_get("filesapi_ready"), 1, 3, argv, NULL, err,
                                     sizeof(err));
    long long st = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -2;
    if (r)
        freeReplyObject(r);
    if (st != 1) {
        if (st != 0) /* 0: someone else's upload is the stored file */
            unlink(path);
        if (st == -2) {
            log_event(LOG_ERROR, "files: cannot mark an upload ready", "file_id", up->id, "error",
                      r ? "unexpected reply" : err, (char *)NULL);
            ing_api_error(resp, 503, "file store (Redis) unavailable; try again");
        } else {
            ing_api_error(resp, st == 0 ? 409 : 404,
                          st == 0 ? "this file has been uploaded already"
                                  : "no such file (its presign has expired)");
        }
        return;
    }
    char size[24];
    snprintf(size, sizeof(size), "%lld", up->want);
    log_event(LOG_INFO, "files: file uploaded", "file_id", up->id, "size", size, (char *)NULL);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file_id", up->id);
    cJSON_AddNumberToObject(o, "size", (double)up->want);
    cJSON_AddStringToObject(o, "sha256", sha);
    cJSON_AddStringToObject(o, "state", "ready");
    ing_api_body(resp, 201, o);
}

void ing_filesapi_upload_free(struct ing_upload *up)
{
    if (!up)
        return;
    if (up->fd >= 0)
        close(up->fd);
    if (up->tmp[0])
        unlink(up->tmp); /* stored: the final name is a second link to the same bytes */
    EVP_MD_CTX_free(up->md);
    free(up);
}
