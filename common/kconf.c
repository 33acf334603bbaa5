#include "kconf.h"

#include "log.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct kprop {
    char *name, *value, *origin;
} kprop_t;

struct kconf {
    kprop_t *props;
    size_t n, cap;
    kconf_prop_t *view; /* kconf_get's answers, the same strings */
};

/* Properties mcpq sets itself or relies on (docs/kafka.md "Properties: file, environment,
 * precedence"). */
static const struct {
    const char *name;
    const char *instead;
} reserved[] = {
    {"bootstrap.servers", "set MCPQ_KAFKA_BROKERS instead"},
    {"metadata.broker.list", "set MCPQ_KAFKA_BROKERS instead"},
    {"group.id", "set MCPQ_GROUP_ID instead"},
    {"group.instance.id", "set MCPQ_WORKER_ID instead (static membership)"},
    {"message.timeout.ms", "set MCPQ_KAFKA_MESSAGE_TIMEOUT_MS instead"},
    {"delivery.timeout.ms", "set MCPQ_KAFKA_MESSAGE_TIMEOUT_MS instead"},
    {"fetch.wait.max.ms", "set MCPQ_KAFKA_FETCH_WAIT_MS instead"},
    {"enable.auto.offset.store",
     "mcpq stores each offset itself once the job's result is durable (at-least-once)"},
    {"enable.auto.commit", "mcpq relies on auto commit of the offsets it stores"},
    {"auto.commit.enable", "mcpq relies on auto commit of the offsets it stores"},
    {"enable.idempotence", "the ingress always produces idempotently (acks=all, no duplicates)"},
};

/* When name is reserved by mcpq: what to use instead (a sentence); else NULL. */
static const char *kconf_reserved(const char *name)
{
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (strcmp(reserved[i].name, name) == 0)
            return reserved[i].instead;
    return NULL;
}

int kconf_secret(const char *name)
{
    /* sasl.password, ssl.key.password, ssl.keystore.password, sasl.oauthbearer.client.secret,
     * ssl.key.pem (a private key), sasl.jaas.config and sasl.oauthbearer.config (may carry
     * credentials). */
    static const char *const exact[] = {"ssl.key.pem", "sasl.jaas.config",
                                        "sasl.oauthbearer.config"};
    for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
        if (strcmp(name, exact[i]) == 0)
            return 1;
    return strstr(name, "password") != NULL || strstr(name, "secret") != NULL;
}

/* ---- scopes, from the table librdkafka prints (its CONFIGURATION.md) ---- */

typedef struct scope_ent {
    char name[64];
    unsigned scope;
} scope_ent_t;

/* Built once from the linked library and read-only afterwards. */
static scope_ent_t *scope_tab;
static size_t scope_n;
static pthread_once_t scope_once = PTHREAD_ONCE_INIT;

static void scope_add(const char *name, size_t nlen, unsigned scope)
{
    if (nlen == 0 || nlen >= sizeof(scope_tab[0].name))
        return;
    for (size_t i = 0; i < scope_n; i++)
        if (strlen(scope_tab[i].name) == nlen && memcmp(scope_tab[i].name, name, nlen) == 0) {
            scope_tab[i].scope |= scope; /* a global and a topic property of one name */
            return;
        }
    scope_ent_t *t = realloc(scope_tab, (scope_n + 1) * sizeof(*t));
    if (!t)
        return;
    scope_tab = t;
    memcpy(t[scope_n].name, name, nlen);
    t[scope_n].name[nlen] = '\0';
    t[scope_n].scope = scope;
    scope_n++;
}

/* Rows look like "linger.ms    |  P  | 0 .. 900000 | ...". */
static void scope_build(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    rd_kafka_conf_properties_show(f);
    fclose(f);
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *bar = strchr(line, '|');
        if (!bar || line[0] == '-' || line[0] == '#')
            continue;
        size_t nlen = (size_t)(bar - line);
        while (nlen > 0 && line[nlen - 1] == ' ')
            nlen--;
        const char *c = bar + 1;
        while (*c == ' ')
            c++;
        unsigned scope = *c == 'P'   ? KCONF_PRODUCER
                         : *c == 'C' ? KCONF_CONSUMER
                         : *c == '*' ? KCONF_PRODUCER | KCONF_CONSUMER
                                     : 0;
        if (scope && strncmp(line, "Property", 8) != 0)
            scope_add(line, nlen, scope);
    }
    free(text);
}

