/* jv.c - generic helpers on cJSON values; see jv.h. */
#include "jv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int jv_is_integral(const cJSON *v)
{
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) && floor(v->valuedouble) == v->valuedouble;
}

void jv_number_format(double d, char *buf, size_t size)
{
    if (isfinite(d) && floor(d) == d && fabs(d) < 1e15)
        snprintf(buf, size, "%.0f", d);
    else
        snprintf(buf, size, "%.15g", d);
}

cJSON *jv_add_int(cJSON *obj, const char *name, int64_t v)
{
    char buf[24], *p = buf + sizeof(buf);
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    *--p = '\0';
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    return cJSON_AddRawToObject(obj, name, p);
}

cJSON *jv_add_number_ref(cJSON *obj, const char *name, const cJSON *n)
{
    double d = n->valuedouble;
    if (jv_is_integral(n) && fabs(d) <= 9007199254740992.0 && !(d == 0 && signbit(d)))
        return jv_add_int(obj, name, (int64_t)d);
    return cJSON_AddItemReferenceToObject(obj, name, (cJSON *)n) ? obj->child->prev : NULL;
}

int jv_equal(const cJSON *a, const cJSON *b, int max_depth)
{
    if (max_depth < 0)
        return -1;
    if (cJSON_IsNumber(a) && cJSON_IsNumber(b))
        return a->valuedouble == b->valuedouble;
    if ((a->type & 0xff) != (b->type & 0xff))
        return 0;
    if (cJSON_IsString(a))
        return strcmp(a->valuestring, b->valuestring) == 0;
    if (cJSON_IsArray(a) || cJSON_IsObject(a)) {
        if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b))
            return 0;
        const cJSON *y = b->child;
        for (const cJSON *x = a->child; x; x = x->next) {
            const cJSON *other =
                cJSON_IsArray(a) ? y : cJSON_GetObjectItemCaseSensitive(b, x->string);
            if (!other)
                return 0;
            int eq = jv_equal(x, other, max_depth - 1);
            if (eq != 1)
                return eq;
            y = y ? y->next : NULL;
        }
    }
    return 1;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ULL;
    return h;
}

uint64_t jv_hash(const cJSON *v, int max_depth)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)(v->type & 0xff);
    if (max_depth < 0)
        return h;
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble == 0 ? 0.0 : v->valuedouble;
        h = hash_bytes(0xcbf29ce484222325ULL, &d, sizeof(d));
    } else if (cJSON_IsString(v)) {
        h = hash_bytes(h, v->valuestring, strlen(v->valuestring));
    } else if (cJSON_IsArray(v)) {
        for (const cJSON *x = v->child; x; x = x->next)
            h = (h ^ jv_hash(x, max_depth - 1)) * 0x100000001b3ULL;
    } else if (cJSON_IsObject(v)) {
        uint64_t sum = 0;
        for (const cJSON *x = v->child; x; x = x->next)
            sum += hash_bytes(jv_hash(x, max_depth - 1), x->string, strlen(x->string));
        h ^= sum;
    }
    return h;
}

void jv_append_clipped(char *buf, size_t size, const cJSON *v)
{
    char *s = cJSON_PrintUnformatted(v);
    size_t len = strlen(buf);
    if (s && strlen(s) > 120)
        memcpy(s + 117, "...", 4);
    snprintf(buf + len, size - len, "%s", s ? s : "?");
    cJSON_free(s);
}
