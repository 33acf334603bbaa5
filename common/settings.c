#include "settings.h"

#include "err.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* T_SECRET and T_URL are strings too; --print-config never shows a T_SECRET value nor the
 * password of a T_URL (user:password@). */
typedef enum { T_STR, T_INT, T_SECRET, T_URL } set_type_t;

typedef struct set_def {
    const char *env;
    const char *flag;
    set_type_t type;
    const char *def; /* NULL: unset */
    long long min, max;
    unsigned who;
    size_t off;
    const char *help;
} set_def_t;

#define S(f) offsetof(mcpq_settings_t, f)
#define ALL (SET_INGRESS | SET_WORKER)
#define ING SET_INGRESS
#define WRK SET_WORKER

static const set_def_t defs[] = {
    {"MCPQ_CONFIG", "config", T_STR, NULL, 0, 0, ING, S(config),
     "config file (docs/config-file.md); loaded into Redis at start-up (and when it changes, "
     "with MCPQ_CONFIG_WATCH_MS)"},
    {"MCPQ_CONFIG_WATCH_MS", "config-watch-ms", T_INT, "0", 0, 600000, ING, S(config_watch_ms),
     "how often the ingress reads MCPQ_CONFIG for a change (a Kubernetes ConfigMap update "
     "included), in ms; a changed file is checked and applied to the registry once for the "
     "fleet, a bad one refused (docs/config-file.md, \"Watching the file\"); 0: read at "
     "start-up only"},
    {"MCPQ_FEDERATE_REFRESH_MS", "federate-refresh-ms", T_INT, "600000", 200, 86400000, ING,
     S(federate_refresh_ms),
     "how often the ingress imports a federated server's upstream again after a successful "
     "import, in ms (docs/tools.md, \"Upstream MCP servers\"); with federate.pin a changed tool "
     "definition is quarantined at the first import that sees it (docs/security.md)"},
    {"MCPQ_CONFIG_PRUNE", "config-prune", T_INT, "0", 0, 1, ING, S(config_prune),
     "1: applying a changed MCPQ_CONFIG also deletes the servers and tools of its tenants that "
     "it does not name, as mcpq-ingress --apply --prune"},
    {"MCPQ_LISTEN", "listen", T_STR, "127.0.0.1:8080", 0, 0, ING, S(listen),
     "ingress listen address host:port, [IPv6]:port ([::]:port: IPv6 and IPv4) or :port"},
    {"MCPQ_OPS_LISTEN", "ops-listen", T_STR, "", 0, 0, ING, S(ops_listen),
     "ingress operations listener (same forms as MCPQ_LISTEN): when set, /metrics, /healthz, "
     "/readyz and /admin are served only there and MCPQ_LISTEN serves only clients (empty: "
     "everything on MCPQ_LISTEN)"},
    {"MCPQ_METRICS_TENANTS_MAX", "metrics-tenants-max", T_INT, "100", 0, 10000, ING,
     S(metrics_tenants_max),
     "distinct tenant label values of the ingress's per-tenant series per process; later "
     "tenants are counted under tenant=\"_other\" (docs/operations.md \"Metrics\")"},
    {"MCPQ_KAFKA_BROKERS", "kafka-brokers", T_STR, NULL, 0, 0, ALL, S(kafka_brokers),
     "Kafka bootstrap servers (host:port,...); required"},
    {"MCPQ_REDIS_URL", "redis-url", T_URL, "redis://127.0.0.1:6379/0", 0, 0, ALL, S(redis_url),
     "Redis URL: redis://[user[:password]@]host[:port][/db], rediss://... (TLS), "
     "unix:///path/redis.sock?db=N; IPv6 as [::1]; user and password percent-encoded "
     "(docs/production.md)"},
    {"MCPQ_REDIS_PASSWORD", "redis-password", T_SECRET, NULL, 0, 0, ALL, S(redis_password),
     "the Redis password, for a URL that names none (e.g. from a Kubernetes secretKeyRef); "
     "not together with MCPQ_REDIS_PASSWORD_FILE or a password in MCPQ_REDIS_URL"},
    {"MCPQ_REDIS_PASSWORD_FILE", "redis-password-file", T_STR, NULL, 0, 0, ALL,
     S(redis_password_file),
     "file holding the Redis password (a trailing newline is not part of it), e.g. a mounted "
     "Kubernetes Secret; not together with a password in MCPQ_REDIS_URL"},
    {"MCPQ_REDIS_TLS_CA_FILE", "redis-tls-ca-file", T_STR, NULL, 0, 0, ALL, S(redis_tls_ca_file),
     "rediss://: PEM file of the CAs that sign the server's certificate (unset: the system's "
     "trust store); the certificate and its host name are always verified"},
    {"MCPQ_REDIS_TLS_CERT_FILE", "redis-tls-cert-file", T_STR, NULL, 0, 0, ALL,
     S(redis_tls_cert_file),
     "rediss://: PEM client certificate (chain) for servers that require mutual TLS"},
    {"MCPQ_REDIS_TLS_KEY_FILE", "redis-tls-key-file", T_STR, NULL, 0, 0, ALL, S(redis_tls_key_file),
     "rediss://: PEM private key of MCPQ_REDIS_TLS_CERT_FILE"},
    {"MCPQ_REDIS_TLS_SERVER_NAME", "redis-tls-server-name", T_STR, NULL, 0, 0, ALL,
     S(redis_tls_server_name),
     "rediss://: the name sent as SNI and checked against the certificate (unset: the URL's "
     "host)"},
    {"MCPQ_REDIS_SENTINELS", "redis-sentinels", T_STR, NULL, 0, 0, ALL, S(redis_sentinels),
     "host:port,... of Redis Sentinels: the master is looked up through them and followed "
     "across failovers; MCPQ_REDIS_URL then gives scheme, user, password and db, and its "
     "host is the master's name unless MCPQ_REDIS_MASTER is set"},
    {"MCPQ_REDIS_MASTER", "redis-master", T_STR, NULL, 0, 0, ALL, S(redis_master),
     "with MCPQ_REDIS_SENTINELS: the master's name as the sentinels know it"},
    {"MCPQ_REDIS_SENTINEL_PASSWORD", "redis-sentinel-password", T_SECRET, NULL, 0, 0, ALL,
     S(redis_sentinel_password),
     "with MCPQ_REDIS_SENTINELS: the password of the sentinels themselves (their requirepass), "
     "when they have one"},
    {"MCPQ_REDIS_SENTINEL_PASSWORD_FILE", "redis-sentinel-password-file", T_STR, NULL, 0, 0, ALL,
     S(redis_sentinel_password_file),
     "file holding MCPQ_REDIS_SENTINEL_PASSWORD (a trailing newline is not part of it)"},
    {"MCPQ_REDIS_CLUSTER", "redis-cluster", T_INT, "0", 0, 1, ALL, S(redis_cluster),
     "1: MCPQ_REDIS_URL names a node of a Redis Cluster (e.g. its configuration endpoint); "
     "every mcpq key is in the slot of {mcpq}, and connections go to the primary that serves "
     "it, found again after a MOVED (docs/redis.md)"},
    {"MCPQ_ADMIN_TOKEN", "admin-token", T_SECRET, NULL, 0, 0, ING, S(admin_token),
     "operator token for /admin (unset: admin API off)"},
    {"MCPQ_MAX_BODY_BYTES", "max-body-bytes", T_INT, "1048576", 1024, 64LL << 20, ING,
     S(max_body_bytes),
     "request body limit in bytes once the headers name a known credential (larger: 413)"},
    {"MCPQ_PREAUTH_BODY_BYTES", "preauth-body-bytes", T_INT, "65536", 1024, 64LL << 20, ING,
     S(preauth_body_bytes),
     "request body limit in bytes while the headers name no known credential (an API key of a "
     "tenant, a known X-App-Id with a fresh X-Timestamp, the admin token on /admin); larger: "
     "413 before the body is read"},
    {"MCPQ_MAX_BODY_MEMORY_BYTES", "max-body-memory-bytes", T_INT, "268435456", 1024, 1LL << 40,
     ING, S(max_body_memory_bytes),
     "request body bytes one ingress holds in memory at once, all requests together; a request "
     "whose body would pass it gets 503 with Retry-After"},
    {"MCPQ_PAGE_SIZE", "page-size", T_INT, "100", 1, 1000, ING, S(page_size),
     "page size of tools/list, resources/list, resources/templates/list and prompts/list"},
    {"MCPQ_LIST_TTL_MS", "list-ttl-ms", T_INT, "0", 0, 86400000, ING, S(list_ttl_ms),
     "ttlMs of list results and server/discover (the stateless protocol version): how long a "
     "client may consider "
     "them fresh (0: immediately stale; clients rely on list_changed notifications)"},
    {"MCPQ_RESOURCE_MAX_BYTES", "resource-max-bytes", T_INT, "1048576", 1, 64LL << 20, ING,
     S(resource_max_bytes),
     "largest static resource content (text, or blob decoded) the config file and the admin "
     "API accept; larger content belongs to an executor"},
    {"MCPQ_ALLOWED_ORIGINS", "allowed-origins", T_STR, "", 0, 0, ING, S(allowed_origins),
     "comma list of scheme://host[:port] (port may be *); a present Origin outside it gets 403 "
     "(empty: localhost and 127.0.0.1 on any port)"},
    {"MCPQ_ALLOWED_HOSTS", "allowed-hosts", T_STR, "", 0, 0, ING, S(allowed_hosts),
     "comma list of host[:port] (port may be *); a Host outside it gets 403 (empty: any)"},
    {"MCPQ_IDEMPOTENCY_TTL_S", "idempotency-ttl-s", T_INT, "86400", 1, 30LL * 86400, ING,
     S(idempotency_ttl_s), "idempotency window in seconds"},
    {"MCPQ_WEBHOOK_RETRY_SCHEDULE", "webhook-retry-schedule", T_STR,
     "0,5,300,1800,7200,18000,36000,36000", 0, 0, ING, S(webhook_retry_schedule),
     "seconds before each webhook attempt (attempt 1 waits the first entry after the event, "
     "each later one that long after the previous attempt); when the list is used up the "
     "delivery is failed"},
    {"MCPQ_WEBHOOK_ALLOW_PRIVATE", "webhook-allow-private", T_INT, "0", 0, 1, ING,
     S(webhook_allow_private),
     "1 allows loopback and private webhook targets (0: loopback, private, link-local, CGNAT, "
     "multicast, unspecified and other special-purpose addresses are refused, checked on the "
     "address connected to)"},
    {"MCPQ_WEBHOOK_MAX_INFLIGHT", "webhook-max-inflight", T_INT, "32", 1, 10000, ING,
     S(webhook_max_inflight),
     "webhook deliveries one ingress sends at once (the rest wait their turn in Redis)"},
    {"MCPQ_ROBOT_ID", "robot-id", T_STR, NULL, 0, 0, WRK, S(robot_id),
     "worker: the robot this worker is"},
    {"MCPQ_TOPIC_JOBS", "topic-jobs", T_STR, "mcpq.jobs", 0, 0, ALL | SET_BROKER, S(topic_jobs),
     "Kafka topic of tools/call jobs"},
    {"MCPQ_JOB_SIGNING_KEY", "job-signing-key", T_SECRET, NULL, 0, 0, ALL, S(job_signing_key),
     "key (32 to 1024 bytes) of the HMAC-SHA256 signature of every job record (Kafka header "
     "mcpq-sig): the ingress signs each job, a worker refuses a record without a valid one; the "
     "same on every ingress and worker (unset: jobs are neither signed nor checked, so anyone "
     "who can write to the jobs topic runs programs on the workers; both binaries warn at "
     "start-up)"},
    {"MCPQ_JOB_SIGNING_KEY_FILE", "job-signing-key-file", T_STR, NULL, 0, 0, ALL,
     S(job_signing_key_file),
     "file holding MCPQ_JOB_SIGNING_KEY (a trailing newline is not part of the key), e.g. a "
     "mounted Kubernetes Secret; not together with MCPQ_JOB_SIGNING_KEY"},
    {"MCPQ_JOB_SIGNING_KEY_PREVIOUS", "job-signing-key-previous", T_SECRET, NULL, 0, 0, WRK,
     S(job_signing_key_previous),
     "worker: a second key whose signatures are accepted too, while a key rotation is under way "
     "(docs/operations.md)"},
    {"MCPQ_JOB_SIGNING_KEY_PREVIOUS_FILE", "job-signing-key-previous-file", T_STR, NULL, 0, 0, WRK,
     S(job_signing_key_previous_file),
     "worker: file holding MCPQ_JOB_SIGNING_KEY_PREVIOUS; not together with it"},
    {"MCPQ_GROUP_ID", "group-id", T_STR, "mcpq-workers", 0, 0, WRK, S(group_id),
     "worker consumer group"},
    {"MCPQ_WORKER_ID", "worker-id", T_STR, NULL, 0, 0, WRK, S(worker_id),
     "stable worker name; also the Kafka group.instance.id (static membership)"},
    {"MCPQ_INSTANCE_ID", "instance-id", T_STR, NULL, 0, 0, ING, S(instance_id),
     "ingress replica name (default: host-pid-random)"},
    {"MCPQ_LOG_LEVEL", "log-level", T_STR, "info", 0, 0, ALL | SET_BROKER, S(log_level),
     "debug, info, warn or error"},
    {"MCPQ_ACCESS_LOG", "access-log", T_INT, "1", 0, 1, ING, S(access_log),
     "1: the ingress logs one JSON line per HTTP request when it ends, level info "
     "(docs/operations.md, \"Access log\"); 0: none"},
    {"MCPQ_READY_FILE", "ready-file", T_STR, NULL, 0, 0, ALL | SET_BROKER, S(ready_file),
     "file written once the process is ready (the local launcher waits for it)"},
    {"MCPQ_METRICS_LISTEN", "metrics-listen", T_STR, "", 0, 0, WRK, S(metrics_listen),
     "worker: its operations listener (same forms as MCPQ_LISTEN) for GET /metrics, /healthz "
     "and /readyz (empty: none)"},
    {"MCPQ_THREADS", "threads", T_INT, "2", 1, 64, ING, S(threads),
     "HTTP threads (each an epoll loop); constant whatever the load"},
    {"MCPQ_MAX_CONNECTIONS", "max-connections", T_INT, "20000", 16, 1000000, ING,
     S(max_connections), "concurrent HTTP connections"},
    {"MCPQ_CONN_MEMORY_LIMIT", "conn-memory-limit", T_INT, "8192", 4096, 1 << 20, ING,
     S(conn_memory_limit), "per-connection memory pool (headers) in bytes"},
    {"MCPQ_MEMORY_TRIM_CALLS", "memory-trim-calls", T_INT, "1000", 0, 1000000, ING,
     S(memory_trim_calls),
     "once the waiting calls are this many fewer than their peak since the last trim, the "
     "ingress returns the heap they freed to the system (malloc_trim, at most every 250 ms); "
     "0: never"},
    {"MCPQ_CONN_TIMEOUT_S", "conn-timeout-s", T_INT, "120", 1, 86400, ING, S(conn_timeout_s),
     "idle connection timeout in seconds"},
    {"MCPQ_SSE_KEEPALIVE_MS", "sse-keepalive-ms", T_INT, "1000", 100, 600000, ING,
     S(sse_keepalive_ms),
     "a call whose client accepts SSE gets a keep-alive comment after this long without a frame "
     "(a closed stream is noticed on the next write)"},
    {"MCPQ_LISTEN_KEEPALIVE_MS", "listen-keepalive-ms", T_INT, "20000", 1000, 600000, ING,
     S(listen_keepalive_ms),
     "a notification stream (GET /mcp, subscriptions/listen) gets a keep-alive comment after "
     "this long without a frame (a client gone is noticed on a write, so its stream counts "
     "against MCPQ_MAX_LISTENERS up to about twice this long)"},
    {"MCPQ_MAX_LISTENERS", "max-listeners", T_INT, "10000", 0, 1000000, ING, S(max_listeners),
     "notification streams (GET /mcp, subscriptions/listen) one ingress holds open at once; "
     "more get 503"},
    {"MCPQ_MAX_RESOURCE_SUBSCRIPTIONS", "max-resource-subscriptions", T_INT, "100", 1, 10000, ING,
     S(max_resource_subscriptions),
     "resource uris one session (resources/subscribe) or one subscriptions/listen stream "
     "(resourceSubscriptions) may watch; one more is -32602"},
    {"MCPQ_DEFAULT_TIMEOUT_MS", "default-timeout-ms", T_INT, "60000", 100, 86400000LL, ALL,
     S(default_timeout_ms), "tool timeout when a version sets none"},
    {"MCPQ_KAFKA_MESSAGE_TIMEOUT_MS", "kafka-message-timeout-ms", T_INT, "5000", 100, 300000, ING,
     S(kafka_message_timeout_ms), "how long a job may wait to reach Kafka (then -32603)"},
    {"MCPQ_KAFKA_FETCH_WAIT_MS", "kafka-fetch-wait-ms", T_INT, "10", 1, 10000, WRK,
     S(kafka_fetch_wait_ms),
     "worker: longest a fetch waits at the broker for new jobs (pickup latency vs idle fetches)"},
    {"MCPQ_REDIS_TIMEOUT_MS", "redis-timeout-ms", T_INT, "1000", 50, 60000, ALL,
     S(redis_timeout_ms), "connect and command timeout for Redis"},
    {"MCPQ_REDIS_WAIT_REPLICAS", "redis-wait-replicas", T_INT, "0", 0, 16, ALL,
     S(redis_wait_replicas),
     "replicas that must acknowledge (Redis WAIT) a worker's results and task hand-offs before "
     "their Kafka offset is stored, and an ingress' new tasks before it answers (0: off; "
     "docs/redis.md)"},
    {"MCPQ_REDIS_WAIT_TIMEOUT_MS", "redis-wait-timeout-ms", T_INT, "500", 1, 60000, ALL,
     S(redis_wait_timeout_ms),
     "with MCPQ_REDIS_WAIT_REPLICAS: how long one WAIT may take; fewer acknowledgements by then "
     "and the write is retried (must be below MCPQ_REDIS_TIMEOUT_MS)"},
    {"MCPQ_WORKER_REDIS_LOST_LEAVE_MS", "worker-redis-lost-leave-ms", T_INT, "5000", 0, 3600000LL,
     WRK, S(worker_redis_lost_leave_ms),
     "worker: after this long without Redis it leaves the consumer group, so its partitions "
     "go to the other workers, and joins again once Redis answers (0: never leaves; "
     "docs/reliability.md)"},
    {"MCPQ_REDIS_POOL_SIZE", "redis-pool-size", T_INT, "8", 1, 256, ING, S(redis_pool_size),
     "Redis connections the HTTP threads share"},
    {"MCPQ_REDIS_POOL_MIN_IDLE", "redis-pool-min-idle", T_INT, "2", 1, 256, ING,
     S(redis_pool_min_idle),
     "idle Redis connections a background thread keeps ready (capped at MCPQ_REDIS_POOL_SIZE), so "
     "an HTTP thread never connects (docs/redis.md, \"The connection pool\")"},
    {"MCPQ_REDIS_POOL_WAIT_MS", "redis-pool-wait-ms", T_INT, "100", 0, 10000, ING,
     S(redis_pool_wait_ms),
     "longest an HTTP thread waits for an idle Redis connection; then what needed Redis fails as "
     "when Redis is unreachable (503, or JSON-RPC -32603 for MCP)"},
    {"MCPQ_SESSION_TTL_S", "session-ttl-s", T_INT, "86400", 60, 30LL * 86400, ING, S(session_ttl_s),
     "idle lifetime of an Mcp-Session-Id"},
    {"MCPQ_CHANNEL_MAX_TURNS", "channel-max-turns", T_INT, "50", 1, 10000, WRK,
     S(channel_max_turns),
     "worker: turns a conversation channel keeps (the oldest are dropped first)"},
    {"MCPQ_CHANNEL_MAX_BYTES", "channel-max-bytes", T_INT, "262144", 1024, 64LL << 20, WRK,
     S(channel_max_bytes),
     "worker: bytes of JSON turns a conversation channel keeps (the oldest are dropped first)"},
    {"MCPQ_CHANNEL_TTL_S", "channel-ttl-s", T_INT, "86400", 60, 30LL * 86400, ALL, S(channel_ttl_s),
     "idle lifetime of a channel from open_channel (refreshed on use); a session's channel "
     "lives as long as MCPQ_SESSION_TTL_S"},
    {"MCPQ_RESULT_TTL_S", "result-ttl-s", T_INT, "86400", 60, 30LL * 86400, WRK, S(result_ttl_s),
     "how long results stay in Redis"},
    {"MCPQ_MAX_OUTPUT_BYTES", "max-output-bytes", T_INT, "4194304", 1024, 256LL << 20, WRK,
     S(max_output_bytes), "executor output limit (stdout, HTTP body)"},
    {"MCPQ_MAX_INFLIGHT_JOBS", "max-inflight-jobs", T_INT, "20000", 1, 1000000, WRK,
     S(max_inflight_jobs),
     "jobs one worker runs at once (then it pauses consuming); those of executors other than "
     "builtin, with a warning, at most (open-file limit - 256) / 4"},
    {"MCPQ_INPUT_TIMEOUT_MS", "input-timeout-ms", T_INT, "300000", 1000, 86400000, ALL,
     S(input_timeout_ms),
     "how long a tool's question to the client (elicitation, sampling, roots) waits for the "
     "answer, bounded by the call's deadline; also the lifetime of a multi round-trip requestState "
     "(docs/tools.md, \"Asking the user\")"},
    {"MCPQ_INPUT_MAX_BYTES", "input-max-bytes", T_INT, "1048576", 1024, 64LL << 20, ALL,
     S(input_max_bytes),
     "largest question a tool may ask and largest answer a client may give, in bytes of JSON"},
    {"MCPQ_REQUEST_STATE_KEY", "request-state-key", T_SECRET, NULL, 0, 0, ING, S(request_state_key),
     "key (32 to 1024 bytes) of the HMAC-SHA256 over the requestState of input-required "
     "results (multi round-trip requests); the same on every ingress (unset: the fleet shares "
     "a random key kept in Redis, docs/internals.md)"},
    {"MCPQ_KILL_GRACE_MS", "kill-grace-ms", T_INT, "2000", 0, 600000, WRK, S(kill_grace_ms),
     "exec: time between SIGTERM and SIGKILL of the process group"},
    {"MCPQ_SHUTDOWN_GRACE_MS", "shutdown-grace-ms", T_INT, "10000", 0, 600000, ALL,
     S(shutdown_grace_ms),
     "on SIGTERM: how long in-flight calls may finish (ingress: after MCPQ_DRAIN_DELAY_MS, "
     "then the rest are answered -32603; worker: then unfinished jobs are released and "
     "delivered again)"},
    {"MCPQ_DRAIN_DELAY_MS", "drain-delay-ms", T_INT, "0", 0, 600000, ING, S(drain_delay_ms),
     "on SIGTERM: how long the ingress keeps accepting and serving while /readyz already "
     "answers 503 (so a load balancer stops sending before the listen socket closes); a "
     "second SIGTERM or SIGINT cuts it short. MCPQ_SHUTDOWN_GRACE_MS follows it"},
    {"MCPQ_RATE_LIMIT_PER_S", "rate-limit-per-s", T_INT, "1000", 0, 1000000000, ING,
     S(rate_limit_per_s),
     "requests per second each API key and each app may make when its tenant's config sets no "
     "rate_limits (0: unlimited); over it: 429 with Retry-After"},
    {"MCPQ_RATE_LIMIT_BURST", "rate-limit-burst", T_INT, "0", 0, 1000000000000LL, ING,
     S(rate_limit_burst), "bucket size for MCPQ_RATE_LIMIT_PER_S (0: twice the rate)"},
    {"MCPQ_RATE_LIMIT_LEASE_MS", "rate-limit-lease-ms", T_INT, "50", 1, 60000, ING,
     S(rate_limit_lease_ms),
     "how much of a rate one replica takes from the shared bucket in Redis at a time (fewer "
     "Redis round trips vs. how far the fleet may overshoot a burst)"},
    {"MCPQ_TENANT_MAX_STREAMS", "tenant-max-streams", T_INT, "1000", 0, 1000000, ING,
     S(tenant_max_streams),
     "notification streams (GET /mcp, subscriptions/listen) one tenant may hold open on one "
     "ingress when its config sets no quotas.notification_streams (0: no limit); more get 429, "
     "-32029"},
    {"MCPQ_TENANT_MAX_SESSIONS", "tenant-max-sessions", T_INT, "10000", 0, 1000000000, ING,
     S(tenant_max_sessions),
     "live Mcp-Session-Ids one tenant may hold across the fleet when its config sets no "
     "quotas.sessions (0: no limit); initialize past it gets 429, -32029"},
    {"MCPQ_TENANT_MAX_TASKS", "tenant-max-tasks", T_INT, "100000", 0, 1000000000, ING,
     S(tenant_max_tasks),
     "tasks one tenant may have in retention (any state, until MCPQ_TASK_RETENTION_S after "
     "their last change) across the fleet when its config sets no quotas.tasks (0: no limit); "
     "a new task past it gets 429, -32029"},
    {"MCPQ_TENANT_MAX_FILE_BYTES", "tenant-max-file-bytes", T_INT, "10737418240", 0, 1LL << 50, ING,
     S(tenant_max_file_bytes),
     "bytes of files one tenant may have stored or presigned (until MCPQ_FILES_TTL_S after "
     "each presign) across the fleet when its config sets no quotas.file_bytes (0: no limit; "
     "default 10 GiB); a presign past it gets 429"},
    {"MCPQ_AUTH_FAIL_PER_MIN", "auth-fail-per-min", T_INT, "20", 0, 1000000, ING,
     S(auth_fail_per_min),
     "failed authentications (a wrong, malformed, stale or replayed credential) one client "
     "address may make per minute, counted for the fleet in Redis; past it every request with "
     "a credential from that address gets 429 with Retry-After (0: no limit)"},
    {"MCPQ_AUTH_FAIL_ID_PER_MIN", "auth-fail-id-per-min", T_INT, "20", 0, 1000000, ING,
     S(auth_fail_id_per_min),
     "failed authentications against one app id per minute, from all addresses; past it "
     "signed requests naming that app get 429 with Retry-After (0: no limit)"},
    {"MCPQ_TRUSTED_PROXIES", "trusted-proxies", T_STR, "", 0, 0, ING, S(trusted_proxies),
     "comma list of addresses and CIDR blocks of reverse proxies whose X-Forwarded-For names "
     "the client address the failure limits count (empty: the TCP peer is the client)"},
    {"MCPQ_APP_SECRET_MIN_BYTES", "app-secret-min-bytes", T_INT, "32", 1, 4096, ING,
     S(app_secret_min_bytes),
     "shortest app secret (HMAC request signing) the config and the admin API accept; below "
     "32 the ingress warns at start-up (scripts/mcpq-local sets 1 so short demo secrets work)"},
    {"MCPQ_OAUTH_CLOCK_SKEW_S", "oauth-clock-skew-s", T_INT, "60", 0, 600, ING,
     S(oauth_clock_skew_s),
     "OAuth bearer tokens: seconds of clock difference allowed when exp, nbf and iat are checked"},
    {"MCPQ_OAUTH_FETCH_TIMEOUT_MS", "oauth-fetch-timeout-ms", T_INT, "5000", 100, 60000, ING,
     S(oauth_fetch_timeout_ms),
     "OAuth: time limit of one request to an authorization server (metadata discovery, JWKS, "
     "token introspection)"},
    {"MCPQ_OAUTH_JWKS_MIN_REFRESH_S", "oauth-jwks-min-refresh-s", T_INT, "30", 1, 86400, ING,
     S(oauth_jwks_min_refresh_s),
     "OAuth: a token whose kid names no known key refetches its issuer's keys at most once per "
     "this many seconds; also the shortest key lifetime when below 60"},
    {"MCPQ_OAUTH_JWKS_MAX_AGE_S", "oauth-jwks-max-age-s", T_INT, "3600", 1, 7LL * 86400, ING,
     S(oauth_jwks_max_age_s),
     "OAuth: longest time an issuer's keys are used before they are fetched again (the JWKS "
     "response's Cache-Control max-age or Expires, at least 60 s, at most this; without "
     "either: this); a failed refresh keeps the keys it had"},
    {"MCPQ_OAUTH_INTROSPECTION_CACHE", "oauth-introspection-cache", T_INT, "10000", 1, 1000000, ING,
     S(oauth_introspection_cache),
     "OAuth: token introspection answers kept in memory (the oldest go first); keyed by the "
     "SHA-256 of the token, never the token"},
    {"MCPQ_OAUTH_INTROSPECTION_TTL_S", "oauth-introspection-ttl-s", T_INT, "60", 1, 86400, ING,
     S(oauth_introspection_ttl_s),
     "OAuth: longest time an active introspection answer is reused (also never past the "
     "token's exp); inactive answers are kept 10 s"},
    {"MCPQ_TASK_SLOTS", "task-slots", T_INT, "4", 1, 10000, WRK, S(task_slots),
     "worker without a robot id: tasks without a RobotId it runs at once (a robot runs one)"},
    {"MCPQ_TASK_LEASE_MS", "task-lease-ms", T_INT, "15000", 1000, 3600000, ALL, S(task_lease_ms),
     "a running task whose worker has not renewed its lease for this long (renewed every "
     "second) goes back to waiting, or is terminated past MCPQ_TASK_MAX_ATTEMPTS"},
    {"MCPQ_TASK_MAX_ATTEMPTS", "task-max-attempts", T_INT, "3", 1, 100, WRK, S(task_max_attempts),
     "runs a task gets when its workers die under it"},
    {"MCPQ_TASK_RETENTION_S", "task-retention-s", T_INT, "604800", 60, 365LL * 86400, ALL,
     S(task_retention_s), "how long a task (and its result) is kept after its last change"},
    {"MCPQ_PUBLIC_URL", "public-url", T_STR, NULL, 0, 0, ING, S(public_url),
     "scheme://host[:port] the ingress is reached at, for the absolute upload and download URLs "
     "of files (unset: http:// and the request's Host when it is loopback or listed in "
     "MCPQ_ALLOWED_HOSTS; any other Host gets no URL: presign 503, attachments -32603)"},
    {"MCPQ_FILES_DIR", "files-dir", T_STR, "/var/lib/mcpq/files", 0, 0, ING, S(files_dir),
     "where uploaded files are stored (a volume every replica shares; created if missing; when "
     "it cannot be created the files API answers 503); scripts/mcpq-local uses <state dir>/files"},
    {"MCPQ_FILES_SECRET", "files-secret", T_SECRET, NULL, 0, 0, ING, S(files_secret),
     "key of the HMAC-SHA256 signatures of upload and download URLs (unset: random per process, "
     "so every replica must be given the same one when there is more than one)"},
    {"MCPQ_FILES_MAX_BYTES", "files-max-bytes", T_INT, "104857600", 1, 1LL << 40, ING,
     S(files_max_bytes), "largest file POST /v1/files/presign-upload accepts (100 MiB)"},
    {"MCPQ_FILES_TTL_S", "files-ttl-s", T_INT, "86400", 1, 365LL * 86400, ING, S(files_ttl_s),
     "lifetime of a file from its presign; then its metadata expires and the sweep deletes it"},
    {"MCPQ_FILES_URL_TTL_S", "files-url-ttl-s", T_INT, "900", 1, 7LL * 86400, ING,
     S(files_url_ttl_s),
     "lifetime of a signed upload or download URL (an attachment's URL also lasts the call's "
     "timeout)"},
    {"MCPQ_FILES_SWEEP_S", "files-sweep-s", T_INT, "60", 1, 86400, ING, S(files_sweep_s),
     "how often each ingress deletes stored files whose metadata has expired"},
    {"MCPQ_PARTITIONS", "partitions", T_INT, "6", 1, 10000, ALL | SET_BROKER, S(partitions),
     "partitions of the jobs topic and its .dlq when mcpq creates them (ingress and worker: "
     "at start-up when missing, docs/kafka.md; devbroker: always); the most workers that "
     "consume at once"},
    {"MCPQ_REPLICATION_FACTOR", "replication-factor", T_INT, "-1", -1, 32, ALL,
     S(replication_factor),
     "replication factor of the topics mcpq creates (-1: the broker's default.replication."
     "factor, Kafka 2.4 or later)"},
    {"MCPQ_TOPIC_CREATE", "topic-create", T_INT, "1", 0, 1, ALL, S(topic_create),
     "1: at start-up create the jobs topic and its .dlq when missing (Admin API; needs the "
     "Create ACL, else a log line says what to create); 0: only check that they exist"},
    {"MCPQ_KAFKA_PROPERTIES", "kafka-properties", T_STR, NULL, 0, 0, ALL, S(kafka_properties),
     "Kafka client properties file (key=value lines, # comments, as the Java clients and "
     "kcat -F read): any librdkafka 2.0.2 property (security.protocol, sasl.*, ssl.*, ...); "
     "MCPQ_KAFKA_PROP_<NAME>=value and MCPQ_KAFKA_PROP_<NAME>_FILE=/path override single "
     "ones (SECURITY_PROTOCOL: security.protocol); docs/kafka.md"},
    {"MCPQ_BROKERS", "brokers", T_INT, "1", 1, 16, SET_BROKER, S(brokers),
     "devbroker: number of in-memory brokers"},
    {"MCPQ_DEVBROKER_TOPICS", "devbroker-topics", T_INT, "1", 0, 1, SET_BROKER, S(db_topics),
     "devbroker: 1 creates the jobs topic and its .dlq at start; 0 leaves them to the clients "
     "(CreateTopics, through the front)"},
    {"MCPQ_DEVBROKER_SASL", "devbroker-sasl", T_SECRET, NULL, 0, 0, SET_BROKER, S(db_sasl),
     "devbroker: user:password; clients must authenticate with SASL as that user (through "
     "the front; mechanisms: MCPQ_DEVBROKER_SASL_MECHANISMS)"},
    {"MCPQ_DEVBROKER_SASL_MECHANISMS", "devbroker-sasl-mechanisms", T_STR, "PLAIN", 0, 0,
     SET_BROKER, S(db_sasl_mechanisms),
     "devbroker: the SASL mechanisms offered with MCPQ_DEVBROKER_SASL, comma-separated: "
     "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"},
    {"MCPQ_DEVBROKER_TLS_CERT", "devbroker-tls-cert", T_STR, NULL, 0, 0, SET_BROKER, S(db_tls_cert),
     "devbroker: PEM certificate (chain) of a TLS listener (through the front)"},
    {"MCPQ_DEVBROKER_TLS_KEY", "devbroker-tls-key", T_STR, NULL, 0, 0, SET_BROKER, S(db_tls_key),
     "devbroker: PEM private key of MCPQ_DEVBROKER_TLS_CERT"},
    {"MCPQ_DEVBROKER_TLS_CA", "devbroker-tls-ca", T_STR, NULL, 0, 0, SET_BROKER, S(db_tls_ca),
     "devbroker: CA file; set, clients must present a certificate it signed (mutual TLS)"},
    {"MCPQ_DEVBROKER_DENY_CREATE", "devbroker-deny-create", T_INT, "0", 0, 1, SET_BROKER,
     S(db_deny_create),
     "devbroker: 1 answers CreateTopics with TOPIC_AUTHORIZATION_FAILED (a client without the "
     "Create ACL)"},
    {"MCPQ_DEVBROKER_CONTROL", "devbroker-control", T_STR, NULL, 0, 0, SET_BROKER, S(db_control),
     "devbroker: path of a Unix socket (0600) taking fault-injection commands: brokers down "
     "and up, leader moves, request errors, round-trip time (docs/kafka.md, \"Fault "
     "injection\")"},
};

