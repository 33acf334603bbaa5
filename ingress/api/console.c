/*
 * console.c - GET /console/ (console.h): the embedded ingress/console/ files with the
 * console's security headers, their ETags (api.h ing_api_static) and the version that
 * index.html and the scripts put in the URLs of the files they load.
 */
#include "console.h"

#include "api.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* The table CMakeLists.txt generates from the files of ingress/console/ (embed_files.cmake). */
struct ing_console_embedded {
    const char *name;
    const unsigned char *text;
    size_t len;
};
extern const struct ing_console_embedded ing_console_embedded_files[];

#define VERSION_HEX 12
#define MAX_FILES 32

static const struct ing_console_embedded *find_file(const char *name)
{
    for (const struct ing_console_embedded *f = ing_console_embedded_files; f->name; f++)
        if (strcmp(f->name, name) == 0)
            return f;
    return NULL;
}

/* The content type of a file name by its extension (the console holds text files only). */
static const char *content_type(const char *name)
{
    static const struct {
        const char *ext, *type;
    } types[] = {{".html", "text/html; charset=utf-8"},
                 {".js", "text/javascript; charset=utf-8"},
                 {".css", "text/css; charset=utf-8"},
                 {".svg", "image/svg+xml"}};
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

/* The console's version: the SHA-256 of the files' SHA-256s, cut to VERSION_HEX digits. */
static void console_version(char out[VERSION_HEX + 1])
{
    char shas[MAX_FILES * 64 + 1];
    size_t n = 0;
    for (const struct ing_console_embedded *f = ing_console_embedded_files;
         f->name && n + 64 < sizeof(shas); f++, n += 64)
        util_sha256_hex(f->text, f->len, shas + n); /* its NUL is overwritten by the next */
    char sha[65];
    util_sha256_hex(shas, n, sha);
    memcpy(out, sha, VERSION_HEX);
    out[VERSION_HEX] = '\0';
}

/* f's text with every ING_CONSOLE_VERSION_TOKEN replaced by the version (malloc'd, *len
 * bytes), or NULL when out of memory. */
static unsigned char *versioned(const struct ing_console_embedded *f, size_t *len)
{
    char v[VERSION_HEX + 1];
    console_version(v);
    const size_t tlen = sizeof(ING_CONSOLE_VERSION_TOKEN) - 1;
    unsigned char *out = malloc(f->len + 1); /* the version is shorter than the token */
    _Static_assert(VERSION_HEX <= sizeof(ING_CONSOLE_VERSION_TOKEN) - 1, "fits");
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < f->len;) {
        if (f->len - i >= tlen && memcmp(f->text + i, ING_CONSOLE_VERSION_TOKEN, tlen) == 0) {
            memcpy(out + o, v, VERSION_HEX);
            o += VERSION_HEX;
            i += tlen;
        } else {
            out[o++] = f->text[i++];
        }
    }
    *len = o;
    return out;
}

/* Answers 500 when memory ran out, dropping what resp held. */
static void out_of_memory(ing_resp_t *resp)
{
    ing_resp_release(resp);
    ing_api_error(resp, 500, "out of memory");
}

/* The headers of every console answer; -1 when out of memory. */
static int security_headers(ing_resp_t *resp)
{
    if (ing_resp_header(resp, "Content-Security-Policy", ING_CONSOLE_CSP) < 0 ||
        ing_resp_header(resp, "X-Content-Type-Options", "nosniff") < 0 ||
        ing_resp_header(resp, "Referrer-Policy", "no-referrer") < 0)
        return -1;
    return 0;
}

static void serve(ing_req_t *req, ing_resp_t *resp, const struct ing_console_embedded *f)
{
    int index = strcmp(f->name, "index.html") == 0;
    if (ing_resp_header(resp, "Cache-Control",
                        index ? "no-store" : "public, max-age=31536000, immutable") < 0) {
        out_of_memory(resp);
        return;
    }
    size_t len = 0;
    unsigned char *text = versioned(f, &len);
    if (!text) {
        out_of_memory(resp);
        return;
    }
    ing_api_static(req, resp, text, len, content_type(f->name));
    free(text);
}

void ing_console_route(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp)
{
    const char *token = req->ctx->set->admin_token;
    if (!token || !*token) {
        ing_api_error(resp, 404, "not found");
        return;
    }
    if (security_headers(resp) < 0) {
        out_of_memory(resp);
        return;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        ing_api_error(resp, 405, "method not allowed");
        resp->allow = "GET, HEAD";
        return;
    }
    if (strcmp(url, "/console") == 0) {
        if (ing_resp_header(resp, "Location", "/console/") < 0) {
            out_of_memory(resp);
            return;
        }
        resp->status = 308;
        return;
    }
    const char *name = url + strlen("/console/"); /* the route is /console and under it */
    const struct ing_console_embedded *f = find_file(*name ? name : "index.html");
    if (!f) {
        ing_api_error(resp, 404, "no such console file");
        return;
    }
    serve(req, resp, f);
}
