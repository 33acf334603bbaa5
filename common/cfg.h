/*
 * cfg.h - the config file loader (docs/config-file.md).
 *
 * The config file seeds the registry: tenants (API keys, apps, webhooks), servers and
 * tools with their versions. Loading reads and parses the file, validates it against the
 * embedded schemas/config.schema.json, checks what a schema cannot (unique ids, references
 * between tenants, servers, tools and versions, secrets from the environment, tool
 * schemas that sch_validate can use), and normalizes it into the document the registry
 * stores in Redis, which holds no plaintext API key:
 *   - every API key becomes {"id", "sha256"} (from "key", "key_env" or "sha256") and keeps
 *     its "rate_limit";
 *   - app, webhook and executor secrets given by "secret_env" are resolved into "secret"
 *     ("secret_env" wins when both are given and the variable is set), and an app's or
 *     webhook's "previous_secret_env" into "previous_secret" the same way (a rotation);
 *   - "default_server" defaults to "default", a version's "mode" to "sync", a tool's
 *     "published" to its last version; "servers" and "tools" are always arrays.
 * A secret given as CFG_HIDDEN, the admin API's placeholder, is refused (cfgsecret.h).
 * Errors name the file and the JSON path: "mcpq.json: $.tools[2].versions[0].executor:
 * missing required property "argv"", and JSON syntax errors the line and column.
 *
 * The functions read the environment (getenv) and are otherwise thread-safe.
 */
#ifndef MCPQ_CONFIG_H
#define MCPQ_CONFIG_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* The largest config file accepted. */
#define CFG_MAX_BYTES (16u * 1024u * 1024u)

/*
 * Reads, parses, validates and normalizes the config file at path. Returns a new cJSON
 * document (the caller frees it with cJSON_Delete) or NULL with errstr =
 * "<path>: <JSON path>: <message>".
 */
cJSON *cfg_load_file(const char *path, char *errstr, size_t errstr_size);

/* cfg_load_file that also gives the SHA-256 (64 lowercase hex digits) of the bytes it read, so a
 * caller watching the file knows which content it loaded (sha256 is "" when the file could not
 * be read; filled even when those bytes are not a valid config). */
cJSON *cfg_load_file_sha256(const char *path, char sha256[65], char *errstr, size_t errstr_size);

/* Only reads the file at path and gives the SHA-256 of its bytes: 0, or a negative code with
 * errstr = "<path>: cannot open: ..." (sha256 ""). For polling a file for changes cheaply. */
int cfg_file_sha256(const char *path, char sha256[65], char *errstr, size_t errstr_size);

/* The same for a config held in memory (len bytes, no NUL needed); errors start with the
 * JSON path. */
cJSON *cfg_load_string(const char *text, size_t len, char *errstr, size_t errstr_size);

/* An mcp executor's env (docs/executors.md, "stdio upstreams") holds references only, none to
 * the variable of one of mcpq's own settings (settings_is_name: keys, passwords): 0, or MCPQ_EINVAL
 * with errstr saying why the value at <path>.env.<NAME> is refused. Any other executor: 0. Checked
 * before the schema by the config loader (which applies the same rule to servers' federate entries)
 * and the admin API. */
int cfg_check_mcp_env(const cJSON *executor, const char *path, char *errstr, size_t errstr_size);

/* The default of MCPQ_APP_SECRET_MIN_BYTES: app secrets shorter than this are refused. */
#define CFG_APP_SECRET_MIN 32

/*
 * Checks one app object (normalized: its secrets resolved) at path: its "secret" and
 * "previous_secret" must be at least min_bytes long. 0, or MCPQ_EINVAL with errstr naming
 * the app ("<path>: the secret of app "x" is 15 bytes; app secrets must be at least 32
 * bytes").
 */
int cfg_check_app(const cJSON *app, size_t min_bytes, const char *path, char *errstr,
                  size_t errstr_size);

/* cfg_check_app for every app of every tenant of a normalized config. */
int cfg_check_app_secrets(const cJSON *config, size_t min_bytes, char *errstr, size_t errstr_size);

/*
 * Whether tenants t (at t_path: "$.tenants[1]", or "$" for an admin API body) and u (at
 * u_path, or NULL for a stored tenant) may both trust the issuers they share (config form,
 * docs/config-file.md "OAuth"). The ingress keeps one key set and one list of introspection
 * endpoints per issuer for every tenant (ingress/core/oauth.h), so one tenant's config could
 * otherwise choose where another's tokens are checked. For each issuer both name: each must
 * set oauth.claims.tenant; both must name the same jwks_uri or none; and both the same
 * introspection endpoint and client_id for it, or none (a tenant's "introspection" belongs to
 * its first issuer). 0, or MCPQ_EINVAL with errstr naming t's JSON path
 * ("$.tenants[1].oauth.jwks_uri: issuer "…" is trusted by tenant "a" ($.tenants[0]) too, with
 * another jwks_uri; …"). The config loader checks every pair of a file; the admin API and
 * ing_regstore_apply a tenant against the stored ones (ingress/core/regstore.h).
 */
int cfg_check_issuers_shared(const cJSON *t, const char *t_path, const cJSON *u, const char *u_path,
                             char *errstr, size_t errstr_size);

#endif
