/*
 * registry.h - the tool registry as the ingress sees it (docs/config-file.md).
 *
 * The registry lives in Redis (hash `{mcpq}:registry`, counter `{mcpq}:registry:rev`, see
 * docs/internals.md) so every replica serves the same catalog. regstore.h writes it;
 * ing_registry_fetch() reads it back into an immutable,
 * reference-counted snapshot with everything a request needs precomputed: API key hashes,
 * servers sorted by (tenant, name), each server's published objects of every kind (tools,
 * resources, resource templates, prompts: kinds.h, docs/config-file.md "Kinds") sorted by
 * name with their list entry (tools/list, resources/list, resources/templates/list,
 * prompts/list) rendered once, and the robots tenants declare sorted by id.
 *
 * Snapshots are immutable: any thread may read one it holds a reference to.
 */
#ifndef MCPQ_ING_REGISTRY_H
#define MCPQ_ING_REGISTRY_H

#include "kinds.h"
#include "kv.h"
#include "sch.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* The kinds of registry object (kinds.h). */
enum {
    ING_KIND_TOOL = KINDS_TOOL,
    ING_KIND_RESOURCE = KINDS_RESOURCE,
    ING_KIND_TEMPLATE = KINDS_TEMPLATE,
    ING_KIND_PROMPT = KINDS_PROMPT,
};

/* A published registry object of any kind (the name ing_tool_t is older than the kinds). */
typedef struct ing_tool {
    const char *tenant;
    const char *server;
    const char *name;
    int kind;                 /* ING_KIND_* */
    const char *uri;          /* a resource's uri, else NULL */
    const char *uri_template; /* a resource template's uriTemplate, else NULL */
    const cJSON *version;     /* the published version (description, inputSchema, executor, ...) */
    /* a tool's inputSchema compiled once with the snapshot (sch.h), for tools/call; NULL when
     * it has none or it does not compile (tools/call then validates one-off, saying why) */
    sch_compiled_t *input_schema;
    const char *version_id;
    /* this object as an entry of its kind's list (tools/list, resources/list,
     * resources/templates/list, prompts/list), compact JSON */
    char *list_json;
    long long timeout_ms; /* 0: the process default */
    int task_mode;
    const cJSON *fake_result; /* non-NULL when fake.enabled */
    const cJSON *access;      /* the tool's "access" rule (access.h), or NULL */
    int quarantined; /* its definition is not the approved one (pin.h): not listed, not called */
} ing_tool_t;

typedef struct ing_server {
    const char *tenant;
    const char *name;
    const char *description;
    ing_tool_t **tools; /* tools only, sorted by name; quarantined ones (pin.h) are not */
    size_t ntools;
    ing_tool_t **quarantined; /* the quarantined tools, for ing_registry_quarantined */
    size_t nquarantined;
    ing_tool_t **resources; /* sorted by name */
    size_t nresources;
    ing_tool_t **templates; /* sorted by name (the order resources/read tries them in) */
    size_t ntemplates;
    ing_tool_t **prompts; /* sorted by name */
    size_t nprompts;
    ing_tool_t **by_uri; /* the resources again, sorted by uri (ing_registry_resource) */
    /* SHA-256 over its tools' list_json in order: two snapshots whose server has the same
     * fingerprint answer tools/list alike (listen.h tells clients when it changes).
     * resources_fp covers resources/list and resources/templates/list, prompts_fp
     * prompts/list, the same way. */
    unsigned char tools_fp[32];
    unsigned char resources_fp[32];
    unsigned char prompts_fp[32];
    const cJSON *access; /* the server's "access" rule (access.h), or NULL */
} ing_server_t;

/* A tenant's "oauth" object (docs/config-file.md "OAuth"): the issuers whose access tokens
 * it takes and how their claims map to it. The strings live in the snapshot. */
typedef struct ing_tenant_oauth {
    const char *const *issuers;
    size_t n_issuers;
    const char *const *audiences;
    size_t n_audiences;
    const char *jwks_uri;                    /* NULL: discover */
    const char *claim_user, *claim_app;      /* defaults filled: "sub", "azp" */
    const char *claim_tenant, *tenant_value; /* NULL: no tenant claim */
    const cJSON *scopes;                     /* the scope map object, or NULL */
    const char *const *scopes_supported;
    size_t n_scopes_supported;
    const char *introspection_endpoint, *client_id, *client_secret; /* NULL: none */
} ing_tenant_oauth_t;

