#include "kinds.h"

#include "err.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VARS 16
#define MAX_SEGS (2 * MAX_VARS + 1)
#define VAR_MAX 64

static const char *const names[KINDS_COUNT] = {"tool", "resource", "resource_template", "prompt"};

int kinds_parse(const char *s)
{
    if (!s)
        return KINDS_TOOL;
    for (int k = 0; k < KINDS_COUNT; k++)
        if (strcmp(s, names[k]) == 0)
            return k;
    return -1;
}

const char *kinds_name(int kind)
{
    return kind >= 0 && kind < KINDS_COUNT ? names[kind] : names[KINDS_TOOL];
}

int kinds_of(const cJSON *obj)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    if (k && !cJSON_IsString(k))
        return -1;
    return kinds_parse(k ? k->valuestring : NULL);
}

/* One piece of a template: literal text or a variable, tpl[off..off+len). */
typedef struct seg {
    int var;
    size_t off, len;
} seg_t;

static int var_char(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           ch == '_';
}

/* Splits tpl into segs (at most MAX_SEGS): how many, or -1 with err filled. */
static int split(const char *tpl, seg_t *segs, char *err, size_t err_size)
{
    size_t i = 0, n = strlen(tpl);
    int nseg = 0, nvar = 0;
    if (n == 0 || n > KINDS_URI_MAX) {
        snprintf(err, err_size, "must be 1-%d bytes", KINDS_URI_MAX);
        return -1;
    }
    while (i < n) {
        if (nseg == MAX_SEGS) {
            snprintf(err, err_size, "at most %d variables", MAX_VARS);
            return -1;
        }
        seg_t *s = &segs[nseg];
        if (tpl[i] == '}') {
            snprintf(err, err_size, "'}' without '{' at byte %zu", i);
            return -1;
        }
        if (tpl[i] != '{') {
            s->var = 0;
            s->off = i;
            while (i < n && tpl[i] != '{' && tpl[i] != '}')
                i++;
            s->len = i - s->off;
            nseg++;
            continue;
        }
        size_t start = ++i;
        while (i < n && var_char(tpl[i]))
            i++;
        if (i == n || tpl[i] != '}' || i == start || i - start > VAR_MAX) {
            snprintf(err, err_size,
                     i == n ? "unclosed '{' at byte %zu"
                            : "the expression at byte %zu is not {name} with a name of 1-64 of "
                              "[A-Za-z0-9_] (mcpq serves RFC 6570 level 1 templates only)",
                     start - 1);
            return -1;
        }
        if (nseg > 0 && segs[nseg - 1].var) {
            snprintf(err, err_size,
                     "the variable at byte %zu follows another variable directly; put literal "
                     "text between them",
                     start - 1);
            return -1;
        }
        for (int k = 0; k < nseg; k++)
            if (segs[k].var && segs[k].len == i - start &&
                memcmp(tpl + segs[k].off, tpl + start, i - start) == 0) {
                snprintf(err, err_size, "variable \"%.*s\" appears twice", (int)(i - start),
                         tpl + start);
                return -1;
            }
        s->var = 1;
        s->off = start;
        s->len = i - start;
        nseg++;
        nvar++;
        i++;
        if (nvar > MAX_VARS) {
            snprintf(err, err_size, "at most %d variables", MAX_VARS);
            return -1;
        }
    }
    if (nvar == 0) {
        snprintf(err, err_size, "has no {variable} (a fixed URI is a resource, not a template)");
        return -1;
    }
    return nseg;
}

int kinds_template_check(const char *tpl, char *err, size_t err_size)
{
    seg_t segs[MAX_SEGS];
    return split(tpl, segs, err, err_size) < 0 ? MCPQ_EINVAL : 0;
}

typedef struct matcher {
    const char *tpl, *uri;
    size_t len;
    const seg_t *segs;
    int nseg;
    unsigned char *failed; /* bit (i * (len + 1) + p): segment i cannot match from p */
    size_t ends[MAX_SEGS]; /* where each segment's match ends, on success */
} matcher_t;

