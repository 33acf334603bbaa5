#include "cfg.h"

#include "cfgkinds.h"
#include "cfgsecret.h"
#include "err.h"
#include "kinds.h"
#include "sch.h"
#include "settings.h"
#include "task.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One load: where its error goes, and the file name every error starts with. */
typedef struct cfg_ctx {
    const char *file; /* NULL for cfg_load_string */
    char *errstr;
    size_t errstr_size;
} cfg_ctx_t;

/* Records "<file>: <message>" and returns MCPQ_EINVAL. */
static int cfg_fail(cfg_ctx_t *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int cfg_fail(cfg_ctx_t *x, const char *fmt, ...)
{
    va_list ap;
    size_t n = 0;
    if (!x->errstr || !x->errstr_size)
        return MCPQ_EINVAL;
    if (x->file) {
        int w = snprintf(x->errstr, x->errstr_size, "%s: ", x->file);
        n = w < 0 ? 0 : (size_t)w < x->errstr_size ? (size_t)w : x->errstr_size - 1;
    }
    va_start(ap, fmt);
    vsnprintf(x->errstr + n, x->errstr_size - n, fmt, ap);
    va_end(ap);
    return MCPQ_EINVAL;
}

/* ---- text ---- */

/* Offset of the first byte that is not valid UTF-8 (or a NUL byte), or len. */
static size_t utf8_bad_offset(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char b = s[i];
        size_t n = b < 0x80             ? 0
                   : (b & 0xe0) == 0xc0 ? 1
                   : (b & 0xf0) == 0xe0 ? 2
                   : (b & 0xf8) == 0xf0 ? 3
                                        : 9;
        uint32_t cp = n == 0 ? b : n == 1 ? (b & 0x1fu) : n == 2 ? (b & 0x0fu) : (b & 0x07u);
        if (b == 0 || n == 9 || i + n >= len + (n == 0))
            return i;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return i;
            cp = (cp << 6) | (s[i + k] & 0x3fu);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return i;
        i += n + 1;
    }
    return len;
}

/* 1-based line and column (in characters) of byte offset pos. */
static void line_col(const char *text, size_t pos, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < pos; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else if ((text[i] & 0xc0) != 0x80) {
            (*col)++;
        }
    }
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * The first member name used twice in one object of v (depth first), with the JSON path of
 * that object in path (clipped to size); NULL when there is none. cJSON keeps both members
 * and every lookup here finds the first, while other readers of the same file take the last:
 * {"secret_env": "A", "secret_env": "B"} left a "secret_env" in the normalized document
 * (tests/fuzz/corpus/config/regress-duplicate-member). *oom is set when memory ran out.
 */
