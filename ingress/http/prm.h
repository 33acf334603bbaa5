/*
 * prm.h - the ingress as an OAuth 2.1 resource server (docs/authorization.md): its Protected
 * Resource Metadata documents (RFC 9728) at /.well-known/oauth-protected-resource and
 * /.well-known/oauth-protected-resource/mcp[/{server}], and the WWW-Authenticate challenges
 * that point clients at them. Every URL starts with the base of peer.h's
 * ing_peer_public_base (MCPQ_PUBLIC_URL, else a trusted Host).
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
 * The resource URL of the MCP endpoint a request names, into out: <base>/mcp for server NULL
 * (the tenant's default server), <base>/mcp/<server> otherwise; the form a client was given
 * and an access token's audience must name (RFC 8707). 0, or MCPQ_EUNAVAIL when no trusted
 * base exists for req (peer.h), MCPQ_ETOOBIG.
 */
int ing_prm_resource(const ing_req_t *req, const char *server, char *out, size_t n);

/*
 * The Bearer challenge of a refusal of req at the MCP endpoint of server (NULL: /mcp), into
 * out: `Bearer resource_metadata="<base>/.well-known/oauth-protected-resource/mcp[/server]"`
 * followed by error="…", scope="…" and error_description="…" for those that are non-NULL and
 * non-empty (quotes and backslashes in them become '). Without a trusted base the challenge
 * is `Bearer realm="mcpq"` with the same parameters. 0, or -1 when out is too small (then
 * out holds `Bearer realm="mcpq"`).
 */
int ing_prm_challenge(const ing_req_t *req, const char *server, const char *error,
                      const char *scope, const char *description, char *out, size_t n);

#endif