#define NDEFS (sizeof(defs) / sizeof(defs[0]))

int settings_is_name(const char *name)
{
    for (size_t i = 0; name && i < NDEFS; i++)
        if (strcmp(defs[i].env, name) == 0)
            return 1;
    return 0;
}

static void set_value(mcpq_settings_t *s, const set_def_t *d, const char *v, long long n)
{
    char *base = (char *)s;
    if (d->type != T_INT)
        *(const char **)(base + d->off) = v;
    else
        *(long long *)(base + d->off) = n;
}

static int apply(mcpq_settings_t *s, const set_def_t *d, const char *v, const char *from,
                 char *errstr, size_t errstr_size)
{
    long long n = 0;
    if (d->type == T_INT && util_parse_ll(v, d->min, d->max, &n) < 0) {
        snprintf(errstr, errstr_size, "%s: \"%s\" is not an integer in [%lld, %lld]", from, v,
                 d->min, d->max);
        return MCPQ_EINVAL;
    }
    set_value(s, d, v, n);
    return 0;
}

/* Prints the table rows of `who` as --help text. */
static void settings_usage(FILE *out, unsigned who, const char *prog, const char *about)
{
    fprintf(out, "usage: %s [--flag value ...]\n\n%s\n\n", prog, about);
    fprintf(out, "Every flag overrides its environment variable.\n\n");
    for (size_t i = 0; i < NDEFS; i++) {
        const set_def_t *d = &defs[i];
        if (!(d->who & who))
            continue;
        fprintf(out, "  --%-26s %s\n  %-28s %s", d->flag, d->env, "", d->help);
        if (d->def && *d->def)
            fprintf(out, " (default %s)", d->def);
        fputc('\n', out);
    }
    fprintf(out, "  --%-26s this text\n", "help");
    fprintf(out, "  --%-26s the version (git describe of the build) and the libraries' versions\n",
            "version");
    fprintf(out, "  --%-26s every variable of every binary as a Markdown table\n", "env-table");
    if (who & (SET_INGRESS | SET_WORKER))
        fprintf(out, "  --%-26s the effective settings and Kafka properties, secrets redacted\n",
                "print-config");
}

