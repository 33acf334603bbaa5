/*
 * prm.h - the ingress as an OAuth 2.1 resource server (docs/authorization.md): its Protected
 * Resource Metadata documents (RFC 9728) at /.well-known/oauth-protected-resource (the whole
 * ingress) and /.well-known/oauth-protected-resource/mcp[/{server}] (one MCP endpoint), and
 * the WWW-Authenticate challenges that point clients at them. Every URL starts with the base
 * of peer.h's ing_peer_public_base (MCPQ_PUBLIC_URL, else a trusted Host).
 *
 * What they tell a caller without a credential (docs/security.md, "What is public"): the
 * issuers and scopes_supported of the tenants that take tokens, which a client needs before it
 * has any credential; never which server names exist: every resource, the root, /mcp and any
 * well-formed /mcp/{server} whether some tenant serves it or none, gets the same lists (only
 * "resource" differs), and so does the 401 challenge.
 *
 * Thread-safe: works on the request it is given.
 */
#ifndef MCPQ_ING_PRM_H
#define MCPQ_ING_PRM_H

#include "req.h"

#include <stddef.h>

/* The well-known path of the metadata documents. */
#define ING_PRM_PATH "/.well-known/oauth-protected-resource"

/*
 * The resource URL req's target names, into out: <base>/mcp or <base>/mcp/<server> for the
 * MCP endpoints, <base> for any other path (the REST API): the URL a client was given and
 * an access token's audience must name (RFC 8707). 0, or MCPQ_EUNAVAIL when no trusted base
 * exists for req (peer.h), MCPQ_ETOOBIG.
 */
int ing_prm_resource(const ing_req_t *req, char *out, size_t n);

/* The <server> of the MCP endpoint /mcp/<server> req's target names, copied to out (n bytes);
 * NULL for /mcp and every other path (the REST API), which name no one server. */
const char *ing_prm_server(const ing_req_t *req, char *out, size_t n);

/*
 * The Bearer challenge of a refusal of req, into out: `Bearer resource_metadata="<the
 * metadata URL of the resource req's target names>"` followed by error="…", scope="…" and
 * error_description="…" for those that are non-NULL and non-empty (quotes and backslashes in
 * them become '). Without a trusted base: `Bearer realm="mcpq"` with the same parameters.
 * 0, or -1 when out is too small (then out holds `Bearer realm="mcpq"`).
 */
int ing_prm_challenge(const ing_req_t *req, const char *error, const char *scope,
                      const char *description, char *out, size_t n);

/*
 * The challenge of a 401 of req into out: `Bearer realm="mcpq"` (with error="invalid_token"
 * after a token) when no tenant of reg takes access tokens; else
 * ing_prm_challenge with scope = the scopes_supported of the tenants
 * that take tokens and, when the credential refused was an access
 * token (token), error="invalid_token" and why as its description (RFC 6750 section 3.1: a
 * request without credentials gets no error code).
 */
void ing_prm_unauthorized(const ing_req_t *req, const ing_registry_t *reg, int token,
                          const char *why, char *out, size_t n);

/*
 * GET (or HEAD) of ING_PRM_PATH and ING_PRM_PATH/mcp[/{server}]: the metadata document of
 * that resource: resource, authorization_servers (the issuers of the tenants that take
 * access tokens, once each, the same for every resource), scopes_supported (their
 * oauth.scopes_supported, when any), bearer_methods_supported ["header"], resource_name. 404
 * for another path (a server name that is no id) or when no tenant takes tokens; 503 without a
 * trusted base URL or a registry; 405 for other methods.
 */
void ing_prm_route(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp);

#endif
