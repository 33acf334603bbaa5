#include "pin.h"

#include "err.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const members[] = ING_PIN_MEMBERS;
#define NMEMBERS (sizeof(members) / sizeof(members[0]))

static const char *str_of(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static int member_cmp(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    return strcmp(x->string, y->string);
}

/* A deep copy of v whose objects have their members sorted by name. */
static cJSON *sorted_copy(const cJSON *v)
{
    if (cJSON_IsArray(v)) {
        cJSON *a = cJSON_CreateArray();
        const cJSON *e;
        cJSON_ArrayForEach(e, v)
        {
            cJSON *c = sorted_copy(e);
            if (!a || !c) {
                cJSON_Delete(c);
                cJSON_Delete(a);
                return NULL;
            }
            cJSON_AddItemToArray(a, c);
        }
        return a;
    }
    if (!cJSON_IsObject(v))
        return cJSON_Duplicate(v, 0);
    size_t n = (size_t)cJSON_GetArraySize(v), k = 0;
    const cJSON **m = calloc(n + 1, sizeof(*m));
    cJSON *o = cJSON_CreateObject();
    if (!m || !o) {
        free(m);
        cJSON_Delete(o);
        return NULL;
    }
    for (const cJSON *e = v->child; e; e = e->next)
        m[k++] = e;
    qsort(m, k, sizeof(*m), member_cmp);
    for (size_t i = 0; i < k; i++) {
        cJSON *c = sorted_copy(m[i]);
        if (!c) {
            free(m);
            cJSON_Delete(o);
            return NULL;
        }
        cJSON_AddItemToObject(o, m[i]->string, c);
    }
    free(m);
    return o;
}

char *ing_pin_canonical(const cJSON *v)
{
    cJSON *c = sorted_copy(v);
    char *s = c ? cJSON_PrintUnformatted(c) : NULL;
    cJSON_Delete(c);
    return s;
}

static const cJSON *published_version(const cJSON *tool)
{
    const char *pub = str_of(tool, "published");
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(tool, "versions"))
    {
        if (pub && str_of(v, "version") && strcmp(str_of(v, "version"), pub) == 0)
            return v;
    }
    return NULL;
}

cJSON *ing_pin_definition(const cJSON *tool)
{
    const cJSON *ver = published_version(tool);
    const char *name = str_of(tool, "name");
    if (!ver || !name)
        return NULL;
    cJSON *d = cJSON_CreateObject();
    if (!d || !cJSON_AddStringToObject(d, "name", name)) {
        cJSON_Delete(d);
        return NULL;
    }
    for (size_t i = 1; i < NMEMBERS; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(ver, members[i]);
        cJSON *c = x ? cJSON_Duplicate(x, 1) : NULL;
        if (x && !c) {
            cJSON_Delete(d);
            return NULL;
        }
        if (c)
            cJSON_AddItemToObject(d, members[i], c);
    }
    return d;
}

int ing_pin_hash(const cJSON *definition, char out[ING_PIN_SHA_LEN + 1])
{
    char *s = ing_pin_canonical(definition);
    if (!s)
        return MCPQ_ENOMEM;
    util_sha256_hex(s, strlen(s), out);
    cJSON_free(s);
    return 0;
}

/* 1 when member m of a and b differs (absent on one side, or another canonical text). */
static int member_differs(const cJSON *a, const cJSON *b, const char *m)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, m);
    const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, m);
    if (!x || !y)
        return (x == NULL) != (y == NULL);
    char *sx = ing_pin_canonical(x), *sy = ing_pin_canonical(y);
    int differs = !sx || !sy || strcmp(sx, sy) != 0;
    cJSON_free(sx);
    cJSON_free(sy);
    return differs;
}

/* The members of definition d that differ from the approved one (NULL: never approved, []). */
static cJSON *changed_members(const cJSON *approved, const cJSON *d)
{
    cJSON *out = cJSON_CreateArray();
    for (size_t i = 0; out && approved && i < NMEMBERS; i++)
        if (member_differs(approved, d, members[i]))
            cJSON_AddItemToArray(out, cJSON_CreateString(members[i]));
    return out;
}

