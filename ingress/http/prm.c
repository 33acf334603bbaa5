/*
 * prm.c - Protected Resource Metadata and Bearer challenges (prm.h).
 */
#include "prm.h"

#include "err.h"
#include "peer.h"

#include <stdio.h>
#include <string.h>

/* The base of req's absolute URLs (peer.h). */
static int base_of(const ing_req_t *req, char *out, size_t n)
{
    const mcpq_settings_t *set = req->ctx->set;
    return ing_peer_public_base(set->public_url, set->allowed_hosts, ing_req_header(req, "Host"),
                                out, n);
}

int ing_prm_resource(const ing_req_t *req, const char *server, char *out, size_t n)
{
    char base[512];
    int rc = base_of(req, base, sizeof(base));
    if (rc)
        return rc;
    int len = snprintf(out, n, "%s/mcp%s%s", base, server ? "/" : "", server ? server : "");
    return len < 0 || (size_t)len >= n ? MCPQ_ETOOBIG : 0;
}

/* Appends `, name="value"` to out (used bytes *at) with quotes and backslashes made '. */
static int param(char *out, size_t n, size_t *at, const char *name, const char *value, int first)
{
    if (!value || !*value)
        return 0;
    int len = snprintf(out + *at, n - *at, "%s%s=\"", first ? " " : ", ", name);
    if (len < 0 || (size_t)len >= n - *at)
        return -1;
    *at += (size_t)len;
    for (const char *p = value; *p; p++) {
        if (*at + 2 >= n)
            return -1;
        out[(*at)++] = *p == '"' || *p == '\\' ? '\'' : *p;
    }
    out[(*at)++] = '"';
    out[*at] = '\0';
    return 0;
}

int ing_prm_challenge(const ing_req_t *req, const char *server, const char *error,
                      const char *scope, const char *description, char *out, size_t n)
{
    char base[512], url[768];
    size_t at = 0;
    int have = base_of(req, base, sizeof(base)) == 0;
    if (have)
        snprintf(url, sizeof(url), "%s" ING_PRM_PATH "/mcp%s%s", base, server ? "/" : "",
                 server ? server : "");
    int len = snprintf(out, n, "Bearer");
    if (len < 0 || (size_t)len >= n)
        return -1;
    at = (size_t)len;
    int rc = param(out, n, &at, have ? "resource_metadata" : "realm", have ? url : "mcpq", 1);
    if (!rc)
        rc = param(out, n, &at, "error", error, 0);
    if (!rc)
        rc = param(out, n, &at, "scope", scope, 0);
    if (!rc)
        rc = param(out, n, &at, "error_description", description, 0);
    if (rc)
        snprintf(out, n, "Bearer realm=\"mcpq\"");
    return rc;
}
