/*
 * Tests ingress/api/openapi.c through ing_openapi_route with synthetic requests
 * (tests/handlers/harness.h): GET answers docs/openapi.json of the source tree byte for byte
 * (the build embeds it), with an ETag and Cache-Control, no credential needed; If-None-Match
 * with that ETag is 304 without a body; other methods are 405 with Allow.
 */
#include "check.h"
#include "harness.h"

#include "openapi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char config[] =
    "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": "
    "\"" HX_API_KEY "\"}]}], \"servers\": [{\"tenant\": \"t\", "
    "\"name\": \"default\"}]}";

static hx_t h;

static void test_get(void)
{
    size_t len;
    char *want = hx_repo_file("docs/openapi.json", &len);
    hx_ex_t e;
    hx_ex_init(&h, &e, "GET", "/openapi.json", NULL, 0, NULL);
    ing_openapi_route(&e.req, "/openapi.json", "GET", &e.resp);
    CHECK_INT_EQ(e.resp.status, 200);
    CHECK_STR_EQ(e.resp.content_type, "application/json");
    CHECK(e.resp.body != NULL);
    CHECK_INT_EQ(strlen(e.resp.body), len);
    CHECK(memcmp(e.resp.body, want, len) == 0);
    CHECK_INT_EQ(strlen(e.resp.etag), 20);
    CHECK_STR_EQ(hx_resp_header(&e.resp, "Cache-Control"), "public, max-age=300");
    hx_ex_parse(&e);
    CHECK_STR_EQ(hx_str(&e, "openapi"), "3.1.0");

    /* Revalidation: the same ETag, quoted as sent back, is 304 without a body. */
    char inm[40];
    snprintf(inm, sizeof(inm), "\"%s\"", e.resp.etag);
    const char *hdrs[] = {"If-None-Match", inm, NULL};
    hx_ex_t e2;
    hx_ex_init(&h, &e2, "GET", "/openapi.json", NULL, 0, hdrs);
    ing_openapi_route(&e2.req, "/openapi.json", "GET", &e2.resp);
    CHECK_INT_EQ(e2.resp.status, 304);
    CHECK(e2.resp.body == NULL);
    CHECK_STR_EQ(e2.resp.etag, e.resp.etag);
    hx_ex_free(&e2);

    const char *other[] = {"If-None-Match", "\"0123\", W/\"abcd\"", NULL};
    hx_ex_init(&h, &e2, "HEAD", "/openapi.json", NULL, 0, other);
    ing_openapi_route(&e2.req, "/openapi.json", "HEAD", &e2.resp);
    CHECK_INT_EQ(e2.resp.status, 200);
    hx_ex_free(&e2);
    hx_ex_free(&e);
    free(want);
}

static void test_methods(void)
{
    hx_ex_t e;
    hx_ex_init(&h, &e, "POST", "/openapi.json", "{}", 1, NULL);
    ing_openapi_route(&e.req, "/openapi.json", "POST", &e.resp);
    CHECK_INT_EQ(e.resp.status, 405);
    CHECK_STR_EQ(e.resp.allow, "GET, HEAD");
    hx_ex_parse(&e);
    CHECK_STR_EQ(hx_str(&e, "error"), "method not allowed");
    hx_ex_free(&e);
}

int main(void)
{
    hx_start(&h, config, NULL);
    test_get();
    test_methods();
    hx_stop(&h);
    printf("handlers/test_openapi: ok\n");
    return 0;
}
