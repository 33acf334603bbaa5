/*
 * openapi.c - GET /openapi.json (openapi.h): the embedded docs/openapi.json, with an ETag so
 * clients and caches can revalidate instead of fetching it again.
 */
#include "openapi.h"

#include "api.h"

#include <string.h>

/* The table CMakeLists.txt generates from docs/openapi.json (embed_files.cmake). */
struct ing_openapi_embedded {
    const char *name;
    const unsigned char *text;
    size_t len;
};
extern const struct ing_openapi_embedded ing_openapi_embedded_files[];

const unsigned char *ing_openapi_doc(size_t *len)
{
    const struct ing_openapi_embedded *f = &ing_openapi_embedded_files[0];
    *len = f->name ? f->len : 0;
    return f->name ? f->text : NULL;
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
    if (ing_resp_header(resp, "Cache-Control", "public, max-age=300") < 0) {
        ing_api_error(resp, 500, "out of memory");
        return;
    }
    ing_api_static(req, resp, doc, len, "application/json");
}
