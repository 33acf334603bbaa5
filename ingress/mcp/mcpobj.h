/*
 * mcpobj.h - resources/read, prompts/get and completion/complete (mcpobj.c; docs/protocol.md
 * "What mcpq serves").
 *
 * Each finds its object on the request's server (registry.h) among those the caller may see
 * (access.h: one it may not see, or whose token lacks a scope for it, is answered as one that
 * does not exist) and answers from the registry when the object's content is static:
 *   - resources/read {uri}: the published resource with that uri, else the first template
 *     (by name) whose uriTemplate matches it (kinds.h); contents [{uri, mimeType?, text|blob}]
 *     with a template's {var} replaced by the matched value in its text (a blob is served as
 *     it is); unknown uri: -32002 "Resource not found" up to 2025-11-25, -32602 in 2026-07-28,
 *     data {uri}; 2026-07-28 results carry ttlMs (the version's ttl_ms, 0) and cacheScope
 *     (its cache_scope, "private").
 *   - prompts/get {name, arguments?}: messages with {{arg}} replaced in every string by the
 *     argument's value ("" for a missing optional one); an unknown prompt, a missing required
 *     argument, an argument the prompt does not declare or one that is not a string: -32602
 *     naming it.
 *   - completion/complete {ref, argument, context?}: ref/prompt by name, ref/resource by the
 *     template's uriTemplate; the values of the version's "completions" for argument.name
 *     that start with argument.value, at most 100, with total and hasMore.
 * An object with an executor is answered by a worker: see job_path in mcpobj.c.
 */
#ifndef MCPQ_ING_MCPOBJ_H
#define MCPQ_ING_MCPOBJ_H

#include "mcpreq.h"

/* Answers resources/read, prompts/get or completion/complete (msg->method). 1 when the request
 * waits for a worker (mcpreq.h), else 0 with resp filled. */
int ing_mcpobj_call(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp);

#endif