unsigned kconf_scope(const char *name)
{
    pthread_once(&scope_once, scope_build);
    for (size_t i = 0; i < scope_n; i++)
        if (strcmp(scope_tab[i].name, name) == 0)
            return scope_tab[i].scope;
    return 0;
}

/* ---- loading ---- */

static int prop_add(kconf_t *k, const char *name, size_t nlen, const char *value, size_t vlen,
                    const char *origin, char *errstr, size_t errstr_size)
{
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 16;
        kprop_t *p = realloc(k->props, cap * sizeof(*p));
        if (!p)
            goto oom;
        k->props = p;
        k->cap = cap;
    }
    kprop_t *p = &k->props[k->n];
    p->name = strndup(name, nlen);
    p->value = strndup(value, vlen);
    p->origin = strdup(origin);
    if (!p->name || !p->value || !p->origin) {
        free(p->name);
        free(p->value);
        free(p->origin);
        goto oom;
    }
    k->n++;
    return 0;
oom:
    snprintf(errstr, errstr_size, "out of memory");
    return -1;
}

/* Checks p against librdkafka and mcpq's reserved names. */
static int prop_check(rd_kafka_conf_t *scratch, const kprop_t *p, char *errstr, size_t errstr_size)
{
    const char *instead = kconf_reserved(p->name);
    if (instead) {
        snprintf(errstr, errstr_size, "%s: Kafka property \"%s\" is set by mcpq: %s", p->origin,
                 p->name, instead);
        return -1;
    }
    char why[512];
    rd_kafka_conf_res_t res = rd_kafka_conf_set(scratch, p->name, p->value, why, sizeof(why));
    if (res != RD_KAFKA_CONF_OK) {
        snprintf(errstr, errstr_size, "%s: Kafka property \"%s\": %s", p->origin, p->name, why);
        return -1;
    }
    return 0;
}

static char *trim(char *s, char *end)
{
    while (s < end && isspace((unsigned char)*s))
        s++;
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    *end = '\0';
    return s;
}

static int load_file(kconf_t *k, const char *path, char *errstr, size_t errstr_size)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(errstr, errstr_size, "MCPQ_KAFKA_PROPERTIES: cannot read %s: %s", path,
                 strerror(errno));
        return -1;
    }
    int rc = -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    for (int lineno = 1; (len = getline(&line, &cap, f)) >= 0; lineno++) {
        char origin[512];
        snprintf(origin, sizeof(origin), "%s:%d", path, lineno);
        char *s = trim(line, line + len);
        if (*s == '\0' || *s == '#' || *s == '!')
            continue;
        size_t slen = strlen(s), bs = 0;
        while (bs < slen && s[slen - 1 - bs] == '\\')
            bs++;
        if (bs % 2 == 1) {
            snprintf(errstr, errstr_size, "%s: a line ending in \\ (continuation) is not supported",
                     origin);
            goto out;
        }
        /* the key ends at the first '=', ':' or whitespace (Java Properties) */
        size_t klen = strcspn(s, "=: \t\f");
        char *v = s + klen;
        while (*v == ' ' || *v == '\t' || *v == '\f')
            v++;
        if (*v == '=' || *v == ':')
            v++;
        while (*v == ' ' || *v == '\t' || *v == '\f')
            v++;
        if (klen == 0) {
            snprintf(errstr, errstr_size, "%s: a line without a property name", origin);
            goto out;
        }
        if (prop_add(k, s, klen, v, strlen(v), origin, errstr, errstr_size) < 0)
            goto out;
    }
    if (ferror(f)) {
        snprintf(errstr, errstr_size, "MCPQ_KAFKA_PROPERTIES: cannot read %s: %s", path,
                 strerror(errno));
        goto out;
    }
    rc = 0;
out:
    free(line);
    fclose(f);
    return rc;
}

