/*
 * req.c - the request abstraction (req.h): libmicrohttpd's connection, or a synthetic
 * request's arrays, behind one set of accessors.
 */
#include "req.h"

#include "log.h"
#include "trace.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const char *pair_find(const ing_req_pair_t *p, const char *name)
{
    for (; p && p->name; p++)
        if (strcasecmp(p->name, name) == 0)
            return p->value;
    return NULL;
}

const char *ing_req_header(const ing_req_t *req, const char *name)
{
    if (req->conn)
        return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
    return req->synth ? pair_find(req->synth->headers, name) : NULL;
}

const char *ing_req_arg(const ing_req_t *req, const char *name)
{
    if (req->conn)
        return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
    if (!req->synth)
        return NULL;
    for (const ing_req_pair_t *p = req->synth->args; p && p->name; p++)
        if (strcmp(p->name, name) == 0)
            return p->value;
    return NULL;
}

typedef struct each_ctx {
    int (*fn)(void *cls, const char *name, const char *value);
    void *cls;
    size_t n;
} each_ctx_t;

static enum MHD_Result each_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    each_ctx_t *e = cls;
    e->n++;
    return e->fn(e->cls, key, value ? value : "") ? MHD_NO : MHD_YES;
}

size_t ing_req_header_each(const ing_req_t *req,
                           int (*fn)(void *cls, const char *name, const char *value), void *cls)
{
    if (req->conn) {
        if (!fn)
            return (size_t)MHD_get_connection_values(req->conn, MHD_HEADER_KIND, NULL, NULL);
        each_ctx_t e = {fn, cls, 0};
        MHD_get_connection_values(req->conn, MHD_HEADER_KIND, each_header, &e);
        return e.n;
    }
    size_t n = 0;
    for (const ing_req_pair_t *p = req->synth ? req->synth->headers : NULL; p && p->name; p++) {
        n++;
        if (fn && fn(cls, p->name, p->value ? p->value : ""))
            break;
    }
    return n;
}

static const struct sockaddr *client_addr(const ing_req_t *req)
{
    static const struct sockaddr_in loopback = {
        .sin_family = AF_INET, .sin_addr.s_addr = 0x0100007f /* 127.0.0.1, network order */};
    if (req->conn) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        return ci ? ci->client_addr : NULL;
    }
    if (req->synth && req->synth->client)
        return req->synth->client;
    return (const struct sockaddr *)&loopback;
}

typedef struct xff_buf {
    char text[ING_PEER_XFF_MAX];
    size_t len;
    int overflow; /* longer than the buffer: not believed at all */
} xff_buf_t;

static int add_xff(void *cls, const char *name, const char *value)
{
    xff_buf_t *b = cls;
    if (strcasecmp(name, "X-Forwarded-For") == 0 && !b->overflow) {
        size_t room = sizeof(b->text) - b->len;
        int n = snprintf(b->text + b->len, room, "%s%s", b->len ? "," : "", value);
        if (n < 0 || (size_t)n >= room)
            b->overflow = 1;
        else
            b->len += (size_t)n;
    }
    return 0;
}

void ing_req_client(const ing_req_t *req, const ing_peer_nets_t *trusted, char *out, size_t size)
{
    const struct sockaddr *peer = client_addr(req);
    xff_buf_t b = {.len = 0, .overflow = 0};
    b.text[0] = '\0';
    if (trusted && ing_peer_nets_contains(trusted, peer))
        ing_req_header_each(req, add_xff, &b);
    ing_peer_client(peer, b.len && !b.overflow ? b.text : NULL, trusted, out, size);
}

void ing_req_id_assign(ing_req_t *req)
{
    const char *sent = ing_req_header(req, "X-Request-Id");
    if (log_request_id_valid(sent)) {
        snprintf(req->request_id, sizeof(req->request_id), "%s", sent);
        return;
    }
    if (util_random_hex(req->request_id, 16) < 0) /* no randomness: still unique enough */
        snprintf(req->request_id, sizeof(req->request_id), "%032llx",
                 (unsigned long long)util_now_us());
}

const char *ing_req_trace_id(const ing_req_t *req)
{
    static _Thread_local trace_ctx_t from_header;
    if (req->call.trace.trace_id[0])
        return req->call.trace.trace_id;
    if (trace_parse(ing_req_header(req, "traceparent"), &from_header) < 0)
        return "";
    return from_header.trace_id;
}

int ing_req_synthetic(ing_req_t *req, ing_ctx_t *ctx, const char *method, const char *uri,
                      const ing_req_synth_t *synth, const char *body, size_t body_len)
{
    memset(req, 0, sizeof(*req));
    req->ctx = ctx;
    req->synth = synth;
    req->method = method;
    req->uri = strdup(uri);
    util_buf_init(&req->body, SIZE_MAX);
    req->body_limit = -1;
    if (!req->uri || (body && util_buf_append(&req->body, body, body_len) < 0)) {
        ing_req_release(req);
        return -1;
    }
    return 0;
}

void ing_req_release(ing_req_t *req)
{
    free(req->uri);
    req->uri = NULL;
    util_buf_cleanup(&req->body);
}