static const char *duplicate_member(const cJSON *v, char *path, size_t size, size_t len, int *oom)
{
    size_t n = 0, i = 0;
    const char *dup = NULL;
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
        return NULL;
    for (const cJSON *c = v->child; c; c = c->next, i++) {
        int w = cJSON_IsArray(v) ? snprintf(path + len, size - len, "[%zu]", i)
                                 : snprintf(path + len, size - len, ".%.100s", c->string);
        size_t sub = w < 0 ? len : len + (size_t)w < size ? len + (size_t)w : size - 1;
        if ((dup = duplicate_member(c, path, size, sub, oom)) || *oom)
            return dup;
        n++;
    }
    path[len] = '\0';
    if (!cJSON_IsObject(v) || n < 2)
        return NULL;
    const char **names = malloc(n * sizeof(*names));
    if (!names) {
        *oom = 1;
        return NULL;
    }
    i = 0;
    for (const cJSON *c = v->child; c; c = c->next)
        names[i++] = c->string ? c->string : "";
    qsort(names, n, sizeof(*names), name_cmp);
    for (i = 1; i < n && !dup; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            dup = names[i];
    free(names);
    return dup;
}

static cJSON *parse(cfg_ctx_t *x, const char *text, size_t len)
{
    const char *end = NULL;
    size_t pos, line, col;
    if (len > CFG_MAX_BYTES) {
        cfg_fail(x, "larger than %u bytes", CFG_MAX_BYTES);
        return NULL;
    }
    if ((pos = utf8_bad_offset((const unsigned char *)text, len)) < len) {
        line_col(text, pos, &line, &col);
        cfg_fail(x, "line %zu, column %zu: %s", line, col,
                 text[pos] ? "invalid UTF-8" : "NUL byte in the text");
        return NULL;
    }
    cJSON *doc = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    pos = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
    while (doc && pos < len && strchr(" \t\r\n", text[pos]))
        pos++;
    if (!doc || pos < len) {
        line_col(text, pos, &line, &col);
        cfg_fail(x, "line %zu, column %zu: %s", line, col,
                 doc ? "unexpected text after the JSON document" : "invalid JSON");
        cJSON_Delete(doc);
        return NULL;
    }
    char path[256] = "$";
    int nomem = 0;
    const char *dup = duplicate_member(doc, path, sizeof(path), 1, &nomem);
    if (dup || nomem) {
        if (nomem)
            cfg_fail(x, "out of memory");
        else
            cfg_fail(x, "%s: duplicate member \"%.100s\"", path, dup);
        cJSON_Delete(doc);
        return NULL;
    }
    return doc;
}

/* ---- a set of names, to find duplicates ---- */

typedef struct names {
    struct hsearch_data h;
    char **keys;
    size_t n, cap;
} names_t;

static int names_init(names_t *t, size_t cap)
{
    memset(t, 0, sizeof(*t));
    t->cap = cap;
    t->keys = calloc(cap + 1, sizeof(*t->keys));
    if (!t->keys || !hcreate_r(cap * 2 + 16, &t->h)) {
        free(t->keys);
        t->keys = NULL;
        return MCPQ_ENOMEM;
    }
    return 0;
}

static void names_cleanup(names_t *t)
{
    if (!t->keys)
        return;
    hdestroy_r(&t->h);
    for (size_t i = 0; i < t->n; i++)
        free(t->keys[i]);
    free(t->keys);
    t->keys = NULL;
}

/*
 * Adds the name (kind, a, b) with val. Returns 0 when it is new, 1 when it was there
 * already (*first = the val it was added with), MCPQ_ENOMEM. With add == 0 only looks.
 */
static int names_put(names_t *t, char kind, const char *a, const char *b, intptr_t val,
                     intptr_t *first, int add)
{
    size_t la = strlen(a), lb = b ? strlen(b) : 0;
    ENTRY e, *found = NULL;
    char *k = malloc(la + lb + 4);
    if (!k || (add && t->n >= t->cap)) {
        free(k);
        return MCPQ_ENOMEM;
    }
    k[0] = kind;
    k[1] = '\x1f';
    memcpy(k + 2, a, la);
    k[2 + la] = '\x1f';
    memcpy(k + 3 + la, b ? b : "", lb + 1);
    e.key = k;
    e.data = (void *)val;
    if (!hsearch_r(e, add ? ENTER : FIND, &found, &t->h) && add) {
        free(k);
        return MCPQ_ENOMEM;
    }
    if (found && found->key != k) {
        *first = (intptr_t)found->data;
        free(k);
        return 1;
    }
    if (!add) {
        free(k);
        return 0;
    }
    t->keys[t->n++] = k;
    return 0;
}

static int names_add(names_t *t, char kind, const char *a, const char *b, intptr_t val,
                     intptr_t *first)
{
    return names_put(t, kind, a, b, val, first, 1);
}

static int names_has(names_t *t, char kind, const char *a, const char *b)
{
    intptr_t unused;
    return names_put(t, kind, a, b, 0, &unused, 0) == 1;
}

/* ---- normalization helpers ---- */

/* The first element of the array obj[key], or NULL. */
static cJSON *first_item(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsArray(v) ? v->child : NULL;
}

static const char *str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Sets obj[key] to a string value, replacing what was there. 0 or MCPQ_ENOMEM. */
static int set_str(cJSON *obj, const char *key, const char *val)
{
    cJSON *v = cJSON_CreateString(val);
    if (!v)
        return MCPQ_ENOMEM;
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        return cJSON_ReplaceItemInObjectCaseSensitive(obj, key, v) ? 0 : MCPQ_ENOMEM;
    return cJSON_AddItemToObject(obj, key, v) ? 0 : MCPQ_ENOMEM;
}

static int oom(cfg_ctx_t *x)
{
    cfg_fail(x, "out of memory");
    return MCPQ_ENOMEM;
}

/* An environment variable's value, or NULL when it is unset or empty. */
static const char *env_value(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* 1 when s is "whsec_" + base64 of 24 to 64 bytes (docs/webhooks.md), decoded as webhook
 * signing decodes it (common/whsig.c): standard alphabet, padding optional, strict. */
static int whsec_ok(const char *s)
{
    unsigned char key[64];
    size_t len = 0;
    if (strncmp(s, "whsec_", 6) != 0 ||
        util_b64_decode(s + 6, strlen(s + 6), 0, key, sizeof(key), &len) < 0)
        return 0;
    return len >= 24;
}

/*
 * Resolves obj's "<member>_env" into member ("secret" or "previous_secret"; the variable
 * wins when set, a literal is the fallback) and drops "<member>_env". whsec: the secret must
 * be a Standard Webhooks secret. path names obj in errors.
 */
static int resolve_member(cfg_ctx_t *x, cJSON *obj, const char *path, const char *member, int whsec)
{
    char env_key[32];
    snprintf(env_key, sizeof(env_key), "%s_env", member);
    const char *env = str(obj, env_key), *val = env ? env_value(env) : NULL;
    if (val && set_str(obj, member, val) < 0)
        return oom(x);
    if (env && !val && !str(obj, member))
        return cfg_fail(x, "%s.%s: environment variable \"%s\" is not set or empty", path, env_key,
                        env);
    if (whsec && str(obj, member) && !whsec_ok(str(obj, member)))
        return cfg_fail(x, "%s.%s: must be \"whsec_\" followed by the base64 of 24 to 64 bytes",
                        path, val ? env_key : member);
    cJSON_DeleteItemFromObjectCaseSensitive(obj, env_key);
    return 0;
}

/* The secret of an app or webhook, and the previous one of a rotation with its expiry. */
static int resolve_secret(cfg_ctx_t *x, cJSON *obj, const char *path, int whsec)
{
    int rc = resolve_member(x, obj, path, "secret", whsec);
    if (rc < 0 || (rc = resolve_member(x, obj, path, "previous_secret", whsec)) < 0)
        return rc;
    const char *expires = str(obj, "previous_secret_expires");
    int64_t ms;
    if (expires && !str(obj, "previous_secret"))
        return cfg_fail(x, "%s.previous_secret_expires: there is no previous_secret", path);
    if (expires && util_parse_utc(expires, &ms) < 0)
        return cfg_fail(x, "%s.previous_secret_expires: not a UTC time (2026-01-31T12:00:00Z)",
                        path);
    return 0;
}

/* Replaces api key k (at path) of tenant ti with {"id", "sha256"} (and its "rate_limit");
 * checks the key is used once across all tenants. */
static int normalize_key(cfg_ctx_t *x, names_t *names, cJSON *keys, cJSON *k, const char *path,
                         int ti, int ki)
{
    const char *literal = str(k, "key"), *env = str(k, "key_env"), *hash = str(k, "sha256");
    char hex[65];
    intptr_t first = 0;
    if (env && !(literal = env_value(env)))
        return cfg_fail(x, "%s.key_env: environment variable \"%s\" is not set or empty", path,
                        env);
    if (literal)
        util_sha256_hex(literal, strlen(literal), hex);
    else
        snprintf(hex, sizeof(hex), "%s", hash);
    int rc = names_add(names, 'H', hex, NULL, (intptr_t)ti << 24 | ki, &first);
    if (rc < 0)
        return oom(x);
    if (rc)
        return cfg_fail(x, "%s: the same key is already used by $.tenants[%d].api_keys[%d]", path,
                        (int)(first >> 24), (int)(first & 0xffffff));
    cJSON *norm = cJSON_CreateObject();
    if (!norm || !cJSON_AddStringToObject(norm, "id", str(k, "id")) ||
        !cJSON_AddStringToObject(norm, "sha256", hex)) {
        cJSON_Delete(norm);
        return oom(x);
    }
    cJSON *limit = cJSON_DetachItemFromObjectCaseSensitive(k, "rate_limit");
    if (limit)
        cJSON_AddItemToObject(norm, "rate_limit", limit);
    cJSON *scopes = cJSON_DetachItemFromObjectCaseSensitive(k, "scopes");
    if (scopes)
        cJSON_AddItemToObject(norm, "scopes", scopes);
    cJSON *lit = cJSON_GetObjectItemCaseSensitive(k, "key");
    if (cJSON_IsString(lit))
        explicit_bzero(lit->valuestring, strlen(lit->valuestring));
    cJSON_ReplaceItemViaPointer(keys, k, norm);
    return 0;
}

/* ---- the checks ---- */

/* Tenant t's "robots" (t is $.tenants[ti], at path): a robot belongs to one tenant, and
 * "_any" is the queue of tasks without a RobotId (common/task.c), which no tenant can own. */
static int check_robots(cfg_ctx_t *x, names_t *names, const cJSON *tenants, const cJSON *t,
                        const char *path, int ti)
{
    intptr_t first;
    int i = 0, rc;
    for (const cJSON *r = first_item(t, "robots"); r; r = r->next, i++) {
        if (strcmp(r->valuestring, TASK_ROBOT_ANY) == 0)
            return cfg_fail(x,
                            "%s.robots[%d]: \"" TASK_ROBOT_ANY "\" is the queue of tasks without "
                            "a RobotId and cannot be declared",
                            path, i);
        if ((rc = names_add(names, 'R', r->valuestring, NULL, (intptr_t)ti << 24 | i, &first)) < 0)
            return oom(x);
        if (rc)
            return cfg_fail(x,
                            "%s.robots[%d]: robot \"%s\" is declared by tenant \"%s\" "
                            "($.tenants[%d].robots[%d]) and by tenant \"%s\"; a robot belongs "
                            "to one tenant",
                            path, i, r->valuestring,
                            str(cJSON_GetArrayItem(tenants, (int)(first >> 24)), "id"),
                            (int)(first >> 24), (int)(first & 0xffffff), str(t, "id"));
    }
    return 0;
}

/* 0 when url (at path) is https://, or http:// to a loopback host (localhost, 127.0.0.1,
 * [::1]), as libcurl's URL parser reads it; else the error. */
static int check_oauth_url(cfg_ctx_t *x, const char *url, const char *path)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL;
    int rc = 0;
    if (!u)
        return oom(x);
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
        rc = cfg_fail(x, "%s: not a URL libcurl can parse", path);
    else if (strcmp(scheme, "https") != 0 &&
             !(strcmp(scheme, "http") == 0 &&
               (strcmp(host, "localhost") == 0 || strcmp(host, "127.0.0.1") == 0 ||
                strcmp(host, "[::1]") == 0)))
        rc = cfg_fail(x, "%s: must be https:// (http:// only to localhost, 127.0.0.1 or [::1])",
                      path);
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return rc;
}

/* Tenant t's "oauth" (t is at path): URLs, claims, scopes_supported, the introspection
 * secret. */
static int check_oauth(cfg_ctx_t *x, cJSON *t, const char *path)
{
    cJSON *o = cJSON_GetObjectItemCaseSensitive(t, "oauth");
    const cJSON *claims = cJSON_GetObjectItemCaseSensitive(o, "claims"), *e;
    cJSON *intro = cJSON_GetObjectItemCaseSensitive(o, "introspection");
    char sub[192];
    int i = 0, rc;
    if (!o)
        return 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "issuers"))
    {
        snprintf(sub, sizeof(sub), "%s.oauth.issuers[%d]", path, i++);
        if ((rc = check_oauth_url(x, e->valuestring, sub)) < 0)
            return rc;
    }
    if (str(o, "jwks_uri")) {
        snprintf(sub, sizeof(sub), "%s.oauth.jwks_uri", path);
        if (i != 1)
            return cfg_fail(x, "%s: allowed only with exactly one issuer (it has %d)", sub, i);
        if ((rc = check_oauth_url(x, str(o, "jwks_uri"), sub)) < 0)
            return rc;
    }
    if (str(claims, "tenant_value") && !str(claims, "tenant"))
        return cfg_fail(x,
                        "%s.oauth.claims.tenant_value: needs claims.tenant (the claim it is "
                        "compared with)",
                        path);
    i = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "scopes_supported"))
    {
        if (strcmp(e->valuestring, "offline_access") == 0)
            return cfg_fail(x,
                            "%s.oauth.scopes_supported[%d]: \"offline_access\" is never "
                            "advertised (refresh tokens are the authorization server's business)",
                            path, i);
        i++;
    }
    if (intro) {
        snprintf(sub, sizeof(sub), "%s.oauth.introspection.endpoint", path);
        if ((rc = check_oauth_url(x, str(intro, "endpoint"), sub)) < 0)
            return rc;
        snprintf(sub, sizeof(sub), "%s.oauth.introspection", path);
        if ((rc = resolve_member(x, intro, sub, "client_secret", 0)) < 0)
            return rc;
    }
    return 0;
}

