#include "fixture.h"

#include "names.h"
#include "sig.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FX_REDIS_WAIT_MS 10000
#define FX_BROKER_WAIT_MS 20000
#define FX_STOP_WAIT_MS 10000
#define FX_POLL_MS 20
#define FX_TAIL_BYTES 2048

static long long fx_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *fx_bin_dir(void)
{
    const char *d = getenv("MCPQ_BIN_DIR");
    return d && *d ? d : "./build";
}

/* The last FX_TAIL_BYTES of a log, on stderr, so a failed start says why. */
void fx_log_tail(const char *path)
{
    char buf[FX_TAIL_BYTES + 1];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "fixture: (no log %s: %s)\n", path, strerror(errno));
        return;
    }
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > FX_TAIL_BYTES ? end - FX_TAIL_BYTES : 0;
    ssize_t n = pread(fd, buf, FX_TAIL_BYTES, from);
    close(fd);
    if (n < 0)
        n = 0;
    buf[n] = '\0';
    fprintf(stderr, "fixture: --- tail of %s ---\n%s%s--- end ---\n", path, buf,
            n > 0 && buf[n - 1] != '\n' ? "\n" : "");
}

/* One free loopback port from the kernel (bind to port 0), or -1. */
static int kernel_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof(a);
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

int fx_free_port(void)
{
    /* The kernel may hand the same port to two binds in a row once the first socket is
     * closed: a test that takes several ports before using them would get one twice (a
     * "down" upstream that is in fact another server). Ports this process was given are
     * not given again. */
    static int given[256];
    static size_t ngiven;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    int port = -1;
    for (int attempt = 0; attempt < 100 && port < 0; attempt++) {
        int p = kernel_free_port();
        if (p < 0)
            break;
        int seen = 0;
        for (size_t i = 0; i < ngiven && i < sizeof(given) / sizeof(given[0]); i++)
            seen |= given[i] == p;
        if (!seen)
            port = p;
    }
    if (port > 0)
        given[ngiven++ % (sizeof(given) / sizeof(given[0]))] = port;
    pthread_mutex_unlock(&lock);
    return port;
}

/* The Debian package of program in scripts/programs.txt, into pkg ("?" when not listed). */
static void fx_program_package(const char *program, char *pkg, size_t size)
{
    char path[512], line[256], prog[128], name[128];
    snprintf(pkg, size, "?");
    snprintf(path, sizeof(path), "%s/scripts/programs.txt", MCPQ_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f))
        if (line[0] != '#' && sscanf(line, "%127s %127s", prog, name) == 2 &&
            strcmp(prog, program) == 0) {
            snprintf(pkg, size, "%s", name);
            break;
        }
    if (f)
        fclose(f);
}

int fx_need(const char *program)
{
    const char *path = getenv("PATH");
    char dir[1024], file[1200], pkg[128];
    while (path && *path) {
        size_t n = strcspn(path, ":");
        snprintf(dir, sizeof(dir), "%.*s", (int)(n < sizeof(dir) ? n : sizeof(dir) - 1), path);
        snprintf(file, sizeof(file), "%s/%s", n ? dir : ".", program);
        if (access(file, X_OK) == 0)
            return 0;
        path += n + (path[n] == ':');
    }
    fx_program_package(program, pkg, sizeof(pkg));
    fprintf(stderr, "fixture: needs %s (Debian package %s, installed by scripts/deps.sh)\n",
            program, pkg);
    return -1;
}

int fx_promtool_check(const char *text)
{
    int ci = getenv("CI") && strcmp(getenv("CI"), "true") == 0;
    if (fx_need("promtool") < 0) {
        if (ci)
            return -1;
        fprintf(stderr, "fixture: promtool check metrics skipped (no promtool)\n");
        return 0;
    }
    char path[] = "/tmp/mcpq-fx-metrics.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t n = write(fd, text + off, len - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    close(fd);
    char cmd[128], out[4096] = "";
    snprintf(cmd, sizeof(cmd), "promtool check metrics <%s 2>&1", path);
    FILE *p = off == len ? popen(cmd, "r") : NULL;
    size_t got = p ? fread(out, 1, sizeof(out) - 1, p) : 0;
    out[got] = '\0';
    int status = p ? pclose(p) : -1;
    unlink(path);
    if (status != 0 || got) {
        fprintf(stderr, "fixture: promtool check metrics (exit %d): %s\n", status, out);
        return -1;
    }
    return 0;
}

pid_t fx_spawn(const char *const argv[], const char *const extra_env[], const char *log_path)
{
    if (!argv || !argv[0] || !log_path) {
        fprintf(stderr, "fixture: fx_spawn: argv and log_path are required\n");
        return -1;
    }
    if (!strchr(argv[0], '/') && fx_need(argv[0]) < 0)
        return -1;
    int logfd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (logfd < 0) {
        fprintf(stderr, "fixture: cannot open %s: %s\n", log_path, strerror(errno));
        return -1;
    }
    fflush(NULL); /* no buffered output duplicated into the child */
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "fixture: fork: %s\n", strerror(errno));
        close(logfd);
        return -1;
    }
    if (pid == 0) {
        /* Child: only async-signal-safe work until exec, apart from setenv (we are the only
         * thread here, so its lock cannot be held by anyone). */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127); /* the test died before prctl */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0 && devnull != STDIN_FILENO) {
            dup2(devnull, STDIN_FILENO);
            close(devnull);
        }
        dup2(logfd, STDOUT_FILENO);
        dup2(logfd, STDERR_FILENO);
        for (int i = 0; extra_env && extra_env[i]; i++) {
            const char *eq = strchr(extra_env[i], '=');
            if (!eq || eq == extra_env[i])
                continue;
            char name[256];
            size_t n = (size_t)(eq - extra_env[i]);
            if (n >= sizeof(name))
                continue;
            memcpy(name, extra_env[i], n);
            name[n] = '\0';
            setenv(name, eq + 1, 1);
        }
        execvp(argv[0], (char *const *)argv);
        dprintf(STDERR_FILENO, "fixture: cannot exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid); /* also from the parent: no window where kill(-pid) misses it */
    close(logfd);
    return pid;
}

