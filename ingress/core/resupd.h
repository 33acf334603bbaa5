/*
 * resupd.h - static resources whose content changed announce it (docs/protocol.md "Resource
 * subscriptions"): the refresh thread, after swapping in a new registry snapshot, publishes
 * `{"tenant","server","uri"}` on `mcpq:resource:updated` (names.h) for each published static
 * resource (its "text" or "blob" in the registry) whose content or published version differs
 * between the snapshot it replaced and the new one; every replica's listen.h delivers it to
 * the streams subscribed to that uri.
 *
 * Exactly once for the fleet: every replica swaps snapshots, so each sees the change, but the
 * publish happens in a Lua compare-and-set on `{mcpq}:resstate:<tenant>:<server>`
 * (docs/internals.md): the state (revision, content hash) last announced per uri. The first
 * replica to swap publishes; the others find that state there; a replica still behind (an
 * older revision) never announces an older state. The registry's writers (admin API, config
 * file, federation) stay unaware of resources' subscribers. A resource that is new, deleted
 * or unpublished changes the list (notifications/resources/list_changed), not a subscribed
 * content; executor-backed resources and templates are announced by the workers that serve
 * them.
 *
 * Thread: the refresh thread (it owns c).
 */
#ifndef MCPQ_ING_RESUPD_H
#define MCPQ_ING_RESUPD_H

#include "registry.h"

#include <hiredis/hiredis.h>

/* Announces the static resources whose content differs between old and reg (old NULL: the
 * first load, nothing). How many this replica published, or MCPQ_EUNAVAIL when Redis failed
 * (logged; the replicas that swap after it announce what is left). */
int ing_resupd_publish(redisContext *c, const ing_registry_t *old, const ing_registry_t *reg);

#endif
