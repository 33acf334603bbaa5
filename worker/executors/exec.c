#include "exec.h"

#include "ask.h"
#include "err.h"
#include "job.h"
#include "log.h"
#include "output.h"
#include "stderrline.h"
#include "util.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXEC_READ_CHUNK 65536
#define EXEC_READS_PER_EVENT 4          /* then let other fds have a turn */
#define EXEC_DRAIN_STDERR_MAX (1 << 20) /* after exit: stderr read before giving up */
#define EXEC_INPUT_PREFIX "input "      /* an interactive tool's question line on stdout */

typedef struct exec_proc {
    wrk_job_t *job;
    pid_t pid;
    int pidfd, in_fd, out_fd, err_fd;
    wrk_loop_io_t *pid_io, *in_io, *out_io, *err_io;
    size_t in_off;
    int interactive; /* executor.interactive: stdin stays open, stdout lines may ask */
    util_buf_t in;   /* interactive: bytes still to write to stdin (envelope line, answers) */
    util_buf_t line; /* interactive: the stdout line being read */
    char ask_key[WRK_ASK_KEY_MAX + 1]; /* the key of the open question */
    util_buf_t out;
    wrk_stderrline_buf_t lines;
    char tail[WRK_EXEC_TAIL_MAX];
    size_t tail_len;
    wrk_loop_timer_t kill_timer;
    int too_big;
    int exit_status, signo;
} exec_proc_t;

static void proc_signal(exec_proc_t *p, int sig)
{
    /* The group id is the child's pid; it stays reserved until the child is reaped. */
    if (killpg(p->pid, sig) < 0 && errno != ESRCH)
        log_event(LOG_WARN, "cannot signal the tool's process group", "job_id", p->job->env.job_id,
                  "error", strerror(errno), (char *)NULL);
}

/* Keeps the last WRK_EXEC_TAIL_MAX bytes of non-protocol stderr lines. */
static void tail_add(exec_proc_t *p, const char *line, size_t len)
{
    if (len + 1 > WRK_EXEC_TAIL_MAX) {
        line += len + 1 - WRK_EXEC_TAIL_MAX;
        len = WRK_EXEC_TAIL_MAX - 1;
    }
    size_t need = len + 1;
    if (p->tail_len + need > WRK_EXEC_TAIL_MAX) {
        size_t drop = p->tail_len + need - WRK_EXEC_TAIL_MAX;
        /* Drop whole lines where possible. */
        const char *nl = memchr(p->tail + drop, '\n', p->tail_len - drop);
        if (nl)
            drop = (size_t)(nl - p->tail) + 1;
        memmove(p->tail, p->tail + drop, p->tail_len - drop);
        p->tail_len -= drop;
    }
    memcpy(p->tail + p->tail_len, line, len);
    p->tail[p->tail_len + len] = '\n';
    p->tail_len += need;
}

static void on_stderr_line(const char *line, size_t len, void *arg)
{
    exec_proc_t *p = arg;
    wrk_stderrline_t l;
    wrk_stderrline_parse(line, len, &l);
    if (l.kind == WRK_LINE_OTHER) {
        tail_add(p, line, len);
        return;
    }
    cJSON *data = wrk_stderrline_to_json(&l);
    wrk_job_notify(p->job, l.kind == WRK_LINE_PROGRESS ? "progress" : "log", data);
    cJSON_Delete(data);
}

/* ---- interactive tools: the line protocol (docs/tools.md, "Asking the user") ---- */

/* Writes what p->in holds to the tool's stdin without blocking; watches EPOLLOUT while some
 * is left. A tool that closed its stdin (EPIPE) gets nothing more. */
static void in_flush(exec_proc_t *p)
{
    wrk_loop_t *loop = p->job->rt->loop;
    if (p->in_fd < 0)
        return;
    while (p->in_off < p->in.len) {
        ssize_t n = write(p->in_fd, p->in.data + p->in_off, p->in.len - p->in_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            wrk_loop_io_set(loop, p->in_io, EPOLLOUT);
            return;
        }
        if (n <= 0) {
            wrk_loop_io_close(loop, &p->in_io, &p->in_fd);
            return;
        }
        p->in_off += (size_t)n;
    }
    p->in.len = 0;
    p->in_off = 0;
    wrk_loop_io_set(loop, p->in_io, 0);
}