static int fx_status(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return -1;
}

int fx_wait_exit(pid_t pid, int timeout_ms)
{
    if (pid <= 0)
        return -1;
    long long end = fx_mono_ms() + timeout_ms;
    for (;;) {
        int st = 0;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return fx_status(st);
        if (r < 0 && errno != EINTR)
            return -1;
        if (fx_mono_ms() >= end)
            return -1;
        fx_sleep_ms(FX_POLL_MS);
    }
}

int fx_stop_pid(pid_t pid, int timeout_ms)
{
    if (pid <= 0)
        return -1;
    if (kill(-pid, SIGTERM) < 0)
        kill(pid, SIGTERM);
    int st = fx_wait_exit(pid, timeout_ms);
    if (st < 0) {
        fprintf(stderr, "fixture: pid %ld ignored SIGTERM for %d ms: SIGKILL\n", (long)pid,
                timeout_ms);
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        st = fx_wait_exit(pid, 5000);
    } else {
        kill(-pid, SIGKILL); /* whatever it left in its group */
    }
    return st;
}

int fx_wait_file(const char *path, int timeout_ms)
{
    long long end = fx_mono_ms() + timeout_ms;
    for (;;) {
        struct stat st;
        if (stat(path, &st) == 0 && st.st_size > 0)
            return 0;
        if (fx_mono_ms() >= end)
            return -1;
        fx_sleep_ms(FX_POLL_MS);
    }
}

/* 1 when Redis on port answers PING with PONG. */
static int fx_redis_ping(int port)
{
    struct timeval tv = {0, 500000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    int ok = 0;
    if (c && !c->err) {
        redisSetTimeout(c, tv);
        redisReply *r = redisCommand(c, "PING");
        ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
        if (r)
            freeReplyObject(r);
    }
    if (c)
        redisFree(c);
    return ok;
}

/* Exited already? Then reap it, report and return 1. */
static int fx_died(pid_t *pid, const char *what, const char *log)
{
    int st = 0;
    if (waitpid(*pid, &st, WNOHANG) != *pid)
        return 0;
    fprintf(stderr, "fixture: %s exited during start-up (status %d)\n", what, fx_status(st));
    fx_log_tail(log);
    *pid = 0;
    return 1;
}

int fx_acl_user(const char *password, char *out, size_t size)
{
    char path[512], line[4096];
    snprintf(path, sizeof(path), "%s/deploy/redis/mcpq.acl", MCPQ_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "fixture: cannot open %s\n", path);
        return -1;
    }
    int rc = -1;
    while (rc < 0 && fgets(line, sizeof(line), f)) {
        char *pw = strstr(line, ">CHANGE-ME ");
        if (strncmp(line, "user mcpq ", 10) != 0 || !pw)
            continue;
        line[strcspn(line, "\n")] = 0;
        *pw = 0;
        snprintf(out, size, "%s>%s %s", line, password, pw + 11);
        rc = 0;
    }
    fclose(f);
    if (rc < 0)
        fprintf(stderr, "fixture: no \"user mcpq ... >CHANGE-ME\" line in %s\n", path);
    return rc;
}

/* FX_REDIS_ACL=1: redis_url logs in as the restricted user of deploy/redis/mcpq.acl, while
 * the default user (what tests connect as to look inside) keeps every right. */
static int fx_acl_file(fx_stack_t *fx, char *path, size_t size)
{
    char rule[4096];
    if (fx_acl_user(FX_ACL_PASSWORD, rule, sizeof(rule)) < 0)
        return -1;
    snprintf(path, size, "%s/users.acl", fx->dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "user default on nopass ~* &* +@all\n%s\n", rule);
    fclose(f);
    return 0;
}

