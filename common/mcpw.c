#include "mcpw.h"
#include "names.h"

#include "err.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

void mcpw_sse_init(mcpw_sse_t *p, size_t max)
{
    memset(p, 0, sizeof(*p));
    p->max = max;
    util_buf_init(&p->data, max);
    util_buf_init(&p->line, max + 16); /* a data line: "data: " and the data */
}

void mcpw_sse_cleanup(mcpw_sse_t *p)
{
    util_buf_cleanup(&p->data);
    util_buf_cleanup(&p->line);
    memset(p, 0, sizeof(*p));
}

/* Dispatches the event read so far (if it has data) and starts the next one. */
static int ev_dispatch(mcpw_sse_t *p, mcpw_sse_fn fn, void *arg)
{
    int stop = 0;
    if (p->has_data) {
        p->events++;
        stop = fn(p->event[0] ? p->event : "message", p->data.data, p->data.len, arg);
    }
    p->event[0] = '\0';
    p->data.len = 0;
    p->has_data = 0;
    return stop;
}

/* One complete line (without its end): a field, a comment, or the blank line that ends an
 * event. 1 when fn asked to stop, 0, or a negative error. */
static int sse_line(mcpw_sse_t *p, const char *s, size_t ll, mcpw_sse_fn fn, void *arg)
{
    if (ll == 0)
        return ev_dispatch(p, fn, arg) ? 1 : 0;
    if (*s == ':')
        return 0;
    const char *eol = s + ll;
    const char *colon = memchr(s, ':', ll);
    size_t fl = colon ? (size_t)(colon - s) : ll;
    const char *v = colon ? colon + 1 : eol;
    if (v < eol && *v == ' ')
        v++;
    size_t vl = (size_t)(eol - v);
    if (fl == 5 && memcmp(s, "event", 5) == 0) {
        size_t k = vl < sizeof(p->event) - 1 ? vl : sizeof(p->event) - 1;
        memcpy(p->event, v, k);
        p->event[k] = '\0';
    } else if (fl == 4 && memcmp(s, "data", 4) == 0) {
        int rc = p->has_data ? util_buf_append(&p->data, "\n", 1) : 0;
        if (rc == 0)
            rc = util_buf_append(&p->data, v, vl);
        if (rc < 0)
            return rc;
        p->has_data = 1;
    }
    return 0;
}

int mcpw_sse_feed(mcpw_sse_t *p, const char *buf, size_t len, mcpw_sse_fn fn, void *arg)
{
    if (p->stopped)
        return 1;
    if (len == 0)
        return 0;
    const char *s = buf, *end = buf + len;
    /* \r\n split across two chunks: the \n ends nothing new */
    if (p->after_cr && s < end && *s == '\n')
        s++;
    p->after_cr = 0;
    while (s < end) {
        const char *eol = s;
        while (eol < end && *eol != '\n' && *eol != '\r')
            eol++;
        if (eol == end) /* kept for the next chunk */
            return util_buf_append(&p->line, s, (size_t)(end - s));
        int rc;
        if (p->line.len > 0) {
            rc = util_buf_append(&p->line, s, (size_t)(eol - s));
            if (rc == 0)
                rc = sse_line(p, p->line.data, p->line.len, fn, arg);
            p->line.len = 0;
        } else {
            rc = sse_line(p, s, (size_t)(eol - s), fn, arg);
        }
        if (*eol == '\r') {
            if (eol + 1 < end && eol[1] == '\n')
                eol++;
            else if (eol + 1 == end)
                p->after_cr = 1;
        }
        s = eol + 1;
        if (rc != 0) {
            p->stopped = rc > 0;
            return rc;
        }
    }
    return 0;
}

int mcpw_sse_finish(mcpw_sse_t *p, mcpw_sse_fn fn, void *arg)
{
    if (p->stopped)
        return 1;
    int rc = 0;
    if (p->line.len > 0)
        rc = sse_line(p, p->line.data, p->line.len, fn, arg);
    p->line.len = 0;
    if (rc == 0 && ev_dispatch(p, fn, arg))
        rc = 1;
    p->stopped = rc > 0;
    return rc;
}

int mcpw_sse_each(const char *body, size_t len, mcpw_sse_fn fn, void *arg)
{
    mcpw_sse_t p;
    mcpw_sse_init(&p, len);
    int rc = mcpw_sse_feed(&p, body, len, fn, arg);
    if (rc == 0)
        rc = mcpw_sse_finish(&p, fn, arg);
    int n = rc < 0 ? rc : (int)p.events;
    mcpw_sse_cleanup(&p);
    return n;
}

