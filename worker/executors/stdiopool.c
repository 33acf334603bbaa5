#include "stdiopool.h"

#include "err.h"
#include "exec.h"
#include "log.h"
#include "mcpw.h"
#include "settings.h"
#include "stderrline.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define SP_READ_CHUNK 65536
#define SP_READS_PER_EVENT 4
#define SP_LINE_SLACK 65536 /* a response line may exceed the output limit by its envelope */
#define SP_DEFAULT_PROCESSES 1
#define SP_DEFAULT_CONCURRENCY 8
#define SP_DEFAULT_IDLE_MS 300000
#define SP_DEFAULT_START_TIMEOUT_MS 30000
#define SP_DEFAULT_BACKOFF_MS 1000
#define SP_DETAIL_MAX 1024
#define SP_META_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define SP_DISCOVER_WAIT_MS 5000 /* a server that ignores server/discover gets initialize */
#define SP_EOF_GRACE_MS 500      /* after stdout's end, time for the exit status to tell more */

typedef struct sp_group sp_group_t;
typedef struct sp_proc sp_proc_t;

typedef enum { SP_STARTING = 0, SP_READY, SP_CLOSING } sp_state_t;

struct wrk_stdiopool_call {
    sp_group_t *g;
    sp_proc_t *proc; /* NULL while queued */
    long id;
    char *method;
    cJSON *params;
    char tag[80];
    wrk_stdiopool_note_fn note;
    wrk_stdiopool_request_fn request; /* NULL: the server's requests get -32601 */
    wrk_stdiopool_done_fn done;
    void *arg;
    wrk_stdiopool_call_t *next; /* in the group's queue or the process's calls */
};

struct sp_proc {
    sp_group_t *g;
    pid_t pid;
    int pidfd, in_fd, out_fd, err_fd;
    wrk_loop_io_t *pid_io, *in_io, *out_io, *err_io;
    sp_state_t state;
    int ready_once;      /* was initialized: its failure does not fail the queue */
    int closing_idle;    /* shut down by the pool, not a failure */
    int kill_stage;      /* idle shutdown: 0 stdin closed, 1 SIGTERM sent, 2 SIGKILL sent */
    const char *version; /* settled on by server/discover or initialize */
    cJSON *hello;        /* the result of that handshake request */
    int discovering;     /* server/discover sent, no answer yet */
    int modern;          /* speaks 2026-07-28: requests carry the _meta envelope */
    long next_id, init_id;
    util_buf_t out;  /* stdout bytes not yet a whole line */
    util_buf_t wbuf; /* stdin bytes not yet written */
    size_t woff;
    wrk_stderrline_buf_t lines;
    wrk_stdiopool_call_t *calls; /* in flight */
    size_t ncalls;
    wrk_loop_timer_t idle_timer, start_timer, kill_timer;
    wrk_loop_timer_t eof_timer;      /* stdout closed: the exit status may follow */
    wrk_loop_timer_t discover_timer; /* no answer to server/discover: initialize */
    char failure[200];               /* why its calls failed */
    sp_proc_t *next;
};

struct sp_group {
    wrk_stdiopool_t *pool;
    char *key;
    char tag[160]; /* the command and first args, for the log */
    char **argv;   /* command, args..., NULL */
    cJSON *env;    /* the references (a copy) */
    char *cwd;
    int processes, concurrency;
    long long idle_ms, start_timeout_ms, backoff_first_ms, backoff_ms;
    int64_t next_spawn_ms; /* monotonic: no start before */
    wrk_stdiopool_call_t *queue, **queue_tail;
    size_t nqueue;
    sp_proc_t *procs;
    wrk_loop_timer_t pump_timer;
    sp_group_t *next;
};

struct wrk_stdiopool {
    wrk_loop_t *loop;
    const mcpq_settings_t *settings;
    sp_group_t *groups;
    size_t nprocs;
    wrk_stdiopool_updated_fn updated;
    void *updated_arg;
};

/* ---- small helpers ---- */

static const char *member_str(const cJSON *o, const char *name)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
}

/* limits.<name> as an integer in [min, max], def when absent; -1 when malformed. */
static long long limit_get(const cJSON *limits, const char *name, long long def, long long min,
                           long long max)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(limits, name);
    if (!v || cJSON_IsNull(v))
        return def;
    if (!cJSON_IsNumber(v) || v->valuedouble != (double)(long long)v->valuedouble ||
        v->valuedouble < (double)min || v->valuedouble > (double)max)
        return -1;
    return (long long)v->valuedouble;
}

int wrk_stdiopool_is_stdio(const cJSON *executor)
{
    return cJSON_GetObjectItemCaseSensitive(executor, "command") != NULL;
}

/* ---- writing ---- */

static void proc_broken(sp_proc_t *p, const char *why);

static void on_stdin(wrk_loop_io_t *io, int fd, uint32_t events, void *arg);

/* Writes what it can of p's pending bytes; watches stdin for the rest. */
static void proc_flush(sp_proc_t *p)
{
    wrk_loop_t *loop = p->g->pool->loop;
    while (p->in_fd >= 0 && p->woff < p->wbuf.len) {
        ssize_t n = write(p->in_fd, p->wbuf.data + p->woff, p->wbuf.len - p->woff);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!p->in_io)
                p->in_io = wrk_loop_io_new(loop, p->in_fd, EPOLLOUT, on_stdin, p);
            if (!p->in_io)
                proc_broken(p, "the worker cannot watch its stdin");
            return;
        }
        if (n <= 0) {
            proc_broken(p, "its stdin pipe broke");
            return;
        }
        p->woff += (size_t)n;
    }
    p->wbuf.len = p->woff = 0;
    if (p->in_io) {
        wrk_loop_io_free(loop, p->in_io);
        p->in_io = NULL;
    }
}

static void on_stdin(wrk_loop_io_t *io, int fd, uint32_t events, void *arg)
{
    (void)io;
    (void)fd;
    (void)events;
    proc_flush(arg);
}

