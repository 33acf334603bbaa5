/*
 * regstore.h - the registry as an editable set of documents (docs/config-file.md, docs/api.md
 * "Administration").
 *
 * The registry is the Redis hash `{mcpq}:registry` (fields `tenant:<id>`, `server:<tenant>:<name>`,
 * `tool:<tenant>:<name>`, each a JSON document in the config file's form) with the counter
 * `{mcpq}:registry:rev`. Every writer (the config load at start-up, `mcpq-ingress --apply`, the
 * admin API, federation) goes through here:
 *
 *   ing_regstore_load()    reads every field and keeps each one's text exactly as read;
 *   ing_regstore_get()/ing_regstore_put() read and stage documents;
 *   ing_regstore_commit()  writes the staged documents in one Lua script that first checks that
 * every field it touches still holds the text ing_regstore_load() read (compare-and-set), then
 *                bumps the revision and publishes it on `mcpq:registry:changed`. Two admins
 *                racing cannot lose each other's change: the loser gets RS_CONFLICT and
 *                re-runs its read-modify-write.
 *
 * Every object (tenant, API key, app, webhook, server, tool, tool version) carries
 * `createTime` and `updateTime` (RFC 3339 UTC, milliseconds) inside its document; its etag is
 * computed from its stored text (ing_regstore_etag), so it changes with every write and costs
 * nothing to keep. These two members are the only ones the config file's schema does not know:
 * ing_regstore_strip_meta() removes them before validation and export.
 *
 * Not thread-safe: a state belongs to one request.
 */
#ifndef MCPQ_ING_REGSTORE_H
#define MCPQ_ING_REGSTORE_H

#include "kv.h"
#include "names.h"
#include "settings.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#define RS_CHANNEL NAMES_CHAN_REGISTRY_CHANGED
#define RS_CONFLICT 1 /* ing_regstore_commit: another writer changed a field first */

typedef struct ing_regstore_state {
    cJSON *docs;     /* field -> current document (with staged changes applied) */
    cJSON *raw;      /* field -> text as read (string), for the compare-and-set */
    cJSON *staged;   /* field -> true: written by ing_regstore_commit (absent from docs: deleted) */
    cJSON *replaced; /* documents ing_regstore_put replaced, kept until ing_regstore_free */
    long long rev;   /* the revision read with the documents */
} ing_regstore_state_t;

/* Reads the whole registry. 0, or MCPQ_EUNAVAIL/MCPQ_EIO/MCPQ_ENOMEM with err filled. */
int ing_regstore_load(redisContext *c, ing_regstore_state_t *st, char *err, size_t err_size);
void ing_regstore_free(ing_regstore_state_t *st);

/* The document at field (current, staged changes included; owned by st and valid until
 * ing_regstore_free, even after ing_regstore_put replaces it), or NULL. */
cJSON *ing_regstore_get(ing_regstore_state_t *st, const char *field);
/* Stages doc (owned by st from now on) at field; NULL deletes the field. 0 or MCPQ_ENOMEM. */
int ing_regstore_put(ing_regstore_state_t *st, const char *field, cJSON *doc);
/* Writes the staged fields with compare-and-set: 0 (*rev = the new revision, unchanged when
 * nothing was staged), RS_CONFLICT, or a negative code with err filled. */
int ing_regstore_commit(redisContext *c, ing_regstore_state_t *st, long long *rev, char *err,
                        size_t err_size);

/* Registry field names. */
void ing_regstore_field_tenant(char *buf, size_t size, const char *tenant);
void ing_regstore_field_server(char *buf, size_t size, const char *tenant, const char *name);
void ing_regstore_field_tool(char *buf, size_t size, const char *tenant, const char *name);

/* Now as RFC 3339 UTC with milliseconds ("2026-11-24T10:00:00.123Z"); buf >= 32 bytes. */
void ing_regstore_now(char *buf, size_t size);
/* Sets o's createTime (when absent: to now) and updateTime (to now). */
void ing_regstore_touch(cJSON *o, const char *now);
/* The etag of o: 20 lowercase hex digits of SHA-256 over its compact JSON, skipping the members
 * named in skip (NULL-terminated; may be NULL). */
void ing_regstore_etag(const cJSON *o, const char *const *skip, char out[21]);
/* Removes createTime and updateTime from every object of a config-form document (tenants with
 * their keys, apps and webhooks; servers; tools with their versions), in place. */
