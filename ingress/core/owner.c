/*
 * owner.c - who may read or act on a task, a delivery or a replay (owner.h).
 */
#include "owner.h"

#include "err.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

int ing_owner_of(const ing_principal_t *who, char *out, size_t n)
{
    const char *kind = NULL, *id = who ? who->id : NULL;
    if (n)
        out[0] = '\0';
    if (!who || !id || !*id)
        return MCPQ_EINVAL;
    switch (who->kind) {
    case 'k':
        kind = "key";
        break;
    case 'a':
        kind = "app";
        break;
    case 'o': /* a token without a user claim is its client's own */
        kind = who->user ? "user" : "client";
        id = who->user ? who->user : who->app;
        break;
    default:
        return MCPQ_EINVAL;
    }
    if (!id || !*id)
        return MCPQ_EINVAL;
    int len = snprintf(out, n, "%s:%s", kind, id);
    if (len < 0 || (size_t)len >= n) {
        if (n)
            out[0] = '\0';
        return MCPQ_ETOOBIG;
    }
    return 0;
}

/* How one aud value v binds: 1 the whole tenant, 0 nothing (another API's), else 2 with
 * *server and *len naming a server. */
static int aud_binds(const char *v, const char *base, const char *const *audiences,
                     size_t n_audiences, const char **server, size_t *len)
{
    for (size_t i = 0; i < n_audiences; i++)
        if (audiences[i] && strcmp(v, audiences[i]) == 0)
            return 1;
    size_t bl = base ? strlen(base) : 0;
    if (!base || strncmp(v, base, bl) != 0)
        return 0;
    const char *rest = v + bl;
    if (!*rest || strcmp(rest, "/") == 0 || strcmp(rest, "/mcp") == 0 || strcmp(rest, "/mcp/") == 0)
        return 1;
    if (strncmp(rest, "/mcp/", 5) != 0 || !util_id_ok(rest + 5, strlen(rest + 5), 127, ".-_"))
        return 0;
    *server = rest + 5;
    *len = strlen(rest + 5);
    return 2;
}

int ing_owner_binding(const cJSON *claims, const char *base, const char *const *audiences,
                      size_t n_audiences, char *out, size_t n)
{
    const cJSON *aud = cJSON_GetObjectItemCaseSensitive(claims, "aud");
    const cJSON *one = cJSON_IsString(aud) ? aud : cJSON_IsArray(aud) ? aud->child : NULL;
    int named = 0, full = 0;
    if (!n)
        return MCPQ_ETOOBIG;
    out[0] = '\0';
    /* A whole-tenant value decides wherever it stands in the array, so servers that do not fit
     * fail only once every value has been read (the answer never depends on the order). */
    for (const cJSON *v = one; v; v = cJSON_IsArray(aud) ? v->next : NULL) {
        const char *server = NULL;
        size_t len = 0;
        int b = cJSON_IsString(v)
                    ? aud_binds(v->valuestring, base, audiences, n_audiences, &server, &len)
                    : 0;
        if (b == 1) {
            out[0] = '\0';
            return 0;
        }
        if (b == 2) {
            named = 1;
            if (!full && util_word_add(out, n, server, len) < 0)
                full = 1;
        }
    }
    if (full) {
        out[0] = '\0';
        return MCPQ_ETOOBIG;
    }
    return named ? 0 : MCPQ_ENOTFOUND;
}

int ing_owner_bound(const ing_principal_t *who, const char *server)
{
    if (!who)
        return 0;
    return !who->servers ||
           (server && *server && util_word_in(who->servers, server, strlen(server)));
}

int ing_owner_may(const ing_registry_t *reg, const ing_principal_t *who, const char *owner,
                  const char *server, const char *tool)
{
    char mine[ING_OWNER_MAX];
    if (!who || !ing_owner_bound(who, server) ||
        ing_access_check(reg, who, server, tool, NULL, 0) != ING_ACCESS_OK)
        return 0;
    if (util_word_in(who->perms, ING_OWNER_PERM_ALL, sizeof(ING_OWNER_PERM_ALL) - 1))
        return 1;
    return owner && *owner && ing_owner_of(who, mine, sizeof(mine)) == 0 &&
           strcmp(owner, mine) == 0;
}