/* Queues one JSON-RPC message (taken over) for p's stdin. 0 or a negative code. */
static int proc_send(sp_proc_t *p, cJSON *msg)
{
    char *s = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    if (!s)
        return MCPQ_ENOMEM;
    if (p->in_fd < 0 || p->state == SP_CLOSING) {
        cJSON_free(s);
        return MCPQ_EIO;
    }
    /* Compact JSON holds no raw newline: one message, one line. */
    int rc = util_buf_append(&p->wbuf, s, strlen(s));
    if (rc == 0)
        rc = util_buf_append(&p->wbuf, "\n", 1);
    cJSON_free(s);
    if (rc < 0) {
        proc_broken(p, "its stdin backed up");
        return rc;
    }
    proc_flush(p);
    return 0;
}

/* Queues msg (taken over) for p's stdin and lets the loop write it: for callers that must not
 * see other calls end (a cancel). Best-effort: dropped when p is closing or its stdin is
 * backed up. */
static void proc_send_later(sp_proc_t *p, cJSON *msg)
{
    char *s = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    if (s && p->in_fd >= 0 && p->state != SP_CLOSING &&
        util_buf_append(&p->wbuf, s, strlen(s)) == 0) {
        if (util_buf_append(&p->wbuf, "\n", 1) < 0)
            p->wbuf.len -= strlen(s); /* no half message */
        else if (!p->in_io)
            p->in_io = wrk_loop_io_new(p->g->pool->loop, p->in_fd, EPOLLOUT, on_stdin, p);
    }
    cJSON_free(s);
}

/* ---- calls ---- */

static void call_free(wrk_stdiopool_call_t *c)
{
    if (!c)
        return;
    free(c->method);
    cJSON_Delete(c->params);
    free(c);
}

static void call_fail(wrk_stdiopool_call_t *c, const char *failure, const char *detail)
{
    wrk_stdiopool_done_fn done = c->done;
    void *arg = c->arg;
    call_free(c);
    done(NULL, failure, detail, NULL, arg);
}

static void proc_detail(const sp_proc_t *p, const char *what, char *out, size_t size)
{
    snprintf(out, size, "stdio MCP server \"%s\" (pid %ld): %s", p->g->tag, (long)p->pid, what);
}

static void group_pump_soon(sp_group_t *g);
static void proc_idle_arm(sp_proc_t *p);

/* The 2026-07-28 request envelope (basic/transports/stdio, "Request Metadata") in meta. */
static void modern_meta(cJSON *meta)
{
    cJSON_DeleteItemFromObjectCaseSensitive(meta, MCPW_META_VERSION);
    cJSON_AddStringToObject(meta, MCPW_META_VERSION, MCPW_MODERN_VERSION);
    if (!cJSON_GetObjectItemCaseSensitive(meta, SP_META_CAPABILITIES))
        cJSON_AddObjectToObject(meta, SP_META_CAPABILITIES);
}

/* Sends queued call c on ready process p (a call without a method just ends). */
static void call_send(sp_proc_t *p, wrk_stdiopool_call_t *c)
{
    if (!c->method) {
        wrk_stdiopool_hello_t hello = {p->version, p->hello};
        wrk_stdiopool_done_fn done = c->done;
        void *arg = c->arg;
        call_free(c);
        done(NULL, NULL, NULL, &hello, arg);
        return;
    }
    wrk_loop_timer_stop(p->g->pool->loop, &p->idle_timer);
    c->proc = p;
    c->id = ++p->next_id;
    c->next = p->calls;
    p->calls = c;
    p->ncalls++;
    cJSON *params = c->params ? c->params : cJSON_CreateObject();
    c->params = NULL;
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
    if (!cJSON_IsObject(meta)) {
        cJSON_DeleteItemFromObjectCaseSensitive(params, "_meta");
        meta = cJSON_AddObjectToObject(params, "_meta");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "progressToken");
    cJSON_AddNumberToObject(meta, "progressToken", (double)c->id);
    if (p->modern)
        modern_meta(meta);
    else /* a legacy session declared its capabilities at initialize */
        cJSON_DeleteItemFromObjectCaseSensitive(meta, SP_META_CAPABILITIES);
    /* A failed send breaks the process, which fails c with the others. */
    proc_send(p, mcpw_request(c->id, c->method, params));
}

static wrk_stdiopool_call_t *proc_take(sp_proc_t *p, long id)
{
    for (wrk_stdiopool_call_t **pp = &p->calls; *pp; pp = &(*pp)->next)
        if ((*pp)->id == id) {
            wrk_stdiopool_call_t *c = *pp;
            *pp = c->next;
            p->ncalls--;
            c->next = NULL;
            return c;
        }
    return NULL;
}

/* ---- processes ---- */

static void proc_signal(sp_proc_t *p, int sig)
{
    if (killpg(p->pid, sig) < 0 && errno != ESRCH)
        log_event(LOG_WARN, "cannot signal a stdio MCP server's process group", "command",
                  p->g->tag, "error", strerror(errno), (char *)NULL);
}

static void on_kill_timer(wrk_loop_timer_t *t, void *arg)
{
    sp_proc_t *p = arg;
    long long grace = p->g->pool->settings->kill_grace_ms;
    if (p->kill_stage == 0) {
        p->kill_stage = 1;
        proc_signal(p, SIGTERM);
        if (grace > 0 && wrk_loop_timer_start(p->g->pool->loop, t, grace) == 0)
            return;
    }
    p->kill_stage = 2;
    proc_signal(p, SIGKILL);
}

/* Stops p: its calls in flight fail with why; stdin is closed; SIGTERM now (a failure) or
 * after the grace (an idle shutdown), SIGKILL after another grace. Reaped by on_exit_fd. */
static void proc_stop(sp_proc_t *p, const char *why, int idle)
{
    wrk_stdiopool_t *pool = p->g->pool;
    if (p->state == SP_CLOSING)
        return;
    p->state = SP_CLOSING;
    p->closing_idle = idle;
    snprintf(p->failure, sizeof(p->failure), "%s", why);
    wrk_loop_timer_stop(pool->loop, &p->idle_timer);
    wrk_loop_timer_stop(pool->loop, &p->start_timer);
    wrk_loop_timer_stop(pool->loop, &p->eof_timer);
    wrk_loop_timer_stop(pool->loop, &p->discover_timer);
    wrk_loop_io_close(pool->loop, &p->in_io, &p->in_fd);
    long long grace = pool->settings->kill_grace_ms;
    if (!idle) {
        p->kill_stage = 1;
        proc_signal(p, grace > 0 ? SIGTERM : SIGKILL);
    }
    if (grace <= 0 || wrk_loop_timer_start(pool->loop, &p->kill_timer, grace) < 0) {
        p->kill_stage = 2;
        proc_signal(p, SIGKILL);
    }
    char detail[SP_DETAIL_MAX];
    proc_detail(p, why, detail, sizeof(detail));
    while (p->calls) {
        wrk_stdiopool_call_t *c = p->calls;
        p->calls = c->next;
        p->ncalls--;
        log_event(LOG_WARN, "stdio MCP server call failed", "job_id", c->tag, "command", p->g->tag,
                  "error", why, (char *)NULL);
        call_fail(c,
                  "the tool's stdio MCP server stopped during the call (it is started again "
                  "for the next call)",
                  detail);
    }
}

