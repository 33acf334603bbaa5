#include "auth.h"

#include <openssl/sha.h>
#include <string.h>
#include <strings.h>

/* When MCPQ_ALLOWED_ORIGINS is empty: the local machine on any port. */
static const char default_origins[] =
    "http://localhost:*,http://127.0.0.1:*,https://localhost:*,https://127.0.0.1:*,"
    "http://[::1]:*,https://[::1]:*";

const ing_tenant_t *ing_auth_tenant(struct MHD_Connection *conn, const ing_registry_t *reg,
                                    const char **why)
{
    const char *key = NULL;
    const char *authz = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    if (authz) {
        if (strncasecmp(authz, "Bearer ", 7) != 0) {
            *why = "unsupported Authorization scheme (use Bearer)";
            return NULL;
        }
        key = authz + 7;
        while (*key == ' ')
            key++;
    } else {
        key = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Api-Key");
    }
    if (!key || !*key) {
        *why = "missing credentials (Authorization: Bearer <key> or X-Api-Key)";
        return NULL;
    }
    unsigned char sha[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)key, strlen(key), sha);
    const ing_tenant_t *t = reg ? ing_registry_auth_key(reg, sha) : NULL;
    if (!t)
        *why = "invalid API key";
    return t;
}

/* Does one list entry (len bytes) match value? A trailing ":*" matches any port or none. */
static int entry_matches(const char *e, size_t len, const char *value)
{
    while (len && (*e == ' ' || *e == '\t'))
        e++, len--;
    while (len && (e[len - 1] == ' ' || e[len - 1] == '\t'))
        len--;
    if (!len)
        return 0;
    if (len >= 2 && e[len - 2] == ':' && e[len - 1] == '*') {
        size_t base = len - 2;
        if (strncasecmp(value, e, base) != 0)
            return 0;
        const char *rest = value + base;
        if (*rest == '\0')
            return 1;
        if (*rest != ':' || !rest[1])
            return 0;
        for (const char *p = rest + 1; *p; p++)
            if (*p < '0' || *p > '9')
                return 0;
        return 1;
    }
    return strlen(value) == len && strncasecmp(value, e, len) == 0;
}

int ing_auth_listed(const char *list, const char *value)
{
    const char *p = list;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (entry_matches(p, len, value))
            return 1;
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

int ing_auth_origin_ok(struct MHD_Connection *conn, const char *allowed_origins,
                       const char *allowed_hosts)
{
    const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    if (origin) {
        const char *list = allowed_origins && *allowed_origins ? allowed_origins : default_origins;
        if (!ing_auth_listed(list, origin))
            return 0;
    }
    if (allowed_hosts && *allowed_hosts) {
        const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
        if (!host || !ing_auth_listed(allowed_hosts, host))
            return 0;
    }
    return 1;
}
