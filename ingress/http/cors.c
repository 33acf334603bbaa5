/*
 * cors.c - Cross-Origin Resource Sharing for browser clients (cors.h).
 */
#include "cors.h"

#include "auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The request headers the ingress reads (docs/api.md, docs/protocol.md, docs/signatures.md),
 * lower case; Mcp-Param-* is matched by prefix. */
static const char *const allowed_headers[] = {
    "authorization",        "content-type",  "accept",      "mcp-session-id",
    "mcp-protocol-version", "last-event-id", "x-api-key",   "x-app-id",
    "x-timestamp",          "x-nonce",       "x-signature", "x-signature-version",
    "x-signed-headers",     "mcp-method",    "mcp-name",    "if-match",
    "if-none-match",        "traceparent",   "tracestate",
};

#define FIXED_LIST                                                                                 \
    "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, "   \
    "X-Api-Key, X-App-Id, X-Timestamp, X-Nonce, X-Signature, X-Signature-Version, "                \
    "X-Signed-Headers, Mcp-Method, Mcp-Name, If-Match, If-None-Match, traceparent, tracestate"

const char *ing_cors_origin(const ing_req_t *req)
{
    const char *origin = ing_req_header(req, "Origin");
    const mcpq_settings_t *set = req->ctx->set;
    if (!origin || !*origin || !ing_auth_origin_ok(req, set->allowed_origins, set->allowed_hosts))
        return NULL;
    return origin;
}

/* 1 when the header name name[0..len) is one the ingress reads. */
static int header_allowed(const char *name, size_t len)
{
    static const char param[] = "mcp-param-";
    if (len > sizeof(param) - 1 && strncasecmp(name, param, sizeof(param) - 1) == 0)
        return 1;
    for (size_t i = 0; i < sizeof(allowed_headers) / sizeof(allowed_headers[0]); i++)
        if (strlen(allowed_headers[i]) == len && strncasecmp(allowed_headers[i], name, len) == 0)
            return 1;
    return 0;
}

/* 1 when every name of the comma list asked (Access-Control-Request-Headers) is allowed. */
static int headers_allowed(const char *asked)
{
    const char *p = asked;
    while (*p) {
        p += strspn(p, " \t,");
        size_t len = strcspn(p, ",");
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len && !header_allowed(p, len))
            return 0;
        p += strcspn(p, ",");
    }
    return 1;
}

int ing_cors_preflight(const ing_req_t *req, ing_resp_t *resp)
{
    if (strcmp(req->method, "OPTIONS") != 0 || !ing_req_header(req, "Origin") ||
        !ing_req_header(req, "Access-Control-Request-Method"))
        return 0;
    if (!ing_cors_origin(req)) {
        *resp = (ing_resp_t){.status = 403, .content_type = "application/json"};
        resp->body = strdup("{\"error\":\"Origin or Host not allowed\"}");
        return 1;
    }
    const char *asked = ing_req_header(req, "Access-Control-Request-Headers");
    int echo = asked && strlen(asked) < 2048 && headers_allowed(asked);
    *resp = (ing_resp_t){.status = 204};
    if (ing_resp_header(resp, "Access-Control-Allow-Methods", ING_CORS_METHODS) < 0 ||
        ing_resp_header(resp, "Access-Control-Allow-Headers", echo ? asked : FIXED_LIST) < 0 ||
        ing_resp_header(resp, "Access-Control-Max-Age", "600") < 0) {
        ing_resp_release(resp);
        *resp = (ing_resp_t){.status = 500, .content_type = "application/json"};
        resp->body = strdup("{\"error\":\"out of memory\"}");
    }
    return 1;
}