static void proc_broken(sp_proc_t *p, const char *why)
{
    if (p->state != SP_CLOSING)
        log_event(LOG_WARN, "stdio MCP server failed", "command", p->g->tag, "error", why,
                  (char *)NULL);
    proc_stop(p, why, 0);
}

static void on_idle(wrk_loop_timer_t *t, void *arg)
{
    sp_proc_t *p = arg;
    (void)t;
    char pid[24];
    snprintf(pid, sizeof(pid), "%ld", (long)p->pid);
    log_event(LOG_INFO, "stdio MCP server idle: shutting it down", "command", p->g->tag, "pid", pid,
              (char *)NULL);
    proc_stop(p, "shut down when idle", 1);
}

static void proc_idle_arm(sp_proc_t *p)
{
    if (p->state == SP_READY && p->ncalls == 0 &&
        wrk_loop_timer_start(p->g->pool->loop, &p->idle_timer, p->g->idle_ms) < 0)
        log_event(LOG_WARN, "cannot arm a stdio MCP server's idle timer", "command", p->g->tag,
                  (char *)NULL);
}

static void on_start_timeout(wrk_loop_timer_t *t, void *arg)
{
    sp_proc_t *p = arg;
    char why[120];
    (void)t;
    snprintf(why, sizeof(why), "no answer to %s within %lld ms",
             p->discovering ? "server/discover" : "initialize", p->g->start_timeout_ms);
    proc_broken(p, why);
}

/* Fails every queued call of g (its process could not start). */
static void group_fail_queue(sp_group_t *g, const char *failure, const char *detail)
{
    while (g->queue) {
        wrk_stdiopool_call_t *c = g->queue;
        g->queue = c->next;
        g->nqueue--;
        log_event(LOG_WARN, "stdio MCP server call failed", "job_id", c->tag, "command", g->tag,
                  "error", detail, (char *)NULL);
        call_fail(c, failure, detail);
    }
    g->queue_tail = &g->queue;
}

static void group_backoff(sp_group_t *g)
{
    g->next_spawn_ms = util_mono_ms() + g->backoff_ms;
    g->backoff_ms *= 2;
    if (g->backoff_ms > WRK_STDIOPOOL_BACKOFF_MAX_MS)
        g->backoff_ms = WRK_STDIOPOOL_BACKOFF_MAX_MS;
}

/* p settled on version v: calls may go. */
static void proc_ready(sp_proc_t *p, const char *v)
{
    char pid[24];
    wrk_loop_timer_stop(p->g->pool->loop, &p->start_timer);
    p->version = v;
    p->state = SP_READY;
    p->ready_once = 1;
    p->g->backoff_ms = p->g->backoff_first_ms;
    snprintf(pid, sizeof(pid), "%ld", (long)p->pid);
    log_event(LOG_INFO, "stdio MCP server ready", "command", p->g->tag, "pid", pid, "version", v,
              (char *)NULL);
    proc_idle_arm(p);
    group_pump_soon(p->g);
}

static void proc_initialize(sp_proc_t *p)
{
    p->discovering = 0;
    p->init_id = ++p->next_id;
    proc_send(p, mcpw_request(p->init_id, "initialize", mcpw_initialize_params()));
}

/* The answer to initialize. */
static void proc_initialized(sp_proc_t *p, const cJSON *r)
{
    const char *v = mcpw_legacy_version(r);
    char why[400];
    if (v)
        p->hello = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(r, "result"), 1);
    if (!v) {
        const char *em = member_str(cJSON_GetObjectItemCaseSensitive(r, "error"), "message");
        if (em)
            snprintf(why, sizeof(why), "initialize failed: %.300s", em);
        else
            snprintf(why, sizeof(why),
                     "initialize settled on no protocol version this gateway speaks");
        proc_broken(p, why);
        return;
    }
    if (proc_send(p, mcpw_request(-1, "notifications/initialized", NULL)) == 0)
        proc_ready(p, v);
}

/* The answer to server/discover: 2026-07-28, or else the legacy handshake. */
static void proc_discovered(sp_proc_t *p, const cJSON *r)
{
    wrk_loop_timer_stop(p->g->pool->loop, &p->discover_timer);
    p->discovering = 0;
    if (mcpw_discover_modern(200, r)) {
        p->modern = 1;
        p->hello = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(r, "result"), 1);
        proc_ready(p, MCPW_MODERN_VERSION);
        return;
    }
    proc_initialize(p);
}

static void on_discover_wait(wrk_loop_timer_t *t, void *arg)
{
    (void)t;
    proc_initialize(arg);
}

/* Opens the handshake: server/discover (2026-07-28), with initialize as the fallback when
 * the answer is anything else or does not come within SP_DISCOVER_WAIT_MS (at most half the
 * start timeout). */
static void proc_discover(sp_proc_t *p)
{
    long long wait = p->g->start_timeout_ms / 2;
    cJSON *params = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(params, "_meta");
    cJSON_AddItemToObject(meta, SP_META_CAPABILITIES, mcpw_client_capabilities());
    modern_meta(meta);
    p->discovering = 1;
    p->init_id = ++p->next_id;
    wrk_loop_timer_start(p->g->pool->loop, &p->discover_timer,
                         wait < SP_DISCOVER_WAIT_MS ? wait : SP_DISCOVER_WAIT_MS);
    proc_send(p, mcpw_request(p->init_id, "server/discover", params));
}