/* Queues one line of JSON (v, borrowed) for the tool's stdin. */
static void in_line(exec_proc_t *p, const cJSON *v)
{
    char *s = v ? cJSON_PrintUnformatted(v) : NULL;
    if (!s || util_buf_append(&p->in, s, strlen(s)) < 0 || util_buf_append(&p->in, "\n", 1) < 0)
        log_event(LOG_WARN, "exec: cannot write the answer to the tool's stdin", "job_id",
                  p->job->env.job_id, (char *)NULL);
    free(s);
    in_flush(p);
}

/* The answer of the tool's question (ask.h): its key's entry, as one line on stdin. */
static void on_answer(wrk_job_t *job, const cJSON *answers, void *arg)
{
    exec_proc_t *p = arg;
    (void)job;
    in_line(p, cJSON_GetObjectItemCaseSensitive(answers, p->ask_key));
}

/* An answer line the worker gives itself: {"error": {code, message}}. */
static void in_error(exec_proc_t *p, int code, const char *message)
{
    cJSON *e = wrk_ask_error_answer(code, message);
    in_line(p, e);
    cJSON_Delete(e);
}

/* A question line `input {"method", "params", "key"?}`: asked through ask.h, or answered
 * at once with an error when it cannot be asked. */
static void ask_line(exec_proc_t *p, const char *json, size_t len)
{
    wrk_job_t *job = p->job;
    char err[256] = "", key[WRK_ASK_KEY_MAX + 1];
    cJSON *q = cJSON_ParseWithLength(json, len);
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(q, "key");
    int ok = cJSON_IsObject(q) && (!k || cJSON_IsString(k));
    for (const cJSON *f = ok ? q->child : NULL; f; f = f->next)
        if (strcmp(f->string, "method") != 0 && strcmp(f->string, "params") != 0 &&
            strcmp(f->string, "key") != 0)
            ok = 0;
    if (!ok) {
        cJSON_Delete(q);
        in_error(p, -32602,
                 "an input line is `input ` and one JSON object {\"method\", \"params\", "
                 "\"key\"?}");
        return;
    }
    int long_key = k && strlen(k->valuestring) > WRK_ASK_KEY_MAX;
    if (k)
        snprintf(key, sizeof(key), "%s", k->valuestring);
    else
        snprintf(key, sizeof(key), "q%lld", job->ask_n + 1);
    cJSON_DeleteItemFromObjectCaseSensitive(q, "key");
    k = NULL;
    cJSON *reqs = cJSON_CreateObject();
    int rc = MCPQ_ENOMEM;
    if (reqs && long_key) {
        snprintf(err, sizeof(err), "request key must be 1 to 64 characters of [A-Za-z0-9_.-]");
        rc = MCPQ_EINVAL;
    } else if (reqs) {
        cJSON_AddItemToObject(reqs, key, q);
        q = NULL;
        rc = wrk_ask_open(job, reqs, on_answer, p, err, sizeof(err));
    }
    cJSON_Delete(q);
    cJSON_Delete(reqs);
    if (rc == 0) {
        snprintf(p->ask_key, sizeof(p->ask_key), "%s", key);
        return;
    }
    if (rc == MCPQ_EBUSY)
        in_error(p, -32600, "a question of this call is open: read its answer before asking again");
    else
        in_error(p, rc == MCPQ_ENOMEM ? -32603 : -32602, err[0] ? err : "out of memory");
}

/* One complete stdout line of an interactive tool (without its newline). */
static int stdout_line(exec_proc_t *p, const char *line, size_t len)
{
    size_t pl = sizeof(EXEC_INPUT_PREFIX) - 1;
    if (len >= pl && memcmp(line, EXEC_INPUT_PREFIX, pl) == 0) {
        if (p->pid_io) /* after the exit a question has nobody to answer */
            ask_line(p, line + pl, len - pl);
        return 0;
    }
    if (util_buf_append(&p->out, line, len) < 0 || util_buf_append(&p->out, "\n", 1) < 0)
        return -1;
    return 0;
}