static int fx_redis_start(fx_stack_t *fx)
{
    char log[512], port_s[16], acl[512] = "";
    snprintf(log, sizeof(log), "%s/redis.log", fx->dir);
    const char *acl_env = getenv("FX_REDIS_ACL");
    int use_acl = acl_env && strcmp(acl_env, "1") == 0;
    if (use_acl && fx_acl_file(fx, acl, sizeof(acl)) < 0)
        return -1;
    /* The port is free when picked but may be taken before redis binds it: retry. */
    for (int attempt = 0; attempt < 3; attempt++) {
        int port = fx_free_port();
        if (port < 0) {
            fprintf(stderr, "fixture: no free port: %s\n", strerror(errno));
            return -1;
        }
        snprintf(port_s, sizeof(port_s), "%d", port);
        const char *argv[] = {
            "redis-server", "--port", port_s,  "--bind", "127.0.0.1",   "--save", "",
            "--appendonly", "no",     "--dir", fx->dir,  "--daemonize", "no",     "--loglevel",
            "warning",      NULL,     NULL,    NULL};
        if (use_acl) {
            argv[15] = "--aclfile";
            argv[16] = acl;
        }
        fx->redis_pid = fx_spawn(argv, NULL, log);
        if (fx->redis_pid < 0) {
            fx->redis_pid = 0;
            return -1;
        }
        long long end = fx_mono_ms() + FX_REDIS_WAIT_MS;
        while (fx_mono_ms() < end) {
            if (fx_redis_ping(port)) {
                fx->redis_port = port;
                snprintf(fx->redis_url, sizeof(fx->redis_url),
                         use_acl ? "redis://mcpq:" FX_ACL_PASSWORD "@127.0.0.1:%d/0"
                                 : "redis://127.0.0.1:%d/0",
                         port);
                return 0;
            }
            if (fx_died(&fx->redis_pid, "redis-server", log))
                break;
            fx_sleep_ms(FX_POLL_MS);
        }
        if (fx->redis_pid > 0) {
            fprintf(stderr, "fixture: redis-server on port %d did not answer PING in %d ms\n", port,
                    FX_REDIS_WAIT_MS);
            fx_log_tail(log);
            fx_stop_pid(fx->redis_pid, FX_STOP_WAIT_MS);
            fx->redis_pid = 0;
            return -1;
        }
    }
    return -1;
}

static int fx_broker_start(fx_stack_t *fx, int partitions)
{
    char log[512], ready[512], bin[1024], parts_env[64], ready_env[600];
    snprintf(log, sizeof(log), "%s/devbroker.log", fx->dir);
    snprintf(ready, sizeof(ready), "%s/devbroker.ready", fx->dir);
    snprintf(bin, sizeof(bin), "%s/mcpq-devbroker", fx_bin_dir());
    snprintf(parts_env, sizeof(parts_env), "MCPQ_PARTITIONS=%d", partitions);
    snprintf(ready_env, sizeof(ready_env), "MCPQ_READY_FILE=%s", ready);
    if (access(bin, X_OK) != 0) {
        fprintf(stderr, "fixture: %s is missing (set MCPQ_BIN_DIR to the build dir)\n", bin);
        return -1;
    }
    const char *argv[] = {bin, NULL};
    const char *env[] = {parts_env, ready_env, NULL};
    fx->broker_pid = fx_spawn(argv, env, log);
    if (fx->broker_pid < 0) {
        fx->broker_pid = 0;
        return -1;
    }
    long long end = fx_mono_ms() + FX_BROKER_WAIT_MS;
    while (fx_mono_ms() < end) {
        if (fx_wait_file(ready, 0) == 0) {
            FILE *f = fopen(ready, "r");
            if (f && fgets(fx->brokers, sizeof(fx->brokers), f)) {
                fx->brokers[strcspn(fx->brokers, "\r\n")] = '\0';
                fclose(f);
                if (fx->brokers[0])
                    return 0;
            } else if (f) {
                fclose(f);
            }
        }
        if (fx_died(&fx->broker_pid, "mcpq-devbroker", log))
            return -1;
        fx_sleep_ms(FX_POLL_MS);
    }
    fprintf(stderr, "fixture: mcpq-devbroker wrote no bootstrap address in %d ms\n",
            FX_BROKER_WAIT_MS);
    fx_log_tail(log);
    return -1;
}

static void fx_stop_keep(fx_stack_t *fx, int keep);

int fx_start(fx_stack_t *fx, int partitions)
{
    memset(fx, 0, sizeof(*fx));
    const char *tmp = getenv("TMPDIR");
    snprintf(fx->dir, sizeof(fx->dir), "%s/mcpq-fx-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fx->dir)) {
        fprintf(stderr, "fixture: mkdtemp %s: %s\n", fx->dir, strerror(errno));
        fx->dir[0] = '\0';
        return -1;
    }
    if (partitions < 1)
        partitions = 1;
    if (util_random_hex(fx->job_key, 32) < 0) {
        fprintf(stderr, "fixture: no randomness for the job signing key\n");
        return -1;
    }
    snprintf(fx->job_key_env, sizeof(fx->job_key_env), "MCPQ_JOB_SIGNING_KEY=%s", fx->job_key);
    if (fx_redis_start(fx) < 0 || fx_broker_start(fx, partitions) < 0) {
        fx_stop_keep(fx, 1); /* keep the logs of a failed start */
        return -1;
    }
    return 0;
}

static int fx_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    remove(path);
    return 0;
}

/* FX_REDIS_ACL=1: the number of ACL LOG entries (each printed), or 0. */
static int fx_acl_refusals(const fx_stack_t *fx)
{
    const char *acl_env = getenv("FX_REDIS_ACL");
    if (!acl_env || strcmp(acl_env, "1") != 0 || fx->redis_pid <= 0)
        return 0;
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", fx->redis_port, tv);
    redisReply *r = c && !c->err ? redisCommand(c, "ACL LOG") : NULL;
    int n = r && r->type == REDIS_REPLY_ARRAY ? (int)r->elements : 0;
    for (int i = 0; i < n; i++) {
        const redisReply *e = r->element[i];
        fprintf(stderr, "fixture: ACL LOG:");
        for (size_t k = 0; k + 1 < e->elements; k += 2)
            if (e->element[k + 1]->type == REDIS_REPLY_STRING)
                fprintf(stderr, " %s=%s", e->element[k]->str, e->element[k + 1]->str);
        fprintf(stderr, "\n");
    }
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return n;
}