static void proc_note(sp_proc_t *p, const char *method, const cJSON *msg)
{
    wrk_stdiopool_t *pool = p->g->pool;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    if (strcmp(method, "notifications/progress") == 0) {
        const cJSON *tok = cJSON_GetObjectItemCaseSensitive(params, "progressToken");
        if (!cJSON_IsNumber(tok))
            return;
        for (wrk_stdiopool_call_t *c = p->calls; c; c = c->next)
            if ((double)c->id == tok->valuedouble && c->note)
                c->note(msg, c->arg);
        return;
    }
    if (strcmp(method, "notifications/message") == 0) {
        if (p->ncalls == 1 && p->calls->note) {
            p->calls->note(msg, p->calls->arg);
            return;
        }
        char *s = cJSON_PrintUnformatted(params);
        log_event(LOG_DEBUG, "stdio MCP server log message", "command", p->g->tag, "message",
                  s ? s : "", (char *)NULL);
        cJSON_free(s);
        return;
    }
    if (strcmp(method, "notifications/resources/updated") == 0) {
        const char *uri = member_str(params, "uri");
        if (uri && pool->updated)
            pool->updated(p->g->key, uri, pool->updated_arg);
    }
    /* Other notifications (list_changed, ...) are not a call's. */
}

/* A request from the server: ping answered {}; any other goes to the call it belongs to, the
 * only call in flight on p (a stdio message names no call: basic/transports); with none, or
 * several (which one asks cannot be told), or a call that takes none, it is answered with an
 * error rather than guessed. */
static void proc_request(sp_proc_t *p, const char *method, const cJSON *msg)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    char text[300];
    if (strcmp(method, "ping") != 0 && p->ncalls == 1 && p->calls->request) {
        p->calls->request(msg, p->calls->arg);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "jsonrpc", "2.0");
    cJSON_AddItemToObject(o, "id", cJSON_Duplicate(id, 1));
    if (strcmp(method, "ping") == 0) {
        cJSON_AddObjectToObject(o, "result");
    } else {
        int code = -32601;
        if (p->ncalls > 1) {
            code = -32603;
            snprintf(text, sizeof(text),
                     "mcpq cannot tell which of the %zu calls in flight on this process sent "
                     "%.64s (a stdio request names no call): give the server limits.concurrency "
                     "1 to let it ask",
                     p->ncalls, method);
        } else if (p->ncalls == 1) {
            snprintf(text, sizeof(text), "mcpq does not relay %.64s to its client", method);
        } else {
            snprintf(text, sizeof(text),
                     "mcpq relays a request to its client only during a call of it (%.64s came "
                     "with no call in flight)",
                     method);
        }
        cJSON *e = cJSON_AddObjectToObject(o, "error");
        cJSON_AddNumberToObject(e, "code", code);
        cJSON_AddStringToObject(e, "message", text);
    }
    proc_send(p, o);
}

/* One line of stdout. */
static void proc_line(sp_proc_t *p, const char *line, size_t len)
{
    while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
        len--;
    if (!len)
        return;
    cJSON *msg = cJSON_ParseWithLength(line, len);
    if (!cJSON_IsObject(msg)) {
        cJSON_Delete(msg);
        char cut[200];
        snprintf(cut, sizeof(cut), "%.*s", (int)(len < 160 ? len : 160), line);
        log_event(LOG_WARN, "stdio MCP server wrote a line that is no JSON-RPC message", "command",
                  p->g->tag, "line", cut, (char *)NULL);
        return;
    }
    const char *method = member_str(msg, "method");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    if (method && id && !cJSON_IsNull(id)) {
        proc_request(p, method, msg);
    } else if (method) {
        proc_note(p, method, msg);
    } else if (cJSON_IsNumber(id) && p->state == SP_STARTING && id->valuedouble == p->init_id) {
        if (p->discovering)
            proc_discovered(p, msg);
        else
            proc_initialized(p, msg);
    } else if (cJSON_IsNumber(id)) {
        wrk_stdiopool_call_t *c = proc_take(p, (long)id->valuedouble);
        if (c) {
            wrk_stdiopool_hello_t hello = {p->version, p->hello};
            wrk_stdiopool_done_fn done = c->done;
            void *arg = c->arg;
            call_free(c);
            done(msg, NULL, NULL, &hello, arg);
            msg = NULL;
            proc_idle_arm(p);
            group_pump_soon(p->g);
        }
    }
    cJSON_Delete(msg);
}

/* Reads stdout; returns 1 at EOF or a read error. */
static int proc_read_out(sp_proc_t *p, int max_reads)
{
    char buf[SP_READ_CHUNK];
    for (int i = 0; i < max_reads && p->out_fd >= 0; i++) {
        ssize_t n = wrk_loop_read(p->out_fd, buf, sizeof(buf));
        if (n == 0)
            return 0;
        if (n < 0)
            return 1;
        const char *s = buf, *end = buf + n;
        while (s < end) {
            const char *nl = memchr(s, '\n', (size_t)(end - s));
            size_t chunk = nl ? (size_t)(nl - s) : (size_t)(end - s);
            if (util_buf_append(&p->out, s, chunk) < 0) {
                proc_broken(p, "it sent a message larger than the worker's output limit");
                p->out.len = 0;
                return 1;
            }
            if (!nl)
                break;
            size_t l = p->out.len;
            p->out.len = 0;
            /* proc_line may end calls but never frees p. */
            proc_line(p, p->out.data, l);
            s = nl + 1;
        }
    }
    return 0;
}

static void on_stdout(wrk_loop_io_t *io, int fd, uint32_t events, void *arg)
{
    sp_proc_t *p = arg;
    (void)io;
    (void)fd;
    (void)events;
    if (proc_read_out(p, SP_READS_PER_EVENT)) {
        wrk_loop_io_close(p->g->pool->loop, &p->out_io, &p->out_fd);
        /* Usually it is exiting: its exit status says more than the end of stdout. */
        if (p->state != SP_CLOSING &&
            wrk_loop_timer_start(p->g->pool->loop, &p->eof_timer, SP_EOF_GRACE_MS) < 0)
            proc_broken(p, "it closed its stdout");
    }
}

static void on_eof_timer(wrk_loop_timer_t *t, void *arg)
{
    (void)t;
    proc_broken(arg, "it closed its stdout");
}

