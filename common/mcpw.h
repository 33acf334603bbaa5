/*
 * mcpw.h - the client side of MCP over Streamable HTTP, used by the mcp executor
 * (worker/executors/mcpexec.c, which also lists upstreams for federation: the `mcpq/catalog`
 * job): reading an upstream MCP server's answers and deciding which protocol era to speak.
 *
 * An upstream answers a Streamable HTTP POST with either one JSON-RPC message
 * (application/json) or an SSE stream (text/event-stream) of `event: message` frames whose
 * `data:` lines hold JSON-RPC messages: notifications (progress, log) and, last, the
 * response to the request. mcpw_response() finds that response by id.
 *
 * Era decision: a POST of `server/discover` answered with a JSON-RPC result (whose
 * supportedVersions, when present, lists 2026-07-28) means the upstream speaks 2026-07-28;
 * anything else (HTTP 4xx, -32601, no result) means the legacy handshake. Legacy
 * `initialize` asks for MCPW_LEGACY_VERSION and accepts what the upstream answers if it
 * is a version this gateway knows.
 *
 * Pure functions, thread-safe.
 */
#ifndef MCPQ_MCPWIRE_H
#define MCPQ_MCPWIRE_H

#include "names.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#define MCPW_MODERN_VERSION NAMES_PROTO_MODERN
#define MCPW_LEGACY_VERSION NAMES_PROTO_LATEST
#define MCPW_META_VERSION NAMES_META_PROTOCOL_VERSION
/* 2026-07-28 requires clientCapabilities in every request's _meta (schema.ts,
 * RequestMetaObject); an SDK v2 server answers -32602 without it. clientInfo is optional. */
#define MCPW_META_CLIENT_CAPS "io.modelcontextprotocol/clientCapabilities"
#define MCPW_META_CLIENT_INFO "io.modelcontextprotocol/clientInfo"

/* Called for each SSE event: its type ("message" when the frame named none) and its data
 * (data lines joined by "\n", NUL-terminated). Return non-zero to stop. */
typedef int (*mcpw_sse_fn)(const char *event, const char *data, size_t len, void *arg);

/* Splits an SSE body into events (lines end in \n, \r\n or \r; comments and unknown fields
 * are skipped; an event still open at the end counts). Returns the number of events
 * dispatched, or MCPQ_ENOMEM. */
int mcpw_sse_each(const char *body, size_t len, mcpw_sse_fn fn, void *arg);

/* An SSE stream read as it arrives (the mcp executor's live upstream streams,
 * docs/executors.md "Streaming"): the same rules as mcpw_sse_each, fed chunk by chunk, a line
 * or an event split anywhere. Memory is bounded: one event's data and one line hold at most
 * max bytes (MCPQ_ETOOBIG past that). The caller owns the struct (_init/_cleanup). */
typedef struct mcpw_sse {
    size_t max;
    char event[64];
    util_buf_t data; /* the open event's data lines, joined by "\n" */
    int has_data;
    util_buf_t line; /* the start of a line the next chunk completes */
    int after_cr;    /* the last chunk ended in \r: a \n starting the next one belongs to it */
    int stopped;     /* fn asked to stop: later feeds do nothing */
    size_t events;
} mcpw_sse_t;

void mcpw_sse_init(mcpw_sse_t *p, size_t max);
void mcpw_sse_cleanup(mcpw_sse_t *p);
/* Feeds len bytes, calling fn for each event they complete. 0 (go on), 1 (fn asked to stop;
 * so does every later feed), MCPQ_ETOOBIG or MCPQ_ENOMEM. */
int mcpw_sse_feed(mcpw_sse_t *p, const char *buf, size_t len, mcpw_sse_fn fn, void *arg);
/* The end of the stream: dispatches an event still open. 0, 1 (stopped) or an error. */
int mcpw_sse_finish(mcpw_sse_t *p, mcpw_sse_fn fn, void *arg);

