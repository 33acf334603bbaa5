/*
 * console.h - the operator console (docs/console.md): the static files of ingress/console/
 * (HTML, JavaScript, CSS, an icon), embedded in the binary at build time (CMakeLists.txt, the
 * generator the schemas and Lua scripts use), served on the operations plane under /console/.
 * The page itself drives the admin API (admin.h) and reads /metrics with the operator token
 * the operator types in; the files hold no data, so they are served without a credential,
 * but only when MCPQ_ADMIN_TOKEN is set (else 404, like /admin).
 *
 * Thread-safe: the files are read-only.
 */
#ifndef MCPQ_ING_CONSOLE_H
#define MCPQ_ING_CONSOLE_H

#include "req.h"

/* The Content-Security-Policy of every console answer: nothing inline, nothing from another
 * origin, no framing, no <base>, no form posts. */
#define ING_CONSOLE_CSP                                                                            \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "                    \
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

/* What index.html and the scripts write where a file names another with a version query
 * (app.js?v=...): replaced when served by the console's version, a hash of every embedded
 * file, so the long-cached files change name whenever any of them changes. */
#define ING_CONSOLE_VERSION_TOKEN "@CONSOLE_VERSION@"

/*
 * /console and everything under it. GET or HEAD of /console/ (index.html) or /console/<file>:
 * 200 with the file, its content type and an ETag (304 when If-None-Match names it);
 * index.html with Cache-Control no-store, the others cached for a year (their URLs carry the
 * version). Every answer carries ING_CONSOLE_CSP, X-Content-Type-Options: nosniff and
 * Referrer-Policy: no-referrer. /console: 308 to /console/. An unknown file: 404. Other
 * methods: 405 with Allow. MCPQ_ADMIN_TOKEN unset: 404 for all of it.
 */
void ing_console_route(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp);

#endif