static int str_same(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

int cfg_check_issuers_shared(const cJSON *t, const char *t_path, const cJSON *u, const char *u_path,
                             char *errstr, size_t errstr_size)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(t, "oauth");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(u, "oauth"), *iss, *jss;
    const cJSON *ti = cJSON_GetObjectItemCaseSensitive(o, "introspection");
    const cJSON *ui = cJSON_GetObjectItemCaseSensitive(p, "introspection");
    const char *mine = str(cJSON_GetObjectItemCaseSensitive(o, "claims"), "tenant");
    const char *theirs = str(cJSON_GetObjectItemCaseSensitive(p, "claims"), "tenant");
    char where[64] = "";
    int i = 0;
    if (u_path)
        snprintf(where, sizeof(where), " (%s)", u_path);
    cJSON_ArrayForEach(iss, cJSON_GetObjectItemCaseSensitive(o, "issuers"))
    {
        int j = 0;
        cJSON_ArrayForEach(jss, cJSON_GetObjectItemCaseSensitive(p, "issuers"))
        {
            if (!cJSON_IsString(iss) || !cJSON_IsString(jss) ||
                strcmp(iss->valuestring, jss->valuestring) != 0) {
                j++;
                continue;
            }
            /* A tenant's introspection is its first issuer's (oauth.h, ing_oauth_configure). */
            const cJSON *a = i == 0 ? ti : NULL, *b = j == 0 ? ui : NULL;
            if (!mine || !theirs) {
                snprintf(errstr, errstr_size,
                         "%s.oauth.issuers[%d]: issuer \"%s\" is trusted by tenant \"%s\"%s too; "
                         "tenants sharing an issuer must each set oauth.claims.tenant (%s does "
                         "not)",
                         t_path, i, iss->valuestring, str(u, "id"), where,
                         mine ? str(u, "id") : str(t, "id"));
                return MCPQ_EINVAL;
            }
            /* Their keys and introspection answers come from one place for all of them. */
            const char *what = NULL, *at = NULL;
            if (!str_same(str(o, "jwks_uri"), str(p, "jwks_uri"))) {
                what = "jwks_uri";
                at = str(o, "jwks_uri") ? ".jwks_uri" : NULL;
            } else if (!str_same(str(a, "endpoint"), str(b, "endpoint")) ||
                       !str_same(str(a, "client_id"), str(b, "client_id"))) {
                what = "introspection endpoint and client_id";
                at = a ? ".introspection" : NULL;
            }
            if (what) {
                char sub[32];
                snprintf(sub, sizeof(sub), ".issuers[%d]", i);
                snprintf(errstr, errstr_size,
                         "%s.oauth%s: issuer \"%s\" is trusted by tenant \"%s\"%s too, with "
                         "another %s; tenants sharing an issuer must name the same %s for it "
                         "(or none)",
                         t_path, at ? at : sub, iss->valuestring, str(u, "id"), where, what, what);
                return MCPQ_EINVAL;
            }
            j++;
        }
        i++;
    }
    return 0;
}