/* Called for each JSON-RPC notification met on the way (borrowed). */
typedef void (*mcpw_note_fn)(const cJSON *note, void *arg);
/* Called for each JSON-RPC request of the server met on the way (borrowed): a message with a
 * string "method" and a non-null "id" (elicitation/create, sampling/createMessage, roots/list,
 * ping, ... sent before the response, basic/transports "Sending Messages to the Server"). */
typedef void (*mcpw_request_fn)(const cJSON *request, void *arg);

/* The reader of one request's SSE answer, fed as it arrives: each notification goes to note
 * (may be NULL) at once, each server request to request (NULL: ignored; set with
 * mcpw_reader_on_request), and the JSON-RPC response whose id is the number id is kept. */
typedef struct mcpw_reader {
    mcpw_sse_t sse;
    long id;
    mcpw_note_fn note;
    mcpw_request_fn request;
    void *arg;
    cJSON *found;
} mcpw_reader_t;

/* max bounds one event as in mcpw_sse_init. */
void mcpw_reader_init(mcpw_reader_t *rd, long id, size_t max, mcpw_note_fn note, void *arg);
/* Server requests read by rd from now on go to request (arg: the reader's). */
void mcpw_reader_on_request(mcpw_reader_t *rd, mcpw_request_fn request);
/* 1 when the response has come (stop reading), 0 (go on), or an error of mcpw_sse_feed. */
int mcpw_reader_feed(mcpw_reader_t *rd, const char *buf, size_t len);
/* At the end of the stream: the response (the caller owns it), or NULL when none came. */
cJSON *mcpw_reader_take(mcpw_reader_t *rd);
void mcpw_reader_cleanup(mcpw_reader_t *rd);

/* The JSON-RPC response whose id is the number id in an upstream body, as a new object the
 * caller owns, or NULL when there is none. content_type NULL or naming JSON: the body is one
 * message (or a batch array); text/event-stream: SSE message events. note may be NULL. */
cJSON *mcpw_response(const char *content_type, const char *body, size_t len, long id,
                     mcpw_note_fn note, void *arg);

/* 1 when a Content-Type (may be NULL) is text/event-stream. */
int mcpw_is_sse(const char *content_type);

/* A JSON-RPC request {"jsonrpc", "id", "method", "params"} as a new object; params is taken
 * over (NULL: none); id < 0 makes it a notification (no id). NULL on ENOMEM. */
cJSON *mcpw_request(long id, const char *method, cJSON *params);

/* The params of the legacy initialize mcpq sends upstream: protocolVersion
 * MCPW_LEGACY_VERSION, the capabilities of mcpw_client_capabilities, clientInfo mcpq-worker.
 * A new object; NULL on ENOMEM. */
cJSON *mcpw_initialize_params(void);

/* The client capabilities mcpq declares to an upstream session, which many callers share
 * (docs/executors.md, "Questions from upstreams"): elicitation (form and url), sampling and
 * roots, all of them; whether the calling client may be asked is decided per request by the
 * worker (worker/core/ask.h). A new object; NULL on ENOMEM. */
cJSON *mcpw_client_capabilities(void);

/* 1 when a server/discover exchange (HTTP status, the response found, may be NULL) shows the
 * upstream speaks 2026-07-28. */
int mcpw_discover_modern(long status, const cJSON *response);

/* The version an initialize response (may be NULL) settled on, when it is a legacy version
 * this gateway speaks (a static string), else NULL. */
const char *mcpw_legacy_version(const cJSON *response);

/* 1 when a configured header name is one the MCP client sets itself (Content-Type, Accept,
 * Expect, MCP-Protocol-Version, Mcp-Session-Id, Mcp-Method, Mcp-Name, ...), so a configured
 * one is skipped; else 0. Case-insensitive. */
int mcpw_header_reserved(const char *name);

/* One raw response header line (as curl's header callback gets it): when it is
 * Mcp-Session-Id, its trimmed value goes to out (or "" when it does not fit) and 1 is
 * returned; else 0 and out is untouched. */
int mcpw_session_header(const char *line, size_t len, char *out, size_t out_size);

#endif
