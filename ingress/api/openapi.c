/*
 * openapi.c - GET /openapi.json (openapi.h): the embedded docs/openapi.json, with an ETag so
 * clients and caches can revalidate instead of fetching it again.
 */
#include "openapi.h"

#include "api.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The table CMakeLists.txt generates from docs/openapi.json (embed_files.cmake). */
struct ing_openapi_embedded {
    const char *name;
    const unsigned char *text;
    size_t len;
};
extern const struct ing_openapi_embedded ing_openapi_embedded_files[];

#define ETAG_HEX 20
_Static_assert(ETAG_HEX < sizeof(((ing_resp_t *)0)->etag), "the ETag fits ing_resp_t");

const unsigned char *ing_openapi_doc(size_t *len)
{
    const struct ing_openapi_embedded *f = &ing_openapi_embedded_files[0];
    *len = f->name ? f->len : 0;
    return f->name ? f->text : NULL;
}

/* 1 when the If-None-Match list (quoted or weak etags, or *) names etag. */
static int none_match(const char *inm, const char *etag)
{
    size_t n = strlen(etag);
    for (const char *p = inm; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '*')
            return 1;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        int q = *p == '"';
        p += q;
        size_t len = strcspn(p, q ? "\"" : ", ");
        if (len == n && strncmp(p, etag, n) == 0)
            return 1;
        p += len;
        p += *p == '"';
    }
    return 0;
}

void ing_openapi_route(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp)
{
    (void)url;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        ing_api_error(resp, 405, "method not allowed");
        resp->allow = "GET, HEAD";
        return;
    }
    size_t len = 0;
    const unsigned char *doc = ing_openapi_doc(&len);
    if (!doc) {
        ing_api_error(resp, 404, "not found");
        return;
    }
    char sha[65];
    util_sha256_hex(doc, len, sha);
    sha[ETAG_HEX] = '\0';
    memcpy(resp->etag, sha, ETAG_HEX + 1); /* fits: ETag is 20 of its 24 bytes */
    if (ing_resp_header(resp, "Cache-Control", "public, max-age=300") < 0) {
        ing_api_error(resp, 500, "out of memory");
        return;
    }
    if (none_match(ing_req_header(req, "If-None-Match"), sha)) {
        resp->status = 304;
        return;
    }
    char *body = malloc(len + 1);
    if (!body) {
        ing_resp_release(resp);
        ing_api_error(resp, 500, "out of memory");
        return;
    }
    memcpy(body, doc, len);
    body[len] = '\0';
    resp->status = 200;
    resp->content_type = "application/json";
    resp->body = body;
}
