/*
 * Integration test of files and attachments (docs/api.md, "Files and attachments") against a real
 * redis-server, devbroker, two ingress replicas and a worker:
 *   - presign (API key) -> PUT the bytes to the absolute upload URL, which needs no other
 *     credential -> 201 with the SHA-256 of the bytes;
 *   - a tools/call with `attachments` reaches an exec tool whose envelope holds the resolved
 *     {file_id, filename, content_type, size, sha256, url}; the tool downloads the url and
 *     the bytes it gets hash to the recorded sha256 (the attachment is really usable);
 *   - the download serves Content-Type, Content-Length, Content-Disposition with filename*,
 *     nosniff; a URL signed at replica 0 works at replica 1 (shared MCPQ_FILES_SECRET);
 *   - the upload refuses: wrong Content-Type 415, longer body 413 (announced) and 413
 *     (chunked, counted), shorter body 400, bad and expired signature 403, a GET signature
 *     used for PUT 403, a second upload 409;
 *   - presign refuses bad filenames, content types and sizes (400) and unauthenticated
 *     callers (401);
 *   - attachments: another tenant's file_id and an unknown one get the same -32602
 *     "attachments[i]: unknown file_id", a pending (not uploaded) one -32602 too;
 *   - without MCPQ_PUBLIC_URL, a presign or a tools/call with attachments sent with
 *     `Host: evil.example` gets no URL (503, -32603) rather than one pointing there; a Host
 *     MCPQ_ALLOWED_HOSTS lists (replica 1) or a loopback one is used;
 *   - expiry: a file whose metadata expired (MCPQ_FILES_TTL_S=2 at replica 1) is deleted
 *     from the storage directory by the sweep, and its URL answers 404.
 */
#include "check.h"
#include "fixture.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECRET "files-it-secret-0123456789"
/* ingress/core/files.h ING_FILES_NO_BASE */
#define ING_NO_BASE_MSG                                                                            \
    "file URLs need MCPQ_PUBLIC_URL: this request's Host is neither a loopback host nor listed "   \
    "in MCPQ_ALLOWED_HOSTS"

static fx_stack_t fx;
static int ports[2];
static char files_dir[300];

typedef struct http_reply {
    long status;
    char body[8192];
    size_t len;
    char headers[4096];
    size_t hlen;
} http_reply_t;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    http_reply_t *r = arg;
    size_t len = size * n, room = sizeof(r->body) - 1 - r->len;
    memcpy(r->body + r->len, p, len < room ? len : room);
    r->len += len < room ? len : room;
    r->body[r->len] = '\0';
    return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    http_reply_t *r = arg;
    size_t len = size * n, room = sizeof(r->headers) - 1 - r->hlen;
    memcpy(r->headers + r->hlen, p, len < room ? len : room);
    r->hlen += len < room ? len : room;
    r->headers[r->hlen] = '\0';
    return len;
}

typedef struct put_src {
    const char *data;
    size_t len, off;
} put_src_t;

static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
    put_src_t *s = arg;
    size_t room = size * n, left = s->len - s->off;
    size_t k = left < room ? left : room;
    memcpy(buf, s->data + s->off, k);
    s->off += k;
    return k;
}

/* PUT (or GET when data is NULL) url; chunked sends the body without Content-Length. */
static void http(const char *url, const char *ctype, const char *data, size_t len, int chunked,
                 http_reply_t *r)
{
    memset(r, 0, sizeof(*r));
    CURL *c = curl_easy_init();
    CHECK(c != NULL);
    struct curl_slist *h = NULL;
    char ct[200];
    put_src_t src = {data, len, 0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    if (data) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, &src);
        if (!chunked)
            curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
        else
            h = curl_slist_append(h, "Transfer-Encoding: chunked");
        if (ctype) {
            snprintf(ct, sizeof(ct), "Content-Type: %s", ctype);
            h = curl_slist_append(h, ct);
        }
        h = curl_slist_append(h, "Expect:");
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    }
    curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

static cJSON *post(int i, const char *key, const char *path, const char *body, long *status)
{
    char url[256], auth[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", ports[i], path);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key);
    const char *hdrs[] = {auth, NULL};
    fx_reply_t r;
    CHECK_INT_EQ(fx_http_post(url, key ? hdrs : NULL, body, &r), 0);
    *status = r.status;
    cJSON *j = cJSON_Parse(r.body);
    if (!j)
        fprintf(stderr, "not JSON (%ld): %s\n", r.status, r.body);
    CHECK(j != NULL);
    return j;
}

static const char *str(const cJSON *o, const char *name)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
}

