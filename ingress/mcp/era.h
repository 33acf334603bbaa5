/*
 * era.h - which MCP era a request speaks, and the 2026-07-28 header rules (docs/protocol.md).
 *
 * 2026-07-28 ("modern") requests are stateless: the version, client info, capabilities and
 * log level travel in every request's params._meta, and the HTTP transport mirrors the
 * version, the method and the tool name (plus `x-mcp-header` tool parameters) into headers
 * that must agree with the body, else HTTP 400 with -32020 HeaderMismatch. Header values in
 * the `=?base64?...?=` form are decoded before they are compared.
 */
#ifndef MCPQ_ING_ERA_H
#define MCPQ_ING_ERA_H

#include "pending.h"
#include "req.h"
#include "rpc.h"
#include "names.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#define ING_META_VERSION NAMES_META_PROTOCOL_VERSION
#define ING_META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define ING_META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
#define ING_META_CLIENT_CAPS "io.modelcontextprotocol/clientCapabilities"
#define ING_EXT_TASKS "io.modelcontextprotocol/tasks"

/* params._meta of a message, or NULL. */
const cJSON *ing_era_meta(const rpc_msg_t *msg);

/* 1 when the request declares the tasks extension in its per-request capabilities
 * (params._meta[clientCapabilities].extensions["io.modelcontextprotocol/tasks"] is an
 * object), else 0. */
int ing_era_declares_tasks_ext(const rpc_msg_t *msg);

/* The value a mirrored header stands for: plain visible ASCII (spaces and tabs inside) as is,
 * `=?base64?X?=` decoded. 0, or MCPQ_EINVAL (bad characters, bad base64, too long). */
int ing_era_hdr_decode(const char *raw, char *out, size_t out_size);

/* Checks a 2026-07-28 request against its headers: MCP-Protocol-Version against
 * _meta's protocolVersion, Mcp-Method against method, Mcp-Name against params.name
 * (tools/call, prompts/get), params.uri (resources/read) or params.taskId (tasks/get, tasks/update,
 * tasks/cancel of the tasks extension, when taskId is a string; otherwise the method answers
 * -32602). 0, or MCPQ_EINVAL with why filled (the -32020 message). */
int ing_era_modern_headers_check(const ing_req_t *req, const rpc_msg_t *msg,
                                 const char *header_version, char *why, size_t why_size);

/* Checks the Mcp-Param-{Name} headers of a tools/call against the arguments, for every
 * property of input_schema annotated with x-mcp-header (reachable through `properties`
 * only). 0, or MCPQ_EINVAL with why filled. */
int ing_era_param_headers_check(const ing_req_t *req, const cJSON *input_schema, const cJSON *args,
                                char *why, size_t why_size);

/* How a result produced for any era (a worker's: an upstream of another version, an exec
 * script) is reshaped for a client speaking version; NULL for a NULL version
 * (docs/protocol.md, "Upstreams of another version"):
 *   - every era: an upstream's serverInfo in _meta goes (the client talks to mcpq);
 *   - 2026-07-28: resultType and mcpq's serverInfo as on every result of that era
 *     (ing_mcpreq_modern_result);
 *   - every 2025 era: the 2026-07-28 result fields resultType, ttlMs and cacheScope go;
 *   - 2025-03-26 (its content blocks are text, image, audio and resource only): a
 *     resource_link block in content or in a prompt message becomes a text block naming
 *     the link ("<uri>", then " (<name>: <description>)" as far as they are given), so the
 *     model still sees where the resource is. structuredContent stays: a result may carry
 *     fields its era does not name (Result's index signature), and a client that sends no
 *     MCP-Protocol-Version (counted as 2025-03-26) may well read it.
 * The function returned works in place and is thread-safe. */
ing_call_shape_fn ing_era_result_shaper(const char *version);

#endif
