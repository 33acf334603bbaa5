/* fakeredis.c - an in-process stand-in for Redis for fuzz_http.c; see fakeredis.h. */
#include "fakeredis.h"
#include "names.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_KEYS 4096
#define MAX_ARGS 64
#define MAX_ARG (1 << 20)
#define STREAM_KEEP 4096 /* entries kept per stream */

typedef struct {
    char *key, *val;
    size_t len;
} kv_t;

typedef struct entry {
    unsigned long long seq;
    size_t n;
    char **fv;
    struct entry *next;
} entry_t;

typedef struct stream {
    char *key;
    entry_t *head, *tail;
    size_t count;
    struct stream *next;
} stream_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t grew = PTHREAD_COND_INITIALIZER;
static kv_t keys[MAX_KEYS];
static size_t nkeys;
static stream_t *streams;
static unsigned long long seq;

/* ---- store (lock held) ---- */

static kv_t *find(const char *k)
{
    for (size_t i = 0; i < nkeys; i++)
        if (strcmp(keys[i].key, k) == 0)
            return &keys[i];
    return NULL;
}

static int del(const char *k)
{
    kv_t *e = find(k);
    if (!e)
        return 0;
    free(e->key);
    free(e->val);
    *e = keys[--nkeys];
    return 1;
}

static void put(const char *k, const char *v, size_t len)
{
    kv_t *e = find(k);
    if (!e) {
        if (nkeys == MAX_KEYS)
            return; /* full: dropped, like an evicting Redis */
        e = &keys[nkeys++];
        e->key = strdup(k);
        e->val = NULL;
    }
    free(e->val);
    e->val = malloc(len + 1);
    memcpy(e->val, v, len);
    e->val[len] = '\0';
    e->len = len;
}

static stream_t *stream_of(const char *k)
{
    for (stream_t *s = streams; s; s = s->next)
        if (strcmp(s->key, k) == 0)
            return s;
    stream_t *s = calloc(1, sizeof(*s));
    s->key = strdup(k);
    s->next = streams;
    streams = s;
    return s;
}

static void xadd_locked(const char *key, const char *const *fv, size_t n)
{
    stream_t *s = stream_of(key);
    entry_t *e = calloc(1, sizeof(*e));
    e->seq = ++seq;
    e->n = n;
    e->fv = calloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        e->fv[i] = strdup(fv[i]);
    if (s->tail)
        s->tail->next = e;
    else
        s->head = e;
    s->tail = e;
    if (++s->count > STREAM_KEEP) {
        entry_t *old = s->head;
        s->head = old->next;
        s->count--;
        for (size_t i = 0; i < old->n; i++)
            free(old->fv[i]);
        free(old->fv);
        free(old);
    }
    pthread_cond_broadcast(&grew);
}

void fr_xadd(const char *key, const char *const *fv, size_t n)
{
    pthread_mutex_lock(&lock);
    xadd_locked(key, fv, n);
    pthread_mutex_unlock(&lock);
}

void fr_reset(void)
{
    pthread_mutex_lock(&lock);
    while (nkeys)
        del(keys[0].key);
    pthread_mutex_unlock(&lock);
}

/* ---- RESP ---- */

typedef struct {
    int fd;
    char buf[65536];
    size_t off, len;
    char out[65536];
    size_t olen;
} conn_t;

static int fill(conn_t *c)
{
    if (c->off == c->len)
        c->off = c->len = 0;
    if (c->len == sizeof(c->buf)) {
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
    }
    ssize_t n = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
    if (n <= 0)
        return -1;
    c->len += (size_t)n;
    return 0;
}

static int getbyte(conn_t *c)
{
    if (c->off == c->len && fill(c) < 0)
        return -1;
    return (unsigned char)c->buf[c->off++];
}

/* A "<prefix><number>\r\n" line; the number or -2 on error. */
static long long number_line(conn_t *c, char prefix)
{
    int b = getbyte(c);
    if (b != prefix)
        return -2;
    long long v = 0;
    int neg = 0;
    for (;;) {
        b = getbyte(c);
        if (b == '-')
            neg = 1;
        else if (b >= '0' && b <= '9')
            v = v * 10 + (b - '0');
        else if (b == '\r')
            break;
        else
            return -2;
        if (v > MAX_ARG)
            return -2;
    }
    return getbyte(c) == '\n' ? (neg ? -v : v) : -2;
}