/* Presigns at replica i for key; returns the answer (caller frees). */
static cJSON *presign(int i, const char *key, const char *filename, const char *ctype,
                      long long size, long *status)
{
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "filename", filename);
    cJSON_AddStringToObject(b, "content_type", ctype);
    cJSON_AddNumberToObject(b, "size", (double)size);
    char *body = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    cJSON *j = post(i, key, "/v1/files/presign-upload", body, status);
    free(body);
    return j;
}

/* A presign of a 3-byte a.txt at replica i sent with headers (NULL-terminated). */
static void presign_with(int i, const char *const headers[], fx_reply_t *r)
{
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/files/presign-upload", ports[i]);
    CHECK_INT_EQ(fx_http_post(url, headers,
                              "{\"filename\":\"a.txt\",\"content_type\":\"text/plain\","
                              "\"size\":3}",
                              r),
                 0);
}

/* Presign + PUT of data; the file id into id (35 bytes). */
static void upload(int i, const char *key, const char *filename, const char *ctype,
                   const char *data, char *id)
{
    long st;
    cJSON *j = presign(i, key, filename, ctype, (long long)strlen(data), &st);
    CHECK_INT_EQ(st, 200);
    snprintf(id, 35, "%s", str(j, "file_id"));
    http_reply_t r;
    http(str(j, "upload_url"), ctype, data, strlen(data), 0, &r);
    CHECK_INT_EQ(r.status, 201);
    cJSON_Delete(j);
}

/* tools/call of fetch at replica 0 with arguments args (JSON text). */
static cJSON *call(const char *key, const char *args)
{
    char body[2048];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"fetch\",\"arguments\":%s}}",
             args);
    long st;
    cJSON *j = post(0, key, "/mcp", body, &st);
    CHECK_INT_EQ(st, 200);
    return j;
}

static void check_rpc_error(cJSON *j, int code, const char *msg)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    CHECK(e != NULL);
    CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(e, "code")->valueint, code);
    CHECK_STR_EQ(str(e, "message"), msg);
}

