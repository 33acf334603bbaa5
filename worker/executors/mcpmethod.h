/*
 * mcpmethod.h - what the mcp executor (mcpexec.h) sends upstream for each method a job can
 * answer, and what it makes of the answer (docs/executors.md, "Methods"). The transport
 * (HTTP or stdio, the handshake, sessions) is mcpexec's; this is the request and result
 * layer, in pure functions.
 *
 * Requests, from the job's envelope (envelope.h) and executor config:
 *   tools/call            {"name": executor.tool, "arguments": the job's arguments}
 *   resources/read        {"uri"} (a template's matched variables stay here)
 *   prompts/get           {"name": executor.prompt, "arguments"}
 *   completion/complete   {"ref", "argument", "context"}; a "ref/prompt" ref gets
 *                         executor.prompt as its name
 *   resources/subscribe, resources/unsubscribe   {"uri"}
 * and mcpq/catalog, which is a series of list requests (wrk_mcpmethod_catalog_*).
 *
 * Results: an upstream's result for a method other than tools/call passes through as the
 * record's result ("resultType" "complete" dropped) once it has the method's shape
 * ({"contents": []}, {"messages": []}, {"completion": {"values": []}}); subscribe and
 * unsubscribe answer {}.
 *
 * mcpq/catalog: {"protocolVersion", "serverInfo", "capabilities", "tools", "resources",
 * "resourceTemplates", "prompts"}: the handshake's version, server info and capabilities
 * (wrk_mcpmethod_info), then every page of tools/list, resources/list, resources/templates/list and
 * prompts/list, each only when the capabilities announce it (tools, resources, resources,
 * prompts), at most WRK_MCPMETHOD_MAX_PAGES pages each.
 *
 * Pure functions, thread-safe on distinct values.
 */
#ifndef MCPQ_WORKER_MCPMETHOD_H
#define MCPQ_WORKER_MCPMETHOD_H

#include "envelope.h"

#include <cjson/cJSON.h>

#define WRK_MCPMETHOD_MAX_PAGES 100

/* NULL when env's executor config has what env's method needs (a string "tool" for
 * tools/call, "prompt" for prompts/get and for a ref/prompt completion), else the message
 * for the caller (a static string). */
const char *wrk_mcpmethod_config_error(const wrk_envelope_t *env);

/* One request to send upstream. */
typedef struct wrk_mcpmethod_req {
    const char *method; /* static or borrowed */
    cJSON *params;      /* owned by the caller after wrk_mcpmethod_request */
    const char *name;   /* for the Mcp-Name header (tools/call, resources/read, prompts/get),
                         * borrowed from env; else NULL */
} wrk_mcpmethod_req_t;

/* The request for env's method other than mcpq/catalog. 0, or MCPQ_ENOMEM. */
int wrk_mcpmethod_request(const wrk_envelope_t *env, wrk_mcpmethod_req_t *req);

/* What the handshake told: {"protocolVersion": version, "serverInfo", "capabilities"} from
 * an initialize result, or a 2026-07-28 server/discover result (serverInfo from its
 * _meta["io.modelcontextprotocol/serverInfo"]). result may be NULL (then {} members). A new
 * object, NULL on ENOMEM. */
cJSON *wrk_mcpmethod_info(const cJSON *result, const char *version);

/* The result of the upstream's answer (result: the JSON-RPC "result" member, borrowed) for a
 * method other than tools/call and mcpq/catalog: a new object the caller owns, or NULL when
 * it does not have the method's shape (or ENOMEM). */
cJSON *wrk_mcpmethod_result(kinds_method_t method, const cJSON *result);

/* An mcpq/catalog being read: one list at a time, page by page. */
typedef struct wrk_mcpmethod_catalog {
    cJSON *result; /* what is known so far (owned) */
    int list;      /* index of the list being read */
    int pages;     /* pages read of it */
    char *cursor;  /* its next cursor, NULL for the first page */
} wrk_mcpmethod_catalog_t;

/* Starts cat from the handshake's info (borrowed, see wrk_mcpmethod_info). 1 when a list is to be
 * read (wrk_mcpmethod_catalog_request), 0 when the upstream announces none, MCPQ_ENOMEM. */
int wrk_mcpmethod_catalog_start(wrk_mcpmethod_catalog_t *cat, const cJSON *info);
/* The request for the next page. 0, or MCPQ_ENOMEM. */
int wrk_mcpmethod_catalog_request(const wrk_mcpmethod_catalog_t *cat, wrk_mcpmethod_req_t *req);
/* Adds a page (the list request's "result", borrowed). 1 when another page or list is to be
 * read, 0 when the catalog is complete, MCPQ_EINVAL when the page is not a list result,
 * MCPQ_ENOMEM. */
int wrk_mcpmethod_catalog_page(wrk_mcpmethod_catalog_t *cat, const cJSON *result);
/* The finished catalog (ownership passes to the caller; cat->result becomes NULL). */
cJSON *wrk_mcpmethod_catalog_take(wrk_mcpmethod_catalog_t *cat);
/* Frees what cat holds. */
void wrk_mcpmethod_catalog_cleanup(wrk_mcpmethod_catalog_t *cat);

#endif