/* Splits an interactive tool's stdout into lines: questions are taken out, the rest is its
 * result. -1 when the result passes MCPQ_MAX_OUTPUT_BYTES. */
static int stdout_lines(exec_proc_t *p, const char *buf, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(buf, '\n', n);
        size_t take = nl ? (size_t)(nl - buf) : n;
        if (util_buf_append(&p->line, buf, take) < 0)
            return -1;
        if (!nl)
            return 0;
        int rc = stdout_line(p, p->line.data ? p->line.data : "", p->line.len);
        p->line.len = 0;
        if (rc < 0)
            return -1;
        buf += take + 1;
        n -= take + 1;
    }
    return 0;
}

/* Reads what fd has now, up to max_reads chunks. Returns 1 at EOF or on a read error. */
static int read_some(exec_proc_t *p, int fd, int is_err, int max_reads)
{
    char buf[EXEC_READ_CHUNK];
    for (int i = 0; i < max_reads; i++) {
        ssize_t n = wrk_loop_read(fd, buf, sizeof(buf));
        if (n == 0)
            return 0;
        if (n < 0)
            return 1;
        if (is_err) {
            wrk_stderrline_buf_feed(&p->lines, buf, (size_t)n, on_stderr_line, p);
        } else if (p->interactive) {
            if (!p->too_big && stdout_lines(p, buf, (size_t)n) < 0) {
                p->too_big = 1;
                proc_signal(p, SIGKILL);
                return 1;
            }
        } else if (!p->too_big && util_buf_append(&p->out, buf, (size_t)n) < 0) {
            p->too_big = 1;
            proc_signal(p, SIGKILL);
            return 1;
        }
    }
    return 0;
}

static void on_stdout(wrk_loop_io_t *io, int fd, uint32_t events, void *arg)
{
    exec_proc_t *p = arg;
    (void)io;
    (void)events;
    if (read_some(p, fd, 0, EXEC_READS_PER_EVENT))
        wrk_loop_io_close(p->job->rt->loop, &p->out_io, &p->out_fd);
}

static void on_stderr(wrk_loop_io_t *io, int fd, uint32_t events, void *arg)
{
    exec_proc_t *p = arg;
    (void)io;
    (void)events;
    if (read_some(p, fd, 1, EXEC_READS_PER_EVENT)) {
        wrk_stderrline_buf_finish(&p->lines, on_stderr_line, p);
        wrk_loop_io_close(p->job->rt->loop, &p->err_io, &p->err_fd);
    }
}

static void on_stdin(wrk_loop_io_t *io, int fd, uint32_t events, void *arg)
{
    exec_proc_t *p = arg;
    wrk_job_t *job = p->job;
    (void)io;
    (void)events;
    if (p->interactive) {
        in_flush(p);
        return;
    }
    while (p->in_off < job->body_len) {
        ssize_t n = write(fd, job->body + p->in_off, job->body_len - p->in_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0)
            break; /* EPIPE: the tool does not read its stdin */
        p->in_off += (size_t)n;
    }
    wrk_loop_io_close(job->rt->loop, &p->in_io, &p->in_fd);
}

static void proc_free(exec_proc_t *p)
{
    wrk_loop_t *loop = p->job->rt->loop;
    wrk_ask_abandon(p->job); /* its answer would go to a tool that is gone */
    util_buf_cleanup(&p->in);
    util_buf_cleanup(&p->line);
    wrk_loop_timer_stop(loop, &p->kill_timer);
    wrk_loop_io_close(loop, &p->in_io, &p->in_fd);
    wrk_loop_io_close(loop, &p->out_io, &p->out_fd);
    wrk_loop_io_close(loop, &p->err_io, &p->err_fd);
    wrk_loop_io_close(loop, &p->pid_io, &p->pidfd);
    util_buf_cleanup(&p->out);
    free(p);
}

