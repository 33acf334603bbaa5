#include "mcpsubs.h"

#include "err.h"
#include "kinds.h"
#include "log.h"
#include "names.h"

#include <stdlib.h>
#include <string.h>

typedef struct sub {
    char *upstream, *tenant, *server, *uri;
    struct sub *next;
} sub_t;

struct wrk_mcpsubs {
    sub_t *head;
    size_t n;
};

wrk_mcpsubs_t *wrk_mcpsubs_new(void)
{
    return calloc(1, sizeof(wrk_mcpsubs_t));
}

static void sub_free(sub_t *e)
{
    free(e->upstream);
    free(e->tenant);
    free(e->server);
    free(e->uri);
    free(e);
}

void wrk_mcpsubs_free(wrk_mcpsubs_t *s)
{
    if (!s)
        return;
    while (s->head) {
        sub_t *e = s->head;
        s->head = e->next;
        sub_free(e);
    }
    free(s);
}

static int same(const sub_t *e, const char *upstream, const char *tenant, const char *server,
                const char *uri)
{
    return strcmp(e->upstream, upstream) == 0 && strcmp(e->uri, uri) == 0 &&
           (!tenant || (strcmp(e->tenant, tenant) == 0 && strcmp(e->server, server) == 0));
}

int wrk_mcpsubs_add(wrk_mcpsubs_t *s, const char *upstream, const char *tenant, const char *server,
                    const char *uri)
{
    for (const sub_t *e = s->head; e; e = e->next)
        if (same(e, upstream, tenant, server, uri))
            return 0;
    if (s->n >= WRK_MCPSUBS_MAX)
        return MCPQ_ETOOBIG;
    sub_t *e = calloc(1, sizeof(*e));
    if (!e)
        return MCPQ_ENOMEM;
    e->upstream = strdup(upstream);
    e->tenant = strdup(tenant);
    e->server = strdup(server);
    e->uri = strdup(uri);
    if (!e->upstream || !e->tenant || !e->server || !e->uri) {
        sub_free(e);
        return MCPQ_ENOMEM;
    }
    e->next = s->head;
    s->head = e;
    s->n++;
    return 1;
}

size_t wrk_mcpsubs_remove(wrk_mcpsubs_t *s, const char *upstream, const char *tenant,
                          const char *server, const char *uri)
{
    for (sub_t **pp = &s->head; *pp; pp = &(*pp)->next)
        if (same(*pp, upstream, tenant, server, uri)) {
            sub_t *e = *pp;
            *pp = e->next;
            sub_free(e);
            s->n--;
            break;
        }
    return wrk_mcpsubs_others(s, upstream, "", "", uri);
}

size_t wrk_mcpsubs_others(const wrk_mcpsubs_t *s, const char *upstream, const char *tenant,
                          const char *server, const char *uri)
{
    size_t n = 0;
    for (const sub_t *e = s->head; e; e = e->next)
        if (same(e, upstream, NULL, NULL, uri) &&
            (strcmp(e->tenant, tenant) != 0 || strcmp(e->server, server) != 0))
            n++;
    return n;
}

cJSON *wrk_mcpsubs_uris(const wrk_mcpsubs_t *s, const char *upstream)
{
    cJSON *a = cJSON_CreateArray();
    for (const sub_t *e = s->head; e && a; e = e->next) {
        if (strcmp(e->upstream, upstream) != 0)
            continue;
        int dup = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, a)
        {
            dup |= strcmp(it->valuestring, e->uri) == 0;
        }
        if (!dup && !cJSON_AddItemToArray(a, cJSON_CreateString(e->uri))) {
            cJSON_Delete(a);
            a = NULL;
        }
    }
    return a;
}

size_t wrk_mcpsubs_count(const wrk_mcpsubs_t *s, const char *upstream)
{
    size_t n = 0;
    for (const sub_t *e = s->head; e; e = e->next)
        n += strcmp(e->upstream, upstream) == 0;
    return n;
}

size_t wrk_mcpsubs_updated(const wrk_mcpsubs_t *s, wrk_store_t *st, const char *upstream,
                           const char *uri)
{
    size_t n = 0;
    for (const sub_t *e = s->head; e; e = e->next) {
        if (!same(e, upstream, NULL, NULL, uri))
            continue;
        char *text = kinds_updated_message(e->tenant, e->server, e->uri);
        if (!text)
            continue;
        wrk_store_publish(st, NAMES_CHAN_RESOURCE_UPDATED, text, strlen(text));
        cJSON_free(text);
        n++;
    }
    if (n)
        log_event(LOG_INFO, "upstream resource updated", "uri", uri, (char *)NULL);
    return n;
}
