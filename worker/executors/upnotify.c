#include "upnotify.h"

#include "err.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

#define UPNOTIFY_BACKOFF_MIN_MS 500 /* re-opening a dropped notification stream */
#define UPNOTIFY_BACKOFF_MAX_MS 30000

static void ev_start(wrk_mcpup_t *up);

/* Ends the subscribe jobs waiting for the stream: {} once it is open, else an error. */
static void ev_release(wrk_mcpup_t *up, const char *failure)
{
    wrk_mcpup_call_t *c = up->ev_waiters;
    up->ev_waiters = NULL;
    while (c) {
        wrk_mcpup_call_t *next = c->next;
        c->next = NULL;
        if (failure)
            c->m->ops->end(c, wrk_job_error_hidden(c->job, up->host, "%s", failure));
        else
            c->m->ops->end_result(c, cJSON_CreateObject());
        c = next;
    }
}

static void ev_opened(wrk_mcpup_t *up)
{
    if (up->ev_open)
        return;
    up->ev_open = 1;
    up->ev_backoff_ms = 0;
    log_event(LOG_INFO, "upstream MCP notification stream open", "upstream", up->host,
              (char *)NULL);
    ev_release(up, NULL);
}

/* A message on the stream: a resource update goes to its subscribers; a 2026-07-28 stream
 * is open once the upstream acknowledged the subscription. */
static void ev_note(const cJSON *note, void *arg)
{
    wrk_mcpup_t *up = arg;
    const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(note, "method"));
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(note, "params");
    if (strcmp(method, "notifications/resources/updated") == 0) {
        const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "uri"));
        if (uri)
            wrk_upnotify_updated(up->m, up->key, uri);
    } else if (up->modern && strcmp(method, "notifications/subscriptions/acknowledged") == 0) {
        ev_opened(up);
    }
}

static int ev_chunk(const char *data, size_t len, void *arg)
{
    wrk_mcpup_t *up = arg;
    if (!data) { /* the headers of a 2xx event stream */
        if (!up->modern)
            ev_opened(up);
        return 0;
    }
    return mcpw_reader_feed(&up->ev_rd, data, len); /* 1: listen's response, a graceful end */
}

/* The stream ended (dropped, refused, or ended by the upstream): re-opened after a backoff
 * while subscriptions remain; a legacy session the upstream forgot (404) is negotiated
 * again first. */
static void ev_done(const wrk_httpexec_resp_t *resp, void *arg)
{
    wrk_mcpup_t *up = arg;
    wrk_mcpexec_t *m = up->m;
    int was_open = up->ev_open;
    up->ev_req = NULL;
    up->ev_open = 0;
    mcpw_reader_cleanup(&up->ev_rd);
    char status[24];
    snprintf(status, sizeof(status), "%ld", resp->status);
    log_event(LOG_WARN, "upstream MCP notification stream ended", "upstream", up->host, "status",
              status, "error", resp->code == CURLE_OK ? NULL : resp->error, (char *)NULL);
    if (resp->code == CURLE_OK && resp->status == 404 && !up->modern &&
        up->state == WRK_MCPUP_READY && strcmp(up->session, up->ev_session) == 0) {
        up->state = WRK_MCPUP_NEW; /* the session expired */
        up->session[0] = '\0';
    }
    if (!was_open)
        ev_release(up, "the upstream MCP server's notification stream could not be opened");
    if (wrk_mcpsubs_count(m->subs, up->key) == 0)
        return;
    up->ev_backoff_ms = was_open || !up->ev_backoff_ms                    ? UPNOTIFY_BACKOFF_MIN_MS
                        : up->ev_backoff_ms * 2 > UPNOTIFY_BACKOFF_MAX_MS ? UPNOTIFY_BACKOFF_MAX_MS
                                                                          : up->ev_backoff_ms * 2;
    wrk_loop_timer_start(m->rt->loop, &up->ev_retry, up->ev_backoff_ms);
}

static void ev_retry_fire(wrk_loop_timer_t *t, void *arg)
{
    wrk_mcpup_t *up = arg;
    if (up->ev_req || wrk_mcpsubs_count(up->m->subs, up->key) == 0)
        return;
    if (up->state != WRK_MCPUP_READY) {
        if (up->state == WRK_MCPUP_NEW)
            up->m->ops->negotiate(up->m, up);
        wrk_loop_timer_start(up->m->rt->loop, t, up->ev_backoff_ms);
        return;
    }
    ev_start(up);
}

