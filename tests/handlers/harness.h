/*
 * harness.h - handler tests: the ingress's handlers driven with synthetic requests (req.h),
 * no socket and no HTTP server, against a real redis-server and the mcpq-devbroker
 * (tests/fixture.h). hx_start() opens a process context as mcpq-ingress does (process.h),
 * applies a config to the registry and loads it; the tests then call the handlers of
 * ingress/mcp and ingress/api directly and read the ing_resp_t they build.
 *
 * tests/handlers/test_<file>.c tests ingress/<layer>/<file>.c.
 */
#ifndef MCPQ_TESTS_HARNESS_H
#define MCPQ_TESTS_HARNESS_H

#include "ctx.h"
#include "fixture.h"
#include "req.h"

#include <cjson/cJSON.h>

#define HX_API_KEY "hx-key-0123456789"
#define HX_ADMIN_TOKEN "hx-admin-token"

typedef struct hx {
    fx_stack_t fx;
    mcpq_settings_t set;
    char *argv[64]; /* the settings point into these */
    int argc;
    char files_dir[300];
    ing_ctx_t ctx;
} hx_t;

/* Starts the stack, loads settings from the defaults plus args ("--flag", "value", ...,
 * NULL; may be NULL), opens the process context, applies config (a config file's JSON text)
 * and loads the registry. Exits the test on failure. */
void hx_start(hx_t *h, const char *config, const char *const args[]);
/* Loads the registry from Redis again (after the admin API changed it). */
void hx_reload(hx_t *h);
void hx_stop(hx_t *h);

/* One exchange. */
typedef struct hx_ex {
    ing_req_t req;
    ing_req_pair_t headers[24];
    ing_req_pair_t args[16];
    ing_req_synth_t synth;
    ing_resp_t resp;
    int parked;      /* the handler parked the request (it waits for a worker) */
    cJSON *json;     /* the answer's body parsed, or NULL */
    char query[512]; /* hx_admin: the target's query, split into args */
} hx_ex_t;

/* Prepares an exchange: method, target, body (may be NULL) and headers (name, value, ...,
 * NULL). With auth set, the API key of the test tenant is added as Authorization unless
 * headers name one. */
void hx_ex_init(hx_t *h, hx_ex_t *e, const char *method, const char *uri, const char *body,
                int auth, const char *const headers[]);
/* Adds a query argument. */
void hx_ex_arg(hx_ex_t *e, const char *name, const char *value);
/* Parses the answer's body into e->json (after the handler ran). */
void hx_ex_parse(hx_ex_t *e);
/* Splits path at '?' (path keeps what is before it) and adds the query's name=value pairs
 * as the request's arguments. */
void hx_ex_query(hx_ex_t *e, char *path);
void hx_ex_free(hx_ex_t *e);
/* The value of the answer's further header name (ing_resp_header), or NULL. */
const char *hx_resp_header(const ing_resp_t *resp, const char *name);
/* A file of the repository (ctest runs in the source tree), NUL-terminated, *len bytes;
 * malloc'd. Exits the test when it cannot be read. */
char *hx_repo_file(const char *path, size_t *len);

/* POST /mcp[/server] through ing_mcp_post with the test key (2025-06-18 headers and an
 * Accept of JSON and SSE unless headers name MCP-Protocol-Version or Accept); e is ready to
 * read (parked: see hx_mcp_wait). */
void hx_mcp(hx_t *h, hx_ex_t *e, const char *server, const char *body, const char *const headers[]);
/* The protocol versions mcpq speaks, oldest first: HX_NERAS of them (the last is the
 * stateless 2026-07-28). */
#define HX_NERAS 4
extern const char *const hx_eras[HX_NERAS];
/* Opens a session of legacy version v on server (NULL: the default) with initialize as the
 * caller of hdrs (may be NULL: the test key): its Mcp-Session-Id into sid. */
