#include "rstate.h"

#include "err.h"
#include "idem.h"
#include "log.h"
#include "names.h"
#include "util.h"

#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 1024
#define FLEET_KEY_LEN 64 /* 32 random bytes as hex */
#define OWNER_HEX 32
#define PREFIX "v1."

struct ing_rstate {
    kv_pool_t *kv;
    pthread_mutex_t lock;
    unsigned char key[KEY_MAX];
    size_t keylen; /* 0 until the fleet key is read */
};

ing_rstate_t *ing_rstate_new(const char *key, size_t keylen, kv_pool_t *kv)
{
    ing_rstate_t *rs = calloc(1, sizeof(*rs));
    if (!rs)
        return NULL;
    rs->kv = kv;
    pthread_mutex_init(&rs->lock, NULL);
    if (key && keylen > 0) {
        rs->keylen = keylen < KEY_MAX ? keylen : KEY_MAX;
        memcpy(rs->key, key, rs->keylen);
    }
    return rs;
}

void ing_rstate_free(ing_rstate_t *rs)
{
    if (!rs)
        return;
    OPENSSL_cleanse(rs->key, sizeof(rs->key));
    pthread_mutex_destroy(&rs->lock);
    free(rs);
}

/* The fleet's key: SET NX of a fresh one (the first replica's wins), then GET. Under lock. */
static int fleet_key(ing_rstate_t *rs)
{
    char fresh[FLEET_KEY_LEN + 1], err[128];
    if (!rs->kv || util_random_hex(fresh, FLEET_KEY_LEN / 2) < 0)
        return MCPQ_EUNAVAIL;
    const char *set[] = {"SET", NAMES_KEY_RSTATE_KEY, fresh, "NX"};
    redisReply *r = kv_pool_commandargv(rs->kv, err, sizeof(err), 4, set, NULL);
    if (r)
        freeReplyObject(r);
    const char *get[] = {"GET", NAMES_KEY_RSTATE_KEY};
    r = r ? kv_pool_commandargv(rs->kv, err, sizeof(err), 2, get, NULL) : NULL;
    int rc = MCPQ_EUNAVAIL;
    if (r && r->type == REDIS_REPLY_STRING && r->len >= 32 && r->len <= KEY_MAX) {
        memcpy(rs->key, r->str, r->len);
        rs->keylen = r->len;
        rc = 0;
    } else {
        log_event(LOG_WARN, "requestState: cannot read the fleet key from Redis", "error",
                  r ? "not a key" : err, (char *)NULL);
    }
    if (r)
        freeReplyObject(r);
    OPENSSL_cleanse(fresh, sizeof(fresh));
    return rc;
}

/* The signature of text into mac[32]. 0 or MCPQ_EUNAVAIL (no key). */
static int sign(ing_rstate_t *rs, const char *text, size_t len, unsigned char mac[32])
{
    pthread_mutex_lock(&rs->lock);
    int rc = rs->keylen ? 0 : fleet_key(rs);
    unsigned int maclen = 0;
    if (rc == 0 && !HMAC(EVP_sha256(), rs->key, (int)rs->keylen, (const unsigned char *)text, len,
                         mac, &maclen))
        rc = MCPQ_ENOMEM;
    pthread_mutex_unlock(&rs->lock);
    return rc;
}

int ing_rstate_digest(const char *method, const cJSON *params, char out[33])
{
    const char *what = strcmp(method, "resources/read") == 0 ? "uri" : "name";
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, what));
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
    char fp[65] = "-";
    if (strcmp(what, "name") == 0 && args && !cJSON_IsNull(args) &&
        ing_idem_fingerprint(args, fp) < 0)
        return MCPQ_ENOMEM;
    /* method, the name or uri and the arguments' fingerprint, each ended by a NUL */
    size_t ml = strlen(method), nl = name ? strlen(name) : 0, fl = strlen(fp);
    char *buf = malloc(ml + nl + fl + 3);
    if (!buf)
        return MCPQ_ENOMEM;
    memcpy(buf, method, ml + 1);
    memcpy(buf + ml + 1, name ? name : "", nl + 1);
    memcpy(buf + ml + nl + 2, fp, fl + 1);
    char hex[65];
    util_sha256_hex(buf, ml + nl + fl + 3, hex);
    free(buf);
    memcpy(out, hex, 32);
    out[32] = '\0';
    return 0;
}

static void owner_digest(const char *owner, char out[OWNER_HEX + 1])
{
    char hex[65];
    util_sha256_hex(owner ? owner : "", owner ? strlen(owner) : 0, hex);
    memcpy(out, hex, OWNER_HEX);
    out[OWNER_HEX] = '\0';
}

static int job_id_ok(const char *s)
{
    return s && util_id_ok(s, strlen(s), ING_RSTATE_JOB_MAX - 1, "");
}

