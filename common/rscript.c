#include "rscript.h"

#include "names.h"
#include "task.h"
#include "whq.h"

#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

/* The generated table (CMakeLists.txt, from the files of common/lua), ended by a NULL name. */
struct rscript_embedded {
    const char *name;
    const unsigned char *text;
    size_t len;
};
extern const struct rscript_embedded rscript_embedded_files[];

/* What @NAME@ in a script stands for. */
#define V(x)                                                                                       \
    {                                                                                              \
#x, x                                                                                      \
    }
static const struct {
    const char *name, *value;
} vars[] = {
    V(NAMES_KEY_TAG),
    V(NAMES_KEY_REGISTRY),
    V(NAMES_KEY_REGISTRY_REV),
    V(NAMES_KEY_SESSION),
    V(NAMES_KEY_SESSIONS),
    V(NAMES_KEY_RSUBS),
    V(NAMES_KEY_RESSTATE),
    V(NAMES_KEY_RESULT),
    V(NAMES_KEY_REPLY),
    V(NAMES_KEY_CANCEL),
    V(NAMES_KEY_REQMAP),
    V(NAMES_KEY_FILE),
    V(NAMES_KEY_FILES),
    V(NAMES_SUFFIX_SIZES),
    V(NAMES_KEY_NONCE),
    V(NAMES_KEY_RATELIMIT),
    V(NAMES_KEY_AUTHFAIL),
    V(NAMES_KEY_IDEM),
    V(NAMES_KEY_TASK),
    V(NAMES_SUFFIX_WAITERS),
    V(NAMES_KEY_TASK_LEASES),
    V(NAMES_KEY_TASKS),
    V(NAMES_KEY_TASK_QUEUE),
    V(NAMES_KEY_WH_DELIVERY),
    V(NAMES_KEY_WH_INDEX),
    V(NAMES_KEY_WH_DUE),
    V(NAMES_KEY_WH_DISABLED),
    V(NAMES_KEY_CHAN),
    V(NAMES_SUFFIX_TURNS),
    V(NAMES_KEY_AGENTWAIT),
    V(NAMES_KEY_AGENTREPLY),
    V(NAMES_KEY_ASK),
    V(NAMES_KEY_ASKED),
    V(NAMES_CHAN_CANCEL),
    V(NAMES_CHAN_REGISTRY_CHANGED),
    V(NAMES_CHAN_SESSION_ENDED),
    V(NAMES_CHAN_AGENTREPLY),
    V(NAMES_CHAN_RESOURCE_UPDATED),
    V(NAMES_CHAN_ANSWER),
    V(TASK_ROBOT_ANY),
    V(TASK_FAULT_INTERNAL),
    {"WHQ_RETENTION_S", STR(WHQ_RETENTION_S)},
    {"WHQ_INDEX_MAX", STR(WHQ_INDEX_MAX)},
};
#undef V

struct rscript {
    const char *name; /* the file name without ".lua" */
    char *text;       /* NULL: it could not be built */
    char sha[41];
};

enum { MAX_SCRIPTS = 64, MAX_NAME = 64, ARGS_ON_STACK = 64 };
static rscript_t scripts[MAX_SCRIPTS];
static char script_names[MAX_SCRIPTS][MAX_NAME];
static int nscripts;
static pthread_once_t once = PTHREAD_ONCE_INIT;

typedef struct buf {
    char *p;
    size_t len, cap;
} buf_t;

