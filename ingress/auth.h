/*
 * auth.h - who is calling (SPEC section 3): API keys from `Authorization: Bearer <key>` or
 * `X-Api-Key`, hashed with SHA-256 and compared in constant time against the registry's
 * key hashes; Origin and Host allow-lists against DNS rebinding (SPEC section 2).
 * Nothing here logs or returns a credential. Thread-safe.
 */
#ifndef MCPQ_ING_AUTH_H
#define MCPQ_ING_AUTH_H

#include "registry.h"

#include <microhttpd.h>

/* The authenticated tenant, or NULL with *why set ("missing credentials", ...). */
const ing_tenant_t *ing_auth_tenant(struct MHD_Connection *conn, const ing_registry_t *reg,
                                    const char **why);

/* 1 when value matches an entry of the comma list (scheme://host[:port|:*] for origins,
 * host[:port|:*] for hosts). */
int ing_auth_listed(const char *list, const char *value);

/* 1 when the request's Origin and Host pass MCPQ_ALLOWED_ORIGINS / MCPQ_ALLOWED_HOSTS. */
int ing_auth_origin_ok(struct MHD_Connection *conn, const char *allowed_origins,
                       const char *allowed_hosts);

#endif