/* value with the password of a user:password@ part replaced by SETTINGS_REDACTED. */
static void print_url(FILE *out, const char *value)
{
    const char *scheme = strstr(value, "://");
    const char *auth = scheme ? scheme + 3 : value;
    size_t alen = strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *c = auth; c < auth + alen; c++)
        if (*c == '@')
            at = c; /* the last one: a password may hold '@' unencoded */
    const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    if (!colon) {
        fputs(value, out);
        return;
    }
    fprintf(out, "%.*s%s%s", (int)(colon + 1 - value), value, SETTINGS_REDACTED, at);
}

void settings_print(FILE *out, const mcpq_settings_t *s, unsigned who)
{
    const char *base = (const char *)s;
    for (size_t i = 0; i < NDEFS; i++) {
        const set_def_t *d = &defs[i];
        if (!(d->who & who))
            continue;
        fprintf(out, "%s=", d->env);
        if (d->type == T_INT) {
            fprintf(out, "%lld\n", *(const long long *)(base + d->off));
            continue;
        }
        const char *v = *(const char *const *)(base + d->off);
        if (!v)
            fputs("  # unset", out);
        else if (d->type == T_SECRET && *v)
            fputs(SETTINGS_REDACTED, out);
        else if (d->type == T_URL)
            print_url(out, v);
        else
            fputs(v, out);
        fputc('\n', out);
    }
}