/* cfg_check_issuers_shared over every pair of tenants of the file. */
static int check_shared_issuers(cfg_ctx_t *x, const cJSON *tenants)
{
    char msg[1024], path[32], other[32];
    int ti = 0;
    for (const cJSON *t = tenants->child; t; t = t->next, ti++) {
        int tj = 0;
        snprintf(path, sizeof(path), "$.tenants[%d]", ti);
        for (const cJSON *u = tenants->child; u != t; u = u->next, tj++) {
            snprintf(other, sizeof(other), "$.tenants[%d]", tj);
            if (cfg_check_issuers_shared(t, path, u, other, msg, sizeof(msg)) < 0)
                return cfg_fail(x, "%s", msg);
        }
    }
    return 0;
}

static int check_tenants(cfg_ctx_t *x, names_t *names, cJSON *tenants)
{
    char path[96], sub[128];
    intptr_t first;
    int ti = 0, i, rc;
    for (cJSON *t = tenants->child; t; t = t->next, ti++) {
        const char *id = str(t, "id");
        cJSON *keys = cJSON_GetObjectItemCaseSensitive(t, "api_keys"), *next;
        snprintf(path, sizeof(path), "$.tenants[%d]", ti);
        if ((rc = names_add(names, 'T', id, NULL, ti, &first)) < 0)
            return oom(x);
        if (rc)
            return cfg_fail(x, "%s.id: duplicate tenant id \"%s\" (also $.tenants[%d])", path, id,
                            (int)first);
        i = 0;
        for (cJSON *k = keys ? keys->child : NULL; k; k = next, i++) {
            next = k->next; /* normalize_key replaces k */
            snprintf(sub, sizeof(sub), "%s.api_keys[%d]", path, i);
            if ((rc = names_add(names, 'K', id, str(k, "id"), i, &first)) < 0)
                return oom(x);
            if (rc)
                return cfg_fail(x, "%s.id: duplicate api key id \"%s\" (also %s.api_keys[%d])", sub,
                                str(k, "id"), path, (int)first);
            if ((rc = normalize_key(x, names, keys, k, sub, ti, i)) < 0)
                return rc;
        }
        i = 0;
        for (cJSON *a = first_item(t, "apps"); a; a = a->next, i++) {
            snprintf(sub, sizeof(sub), "%s.apps[%d]", path, i);
            /* app ids are global: X-App-Id alone names the app */
            if ((rc = names_add(names, 'A', str(a, "app_id"), NULL, (intptr_t)ti << 24 | i,
                                &first)) < 0)
                return oom(x);
            if (rc)
                return cfg_fail(x,
                                "%s.app_id: duplicate app id \"%s\" (also $.tenants[%d].apps[%d])",
                                sub, str(a, "app_id"), (int)(first >> 24), (int)(first & 0xffffff));
            if ((rc = resolve_secret(x, a, sub, 0)) < 0)
                return rc;
        }
        if ((rc = check_robots(x, names, tenants, t, path, ti)) < 0 ||
            (rc = check_oauth(x, t, path)) < 0)
            return rc;
        i = 0;
        for (cJSON *w = first_item(t, "webhooks"); w; w = w->next, i++) {
            snprintf(sub, sizeof(sub), "%s.webhooks[%d]", path, i);
            if ((rc = names_add(names, 'W', id, str(w, "id"), i, &first)) < 0)
                return oom(x);
            if (rc)
                return cfg_fail(x, "%s.id: duplicate webhook id \"%s\" (also %s.webhooks[%d])", sub,
                                str(w, "id"), path, (int)first);
            if ((rc = resolve_secret(x, w, sub, 1)) < 0)
                return rc;
        }
    }
    return 0;
}