static void set_member(cJSON *o, const char *k, cJSON *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    if (v)
        cJSON_AddItemToObject(o, k, v);
}

int ing_pin_is_tool(const cJSON *doc)
{
    const char *kind = str_of(doc, "kind");
    return !kind || strcmp(kind, "tool") == 0;
}

int ing_pin_quarantined(const cJSON *tool)
{
    return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(tool, "quarantine"));
}

void ing_pin_change_cleanup(ing_pin_change_t *chg)
{
    if (!chg)
        return;
    cJSON_Delete(chg->changed);
    chg->changed = NULL;
}

cJSON *ing_pin_refresh(const cJSON *stored, cJSON *fresh, int pin, const char *now,
                       ing_pin_change_t *chg)
{
    ing_pin_change_t local;
    if (!chg)
        chg = &local;
    memset(chg, 0, sizeof(*chg));
    const cJSON *pinned = cJSON_GetObjectItemCaseSensitive(stored, "pinned");
    const cJSON *was = cJSON_GetObjectItemCaseSensitive(stored, "quarantine");
    cJSON_DeleteItemFromObjectCaseSensitive(fresh, "quarantine");
    if (cJSON_IsObject(pinned)) {
        cJSON *p = cJSON_Duplicate(pinned, 1);
        if (!p)
            goto enomem;
        set_member(fresh, "pinned", p);
        snprintf(chg->old_sha, sizeof(chg->old_sha), "%s",
                 str_of(pinned, "sha256") ? str_of(pinned, "sha256") : "");
    } else {
        cJSON_DeleteItemFromObjectCaseSensitive(fresh, "pinned");
    }
    cJSON *def = ing_pin_is_tool(fresh) ? ing_pin_definition(fresh) : NULL;
    if (!def) {
        /* Nothing published: nothing to serve, nothing to judge. */
        if (chg == &local)
            ing_pin_change_cleanup(chg);
        return fresh;
    }
    if (ing_pin_hash(def, chg->new_sha) < 0) {
        cJSON_Delete(def);
        goto enomem;
    }
    int approved = chg->old_sha[0] && strcmp(chg->old_sha, chg->new_sha) == 0;
    if (!pin || approved) {
        chg->restored = was != NULL;
        cJSON_Delete(def);
        return fresh;
    }
    chg->quarantined = 1;
    chg->reason = chg->old_sha[0] ? "changed" : "new";
    chg->changed = changed_members(
        chg->old_sha[0] ? cJSON_GetObjectItemCaseSensitive(pinned, "definition") : NULL, def);
    cJSON_Delete(def);
    const char *was_sha = str_of(was, "sha256");
    chg->newly = !was_sha || strcmp(was_sha, chg->new_sha) != 0;
    cJSON *q = cJSON_CreateObject();
    cJSON *changed = chg->changed ? cJSON_Duplicate(chg->changed, 1) : NULL;
    if (!q || !changed) {
        cJSON_Delete(q);
        cJSON_Delete(changed);
        goto enomem;
    }
    cJSON_AddStringToObject(q, "sha256", chg->new_sha);
    cJSON_AddStringToObject(q, "since",
                            !chg->newly && str_of(was, "since") ? str_of(was, "since") : now);
    cJSON_AddStringToObject(q, "reason", chg->reason);
    cJSON_AddItemToObject(q, "changed", changed);
    cJSON_AddItemToObject(fresh, "quarantine", q);
    if (chg == &local)
        ing_pin_change_cleanup(chg);
    return fresh;
enomem:
    ing_pin_change_cleanup(chg);
    cJSON_Delete(fresh);
    return NULL;
}

int ing_pin_approve(cJSON *tool, const char *by, const char *now, const char *expect_sha)
{
    char sha[ING_PIN_SHA_LEN + 1];
    cJSON *def = ing_pin_is_tool(tool) ? ing_pin_definition(tool) : NULL;
    if (!def)
        return MCPQ_EINVAL;
    if (ing_pin_hash(def, sha) < 0) {
        cJSON_Delete(def);
        return MCPQ_ENOMEM;
    }
    if (expect_sha && strcmp(expect_sha, sha) != 0) {
        cJSON_Delete(def);
        return 1;
    }
    cJSON *p = cJSON_CreateObject();
    if (!p) {
        cJSON_Delete(def);
        return MCPQ_ENOMEM;
    }
    cJSON_AddStringToObject(p, "sha256", sha);
    cJSON_AddStringToObject(p, "approvedAt", now);
    cJSON_AddStringToObject(p, "approvedBy", by);
    cJSON_AddItemToObject(p, "definition", def);
    set_member(tool, "pinned", p);
    cJSON_DeleteItemFromObjectCaseSensitive(tool, "quarantine");
    return 0;
}