/* A legacy upstream's new session knows none of the subscriptions: resources/subscribe each
 * uri again, fire-and-forget. */
static void ev_resubscribe(wrk_mcpup_t *up, const cJSON *uris)
{
    const cJSON *u;
    cJSON_ArrayForEach(u, uris)
    {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "uri", u->valuestring);
        wrk_mcpup_fire(up, ++up->m->next_id, "resources/subscribe", NULL, p, up->session, NULL,
                       NULL, WRK_MCPUP_NEGOTIATE_TIMEOUT_MS);
    }
}

static void ev_stop(wrk_mcpup_t *up)
{
    wrk_httpexec_req_cancel(up->m->http, up->ev_req);
    up->ev_req = NULL;
    up->ev_open = 0;
    mcpw_reader_cleanup(&up->ev_rd);
    wrk_loop_timer_stop(up->m->rt->loop, &up->ev_retry);
}

/* (Re)opens the stream for the uris subscribed at up: legacy, a GET in the session; 2026-07-28,
 * subscriptions/listen naming them (basic/patterns/subscriptions.mdx). No uri left: closed. */
static void ev_start(wrk_mcpup_t *up)
{
    wrk_mcpexec_t *m = up->m;
    ev_stop(up);
    cJSON *uris = wrk_mcpsubs_uris(m->subs, up->key);
    if (!uris || cJSON_GetArraySize(uris) == 0) {
        cJSON_Delete(uris);
        ev_release(up, uris ? NULL : "out of memory");
        return;
    }
    char *body = NULL;
    size_t len = 0;
    struct curl_slist *h;
    if (up->modern) {
        up->ev_id = ++m->next_id;
        cJSON *p = wrk_mcpup_meta(cJSON_CreateObject());
        cJSON_AddItemToObject(cJSON_AddObjectToObject(p, "notifications"), "resourceSubscriptions",
                              uris);
        body = wrk_mcpup_body(up->ev_id, "subscriptions/listen", p, &len);
        h = wrk_mcpup_headers(up, 1, MCPW_MODERN_VERSION, "subscriptions/listen", NULL, NULL, NULL,
                              NULL);
    } else {
        up->ev_id = -1;
        if (strcmp(up->ev_session, up->session) != 0)
            ev_resubscribe(up, uris);
        cJSON_Delete(uris);
        snprintf(up->ev_session, sizeof(up->ev_session), "%s", up->session);
        h = wrk_mcpup_headers(up, 0, up->version, NULL, NULL, up->session, NULL, NULL);
    }
    mcpw_reader_init(&up->ev_rd, up->ev_id, wrk_httpexec_max_output(m->http), ev_note, up);
    if (h && (body || !up->modern))
        up->ev_req = wrk_httpexec_stream(m->http, up->url, h, body, len, 0, ev_chunk, ev_done, up);
    else
        curl_slist_free_all(h);
    cJSON_free(body);
    if (!up->ev_req) {
        log_event(LOG_ERROR, "cannot open the upstream MCP notification stream", "upstream",
                  up->host, (char *)NULL);
        ev_release(up, "the upstream MCP server's notification stream could not be opened");
    }
}

/* c waits until up's stream is open (at once when it is); the stream is (re)started when
 * restart is set or none runs. */
static void ev_wait(wrk_mcpup_call_t *c, int restart)
{
    wrk_mcpup_t *up = c->up;
    c->next = up->ev_waiters;
    up->ev_waiters = c;
    if (restart || !up->ev_req)
        ev_start(up);
    else if (up->ev_open)
        ev_release(up, NULL);
}

/* The job's (server, uri) of a resources/subscribe or /unsubscribe job and the key its
 * upstream's subscriptions are kept under (an HTTP upstream's, or a stdio group's); 0 when it
 * is not one or lacks them (then it goes upstream as it is, and the upstream answers). */
static int subs_of(const wrk_mcpup_call_t *c, const char **key, const char **server,
                   const char **uri)
{
    const wrk_envelope_t *env = &c->job->env;
    *key = c->up ? c->up->key : c->skey;
    if (env->method_id != KINDS_METHOD_SUBSCRIBE && env->method_id != KINDS_METHOD_UNSUBSCRIBE)
        return 0;
    *server = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env->root, "server"));
    *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env->arguments, "uri"));
    return *key && *server && *uri && env->tenant;
}