typedef struct ing_tenant {
    const char *id;
    const char *default_server;
    const cJSON *doc;
    const ing_tenant_oauth_t *oauth; /* NULL: the tenant takes no tokens */
} ing_tenant_t;

/* A request rate limit from the config (docs/config-file.md; ratelimit.h applies it). */
typedef struct ing_rate {
    double per_s;    /* tokens added per second; 0: no limit; < 0: not configured */
    long long burst; /* bucket size; 0: twice per_s (at least 1) */
} ing_rate_t;

typedef struct ing_apikey {
    unsigned char sha256[32];
    const ing_tenant_t *tenant;
    const char *id;
    ing_rate_t rate;   /* the key's rate_limit, else its tenant's rate_limits.api_key */
    const char *perms; /* its "scopes", space-separated ("": none) */
} ing_apikey_t;

typedef struct ing_app {
    const char *app_id;
    const char *secret;
    const cJSON *doc; /* its config object (previous_secret: ing_registry_secrets) */
    int sig_version;  /* the lowest signing version its requests may use (1 or 2) */
    const ing_tenant_t *tenant;
    ing_rate_t rate;   /* the app's rate_limit, else its tenant's rate_limits.app */
    const char *perms; /* its "scopes", space-separated ("": none) */
} ing_app_t;

/* A robot a tenant declares (config "robots"): only that tenant's tasks may name it. */
typedef struct ing_robot {
    const char *robot;
    const ing_tenant_t *tenant;
} ing_robot_t;

typedef struct ing_registry ing_registry_t;

/* Reads the current registry: a snapshot with one reference, or NULL (errstr filled). */
ing_registry_t *ing_registry_fetch(redisContext *c, char *errstr, size_t errstr_size);

/* Builds a snapshot from registry hash fields (name/value pairs); used by fetch and tests. */
ing_registry_t *ing_registry_build(const char *const *fields, const size_t *lens, size_t n,
                                   long long rev, char *errstr, size_t errstr_size);

/* The revision a snapshot was built from. */
long long ing_registry_rev(const ing_registry_t *reg);
/* Reads `{mcpq}:registry:rev` (0 when absent); MCPQ_EUNAVAIL on a Redis failure. */
int ing_registry_read_rev(redisContext *c, long long *rev);

void ing_registry_ref(ing_registry_t *reg);
void ing_registry_unref(ing_registry_t *reg);

/* The API key that hashes to sha256 (32 bytes), compared in constant time, or NULL. */
const ing_apikey_t *ing_registry_auth_key(const ing_registry_t *reg, const unsigned char *sha);

/* The API key whose value is key (len bytes), or NULL: ing_registry_auth_key of its SHA-256,
 * except that a value which opened a key before in this snapshot is found in the snapshot's
 * cache (keycache.h: a keyed hash and a constant-time compare of the value; a wrong value is
 * never cached). A new snapshot starts with an empty cache. Thread-safe. */
const ing_apikey_t *ing_registry_auth_key_value(const ing_registry_t *reg, const char *key,
                                                size_t len);

/* The app app_id (app ids are unique across tenants, cfg.c checks) with a non-empty
 * secret, or NULL. */
const ing_app_t *ing_registry_app(const ing_registry_t *reg, const char *app_id);

/* The tenant that declares robot (config "robots"), or NULL when no tenant does: then the
 * robot is shared, any tenant's tasks may name it (docs/tools.md "Task mode, robots and
 * priorities"). */
const ing_tenant_t *ing_registry_robot_owner(const ing_registry_t *reg, const char *robot);
/* The robots tenants declare, sorted by id: *n of them (valid while reg is referenced). */
const ing_robot_t *ing_registry_robots(const ing_registry_t *reg, size_t *n);
/*
 * The active secrets of an app or a webhook (its config object o) at now_ms: "secret", then
 * "previous_secret" while "previous_secret_expires" has not passed (or when it is absent),
 * docs/authentication.md "Rotating secrets". Fills out[0..2) and returns how many (0 when o has no
 * secret).
 */