static int buf_add(buf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

static const struct rscript_embedded *file_find(const char *name, size_t n)
{
    for (const struct rscript_embedded *e = rscript_embedded_files; e->name; e++)
        if (strlen(e->name) == n && memcmp(e->name, name, n) == 0)
            return e;
    return NULL;
}

/* Appends text[0..len) to b with every @NAME@ replaced; -1 for an unknown name. */
static int add_substituted(buf_t *b, const char *text, size_t len)
{
    size_t i = 0;
    while (i < len) {
        const char *at = memchr(text + i, '@', len - i);
        if (!at)
            return buf_add(b, text + i, len - i);
        size_t a = (size_t)(at - text);
        if (buf_add(b, text + i, a - i) < 0)
            return -1;
        const char *end = memchr(at + 1, '@', len - a - 1);
        if (!end)
            return -1;
        size_t n = (size_t)(end - at - 1);
        const char *value = NULL;
        for (size_t v = 0; v < sizeof(vars) / sizeof(vars[0]) && !value; v++)
            if (strlen(vars[v].name) == n && memcmp(vars[v].name, at + 1, n) == 0)
                value = vars[v].value;
        if (!value || buf_add(b, value, strlen(value)) < 0)
            return -1;
        i = (size_t)(end - text) + 1;
    }
    return 0;
}

/* The libraries its "-- uses:" line names, then the script itself. */
static char *compose(const struct rscript_embedded *e)
{
    const char *text = (const char *)e->text;
    buf_t b = {0};
    const char *uses = strstr(text, "\n-- uses:");
    if (uses) {
        const char *p = uses + strlen("\n-- uses:"), *eol = strchr(p, '\n');
        if (!eol)
            eol = p + strlen(p);
        while (p < eol) {
            while (p < eol && *p == ' ')
                p++;
            size_t n = strcspn(p, " \n");
            if (p + n > eol)
                n = (size_t)(eol - p);
            if (n == 0)
                break;
            const struct rscript_embedded *lib = file_find(p, n);
            if (!lib || add_substituted(&b, (const char *)lib->text, lib->len) < 0 ||
                buf_add(&b, "\n", 1) < 0)
                goto fail;
            p += n;
        }
    }
    if (add_substituted(&b, text, e->len) < 0 || !b.p)
        goto fail;
    return b.p;
fail:
    free(b.p);
    return NULL;
}

static void build_all(void)
{
    for (const struct rscript_embedded *e = rscript_embedded_files; e->name; e++) {
        size_t n = strlen(e->name);
        if (n < 5 || n - 4 >= MAX_NAME || nscripts >= MAX_SCRIPTS)
            continue;
        rscript_t *s = &scripts[nscripts];
        memcpy(script_names[nscripts], e->name, n - 4);
        script_names[nscripts][n - 4] = '\0';
        s->name = script_names[nscripts++];
        s->text = compose(e);
        if (!s->text)
            continue;
        unsigned char d[SHA_DIGEST_LENGTH];
        SHA1((const unsigned char *)s->text, strlen(s->text), d);
        for (int j = 0; j < SHA_DIGEST_LENGTH; j++)
            snprintf(s->sha + 2 * j, 3, "%02x", d[j]);
    }
}

const rscript_t *rscript_get(const char *name)
{
    pthread_once(&once, build_all);
    for (int i = 0; name && i < nscripts; i++)
        if (strcmp(scripts[i].name, name) == 0)
            return scripts[i].text ? &scripts[i] : NULL;
    return NULL;
}

const char *rscript_text(const rscript_t *s)
{
    return s ? s->text : NULL;
}

const char *rscript_sha(const rscript_t *s)
{
    return s ? s->sha : NULL;
}

const char *rscript_file_name(int i)
{
    for (int k = 0; rscript_embedded_files[k].name; k++)
        if (k == i)
            return rscript_embedded_files[k].name;
    return NULL;
}

int rscript_noscript(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ERROR && r->str && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

/* EVALSHA's argument vector for one run of a script. */
typedef struct evalsha {
    const char *stack_args[ARGS_ON_STACK];
    size_t stack_lens[ARGS_ON_STACK];
    const char **args; /* stack_args, or heap when large */
    size_t *lens;
    char nk[16];
    void *heap;
    int n; /* entries in args */
} evalsha_t;

/* Fills *e for script s with nkeys keys among argv[0..argc). 0, or -1 with errstr set (s or
 * the counts unusable, or out of memory; errstr may be NULL). Free with evalsha_free. */
static int evalsha_init(evalsha_t *e, const rscript_t *s, int nkeys, int argc,
                        const char *const *argv, const size_t *argvlen, char *errstr,
                        size_t errstr_size)
{
    e->heap = NULL;
    if (!s || !s->text || argc < 0 || nkeys < 0 || nkeys > argc) {
        if (errstr)
            snprintf(errstr, errstr_size, "redis script unavailable");
        return -1;
    }
    e->n = argc + 3;
    e->args = e->stack_args;
    e->lens = e->stack_lens;
    if (e->n > ARGS_ON_STACK) {
        e->heap = malloc((size_t)e->n * (sizeof(char *) + sizeof(size_t)));
        if (!e->heap) {
            if (errstr)
                snprintf(errstr, errstr_size, "out of memory");
            return -1;
        }
        e->args = e->heap;
        e->lens = (size_t *)((char *)e->heap + (size_t)e->n * sizeof(char *));
    }
    snprintf(e->nk, sizeof(e->nk), "%d", nkeys);
    e->args[0] = "EVALSHA";
    e->args[1] = s->sha;
    e->args[2] = e->nk;
    for (int i = 0; i < 3; i++)
        e->lens[i] = strlen(e->args[i]);
    for (int i = 0; i < argc; i++) {
        e->args[3 + i] = argv[i];
        e->lens[3 + i] = argvlen ? argvlen[i] : strlen(argv[i]);
    }
    return 0;
}

static void evalsha_free(evalsha_t *e)
{
    free(e->heap);
    e->heap = NULL;
}

redisReply *rscript_run(redisContext *c, const rscript_t *s, int nkeys, int argc,
                        const char *const *argv, const size_t *argvlen, char *errstr,
                        size_t errstr_size)
{
    evalsha_t e;
    if (!c) {
        snprintf(errstr, errstr_size, "redis script unavailable");
        return NULL;
    }
    if (evalsha_init(&e, s, nkeys, argc, argv, argvlen, errstr, errstr_size) < 0)
        return NULL;
    redisReply *r = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        r = redisCommandArgv(c, e.n, e.args, e.lens);
        if (!r) {
            snprintf(errstr, errstr_size, "redis: %s", c->errstr[0] ? c->errstr : "no reply");
            break;
        }
        if (r->type != REDIS_REPLY_ERROR)
            break;
        int noscript = rscript_noscript(r);
        snprintf(errstr, errstr_size, "redis: %s", r->str ? r->str : "error");
        /* A demoted master: c is marked broken so its holder reconnects (docs/redis.md). */
        kv_ctx_failover(NULL, c, r);
        freeReplyObject(r);
        r = NULL;
        if (!noscript || attempt > 0)
            break;
        redisReply *l = redisCommand(c, "SCRIPT LOAD %s", s->text);
        int loaded = l && l->type == REDIS_REPLY_STRING;
        if (!loaded)
            snprintf(errstr, errstr_size, "redis: SCRIPT LOAD: %s",
                     l && l->str    ? l->str
                     : c->errstr[0] ? c->errstr
                                    : "no reply");
        if (l)
            kv_ctx_failover(NULL, c, l);
        freeReplyObject(l);
        if (!loaded)
            break;
    }
    evalsha_free(&e);
    return r;
}

redisReply *rscript_pool_run(kv_pool_t *pool, const rscript_t *s, int nkeys, int argc,
                             const char *const *argv, const size_t *argvlen, char *errstr,
                             size_t errstr_size)
{
    evalsha_t e;
    if (!pool) {
        snprintf(errstr, errstr_size, "redis script unavailable");
        return NULL;
    }
    if (evalsha_init(&e, s, nkeys, argc, argv, argvlen, errstr, errstr_size) < 0)
        return NULL;
    redisReply *r = kv_pool_commandargv(pool, errstr, errstr_size, e.n, e.args, e.lens);
    if (!r && strstr(errstr, "NOSCRIPT")) {
        const char *load[] = {"SCRIPT", "LOAD", s->text};
        redisReply *l = kv_pool_commandargv(pool, errstr, errstr_size, 3, load, NULL);
        if (l)
            r = kv_pool_commandargv(pool, errstr, errstr_size, e.n, e.args, e.lens);
        freeReplyObject(l);
    }
    evalsha_free(&e);
    return r;
}

int rscript_append(redisContext *c, const rscript_t *s, int nkeys, int argc,
                   const char *const *argv)
{
    evalsha_t e;
    if (!c || evalsha_init(&e, s, nkeys, argc, argv, NULL, NULL, 0) < 0)
        return REDIS_ERR;
    int rc = redisAppendCommandArgv(c, e.n, e.args, e.lens);
    evalsha_free(&e);
    return rc;
}
