/*
 * rpc.h - JSON-RPC 2.0 framing for the MCP endpoint: strict body checks, parsing,
 * classification of one message, and response/error serialization.
 *
 * rpc_parse() rejects what cJSON alone would let through: invalid UTF-8, raw control
 * characters inside strings, trailing bytes, nesting deeper than RPC_MAX_DEPTH, more than
 * RPC_MAX_VALUES values, and duplicate member names in an object. rpc_classify() refuses an
 * id that is not a finite number or a string whose JSON form (quotes and escapes included)
 * is at most RPC_MAX_ID_LEN + 2 bytes, so every rendering of an id fits whole.
 * All functions are pure and thread-safe.
 */
#ifndef MCPQ_JSONRPC_H
#define MCPQ_JSONRPC_H

#include <cjson/cJSON.h>
#include <stddef.h>

#define RPC_PARSE_ERROR -32700
#define RPC_INVALID_REQUEST -32600
#define RPC_METHOD_NOT_FOUND -32601
#define RPC_INVALID_PARAMS -32602
#define RPC_INTERNAL_ERROR -32603
#define RPC_SESSION_NOT_FOUND -32001
#define RPC_RESOURCE_NOT_FOUND -32002 /* resources/read up to 2025-11-25 (-32602 since) */
#define RPC_REPLY_TIMEOUT -32003
#define RPC_REQUEST_CANCELLED -32800
#define RPC_HEADER_MISMATCH -32020
#define RPC_MISSING_CAPABILITY -32021 /* 2026-07-28: a required client capability is missing */
#define RPC_UNSUPPORTED_VERSION -32022
#define RPC_RATE_LIMITED -32029 /* mcpq: over a rate limit or a tenant quota (HTTP 429) */

#define RPC_MAX_DEPTH 64
#define RPC_MAX_ID_LEN 256
#define RPC_MAX_VALUES 100000 /* JSON values in one body (objects, arrays and scalars) */
#define RPC_STR_(x) #x
#define RPC_STR(x) RPC_STR_(x)

typedef enum { RPC_REQUEST, RPC_NOTIFICATION, RPC_RESPONSE, RPC_INVALID } rpc_kind_t;

typedef struct rpc_msg {
    rpc_kind_t kind;
    const cJSON *id;     /* request id (string or number); NULL for notifications/invalid */
    const char *method;  /* NULL unless request or notification */
    const cJSON *params; /* object or array, or NULL when absent */
    const char *why;     /* RPC_INVALID: what is wrong */
} rpc_msg_t;

/* 0 when body is UTF-8 with no raw control character inside a string and only the escapes
 * JSON allows, none of them \u0000 or a lone surrogate; else MCPQ_EINVAL with *why set. */
int rpc_body_check(const char *body, size_t len, const char **why);

/* Parses one JSON text (object or array). NULL on -32700 with *why set. */
cJSON *rpc_parse(const char *body, size_t len, const char **why);

/* 1 when v may serve as an id (or a progressToken): a finite number, or a string whose JSON
 * rendering is at most RPC_MAX_ID_LEN + 2 bytes. */
int rpc_id_valid(const cJSON *v);

/* Classifies one JSON-RPC message (an element of a batch or the whole body). */
void rpc_classify(const cJSON *item, rpc_msg_t *msg);

/* {"jsonrpc":"2.0","id":<id>,"result":<result_json>}; id NULL → null. malloc'd string. */
char *rpc_result_str(const cJSON *id, const char *result_json);

/* {"jsonrpc":"2.0","id":<id>,"error":{"code","message"[,"data"]}}; malloc'd string. */
char *rpc_error_str(const cJSON *id, int code, const char *message, const cJSON *data);

/* A compact JSON rendering of id ("null" for NULL) into buf; returns buf. */
const char *rpc_id_str(const cJSON *id, char *buf, size_t size);

#endif