static void on_stderr_line(const char *line, size_t len, void *arg)
{
    sp_proc_t *p = arg;
    char cut[WRK_STDIOPOOL_STDERR_LINE_MAX + 1], pid[24];
    snprintf(cut, sizeof(cut), "%.*s",
             (int)(len < WRK_STDIOPOOL_STDERR_LINE_MAX ? len : WRK_STDIOPOOL_STDERR_LINE_MAX),
             line);
    snprintf(pid, sizeof(pid), "%ld", (long)p->pid);
    log_event(LOG_INFO, "stdio MCP server stderr", "command", p->g->tag, "pid", pid, "line", cut,
              (char *)NULL);
}

static void proc_read_err(sp_proc_t *p, int max_reads)
{
    char buf[SP_READ_CHUNK];
    for (int i = 0; i < max_reads && p->err_fd >= 0; i++) {
        ssize_t n = wrk_loop_read(p->err_fd, buf, sizeof(buf));
        if (n == 0)
            return;
        if (n < 0) {
            wrk_stderrline_buf_finish(&p->lines, on_stderr_line, p);
            wrk_loop_io_close(p->g->pool->loop, &p->err_io, &p->err_fd);
            return;
        }
        wrk_stderrline_buf_feed(&p->lines, buf, (size_t)n, on_stderr_line, p);
    }
}

static void on_stderr(wrk_loop_io_t *io, int fd, uint32_t events, void *arg)
{
    (void)io;
    (void)fd;
    (void)events;
    proc_read_err(arg, SP_READS_PER_EVENT);
}

static void proc_free(sp_proc_t *p)
{
    wrk_loop_t *loop = p->g->pool->loop;
    wrk_loop_timer_stop(loop, &p->idle_timer);
    wrk_loop_timer_stop(loop, &p->start_timer);
    wrk_loop_timer_stop(loop, &p->kill_timer);
    wrk_loop_timer_stop(loop, &p->eof_timer);
    wrk_loop_timer_stop(loop, &p->discover_timer);
    wrk_loop_io_close(loop, &p->in_io, &p->in_fd);
    wrk_loop_io_close(loop, &p->out_io, &p->out_fd);
    wrk_loop_io_close(loop, &p->err_io, &p->err_fd);
    wrk_loop_io_close(loop, &p->pid_io, &p->pidfd);
    util_buf_cleanup(&p->out);
    util_buf_cleanup(&p->wbuf);
    cJSON_Delete(p->hello);
    free(p);
}

