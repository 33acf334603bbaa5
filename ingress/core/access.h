/*
 * access.h - per-tool authorization (docs/config-file.md "Per-tool access"): whether a caller
 * (an API key, an HMAC-signed app or an OAuth token of a tenant) may see and call a tool, by
 * the "access" rules of the tool and of its server. Both rules apply. A rule's "scopes" are
 * permissions the caller must hold, all of them; when any of "keys", "apps" or "users" is
 * present the caller must be named in one: an API key by its id (keys), an app by its app id
 * or an OAuth token by its app claim (apps), an OAuth token by its user claim (users; a token
 * without one is no user, even though its client id stands in for it elsewhere).
 *
 * A caller a rule does not name, and an API key or app lacking a permission, is not told the
 * tool exists (ING_ACCESS_HIDDEN: tools/list leaves it out, tools/call answers as for an
 * unknown tool); an OAuth token lacking a permission is answered 403 insufficient_scope with
 * the token scopes to ask for (ING_ACCESS_SCOPE), so its client can step up.
 *
 * Pure: reads the registry snapshot it is given; thread-safe.
 */
#ifndef MCPQ_ING_ACCESS_H
#define MCPQ_ING_ACCESS_H

#include "registry.h"

#include <cjson/cJSON.h>
#include <stddef.h>

/* Who a request authenticated as: an API key, an app or an OAuth subject of a tenant
 * (docs/authorization.md). The front door (ingress/http/frontdoor.h) fills it; its strings live as
 * long as its ing_door_t. */
typedef struct ing_principal {
    const ing_tenant_t *tenant;
    char kind; /* 'k': API key, 'a': app (HMAC signing), 'o': OAuth access token */
    /* The key's id, the app id, or the token's user claim, else its client id (never a secret):
     * who rate limits and logs count. */
    const char *id;
    const char *app;  /* 'a': the app id; 'o': the token's app (client) claim, or NULL */
    const char *user; /* 'o': the token's user claim, or NULL: only it satisfies "users" */
    /* 'o': the servers the token's aud binds it to, space-separated (owner.h,
     * ing_owner_binding); NULL: every server of the tenant (API keys, apps, tokens for the
     * whole tenant). */
    const char *servers;
    /* The permissions it holds, space-separated ("": none): an API key's or app's "scopes";
     * a token's scopes mapped through its tenant's oauth.scopes. */
    const char *perms;
    /* 'o': the token's scopes as granted (space-separated), for insufficient_scope. */
    const char *token_scopes;
    ing_rate_t rate; /* its configured rate limit (per_s < 0: none configured) */
} ing_principal_t;

enum {
    ING_ACCESS_OK = 0,
    ING_ACCESS_HIDDEN = 1, /* answered as an unknown tool */
    ING_ACCESS_SCOPE = 2,  /* an OAuth token lacking permissions: 403 insufficient_scope */
};

/*
 * The verdict for who on tool of server, an object of any kind (names in who's tenant: one name
 * space across tools, resources, templates and prompts). The built-in "system"
 * server has no rules; a tool the snapshot does not serve (not published) is judged by its
 * document's rule when the snapshot has one. On ING_ACCESS_SCOPE, writes to scope_out (n
 * bytes, may be NULL) the token scopes to ask for, space-separated: the token's current
 * scopes plus, for each missing permission, the token scopes that grant it (the tenant's
 * oauth.scopes inverted; the permission itself when there is no map). who NULL (or without a
 * tenant) is ING_ACCESS_HIDDEN.
 */
int ing_access_check(const ing_registry_t *reg, const ing_principal_t *who, const char *server,
                     const char *tool, char *scope_out, size_t n);

/* The same verdict from the two rules themselves (server_rule and tool_rule: "access"
 * objects, either may be NULL), for tools the snapshot does not serve (listings of every
 * tool, published or not). who NULL is a caller with no name and no permission. */
int ing_access_rules(const ing_principal_t *who, const cJSON *server_rule, const cJSON *tool_rule,
                     char *scope_out, size_t n);

#endif
