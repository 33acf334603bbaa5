#include "mcpup.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

struct curl_slist *wrk_mcpup_headers(const wrk_mcpup_t *up, int modern, const char *version,
                                     const char *method, const char *name, const char *session,
                                     const char *traceparent, const char *request_id)
{
    struct curl_slist *l = curl_slist_append(NULL, "Expect:");
    if (!l)
        return NULL;
    int rc = wrk_httpexec_header_add(&l, "Content-Type", "application/json");
    if (!rc)
        rc = wrk_httpexec_header_add(&l, "Accept", "application/json, text/event-stream");
    if (!rc && version)
        rc = wrk_httpexec_header_add(&l, "MCP-Protocol-Version", version);
    if (!rc && modern && method)
        rc = wrk_httpexec_header_add(&l, "Mcp-Method", method);
    if (!rc && modern && name)
        rc = wrk_httpexec_header_add(&l, "Mcp-Name", name);
    if (!rc && session && session[0])
        rc = wrk_httpexec_header_add(&l, "Mcp-Session-Id", session);
    if (!rc && traceparent)
        rc = wrk_httpexec_header_add(&l, "traceparent", traceparent);
    if (!rc && request_id)
        rc = wrk_httpexec_header_add(&l, "X-Request-Id", request_id);
    if (up->headers)
        for (const cJSON *it = up->headers->child; it && !rc; it = it->next)
            if (!mcpw_header_reserved(it->string) &&
                (!request_id || strcasecmp(it->string, "X-Request-Id") != 0))
                rc = wrk_httpexec_header_add(&l, it->string, it->valuestring);
    if (rc < 0) {
        curl_slist_free_all(l);
        return NULL;
    }
    return l;
}

char *wrk_mcpup_body(long id, const char *method, cJSON *params, size_t *len)
{
    cJSON *o = mcpw_request(id, method, params);
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (s)
        *len = strlen(s);
    return s;
}

cJSON *wrk_mcpup_meta(cJSON *params)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
    if (!meta)
        meta = cJSON_AddObjectToObject(params, "_meta");
    cJSON_AddStringToObject(meta, MCPW_META_VERSION, MCPW_MODERN_VERSION);
    if (!cJSON_GetObjectItemCaseSensitive(meta, MCPW_META_CLIENT_CAPS)) /* wrk_uptask_opt_in's */
        cJSON_AddObjectToObject(meta, MCPW_META_CLIENT_CAPS);
    cJSON *ci = cJSON_AddObjectToObject(meta, MCPW_META_CLIENT_INFO);
    cJSON_AddStringToObject(ci, "name", "mcpq-worker");
    cJSON_AddStringToObject(ci, "version", "1.0.0");
    return params;
}

void wrk_mcpup_send(wrk_mcpup_t *up, const cJSON *msg, const char *method, const char *name,
                    const char *session, const char *traceparent, const char *request_id,
                    int64_t timeout_ms)
{
    char *body = cJSON_PrintUnformatted(msg);
    struct curl_slist *h =
        wrk_mcpup_headers(up, up->modern, up->modern ? MCPW_MODERN_VERSION : up->version, method,
                          name, up->modern ? NULL : session, traceparent, request_id);
    if (body && h) {
        wrk_httpexec_post(up->m->http, up->url, h, body, strlen(body), timeout_ms, NULL, NULL);
        h = NULL;
    }
    cJSON_free(body);
    curl_slist_free_all(h);
}

void wrk_mcpup_fire(wrk_mcpup_t *up, long id, const char *method, const char *name, cJSON *params,
                    const char *session, const char *traceparent, const char *request_id,
                    int64_t timeout_ms)
{
    if (up->modern)
        wrk_mcpup_meta(params);
    cJSON *msg = mcpw_request(id, method, params);
    if (msg)
        wrk_mcpup_send(up, msg, method, name, session, traceparent, request_id, timeout_ms);
    cJSON_Delete(msg);
}