/* Looks at one JSON-RPC message (or batch); takes the response with the reader's id. */
static void find_in(mcpw_reader_t *rd, cJSON *msg)
{
    if (cJSON_IsArray(msg)) {
        for (cJSON *it = msg->child; it && !rd->found; it = it->next)
            find_in(rd, it);
        return;
    }
    if (!cJSON_IsObject(msg))
        return;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
    if (cJSON_IsString(method)) {
        if ((!id || cJSON_IsNull(id)) && rd->note)
            rd->note(msg, rd->arg);
        else if (id && !cJSON_IsNull(id) && rd->request)
            rd->request(msg, rd->arg);
        return; /* a notification, or a request from the server */
    }
    if (cJSON_IsNumber(id) && id->valuedouble == (double)rd->id &&
        (cJSON_GetObjectItemCaseSensitive(msg, "result") ||
         cJSON_GetObjectItemCaseSensitive(msg, "error")))
        rd->found = cJSON_Duplicate(msg, 1);
}

static int find_sse(const char *event, const char *data, size_t len, void *arg)
{
    mcpw_reader_t *rd = arg;
    if (strcmp(event, "message") != 0)
        return 0;
    cJSON *msg = cJSON_ParseWithLength(data, len);
    find_in(rd, msg);
    cJSON_Delete(msg);
    return rd->found != NULL;
}

void mcpw_reader_init(mcpw_reader_t *rd, long id, size_t max, mcpw_note_fn note, void *arg)
{
    memset(rd, 0, sizeof(*rd));
    mcpw_sse_init(&rd->sse, max);
    rd->id = id;
    rd->note = note;
    rd->arg = arg;
}

void mcpw_reader_on_request(mcpw_reader_t *rd, mcpw_request_fn request)
{
    rd->request = request;
}

int mcpw_reader_feed(mcpw_reader_t *rd, const char *buf, size_t len)
{
    int rc = mcpw_sse_feed(&rd->sse, buf, len, find_sse, rd);
    return rc < 0 ? rc : rd->found != NULL;
}

cJSON *mcpw_reader_take(mcpw_reader_t *rd)
{
    if (!rd->found)
        mcpw_sse_finish(&rd->sse, find_sse, rd);
    cJSON *r = rd->found;
    rd->found = NULL;
    return r;
}

void mcpw_reader_cleanup(mcpw_reader_t *rd)
{
    mcpw_sse_cleanup(&rd->sse);
    cJSON_Delete(rd->found);
    rd->found = NULL;
}

cJSON *mcpw_response(const char *content_type, const char *body, size_t len, long id,
                     mcpw_note_fn note, void *arg)
{
    mcpw_reader_t rd;
    if (!body || len == 0)
        return NULL;
    mcpw_reader_init(&rd, id, len, note, arg);
    cJSON *found = NULL;
    if (mcpw_is_sse(content_type)) {
        if (mcpw_reader_feed(&rd, body, len) >= 0)
            found = mcpw_reader_take(&rd);
    } else {
        cJSON *msg = cJSON_ParseWithLength(body, len);
        find_in(&rd, msg);
        cJSON_Delete(msg);
        found = mcpw_reader_take(&rd);
    }
    mcpw_reader_cleanup(&rd);
    return found;
}

int mcpw_is_sse(const char *content_type)
{
    return content_type && strncasecmp(content_type, "text/event-stream", 17) == 0;
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
    cJSON_AddItemToObject(p, "capabilities", mcpw_client_capabilities());
    cJSON *ci = cJSON_AddObjectToObject(p, "clientInfo");
    cJSON_AddStringToObject(ci, "name", "mcpq-worker");
    cJSON_AddStringToObject(ci, "version", "1.0.0");
    return p;
}

cJSON *mcpw_client_capabilities(void)
{
    cJSON *caps = cJSON_CreateObject();
    cJSON *el = cJSON_AddObjectToObject(caps, "elicitation");
    cJSON_AddObjectToObject(el, "form");
    cJSON_AddObjectToObject(el, "url");
    cJSON_AddObjectToObject(caps, "sampling");
    cJSON_AddObjectToObject(caps, "roots");
    return caps;
}