/* Keeps the job's (tenant, server) as a subscriber of uri at key: wrk_mcpsubs_add's 1 or 0,
 * or < 0 with c ended (too many subscriptions, ENOMEM). */
static int subs_add(wrk_mcpup_call_t *c, const char *key, const char *server, const char *uri)
{
    int rc = wrk_mcpsubs_add(c->m->subs, key, c->job->env.tenant, server, uri);
    if (rc < 0)
        c->m->ops->end_error(c, -32603,
                             rc == MCPQ_ETOOBIG ? "too many resource subscriptions on this worker"
                                                : "out of memory");
    return rc;
}

/* A subscribe or unsubscribe job this worker answers without asking the upstream: every
 * subscription of a 2026-07-28 upstream (it has no resources/subscribe: its
 * subscriptions/listen filter changes), and an unsubscribe while other (tenant, server)s
 * still want the uri. 1 when c was taken. */
int wrk_upnotify_local(wrk_mcpup_call_t *c)
{
    const char *key, *server, *uri;
    if (!subs_of(c, &key, &server, &uri))
        return 0;
    wrk_mcpup_t *up = c->up;
    wrk_mcpexec_t *m = c->m;
    const char *tenant = c->job->env.tenant;
    int modern = up && up->modern;
    if (c->job->env.method_id == KINDS_METHOD_UNSUBSCRIBE) {
        if (!modern && wrk_mcpsubs_others(m->subs, key, tenant, server, uri) == 0)
            return 0; /* the last one: the upstream unsubscribes too (wrk_upnotify_answered) */
        size_t left = wrk_mcpsubs_remove(m->subs, key, tenant, server, uri);
        if (modern && left == 0) {
            if (wrk_mcpsubs_count(m->subs, key) == 0)
                ev_stop(up);
            else
                ev_start(up); /* a narrower filter */
        }
        c->m->ops->end_result(c, cJSON_CreateObject());
        return 1;
    }
    if (!modern)
        return 0; /* resources/subscribe goes upstream (wrk_upnotify_answered) */
    int rc = subs_add(c, key, server, uri);
    if (rc < 0)
        return 1;
    ev_wait(c, rc == 1);
    return 1;
}

/* A 2025 HTTP or a stdio upstream accepted the subscribe or unsubscribe job c: its subscriber
 * is kept (and c answered once the HTTP stream is open) or dropped (the stream closed with
 * the last one). */
void wrk_upnotify_answered(wrk_mcpup_call_t *c)
{
    const char *key, *server, *uri;
    if (!subs_of(c, &key, &server, &uri)) {
        c->m->ops->end_result(c, cJSON_CreateObject());
        return;
    }
    wrk_mcpup_t *up = c->up;
    wrk_mcpexec_t *m = c->m;
    const char *tenant = c->job->env.tenant;
    if (c->job->env.method_id == KINDS_METHOD_UNSUBSCRIBE) {
        wrk_mcpsubs_remove(m->subs, key, tenant, server, uri);
        if (up && wrk_mcpsubs_count(m->subs, key) == 0)
            ev_stop(up);
        c->m->ops->end_result(c, cJSON_CreateObject());
        return;
    }
    if (subs_add(c, key, server, uri) < 0)
        return;
    if (!up) { /* stdio: the server's stdout is the stream (mcpexec.c's stdio_updated) */
        c->m->ops->end_result(c, cJSON_CreateObject());
        return;
    }
    if (!up->ev_req)
        snprintf(up->ev_session, sizeof(up->ev_session), "%s", c->session);
    ev_wait(c, 0);
}

void wrk_upnotify_updated(wrk_mcpexec_t *m, const char *upstream, const char *uri)
{
    if (m->rt)
        wrk_mcpsubs_updated(m->subs, m->rt->store, upstream, uri);
}

void wrk_upnotify_init(wrk_mcpup_t *up)
{
    wrk_loop_timer_init(&up->ev_retry, ev_retry_fire, up);
}

void wrk_upnotify_cleanup(wrk_mcpup_t *up)
{
    wrk_httpexec_req_cancel(up->m->http, up->ev_req);
    up->ev_req = NULL;
    mcpw_reader_cleanup(&up->ev_rd);
    if (up->m->rt)
        wrk_loop_timer_stop(up->m->rt->loop, &up->ev_retry);
}
