/*
 * Tests ingress/api/console.c through ing_console_route with synthetic requests
 * (tests/handlers/harness.h): the embedded files of ingress/console/ byte for byte (but for the
 * version put in their URLs), the security headers on every answer (the strict CSP, nosniff,
 * no-referrer), no-store on index.html and a long cache with ETag revalidation on the rest,
 * every form of If-None-Match, the redirect of /console, 404 for an unknown file, 405 with
 * Allow for each write, HEAD as GET, nothing with MCPQ_ADMIN_TOKEN unset, and no inline script
 * or style in index.html.
 */
#include "check.h"
#include "harness.h"

#include "console.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char config[] =
    "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": "
    "\"" HX_API_KEY "\"}]}], \"servers\": [{\"tenant\": \"t\", "
    "\"name\": \"default\"}]}";

static const char csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; "
                          "img-src 'self'; connect-src 'self'; frame-ancestors 'none'; "
                          "base-uri 'none'; form-action 'none'";

static hx_t h;

static void get(hx_ex_t *e, const char *method, const char *url, const char *const hdrs[])
{
    hx_ex_init(&h, e, method, url, NULL, 0, hdrs);
    ing_console_route(&e->req, url, method, &e->resp);
}

static void check_security(const ing_resp_t *resp)
{
    CHECK_STR_EQ(hx_resp_header(resp, "Content-Security-Policy"), csp);
    CHECK_STR_EQ(hx_resp_header(resp, "X-Content-Type-Options"), "nosniff");
    CHECK_STR_EQ(hx_resp_header(resp, "Referrer-Policy"), "no-referrer");
}

/* The body with every "?v=<12 hex>" put back as the version token: the repository's file. */
static char *unversion(const char *body)
{
    size_t tlen = strlen(ING_CONSOLE_VERSION_TOKEN), n = strlen(body);
    char *out = malloc(n * 2 + 1);
    CHECK(out != NULL);
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        int v = strncmp(body + i, "?v=", 3) == 0 && n - i >= 15;
        for (size_t k = 3; v && k < 15; k++)
            v = isxdigit((unsigned char)body[i + k]) && !isupper((unsigned char)body[i + k]);
        if (v) {
            memcpy(out + o, "?v=", 3);
            memcpy(out + o + 3, ING_CONSOLE_VERSION_TOKEN, tlen);
            o += 3 + tlen;
            i += 15;
        } else {
            out[o++] = body[i++];
        }
    }
    out[o] = '\0';
    return out;
}

/* GET url: 200 of content type ctype with the console's headers and Cache-Control cache. */
static void get_ok(hx_ex_t *e, const char *url, const char *ctype, const char *cache)
{
    get(e, "GET", url, NULL);
    CHECK_INT_EQ(e->resp.status, 200);
    CHECK_STR_EQ(e->resp.content_type, ctype);
    check_security(&e->resp);
    CHECK_STR_EQ(hx_resp_header(&e->resp, "Cache-Control"), cache);
}

static void test_index(void)
{
    size_t len;
    char *want = hx_repo_file("ingress/console/index.html", &len);
    hx_ex_t e;
    get_ok(&e, "/console/", "text/html; charset=utf-8", "no-store");
    CHECK(strstr(e.resp.body, ING_CONSOLE_VERSION_TOKEN) == NULL);
    CHECK(strstr(e.resp.body, "app.js?v=") != NULL);
    char *back = unversion(e.resp.body);
    CHECK_STR_EQ(back, want);
    free(back);
    /* Nothing inline for the CSP to refuse: every script has a src, no style element or
     * attribute, no event handler attribute. */
    for (const char *p = strstr(want, "<script"); p; p = strstr(p + 1, "<script"))
        CHECK(strstr(p, "src=") != NULL && strstr(p, "src=") < strchr(p, '>'));
    CHECK(strstr(want, "<style") == NULL);
    CHECK(strstr(want, "style=") == NULL);
    CHECK(strstr(want, " onclick=") == NULL && strstr(want, " onload=") == NULL);
    CHECK(strstr(want, "javascript:") == NULL);
    hx_ex_free(&e);
    free(want);
}

/* GET /console/prom.js with If-None-Match inm: its status (304 without a body, else 200 with
 * it), the console's headers and the ETag on both. */
static int get_inm(const char *inm, const char *etag)
{
    const char *hdrs[] = {"If-None-Match", inm, NULL};
    hx_ex_t e;
    get(&e, "GET", "/console/prom.js", hdrs);
    int status = e.resp.status;
    CHECK(status == 304 ? e.resp.body == NULL : e.resp.body != NULL);
    check_security(&e.resp);
    CHECK_STR_EQ(e.resp.etag, etag);
    hx_ex_free(&e);
    return status;
}

/* Every form of If-None-Match naming etag (quoted, weak, bare, in a list, *) is a 304; one
 * naming another tag, a prefix of it or a longer one, or a malformed one, the file (200). */
static void inm_forms(const char *etag)
{
    static const struct {
        const char *form; /* with %s for the etag */
        int status;
    } forms[] = {{"\"%s\"", 304},
                 {"W/\"%s\"", 304},
                 {"%s", 304},
                 {"\"0000\", W/\"%s\"", 304},
                 {"\"0000\",\"%s\"", 304},
                 {"  \"%s\"  ", 304},
                 {"*", 304},
                 {"\"%.19s\"", 200},
                 {"\"%sa\"", 200},
                 {"\"0000\"", 200},
                 {"", 200},
                 {"W/", 200},
                 {"\"%s", 200},
                 {",,,", 200},
                 {"W/\"\"", 200},
                 {"\"\"", 200}};
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        char v[160];
        snprintf(v, sizeof(v), forms[i].form, etag);
        int status = get_inm(v, etag);
        if (status != forms[i].status)
            fprintf(stderr, "If-None-Match: %s\n", v);
        CHECK_INT_EQ(status, forms[i].status);
    }
}

