/*
 * settings.h - the one read-only configuration of a process, built from one table.
 *
 * Every knob has a name, an MCPQ_* environment variable, a --flag that overrides it, a
 * default, bounds and the binaries it applies to (redis static_configs[]). settings_load()
 * fills an mcpq_settings_t from the environment and argv, validates it, and prints --help
 * from the same table. Strings point into the environment, argv or static defaults: the
 * struct owns no memory and is never written after start-up.
 */
#ifndef MCPQ_SETTINGS_H
#define MCPQ_SETTINGS_H

#include <stddef.h>
#include <stdio.h>

#define SET_INGRESS 1u
#define SET_WORKER 2u
#define SET_BROKER 4u

typedef struct mcpq_settings {
    /* names deployments and tests rely on (docs/configuration.md "Configuration") */
    const char *config;
    long long config_watch_ms;     /* read MCPQ_CONFIG again this often (0: at start-up only) */
    long long config_prune;        /* a changed MCPQ_CONFIG is applied with --prune */
    long long federate_refresh_ms; /* a federated upstream is imported again this often */
    const char *listen;
    const char *ops_listen; /* ingress: /metrics, /healthz, /readyz, /admin (empty: on listen) */
    long long metrics_tenants_max; /* ingress: tenant label values kept (metrics.h) */
    const char *kafka_brokers;
    const char *redis_url;
    const char *redis_password; /* kv.h: all of these are read by kv_target_new() */
    const char *redis_password_file;
    const char *redis_tls_ca_file;
    const char *redis_tls_cert_file;
    const char *redis_tls_key_file;
    const char *redis_tls_server_name;
    const char *redis_sentinels;
    const char *redis_master;
    const char *redis_sentinel_password;
    const char *redis_sentinel_password_file;
    long long redis_cluster;
    const char *admin_token;
    long long max_body_bytes;
    long long preauth_body_bytes;    /* body limit before the headers prove a credential */
    long long max_body_memory_bytes; /* request bodies held at once, per ingress */
    long long page_size;
    long long list_ttl_ms;        /* ttlMs of 2026-07-28 lists and server/discover */
    long long resource_max_bytes; /* static resource content, decoded */
    const char *allowed_origins;
    const char *allowed_hosts;
    long long idempotency_ttl_s;
    const char *webhook_retry_schedule;
    long long webhook_allow_private;
    long long webhook_max_inflight;
    const char *robot_id;
    /* mcpq's own */
    const char *topic_jobs;
    const char *job_signing_key; /* jobsig.h: read through jobsig_keys_load() */
    const char *job_signing_key_file;
    const char *job_signing_key_previous;
    const char *job_signing_key_previous_file;
    const char *group_id;
    const char *worker_id;
    const char *instance_id;
    const char *log_level;
    long long access_log; /* ingress: 1 one access line per HTTP request (docs/operations.md) */
    const char *ready_file;
    const char *metrics_listen; /* worker: /metrics etc. (empty: off) */
    long long threads;
    long long max_connections;
    long long conn_memory_limit;
    long long memory_trim_calls;
    long long conn_timeout_s;
    long long sse_keepalive_ms;
    long long listen_keepalive_ms;
    long long max_listeners;
    long long max_resource_subscriptions;
    long long default_timeout_ms;
    long long kafka_message_timeout_ms;
    long long kafka_fetch_wait_ms;
    long long redis_timeout_ms;
    long long redis_pool_size;
    long long redis_pool_min_idle;
    long long redis_pool_wait_ms;
    long long redis_wait_replicas; /* docs/redis.md: WAIT before offsets and task answers */
    long long redis_wait_timeout_ms;
    long long worker_redis_lost_leave_ms; /* docs/reliability.md: leave the group without Redis */
    long long session_ttl_s;
    long long result_ttl_s;
    long long channel_max_turns;
    long long channel_max_bytes;
    long long channel_ttl_s;
    long long max_output_bytes;
    long long max_inflight_jobs;
    long long kill_grace_ms;
    long long input_timeout_ms;    /* how long a tool waits for the client's answers (ask) */
    long long input_max_bytes;     /* bound on one question's and one answer's JSON */
    const char *request_state_key; /* 2026-07-28 requestState HMAC key (rstate.h) */
    long long partitions;
    long long brokers;
    long long shutdown_grace_ms;
    long long drain_delay_ms;
    long long rate_limit_per_s;
    long long rate_limit_burst;
    long long rate_limit_lease_ms;
    long long tenant_max_streams; /* defaults of the tenants' "quotas" (0: no limit) */
    long long tenant_max_sessions;
    long long tenant_max_tasks;
    long long tenant_max_file_bytes;
    long long app_secret_min_bytes;
    long long auth_fail_per_min;
    long long auth_fail_id_per_min;
    long long oauth_clock_skew_s; /* ingress/core/oauth.h */
    long long oauth_fetch_timeout_ms;
    long long oauth_jwks_min_refresh_s;
    long long oauth_jwks_max_age_s;
    long long oauth_introspection_cache;
    long long oauth_introspection_ttl_s;
    const char *trusted_proxies;
    long long task_slots;
    long long task_lease_ms;
    long long task_max_attempts;
    long long task_retention_s;
    const char *public_url;
    const char *files_dir;
    const char *files_secret;
    long long files_max_bytes;
    long long files_ttl_s;
    long long files_url_ttl_s;
    long long files_sweep_s;
    long long replication_factor; /* topics mcpq creates (-1: the broker's default) */
    long long topic_create;
    const char *kafka_properties; /* kconf.h */
    /* devbroker's front (deploy/devbroker/front.h) */
    long long db_topics;
    const char *db_sasl; /* user:password */
    const char *db_sasl_mechanisms;
    const char *db_tls_cert, *db_tls_key, *db_tls_ca;
    long long db_deny_create;
    const char *db_control; /* the control socket's path (deploy/devbroker/control.h) */
} mcpq_settings_t;

#define SETTINGS_PRINT 2               /* settings_load: --print-config was given */
#define SETTINGS_VERSION 3             /* settings_load: --version was given */
#define SETTINGS_REDACTED "[redacted]" /* what --print-config shows for a secret */

/*
 * Fills s for the binary `who` (SET_INGRESS, ...). Returns 0 when the process should run,
 * 1 when --help was printed (exit 0), SETTINGS_PRINT when --print-config was given (the caller
 * prints with settings_print() and its Kafka properties, then exits 0), SETTINGS_VERSION when
 * --version was given anywhere in argv (checked first, so no setting is read: the caller prints
 * version_print() and exits 0), MCPQ_EINVAL with errstr filled on a bad value or flag.
 */
int settings_load(mcpq_settings_t *s, unsigned who, const char *prog, const char *about, int argc,
                  char **argv, char *errstr, size_t errstr_size);

/* 1 when name is the environment variable of a setting of any binary (the table of
 * docs/configuration.md, "Settings"), else 0. */
int settings_is_name(const char *name);

/* Prints every setting of `who` as MCPQ_X=value lines, secrets (the table's secret flag)
 * redacted and the password of MCPQ_REDIS_URL too. */
void settings_print(FILE *out, const mcpq_settings_t *s, unsigned who);

#endif