static void fx_stop_keep(fx_stack_t *fx, int keep)
{
    int refusals = fx_acl_refusals(fx);
    if (fx->broker_pid > 0)
        fx_stop_pid(fx->broker_pid, FX_STOP_WAIT_MS);
    if (fx->redis_pid > 0)
        fx_stop_pid(fx->redis_pid, FX_STOP_WAIT_MS);
    fx->broker_pid = fx->redis_pid = 0;
    if (!fx->dir[0])
        return;
    if (keep)
        fprintf(stderr, "fixture: state kept in %s\n", fx->dir);
    else
        nftw(fx->dir, fx_rm_one, 16, FTW_DEPTH | FTW_PHYS);
    fx->dir[0] = '\0';
    if (refusals) {
        fprintf(stderr,
                "fixture: Redis refused %d command(s) of the restricted user "
                "(deploy/redis/mcpq.acl)\n",
                refusals);
        exit(1);
    }
}

void fx_stop(fx_stack_t *fx)
{
    const char *keep = getenv("FX_KEEP");
    fx_stop_keep(fx, keep && strcmp(keep, "1") == 0);
}

long long fx_now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

void fx_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

void fx_read_file(const char *path, char *out, size_t size)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(out, 1, size - 1, f);
        out[n] = '\0';
        fclose(f);
    }
}