void hx_session(hx_t *h, const char *server, const char *v, const char *const hdrs[], char sid[80]);
/* A request (id 1) of method with params (a JSON object's text) in version v: up to
 * 2025-11-25 in the session sid (NULL: none); in 2026-07-28 with params._meta's
 * protocolVersion and the Mcp-Method header, and Mcp-Name when name is not NULL. hdrs (may be
 * NULL) are added (an Authorization of another key). e is ready to read. */
void hx_era_rpc(hx_t *h, hx_ex_t *e, const char *server, const char *v, const char *sid,
                const char *method, const char *name, const char *params, const char *const hdrs[]);
/* For a parked exchange: waits up to timeout_ms for its answer and fills e->resp/e->json as
 * the HTTP layer would (the call's response, or a batch's array). 0, or -1 on timeout. */
int hx_mcp_wait(hx_t *h, hx_ex_t *e, int timeout_ms);
/* Everything the streamed call c (after ing_pending_take said ING_TAKE_STREAM) has to send
 * now, read as libmicrohttpd's content reader does: its bytes into *out (malloc'd, the caller
 * frees); 1 when its stream ended, 0 when it waits for more. */
int hx_drain(hx_t *h, ing_call_t *c, char **out);

/* A request to the admin API through ing_admin_api with the operator token (and If-Match
 * when if_match is not NULL): url is the target, its query (not percent-encoded) becomes the
 * arguments. Returns the answer's status; e is ready to read. */
int hx_admin(hx_t *h, hx_ex_t *e, const char *method, const char *url, const char *body,
             const char *if_match);
/* hx_admin, expecting status and, when text is not NULL, an answer whose "error" message or
 * whose body (as sent, JSON escapes included) contains it (the request and the answer on
 * stderr when the status differs). */
void hx_admin_expect(hx_t *h, const char *method, const char *url, const char *body,
                     const char *if_match, int status, const char *text);
/* Headers (for hx_mcp, hx_era_rpc) that authenticate with API key KEY instead of the test's. */
#define HX_BEARER(KEY)                                                                             \
    (const char *const[])                                                                          \
    {                                                                                              \
        "Authorization", "Bearer " KEY, NULL                                                       \
    }
/* A registry object of kind KIND of tenant "t", server "default", with one version "1" whose
 * members are VER (JSON text) and EXTRA object members (",\"access\":{...}" or ""). */
#define HX_KIND_OBJ(KIND, NAME, EXTRA, VER)                                                        \
    "{\"kind\":\"" KIND "\",\"tenant\":\"t\",\"server\":\"default\",\"name\":\"" NAME "\"" EXTRA   \
    ",\"versions\":[{\"version\":\"1\"," VER "}]}"
/* The string value at a dotted path of e's JSON answer ("error", "tools.0.name"), or NULL. */
const char *hx_str(const hx_ex_t *e, const char *path);

/* The JSON-RPC error code of e's answer (0 when it is a result), and its message. */
int hx_rpc_code(const hx_ex_t *e);
const char *hx_rpc_message(const hx_ex_t *e);
/* e's result object, or NULL. */
const cJSON *hx_rpc_result(const hx_ex_t *e);
/* tools/call of task-mode tool with arguments (a JSON object's text) on the default server as
 * the caller of hdrs (NULL: the test key): the new task's id (36 characters) into id. */
void hx_task_call(hx_t *h, const char *tool, const char *args, const char *const hdrs[], char *id,
                  size_t size);

/* A consumer of group (a group of its own, so a worker's consumption hides nothing) assigned to
 * every partition of the job topic from its start: for reading the envelopes the handlers
 * published. rd_kafka_consumer_close() and rd_kafka_destroy() it. */
rd_kafka_t *hx_jobs_reader(hx_t *h, const char *group);

/* A Redis command on the stack's Redis (a test's own connection); reply freed by caller. */
redisReply *hx_redis(hx_t *h, const char *fmt, ...);
/* A pool to a port where no Redis listens, for swapping into h->ctx.kv (or an rstate) to see
 * what a client gets while Redis is unreachable; *t is its target. Free the pool, then *t. */
kv_pool_t *hx_dead_kv(hx_t *h, kv_target_t **t);

#endif
