#include "idem.h"
#include "rscript.h"
#include "names.h"

#include "err.h"
#include "util.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ing_idem_key(const cJSON *args, const char **key)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(args, "idempotency_key");
    *key = NULL;
    if (!k)
        return 0;
    if (!cJSON_IsString(k) || k->valuestring[0] == '\0' ||
        strlen(k->valuestring) > ING_IDEM_KEY_MAX)
        return MCPQ_EINVAL;
    *key = k->valuestring;
    return 1;
}

static int by_name(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    return strcmp(x->string ? x->string : "", y->string ? y->string : "");
}

/* Feeds the canonical JSON of v to the digest. 0 or MCPQ_ENOMEM. */
static int canon(EVP_MD_CTX *md, const cJSON *v, int depth)
{
    if (depth > 128)
        return MCPQ_EINVAL;
    if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
        int obj = cJSON_IsObject(v);
        size_t n = (size_t)cJSON_GetArraySize(v), i = 0;
        const cJSON **kids = n ? malloc(n * sizeof(*kids)) : NULL;
        if (n && !kids)
            return MCPQ_ENOMEM;
        for (const cJSON *c = v->child; c && i < n; c = c->next)
            kids[i++] = c;
        if (obj && n > 1) /* qsort must not get NULL, which an empty object has */
            qsort(kids, n, sizeof(*kids), by_name);
        int rc = EVP_DigestUpdate(md, obj ? "{" : "[", 1) == 1 ? 0 : MCPQ_ENOMEM;
        for (i = 0; i < n && rc == 0; i++) {
            if (i > 0)
                EVP_DigestUpdate(md, ",", 1);
            if (obj) {
                cJSON *name = cJSON_CreateString(kids[i]->string ? kids[i]->string : "");
                char *s = name ? cJSON_PrintUnformatted(name) : NULL;
                cJSON_Delete(name);
                if (!s) {
                    rc = MCPQ_ENOMEM;
                    break;
                }
                EVP_DigestUpdate(md, s, strlen(s));
                EVP_DigestUpdate(md, ":", 1);
                cJSON_free(s);
            }
            rc = canon(md, kids[i], depth + 1);
        }
        free(kids);
        if (rc == 0)
            EVP_DigestUpdate(md, obj ? "}" : "]", 1);
        return rc;
    }
    /* A scalar prints on its own (members' names are not part of the item's text). */
    char *s = cJSON_PrintUnformatted(v);
    if (!s)
        return MCPQ_ENOMEM;
    EVP_DigestUpdate(md, s, strlen(s));
    cJSON_free(s);
    return 0;
}

int ing_idem_fingerprint(const cJSON *v, char hex[65])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    int rc = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 ? canon(md, v, 0) : MCPQ_ENOMEM;
    if (rc == 0 && EVP_DigestFinal_ex(md, d, &n) != 1)
        rc = MCPQ_ENOMEM;
    EVP_MD_CTX_free(md);
    if (rc == 0)
        util_hex(d, n, hex);
    return rc;
}

void ing_idem_scope(const char *tenant, const char *server, const char *tool, const char *key,
                    char scope[33])
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    const char *parts[] = {"mcpq-idem-v1", tenant, server, tool, key};
    int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;
    for (size_t i = 0; ok && i < sizeof(parts) / sizeof(parts[0]); i++)
        ok = EVP_DigestUpdate(md, parts[i], strlen(parts[i]) + 1) == 1; /* NUL-separated */
    ok = ok && EVP_DigestFinal_ex(md, d, &n) == 1 && n >= 16;
    EVP_MD_CTX_free(md);
    if (!ok && RAND_bytes(d, 16) != 1) /* a random scope at least never merges two calls */
        memset(d, 0, 16);
    util_hex(d, 16, scope);
}

int ing_idem_claim(kv_pool_t *kv, const char *tenant, const char *scope, const char *owner,
                   const cJSON *args, long long ttl_s, const char *proposed_id, char *id,
                   size_t id_size, char **record, size_t *record_len)
{
    char fp[65], key[400], ttl[24], err[256];
    *record = NULL;
    *record_len = 0;
    if (ing_idem_fingerprint(args, fp) < 0)
        return MCPQ_EUNAVAIL;
    snprintf(key, sizeof(key), NAMES_KEY_IDEM "%s:%s", tenant, scope);
    snprintf(ttl, sizeof(ttl), "%lld", ttl_s);
    const char *argv[] = {key, fp, ttl, proposed_id, owner ? owner : ""};
    redisReply *r =
        rscript_pool_run(kv, rscript_get("idem_claim"), 0, 5, argv, NULL, err, sizeof(err));
    if (!r)
        return MCPQ_EUNAVAIL;
    int rc = MCPQ_EUNAVAIL;
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
        r->element[0]->type == REDIS_REPLY_INTEGER) {
        rc = (int)r->element[0]->integer;
        if (rc != ING_IDEM_CONFLICT && rc != ING_IDEM_FOREIGN) {
            if (r->elements < 2 || r->element[1]->type != REDIS_REPLY_STRING ||
                r->element[1]->len == 0 || r->element[1]->len >= id_size)
                rc = MCPQ_EUNAVAIL;
            else
                snprintf(id, id_size, "%s", r->element[1]->str);
        }
        if (rc == ING_IDEM_REPEAT && r->elements >= 3 &&
            r->element[2]->type == REDIS_REPLY_STRING) {
            *record = malloc(r->element[2]->len + 1);
            if (*record) {
                memcpy(*record, r->element[2]->str, r->element[2]->len);
                (*record)[r->element[2]->len] = '\0';
                *record_len = r->element[2]->len;
            }
        }
        if (rc < ING_IDEM_NEW || rc > ING_IDEM_FOREIGN)
            rc = MCPQ_EUNAVAIL;
    }
    freeReplyObject(r);
    return rc;
}