/* Prints the table as a Markdown table (docs/configuration.md, "Every setting"). */
static void settings_markdown(FILE *out)
{
    fprintf(out, "| variable | flag | default | used by | meaning |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < NDEFS; i++) {
        const set_def_t *d = &defs[i];
        fprintf(out, "| `%s` | `--%s` | %s%s%s | %s%s%s | %s |\n", d->env, d->flag,
                d->def && *d->def ? "`" : "", d->def && *d->def ? d->def : "—",
                d->def && *d->def ? "`" : "", d->who & SET_INGRESS ? "ingress " : "",
                d->who & SET_WORKER ? "worker " : "", d->who & SET_BROKER ? "devbroker" : "",
                d->help);
    }
}

int settings_load(mcpq_settings_t *s, unsigned who, const char *prog, const char *about, int argc,
                  char **argv, char *errstr, size_t errstr_size)
{
    int print = 0;
    memset(s, 0, sizeof(*s));
    for (int i = 1; i < argc; i++) /* before any setting: it works whatever the environment */
        if (strcmp(argv[i], "--version") == 0)
            return SETTINGS_VERSION;
    for (size_t i = 0; i < NDEFS; i++) {
        const set_def_t *d = &defs[i];
        const char *v = getenv(d->env);
        if (v && (d->who & who)) {
            if (apply(s, d, v, d->env, errstr, errstr_size) < 0)
                return MCPQ_EINVAL;
        } else if (d->def) {
            if (apply(s, d, d->def, "default", errstr, errstr_size) < 0)
                return MCPQ_EINVAL;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            settings_usage(stdout, who, prog, about);
            return 1;
        }
        if (strcmp(a, "--env-table") == 0) { /* docs/configuration.md's table: make docs */
            settings_markdown(stdout);
            return 1;
        }
        if (strcmp(a, "--print-config") == 0 && (who & (SET_INGRESS | SET_WORKER))) {
            print = 1;
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            snprintf(errstr, errstr_size, "unexpected argument \"%s\" (see --help)", a);
            return MCPQ_EINVAL;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const set_def_t *d = NULL;
        for (size_t j = 0; j < NDEFS; j++)
            if ((defs[j].who & who) && strlen(defs[j].flag) == nlen &&
                strncmp(defs[j].flag, name, nlen) == 0)
                d = &defs[j];
        if (!d) {
            snprintf(errstr, errstr_size, "unknown flag \"%s\" (see --help)", a);
            return MCPQ_EINVAL;
        }
        const char *v = eq ? eq + 1 : NULL;
        if (!v) {
            if (i + 1 >= argc) {
                snprintf(errstr, errstr_size, "flag --%s needs a value", d->flag);
                return MCPQ_EINVAL;
            }
            v = argv[++i];
        }
        if (apply(s, d, v, a, errstr, errstr_size) < 0)
            return MCPQ_EINVAL;
    }
    if (s->redis_wait_replicas > 0 && s->redis_wait_timeout_ms >= s->redis_timeout_ms) {
        snprintf(errstr, errstr_size,
                 "MCPQ_REDIS_WAIT_TIMEOUT_MS (%lld) must be below MCPQ_REDIS_TIMEOUT_MS (%lld)",
                 s->redis_wait_timeout_ms, s->redis_timeout_ms);
        return MCPQ_EINVAL;
    }
    if ((who & (SET_INGRESS | SET_WORKER)) && (!s->kafka_brokers || !*s->kafka_brokers)) {
        snprintf(errstr, errstr_size, "MCPQ_KAFKA_BROKERS (--kafka-brokers) is required");
        return MCPQ_EINVAL;
    }
    return print ? SETTINGS_PRINT : 0;
}