static cJSON *proc_result(exec_proc_t *p)
{
    if (p->interactive && !p->too_big && p->line.len > 0 &&
        util_buf_append(&p->out, p->line.data, p->line.len) < 0)
        p->too_big = 1; /* the last line, without its newline */
    if (p->too_big)
        return wrk_output_errorf("output too large: the tool printed more than %zu bytes",
                                 p->out.max);
    if (p->signo == 0 && p->exit_status == 0)
        return wrk_output_from_stdout(p->out.data, p->out.len);
    return wrk_output_from_failure(p->out.data, p->out.len, p->tail, p->tail_len, p->exit_status,
                                   p->signo);
}

static void on_exit_fd(wrk_loop_io_t *io, int fd, uint32_t events, void *arg)
{
    exec_proc_t *p = arg;
    wrk_job_t *job = p->job;
    (void)io;
    (void)events;
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    if (waitid(P_PIDFD, (id_t)fd, &si, WEXITED | WNOHANG) < 0) {
        log_event(LOG_ERROR, "waitid on the tool's pidfd failed", "job_id", job->env.job_id,
                  "error", strerror(errno), (char *)NULL);
        si.si_pid = p->pid;
        si.si_code = CLD_KILLED;
        si.si_status = SIGKILL;
    } else if (si.si_pid == 0) {
        return; /* not exited yet */
    }
    if (si.si_code == CLD_EXITED)
        p->exit_status = si.si_status;
    else
        p->signo = si.si_status;
    wrk_loop_io_close(job->rt->loop, &p->pid_io, &p->pidfd); /* exited: it asks no more */
    /* Whatever the child wrote before it exited is in the pipes now. */
    if (p->out_fd >= 0)
        read_some(p, p->out_fd, 0, (int)(p->out.max / EXEC_READ_CHUNK) + 2);
    if (p->err_fd >= 0) {
        read_some(p, p->err_fd, 1, EXEC_DRAIN_STDERR_MAX / EXEC_READ_CHUNK);
        wrk_stderrline_buf_finish(&p->lines, on_stderr_line, p);
    }
    if (job->cancel != WRK_CANCEL_NONE || p->too_big)
        proc_signal(p, SIGKILL); /* what is left of the group */
    cJSON *res = job->cancel == WRK_CANCEL_NONE ? proc_result(p) : NULL;
    proc_free(p);
    job->ex_state = NULL;
    wrk_job_finish(job, res);
}

static void on_kill_timer(wrk_loop_timer_t *t, void *arg)
{
    exec_proc_t *p = arg;
    (void)t;
    log_event(LOG_WARN, "tool ignored SIGTERM: sending SIGKILL", "job_id", p->job->env.job_id,
              (char *)NULL);
    proc_signal(p, SIGKILL);
}

void wrk_exec_strv_free(char **v)
{
    if (!v)
        return;
    for (size_t i = 0; v[i]; i++)
        free(v[i]);
    free(v);
}

static char *kv_join(const char *k, const char *v)
{
    size_t kl = strlen(k), vl = strlen(v);
    char *s = malloc(kl + vl + 2);
    if (!s)
        return NULL;
    memcpy(s, k, kl);
    s[kl] = '=';
    memcpy(s + kl + 1, v, vl + 1);
    return s;
}

/* The child's environment under construction: "K=V" strings, each name at most once. */
typedef struct exec_env {
    char **v; /* NULL-terminated, cap + 1 slots */
    size_t n, cap;
} exec_env_t;

/* Sets name=value, replacing an entry of that name. 0 or MCPQ_ENOMEM. */
static int env_put(exec_env_t *e, const char *name, const char *value)
{
    char *kv = kv_join(name, value);
    if (!kv)
        return MCPQ_ENOMEM;
    size_t nl = strlen(name);
    for (size_t i = 0; i < e->n; i++) {
        if (strncmp(e->v[i], name, nl) == 0 && e->v[i][nl] == '=') {
            free(e->v[i]);
            e->v[i] = kv;
            return 0;
        }
    }
    assert(e->n < e->cap);
    e->v[e->n++] = kv;
    return 0;
}