static void proc_unlink(sp_proc_t *p)
{
    for (sp_proc_t **pp = &p->g->procs; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    p->g->pool->nprocs--;
}

static void on_exit_fd(wrk_loop_io_t *io, int fd, uint32_t events, void *arg)
{
    sp_proc_t *p = arg;
    sp_group_t *g = p->g;
    char why[160], detail[SP_DETAIL_MAX], pid[24];
    (void)io;
    (void)events;
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    /* Not reaped yet (WNOWAIT): its pid stays its group's id while the rest is killed. */
    if (waitid(P_PIDFD, (id_t)fd, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
        si.si_code = CLD_KILLED;
        si.si_status = SIGKILL;
    } else if (si.si_pid == 0) {
        return;
    }
    killpg(p->pid, SIGKILL); /* what is left of its group */
    if (si.si_code == CLD_EXITED)
        snprintf(why, sizeof(why), "it exited with status %d", si.si_status);
    else
        snprintf(why, sizeof(why), "it was killed by signal %d", si.si_status);
    /* What it wrote before it exited is still in the pipes. */
    if (p->out_fd >= 0 && p->state != SP_CLOSING)
        proc_read_out(p, 64);
    proc_read_err(p, 16);
    int failed = !p->closing_idle;
    int started = p->ready_once;
    char reason[sizeof(p->failure)];
    snprintf(reason, sizeof(reason), "%s", p->state == SP_CLOSING ? p->failure : why);
    snprintf(pid, sizeof(pid), "%ld", (long)p->pid);
    log_event(failed ? LOG_WARN : LOG_INFO, "stdio MCP server ended", "command", g->tag, "pid", pid,
              "status", why, "reason", reason, (char *)NULL);
    proc_stop(p, why, 0);
    siginfo_t reaped;
    waitid(P_PIDFD, (id_t)fd, &reaped, WEXITED | WNOHANG);
    proc_unlink(p);
    proc_free(p);
    if (failed)
        group_backoff(g);
    if (failed && !started) {
        snprintf(detail, sizeof(detail),
                 "stdio MCP server \"%.160s\" (pid %s): it ended before it was initialized "
                 "(%.200s): %.160s",
                 g->tag, pid, reason, why);
        /* Only the calls that waited for this start: a start still going on keeps its. */
        int others = 0;
        for (sp_proc_t *q = g->procs; q; q = q->next)
            others += q->state != SP_CLOSING;
        if (!others)
            group_fail_queue(g, "the tool's stdio MCP server could not be started", detail);
    }
    group_pump_soon(g);
}

/* The value of the env reference it ({"env": VAR} or {"file": path}), malloc'd; NULL with
 * *bad set and detail filled when it cannot be resolved, NULL with *bad 0 on ENOMEM. */
static char *env_value(const cJSON *it, int *bad, char *detail, size_t size)
{
    const char *var = member_str(it, "env"), *file = member_str(it, "file");
    *bad = 1;
    if (var) {
        /* The config refuses these too (cfg.h): a job that names one anyway gets none. */
        if (settings_is_name(var)) {
            snprintf(detail, size,
                     "executor.env.%s: %s is a setting of mcpq itself, never passed to an "
                     "upstream",
                     it->string, var);
            return NULL;
        }
        const char *s = getenv(var);
        if (!s) {
            snprintf(detail, size, "executor.env.%s: the worker has no variable %s", it->string,
                     var);
            return NULL;
        }
        *bad = 0;
        return strdup(s);
    }
    util_buf_t b;
    char chunk[4096];
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(detail, size, "executor.env.%s: cannot read %s: %s", it->string, file,
                 strerror(errno));
        return NULL;
    }
    util_buf_init(&b, WRK_STDIOPOOL_FILE_MAX);
    ssize_t r;
    int rc = 0;
    while ((r = read(fd, chunk, sizeof(chunk))) > 0 || (r < 0 && errno == EINTR))
        if (r > 0 && (rc = util_buf_append(&b, chunk, (size_t)r)) < 0)
            break;
    close(fd);
    char *val = NULL;
    if (r < 0 || rc < 0 || memchr(b.data ? b.data : "", '\0', b.len)) {
        snprintf(detail, size,
                 "executor.env.%s: cannot read %s (an error, more than %d bytes, or a NUL byte)",
                 it->string, file, WRK_STDIOPOOL_FILE_MAX);
    } else {
        if (b.len && b.data[b.len - 1] == '\n')
            b.data[--b.len] = '\0';
        *bad = 0;
        val = strdup(b.data ? b.data : "");
    }
    util_buf_cleanup(&b);
    return val;
}

/* The process's environment: PATH, HOME, LANG and the resolved references. NULL with *why
 * (public) and detail (operator) set, or NULL with *why NULL on ENOMEM. */
static char **group_env(const sp_group_t *g, const char **why, char *detail, size_t size)
{
    size_t n = 3 + (size_t)cJSON_GetArraySize(g->env);
    char **v = calloc(n + 1, sizeof(*v));
    size_t k = 0;
    const char *home = getenv("HOME");
    const char *base[][2] = {{"PATH", WRK_EXEC_DEFAULT_PATH},
                             {"HOME", home && home[0] == '/' ? home : "/tmp"},
                             {"LANG", "C.UTF-8"}};
    *why = NULL;
    if (!v)
        return NULL;
    /* A reference to PATH, HOME or LANG replaces the base value. */
    for (size_t i = 0; i < 3; i++)
        if (!cJSON_GetObjectItemCaseSensitive(g->env, base[i][0])) {
            size_t l = strlen(base[i][0]) + strlen(base[i][1]) + 2;
            if (!(v[k] = malloc(l)))
                goto oom;
            snprintf(v[k++], l, "%s=%s", base[i][0], base[i][1]);
        }
    for (const cJSON *it = g->env ? g->env->child : NULL; it; it = it->next) {
        int bad;
        char *val = env_value(it, &bad, detail, size);
        if (bad)
            goto bad;
        size_t l = val ? strlen(it->string) + strlen(val) + 2 : 0;
        if (!val || !(v[k] = malloc(l))) {
            free(val);
            goto oom;
        }
        snprintf(v[k++], l, "%s=%s", it->string, val);
        free(val);
    }
    return v;
bad:
    *why = "the tool's stdio MCP server could not be started (an environment reference of its "
           "executor could not be resolved on the worker)";
oom:
    wrk_exec_strv_free(v);
    return NULL;
}

/* Starts one process of g. 0, or < 0 with the queue failed (why logged). */
static int group_spawn(sp_group_t *g)
{
    wrk_stdiopool_t *pool = g->pool;
    char detail[SP_DETAIL_MAX] = "";
    const char *why = NULL;
    char **envp = group_env(g, &why, detail, sizeof(detail));
    if (!envp) {
        if (!why) {
            why = "the tool's stdio MCP server could not be started (out of memory)";
            snprintf(detail, sizeof(detail), "out of memory");
        }
        log_event(LOG_WARN, "cannot start a stdio MCP server", "command", g->tag, "error", detail,
                  (char *)NULL);
        group_fail_queue(g, why, detail);
        return MCPQ_EINVAL;
    }
    sp_proc_t *p = calloc(1, sizeof(*p));
    wrk_exec_child_t child = {.pid = -1, .in_fd = -1, .out_fd = -1, .err_fd = -1};
    int err = p ? wrk_exec_spawn((const char *const *)g->argv, envp, g->cwd, &child) : ENOMEM;
    wrk_exec_strv_free(envp);
    if (err) {
        snprintf(detail, sizeof(detail), "cannot start \"%.200s\"%s%.200s: %s", g->argv[0],
                 g->cwd ? " in " : "", g->cwd ? g->cwd : "", strerror(err));
        log_event(LOG_WARN, "cannot start a stdio MCP server", "command", g->tag, "error", detail,
                  (char *)NULL);
        free(p);
        group_backoff(g);
        group_fail_queue(g, "the tool's stdio MCP server could not be started", detail);
        return MCPQ_EIO;
    }
    p->g = g;
    p->pid = child.pid;
    p->in_fd = child.in_fd;
    p->out_fd = child.out_fd;
    p->err_fd = child.err_fd;
    p->pidfd = pidfd_open(p->pid, 0);
    util_buf_init(&p->out, (size_t)pool->settings->max_output_bytes + SP_LINE_SLACK);
    util_buf_init(&p->wbuf, (size_t)pool->settings->max_output_bytes + SP_LINE_SLACK);
    wrk_stderrline_buf_init(&p->lines);
    wrk_loop_timer_init(&p->idle_timer, on_idle, p);
    wrk_loop_timer_init(&p->start_timer, on_start_timeout, p);
    wrk_loop_timer_init(&p->kill_timer, on_kill_timer, p);
    wrk_loop_timer_init(&p->eof_timer, on_eof_timer, p);
    wrk_loop_timer_init(&p->discover_timer, on_discover_wait, p);
    p->next = g->procs;
    g->procs = p;
    pool->nprocs++;
    if (p->pidfd >= 0)
        p->pid_io = wrk_loop_io_new(pool->loop, p->pidfd, EPOLLIN, on_exit_fd, p);
    p->out_io = wrk_loop_io_new(pool->loop, p->out_fd, EPOLLIN, on_stdout, p);
    p->err_io = wrk_loop_io_new(pool->loop, p->err_fd, EPOLLIN, on_stderr, p);
    if (!p->pid_io || !p->out_io || !p->err_io) {
        /* Unwatched, it cannot be served: kill and reap it now. */
        killpg(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        proc_unlink(p);
        proc_free(p);
        group_fail_queue(g, "the tool's stdio MCP server could not be started",
                         "the worker cannot watch its pipes");
        return MCPQ_EIO;
    }
    char pid[24];
    snprintf(pid, sizeof(pid), "%ld", (long)p->pid);
    log_event(LOG_INFO, "stdio MCP server started", "command", g->tag, "pid", pid, (char *)NULL);
    wrk_loop_timer_start(pool->loop, &p->start_timer, g->start_timeout_ms);
    proc_discover(p);
    return 0;
}

/* Hands queued calls to ready processes and starts processes while calls wait. */
static void group_pump(sp_group_t *g)
{
    while (g->queue) {
        sp_proc_t *best = NULL;
        for (sp_proc_t *p = g->procs; p; p = p->next)
            if (p->state == SP_READY && p->ncalls < (size_t)g->concurrency &&
                (!best || p->ncalls < best->ncalls))
                best = p;
        if (!best)
            break;
        wrk_stdiopool_call_t *c = g->queue;
        g->queue = c->next;
        if (!g->queue)
            g->queue_tail = &g->queue;
        g->nqueue--;
        call_send(best, c);
    }
    if (!g->queue)
        return;
    size_t alive = 0, starting = 0;
    for (sp_proc_t *p = g->procs; p; p = p->next) {
        alive += p->state != SP_CLOSING;
        starting += p->state == SP_STARTING;
    }
    if (alive >= (size_t)g->processes || g->nqueue <= starting * (size_t)g->concurrency)
        return;
    int64_t wait = g->next_spawn_ms - util_mono_ms();
    if (wait > 0) {
        wrk_loop_timer_start(g->pool->loop, &g->pump_timer, wait);
        return;
    }
    group_spawn(g);
}

static void on_pump(wrk_loop_timer_t *t, void *arg)
{
    (void)t;
    group_pump(arg);
}

static void group_pump_soon(sp_group_t *g)
{
    if (g->queue)
        wrk_loop_timer_start(g->pool->loop, &g->pump_timer, 0);
}

/* ---- groups ---- */

static void group_free(sp_group_t *g)
{
    wrk_loop_timer_stop(g->pool->loop, &g->pump_timer);
    while (g->procs) {
        sp_proc_t *p = g->procs;
        g->procs = p->next;
        killpg(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        while (p->calls) {
            wrk_stdiopool_call_t *c = p->calls;
            p->calls = c->next;
            call_free(c);
        }
        g->pool->nprocs--;
        proc_free(p);
    }
    while (g->queue) {
        wrk_stdiopool_call_t *c = g->queue;
        g->queue = c->next;
        call_free(c);
    }
    free(g->key);
    wrk_exec_strv_free(g->argv);
    cJSON_Delete(g->env);
    free(g->cwd);
    free(g);
}

/* Checks executor's stdio members; the group key (JSON) as a new string, or NULL with why. */
static char *spec_key(const cJSON *ex, char *why, size_t why_size)
{
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(ex, "command");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(ex, "args");
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(ex, "env");
    const cJSON *cwd = cJSON_GetObjectItemCaseSensitive(ex, "cwd");
    const cJSON *limits = cJSON_GetObjectItemCaseSensitive(ex, "limits");
    if (!cJSON_IsString(cmd) || !cmd->valuestring[0]) {
        snprintf(why, why_size, "executor.command must be a non-empty string");
        return NULL;
    }
    if (cJSON_GetObjectItemCaseSensitive(ex, "url")) {
        snprintf(why, why_size, "an mcp executor has either \"url\" or \"command\", not both");
        return NULL;
    }
    if (args && (!cJSON_IsArray(args) || cJSON_GetArraySize(args) > WRK_STDIOPOOL_ARGS_MAX)) {
        snprintf(why, why_size, "executor.args must be an array of at most %d strings",
                 WRK_STDIOPOOL_ARGS_MAX);
        return NULL;
    }
    for (const cJSON *it = args ? args->child : NULL; it; it = it->next)
        if (!cJSON_IsString(it)) {
            snprintf(why, why_size, "executor.args must be an array of strings");
            return NULL;
        }
    if (env && (!cJSON_IsObject(env) || cJSON_GetArraySize(env) > WRK_STDIOPOOL_ENV_MAX)) {
        snprintf(why, why_size, "executor.env must be an object of at most %d references",
                 WRK_STDIOPOOL_ENV_MAX);
        return NULL;
    }
    for (const cJSON *it = env ? env->child : NULL; it; it = it->next) {
        const char *var = member_str(it, "env"), *file = member_str(it, "file");
        if (!wrk_exec_env_name_valid(it->string) || !cJSON_IsObject(it) ||
            cJSON_GetArraySize(it) != 1 ||
            !((var && wrk_exec_env_name_valid(var)) || (file && file[0] == '/'))) {
            snprintf(why, why_size,
                     "executor.env.%.64s must be a reference, {\"env\": \"WORKER_VAR\"} or "
                     "{\"file\": \"/path\"}: values are read on the worker, never stored",
                     it->string);
            return NULL;
        }
    }
    if (cwd && (!cJSON_IsString(cwd) || cwd->valuestring[0] != '/')) {
        snprintf(why, why_size, "executor.cwd must be an absolute path");
        return NULL;
    }
    if (limits && !cJSON_IsObject(limits)) {
        snprintf(why, why_size, "executor.limits must be an object");
        return NULL;
    }
    cJSON *k = cJSON_CreateObject();
    static const char *const members[] = {"command", "args", "env", "cwd", "limits"};
    for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(ex, members[i]);
        if (m)
            cJSON_AddItemToObject(k, members[i], cJSON_Duplicate(m, 1));
    }
    char *s = cJSON_PrintUnformatted(k);
    cJSON_Delete(k);
    if (!s)
        snprintf(why, why_size, "out of memory");
    return s;
}

static sp_group_t *group_new(wrk_stdiopool_t *pool, const cJSON *ex, char *key, char *why,
                             size_t why_size)
{
    const cJSON *limits = cJSON_GetObjectItemCaseSensitive(ex, "limits");
    long long procs =
        limit_get(limits, "processes", SP_DEFAULT_PROCESSES, 1, WRK_STDIOPOOL_PROCESSES_MAX);
    long long conc =
        limit_get(limits, "concurrency", SP_DEFAULT_CONCURRENCY, 1, WRK_STDIOPOOL_CONCURRENCY_MAX);
    long long idle = limit_get(limits, "idle_ms", SP_DEFAULT_IDLE_MS, 100, 86400000);
    long long start =
        limit_get(limits, "start_timeout_ms", SP_DEFAULT_START_TIMEOUT_MS, 100, 600000);
    long long backoff = limit_get(limits, "restart_backoff_ms", SP_DEFAULT_BACKOFF_MS, 0,
                                  WRK_STDIOPOOL_BACKOFF_MAX_MS);
    if (procs < 0 || conc < 0 || idle < 0 || start < 0 || backoff < 0) {
        snprintf(why, why_size,
                 "executor.limits: processes 1-%d, concurrency 1-%d, idle_ms 100-86400000, "
                 "start_timeout_ms 100-600000, restart_backoff_ms 0-%d (integers)",
                 WRK_STDIOPOOL_PROCESSES_MAX, WRK_STDIOPOOL_CONCURRENCY_MAX,
                 WRK_STDIOPOOL_BACKOFF_MAX_MS);
        free(key);
        return NULL;
    }
    sp_group_t *g = calloc(1, sizeof(*g));
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(ex, "args");
    int nargs = cJSON_GetArraySize(args);
    const char *cwd = member_str(ex, "cwd");
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(ex, "env");
    if (!g || !(g->argv = calloc((size_t)nargs + 2, sizeof(char *))) ||
        (env && !(g->env = cJSON_Duplicate(env, 1))) || (cwd && !(g->cwd = strdup(cwd))))
        goto oom;
    g->pool = pool;
    g->key = key;
    key = NULL;
    if (!(g->argv[0] = strdup(member_str(ex, "command"))))
        goto oom;
    int i = 1;
    for (const cJSON *it = args ? args->child : NULL; it; it = it->next, i++)
        if (!(g->argv[i] = strdup(it->valuestring)))
            goto oom;
    size_t off = (size_t)snprintf(g->tag, sizeof(g->tag), "%s", g->argv[0]);
    for (i = 1; g->argv[i] && off < sizeof(g->tag); i++)
        off += (size_t)snprintf(g->tag + off, sizeof(g->tag) - off, " %s", g->argv[i]);
    g->processes = (int)procs;
    g->concurrency = (int)conc;
    g->idle_ms = idle;
    g->start_timeout_ms = start;
    g->backoff_first_ms = g->backoff_ms = backoff;
    g->queue_tail = &g->queue;
    wrk_loop_timer_init(&g->pump_timer, on_pump, g);
    g->next = pool->groups;
    pool->groups = g;
    return g;
oom:
    free(key);
    if (g) {
        g->pool = pool;
        wrk_loop_timer_init(&g->pump_timer, on_pump, g);
        group_free(g);
    }
    snprintf(why, why_size, "out of memory");
    return NULL;
}

/* ---- the pool ---- */

wrk_stdiopool_t *wrk_stdiopool_new(wrk_loop_t *loop, const mcpq_settings_t *settings)
{
    wrk_stdiopool_t *pool = calloc(1, sizeof(*pool));
    if (pool) {
        pool->loop = loop;
        pool->settings = settings;
    }
    return pool;
}

void wrk_stdiopool_free(wrk_stdiopool_t *pool)
{
    if (!pool)
        return;
    while (pool->groups) {
        sp_group_t *g = pool->groups;
        pool->groups = g->next;
        group_free(g);
    }
    free(pool);
}

void wrk_stdiopool_on_updated(wrk_stdiopool_t *pool, wrk_stdiopool_updated_fn fn, void *arg)
{
    pool->updated = fn;
    pool->updated_arg = arg;
}

size_t wrk_stdiopool_processes(const wrk_stdiopool_t *pool)
{
    return pool ? pool->nprocs : 0;
}

wrk_stdiopool_call_t *wrk_stdiopool_call(wrk_stdiopool_t *pool, const cJSON *executor,
                                         const char *method, cJSON *params, const char *tag,
                                         wrk_stdiopool_note_fn note, wrk_stdiopool_done_fn done,
                                         void *arg, char *why, size_t why_size)
{
    char *key = spec_key(executor, why, why_size);
    sp_group_t *g = NULL;
    if (!key)
        goto fail;
    for (g = pool->groups; g; g = g->next)
        if (strcmp(g->key, key) == 0)
            break;
    if (g)
        free(key);
    else if (!(g = group_new(pool, executor, key, why, why_size)))
        goto fail;
    if (g->nqueue >= WRK_STDIOPOOL_QUEUE_MAX) {
        snprintf(why, why_size, "the tool's stdio MCP server is busy: %d calls already wait for it",
                 WRK_STDIOPOOL_QUEUE_MAX);
        goto fail;
    }
    wrk_stdiopool_call_t *c = calloc(1, sizeof(*c));
    if (!c || (method && !(c->method = strdup(method)))) {
        free(c);
        snprintf(why, why_size, "out of memory");
        goto fail;
    }
    c->g = g;
    c->params = params;
    snprintf(c->tag, sizeof(c->tag), "%s", tag ? tag : "");
    c->note = note;
    c->done = done;
    c->arg = arg;
    *g->queue_tail = c;
    g->queue_tail = &c->next;
    g->nqueue++;
    group_pump_soon(g);
    return c;
fail:
    cJSON_Delete(params);
    return NULL;
}

void wrk_stdiopool_on_request(wrk_stdiopool_call_t *call, wrk_stdiopool_request_fn fn)
{
    call->request = fn;
}

int wrk_stdiopool_respond(wrk_stdiopool_t *pool, wrk_stdiopool_call_t *call, cJSON *response)
{
    (void)pool;
    sp_proc_t *p = call->proc;
    if (!p || p->state != SP_READY) {
        cJSON_Delete(response);
        return MCPQ_EIO;
    }
    proc_send_later(p, response);
    return 0;
}

void wrk_stdiopool_cancel(wrk_stdiopool_t *pool, wrk_stdiopool_call_t *c, const char *reason)
{
    (void)pool;
    if (!c)
        return;
    sp_group_t *g = c->g;
    sp_proc_t *p = c->proc;
    if (!p) {
        for (wrk_stdiopool_call_t **pp = &g->queue; *pp; pp = &(*pp)->next)
            if (*pp == c) {
                *pp = c->next;
                if (g->queue_tail == &c->next)
                    g->queue_tail = pp;
                g->nqueue--;
                break;
            }
        call_free(c);
        return;
    }
    long id = c->id;
    proc_take(p, id);
    call_free(c);
    if (p->state == SP_READY) {
        cJSON *params = cJSON_CreateObject();
        cJSON_AddNumberToObject(params, "requestId", (double)id);
        cJSON_AddStringToObject(params, "reason", reason ? reason : "cancelled");
        proc_send_later(p, mcpw_request(-1, "notifications/cancelled", params));
        proc_idle_arm(p);
        group_pump_soon(g);
    }
}

char *wrk_stdiopool_key(const cJSON *executor)
{
    char why[128];
    return spec_key(executor, why, sizeof(why));
}