/* The value of a _FILE variable: at most KCONF_VALUE_MAX bytes, its trailing CR/LF dropped. */
static int read_value_file(kconf_t *k, const char *name, const char *path, const char *origin,
                           char *errstr, size_t errstr_size)
{
    char *buf = malloc(KCONF_VALUE_MAX + 1);
    if (!buf) {
        snprintf(errstr, errstr_size, "%s: out of memory", origin);
        return -1;
    }
    size_t n;
    int rc = util_read_secret(path, origin, buf, KCONF_VALUE_MAX + 1, &n, errstr, errstr_size) < 0
                 ? -1
                 : prop_add(k, name, strlen(name), buf, n, origin, errstr, errstr_size);
    memset(buf, 0, KCONF_VALUE_MAX + 1); /* may have held a password */
    free(buf);
    return rc;
}

/* One MCPQ_KAFKA_PROP_* variable (kv is "NAME=value"). */
static int load_env(kconf_t *k, const char *kv, char *errstr, size_t errstr_size)
{
    const char *eq = strchr(kv, '=');
    if (!eq)
        return 0;
    char var[256], name[256];
    size_t vlen = (size_t)(eq - kv);
    if (vlen >= sizeof(var)) {
        snprintf(errstr, errstr_size, "%.64s...: variable name too long", kv);
        return -1;
    }
    memcpy(var, kv, vlen);
    var[vlen] = '\0';
    const char *p = var + strlen(KCONF_ENV_PREFIX);
    size_t plen = strlen(p);
    int from_file = plen > 5 && strcmp(p + plen - 5, "_FILE") == 0;
    if (from_file)
        plen -= 5;
    if (plen == 0) {
        snprintf(errstr, errstr_size, "%s: no property name after %s", var, KCONF_ENV_PREFIX);
        return -1;
    }
    for (size_t i = 0; i < plen; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!isupper(c) && !isdigit(c) && c != '_') {
            snprintf(errstr, errstr_size,
                     "%s: write the property name in upper case with _ for . (e.g. "
                     "MCPQ_KAFKA_PROP_SECURITY_PROTOCOL)",
                     var);
            return -1;
        }
        name[i] = c == '_' ? '.' : (char)tolower(c);
    }
    name[plen] = '\0';
    if (from_file)
        return read_value_file(k, name, eq + 1, var, errstr, errstr_size);
    return prop_add(k, name, plen, eq + 1, strlen(eq + 1), var, errstr, errstr_size);
}

static int env_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

kconf_t *kconf_load(const char *path, const char *const envp[], char *errstr, size_t errstr_size)
{
    kconf_t *k = calloc(1, sizeof(*k));
    rd_kafka_conf_t *scratch = rd_kafka_conf_new();
    const char **vars = NULL;
    if (!k || !scratch) {
        snprintf(errstr, errstr_size, "out of memory");
        goto fail;
    }
    if (path && *path && load_file(k, path, errstr, errstr_size) < 0)
        goto fail;
    /* The variables in name order, so that a property set twice (X and X_FILE) has one
     * documented winner: X_FILE, which sorts after X. */
    size_t nv = 0, plen = strlen(KCONF_ENV_PREFIX);
    for (size_t i = 0; envp && envp[i]; i++)
        nv += strncmp(envp[i], KCONF_ENV_PREFIX, plen) == 0;
    vars = calloc(nv + 1, sizeof(*vars));
    if (!vars) {
        snprintf(errstr, errstr_size, "out of memory");
        goto fail;
    }
    nv = 0;
    for (size_t i = 0; envp && envp[i]; i++)
        if (strncmp(envp[i], KCONF_ENV_PREFIX, plen) == 0)
            vars[nv++] = envp[i];
    qsort(vars, nv, sizeof(*vars), env_cmp);
    for (size_t i = 0; i < nv; i++)
        if (load_env(k, vars[i], errstr, errstr_size) < 0)
            goto fail;
    for (size_t i = 0; i < k->n; i++)
        if (prop_check(scratch, &k->props[i], errstr, errstr_size) < 0)
            goto fail;
    k->view = calloc(k->n + 1, sizeof(*k->view));
    if (!k->view) {
        snprintf(errstr, errstr_size, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < k->n; i++)
        k->view[i] = (kconf_prop_t){k->props[i].name, k->props[i].value, k->props[i].origin};
    free(vars);
    rd_kafka_conf_destroy(scratch);
    return k;
fail:
    free(vars);
    if (scratch)
        rd_kafka_conf_destroy(scratch);
    kconf_free(k);
    return NULL;
}

void kconf_free(kconf_t *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->n; i++) {
        memset(k->props[i].value, 0, strlen(k->props[i].value));
        free(k->props[i].name);
        free(k->props[i].value);
        free(k->props[i].origin);
    }
    free(k->props);
    free(k->view);
    free(k);
}