/* The "access" rule of a server or tool of tenant (at path): keys name API keys of the
 * tenant; apps name its apps, or anything when it takes OAuth tokens (an app claim). */
static int check_access(cfg_ctx_t *x, names_t *names, const cJSON *tenants, const cJSON *obj,
                        const char *path, const char *tenant)
{
    const cJSON *acc = cJSON_GetObjectItemCaseSensitive(obj, "access"), *e;
    intptr_t ti = 0, app = 0;
    int i = 0;
    if (!acc)
        return 0;
    names_put(names, 'T', tenant, NULL, 0, &ti, 0);
    int oauth = cJSON_HasObjectItem(cJSON_GetArrayItem(tenants, (int)ti), "oauth");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(acc, "keys"))
    {
        if (!names_has(names, 'K', tenant, e->valuestring))
            return cfg_fail(x, "%s.access.keys[%d]: tenant \"%s\" has no API key \"%s\"", path, i,
                            tenant, e->valuestring);
        i++;
    }
    i = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(acc, "apps"))
    {
        int rc = names_put(names, 'A', e->valuestring, NULL, 0, &app, 0);
        if (!oauth && (rc != 1 || (app >> 24) != ti))
            return cfg_fail(x,
                            "%s.access.apps[%d]: tenant \"%s\" has no app \"%s\" (and takes no "
                            "OAuth tokens whose app claim could name it)",
                            path, i, tenant, e->valuestring);
        i++;
    }
    return 0;
}

static int check_servers(cfg_ctx_t *x, names_t *names, const cJSON *tenants, cJSON *servers)
{
    intptr_t first;
    int i = 0, rc;
    for (cJSON *s = servers->child; s; s = s->next, i++) {
        const char *tenant = str(s, "tenant"), *name = str(s, "name");
        if (!names_has(names, 'T', tenant, NULL))
            return cfg_fail(x, "$.servers[%d].tenant: unknown tenant \"%s\"", i, tenant);
        if (strcmp(name, "system") == 0)
            return cfg_fail(x, "$.servers[%d].name: \"system\" is the built-in server", i);
        if ((rc = names_add(names, 'S', tenant, name, i, &first)) < 0)
            return oom(x);
        if (rc)
            return cfg_fail(x,
                            "$.servers[%d].name: duplicate server \"%s\" of tenant \"%s\" "
                            "(also $.servers[%d])",
                            i, name, tenant, (int)first);
        char path[64];
        snprintf(path, sizeof(path), "$.servers[%d]", i);
        if ((rc = check_access(x, names, tenants, s, path, tenant)) < 0)
            return rc;
    }
    return 0;
}