static void write_config(void)
{
    char path[300], tool[300];
    snprintf(tool, sizeof(tool), "%s/fetch.py", fx.dir);
    /* The exec tool: downloads every attachment's url and reports what it got. */
    fx_write_file(tool,
                  "import hashlib, json, sys, urllib.request\n"
                  "env = json.load(sys.stdin)\n"
                  "out = []\n"
                  "for a in env['attachments']:\n"
                  "    with urllib.request.urlopen(a['url'], timeout=5) as r:\n"
                  "        data = r.read()\n"
                  "        ct = r.headers['Content-Type']\n"
                  "    out.append({'file_id': a['file_id'], 'filename': a['filename'],\n"
                  "                'content_type': a['content_type'], 'size': a['size'],\n"
                  "                'sha256': a['sha256'], 'got_sha256': "
                  "hashlib.sha256(data).hexdigest(),\n"
                  "                'got_size': len(data), 'got_type': ct,\n"
                  "                'text': data[:100].decode('utf-8', 'replace')})\n"
                  "print(json.dumps({'content': [{'type': 'text', 'text': 'ok'}],\n"
                  "                  'structuredContent': {'files': out, 'args': "
                  "env['arguments']}}))\n",
                  0644);
    snprintf(path, sizeof(path), "%s/files.json", fx.dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fprintf(
        f,
        "{\"tenants\": [{\"id\": \"t1\", \"api_keys\": [{\"id\": \"k1\", \"key\": \"key-one\"}]},"
        " {\"id\": \"t2\", \"api_keys\": [{\"id\": \"k2\", \"key\": \"key-two\"}]}],"
        " \"servers\": [{\"tenant\": \"t1\", \"name\": \"default\"},"
        " {\"tenant\": \"t2\", \"name\": \"default\"}],"
        " \"tools\": [{\"tenant\": \"t1\", \"server\": \"default\", \"name\": \"fetch\","
        " \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"inputSchema\": "
        "{\"type\": \"object\"}, \"timeout_ms\": 20000, \"executor\": {\"type\": \"exec\","
        " \"argv\": [\"python3\", \"%s\"]}}]}]}",
        tool);
    fclose(f);
}

static int exists(const char *id)
{
    char path[400];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", files_dir, id);
    return stat(path, &st) == 0;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    write_config();
    snprintf(files_dir, sizeof(files_dir), "%s/files", fx.dir);
    char e_dir[400], cfg[300];
    snprintf(e_dir, sizeof(e_dir), "MCPQ_FILES_DIR=%s", files_dir);
    snprintf(cfg, sizeof(cfg), "%s/files.json", fx.dir);
    const char *env0[] = {e_dir, "MCPQ_FILES_SECRET=" SECRET, "MCPQ_FILES_SWEEP_S=1", NULL};
    /* Replica 1: files expire 2 s after their presign. */
    const char *env1[] = {e_dir,
                          "MCPQ_FILES_SECRET=" SECRET,
                          "MCPQ_FILES_SWEEP_S=1",
                          "MCPQ_FILES_TTL_S=2",
                          "MCPQ_ALLOWED_HOSTS=127.0.0.1:*,files.example:*",
                          NULL};
    ports[0] = fx_free_port();
    do
        ports[1] = fx_free_port();
    while (ports[1] == ports[0]);
    CHECK(fx_spawn_ingress(&fx, "ingress-0", ports[0], cfg, env0, NULL, 0) > 0);
    CHECK(fx_spawn_ingress(&fx, "ingress-1", ports[1], cfg, env1, NULL, 0) > 0);
    CHECK(fx_spawn_worker(&fx, "worker-0", NULL) > 0);

    /* presign, PUT, download */
    const char *text = "hello, attachments\n";
    char sha[65];
    util_sha256_hex(text, strlen(text), sha);
    long st;
    cJSON *p = presign(0, "key-one", "r\xc3\xa9sum\xc3\xa9 \"q3\".txt", "text/plain", 19, &st);
    CHECK_INT_EQ(st, 200);
    const char *id = str(p, "file_id"), *up = str(p, "upload_url");
    CHECK(id && strlen(id) == 34 && strncmp(id, "f_", 2) == 0);
    char prefix[128];
    snprintf(prefix, sizeof(prefix), "http://127.0.0.1:%d/v1/files/%s/content?exp=", ports[0], id);
    CHECK(up && strncmp(up, prefix, strlen(prefix)) == 0);
    CHECK(str(p, "expires_at") != NULL);
    TEST_PASS("presign answers file_id, an absolute upload_url and expires_at");

    http_reply_t r;
    http(up, "application/json", text, strlen(text), 0, &r);
    CHECK_INT_EQ(r.status, 415);
    CHECK_CONTAINS(r.body, "text/plain");
    TEST_PASS("an upload with another Content-Type is refused with 415");
    http(up, "text/plain", "hello, attachments\nand more", 27, 0, &r);
    CHECK_INT_EQ(r.status, 413);
    http(up, "text/plain", "hello, attachments\nand more", 27, 1, &r);
    CHECK_INT_EQ(r.status, 413);
    TEST_PASS("a longer body is refused with 413 (announced, and counted when chunked)");
    http(up, "text/plain", "hello", 5, 0, &r);
    CHECK_INT_EQ(r.status, 400);
    http(up, "text/plain", "hello", 5, 1, &r);
    CHECK_INT_EQ(r.status, 400);
    TEST_PASS("a shorter body is refused with 400");

    char bad[1200];
    snprintf(bad, sizeof(bad), "%s", up);
    char *sig = strstr(bad, "sig=") + 4;
    sig[0] = sig[0] == 'a' ? 'b' : 'a';
    http(bad, "text/plain", text, strlen(text), 0, &r);
    CHECK_INT_EQ(r.status, 403);
    snprintf(bad, sizeof(bad), "http://127.0.0.1:%d/v1/files/%s/content", ports[0], id);
    http(bad, "text/plain", text, strlen(text), 0, &r);
    CHECK_INT_EQ(r.status, 403);
    TEST_PASS("a wrong or missing signature is refused with 403");

    http(up, "text/plain; charset=utf-8", text, strlen(text), 0, &r);
    CHECK_INT_EQ(r.status, 415);
    http(up, "Text/Plain", text, strlen(text), 0, &r);
    CHECK_INT_EQ(r.status, 201);
    cJSON *u = cJSON_Parse(r.body);
    CHECK_STR_EQ(str(u, "sha256"), sha);
    cJSON_Delete(u);
    CHECK(exists(id));
    TEST_PASS("the upload stores the bytes and answers 201 with their SHA-256");
    http(up, "text/plain", text, strlen(text), 0, &r);
    CHECK_INT_EQ(r.status, 409);
    TEST_PASS("a second upload of the same file is refused with 409");

    /* downloads signed with the shared secret, at either replica */
    char url[1200], msg[200], hex[65];
    long long exp = util_now_ms() / 1000 + 60;
    snprintf(msg, sizeof(msg), "GET\n%s\n%lld", id, exp);
    util_hmac_sha256_hex(SECRET, strlen(SECRET), msg, strlen(msg), hex);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/files/%s/content?exp=%lld&sig=%s", ports[1],
             id, exp, hex);
    http(url, NULL, NULL, 0, 0, &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_STR_EQ(r.body, text);
    CHECK(strcasestr(r.headers, "Content-Type: text/plain\r\n") != NULL);
    CHECK(strcasestr(r.headers, "Content-Length: 19\r\n") != NULL);
    CHECK(strcasestr(r.headers, "X-Content-Type-Options: nosniff") != NULL);
    CHECK_CONTAINS(r.headers, "attachment; filename=\"r__sum__ _q3_.txt\"; "
                              "filename*=UTF-8''r%C3%A9sum%C3%A9%20%22q3%22.txt");
    TEST_PASS("a signed download serves the bytes with type, length, disposition and nosniff");
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/files/%s/content?exp=%lld&sig=%s", ports[0],
             id, exp, hex);
    http(url, "text/plain", text, strlen(text), 0, &r);
    CHECK_INT_EQ(r.status, 403);
    exp = util_now_ms() / 1000 - 5;
    snprintf(msg, sizeof(msg), "GET\n%s\n%lld", id, exp);
    util_hmac_sha256_hex(SECRET, strlen(SECRET), msg, strlen(msg), hex);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/files/%s/content?exp=%lld&sig=%s", ports[0],
             id, exp, hex);
    http(url, NULL, NULL, 0, 0, &r);
    CHECK_INT_EQ(r.status, 403);
    CHECK_CONTAINS(r.body, "expired");
    TEST_PASS("a GET signature does not open a PUT, and an expired URL is refused with 403");

    /* metadata */
    char path[128];
    snprintf(path, sizeof(path), "http://127.0.0.1:%d/v1/files/%s", ports[0], id);
    fx_reply_t fr;
    const char *h1[] = {"Authorization: Bearer key-one", NULL};

    /* attachments through an exec tool that downloads them */
    char args[512];
    snprintf(args, sizeof(args), "{\"q\": 1, \"attachments\": [{\"file_id\": \"%s\"}]}", id);
    cJSON *j = call("key-one", args);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(j, "result");
    CHECK(res != NULL);
    CHECK(!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "isError")));
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(res, "structuredContent");
    const cJSON *f0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(sc, "files"), 0);
    CHECK(f0 != NULL);
    CHECK_STR_EQ(str(f0, "file_id"), id);
    CHECK_STR_EQ(str(f0, "filename"), "r\xc3\xa9sum\xc3\xa9 \"q3\".txt");
    CHECK_STR_EQ(str(f0, "content_type"), "text/plain");
    CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(f0, "size")->valueint, 19);
    CHECK_STR_EQ(str(f0, "sha256"), sha);
    CHECK_STR_EQ(str(f0, "got_sha256"), sha);
    CHECK_STR_EQ(str(f0, "got_type"), "text/plain");
    CHECK_STR_EQ(str(f0, "text"), text);
    const cJSON *targs = cJSON_GetObjectItemCaseSensitive(sc, "args");
    CHECK(cJSON_GetObjectItemCaseSensitive(targs, "attachments") == NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(targs, "q") != NULL);
    cJSON_Delete(j);
    TEST_PASS("a tool receives the resolved attachment and downloads the very bytes");

    snprintf(args, sizeof(args),
             "{\"attachments\": [{\"file_id\": \"%s\", \"filename\": \"shown.txt\", "
             "\"content_type\": \"text/plain\"}]}",
             id);
    j = call("key-one", args);
    f0 = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "result"),
                                             "structuredContent"),
            "files"),
        0);
    CHECK_STR_EQ(str(f0, "filename"), "shown.txt");
    cJSON_Delete(j);
    snprintf(args, sizeof(args),
             "{\"attachments\": [{\"file_id\": \"%s\", \"content_type\": \"image/png\"}]}", id);
    j = call("key-one", args);
    check_rpc_error(j, -32602,
                    "attachments[0]: content_type does not match the uploaded file's "
                    "(text/plain)");
    cJSON_Delete(j);
    TEST_PASS("the caller's filename is a display name; a different content_type is -32602");

    /* foreign, unknown, pending file ids */
    char other[35];
    upload(0, "key-two", "secret.txt", "text/plain", "tenant two's data", other);
    snprintf(args, sizeof(args),
             "{\"attachments\": [{\"file_id\": \"%s\"}, {\"file_id\": \"%s\"}]}", id, other);
    j = call("key-one", args);
    check_rpc_error(j, -32602, "attachments[1]: unknown file_id");
    cJSON_Delete(j);
    j = call("key-one", "{\"attachments\": [{\"file_id\": "
                        "\"f_0123456789abcdef0123456789abcdef\"}]}");
    check_rpc_error(j, -32602, "attachments[0]: unknown file_id");
    cJSON_Delete(j);
    j = call("key-one", "{\"attachments\": [{\"file_id\": \"../../etc/passwd\"}]}");
    check_rpc_error(j, -32602, "attachments[0]: unknown file_id");
    cJSON_Delete(j);
    j = call("key-one", "{\"attachments\": \"nope\"}");
    check_rpc_error(j, -32602,
                    "attachments must be an array of {file_id, filename?, content_type?}");
    cJSON_Delete(j);
    cJSON *pend = presign(0, "key-one", "later.bin", "application/octet-stream", 10, &st);
    snprintf(args, sizeof(args), "{\"attachments\": [{\"file_id\": \"%s\"}]}",
             str(pend, "file_id"));
    j = call("key-one", args);
    check_rpc_error(j, -32602, "attachments[0]: file_id has not been uploaded yet");
    cJSON_Delete(j);
    TEST_PASS("another tenant's and an unknown file_id get the same -32602; so does a pending "
              "one");

    /* metadata: owner only */
    CHECK_INT_EQ(fx_http_post(path, h1, "", &fr), 0);
    /* (fx_http_post posts; the metadata read is a GET) */
    http_reply_t g;
    {
        CURL *c = curl_easy_init();
        struct curl_slist *h = curl_slist_append(NULL, "Authorization: Bearer key-two");
        memset(&g, 0, sizeof(g));
        curl_easy_setopt(c, CURLOPT_URL, path);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &g);
        curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &g.status);
        CHECK_INT_EQ(g.status, 404);
        curl_slist_free_all(h);
        h = curl_slist_append(NULL, "Authorization: Bearer key-one");
        memset(&g, 0, sizeof(g));
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &g.status);
        CHECK_INT_EQ(g.status, 200);
        CHECK_CONTAINS(g.body, sha);
        CHECK_CONTAINS(g.body, "\"state\":\"ready\"");
        curl_slist_free_all(h);
        curl_easy_cleanup(c);
    }
    CHECK_INT_EQ(fr.status, 405);
    TEST_PASS("GET /v1/files/{id} shows the metadata to its tenant only");

    /* a file far larger than MCPQ_MAX_BODY_BYTES (1 MiB) streams through */
    size_t big_len = (size_t)5 << 20;
    char *big = malloc(big_len + 1);
    CHECK(big != NULL);
    for (size_t i = 0; i < big_len; i++)
        big[i] = (char)('a' + (i * 7 + i / 1000) % 26);
    big[big_len] = '\0';
    char big_sha[65], big_id[35];
    util_sha256_hex(big, big_len, big_sha);
    upload(0, "key-one", "big.bin", "application/octet-stream", big, big_id);
    snprintf(args, sizeof(args), "{\"attachments\": [{\"file_id\": \"%s\"}]}", big_id);
    j = call("key-one", args);
    f0 = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "result"),
                                             "structuredContent"),
            "files"),
        0);
    CHECK_STR_EQ(str(f0, "sha256"), big_sha);
    CHECK_STR_EQ(str(f0, "got_sha256"), big_sha);
    cJSON_Delete(j);
    free(big);
    TEST_PASS("a 5 MiB file uploads and downloads intact (streamed, not held in a body buffer)");

    /* presign validation */
    cJSON_Delete(presign(0, "key-one", "a/b.txt", "text/plain", 3, &st));
    CHECK_INT_EQ(st, 400);
    cJSON_Delete(presign(0, "key-one", "a\nb.txt", "text/plain", 3, &st));
    CHECK_INT_EQ(st, 400);
    cJSON_Delete(presign(0, "key-one", "a.txt", "text plain", 3, &st));
    CHECK_INT_EQ(st, 400);
    cJSON_Delete(presign(0, "key-one", "a.txt", "text/plain", 0, &st));
    CHECK_INT_EQ(st, 400);
    cJSON_Delete(presign(0, "key-one", "a.txt", "text/plain", 1LL << 40, &st));
    CHECK_INT_EQ(st, 400);
    cJSON_Delete(presign(0, NULL, "a.txt", "text/plain", 3, &st));
    CHECK_INT_EQ(st, 401);
    TEST_PASS("presign refuses bad names, types, sizes (400) and anonymous callers (401)");

    /* Without MCPQ_PUBLIC_URL a caller-chosen Host never decides where file URLs point. */
    char u0[128];
    fx_reply_t hr;
    const char *evil[] = {"Authorization: Bearer key-one", "Host: evil.example", NULL};
    presign_with(0, evil, &hr);
    CHECK_INT_EQ(hr.status, 503);
    CHECK(strstr(hr.body, "evil.example") == NULL);
    CHECK_CONTAINS(hr.body, "MCPQ_PUBLIC_URL");
    snprintf(u0, sizeof(u0), "http://127.0.0.1:%d/mcp", ports[0]);
    snprintf(args, sizeof(args),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"fetch\",\"arguments\":{\"attachments\":[{\"file_id\":\"%s\"}]}}}",
             id);
    CHECK_INT_EQ(fx_http_post(u0, evil, args, &hr), 0);
    CHECK_INT_EQ(hr.status, 200);
    CHECK(strstr(hr.body, "evil.example") == NULL);
    j = cJSON_Parse(hr.body);
    check_rpc_error(j, -32603, ING_NO_BASE_MSG);
    cJSON_Delete(j);
    /* A Host MCPQ_ALLOWED_HOSTS lists (replica 1) and a loopback one are the operator's. */
    const char *listed[] = {"Authorization: Bearer key-one", "Host: files.example:8443", NULL};
    presign_with(1, listed, &hr);
    CHECK_INT_EQ(hr.status, 200);
    CHECK_CONTAINS(hr.body, "\"upload_url\":\"http://files.example:8443/v1/files/f_");
    const char *local[] = {"Authorization: Bearer key-one", "Host: localhost:1234", NULL};
    presign_with(0, local, &hr);
    CHECK_INT_EQ(hr.status, 200);
    CHECK_CONTAINS(hr.body, "\"upload_url\":\"http://localhost:1234/v1/files/f_");
    TEST_PASS("without MCPQ_PUBLIC_URL, Host evil.example gets no URL (presign 503, tools/call "
              "-32603); a listed or loopback Host does");

    /* expiry: presigned at replica 1 (TTL 2 s), uploaded, downloadable, then swept */
    char tmp_id[35];
    upload(1, "key-one", "brief.txt", "text/plain", "short-lived", tmp_id);
    CHECK(exists(tmp_id));
    snprintf(args, sizeof(args), "{\"attachments\": [{\"file_id\": \"%s\"}]}", tmp_id);
    j = call("key-one", args);
    CHECK(cJSON_GetObjectItemCaseSensitive(j, "result") != NULL);
    cJSON_Delete(j);
    long long until = fx_now_ms() + 10000;
    while (exists(tmp_id) && fx_now_ms() < until)
        fx_sleep_ms(200);
    CHECK(!exists(tmp_id));
    CHECK(exists(id));
    j = call("key-one", args);
    check_rpc_error(j, -32602, "attachments[0]: unknown file_id");
    cJSON_Delete(j);
    TEST_PASS("a file whose metadata expired is deleted from the storage directory");

    cJSON_Delete(pend);
    cJSON_Delete(p);
    fx_stop(&fx);
    curl_global_cleanup();
    return 0;
}
