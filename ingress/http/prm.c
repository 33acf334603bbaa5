/*
 * prm.c - Protected Resource Metadata and Bearer challenges (prm.h).
 */
#include "prm.h"

#include "err.h"
#include "peer.h"
#include "util.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The base of req's absolute URLs (peer.h). */
static int base_of(const ing_req_t *req, char *out, size_t n)
{
    const mcpq_settings_t *set = req->ctx->set;
    return ing_peer_public_base(set->public_url, set->allowed_hosts, ing_req_header(req, "Host"),
                                out, n);
}

/* The MCP endpoint path of url's path ("/mcp" or "/mcp/<server>", into out), or "" for
 * any other path. url may carry a query. */
static void endpoint_of(const char *url, char *out, size_t n)
{
    size_t len = strcspn(url, "?");
    out[0] = '\0';
    if ((len == 4 || len == 5) && strncmp(url, "/mcp/", len) == 0)
        snprintf(out, n, "/mcp");
    else if (len > 5 && strncmp(url, "/mcp/", 5) == 0 && util_id_ok(url + 5, len - 5, 127, ".-_") &&
             len < n)
        snprintf(out, n, "%.*s", (int)len, url);
}

int ing_prm_resource(const ing_req_t *req, char *out, size_t n)
{
    char base[512], path[160];
    int rc = base_of(req, base, sizeof(base));
    if (rc)
        return rc;
    endpoint_of(req->uri, path, sizeof(path));
    int len = snprintf(out, n, "%s%s", base, path);
    return len < 0 || (size_t)len >= n ? MCPQ_ETOOBIG : 0;
}

const char *ing_prm_server(const ing_req_t *req, char *out, size_t n)
{
    char path[160];
    endpoint_of(req->uri, path, sizeof(path));
    if (strncmp(path, "/mcp/", 5) != 0 || strlen(path + 5) >= n)
        return NULL;
    memcpy(out, path + 5, strlen(path + 5) + 1);
    return out;
}

/* Appends ` name="value"` (first) or `, name="value"` to out (used bytes *at), with quotes
 * and backslashes made '. */
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

int ing_prm_challenge(const ing_req_t *req, const char *error, const char *scope,
                      const char *description, char *out, size_t n)
{
    char base[512], path[160], url[768];
    int have = base_of(req, base, sizeof(base)) == 0;
    endpoint_of(req->uri, path, sizeof(path));
    if (have)
        snprintf(url, sizeof(url), "%s" ING_PRM_PATH "%s", base, path);
    int len = snprintf(out, n, "Bearer");
    if (len < 0 || (size_t)len >= n)
        return -1;
    size_t at = (size_t)len;
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

/* Adds s to the array a unless it holds it already. */
static void add_once(cJSON *a, const char *s)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, a) if (strcmp(cJSON_GetStringValue(e), s) == 0) return;
    cJSON_AddItemToArray(a, cJSON_CreateString(s));
}

/* The issuers and scopes of every tenant that takes tokens into servers and scopes: the same
 * for every resource, so that no answer tells which server names exist (prm.h). */
static void collect(const ing_registry_t *reg, cJSON *servers, cJSON *scopes)
{
    for (size_t i = 0; i < ing_registry_tenant_count(reg); i++) {
        const ing_tenant_oauth_t *o = ing_registry_tenant_at(reg, i)->oauth;
        if (!o)
            continue;
        for (size_t j = 0; j < o->n_issuers; j++)
            add_once(servers, o->issuers[j]);
        for (size_t j = 0; j < o->n_scopes_supported; j++)
            add_once(scopes, o->scopes_supported[j]);
    }
}

void ing_prm_unauthorized(const ing_req_t *req, const ing_registry_t *reg, int token,
                          const char *why, char *out, size_t n)
{
    char scope[1024] = "";
    cJSON *servers = cJSON_CreateArray(), *scopes = cJSON_CreateArray();
    const cJSON *e;
    if (reg && servers && scopes)
        collect(reg, servers, scopes);
    cJSON_ArrayForEach(e, scopes)
        util_word_add(scope, sizeof(scope), e->valuestring, strlen(e->valuestring));
    if (cJSON_GetArraySize(servers) > 0)
        ing_prm_challenge(req, token ? "invalid_token" : NULL, scope, token ? why : NULL, out, n);
    else /* no metadata to point at here */
        snprintf(out, n, "Bearer realm=\"mcpq\"%s", token ? ", error=\"invalid_token\"" : "");
    cJSON_Delete(servers);
    cJSON_Delete(scopes);
}

/* The metadata document of the resource at base + path, or NULL (404) when no tenant takes
 * tokens. */
static char *document(const ing_registry_t *reg, const char *base, const char *path)
{
    cJSON *doc = cJSON_CreateObject(), *servers = cJSON_CreateArray(),
          *scopes = cJSON_CreateArray();
    char *out = NULL, resource[768];
    collect(reg, servers, scopes);
    snprintf(resource, sizeof(resource), "%s%s", base, path);
    if (doc && servers && scopes && cJSON_GetArraySize(servers) > 0) {
        cJSON_AddStringToObject(doc, "resource", resource);
        cJSON_AddItemToObject(doc, "authorization_servers", servers);
        servers = NULL;
        if (cJSON_GetArraySize(scopes) > 0) {
            cJSON_AddItemToObject(doc, "scopes_supported", scopes);
            scopes = NULL;
        }
        cJSON *methods = cJSON_AddArrayToObject(doc, "bearer_methods_supported");
        cJSON_AddItemToArray(methods, cJSON_CreateString("header"));
        cJSON_AddStringToObject(doc, "resource_name", "mcpq");
        out = cJSON_PrintUnformatted(doc);
    }
    cJSON_Delete(doc);
    cJSON_Delete(servers);
    cJSON_Delete(scopes);
    return out;
}

static void answer(ing_resp_t *resp, int status, char *body)
{
    resp->status = status;
    resp->content_type = "application/json";
    resp->body = body;
}

void ing_prm_route(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp)
{
    char base[512], path[160];
    const char *rest = url + strlen(ING_PRM_PATH);
    endpoint_of(rest, path, sizeof(path));
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        resp->allow = "GET, HEAD";
        answer(resp, 405, strdup("{\"error\":\"method not allowed\"}"));
        return;
    }
    if (*rest && !*path) {
        answer(resp, 404, strdup("{\"error\":\"not found\"}"));
        return;
    }
    ing_registry_t *reg = ing_ctx_registry(req->ctx);
    if (!reg || base_of(req, base, sizeof(base)) != 0) {
        answer(resp, 503,
               strdup(reg ? "{\"error\":\"no trusted base URL for this Host: set MCPQ_PUBLIC_URL\"}"
                          : "{\"error\":\"registry not loaded yet; try again\"}"));
        ing_registry_unref(reg);
        return;
    }
    char *doc = document(reg, base, path);
    ing_registry_unref(reg);
    if (!doc) {
        answer(resp, 404,
               strdup("{\"error\":\"no tenant takes access tokens for this resource\"}"));
        return;
    }
    answer(resp, 200, doc);
    ing_resp_header(resp, "Cache-Control", "max-age=60");
}
