/*
 * mcplist.h - the list methods of the MCP endpoint (mcplist.c): tools/list, resources/list,
 * resources/templates/list and prompts/list (docs/protocol.md "What mcpq serves").
 *
 * Each lists the published objects of one kind of the request's server (registry.h) that
 * the caller may see (access.h), filtered per request so one caller's view never reaches
 * another, in name order, MCPQ_PAGE_SIZE at a time with an opaque cursor ("c<offset>"; any
 * other cursor is -32602). 2026-07-28 results carry resultType, ttlMs (MCPQ_LIST_TTL_MS) and
 * cacheScope "private" (what a list holds depends on the caller's tenant, whatever the URL).
 */
#ifndef MCPQ_ING_MCPLIST_H
#define MCPQ_ING_MCPLIST_H

#include "mcpreq.h"

/* The scope of every list result and of server/discover (see above). */
#define ING_LIST_CACHE_SCOPE "private"

/* Answers the list method of kind (ING_KIND_*) into resp. */
void ing_mcplist_answer(ing_mcp_t *m, const rpc_msg_t *msg, ing_resp_t *resp, int kind);

#endif
