/*
 * oauthhttp.c - requests to OAuth authorization servers (oauthhttp.h).
 */
#include "oauthhttp.h"

#include "oauth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define USER_AGENT "mcpq-ingress"

static int is_loopback(const char *host)
{
    return strcasecmp(host, "localhost") == 0 || strcmp(host, "127.0.0.1") == 0 ||
           strcmp(host, "[::1]") == 0;
}

int ing_oauthhttp_url_ok(const char *url, char *proto, size_t size)
{
    CURLU *u = url ? curl_url() : NULL;
    char *scheme = NULL, *host = NULL;
    int ok = 0;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
        if (strcmp(scheme, "https") == 0)
            ok = 1;
        else if (strcmp(scheme, "http") == 0 && is_loopback(host))
            ok = 1;
    }
    if (ok && proto)
        snprintf(proto, size, "%s", scheme);
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return ok;
}

int ing_oauthhttp_discovery_url(const char *issuer, int step, char *out, size_t size)
{
    static const char *const as = "/.well-known/oauth-authorization-server";
    static const char *const oidc = "/.well-known/openid-configuration";
    CURLU *u = curl_url();
    char *path = NULL, *s = NULL;
    int rc = -1;
    if (!u || curl_url_set(u, CURLUPART_URL, issuer, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
        goto out;
    size_t n = strlen(path);
    while (n > 0 && path[n - 1] == '/')
        path[--n] = '\0';
    char p[2048];
    if (step == 0)
        snprintf(p, sizeof(p), "%s%s", as, path);
    else if (step == 1)
        snprintf(p, sizeof(p), "%s%s", oidc, path);
    else if (step == 2 && n > 0)
        snprintf(p, sizeof(p), "%s%s", path, oidc);
    else
        goto out;
    if (curl_url_set(u, CURLUPART_PATH, p, 0) != CURLUE_OK ||
        curl_url_set(u, CURLUPART_QUERY, NULL, 0) != CURLUE_OK ||
        curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_URL, &s, 0) != CURLUE_OK || strlen(s) >= size)
        goto out;
    memcpy(out, s, strlen(s) + 1);
    rc = 0;
out:
    curl_free(path);
    curl_free(s);
    curl_url_cleanup(u);
    return rc;
}

static size_t on_body(char *p, size_t sz, size_t nm, void *arg)
{
    ing_oauthhttp_t *h = arg;
    return util_buf_append(&h->body, p, sz * nm) == 0 ? sz * nm : 0; /* 0: the transfer fails */
}

/* Cache-Control: max-age=N (no-store, no-cache: 0) and Expires. */
static size_t on_header(char *p, size_t sz, size_t nm, void *arg)
{
    ing_oauthhttp_t *h = arg;
    size_t n = sz * nm;
    char line[512];
    if (n >= sizeof(line))
        return n;
    memcpy(line, p, n);
    line[n] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    if (strncasecmp(line, "HTTP/", 5) == 0) { /* a new response: forget an earlier one's */
        h->max_age_s = -1;
        h->expires_ms = 0;
    } else if (strncasecmp(line, "Cache-Control:", 14) == 0) {
        const char *v = line + 14, *m = strcasestr(v, "max-age=");
        if (strcasestr(v, "no-store") || strcasestr(v, "no-cache"))
            h->max_age_s = 0;
        else if (m) {
            long long s;
            const char *d = m + 8;
            size_t dl = strspn(d, "0123456789");
            char num[20];
            if (dl > 0 && dl < sizeof(num)) {
                memcpy(num, d, dl);
                num[dl] = '\0';
                if (util_parse_ll(num, 0, 1LL << 40, &s) == 0)
                    h->max_age_s = (long)s;
            }
        }
    } else if (strncasecmp(line, "Expires:", 8) == 0) {
        time_t t = curl_getdate(line + 8 + strspn(line + 8, " \t"), NULL);
        h->expires_ms = t > 0 ? (int64_t)t * 1000 : 0;
    }
    return n;
}

int ing_oauthhttp_same_origin(const char *a, const char *b)
{
    char *part[2][3] = {{NULL}};
    const char *url[2] = {a, b};
    static const CURLUPart which[3] = {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT};
    int same = 1;
    for (int i = 0; i < 2; i++) {
        CURLU *u = url[i] ? curl_url() : NULL;
        if (!u || curl_url_set(u, CURLUPART_URL, url[i], 0) != CURLUE_OK)
            same = 0;
        for (int k = 0; k < 3 && same; k++)
            if (curl_url_get(u, which[k], &part[i][k], CURLU_DEFAULT_PORT) != CURLUE_OK)
                same = 0;
        curl_url_cleanup(u);
    }
    for (int k = 0; k < 3; k++) {
        if (same && strcasecmp(part[0][k], part[1][k]) != 0)
            same = 0;
        curl_free(part[0][k]);
        curl_free(part[1][k]);
    }
    return same;
}

static ing_oauthhttp_t *start(const char *url, long timeout_ms, void *private, int learned)
{
    char proto[8];
    if (!ing_oauthhttp_url_ok(url, proto, sizeof(proto)))
        return NULL;
    ing_oauthhttp_t *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    util_buf_init(&h->body, ING_OAUTH_RESPONSE_MAX);
    h->max_age_s = -1;
    h->hdrs = curl_slist_append(NULL, "Accept: application/json");
    h->easy = h->hdrs ? curl_easy_init() : NULL;
    if (!h->easy) {
        ing_oauthhttp_free(h);
        return NULL;
    }
    CURL *e = h->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, proto);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "localhost,127.0.0.1,::1");
    curl_easy_setopt(e, CURLOPT_USERAGENT, USER_AGENT);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h->hdrs);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, h);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, h->errbuf);
    curl_easy_setopt(e, CURLOPT_PRIVATE, private);
    if (learned) {
        curl_easy_setopt(e, CURLOPT_PROXY, ""); /* the guard judges the address really used */
        h->guard = (ing_whrules_guard_t){
            .subject = "the host of a URL learned from the authorization server's metadata",
            .hint = "configure jwks_uri to fetch the keys from there"};
        curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, ing_whrules_socket);
        curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, &h->guard);
    }
    return h;
}