int wrk_exec_env_name_valid(const char *s)
{
    if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return 0;
    return 1;
}

/* The worker's variables every tool gets when they are set (none of them is a credential). */
static const char *const env_inherited[] = {"LANG", "LC_ALL", "LC_CTYPE", "TZ"};

/*
 * The child's environment (see exec.h), every string malloc'd; NULL with *why set when
 * executor.env or executor.env_pass is malformed (or NULL with *why NULL on ENOMEM). Later
 * steps win over earlier ones: the defaults, then the worker variables env_pass names, then
 * executor.env, then MCPQ_JOB_ID, TRACEPARENT and MCPQ_REQUEST_ID, which the worker owns.
 */
static char **build_env(const wrk_job_t *job, const char **why)
{
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(job->env.executor, "env");
    const cJSON *pass = cJSON_GetObjectItemCaseSensitive(job->env.executor, "env_pass");
    *why = NULL;
    if (cJSON_IsNull(env))
        env = NULL;
    if (cJSON_IsNull(pass))
        pass = NULL;
    if (env && !cJSON_IsObject(env)) {
        *why = "executor.env must be an object of strings";
        return NULL;
    }
    if (pass && (!cJSON_IsArray(pass) || cJSON_GetArraySize(pass) > WRK_EXEC_ENV_PASS_MAX)) {
        *why = "executor.env_pass must be an array of at most 64 variable names";
        return NULL;
    }
    size_t n = 0;
    for (const cJSON *it = env ? env->child : NULL; it; it = it->next, n++) {
        if (!cJSON_IsString(it) || !it->string[0] || strchr(it->string, '=')) {
            *why = "executor.env must be an object of strings with names without '='";
            return NULL;
        }
    }
    for (const cJSON *it = pass ? pass->child : NULL; it; it = it->next, n++) {
        if (!cJSON_IsString(it) || !wrk_exec_env_name_valid(it->valuestring) ||
            strncmp(it->valuestring, "MCPQ_", 5) == 0) {
            *why = "executor.env_pass must hold variable names ([A-Za-z_][A-Za-z0-9_]*), "
                   "none of them MCPQ_*";
            return NULL;
        }
    }
    /* PATH, TMPDIR, HOME, LANG, MCPQ_JOB_ID, TRACEPARENT, MCPQ_REQUEST_ID, the inherited ones. */
    exec_env_t e = {.cap = n + 7 + sizeof(env_inherited) / sizeof(env_inherited[0])};
    e.v = calloc(e.cap + 1, sizeof(*e.v));
    if (!e.v)
        return NULL;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || tmp[0] != '/')
        tmp = "/tmp";
    if (env_put(&e, "PATH", WRK_EXEC_DEFAULT_PATH) < 0 || env_put(&e, "TMPDIR", tmp) < 0 ||
        env_put(&e, "HOME", tmp) < 0 || env_put(&e, "LANG", "C.UTF-8") < 0)
        goto oom;
    for (size_t i = 0; i < sizeof(env_inherited) / sizeof(env_inherited[0]); i++) {
        const char *v = getenv(env_inherited[i]);
        if (v && env_put(&e, env_inherited[i], v) < 0)
            goto oom;
    }
    for (const cJSON *it = pass ? pass->child : NULL; it; it = it->next) {
        const char *v = getenv(it->valuestring);
        if (v && env_put(&e, it->valuestring, v) < 0)
            goto oom;
    }
    for (const cJSON *it = env ? env->child : NULL; it; it = it->next)
        if (env_put(&e, it->string, it->valuestring) < 0)
            goto oom;
    if (env_put(&e, "MCPQ_JOB_ID", job->env.job_id) < 0)
        goto oom;
    if (job->env.traceparent && env_put(&e, "TRACEPARENT", job->env.traceparent) < 0)
        goto oom;
    if (job->env.request_id && env_put(&e, "MCPQ_REQUEST_ID", job->env.request_id) < 0)
        goto oom;
    return e.v;
oom:
    wrk_exec_strv_free(e.v);
    return NULL;
}