void ing_regstore_strip_meta(cJSON *doc);
/* The same for one object (its own members only). */
void ing_regstore_strip_meta_one(cJSON *o);

/*
 * Checks the state of one tenant as the config loader would (schemas/config.schema.json,
 * references between tenant, servers and tools, tool schemas): builds the tenant's config
 * document from st and runs cfg_load_string on it, and, when set is not NULL, the checks that
 * need settings (static resource sizes, cfgkinds.h). 0, or MCPQ_EINVAL with err naming the
 * problem.
 */
int ing_regstore_check_tenant(ing_regstore_state_t *st, const char *tenant,
                              const mcpq_settings_t *set, char *err, size_t err_size);

/* The id of a tenant of st other than except (may be NULL) whose "robots" hold robot, or NULL.
 * A robot belongs to one tenant: the config loader checks one file, ing_regstore_apply and the
 * admin API check against the tenants already stored. */
const char *ing_regstore_robot_owner(ing_regstore_state_t *st, const char *robot,
                                     const char *except);
/*
 * cfg_check_issuers_shared (cfg.h) between tenant t (config form, at path: "$" or
 * "$.tenants[i]") and every tenant of st with another id: tenants sharing an issuer agree on
 * its claims.tenant, jwks_uri and introspection. 0, or MCPQ_EINVAL with err naming t's path.
 */
int ing_regstore_issuers_check(ing_regstore_state_t *st, const cJSON *t, const char *path,
                               char *err, size_t err_size);

/*
 * What a loaded config (cfg_load_*) must also pass under this process's settings before it
 * is stored: no webhook url naming a private address literally (unless
 * MCPQ_WEBHOOK_ALLOW_PRIVATE=1; ing_whrules_config_check) and no app secret shorter than
 * MCPQ_APP_SECRET_MIN_BYTES (cfg_check_app_secrets), no static resource content larger than
 * MCPQ_RESOURCE_MAX_BYTES (cfg_kinds_sizes). 0, or MCPQ_EINVAL with err naming the JSON path.
 */
int ing_regstore_config_check(const cJSON *cfg, const mcpq_settings_t *set, char *err,
                              size_t err_size);

/* What ing_regstore_apply did. */
typedef struct ing_regstore_summary {
    int created, updated, unchanged, deleted;
    long long rev;
} ing_regstore_summary_t;

/*
 * Applies a normalized config document (cfg_load_file/cfg_load_string output; "tenants" may
 * be absent, as for a federated server's import) idempotently: an object whose content equals
 * the stored one (createTime and updateTime aside) is left as it is, so applying the same file
 * twice changes nothing, not even the revision; a changed object keeps its createTime. With
 * prune, the servers and tools of the tenants the document names that it does not name are
 * deleted. A robot a tenant of the document declares that a stored tenant outside it already
 * declares, or an issuer it shares with one without agreeing on it (ing_regstore_issuers_check),
 * is MCPQ_EINVAL (nothing written). Retries compare-and-set conflicts. 0, or a
 * negative code with err filled.
 */
int ing_regstore_apply(redisContext *c, const cJSON *config, int prune, ing_regstore_summary_t *sum,
                       char *err, size_t err_size);

/*
 * The load of MCPQ_CONFIG (every replica runs it, at start-up and, with MCPQ_CONFIG_WATCH_MS, each
 * time the file changes): applies config (with prune as ing_regstore_apply) unless this exact
 * config (SHA-256 of its normalized text, kept in the registry hash's `meta:config` field) was
 * the last one applied. So restarting replicas does not undo changes made through the admin API
 * since, while a changed ConfigMap is applied by the first replica that sees it, and a registry
 * lost with its Redis is seeded again. The mark is written in the same compare-and-set as the
 * documents: of N replicas seeing one change at once exactly one applies it and the others
 * find it applied (*applied = 0), so the revision moves once. Writing only the mark (the
 * documents already as the file says) does not move the revision. *applied = 1 when this call
 * applied; sum->rev is the revision after it. MCPQ_EINVAL when the config clashes with the
 * stored registry (a robot of another tenant; nothing written).
 */
int ing_regstore_seed(redisContext *c, const cJSON *config, int prune, int *applied,
                      ing_regstore_summary_t *sum, char *err, size_t err_size);

/* The registry as a config document (createTime/updateTime removed; API keys as sha256),
 * sorted by tenant, server and tool name; NULL with err filled. */
cJSON *ing_regstore_export(redisContext *c, char *err, size_t err_size);

#endif
