/*
 * cfgwatch.h - watching the config file (MCPQ_CONFIG) for a change, as a Kubernetes ConfigMap
 * mount changes (docs/config-file.md, "Watching the file").
 *
 * Kubelet updates a ConfigMap volume by writing the new files into a new timestamped directory
 * and renaming a symlink `..data` over the old one; the file the pod names is a symlink through
 * `..data`. So the watcher polls: every MCPQ_CONFIG_WATCH_MS it opens the path (following the
 * symlinks as they are now) and hashes the bytes (SHA-256); a hash other than the last one seen
 * is a change, and only then is the file parsed and checked. Polling the content rather than
 * inotify events works the same for the symlink swap, an editor saving in place, a file
 * replaced by rename and a bind mount, and needs no state that a missed event could corrupt.
 *
 * The caller owns the ing_cfgwatch_t (no allocation, nothing to free). Not thread-safe: one
 * thread polls (the registry refresh thread, refresh.h).
 */
#ifndef MCPQ_ING_CFGWATCH_H
#define MCPQ_ING_CFGWATCH_H

#include "kv.h"
#include "regstore.h"
#include "settings.h"

#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct ing_cfgwatch {
    const mcpq_settings_t *set;
    char seen[65];        /* SHA-256 of the bytes last loaded or refused ("" none yet) */
    char unreadable[256]; /* the read error last reported ("" the file was readable) */
} ing_cfgwatch_t;

#define ING_CFGWATCH_SAME 0    /* the file holds what was seen last */
#define ING_CFGWATCH_CHANGED 1 /* a new, valid config */
#define ING_CFGWATCH_REFUSED 2 /* a new content (or read error) that cannot be used */

/* Prepares w for set->config (set is borrowed for w's life). */
void ing_cfgwatch_init(ing_cfgwatch_t *w, const mcpq_settings_t *set);

/*
 * Reads set->config now, normalized (cfg.h) and checked under the process's settings
 * (ing_regstore_config_check), and remembers its content as seen, valid or not. Returns the
 * config (the caller frees it), or NULL with err = "<file>: <why>".
 */
cJSON *ing_cfgwatch_load(ing_cfgwatch_t *w, char *err, size_t err_size);

/*
 * Whether the file changed since it was last seen: ING_CFGWATCH_SAME; ING_CFGWATCH_CHANGED
 * with *cfg the new config (the caller frees it); or ING_CFGWATCH_REFUSED with err naming the
 * file and the problem. A content or a read error is reported once: polling a bad file again
 * answers ING_CFGWATCH_SAME until it changes.
 */
int ing_cfgwatch_poll(ing_cfgwatch_t *w, cJSON **cfg, char *err, size_t err_size);

/*
 * The config file's events, fleet-wide, for the admin API (GET /admin/v1/config/events) and
 * whoever reads Redis: the list {mcpq}:config:events (docs/internals.md), the last
 * ING_CFGWATCH_EVENTS kept. A change applied is one event (by the replica that applied it);
 * a change refused is one per replica that refused it (each may read the file differently).
 */
#define ING_CFGWATCH_EVENTS 100

/* Appends {"time","instance","file","sha256","result"} for the content last seen by w, with
 * "error" (error not NULL) or "revision","created","updated","deleted" (sum not NULL). 0, or a
 * negative code (the caller has logged the outcome already; the event is only a record). */
int ing_cfgwatch_record(const ing_cfgwatch_t *w, redisContext *c, const char *instance,
                        const char *result, const char *error, const ing_regstore_summary_t *sum);

/* The events, newest first, as a JSON array (the caller frees it); NULL with err set when Redis
 * failed. Entries that are not JSON objects are skipped. */
cJSON *ing_cfgwatch_events(redisContext *c, char *err, size_t err_size);

#endif