int ing_rstate_make(ing_rstate_t *rs, const ing_rstate_claims_t *c, char *out, size_t size)
{
    if (!job_id_ok(c->job_id) || c->n < 1 || !c->tenant || !c->method || strlen(c->digest) != 32)
        return MCPQ_EINVAL;
    char od[OWNER_HEX + 1];
    owner_digest(c->owner, od);
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "j", c->job_id);
    cJSON_AddNumberToObject(p, "n", (double)c->n);
    cJSON_AddStringToObject(p, "t", c->tenant);
    cJSON_AddStringToObject(p, "o", od);
    if (c->session)
        cJSON_AddStringToObject(p, "s", c->session);
    cJSON_AddStringToObject(p, "m", c->method);
    cJSON_AddStringToObject(p, "d", c->digest);
    cJSON_AddNumberToObject(p, "e", (double)c->expires_ms);
    char *json = cJSON_PrintUnformatted(p);
    cJSON_Delete(p);
    if (!json)
        return MCPQ_ENOMEM;
    size_t jl = strlen(json);
    /* "v1." payload "." signature (43) NUL */
    size_t need = strlen(PREFIX) + UTIL_B64URL_LEN(jl) + 1 + UTIL_B64URL_LEN(32) + 1;
    int rc = need <= ING_RSTATE_MAX && need <= size ? 0 : MCPQ_ETOOBIG;
    unsigned char mac[32];
    if (rc == 0) {
        memcpy(out, PREFIX, strlen(PREFIX));
        util_b64url_encode((const unsigned char *)json, jl, out + strlen(PREFIX));
        rc = sign(rs, out, strlen(out), mac);
    }
    if (rc == 0) {
        size_t at = strlen(out);
        out[at] = '.';
        util_b64url_encode(mac, sizeof(mac), out + at + 1);
    }
    cJSON_free(json);
    return rc;
}

/* The signed payload of state, verified, as JSON (a new object), or NULL (errstr says why). */
static cJSON *verified_payload(ing_rstate_t *rs, const char *state, int *rc, char *errstr,
                               size_t errstr_size)
{
    size_t len = state ? strnlen(state, ING_RSTATE_MAX) : 0;
    *rc = MCPQ_EINVAL;
    if (len == 0 || len >= ING_RSTATE_MAX || strncmp(state, PREFIX, strlen(PREFIX)) != 0) {
        util_errf(errstr, errstr_size, "not a v1 requestState of at most %d bytes",
                  ING_RSTATE_MAX - 1);
        return NULL;
    }
    const char *dot = strchr(state + strlen(PREFIX), '.');
    unsigned char payload[ING_RSTATE_MAX], mac[32], want[33];
    size_t plen = 0, mlen = 0;
    if (!dot ||
        util_b64_decode(state + strlen(PREFIX), (size_t)(dot - state) - strlen(PREFIX),
                        UTIL_B64_URL | UTIL_B64_NOPAD, payload, sizeof(payload) - 1, &plen) < 0 ||
        util_b64_decode(dot + 1, strlen(dot + 1), UTIL_B64_URL | UTIL_B64_NOPAD, want, sizeof(want),
                        &mlen) < 0 ||
        mlen != sizeof(mac)) {
        util_errf(errstr, errstr_size, "malformed requestState");
        return NULL;
    }
    *rc = sign(rs, state, (size_t)(dot - state), mac);
    if (*rc < 0) {
        util_errf(errstr, errstr_size, "the requestState key is unavailable");
        return NULL;
    }
    *rc = MCPQ_EINVAL;
    if (!util_ct_equal(mac, want, sizeof(mac))) {
        util_errf(errstr, errstr_size, "bad requestState signature");
        return NULL;
    }
    payload[plen] = '\0';
    cJSON *p = cJSON_ParseWithLength((const char *)payload, plen);
    if (!cJSON_IsObject(p)) {
        cJSON_Delete(p);
        util_errf(errstr, errstr_size, "requestState payload is not an object");
        return NULL;
    }
    return p;
}

/* 1 when member name of p is the string want (NULL: must be absent). */
static int str_is(const cJSON *p, const char *name, const char *want)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, name);
    if (!want)
        return v == NULL;
    return cJSON_IsString(v) && strcmp(v->valuestring, want) == 0;
}

int ing_rstate_check(ing_rstate_t *rs, const char *state, int64_t now_ms,
                     ing_rstate_claims_t *expect, char job[ING_RSTATE_JOB_MAX], char *errstr,
                     size_t errstr_size)
{
    int rc;
    cJSON *p = verified_payload(rs, state, &rc, errstr, errstr_size);
    if (!p)
        return rc;
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(p, "j");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "n");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(p, "e");
    char od[OWNER_HEX + 1];
    owner_digest(expect->owner, od);
    rc = MCPQ_EINVAL;
    if (!cJSON_IsString(j) || !job_id_ok(j->valuestring) || !cJSON_IsNumber(n) ||
        n->valuedouble < 1 || !cJSON_IsNumber(e))
        util_errf(errstr, errstr_size, "requestState payload lacks its job or question");
    else if (e->valuedouble <= (double)now_ms)
        util_errf(errstr, errstr_size, "requestState expired");
    else if (!str_is(p, "t", expect->tenant) || !str_is(p, "o", od))
        util_errf(errstr, errstr_size, "requestState of another caller");
    else if (!str_is(p, "s", expect->session))
        util_errf(errstr, errstr_size, "requestState of another session");
    else if (!str_is(p, "m", expect->method) || !str_is(p, "d", expect->digest))
        util_errf(errstr, errstr_size, "requestState of another request");
    else
        rc = 0;
    if (rc == 0) {
        snprintf(job, ING_RSTATE_JOB_MAX, "%s", j->valuestring);
        expect->job_id = job;
        expect->n = (long long)n->valuedouble;
        expect->expires_ms = (int64_t)e->valuedouble;
    }
    cJSON_Delete(p);
    return rc;
}