void fx_write_file(const char *path, const char *content, int mode)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(content, f) < 0 || fclose(f) != 0 || chmod(path, (mode_t)mode) < 0) {
        fprintf(stderr, "fixture: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

int fx_alive(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* Starts an mcpq-ingress as fx_spawn_ingress() describes, its ready file path in ready. */
static pid_t ingress_start(const fx_stack_t *fx, const char *name, int port, const char *config,
                           const char *const extra_env[], char *log_out, size_t log_size,
                           char ready[300])
{
    char log[300], e_cfg[340], e_l[64], e_b[300], e_r[160], e_id[160], e_rf[340];
    snprintf(ready, 300, "%s/%s.ready", fx->dir, name);
    snprintf(log, sizeof(log), "%s/%s.log", fx->dir, name);
    snprintf(e_cfg, sizeof(e_cfg), "MCPQ_CONFIG=%s", config);
    snprintf(e_l, sizeof(e_l), "MCPQ_LISTEN=127.0.0.1:%d", port);
    snprintf(e_b, sizeof(e_b), "MCPQ_KAFKA_BROKERS=%s", fx->brokers);
    snprintf(e_r, sizeof(e_r), "MCPQ_REDIS_URL=%s", fx->redis_url);
    snprintf(e_id, sizeof(e_id), "MCPQ_INSTANCE_ID=%s", name);
    snprintf(e_rf, sizeof(e_rf), "MCPQ_READY_FILE=%s", ready);
    const char *env[32] = {e_cfg, e_l, e_b, e_r, e_id, e_rf, fx->job_key_env};
    size_t n = 7;
    for (size_t i = 0; extra_env && extra_env[i] && n < 31; i++)
        env[n++] = extra_env[i];
    env[n] = NULL;
    char bin[300];
    snprintf(bin, sizeof(bin), "%s/mcpq-ingress", fx_bin_dir());
    const char *argv[] = {bin, NULL};
    if (log_out)
        snprintf(log_out, log_size, "%s", log);
    return fx_spawn(argv, env, log);
}

pid_t fx_spawn_ingress(const fx_stack_t *fx, const char *name, int port, const char *config,
                       const char *const extra_env[], char *log_out, size_t log_size)
{
    char ready[300], log[300];
    pid_t pid = ingress_start(fx, name, port, config, extra_env, log, sizeof(log), ready);
    if (log_out)
        snprintf(log_out, log_size, "%s", log);
    if (pid < 0)
        return -1;
    if (fx_wait_file(ready, 20000) < 0) {
        fprintf(stderr, "fixture: ingress %s not ready in 20 s\n", name);
        fx_log_tail(log);
        fx_stop_pid(pid, 2000);
        return -1;
    }
    return pid;
}

int fx_ingress_exit(const fx_stack_t *fx, const char *name, const char *config,
                    const char *const extra_env[], char *text, size_t size, char *log_out,
                    size_t log_size)
{
    char ready[300], log[300];
    text[0] = '\0';
    pid_t pid = ingress_start(fx, name, 0, config, extra_env, log, sizeof(log), ready);
    if (log_out)
        snprintf(log_out, log_size, "%s", log);
    if (pid < 0)
        return -1;
    int status = fx_wait_exit(pid, 20000);
    fx_read_file(log, text, size);
    return status;
}

pid_t fx_spawn_worker(const fx_stack_t *fx, const char *name, const char *const extra_env[])
{
    return fx_spawn_worker_as(fx, name, extra_env, geteuid());
}

/* chown -R path to uid:uid; 0 or -1 (message on stderr). */
static int fx_chown_tree(const char *path, uid_t uid)
{
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "chown -R %u:%u '%s'", (unsigned)uid, (unsigned)uid, path);
    if (system(cmd) != 0) {
        fprintf(stderr, "fixture: %s failed\n", cmd);
        return -1;
    }
    return 0;
}

pid_t fx_spawn_worker_as(const fx_stack_t *fx, const char *name, const char *const extra_env[],
                         uid_t uid)
{
    char bin[300], ready[300], log[300], e_b[300], e_r[160], e_id[160], e_rf[340];
    char reuid[32], regid[32];
    snprintf(bin, sizeof(bin), "%s/mcpq-worker", fx_bin_dir());
    snprintf(ready, sizeof(ready), "%s/%s.ready", fx->dir, name);
    snprintf(log, sizeof(log), "%s/%s.log", fx->dir, name);
    unlink(ready);
    snprintf(e_b, sizeof(e_b), "MCPQ_KAFKA_BROKERS=%s", fx->brokers);
    snprintf(e_r, sizeof(e_r), "MCPQ_REDIS_URL=%s", fx->redis_url);
    snprintf(e_id, sizeof(e_id), "MCPQ_WORKER_ID=%s", name);
    snprintf(e_rf, sizeof(e_rf), "MCPQ_READY_FILE=%s", ready);
    const char *env[32] = {e_b, e_r, e_id, e_rf, fx->job_key_env};
    size_t n = 5;
    for (size_t i = 0; extra_env && extra_env[i] && n < 31; i++)
        env[n++] = extra_env[i];
    env[n] = NULL;
    const char *argv[] = {bin, NULL};
    const char *as_argv[] = {"setpriv",          reuid, regid, "--clear-groups",
                             "--pdeathsig=KILL", "--",  bin,   NULL};
    if (uid != geteuid()) {
        snprintf(reuid, sizeof(reuid), "--reuid=%u", (unsigned)uid);
        snprintf(regid, sizeof(regid), "--regid=%u", (unsigned)uid);
        if (fx_chown_tree(fx->dir, uid) < 0)
            return -1;
    }
    pid_t pid = fx_spawn(uid != geteuid() ? as_argv : argv, env, log);
    if (pid < 0)
        return -1;
    if (fx_wait_file(ready, 60000) < 0) {
        fprintf(stderr, "fixture: worker %s not ready in 60 s\n", name);
        fx_log_tail(log);
        fx_stop_pid(pid, 2000);
        return -1;
    }
    return pid;
}

static size_t fx_on_body(char *p, size_t size, size_t n, void *arg)
{
    fx_reply_t *r = arg;
    size_t k = size * n, room = sizeof(r->body) - 1 - r->len;
    memcpy(r->body + r->len, p, k < room ? k : room);
    r->len += k < room ? k : room;
    r->body[r->len] = '\0';
    return k;
}

/* The value of header line p (k bytes) when it is name's, into out. */
static void fx_header_value(const char *p, size_t k, const char *name, char *out, size_t size)
{
    size_t nl = strlen(name);
    if (k <= nl || strncasecmp(p, name, nl) != 0 || p[nl] != ':')
        return;
    size_t i = nl + 1, j = 0;
    while (i < k && p[i] == ' ')
        i++;
    while (i < k && p[i] != '\r' && p[i] != '\n' && j + 1 < size)
        out[j++] = p[i++];
    out[j] = '\0';
}

static size_t fx_on_header(char *p, size_t size, size_t n, void *arg)
{
    fx_reply_t *r = arg;
    size_t k = size * n;
    fx_header_value(p, k, "Retry-After", r->retry_after, sizeof(r->retry_after));
    fx_header_value(p, k, "Mcp-Session-Id", r->session_id, sizeof(r->session_id));
    fx_header_value(p, k, "X-Request-Id", r->request_id, sizeof(r->request_id));
    return k;
}

int fx_http_post(const char *url, const char *const headers[], const char *body, fx_reply_t *r)
{
    return fx_http_request("POST", url, headers, body, r);
}

int fx_http_request(const char *method, const char *url, const char *const headers[],
                    const char *body, fx_reply_t *r)
{
    memset(r, 0, sizeof(*r));
    struct curl_slist *hl = curl_slist_append(NULL, "Accept: application/json");
    if (body)
        hl = curl_slist_append(hl, "Content-Type: application/json");
    for (size_t i = 0; headers && headers[i]; i++)
        hl = curl_slist_append(hl, headers[i]);
    CURL *c = curl_easy_init();
    if (!c || !hl) {
        curl_slist_free_all(hl);
        return -1;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    if (strcmp(method, body ? "POST" : "GET") != 0)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fx_on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, fx_on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    long long t0 = fx_mono_ms();
    CURLcode rc = curl_easy_perform(c);
    r->ms = fx_mono_ms() - t0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    return rc == CURLE_OK ? 0 : -1;
}

static size_t fx_into_buf(char *p, size_t size, size_t n, void *arg)
{
    return util_buf_append(arg, p, size * n) < 0 ? 0 : size * n;
}

char *fx_http_text(const char *url)
{
    util_buf_t b;
    util_buf_init(&b, 8u << 20);
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    long status = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fx_into_buf);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 15000L);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK || status != 200 || util_buf_append(&b, "", 1) < 0) {
        util_buf_cleanup(&b);
        return NULL;
    }
    return b.data;
}

rd_kafka_t *fx_kafka_new(const fx_stack_t *fx, const char *group,
                         void (*dr_cb)(rd_kafka_t *, const rd_kafka_message_t *, void *))
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", fx->brokers, errstr, sizeof(errstr)) ||
        rd_kafka_conf_set(conf, group ? "group.id" : "linger.ms", group ? group : "0", errstr,
                          sizeof(errstr))) {
        fprintf(stderr, "fixture: Kafka client config: %s\n", errstr);
        exit(1);
    }
    if (dr_cb)
        rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
    rd_kafka_t *rk =
        rd_kafka_new(group ? RD_KAFKA_CONSUMER : RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) {
        fprintf(stderr, "fixture: Kafka client: %s\n", errstr);
        exit(1);
    }
    return rk; /* conf now owned by rk */
}