static int match_from(matcher_t *m, int i, size_t p)
{
    if (i == m->nseg)
        return p == m->len;
    size_t bit = (size_t)i * (m->len + 1) + p;
    if (m->failed[bit / 8] & (1u << (bit % 8)))
        return 0;
    const seg_t *s = &m->segs[i];
    int ok = 0;
    if (!s->var) {
        ok = m->len - p >= s->len && memcmp(m->uri + p, m->tpl + s->off, s->len) == 0 &&
             match_from(m, i + 1, p + s->len);
        if (ok)
            m->ends[i] = p + s->len;
    } else {
        /* 1+ characters other than '/', then the rest */
        for (size_t q = p + 1; q <= m->len && m->uri[q - 1] != '/' && !ok; q++)
            if ((ok = match_from(m, i + 1, q)))
                m->ends[i] = q;
    }
    if (!ok)
        m->failed[bit / 8] |= (unsigned char)(1u << (bit % 8));
    return ok;
}

int kinds_template_match(const char *tpl, const char *uri, cJSON **vars)
{
    seg_t segs[MAX_SEGS];
    char err[160];
    if (vars)
        *vars = NULL;
    int nseg = split(tpl, segs, err, sizeof(err));
    size_t len = strlen(uri);
    if (nseg < 0 || len > KINDS_URI_MAX)
        return 0;
    matcher_t m = {.tpl = tpl, .uri = uri, .len = len, .segs = segs, .nseg = nseg};
    m.failed = calloc(((size_t)nseg * (len + 1)) / 8 + 1, 1);
    if (!m.failed)
        return MCPQ_ENOMEM;
    int ok = match_from(&m, 0, 0);
    free(m.failed);
    if (!ok || !vars)
        return ok;
    cJSON *o = cJSON_CreateObject();
    size_t start = 0;
    for (int i = 0; o && i < nseg; i++) {
        if (segs[i].var) {
            char name[VAR_MAX + 1];
            memcpy(name, tpl + segs[i].off, segs[i].len);
            name[segs[i].len] = '\0';
            char *val = strndup(uri + start, m.ends[i] - start);
            cJSON *v = val ? cJSON_CreateString(val) : NULL;
            free(val);
            if (!v || !cJSON_AddItemToObject(o, name, v)) {
                cJSON_Delete(v);
                cJSON_Delete(o);
                o = NULL;
            }
        }
        start = m.ends[i];
    }
    if (!o)
        return MCPQ_ENOMEM;
    *vars = o;
    return 1;
}

char *kinds_updated_message(const char *tenant, const char *server, const char *uri)
{
    cJSON *msg = cJSON_CreateObject();
    char *text = NULL;
    if (msg && cJSON_AddStringToObject(msg, "tenant", tenant) &&
        cJSON_AddStringToObject(msg, "server", server) && cJSON_AddStringToObject(msg, "uri", uri))
        text = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    return text;
}

static const char *const method_names[KINDS_METHOD_COUNT] = {
    [KINDS_METHOD_CALL] = "tools/call",
    [KINDS_METHOD_READ] = "resources/read",
    [KINDS_METHOD_PROMPT] = "prompts/get",
    [KINDS_METHOD_COMPLETE] = "completion/complete",
    [KINDS_METHOD_SUBSCRIBE] = "resources/subscribe",
    [KINDS_METHOD_UNSUBSCRIBE] = "resources/unsubscribe",
    [KINDS_METHOD_CATALOG] = "mcpq/catalog",
};

int kinds_method(const char *name)
{
    for (int i = 0; name && i < KINDS_METHOD_COUNT; i++)
        if (strcmp(name, method_names[i]) == 0)
            return i;
    return -1;
}

const char *kinds_method_name(kinds_method_t method)
{
    return (unsigned)method < KINDS_METHOD_COUNT ? method_names[method] : method_names[0];
}
