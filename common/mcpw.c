#include "mcpw.h"
#include "names.h"

#include "err.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Grows with the event's data; bounded by the body it comes from. */
typedef struct sse_ev {
    char event[64];
    char *data;
    size_t len, cap;
    int has_data;
} sse_ev_t;

static int ev_append(sse_ev_t *ev, const char *p, size_t n)
{
    if (ev->len + n + 2 > ev->cap) {
        size_t cap = ev->cap ? ev->cap * 2 : 256;
        while (cap < ev->len + n + 2)
            cap *= 2;
        char *d = realloc(ev->data, cap);
        if (!d)
            return MCPQ_ENOMEM;
        ev->data = d;
        ev->cap = cap;
    }
    memcpy(ev->data + ev->len, p, n);
    ev->len += n;
    ev->data[ev->len] = '\0';
    return 0;
}

static void ev_reset(sse_ev_t *ev)
{
    ev->event[0] = '\0';
    ev->len = 0;
    ev->has_data = 0;
    if (ev->data)
        ev->data[0] = '\0';
}

int mcpw_sse_each(const char *body, size_t len, mcpw_sse_fn fn, void *arg)
{
    sse_ev_t ev = {0};
    const char *p = body, *end = body + len;
    int n = 0, stop = 0;
    while (p < end && !stop) {
        const char *eol = p;
        while (eol < end && *eol != '\n' && *eol != '\r')
            eol++;
        size_t ll = (size_t)(eol - p);
        if (ll == 0) {
            if (ev.has_data) {
                n++;
                stop = fn(ev.event[0] ? ev.event : "message", ev.data, ev.len, arg);
            }
            ev_reset(&ev);
        } else if (*p != ':') {
            const char *colon = memchr(p, ':', ll);
            size_t fl = colon ? (size_t)(colon - p) : ll;
            const char *v = colon ? colon + 1 : eol;
            if (v < eol && *v == ' ')
                v++;
            size_t vl = (size_t)(eol - v);
            if (fl == 5 && memcmp(p, "event", 5) == 0) {
                size_t k = vl < sizeof(ev.event) - 1 ? vl : sizeof(ev.event) - 1;
                memcpy(ev.event, v, k);
                ev.event[k] = '\0';
            } else if (fl == 4 && memcmp(p, "data", 4) == 0) {
                if ((ev.has_data && ev_append(&ev, "\n", 1) < 0) || ev_append(&ev, v, vl) < 0) {
                    free(ev.data);
                    return MCPQ_ENOMEM;
                }
                ev.has_data = 1;
            }
        }
        /* \r\n is one line end */
        if (eol < end && *eol == '\r' && eol + 1 < end && eol[1] == '\n')
            eol++;
        p = eol < end ? eol + 1 : end;
    }
    if (!stop && ev.has_data) {
        n++;
        fn(ev.event[0] ? ev.event : "message", ev.data, ev.len, arg);
    }
    free(ev.data);
    return n;
}

typedef struct find {
    long id;
    cJSON *found;
    mcpw_note_fn note;
    void *arg;
} find_t;

/* Looks at one JSON-RPC message (or batch); takes the response with the id. */
static void find_in(find_t *f, cJSON *msg)
{
    if (cJSON_IsArray(msg)) {
        for (cJSON *it = msg->child; it && !f->found; it = it->next)
            find_in(f, it);
        return;
    }
    if (!cJSON_IsObject(msg))
        return;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
    if (cJSON_IsString(method)) {
        if (!id && f->note)
            f->note(msg, f->arg);
        return; /* a notification, or a request from the server: not ours to answer */
    }
    if (cJSON_IsNumber(id) && id->valuedouble == (double)f->id &&
        (cJSON_GetObjectItemCaseSensitive(msg, "result") ||
         cJSON_GetObjectItemCaseSensitive(msg, "error")))
        f->found = cJSON_Duplicate(msg, 1);
}

static int find_sse(const char *event, const char *data, size_t len, void *arg)
{
    find_t *f = arg;
    if (strcmp(event, "message") != 0)
        return 0;
    cJSON *msg = cJSON_ParseWithLength(data, len);
    find_in(f, msg);
    cJSON_Delete(msg);
    return f->found != NULL;
}

cJSON *mcpw_response(const char *content_type, const char *body, size_t len, long id,
                     mcpw_note_fn note, void *arg)
{
    find_t f = {.id = id, .note = note, .arg = arg};
    if (!body || len == 0)
        return NULL;
    if (content_type && strncasecmp(content_type, "text/event-stream", 17) == 0) {
        mcpw_sse_each(body, len, find_sse, &f);
        return f.found;
    }
    cJSON *msg = cJSON_ParseWithLength(body, len);
    find_in(&f, msg);
    cJSON_Delete(msg);
    return f.found;
}

int mcpw_discover_modern(long status, const cJSON *response)
{
    if (status < 200 || status > 299)
        return 0;
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(response, "result");
    if (!cJSON_IsObject(r))
        return 0;
    const cJSON *sup = cJSON_GetObjectItemCaseSensitive(r, "supportedVersions");
    if (!sup)
        return 1;
    const cJSON *v;
    cJSON_ArrayForEach(v, sup)
    {
        if (cJSON_IsString(v) && strcmp(v->valuestring, MCPW_MODERN_VERSION) == 0)
            return 1;
    }
    return 0;
}

const char *mcpw_legacy_version(const cJSON *response)
{
    static const char *const known[] = {NAMES_PROTO_UPSTREAM_LEGACY};
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(response, "result");
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "protocolVersion"));
    if (!v)
        return NULL;
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(v, known[i]) == 0)
            return known[i];
    return NULL;
}

int mcpw_header_reserved(const char *name)
{
    static const char *const reserved[] = {
        "content-type",         "content-length", "accept",     "expect",
        "mcp-protocol-version", "mcp-session-id", "mcp-method", "mcp-name"};
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (strcasecmp(name, reserved[i]) == 0)
            return 1;
    return 0;
}

int mcpw_session_header(const char *line, size_t len, char *out, size_t out_size)
{
    static const char name[] = "mcp-session-id:";
    if (len <= sizeof(name) - 1 || strncasecmp(line, name, sizeof(name) - 1) != 0)
        return 0;
    const char *v = line + sizeof(name) - 1, *e = line + len;
    while (v < e && (*v == ' ' || *v == '\t'))
        v++;
    while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'))
        e--;
    size_t vl = (size_t)(e - v);
    if (vl < out_size) {
        memcpy(out, v, vl);
        out[vl] = '\0';
    } else if (out_size > 0) {
        out[0] = '\0';
    }
    return 1;
}

cJSON *mcpw_request(long id, const char *method, cJSON *params)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) {
        cJSON_Delete(params);
        return NULL;
    }
    cJSON_AddStringToObject(o, "jsonrpc", "2.0");
    if (id >= 0)
        cJSON_AddNumberToObject(o, "id", (double)id);
    cJSON_AddStringToObject(o, "method", method);
    if (params)
        cJSON_AddItemToObject(o, "params", params);
    return o;
}

cJSON *mcpw_initialize_params(void)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "protocolVersion", MCPW_LEGACY_VERSION);
    cJSON_AddObjectToObject(p, "capabilities");
    cJSON *ci = cJSON_AddObjectToObject(p, "clientInfo");
    cJSON_AddStringToObject(ci, "name", "mcpq-worker");
    cJSON_AddStringToObject(ci, "version", "1.0.0");
    return p;
}