size_t ing_registry_secrets(const cJSON *o, int64_t now_ms, const char *out[2]);

/* The tenants of the snapshot, in no particular order: i < ing_registry_tenant_count(). */
size_t ing_registry_tenant_count(const ing_registry_t *reg);

/* 1 when a tenant of reg takes OAuth access tokens (its "oauth"); reg may be NULL (0).
 * Counted when the snapshot is built: no walk of the tenants per request. */
int ing_registry_oauth_used(const ing_registry_t *reg);
const ing_tenant_t *ing_registry_tenant_at(const ing_registry_t *reg, size_t i);

/* Where opaque tokens are introspected: a resource (server NULL: /mcp, /v1 and every path
 * that is not /mcp/<server>; else /mcp/<server>) and the tenants with oauth.introspection
 * that serve it: n of them, tenant the first (the one when n is 1). */
typedef struct ing_introspector {
    const char *server;
    const ing_tenant_t *tenant;
    size_t n;
} ing_introspector_t;

/*
 * The one tenant whose introspection endpoint an opaque token presented at a resource may be
 * sent to (docs/authorization.md "Which tenant introspects where"): server is the <server> of
 * /mcp/<server>, NULL for /mcp, /v1 and any other path (every tenant serves those). NULL
 * unless exactly one tenant with oauth.introspection serves the resource; *n (may be NULL)
 * says how many do (0: opaque tokens are not taken there; 2 or more: they are ambiguous there
 * and refused). Computed when the snapshot is built; the token plays no part.
 */
const ing_tenant_t *ing_registry_introspector(const ing_registry_t *reg, const char *server,
                                              size_t *n);

/* The resources where two or more tenants introspect (ambiguous for opaque tokens), at most
 * max of them into out (valid while reg is): how many. The gateway-wide resource (server NULL)
 * comes first. For the log at swap and the admin API's config answer. */
size_t ing_registry_introspect_ambiguous(const ing_registry_t *reg, const ing_introspector_t **out,
                                         size_t max);

/* The warning for operators about an ambiguous resource a, into out (n bytes). */
void ing_registry_introspect_warning(const ing_introspector_t *a, char *out, size_t n);

/* The tenant id (its config document: webhooks, rate_limits, ...), or NULL. */
const ing_tenant_t *ing_registry_tenant(const ing_registry_t *reg, const char *id);

/* Every document of the snapshot (tenants, servers, tools, in the config file's form, each
 * with a "_field" member naming its registry field), for listings. */
const cJSON *ing_registry_docs(const ing_registry_t *reg);

const ing_server_t *ing_registry_server(const ing_registry_t *reg, const char *tenant,
                                        const char *name);
/* The published tool name of srv (tools only: a resource or prompt is no tool), or NULL. */
const ing_tool_t *ing_registry_tool(const ing_server_t *srv, const char *name);
/* The quarantined tool name of srv (pin.h: hidden from tools/list, its calls refused with the
 * reason), or NULL; ing_registry_tool never returns one. */
const ing_tool_t *ing_registry_quarantined(const ing_server_t *srv, const char *name);
/* How many tools of the snapshot are quarantined (reg may be NULL: 0), for the gauge. */
size_t ing_registry_quarantined_count(const ing_registry_t *reg);

/* The published object of srv of kind (ING_KIND_*; -1: any kind, names being unique per
 * tenant across kinds) named name, or NULL. */
const ing_tool_t *ing_registry_object(const ing_server_t *srv, int kind, const char *name);

/* The published resource of srv whose uri is uri (unique per server, cfg.c), or NULL. */
const ing_tool_t *ing_registry_resource(const ing_server_t *srv, const char *uri);

/* The first published template of srv (by name) whose uriTemplate matches uri (kinds.h:
 * kinds_template_match), with *vars a new object of the matched variables (the caller frees
 * it), or NULL (*vars NULL) when none matches or memory ran out. */
const ing_tool_t *ing_registry_template_match(const ing_server_t *srv, const char *uri,
                                              cJSON **vars);

#endif