/* An explicit default_server must exist; an absent one becomes "default". */
static int check_default_servers(cfg_ctx_t *x, names_t *names, cJSON *tenants)
{
    int i = 0;
    for (cJSON *t = tenants->child; t; t = t->next, i++) {
        const char *ds = str(t, "default_server");
        if (!ds && set_str(t, "default_server", "default") < 0)
            return oom(x);
        if (ds && !names_has(names, 'S', str(t, "id"), ds))
            return cfg_fail(x, "$.tenants[%d].default_server: tenant \"%s\" has no server \"%s\"",
                            i, str(t, "id"), ds);
    }
    return 0;
}

static int check_version(cfg_ctx_t *x, int kind, cJSON *v, const char *path)
{
    char sub[160], msg[512];
    if (kind != KINDS_TOOL) {
        if (cfg_kinds_version(kind, v, path, msg, sizeof(msg)) < 0)
            return cfg_fail(x, "%s", msg);
        snprintf(sub, sizeof(sub), "%s.executor", path);
        return resolve_secret(x, cJSON_GetObjectItemCaseSensitive(v, "executor"), sub, 1);
    }
    const cJSON *fake = cJSON_GetObjectItemCaseSensitive(v, "fake");
    static const char *const schemas[] = {"inputSchema", "outputSchema"};
    for (int k = 0; k < 2; k++) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(v, schemas[k]);
        snprintf(sub, sizeof(sub), "%s.%s", path, schemas[k]);
        if (s && sch_schema_check(s, sub, msg, sizeof(msg)) != 0)
            return cfg_fail(x, "%s", msg);
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fake, "enabled")) &&
        !cJSON_GetObjectItemCaseSensitive(fake, "result"))
        return cfg_fail(x, "%s.fake: missing required property \"result\" (fake mode is enabled)",
                        path);
    if (!str(v, "mode") && set_str(v, "mode", "sync") < 0)
        return oom(x);
    snprintf(sub, sizeof(sub), "%s.executor", path);
    return resolve_secret(x, cJSON_GetObjectItemCaseSensitive(v, "executor"), sub, 1);
}

/* A published resource version v (at path, of $.tools[i]) serves a uri no other published
 * resource of its server serves. */
static int unique_uri(cfg_ctx_t *x, names_t *names, const cJSON *t, const cJSON *v,
                      const char *path, int i)
{
    const char *server = str(t, "server"), *uri = str(v, "uri");
    size_t ls = strlen(server), lu = strlen(uri);
    char *key = malloc(ls + lu + 2);
    intptr_t first;
    if (!key)
        return oom(x);
    memcpy(key, server, ls);
    key[ls] = '\x1f';
    memcpy(key + ls + 1, uri, lu + 1);
    int rc = names_add(names, 'U', str(t, "tenant"), key, i, &first);
    free(key);
    if (rc < 0)
        return oom(x);
    if (rc)
        return cfg_fail(x,
                        "%s.uri: \"%s\" is the uri of a published resource of server \"%s\" "
                        "already ($.tools[%d]); a server's published resources have distinct uris",
                        path, uri, server, (int)first);
    return 0;
}

static int check_tools(cfg_ctx_t *x, names_t *names, const cJSON *tenants, cJSON *tools)
{
    char path[96], sub[128];
    intptr_t first;
    int i = 0, rc;
    for (cJSON *t = tools->child; t; t = t->next, i++) {
        const char *tenant = str(t, "tenant"), *server = str(t, "server"), *name = str(t, "name");
        cJSON *versions = cJSON_GetObjectItemCaseSensitive(t, "versions");
        const cJSON *pub = cJSON_GetObjectItemCaseSensitive(t, "published");
        int found = 0, j = 0;
        snprintf(path, sizeof(path), "$.tools[%d]", i);
        if (!names_has(names, 'T', tenant, NULL))
            return cfg_fail(x, "%s.tenant: unknown tenant \"%s\"", path, tenant);
        if (!names_has(names, 'S', tenant, server))
            return cfg_fail(x, "%s.server: tenant \"%s\" has no server \"%s\"", path, tenant,
                            server);
        if ((rc = names_add(names, 'N', tenant, name, i, &first)) < 0)
            return oom(x);
        if (rc)
            return cfg_fail(x,
                            "%s.name: duplicate tool name \"%s\" in tenant \"%s\" "
                            "(also $.tools[%d])",
                            path, name, tenant, (int)first);
        if ((rc = check_access(x, names, tenants, t, path, tenant)) < 0)
            return rc;
        int kind = kinds_of(t);
        for (cJSON *v = versions->child; v; v = v->next, j++) {
            int k = 0;
            snprintf(sub, sizeof(sub), "%s.versions[%d]", path, j);
            for (const cJSON *w = versions->child; w != v; w = w->next, k++)
                if (strcmp(str(w, "version"), str(v, "version")) == 0)
                    return cfg_fail(x,
                                    "%s.version: duplicate version \"%s\" (also %s.versions[%d])",
                                    sub, str(v, "version"), path, k);
            if ((rc = check_version(x, kind, v, sub)) < 0)
                return rc;
            if (cJSON_IsString(pub) && strcmp(pub->valuestring, str(v, "version")) == 0) {
                found = 1;
                if (kind == KINDS_RESOURCE && (rc = unique_uri(x, names, t, v, sub, i)) < 0)
                    return rc;
            }
        }
        if (cJSON_IsString(pub) && !found)
            return cfg_fail(x, "%s.published: tool \"%s\" has no version \"%s\"", path, name,
                            pub->valuestring);
        if (!pub) {
            cJSON *last = cJSON_GetArrayItem(versions, j - 1);
            if (set_str(t, "published", str(last, "version")) < 0)
                return oom(x);
            snprintf(sub, sizeof(sub), "%s.versions[%d]", path, j - 1);
            if (kind == KINDS_RESOURCE && (rc = unique_uri(x, names, t, last, sub, i)) < 0)
                return rc;
        }
    }
    return 0;
}

