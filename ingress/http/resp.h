/*
 * resp.h - the answer a handler builds for one HTTP exchange (req.h): status, body or file,
 * and headers. server.c sends it with libmicrohttpd; a unit test reads it.
 */
#ifndef MCPQ_ING_RESP_H
#define MCPQ_ING_RESP_H

#include <stddef.h>
#include <stdint.h>

#define ING_RESP_MAX_HEADERS 6

/* The answer a handler produces for a finished exchange; server.c sends it. */
typedef struct ing_resp {
    int status;
    char *body; /* malloc'd, may be NULL for an empty body */
    const char *content_type;
    char session_id[80];     /* non-empty: sent as Mcp-Session-Id */
    char www_auth[1024];     /* non-empty: sent as WWW-Authenticate (prm.h builds them) */
    const char *allow;       /* non-NULL: sent as Allow */
    long long retry_after_s; /* > 0: sent as Retry-After */
    char etag[24];           /* non-empty: sent as ETag (quoted) */
    int has_fd;              /* the body is fd_size bytes of the file fd (taken), not body */
    int fd;
    uint64_t fd_size;
    size_t nheaders; /* further headers (ing_resp_header), malloc'd */
    struct {
        char *name;
        char *value;
    } headers[ING_RESP_MAX_HEADERS];
} ing_resp_t;

/* Adds a response header (copied). -1 when ING_RESP_MAX_HEADERS are there already or out of
 * memory. */
int ing_resp_header(ing_resp_t *resp, const char *name, const char *value);

/* Frees what an answer owns (its body, its file, its headers). */
void ing_resp_release(ing_resp_t *resp);

#endif