ing_oauthhttp_t *ing_oauthhttp_get(const char *url, long timeout_ms, void *private, int learned)
{
    return start(url, timeout_ms, private, learned);
}

ing_oauthhttp_t *ing_oauthhttp_introspect(const char *endpoint, const char *client_id,
                                          const char *secret, const char *token, long timeout_ms,
                                          void *private)
{
    ing_oauthhttp_t *h = start(endpoint, timeout_ms, private, 0);
    if (!h)
        return NULL;
    char *tok = curl_easy_escape(h->easy, token, 0);
    char *user = client_id ? curl_easy_escape(h->easy, client_id, 0) : NULL;
    char *pass = secret ? curl_easy_escape(h->easy, secret, 0) : NULL;
    static const char *const hint = "&token_type_hint=access_token";
    size_t n = tok ? strlen("token=") + strlen(tok) + strlen(hint) + 1 : 0;
    h->post = n ? malloc(n) : NULL;
    int ok = h->post && (!client_id || user) && (!secret || pass);
    if (ok) {
        snprintf(h->post, n, "token=%s%s", tok, hint);
        curl_easy_setopt(h->easy, CURLOPT_POSTFIELDS, h->post);
        curl_easy_setopt(h->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(h->post));
        if (user) {
            curl_easy_setopt(h->easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
            curl_easy_setopt(h->easy, CURLOPT_USERNAME, user); /* copied by curl */
            curl_easy_setopt(h->easy, CURLOPT_PASSWORD, pass ? pass : "");
        }
    }
    if (tok) {
        explicit_bzero(tok, strlen(tok));
        curl_free(tok);
    }
    curl_free(user);
    if (pass) {
        explicit_bzero(pass, strlen(pass));
        curl_free(pass);
    }
    if (!ok) {
        ing_oauthhttp_free(h);
        return NULL;
    }
    return h;
}

int64_t ing_oauthhttp_lifetime_ms(const ing_oauthhttp_t *h, int64_t now_ms, int64_t floor_ms,
                                  int64_t max_ms)
{
    int64_t life = max_ms;
    if (h->max_age_s >= 0)
        life = (int64_t)h->max_age_s * 1000;
    else if (h->expires_ms > 0)
        life = h->expires_ms - now_ms;
    if (floor_ms > max_ms)
        floor_ms = max_ms;
    if (life < floor_ms)
        life = floor_ms;
    if (life > max_ms)
        life = max_ms;
    return life;
}

void ing_oauthhttp_free(ing_oauthhttp_t *h)
{
    if (!h)
        return;
    if (h->easy)
        curl_easy_cleanup(h->easy);
    curl_slist_free_all(h->hdrs);
    if (h->post) {
        explicit_bzero(h->post, strlen(h->post));
        free(h->post);
    }
    util_buf_cleanup(&h->body);
    free(h);
}
