/*
 * openapi.h - GET /openapi.json: the OpenAPI 3.1 description of the REST and admin API
 * (docs/api.md), exactly docs/openapi.json of the source tree, embedded at build time
 * (CMakeLists.txt), so the document served is always the one of the build.
 *
 * Thread-safe: the document is read-only.
 */
#ifndef MCPQ_ING_OPENAPI_H
#define MCPQ_ING_OPENAPI_H

#include "req.h"

#include <stddef.h>

/* The embedded document (not NUL-terminated in general; *len bytes), or NULL when the build
 * has none. */
const unsigned char *ing_openapi_doc(size_t *len);

/*
 * GET or HEAD of /openapi.json: 200 with the document, an ETag (its SHA-256, cut to 20 hex
 * digits) and Cache-Control, or 304 when If-None-Match names that ETag. No credential: the
 * document holds nothing secret. Other methods: 405 with Allow.
 */
void ing_openapi_route(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp);

#endif
