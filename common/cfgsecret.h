/*
 * cfgsecret.h - the secrets of a config document: where they are, hiding them, and bringing
 * the stored ones back (docs/api.md "Administration", "Security decisions").
 *
 * A config-form document (cfg.h; the registry's export) holds secrets at these places, and
 * only there:
 *   $.tenants[].api_keys[].sha256          the hash of an API key
 *   $.tenants[].apps[].secret              an app's signing secret
 *   $.tenants[].apps[].previous_secret     its previous one, during a rotation
 *   $.tenants[].webhooks[].secret          a webhook's whsec_ secret
 *   $.tenants[].webhooks[].previous_secret its previous one, during a rotation
 *   $.tenants[].oauth.introspection.client_secret  the token introspection client's secret
 *   $.servers[].federate.headers.*         headers sent to a federated upstream
 *   $.tools[].versions[].executor.secret   an http or agent executor's whsec_ secret
 *   $.tools[].versions[].executor.headers.*, .env.*   executor headers and environment
 * What the admin API shows (the export and the per-object views) has each of them replaced by
 * CFG_HIDDEN. Applying such a document back (PUT /admin/v1/config) puts the stored value in the
 * place of each CFG_HIDDEN it finds at the same object (by tenant, key id, app id, webhook id,
 * server, tool, version, header or variable name); the config loader refuses CFG_HIDDEN
 * anywhere else it reaches (a config file, `mcpq-ingress --apply`, the per-object writes),
 * so a placeholder is never stored as a secret.
 *
 * Thread-safe (no state).
 */
#ifndef MCPQ_CFGSECRET_H
#define MCPQ_CFGSECRET_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* What every read of the admin API shows in the place of a secret. */
#define CFG_HIDDEN "(hidden)"

/* Replaces every secret of doc (a config-form document) with CFG_HIDDEN, in place. */
void cfg_secret_redact(cJSON *doc);
/* The same for one tool version's executor object, in place. */
void cfg_secret_redact_executor(cJSON *executor);
/* The same for one server's federate object, in place. */
void cfg_secret_redact_federate(cJSON *federate);

/*
 * Replaces each CFG_HIDDEN at a secret's place in doc (as received: not validated yet) with
 * the value at the same place of stored (the registry's unredacted export), in place. 0, or
 * MCPQ_EINVAL with err naming the first placeholder stored has no value for (a new object,
 * header or variable), or MCPQ_ENOMEM.
 */
int cfg_secret_restore(cJSON *doc, const cJSON *stored, char *err, size_t err_size);

/* 0 when doc holds no CFG_HIDDEN at a secret's place, else MCPQ_EINVAL with err naming it. */
int cfg_secret_refuse(cJSON *doc, char *err, size_t err_size);

#endif