/* Reads one command: argc arguments, each malloc'd and NUL-terminated. -1 on EOF/error. */
static int read_command(conn_t *c, char **argv, size_t *lens, int *argc)
{
    long long n = number_line(c, '*');
    if (n < 1 || n > MAX_ARGS)
        return -1;
    for (int i = 0; i < n; i++) {
        long long len = number_line(c, '$');
        if (len < 0)
            return -1;
        argv[i] = malloc((size_t)len + 1);
        for (long long k = 0; k < len; k++) {
            int b = getbyte(c);
            if (b < 0)
                return -1;
            argv[i][k] = (char)b;
        }
        argv[i][len] = '\0';
        lens[i] = (size_t)len;
        *argc = i + 1;
        if (getbyte(c) != '\r' || getbyte(c) != '\n')
            return -1;
    }
    return 0;
}

static void flush_out(conn_t *c)
{
    size_t off = 0;
    while (off < c->olen) {
        ssize_t n = write(c->fd, c->out + off, c->olen - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    c->olen = 0;
}

static void emit(conn_t *c, const void *p, size_t n)
{
    const char *s = p;
    while (n) {
        if (c->olen == sizeof(c->out))
            flush_out(c);
        size_t k = sizeof(c->out) - c->olen < n ? sizeof(c->out) - c->olen : n;
        memcpy(c->out + c->olen, s, k);
        c->olen += k;
        s += k;
        n -= k;
    }
}

static void emitf(conn_t *c, const char *fmt, long long v)
{
    char line[64];
    int n = snprintf(line, sizeof(line), fmt, v);
    emit(c, line, (size_t)n);
}

static void bulk(conn_t *c, const char *s, size_t n)
{
    emitf(c, "$%lld\r\n", (long long)n);
    emit(c, s, n);
    emit(c, "\r\n", 2);
}

static void bulks(conn_t *c, const char *s)
{
    bulk(c, s, strlen(s));
}

#define OK(c) emit(c, "+OK\r\n", 5)
#define NIL(c) emit(c, "$-1\r\n", 5)
#define INT(c, v) emitf(c, ":%lld\r\n", (long long)(v))
#define ERR(c, s) emit(c, "-" s "\r\n", strlen(s) + 3)

static int is(const char *a, const char *b)
{
    return strcasecmp(a, b) == 0;
}

/* ---- commands ---- */

static void cmd_set(conn_t *c, char **argv, const size_t *lens, int argc)
{
    int nx = 0, xx = 0;
    for (int i = 3; i < argc; i++) {
        nx |= is(argv[i], "NX");
        xx |= is(argv[i], "XX");
    }
    pthread_mutex_lock(&lock);
    int exists = find(argv[1]) != NULL;
    int ok = !(nx && exists) && !(xx && !exists);
    if (ok)
        put(argv[1], argv[2], lens[2]);
    pthread_mutex_unlock(&lock);
    if (ok)
        OK(c);
    else
        NIL(c);
}

static void cmd_get(conn_t *c, const char *key)
{
    pthread_mutex_lock(&lock);
    kv_t *e = find(key);
    if (e)
        bulk(c, e->val, e->len);
    else
        NIL(c);
    pthread_mutex_unlock(&lock);
}

/* XREAD [COUNT n] [BLOCK ms] STREAMS key id */
static void cmd_xread(conn_t *c, char **argv, int argc)
{
    long long count = 512, block = -1;
    int i = 1;
    for (; i < argc && !is(argv[i], "STREAMS"); i++) {
        if (is(argv[i], "COUNT") && i + 1 < argc)
            count = atoll(argv[++i]);
        else if (is(argv[i], "BLOCK") && i + 1 < argc)
            block = atoll(argv[++i]);
    }
    if (i + 2 >= argc) {
        ERR(c, "ERR syntax error");
        return;
    }
    const char *key = argv[i + 1];
    unsigned long long after =
        strcmp(argv[i + 2], "$") == 0 ? seq : strtoull(argv[i + 2], NULL, 10);
    pthread_mutex_lock(&lock);
    stream_t *s = stream_of(key);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long long wait_ms = block < 0 ? 0 : block > 100 ? 100 : block;
    until.tv_nsec += (wait_ms % 1000) * 1000000L;
    until.tv_sec += wait_ms / 1000 + until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    for (;;) {
        size_t n = 0;
        for (entry_t *e = s->head; e && (long long)n < count; e = e->next)
            n += e->seq > after;
        if (n) {
            emit(c, "*1\r\n*2\r\n", 8);
            bulks(c, key);
            emitf(c, "*%lld\r\n", (long long)n);
            size_t k = 0;
            for (entry_t *e = s->head; e && k < n; e = e->next) {
                if (e->seq <= after)
                    continue;
                char id[40];
                snprintf(id, sizeof(id), "%llu-0", e->seq);
                emit(c, "*2\r\n", 4);
                bulks(c, id);
                emitf(c, "*%lld\r\n", (long long)e->n);
                for (size_t f = 0; f < e->n; f++)
                    bulks(c, e->fv[f]);
                k++;
            }
            break;
        }
        if (block < 0 || pthread_cond_timedwait(&grew, &lock, &until) != 0) {
            emit(c, "*-1\r\n", 5);
            break;
        }
    }
    pthread_mutex_unlock(&lock);
}

/* The lengths of the task keys' prefix {mcpq}:task: (names.h), of the fixture's keys'
 * {mcpq}:task:tk- and of the waiter sets' suffix. */
#define TASK_PREFIX_LEN (sizeof(NAMES_KEY_TASK) - 1)
#define FIXTURE_PREFIX_LEN (TASK_PREFIX_LEN + 3) /* + "tk-" */
#define WAITERS_SUFFIX ":waiters"
#define WAITERS_SUFFIX_LEN (sizeof(WAITERS_SUFFIX) - 1)

/* The running-task fixture: HGETALL {mcpq}:task:tk-... */
static void cmd_hgetall(conn_t *c, const char *key)
{
    const char *id = strncmp(key, NAMES_KEY_TASK "tk-", FIXTURE_PREFIX_LEN) == 0 &&
                             !strchr(key + TASK_PREFIX_LEN, ':')
                         ? key + TASK_PREFIX_LEN
                         : NULL;
    if (!id) {
        emit(c, "*0\r\n", 4);
        return;
    }
    const char *fv[] = {
        "id",        id,      "tenant",  "t",          "server",        "default", "tool",
        "task_tool", "state", "running", "created_ms", "1700000000000", "surface", "mcp",
        "attempts",  "1",     "owner",   "key:k1"}; /* tenant t's API key (fuzz_http.c) */
    emitf(c, "*%lld\r\n", (long long)(sizeof(fv) / sizeof(fv[0])));
    for (size_t i = 0; i < sizeof(fv) / sizeof(fv[0]); i++)
        bulks(c, fv[i]);
}

/* SADD {mcpq}:task:<id>:waiters <stream>: the fixture's task ends now, as a worker would end
 * it, with a result entry on that stream. */
static void cmd_sadd(conn_t *c, char **argv, int argc)
{
    const char *k = argv[1];
    size_t n = strlen(k);
    if (argc >= 3 && strncmp(k, NAMES_KEY_TASK "tk-", FIXTURE_PREFIX_LEN) == 0 &&
        n > FIXTURE_PREFIX_LEN + WAITERS_SUFFIX_LEN &&
        strcmp(k + n - WAITERS_SUFFIX_LEN, WAITERS_SUFFIX) == 0) {
        char id[160];
        snprintf(id, sizeof(id), "%.*s", (int)(n - TASK_PREFIX_LEN - WAITERS_SUFFIX_LEN),
                 k + TASK_PREFIX_LEN);
        const char *fv[] = {"job",
                            id,
                            "kind",
                            "result",
                            "data",
                            "{\"status\":\"ok\",\"result\":{\"content\":[{\"type\":\"text\","
                            "\"text\":\"done\"}],\"isError\":false}}"};
        fr_xadd(argv[2], fv, 6);
    }
    INT(c, 1);
}

static void dispatch(conn_t *c, char **argv, size_t *lens, int argc)
{
    const char *cmd = argv[0];
    if (is(cmd, "PING"))
        emit(c, "+PONG\r\n", 7);
    else if (is(cmd, "AUTH") || is(cmd, "SELECT") || is(cmd, "CLIENT"))
        OK(c);
    else if (is(cmd, "SET") && argc >= 3)
        cmd_set(c, argv, lens, argc);
    else if ((is(cmd, "GET") || is(cmd, "GETEX")) && argc >= 2)
        cmd_get(c, argv[1]);
    else if (is(cmd, "DEL") || is(cmd, "UNLINK") || is(cmd, "EXISTS")) {
        int n = 0;
        pthread_mutex_lock(&lock);
        for (int i = 1; i < argc; i++)
            n += is(cmd, "EXISTS") ? find(argv[i]) != NULL : del(argv[i]);
        pthread_mutex_unlock(&lock);
        INT(c, n);
    } else if ((is(cmd, "EXPIRE") || is(cmd, "PEXPIRE")) && argc >= 2) {
        pthread_mutex_lock(&lock);
        int n = find(argv[1]) != NULL;
        pthread_mutex_unlock(&lock);
        INT(c, n);
    } else if (is(cmd, "INCR") && argc >= 2) {
        pthread_mutex_lock(&lock);
        kv_t *e = find(argv[1]);
        long long v = (e ? atoll(e->val) : 0) + 1;
        char s[32];
        int n = snprintf(s, sizeof(s), "%lld", v);
        put(argv[1], s, (size_t)n);
        pthread_mutex_unlock(&lock);
        INT(c, v);
    } else if (is(cmd, "XADD") && argc >= 3) {
        int i = 2;
        if (is(argv[i], "MAXLEN"))
            i += (i + 1 < argc && (strcmp(argv[i + 1], "~") == 0 || strcmp(argv[i + 1], "=") == 0))
                     ? 3
                     : 2;
        i++; /* the id */
        pthread_mutex_lock(&lock);
        xadd_locked(argv[1], (const char *const *)argv + (i < argc ? i : argc),
                    (size_t)(argc > i ? argc - i : 0));
        char id[40];
        snprintf(id, sizeof(id), "%llu-0", seq);
        pthread_mutex_unlock(&lock);
        bulks(c, id);
    } else if (is(cmd, "XREAD"))
        cmd_xread(c, argv, argc);
    else if (is(cmd, "PUBLISH"))
        INT(c, 0);
    else if (is(cmd, "SUBSCRIBE")) {
        for (int i = 1; i < argc; i++) {
            emit(c, "*3\r\n", 4);
            bulks(c, "subscribe");
            bulks(c, argv[i]);
            INT(c, i);
        }
    } else if (is(cmd, "HGETALL") && argc >= 2)
        cmd_hgetall(c, argv[1]);
    else if (is(cmd, "SADD") && argc >= 2)
        cmd_sadd(c, argv, argc);
    else if (is(cmd, "EVAL") || is(cmd, "EVALSHA") || is(cmd, "SCRIPT"))
        ERR(c, "NOSCRIPT scripts are not run by the fuzzer's stand-in");
    else if (is(cmd, "HGET") || is(cmd, "LINDEX"))
        NIL(c);
    else if (cmd[0] == 'H' || cmd[0] == 'h' || cmd[0] == 'Z' || cmd[0] == 'z' || cmd[0] == 'S' ||
             cmd[0] == 's' || cmd[0] == 'L' || cmd[0] == 'l') {
        /* other hash, set, sorted-set and list commands: reads empty, writes nothing */
        if (strcasestr(cmd, "RANGE") || strcasestr(cmd, "MEMBERS") || is(cmd, "HMGET") ||
            is(cmd, "HKEYS") || is(cmd, "HVALS"))
            emit(c, "*0\r\n", 4);
        else
            INT(c, 0);
    } else
        ERR(c, "ERR unknown command");
}

static void *serve(void *arg)
{
    conn_t *c = arg;
    char *argv[MAX_ARGS];
    size_t lens[MAX_ARGS];
    for (;;) {
        int argc = 0;
        int rc = read_command(c, argv, lens, &argc);
        if (rc == 0)
            dispatch(c, argv, lens, argc);
        for (int i = 0; i < argc; i++)
            free(argv[i]);
        if (rc < 0)
            break;
        if (c->off == c->len) /* pipelined commands are answered together */
            flush_out(c);
    }
    close(c->fd);
    free(c);
    return NULL;
}

static void *acceptor(void *arg)
{
    int ls = (int)(intptr_t)arg;
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0)
            continue;
        conn_t *c = calloc(1, sizeof(*c));
        c->fd = fd;
        pthread_t t;
        if (pthread_create(&t, NULL, serve, c) != 0) {
            close(fd);
            free(c);
            continue;
        }
        pthread_detach(t);
    }
    return NULL;
}

int fr_start(char *url, size_t url_size)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 64) < 0 ||
        getsockname(ls, (struct sockaddr *)&sa, &sl) < 0)
        return -1;
    pthread_t t;
    if (pthread_create(&t, NULL, acceptor, (void *)(intptr_t)ls) != 0)
        return -1;
    pthread_detach(t);
    snprintf(url, url_size, "redis://127.0.0.1:%d/0", ntohs(sa.sin_port));
    return 0;
}