static void test_asset(void)
{
    size_t len;
    char *want = hx_repo_file("ingress/console/prom.js", &len);
    hx_ex_t e;
    get_ok(&e, "/console/prom.js", "text/javascript; charset=utf-8",
           "public, max-age=31536000, immutable");
    CHECK_STR_EQ(e.resp.body, want);
    CHECK_INT_EQ(strlen(e.resp.etag), 20);

    char inm[40];
    snprintf(inm, sizeof(inm), "W/\"%s\"", e.resp.etag);
    const char *hdrs[] = {"If-None-Match", inm, NULL};
    hx_ex_t e2;
    get(&e2, "GET", "/console/prom.js", hdrs);
    CHECK_INT_EQ(e2.resp.status, 304);
    CHECK(e2.resp.body == NULL);
    check_security(&e2.resp);
    hx_ex_free(&e2);

    inm_forms(e.resp.etag);

    /* app.js imports prom.js under the same version index.html names app.js with. */
    hx_ex_t a, i;
    get(&a, "GET", "/console/app.js", NULL);
    get(&i, "HEAD", "/console/", NULL);
    CHECK_INT_EQ(a.resp.status, 200);
    const char *v = strstr(i.resp.body, "app.js?v=");
    CHECK(v != NULL);
    char imp[40];
    snprintf(imp, sizeof(imp), "prom.js?v=%.12s", v + 9);
    CHECK(strstr(a.resp.body, imp) != NULL);
    hx_ex_free(&a);
    hx_ex_free(&i);

    get_ok(&e2, "/console/app.css", "text/css; charset=utf-8",
           "public, max-age=31536000, immutable");
    hx_ex_free(&e2);
    get_ok(&e2, "/console/favicon.svg", "image/svg+xml", "public, max-age=31536000, immutable");
    hx_ex_free(&e2);
    hx_ex_free(&e);
    free(want);
}

static void test_other(void)
{
    hx_ex_t e;
    get(&e, "GET", "/console", NULL);
    CHECK_INT_EQ(e.resp.status, 308);
    CHECK_STR_EQ(hx_resp_header(&e.resp, "Location"), "/console/");
    check_security(&e.resp);
    hx_ex_free(&e);

    const char *const missing[] = {"/console/nope.js", "/console/../admin", "/console/a/app.js"};
    for (size_t k = 0; k < sizeof(missing) / sizeof(missing[0]); k++) {
        get(&e, "GET", missing[k], NULL);
        CHECK_INT_EQ(e.resp.status, 404);
        check_security(&e.resp);
        hx_ex_parse(&e);
        CHECK_STR_EQ(hx_str(&e, "error"), "no such console file");
        hx_ex_free(&e);
    }

    const char *const writes[] = {"POST", "PUT", "DELETE", "PATCH"};
    for (size_t k = 0; k < sizeof(writes) / sizeof(writes[0]); k++) {
        hx_ex_init(&h, &e, writes[k], "/console/app.js", "{}", 0, NULL);
        ing_console_route(&e.req, "/console/app.js", writes[k], &e.resp);
        CHECK_INT_EQ(e.resp.status, 405);
        CHECK_STR_EQ(e.resp.allow, "GET, HEAD");
        check_security(&e.resp);
        hx_ex_free(&e);
    }

    /* HEAD is answered as GET (the server sends the headers only): the redirect, a 404, and a
     * revalidation. */
    get(&e, "HEAD", "/console", NULL);
    CHECK_INT_EQ(e.resp.status, 308);
    CHECK_STR_EQ(hx_resp_header(&e.resp, "Location"), "/console/");
    hx_ex_free(&e);
    get(&e, "HEAD", "/console/nope.css", NULL);
    CHECK_INT_EQ(e.resp.status, 404);
    check_security(&e.resp);
    hx_ex_free(&e);
    get(&e, "HEAD", "/console/", NULL);
    CHECK_INT_EQ(e.resp.status, 200);
    CHECK_STR_EQ(hx_resp_header(&e.resp, "Cache-Control"), "no-store");
    const char *hdrs[] = {"If-None-Match", "*", NULL};
    hx_ex_t e2;
    get(&e2, "HEAD", "/console/", hdrs);
    CHECK_INT_EQ(e2.resp.status, 304);
    CHECK_STR_EQ(e2.resp.etag, e.resp.etag);
    CHECK_STR_EQ(hx_resp_header(&e2.resp, "Cache-Control"), "no-store");
    hx_ex_free(&e2);
    hx_ex_free(&e);

    /* No operator token configured: the console is off, as the admin API is. */
    const char *saved = h.set.admin_token;
    h.set.admin_token = NULL;
    get(&e, "GET", "/console/", NULL);
    CHECK_INT_EQ(e.resp.status, 404);
    CHECK(hx_resp_header(&e.resp, "Content-Security-Policy") == NULL);
    hx_ex_free(&e);
    h.set.admin_token = saved;
}

int main(void)
{
    hx_start(&h, config, NULL);
    CHECK(h.ctx.set == &h.set);
    test_index();
    test_asset();
    test_other();
    hx_stop(&h);
    printf("handlers/test_console: ok\n");
    return 0;
}