long long fx_committed(rd_kafka_t *reader, const char *topic, int32_t partition)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, partition);
    rd_kafka_resp_err_t err = rd_kafka_committed(reader, l, 5000);
    long long off = err ? -2 : l->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(l);
    return off;
}

int fx_log_line(const char *path, const char *a, const char *b, char *out, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[16384];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, a) && (!b || strstr(line, b));
    fclose(f);
    if (found && out)
        snprintf(out, size, "%s", line);
    return found;
}

int fx_log_count(const char *path, const char *a, const char *b)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[16384];
    int n = 0;
    while (fgets(line, sizeof(line), f))
        n += strstr(line, a) && (!b || strstr(line, b));
    fclose(f);
    return n;
}

/* ---- in-process HTTP servers ---- */

#define FX_MAX_SERVERS 8
static fx_server_fn fx_handlers[FX_MAX_SERVERS];
static int fx_nhandlers;

static enum MHD_Result fx_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                     const char *method, const char *version, const char *upload,
                                     size_t *upload_size, void **con_cls)
{
    (void)version;
    util_buf_t *b = *con_cls;
    if (!b) {
        b = calloc(1, sizeof(*b));
        if (!b)
            return MHD_NO;
        util_buf_init(b, (size_t)8 << 20);
        *con_cls = b;
        return MHD_YES;
    }
    if (*upload_size) {
        util_buf_append(b, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    return fx_handlers[(intptr_t)cls](conn, url, method, b);
}

static void fx_on_done(void *cls, struct MHD_Connection *conn, void **con_cls,
                       enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)conn, (void)toe;
    util_buf_t *b = *con_cls;
    if (b) {
        util_buf_cleanup(b);
        free(b);
    }
    *con_cls = NULL;
}

struct MHD_Daemon *fx_server_start(int port, fx_server_fn handler)
{
    intptr_t slot = -1;
    for (int i = 0; i < fx_nhandlers; i++)
        if (fx_handlers[i] == handler)
            slot = i;
    if (slot < 0) {
        if (fx_nhandlers == FX_MAX_SERVERS)
            return NULL;
        slot = fx_nhandlers;
        fx_handlers[fx_nhandlers++] = handler;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, fx_on_request, (void *)slot, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_NOTIFY_COMPLETED, fx_on_done, NULL, MHD_OPTION_END);
}

enum MHD_Result fx_server_reply(struct MHD_Connection *conn, int status, const char *ctype,
                                const char *body, const char *hname, const char *hvalue)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    if (hname)
        MHD_add_response_header(r, hname, hvalue);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

void fx_sign_headers(const char *app, const char *secret, const char *uri, const char *body,
                     char h[4][200])
{
    char ts[24], nonce[33], sig[65];
    snprintf(ts, sizeof(ts), "%lld", fx_now_ms() / 1000);
    if (util_random_hex(nonce, 12) < 0) {
        fprintf(stderr, "fixture: no randomness for a nonce\n");
        exit(1);
    }
    char *canonical = sig_canonical("POST", uri, ts, nonce, body, strlen(body));
    if (!canonical) {
        fprintf(stderr, "fixture: cannot build the canonical string\n");
        exit(1);
    }
    util_hmac_sha256_hex(secret, strlen(secret), canonical, strlen(canonical), sig);
    free(canonical);
    snprintf(h[0], 200, "X-App-Id: %s", app);
    snprintf(h[1], 200, "X-Timestamp: %s", ts);
    snprintf(h[2], 200, "X-Nonce: %s", nonce);
    snprintf(h[3], 200, "X-Signature: %s", sig);
}

void fx_es256_new(fx_es256_t *k, const char *kid)
{
    unsigned char pub[65];
    size_t n = 0;
    char x[UTIL_B64URL_LEN(32) + 1], y[UTIL_B64URL_LEN(32) + 1];
    k->pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    if (!k->pkey ||
        EVP_PKEY_get_octet_string_param(k->pkey, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub), &n) !=
            1 ||
        n != 65) {
        fprintf(stderr, "fixture: cannot make an EC P-256 key\n");
        exit(1);
    }
    snprintf(k->kid, sizeof(k->kid), "%s", kid);
    util_b64url_encode(pub + 1, 32, x);
    util_b64url_encode(pub + 33, 32, y);
    snprintf(k->jwk, sizeof(k->jwk),
             "{\"kty\":\"EC\",\"crv\":\"P-256\",\"use\":\"sig\",\"alg\":\"ES256\",\"kid\":\"%s\","
             "\"x\":\"%s\",\"y\":\"%s\"}",
             kid, x, y);
}

void fx_es256_free(fx_es256_t *k)
{
    EVP_PKEY_free(k->pkey);
    k->pkey = NULL;
}