/* The user's properties (0 for NULL). */
static size_t kconf_count(const kconf_t *k)
{
    return k ? k->n : 0;
}

const kconf_prop_t *kconf_get(const kconf_t *k, size_t i)
{
    return k && i < k->n ? &k->view[i] : NULL;
}

const char *kconf_value(const kconf_t *k, const char *name)
{
    for (size_t i = kconf_count(k); i-- > 0;)
        if (strcmp(k->props[i].name, name) == 0)
            return k->props[i].value;
    return NULL;
}

/* 1 when the user's property i applies to a client of role. */
static int applies(const kconf_t *k, size_t i, kconf_role_t role)
{
    return (kconf_scope(k->props[i].name) & (unsigned)role) != 0;
}

static const char *role_name(kconf_role_t role)
{
    return role == KCONF_PRODUCER ? "producer" : "consumer";
}

rd_kafka_conf_t *kconf_build(const kconf_t *k, kconf_role_t role, const kconf_prop_t *base,
                             size_t nbase, const kconf_prop_t *fixed, size_t nfixed, char *errstr,
                             size_t errstr_size)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char why[512];
    const kconf_prop_t *bad = NULL;
    for (size_t i = 0; i < nbase && !bad; i++)
        if (rd_kafka_conf_set(conf, base[i].name, base[i].value, why, sizeof(why)) !=
            RD_KAFKA_CONF_OK)
            bad = &base[i];
    for (size_t i = 0; i < kconf_count(k) && !bad; i++) {
        if (!applies(k, i, role)) {
            log_event(LOG_INFO, "Kafka property skipped: it does not apply to this client",
                      "property", k->props[i].name, "from", k->props[i].origin, "client",
                      role_name(role), (char *)NULL);
            continue;
        }
        if (rd_kafka_conf_set(conf, k->props[i].name, k->props[i].value, why, sizeof(why)) !=
            RD_KAFKA_CONF_OK)
            bad = &k->view[i];
    }
    for (size_t i = 0; i < nfixed && !bad; i++)
        if (rd_kafka_conf_set(conf, fixed[i].name, fixed[i].value, why, sizeof(why)) !=
            RD_KAFKA_CONF_OK)
            bad = &fixed[i];
    if (bad) {
        snprintf(errstr, errstr_size, "%s: Kafka property \"%s\": %s", bad->origin, bad->name, why);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return conf;
}

static void print_prop(FILE *out, const char *name, const char *value, const char *origin)
{
    fprintf(out, "%s=%s  # %s\n", name, kconf_secret(name) ? KCONF_REDACTED : value, origin);
}

/* 1 when a later source than list entry i sets the same name. */
static int shadowed(const char *name, const kconf_t *k, kconf_role_t role, size_t from_user)
{
    for (size_t j = from_user; j < kconf_count(k); j++)
        if (applies(k, j, role) && strcmp(k->props[j].name, name) == 0)
            return 1;
    return 0;
}

void kconf_print(FILE *out, const kconf_t *k, kconf_role_t role, const kconf_prop_t *base,
                 size_t nbase, const kconf_prop_t *fixed, size_t nfixed)
{
    fprintf(out,
            "# Kafka %s properties (librdkafka %s): built-in < MCPQ_KAFKA_PROPERTIES < "
            "MCPQ_KAFKA_PROP_*\n",
            role_name(role), rd_kafka_version_str());
    for (size_t i = 0; i < nbase; i++)
        if (!shadowed(base[i].name, k, role, 0))
            print_prop(out, base[i].name, base[i].value, base[i].origin);
    for (size_t i = 0; i < kconf_count(k); i++) {
        if (!applies(k, i, role))
            fprintf(out, "# skipped (%s only): %s  # %s\n",
                    role == KCONF_PRODUCER ? "consumer" : "producer", k->props[i].name,
                    k->props[i].origin);
        else if (!shadowed(k->props[i].name, k, role, i + 1))
            print_prop(out, k->props[i].name, k->props[i].value, k->props[i].origin);
    }
    for (size_t i = 0; i < nfixed; i++)
        print_prop(out, fixed[i].name, fixed[i].value, fixed[i].origin);
}