cJSON *ing_pin_show(const cJSON *tool)
{
    const cJSON *pinned = cJSON_GetObjectItemCaseSensitive(tool, "pinned");
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(tool, "quarantine");
    if (!cJSON_IsObject(pinned) && !cJSON_IsObject(q))
        return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "state", q ? "quarantined" : "approved");
    static const char *const keep[] = {"sha256", "approvedAt", "approvedBy"};
    for (size_t i = 0; cJSON_IsObject(pinned) && i < sizeof(keep) / sizeof(keep[0]); i++)
        if (str_of(pinned, keep[i]))
            cJSON_AddStringToObject(o, keep[i], str_of(pinned, keep[i]));
    if (!cJSON_IsObject(q))
        return o;
    cJSON *pend = cJSON_AddObjectToObject(o, "pending");
    static const char *const qkeep[] = {"sha256", "since", "reason"};
    for (size_t i = 0; i < sizeof(qkeep) / sizeof(qkeep[0]); i++)
        if (str_of(q, qkeep[i]))
            cJSON_AddStringToObject(pend, qkeep[i], str_of(q, qkeep[i]));
    const cJSON *changed = cJSON_GetObjectItemCaseSensitive(q, "changed");
    cJSON_AddItemToObject(pend, "changed",
                          changed ? cJSON_Duplicate(changed, 1) : cJSON_CreateArray());
    cJSON *def = ing_pin_definition(tool);
    if (def)
        cJSON_AddItemToObject(pend, "definition", def);
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(pinned, "definition");
    cJSON *diff = cJSON_AddArrayToObject(pend, "diff");
    const cJSON *m;
    cJSON_ArrayForEach(m, changed)
    {
        if (!cJSON_IsString(m))
            continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "member", m->valuestring);
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(old, m->valuestring);
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(def, m->valuestring);
        if (a)
            cJSON_AddItemToObject(e, "approved", cJSON_Duplicate(a, 1));
        if (b)
            cJSON_AddItemToObject(e, "pending", cJSON_Duplicate(b, 1));
        cJSON_AddItemToArray(diff, e);
    }
    return o;
}

cJSON *ing_pin_transition(const cJSON *stored, const cJSON *written)
{
    if (!cJSON_IsObject(written))
        return NULL;
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(written, "quarantine");
    const cJSON *was = cJSON_GetObjectItemCaseSensitive(stored, "quarantine");
    const char *sha = str_of(q, "sha256"), *was_sha = str_of(was, "sha256");
    if (!q && !was)
        return NULL;
    if (q && was_sha && sha && strcmp(sha, was_sha) == 0)
        return NULL; /* quarantined with this definition already */
    cJSON *ev = cJSON_CreateObject();
    if (!ev)
        return NULL;
    cJSON_AddStringToObject(ev, "tool", str_of(written, "name") ? str_of(written, "name") : "");
    cJSON_AddBoolToObject(ev, "quarantined", q != NULL);
    if (!q)
        return ev;
    const char *old = str_of(cJSON_GetObjectItemCaseSensitive(written, "pinned"), "sha256");
    cJSON_AddStringToObject(ev, "reason", str_of(q, "reason") ? str_of(q, "reason") : "changed");
    if (old)
        cJSON_AddStringToObject(ev, "old_sha256", old);
    else
        cJSON_AddNullToObject(ev, "old_sha256");
    cJSON_AddStringToObject(ev, "new_sha256", sha ? sha : "");
    const cJSON *changed = cJSON_GetObjectItemCaseSensitive(q, "changed");
    cJSON_AddItemToObject(ev, "changed",
                          changed ? cJSON_Duplicate(changed, 1) : cJSON_CreateArray());
    return ev;
}
