/*
 * jobargs.h - what a job carries for each MCP method the tools/call pipeline runs
 * (toolcall.c; docs/protocol.md "Resources, prompts and completion from a worker").
 *
 * A resources/read, prompts/get or completion/complete whose registry object has an executor
 * becomes a job like a tools/call. The envelope's "method" names the request and its
 * "arguments" hold the request's params without _meta (schemas/job.schema.json):
 *   resources/read        {"uri", "variables": {<a template's matches>}} ({} for a resource)
 *   prompts/get           {"name", "arguments": {...}} ({} when the client sent none)
 *   completion/complete   {"ref", "argument", "context"} (context only when sent)
 *   resources/subscribe, resources/unsubscribe   {"uri"} (subscribe.h: a legacy session's
 *                         subscription to a resource served by a worker, told to the worker)
 * What a request may carry beyond its shape (a prompt's arguments against its declaration,
 * the object and the caller's access to it) is checked by its handler (mcpobj.c, subscribe.c).
 *
 * Pure functions, thread-safe.
 */
#ifndef MCPQ_ING_JOBARGS_H
#define MCPQ_ING_JOBARGS_H

#include "kinds.h"

#include <cjson/cJSON.h>
#include <stddef.h>

/* Checks the params of a request of method (not KINDS_METHOD_CALL, whose pipeline checks its
 * own): 0, or -1 with why (for a -32602 answer) filled. */
int ing_jobargs_check(kinds_method_t method, const cJSON *params, char *why, size_t why_size);

/* The job's "arguments" for a checked request of method: params (borrowed) without _meta,
 * shaped as above (tools/call: a copy of params.arguments); vars (borrowed, may be NULL) are
 * a template's matched variables. A new
 * object the caller owns, NULL on ENOMEM. */
cJSON *ing_jobargs_build(kinds_method_t method, const cJSON *params, const cJSON *vars);

/* The Kafka record key of a job of method on (tenant, server) whose arguments (as
 * ing_jobargs_build made them) are args: resources/subscribe and resources/unsubscribe are
 * keyed by (tenant, server, uri), as the JSON array ["<tenant>","<server>","<uri>"], so every
 * subscription to one resource reaches one partition, hence one worker, which alone
 * subscribes upstream and publishes the updates (docs/executors.md, "Resource
 * subscriptions"); NULL for every other method (keyed by the job id) and on ENOMEM (the
 * caller then keys by the job id). malloc'd; the caller frees it. */
char *ing_jobargs_route_key(kinds_method_t method, const char *tenant, const char *server,
                            const cJSON *args);

#endif
