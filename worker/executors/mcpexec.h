/*
 * mcpexec.h - the mcp executor (docs/executors.md): call a tool (or send another method) on an
 * upstream MCP server over Streamable HTTP, on the worker's curl multi handle
 * (worker/executors/httpexec.h), never blocking the loop.
 *
 * The executor config is {"type": "mcp", "url": "http(s)://...", "tool": <upstream tool
 * name>, "headers": {name: value}}. Per worker and per upstream (url + headers) the executor
 * keeps what it negotiated:
 *   - it POSTs server/discover as a 2026-07-28 request; a result means the upstream speaks
 *     2026-07-28: every call then carries MCP-Protocol-Version, Mcp-Method, Mcp-Name and
 *     params._meta["io.modelcontextprotocol/protocolVersion"], and no session;
 *   - otherwise the legacy handshake: initialize asking for 2025-11-25 (the upstream may
 *     answer an older version it speaks), notifications/initialized, then calls with
 *     Mcp-Session-Id (when the upstream gave one) and MCP-Protocol-Version. A 404 on a call
 *     with a session means the session expired: the executor initializes again once and
 *     retries the call.
 * Calls made while an upstream is being negotiated wait for it. Answers may be JSON or SSE;
 * an SSE answer is read as it arrives (wrk_httpexec_stream, mcpw_reader_t): the call's
 * notifications/progress go out as progress entries and notifications/message as log entries
 * at once, and the response ends the transfer when it comes.
 *
 * Upstream tasks (uptask.h; docs/executors.md "Streams, upstream tasks and resource
 * subscriptions"): a CreateTaskResult (2025-11-25 {"task"}, asked for with params.task for
 * the tools whose taskSupport the upstream's tools/list gives as required/optional;
 * 2026-07-28 resultType "task", when the upstream's capabilities name the tasks extension)
 * is followed with tasks/get at the upstream's poll interval within the deadline, status
 * changes forwarded as progress, then tasks/result (2025-11-25) or the terminal task's
 * result/error; timeout and cancel send tasks/cancel.
 *
 * Resource subscriptions (upnotify.h; the subscribers in mcpsubs.h): a resources/subscribe
 * job the upstream accepts keeps the session's GET stream open (2026-07-28: the worker
 * answers the job and keeps one subscriptions/listen stream naming every subscribed uri),
 * re-opened with backoff when it drops; each notifications/resources/updated is published
 * for the (tenant, server)s that subscribed through this worker. An unsubscribe goes upstream
 * only for the uri's last subscriber. A stdio upstream's subscriptions are kept under its
 * group's key and its updates come from the pool (wrk_stdiopool_on_updated).
 *
 * Results: the upstream CallToolResult passes through (content, structuredContent, isError;
 * a 2026-07-28 resultType "complete" is dropped, the ingress adds its own). An upstream
 * JSON-RPC error -32602 (unknown tool, bad params) ends the job with that JSON-RPC error
 * (record status "error"), as the gateway answers its own -32602; other upstream errors
 * become an isError result with the upstream's message; transport and handshake failures
 * an isError result saying what failed. Each of these carries an error id, and the upstream's
 * host[:port] and curl's message go only to the log (wrk_job_error_hidden; never the URL's
 * path or query, nor header values). Timeout or cancel aborts the transfer and, in a legacy
 * session, sends notifications/cancelled best-effort.
 *
 * stdio upstreams: an executor with "command" (and "args", "env" references, "cwd",
 * "limits") instead of "url" runs the upstream as a pool of processes on this worker
 * (stdiopool.h, made on the first such call); the call is the same tools/call, its answer
 * read by the same code as an HTTP upstream's, and a failure of the process an isError
 * result with an error id (the command and exit status only in the log). Every method below
 * goes over either transport; over stdio, mcpq/catalog takes the handshake's answer from the
 * process the pool opened.
 *
 * Questions from upstreams (mcprelay.h; docs/executors.md "Questions from upstreams"): upstream
 * sessions declare elicitation (form, url), sampling and roots (mcpw_client_capabilities), a
 * 2026-07-28 request the calling client's own (the envelope's "client"). An upstream's
 * elicitation/create, sampling/createMessage or roots/list on a call's SSE stream (or a stdio
 * process's stdout while it serves only that call) is asked through the worker's ask API
 * (worker/core/ask.h) and the answer POSTed (written) back as the JSON-RPC response; a
 * 2026-07-28 input_required result is asked the same way and the request sent again with
 * inputResponses and requestState, at most WRK_MCPUP_INPUT_ROUNDS_MAX rounds, an error answer
 * ending the call with an isError result.
 *
 * Methods (mcpmethod.h): a job whose method is not tools/call sends that method upstream
 * with the job's params (a prompt's name from executor.prompt, which only tools/call's
 * executor.tool replaces) and passes the upstream's result on as the record's result
 * (wrk_job_finish_result); an upstream JSON-RPC error becomes the job's error with the
 * upstream's code and message. mcpq/catalog reads the upstream's lists page by page, with
 * the protocol version, server info and capabilities the handshake told.
 *
 * The executor's files: this one (the handshake, a call and its answer, the stdio transport's
 * glue), uptask.c and upnotify.c, which reach a call only through the ops of mcpup.h.
 *
 * Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_MCP_H
#define MCPQ_WORKER_MCP_H

#include "httpexec.h"

typedef struct wrk_mcpexec wrk_mcpexec_t;

/* The upstream cache of one worker, on h. NULL on ENOMEM. */
wrk_mcpexec_t *wrk_mcpexec_new(wrk_httpexec_t *h);
/* Every job must have finished. Drops negotiations in flight. NULL is a no-op. */
void wrk_mcpexec_free(wrk_mcpexec_t *m);

/* An upstream said uri changed (notifications/resources/updated): one message
 * {"tenant","server","uri"} per (tenant, server) subscribed to uri at that upstream through
 * this worker goes out on mcpq:resource:updated (mcpsubs.h). upstream is the key the
 * subscriptions were made under: an HTTP upstream's is its url + "\n" + compact headers (this
 * file's streams call it themselves); a stdio transport passes its own upstream's key. */
void wrk_mcpexec_resource_updated(wrk_mcpexec_t *m, const char *upstream, const char *uri);

#endif