char *fx_es256_jwt(const fx_es256_t *k, const char *payload)
{
    char header[128];
    snprintf(header, sizeof(header), "{\"alg\":\"ES256\",\"typ\":\"JWT\",\"kid\":\"%s\"}", k->kid);
    size_t size = UTIL_B64URL_LEN(strlen(header)) + UTIL_B64URL_LEN(strlen(payload)) +
                  UTIL_B64URL_LEN(64) + 4;
    char *tok = malloc(size);
    unsigned char der[128], rs[64];
    size_t dlen = sizeof(der);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!tok || !md)
        goto fail;
    util_b64url_encode((const unsigned char *)header, strlen(header), tok);
    size_t at = strlen(tok);
    tok[at++] = '.';
    util_b64url_encode((const unsigned char *)payload, strlen(payload), tok + at);
    if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k->pkey) != 1 ||
        EVP_DigestSign(md, der, &dlen, (const unsigned char *)tok, strlen(tok)) != 1)
        goto fail;
    const unsigned char *p = der;
    ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)dlen);
    int ok = sig && BN_bn2binpad(ECDSA_SIG_get0_r(sig), rs, 32) == 32 &&
             BN_bn2binpad(ECDSA_SIG_get0_s(sig), rs + 32, 32) == 32;
    ECDSA_SIG_free(sig);
    if (!ok)
        goto fail;
    at = strlen(tok);
    tok[at++] = '.';
    util_b64url_encode(rs, 64, tok + at);
    EVP_MD_CTX_free(md);
    return tok;
fail:
    fprintf(stderr, "fixture: cannot sign a test token\n");
    exit(1);
}

/* fx_node_upstream with a mode, the script's fourth argument (NULL: none). */
static pid_t node_upstream(const fx_stack_t *fx, const char *name, int port, const char *token,
                           const char *mode, const char *env_extra, char *deps, size_t size)
{
    const char *env = getenv("MCPQ_CLIENTS_DEPS");
    char probe[600], ready[400], portstr[16], depenv[700], script[200];
    snprintf(deps, size, "%s", env && *env ? env : "build/clients");
    snprintf(probe, sizeof(probe), "%s/node_modules/@modelcontextprotocol/sdk/package.json", deps);
    if (access(probe, R_OK) != 0 || system("node --version >/dev/null 2>&1") != 0) {
        const char *ci = getenv("CI");
        if (!ci || strcmp(ci, "true") != 0)
            return 0;
        fprintf(stderr,
                "fixture: the official SDK upstream cannot run in CI: no node or no npm packages "
                "in %s (scripts/test.sh installs them)\n",
                deps);
        return -1;
    }
    if (deps[0] != '/') {
        char *abs = realpath(deps, NULL);
        if (!abs) {
            fprintf(stderr, "fixture: %s: %s\n", deps, strerror(errno));
            return -1;
        }
        snprintf(deps, size, "%s", abs);
        free(abs);
    }
    snprintf(ready, sizeof(ready), "%s/%s.ready", fx->dir, name);
    snprintf(script, sizeof(script), "tests/clients/%s.mjs", name);
    snprintf(portstr, sizeof(portstr), "%d", port);
    snprintf(depenv, sizeof(depenv), "MCPQ_CLIENTS_DEPS=%s", deps);
    snprintf(probe, sizeof(probe), "%s/%s.log", fx->dir, name);
    const char *argv[] = {"node", "--import", "./tests/clients/lib/register.mjs",
                          script, portstr,    ready,
                          token,  mode,       NULL};
    const char *extra[] = {depenv, env_extra, NULL};
    unlink(ready); /* a restart waits for its own */
    pid_t pid = fx_spawn(argv, extra, probe);
    if (pid <= 0)
        return -1;
    if (fx_wait_file(ready, 30000) < 0) {
        fprintf(stderr, "fixture: %s did not start (see %s)\n", script, probe);
        fx_stop_pid(pid, 5000);
        return -1;
    }
    return pid;
}

pid_t fx_node_upstream(const fx_stack_t *fx, const char *name, int port, const char *token,
                       const char *env_extra, char *deps, size_t size)
{
    return node_upstream(fx, name, port, token, NULL, env_extra, deps, size);
}

pid_t fx_sdk_upstream(const fx_stack_t *fx, int port, const char *token, char *deps, size_t size)
{
    return node_upstream(fx, "sdk-upstream", port, token, NULL, NULL, deps, size);
}

pid_t fx_sdk_upstream_mode(const fx_stack_t *fx, int port, const char *token, const char *mode,
                           char *deps, size_t size)
{
    return node_upstream(fx, "sdk-upstream", port, token, mode, NULL, deps, size);
}

char *fx_job_record(const fx_stack_t *fx, const char *job_id, const char *tenant,
                    const char *method, const char *arguments, const char *executor)
{
    char key[256], envelope[8192];
    int timeout_ms = 30000;
    int n = snprintf(envelope, sizeof(envelope),
                     "{\"v\":1,\"job_id\":\"%s\",\"tenant\":\"%s\",\"server\":\"default\","
                     "\"tool\":\"fed\",\"tool_version\":\"1\",\"method\":\"%s\","
                     "\"arguments\":%s,\"executor\":%s,\"mode\":\"sync\",\"timeout_ms\":20000,"
                     "\"created_ms\":%lld}",
                     job_id, tenant, method, arguments ? arguments : "{}", executor, fx_now_ms());
    if (n < 0 || (size_t)n >= sizeof(envelope)) {
        fprintf(stderr, "fixture: job %s: envelope too long\n", job_id);
        return NULL;
    }
    rd_kafka_t *producer = fx_kafka_new(fx, NULL, NULL);
    if (!producer ||
        rd_kafka_producev(producer, RD_KAFKA_V_TOPIC("mcpq.jobs"),
                          RD_KAFKA_V_KEY(job_id, strlen(job_id)),
                          RD_KAFKA_V_VALUE((void *)envelope, strlen(envelope)),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_HEADER("job_id", job_id, -1), RD_KAFKA_V_END) != 0 ||
        rd_kafka_flush(producer, 10000) != 0) {
        fprintf(stderr, "fixture: cannot produce job %s\n", job_id);
        if (producer)
            rd_kafka_destroy(producer);
        return NULL;
    }
    rd_kafka_destroy(producer);
    redisContext *r = redisConnect("127.0.0.1", fx->redis_port);
    if (!r || r->err) {
        fprintf(stderr, "fixture: cannot reach redis for job %s\n", job_id);
        redisFree(r);
        return NULL;
    }
    snprintf(key, sizeof(key), NAMES_KEY_RESULT "%s", job_id);
    char *rec = NULL;
    for (long long end = fx_now_ms() + timeout_ms; !rec && fx_now_ms() < end;) {
        redisReply *rep = redisCommand(r, "GET %s", key);
        if (rep && rep->type == REDIS_REPLY_STRING)
            rec = strdup(rep->str);
        freeReplyObject(rep);
        if (!rec)
            fx_sleep_ms(50);
    }
    redisFree(r);
    if (!rec)
        fprintf(stderr, "fixture: no result record for job %s in %d ms\n", job_id, timeout_ms);
    return rec;
}