/* executor.argv as a NULL-terminated vector borrowing the envelope's strings. */
static const char **build_argv(const wrk_job_t *job, const char **why)
{
    const cJSON *argv = cJSON_GetObjectItemCaseSensitive(job->env.executor, "argv");
    int n = cJSON_IsArray(argv) ? cJSON_GetArraySize(argv) : 0;
    *why = "executor.argv must be an array of 1 to 256 strings, the first one non-empty";
    if (n < 1 || n > WRK_EXEC_ARGV_MAX)
        return NULL;
    const char **v = calloc((size_t)n + 1, sizeof(*v));
    if (!v) {
        *why = NULL;
        return NULL;
    }
    int i = 0;
    for (const cJSON *it = argv->child; it; it = it->next) {
        if (!cJSON_IsString(it) || (i == 0 && !it->valuestring[0])) {
            free(v);
            return NULL;
        }
        v[i++] = it->valuestring;
    }
    *why = NULL;
    return v;
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int wrk_exec_spawn(const char *const *argv, char *const *envp, const char *cwd,
                   wrk_exec_child_t *child)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    int rc = 0;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
        set_nonblock(in[1]) < 0 || set_nonblock(out[0]) < 0 || set_nonblock(err[0]) < 0) {
        rc = errno;
        goto out;
    }
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    /* Sockets of libraries that do not set close-on-exec (hiredis, curl) stay ours. */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    if (cwd)
        posix_spawn_file_actions_addchdir_np(&fa, cwd);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    /* The worker blocks SIGTERM/SIGINT and ignores SIGPIPE; the tool gets the defaults. */
    int sigs[] = {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaddset(&defaults, sigs[i]);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &defaults);
    rc = posix_spawnp(&child->pid, argv[0], &fa, &at, (char *const *)argv, envp);
    if (rc != 0)
        goto out;
    child->in_fd = in[1];
    child->out_fd = out[0];
    child->err_fd = err[0];
    in[1] = out[0] = err[0] = -1;
out:
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    int fds[] = {in[0], in[1], out[0], out[1], err[0], err[1]};
    for (size_t i = 0; i < 6; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return rc;
}

/* Spawns the child of p with its pipes; 0 or an errno value. */
static int spawn_child(exec_proc_t *p, const char **argv, char **envp, const char *cwd)
{
    wrk_exec_child_t child = {.pid = -1, .in_fd = -1, .out_fd = -1, .err_fd = -1};
    int rc = wrk_exec_spawn(argv, envp, cwd, &child);
    if (rc == 0) {
        p->pid = child.pid;
        p->in_fd = child.in_fd;
        p->out_fd = child.out_fd;
        p->err_fd = child.err_fd;
    }
    return rc;
}

/* Watches the running child p of job (its exit, stdout and stderr) and writes what fits of
 * the envelope to its stdin now, watching stdin only for the rest. 0, or -1 when a watcher
 * cannot be made: the child is then killed, reaped and freed. */
