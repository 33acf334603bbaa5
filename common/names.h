/*
 * names.h - the one spelling of every name that crosses a process boundary: Redis keys and
 * key prefixes, Redis Pub/Sub channels, Kafka record headers and MCP protocol version
 * strings. The ingress, the worker, the Lua scripts (common/lua/, which get the key names
 * substituted when they are loaded: rscript.h) and the tests take them from here.
 * docs/internals.md lists the same keys, channels and headers; scripts/check-names.py (ctest
 * static/names) fails when the two differ, and when a C file spells one of these itself.
 *
 * NAMES_KEY_* ending in ':' are prefixes (the rest of the key follows, as the comment says);
 * the others are whole keys. NAMES_SUFFIX_* end keys built from a prefix and an id.
 */
#ifndef MCPQ_NAMES_H
#define MCPQ_NAMES_H

/* The hash tag every key starts with: all of them live in one Redis Cluster slot. */
#define NAMES_KEY_TAG "{mcpq}"

/* Redis keys (docs/internals.md "Redis keys"). */
#define NAMES_KEY_REGISTRY "{mcpq}:registry"           /* hash: tenants, servers, tools */
#define NAMES_KEY_REGISTRY_REV "{mcpq}:registry:rev"   /* its revision */
#define NAMES_KEY_CONFIG_EVENTS "{mcpq}:config:events" /* list: config file applied/refused */
#define NAMES_KEY_SESSION "{mcpq}:session:"            /* + session id */
#define NAMES_KEY_SESSIONS "{mcpq}:sessions:"          /* + tenant: its session ids */
#define NAMES_KEY_RSUBS "{mcpq}:rsubs:"                /* + session id: resources it watches */
#define NAMES_KEY_RESSTATE "{mcpq}:resstate:"          /* + tenant:server: static uris' state */
#define NAMES_KEY_RESULT "{mcpq}:result:"              /* + job id: the result record */
#define NAMES_KEY_REPLY "{mcpq}:reply:"                /* + ingress instance: its reply stream */
#define NAMES_KEY_CANCEL "{mcpq}:cancel:"              /* + job id */
#define NAMES_KEY_REQMAP "{mcpq}:reqmap:"              /* + scope:request id -> job id */
#define NAMES_KEY_FILE "{mcpq}:file:"                  /* + file id */
#define NAMES_KEY_FILES "{mcpq}:files:"                /* + tenant: its files by expiry */
#define NAMES_SUFFIX_SIZES ":sizes"                    /* {mcpq}:files:<tenant>:sizes */
#define NAMES_KEY_NONCE "{mcpq}:nonce:"                /* + app id:nonce */
#define NAMES_KEY_RATELIMIT "{mcpq}:rl:"               /* + tenant:k|a:id: a token bucket */
#define NAMES_KEY_AUTHFAIL "{mcpq}:af:"                /* + a:address | i:app id */
#define NAMES_KEY_IDEM "{mcpq}:idem:"                  /* + tenant:scope */
#define NAMES_KEY_TASK "{mcpq}:task:"                  /* + task id */
#define NAMES_SUFFIX_WAITERS ":waiters"                /* {mcpq}:task:<id>:waiters */
#define NAMES_KEY_TASK_LEASES "{mcpq}:task:leases"     /* running tasks by lease expiry */
#define NAMES_KEY_TASKS "{mcpq}:tasks:"                /* + tenant: its task ids */
#define NAMES_KEY_TASK_QUEUE "{mcpq}:tq:"              /* + robot id (or _any) */
#define NAMES_KEY_WH_DELIVERY "{mcpq}:whd:"            /* + delivery id */
#define NAMES_KEY_WH_INDEX "{mcpq}:whd:idx:"           /* + tenant */
#define NAMES_KEY_WH_DUE "{mcpq}:wh:due"               /* deliveries by when */
#define NAMES_KEY_WH_DISABLED "{mcpq}:wh:disabled:"    /* + tenant:webhook id */
#define NAMES_KEY_CHAN "{mcpq}:chan:"                  /* + channel id */
#define NAMES_SUFFIX_TURNS ":turns"                    /* {mcpq}:chan:<id>:turns */
#define NAMES_KEY_AGENTWAIT "{mcpq}:agentwait:"        /* + message id */
#define NAMES_KEY_AGENTREPLY "{mcpq}:agentreply:"      /* + message id */
#define NAMES_KEY_ASK "{mcpq}:ask:"                    /* + job id: its open question to the client */
#define NAMES_KEY_ASKED "{mcpq}:asked:"                /* + job id: it asked in an attempt */
#define NAMES_KEY_RSTATE_KEY "{mcpq}:rstate:key"       /* the fleet's requestState key */

/* Redis Pub/Sub channels. */
#define NAMES_CHAN_CANCEL "mcpq:cancel"
#define NAMES_CHAN_REGISTRY_CHANGED "mcpq:registry:changed"
#define NAMES_CHAN_SESSION_ENDED "mcpq:session:ended"
#define NAMES_CHAN_AGENTREPLY "mcpq:agentreply"
#define NAMES_CHAN_ANSWER "mcpq:answer" /* a job id: its question was answered */
#define NAMES_CHAN_RESOURCE_UPDATED "mcpq:resource:updated" /* {"tenant","server","uri"} */

/* Kafka record headers of a job (docs/internals.md "Kafka"). */
#define NAMES_HDR_JOB_ID "job_id"
#define NAMES_HDR_TRACEPARENT "traceparent"
#define NAMES_HDR_TRACESTATE "tracestate"
#define NAMES_HDR_JOBSIG "mcpq-sig" /* jobsig.h */

/* MCP protocol versions. MODERN: the stateless revision (per-request _meta version);
 * LATEST: the newest of the initialize era, what the ingress answers and the worker asks an
 * upstream for; DEFAULT: what a request without a version header is taken to speak (and the
 * only one with JSON-RPC batches). */
#define NAMES_PROTO_MODERN "2026-07-28"
#define NAMES_PROTO_LATEST "2025-11-25"
#define NAMES_PROTO_2025_06_18 "2025-06-18"
#define NAMES_PROTO_DEFAULT "2025-03-26"
#define NAMES_PROTO_2024_11_05 "2024-11-05"
/* What the ingress accepts, newest first (a list of string literals, for an initializer). */
#define NAMES_PROTO_SUPPORTED                                                                      \
    NAMES_PROTO_MODERN, NAMES_PROTO_LATEST, NAMES_PROTO_2025_06_18, NAMES_PROTO_DEFAULT
/* The initialize-era versions the worker accepts from an upstream MCP server. */
#define NAMES_PROTO_UPSTREAM_LEGACY                                                                \
    NAMES_PROTO_LATEST, NAMES_PROTO_2025_06_18, NAMES_PROTO_DEFAULT, NAMES_PROTO_2024_11_05
/* The _meta field of a modern request naming its version. */
#define NAMES_META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"

#endif