/* An empty array at doc[key] when there is none; returns the array or NULL (no memory). */
static cJSON *array_member(cJSON *doc, const char *key)
{
    cJSON *a = cJSON_GetObjectItemCaseSensitive(doc, key);
    return a ? a : cJSON_AddArrayToObject(doc, key);
}

/* Capacity for the names set: one entry per tenant, key (id and hash), app, webhook, robot,
 * server, tool and resource uri. */
static size_t names_needed(const cJSON *doc)
{
    size_t n = 0;
    for (const cJSON *t = first_item(doc, "tenants"); t; t = t->next) {
        n += 1 + 2 * (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "api_keys"));
        n += (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "apps"));
        n += (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "webhooks"));
        n += (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "robots"));
    }
    n += (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "servers"));
    /* a tool's name, and a resource's published uri */
    return n + 2 * (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "tools"));
}

static int normalize(cfg_ctx_t *x, cJSON *doc)
{
    cJSON *tenants = cJSON_GetObjectItemCaseSensitive(doc, "tenants");
    cJSON *servers = array_member(doc, "servers"), *tools = array_member(doc, "tools");
    names_t names;
    int rc;
    if (!servers || !tools || names_init(&names, names_needed(doc)) < 0)
        return oom(x);
    rc = check_tenants(x, &names, tenants);
    if (rc == 0)
        rc = check_shared_issuers(x, tenants);
    if (rc == 0)
        rc = check_servers(x, &names, tenants, servers);
    if (rc == 0)
        rc = check_default_servers(x, &names, tenants);
    if (rc == 0)
        rc = check_tools(x, &names, tenants, tools);
    names_cleanup(&names);
    return rc;
}

/* The env of an mcp executor or a federate entry at path: never a reference to a setting of
 * mcpq's own (settings.h: the job-signing key, the Redis and Kafka passwords, ...), which would
 * hand the worker's secrets to an upstream; with literal, no literal value either (a federate
 * entry's schema refuses those itself). */
static int check_env_refs(const cJSON *env, const char *path, int literal, char *errstr,
                          size_t errstr_size)
{
    for (const cJSON *it = cJSON_IsObject(env) ? env->child : NULL; it; it = it->next) {
        const char *var = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "env"));
        if (literal && cJSON_IsString(it)) {
            snprintf(errstr, errstr_size,
                     "%s.env.%.64s: an mcp executor's env values are references read on the "
                     "worker, {\"env\": \"WORKER_VAR\"} or {\"file\": \"/path\"}, never literal "
                     "values, which the registry would store",
                     path, it->string);
            return MCPQ_EINVAL;
        }
        if (var && settings_is_name(var)) {
            snprintf(errstr, errstr_size,
                     "%s.env.%.64s: %.64s is a setting of mcpq itself; its keys and passwords are "
                     "never passed to an upstream (name another variable of the worker)",
                     path, it->string, var);
            return MCPQ_EINVAL;
        }
    }
    return 0;
}

int cfg_check_mcp_env(const cJSON *executor, const char *path, char *errstr, size_t errstr_size)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(executor, "type");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "mcp") != 0)
        return 0;
    return check_env_refs(cJSON_GetObjectItemCaseSensitive(executor, "env"), path, 1, errstr,
                          errstr_size);
}

/* cfg_check_mcp_env for every tool version of doc, and the same rule for every server's
 * federate entry (before the schema, whose message would not say why). */
static int check_mcp_envs(cfg_ctx_t *x, const cJSON *doc)
{
    char path[96], msg[512];
    int ti = 0;
    const cJSON *t, *v;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(doc, "tools"))
    {
        int vi = 0;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(t, "versions"))
        {
            snprintf(path, sizeof(path), "$.tools[%d].versions[%d].executor", ti, vi++);
            if (cfg_check_mcp_env(cJSON_GetObjectItemCaseSensitive(v, "executor"), path, msg,
                                  sizeof(msg)) < 0)
                return cfg_fail(x, "%s", msg);
        }
        ti++;
    }
    int si = 0;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(doc, "servers"))
    {
        const cJSON *fed = cJSON_GetObjectItemCaseSensitive(t, "federate");
        snprintf(path, sizeof(path), "$.servers[%d].federate", si++);
        if (check_env_refs(cJSON_GetObjectItemCaseSensitive(fed, "env"), path, 0, msg,
                           sizeof(msg)) < 0)
            return cfg_fail(x, "%s", msg);
    }
    return 0;
}