/* ---- fx_stream_t: a long-lived HTTP exchange read by a thread of its own ---- */

static size_t stream_data(char *p, size_t size, size_t n, void *arg)
{
    fx_stream_t *s = arg;
    size_t k = size * n;
    pthread_mutex_lock(&s->lock);
    size_t room = sizeof(s->buf) - 1 - s->len, c = k < room ? k : room;
    memcpy(s->buf + s->len, p, c);
    s->len += c;
    s->buf[s->len] = '\0';
    pthread_mutex_unlock(&s->lock);
    return k;
}

static size_t stream_header(char *p, size_t size, size_t n, void *arg)
{
    fx_stream_t *s = arg;
    size_t k = size * n;
    pthread_mutex_lock(&s->lock);
    if (k > 9 && strncmp(p, "HTTP/1.1 ", 9) == 0)
        s->status = strtol(p + 9, NULL, 10);
    if (k > 13 && strncasecmp(p, "Content-Type:", 13) == 0)
        snprintf(s->ctype, sizeof(s->ctype), "%.*s", (int)(k - 13), p + 13);
    fx_header_value(p, k, "X-Request-Id", s->request_id, sizeof(s->request_id));
    pthread_mutex_unlock(&s->lock);
    return k;
}

static int stream_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    return atomic_load(&((fx_stream_t *)arg)->stop); /* non-zero aborts the transfer */
}

static void *stream_thread(void *arg)
{
    fx_stream_t *s = arg;
    CURL *c = curl_easy_init();
    struct curl_slist *hl = NULL;
    for (int i = 0; s->headers[i]; i++)
        hl = curl_slist_append(hl, s->headers[i]);
    if (s->body[0])
        hl = curl_slist_append(hl, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, s->url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    if (s->body[0])
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, s->body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, stream_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, stream_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, s);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, stream_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, s);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 120000L);
    curl_easy_perform(c);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    atomic_store(&s->done, 1);
    return NULL;
}

void fx_stream_open(fx_stream_t *s, int port, const char *path, const char *body,
                    const char *const headers[])
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->lock, NULL);
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d%s", port, path);
    snprintf(s->body, sizeof(s->body), "%s", body ? body : "");
    for (int i = 0; headers[i] && i < 7; i++)
        s->headers[i] = headers[i];
    atomic_init(&s->stop, 0);
    atomic_init(&s->done, 0);
    if (pthread_create(&s->th, NULL, stream_thread, s) != 0) {
        fprintf(stderr, "fx_stream_open: cannot start a thread\n");
        exit(1);
    }
}

void fx_stream_close(fx_stream_t *s)
{
    atomic_store(&s->stop, 1);
    pthread_join(s->th, NULL);
    pthread_mutex_destroy(&s->lock);
}

int fx_stream_count(fx_stream_t *s, const char *needle)
{
    int n = 0;
    pthread_mutex_lock(&s->lock);
    for (const char *p = s->buf; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    pthread_mutex_unlock(&s->lock);
    return n;
}

int fx_stream_wait(fx_stream_t *s, const char *needle, int times, int ms)
{
    long long until = fx_now_ms() + ms;
    while (fx_stream_count(s, needle) < times) {
        if (fx_now_ms() >= until)
            return 0;
        fx_sleep_ms(10);
    }
    return 1;
}

int fx_stream_wait_done(fx_stream_t *s, int ms)
{
    long long until = fx_now_ms() + ms;
    while (!atomic_load(&s->done)) {
        if (fx_now_ms() >= until)
            return 0;
        fx_sleep_ms(10);
    }
    return 1;
}

void fx_stream_dump(fx_stream_t *s, const char *what)
{
    pthread_mutex_lock(&s->lock);
    fprintf(stderr, "--- %s (status %ld) ---\n%s\n--- end ---\n", what, s->status, s->buf);
    pthread_mutex_unlock(&s->lock);
}

cJSON *fx_result_wait(redisContext *c, const char *job_id, int timeout_ms)
{
    long long end = fx_now_ms() + timeout_ms;
    do {
        redisReply *r = redisCommand(c, "GET " NAMES_KEY_RESULT "%s", job_id);
        cJSON *rec = r && r->type == REDIS_REPLY_STRING ? cJSON_Parse(r->str) : NULL;
        if (r)
            freeReplyObject(r);
        if (rec)
            return rec;
        fx_sleep_ms(50);
    } while (fx_now_ms() < end);
    return NULL;
}