static int watch_child(wrk_job_t *job, exec_proc_t *p)
{
    wrk_loop_t *loop = job->rt->loop;
    p->pid_io = wrk_loop_io_new(loop, p->pidfd, EPOLLIN, on_exit_fd, p);
    p->out_io = wrk_loop_io_new(loop, p->out_fd, EPOLLIN, on_stdout, p);
    p->err_io = wrk_loop_io_new(loop, p->err_fd, EPOLLIN, on_stderr, p);
    if (p->interactive) {
        /* The envelope as one line; stdin stays open for the answers (in_flush). */
        p->in_io = wrk_loop_io_new(loop, p->in_fd, 0, on_stdin, p);
        if (util_buf_append(&p->in, job->body, job->body_len) < 0 ||
            util_buf_append(&p->in, "\n", 1) < 0)
            wrk_loop_io_close(loop, &p->in_io, &p->in_fd);
        else if (p->in_io)
            in_flush(p);
        goto watched;
    }
    /* The envelope usually fits the pipe buffer: write it now and watch only for the rest. */
    while (p->in_off < job->body_len) {
        ssize_t n = write(p->in_fd, job->body + p->in_off, job->body_len - p->in_off);
        if (n <= 0)
            break;
        p->in_off += (size_t)n;
    }
    if (p->in_off < job->body_len && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        p->in_io = wrk_loop_io_new(loop, p->in_fd, EPOLLOUT, on_stdin, p);
    else
        wrk_loop_io_close(loop, &p->in_io, &p->in_fd);
watched:
    if (!p->pid_io || !p->out_io || !p->err_io || (p->in_fd >= 0 && !p->in_io)) {
        /* Without its watchers the child cannot be served: kill and reap it now. */
        proc_signal(p, SIGKILL);
        waitpid(p->pid, NULL, 0);
        proc_free(p);
        job->ex_state = NULL;
        return -1;
    }
    return 0;
}

static int exec_start(wrk_job_t *job)
{
    const char *why = NULL;
    const char **argv = build_argv(job, &why);
    if (!argv) {
        if (!why)
            return -1;
        wrk_job_finish(job, wrk_output_errorf("%s", why));
        return 0;
    }
    const cJSON *cwdj = cJSON_GetObjectItemCaseSensitive(job->env.executor, "cwd");
    const char *cwd = cJSON_IsString(cwdj) && cwdj->valuestring[0] ? cwdj->valuestring : NULL;
    char **envp = build_env(job, &why);
    if (!envp) {
        free(argv);
        if (!why)
            return -1;
        wrk_job_finish(job, wrk_output_errorf("%s", why));
        return 0;
    }
    exec_proc_t *p = calloc(1, sizeof(*p));
    if (!p) {
        free(argv);
        wrk_exec_strv_free(envp);
        return -1;
    }
    p->job = job;
    p->pidfd = p->in_fd = p->out_fd = p->err_fd = -1;
    util_buf_init(&p->out, (size_t)job->rt->settings->max_output_bytes);
    p->interactive =
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(job->env.executor, "interactive"));
    /* The envelope line, then one answer at a time (each at most MCPQ_INPUT_MAX_BYTES). */
    util_buf_init(&p->in, job->body_len + 2 * (size_t)job->rt->settings->input_max_bytes + 4096);
    util_buf_init(&p->line, (size_t)job->rt->settings->max_output_bytes);
    wrk_stderrline_buf_init(&p->lines);
    wrk_loop_timer_init(&p->kill_timer, on_kill_timer, p);
    int err = spawn_child(p, argv, envp, cwd);
    wrk_exec_strv_free(envp);
    if (err) {
        char detail[600];
        snprintf(detail, sizeof(detail), "cannot start \"%.200s\"%s%.200s: %s", argv[0],
                 cwd ? " in " : "", cwd ? cwd : "", strerror(err));
        cJSON *res = wrk_job_error_hidden(job, detail, "the tool could not be run");
        free(argv);
        free(p);
        wrk_job_finish(job, res);
        return 0;
    }
    free(argv);
    job->ex_state = p;
    p->pidfd = pidfd_open(p->pid, 0);
    if (p->pidfd < 0) {
        log_event(LOG_ERROR, "pidfd_open failed", "job_id", job->env.job_id, "error",
                  strerror(errno), (char *)NULL);
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        proc_free(p);
        job->ex_state = NULL;
        return -1;
    }
    return watch_child(job, p);
}

static void exec_cancel(wrk_job_t *job, wrk_cancel_t how)
{
    exec_proc_t *p = job->ex_state;
    if (!p)
        return;
    wrk_loop_io_close(job->rt->loop, &p->in_io, &p->in_fd);
    long long grace = job->rt->settings->kill_grace_ms;
    if (how == WRK_CANCEL_ABORT || grace <= 0) {
        proc_signal(p, SIGKILL);
        return;
    }
    proc_signal(p, SIGTERM);
    if (wrk_loop_timer_start(job->rt->loop, &p->kill_timer, grace) < 0)
        proc_signal(p, SIGKILL);
}

const wrk_executor_t wrk_exec_executor = {
    .type = "exec",
    .start = exec_start,
    .needs_body = 1,
    .cancel = exec_cancel,
};