static cJSON *load(cfg_ctx_t *x, const char *text, size_t len)
{
    const cJSON *schema = sch_builtin("config.schema.json");
    char msg[512];
    cJSON *doc = parse(x, text, len);
    if (!doc)
        return NULL;
    if (!schema)
        cfg_fail(x, "the embedded config.schema.json is missing");
    else if (cfg_secret_refuse(doc, msg, sizeof(msg)) != 0) /* never stored as a secret */
        cfg_fail(x, "%s", msg);
    else if (check_mcp_envs(x, doc) != 0)
        ;
    else if (sch_validate(schema, doc, "$", msg, sizeof(msg)) != 0)
        cfg_fail(x, "%s", msg);
    else if (normalize(x, doc) == 0)
        return doc;
    cJSON_Delete(doc);
    return NULL;
}

cJSON *cfg_load_string(const char *text, size_t len, char *errstr, size_t errstr_size)
{
    cfg_ctx_t x = {NULL, errstr, errstr_size};
    return load(&x, text ? text : "", text ? len : 0);
}

/* Reads the file at path into buf (at most CFG_MAX_BYTES). 0, or a negative code with the error
 * in x. */
static int read_file(cfg_ctx_t *x, const char *path, util_buf_t *buf)
{
    char chunk[16384], why[128];
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1, rc = 0;
    if (fd < 0) {
        cfg_fail(x, "cannot open: %s", path ? strerror_r(errno, why, sizeof(why)) : "no path");
        return MCPQ_EIO;
    }
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0)
                cfg_fail(x, "cannot read: %s", strerror_r(errno, why, sizeof(why)));
            rc = n < 0 ? MCPQ_EIO : 0;
            break;
        }
        if ((rc = util_buf_append(buf, chunk, (size_t)n)) < 0) {
            if (rc == MCPQ_ETOOBIG)
                cfg_fail(x, "larger than %u bytes", CFG_MAX_BYTES);
            else
                oom(x);
            break;
        }
    }
    close(fd);
    return rc;
}

/* Reads path, hashes what it read into sha256 (when not NULL) and, when load_it, loads it. */
static cJSON *read_and_load(const char *path, char *sha256, int load_it, int *rc, char *errstr,
                            size_t errstr_size)
{
    cfg_ctx_t x = {path ? path : "(no file)", errstr, errstr_size};
    util_buf_t buf;
    cJSON *doc = NULL;
    util_buf_init(&buf, CFG_MAX_BYTES);
    *rc = read_file(&x, path, &buf);
    if (*rc == 0 && sha256)
        util_sha256_hex(buf.data ? buf.data : "", buf.len, sha256);
    if (*rc == 0 && load_it)
        doc = load(&x, buf.data ? buf.data : "", buf.len);
    if (buf.data)
        explicit_bzero(buf.data, buf.len); /* the file may hold plaintext keys */
    util_buf_cleanup(&buf);
    return doc;
}

cJSON *cfg_load_file(const char *path, char *errstr, size_t errstr_size)
{
    return cfg_load_file_sha256(path, NULL, errstr, errstr_size);
}

cJSON *cfg_load_file_sha256(const char *path, char sha256[65], char *errstr, size_t errstr_size)
{
    int rc;
    if (sha256)
        sha256[0] = '\0';
    return read_and_load(path, sha256, 1, &rc, errstr, errstr_size);
}

int cfg_file_sha256(const char *path, char sha256[65], char *errstr, size_t errstr_size)
{
    int rc;
    sha256[0] = '\0';
    read_and_load(path, sha256, 0, &rc, errstr, errstr_size);
    return rc;
}

int cfg_check_app(const cJSON *app, size_t min_bytes, const char *path, char *errstr,
                  size_t errstr_size)
{
    static const char *const members[] = {"secret", "previous_secret"};
    for (size_t i = 0; i < 2; i++) {
        const char *v = str(app, members[i]);
        if (v && strlen(v) < min_bytes) {
            snprintf(errstr, errstr_size,
                     "%s: the %s of app \"%s\" is %zu bytes; app secrets must be at least %zu "
                     "bytes (MCPQ_APP_SECRET_MIN_BYTES; `openssl rand -hex 32` makes one)",
                     path, members[i], str(app, "app_id") ? str(app, "app_id") : "?", strlen(v),
                     min_bytes);
            return MCPQ_EINVAL;
        }
    }
    return 0;
}

int cfg_check_app_secrets(const cJSON *config, size_t min_bytes, char *errstr, size_t errstr_size)
{
    char path[96];
    int ti = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(config, "tenants"))
    {
        int ai = 0;
        const cJSON *a;
        cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(t, "apps"))
        {
            snprintf(path, sizeof(path), "$.tenants[%d].apps[%d]", ti, ai++);
            if (cfg_check_app(a, min_bytes, path, errstr, errstr_size) < 0)
                return MCPQ_EINVAL;
        }
        ti++;
    }
    return 0;
}
