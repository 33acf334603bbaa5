#include "control.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define CTL_CLIENTS 8
#define CTL_BROKERS_MAX 16 /* MCPQ_BROKERS' maximum (common/settings.c) */
#define CTL_ARGS_MAX 4
#define CTL_REPLY_MAX 512
#define CTL_ERRORS_MAX 1000 /* errors one command may queue */
#define CTL_RTT_MAX_MS 60000

typedef struct ctl_client {
    int fd; /* -1: a free slot */
    char buf[DB_CONTROL_LINE_MAX + 1];
    size_t len;
    int skipping; /* the line under way was too long and answered: drop it to its end */
} ctl_client_t;

struct db_control {
    rd_kafka_mock_cluster_t *mcluster;
    db_control_opts_t opts;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int lfd;
    int stop_pipe[2];
    pthread_t thread;
    /* What the channel did; only its thread touches these. */
    int down[CTL_BROKERS_MAX + 1];
    int rtt_ms[CTL_BROKERS_MAX + 1];
    ctl_client_t clients[CTL_CLIENTS];
};

/* Kafka request names and their ApiKey (Kafka protocol guide). */
static const struct {
    const char *name;
    int16_t key;
} ctl_apis[] = {
    {"Produce", 0},          {"Fetch", 1},           {"ListOffsets", 2},
    {"Metadata", 3},         {"OffsetCommit", 8},    {"OffsetFetch", 9},
    {"FindCoordinator", 10}, {"JoinGroup", 11},      {"Heartbeat", 12},
    {"LeaveGroup", 13},      {"SyncGroup", 14},      {"DescribeGroups", 15},
    {"ListGroups", 16},      {"ApiVersions", 18},    {"CreateTopics", 19},
    {"DeleteRecords", 21},   {"InitProducerId", 22}, {"AddPartitionsToTxn", 24},
    {"AddOffsetsToTxn", 25}, {"EndTxn", 26},         {"TxnOffsetCommit", 28},
};

static void say(char *reply, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(char *reply, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reply, size, fmt, ap);
    va_end(ap);
}

/* s, at most 40 bytes of it, with everything but printable ASCII as '?': safe to echo. */
static const char *shown(const char *s, char *out, size_t size)
{
    size_t i = 0;
    for (; s[i] && i < 40 && i + 1 < size; i++)
        out[i] = s[i] >= 0x20 && s[i] <= 0x7e ? s[i] : '?';
    out[i] = '\0';
    return out;
}

/* The ApiKey named name (any case), or -1. */
static int api_key(const char *name)
{
    for (size_t i = 0; i < sizeof(ctl_apis) / sizeof(ctl_apis[0]); i++)
        if (strcasecmp(ctl_apis[i].name, name) == 0)
            return ctl_apis[i].key;
    return -1;
}

/* The error librdkafka names name (rd_kafka_err2name, any case); 0 and *err set, or -1. */
static int err_code(const char *name, rd_kafka_resp_err_t *err)
{
    const struct rd_kafka_err_desc *descs;
    size_t n;
    rd_kafka_get_err_descs(&descs, &n);
    for (size_t i = 0; i < n; i++) {
        if (descs[i].name && strcasecmp(descs[i].name, name) == 0) {
            *err = descs[i].code;
            return 0;
        }
    }
    return -1;
}

/* A broker id of the cluster, or -1 for "all" when all_ok; 0 and *id set, or -1. */
static int broker_arg(const db_control_t *ctl, const char *s, int all_ok, int32_t *id)
{
    long long v;
    if (all_ok && strcmp(s, "all") == 0) {
        *id = -1;
        return 0;
    }
    if (util_parse_ll(s, 1, ctl->opts.brokers, &v) < 0)
        return -1;
    *id = (int32_t)v;
    return 0;
}

static void cmd_brokers(db_control_t *ctl, char **argv, char *reply, size_t size)
{
    (void)argv;
    size_t off = (size_t)snprintf(reply, size, "ok");
    for (int id = 1; id <= ctl->opts.brokers && off < size; id++) {
        off +=
            (size_t)snprintf(reply + off, size - off, " %d:%s", id, ctl->down[id] ? "down" : "up");
        if (ctl->rtt_ms[id] && off < size)
            off += (size_t)snprintf(reply + off, size - off, ":%dms", ctl->rtt_ms[id]);
    }
}

static void cmd_topics(db_control_t *ctl, char **argv, char *reply, size_t size)
{
    (void)argv;
    size_t off = (size_t)snprintf(reply, size, "ok");
    for (int i = 0; i < ctl->opts.ntopics && off < size; i++)
        off += (size_t)snprintf(reply + off, size - off, " %s:%d", ctl->opts.topics[i],
                                ctl->opts.partitions);
}

/* down and up: argv[0] says which. */
static void cmd_updown(db_control_t *ctl, char **argv, char *reply, size_t size)
{
    int32_t id;
    char b[48];
    if (broker_arg(ctl, argv[1], 1, &id) < 0) {
        say(reply, size, "error no broker '%s' (1..%d or all)", shown(argv[1], b, sizeof(b)),
            ctl->opts.brokers);
        return;
    }
    int down = strcmp(argv[0], "down") == 0;
    rd_kafka_resp_err_t err = down ? rd_kafka_mock_broker_set_down(ctl->mcluster, id)
                                   : rd_kafka_mock_broker_set_up(ctl->mcluster, id);
    if (err) {
        say(reply, size, "error %s", rd_kafka_err2name(err));
        return;
    }
    for (int i = 1; i <= ctl->opts.brokers; i++)
        if (id == -1 || id == i)
            ctl->down[i] = down;
    say(reply, size, "ok broker %s %s", argv[1], argv[0]);
}

static void cmd_leader(db_control_t *ctl, char **argv, char *reply, size_t size)
{
    char b[48];
    int t = 0;
    while (t < ctl->opts.ntopics && strcmp(ctl->opts.topics[t], argv[1]) != 0)
        t++;
    if (t == ctl->opts.ntopics) {
        say(reply, size, "error unknown topic '%s' (see topics)", shown(argv[1], b, sizeof(b)));
        return;
    }
    long long part;
    if (util_parse_ll(argv[2], 0, ctl->opts.partitions - 1, &part) < 0) {
        say(reply, size, "error no partition '%s' (0..%d)", shown(argv[2], b, sizeof(b)),
            ctl->opts.partitions - 1);
        return;
    }
    int32_t id;
    if (broker_arg(ctl, argv[3], 0, &id) < 0) {
        say(reply, size, "error no broker '%s' (1..%d)", shown(argv[3], b, sizeof(b)),
            ctl->opts.brokers);
        return;
    }
    rd_kafka_resp_err_t err =
        rd_kafka_mock_partition_set_leader(ctl->mcluster, argv[1], (int32_t)part, id);
    if (err)
        say(reply, size, "error %s", rd_kafka_err2name(err));
    else
        say(reply, size, "ok leader %s %lld %d", argv[1], part, (int)id);
}

/* The API key named by name, or -1 with the error in reply. */
static int api_arg(const char *name, char *reply, size_t size)
{
    char b[48];
    int key = api_key(name);
    if (key < 0)
        say(reply, size, "error unknown api '%s'", shown(name, b, sizeof(b)));
    return key;
}

static void cmd_errors(db_control_t *ctl, char **argv, char *reply, size_t size)
{
    char b[48];
    int key = api_arg(argv[1], reply, size);
    if (key < 0)
        return;
    long long cnt;
    if (util_parse_ll(argv[2], 1, CTL_ERRORS_MAX, &cnt) < 0) {
        say(reply, size, "error bad count '%s' (1..%d)", shown(argv[2], b, sizeof(b)),
            CTL_ERRORS_MAX);
        return;
    }
    rd_kafka_resp_err_t err;
    if (err_code(argv[3], &err) < 0) {
        say(reply, size,
            "error unknown error '%s' (librdkafka's names, e.g. "
            "NOT_LEADER_FOR_PARTITION)",
            shown(argv[3], b, sizeof(b)));
        return;
    }
    rd_kafka_resp_err_t errs[CTL_ERRORS_MAX];
    for (long long i = 0; i < cnt; i++)
        errs[i] = err;
    rd_kafka_mock_push_request_errors_array(ctl->mcluster, (int16_t)key, (size_t)cnt, errs);
    say(reply, size, "ok %lld %s queued for %s", cnt, rd_kafka_err2name(err), argv[1]);
}

static void cmd_rtt(db_control_t *ctl, char **argv, char *reply, size_t size)
{
    char b[48];
    int32_t id;
    long long ms;
    if (broker_arg(ctl, argv[1], 1, &id) < 0) {
        say(reply, size, "error no broker '%s' (1..%d or all)", shown(argv[1], b, sizeof(b)),
            ctl->opts.brokers);
        return;
    }
    if (util_parse_ll(argv[2], 0, CTL_RTT_MAX_MS, &ms) < 0) {
        say(reply, size, "error bad milliseconds '%s' (0..%d)", shown(argv[2], b, sizeof(b)),
            CTL_RTT_MAX_MS);
        return;
    }
    rd_kafka_resp_err_t err = rd_kafka_mock_broker_set_rtt(ctl->mcluster, id, (int)ms);
    if (err) {
        say(reply, size, "error %s", rd_kafka_err2name(err));
        return;
    }
    for (int i = 1; i <= ctl->opts.brokers; i++)
        if (id == -1 || id == i)
            ctl->rtt_ms[i] = (int)ms;
    say(reply, size, "ok rtt %s %lldms", argv[1], ms);
}

static void cmd_clear(db_control_t *ctl, char **argv, char *reply, size_t size)
{
    int key = api_arg(argv[1], reply, size);
    if (key < 0)
        return;
    rd_kafka_mock_clear_request_errors(ctl->mcluster, (int16_t)key);
    say(reply, size, "ok cleared %s", argv[1]);
}

static void cmd_help(db_control_t *ctl, char **argv, char *reply, size_t size);

static const struct {
    const char *name;
    int argc; /* with the command's name */
    void (*run)(db_control_t *ctl, char **argv, char *reply, size_t size);
    const char *usage;
} ctl_cmds[] = {
    {"brokers", 1, cmd_brokers, "brokers"},
    {"topics", 1, cmd_topics, "topics"},
    {"down", 2, cmd_updown, "down <id|all>"},
    {"up", 2, cmd_updown, "up <id|all>"},
    {"leader", 4, cmd_leader, "leader <topic> <partition> <id>"},
    {"errors", 4, cmd_errors, "errors <api> <count> <error>"},
    {"rtt", 3, cmd_rtt, "rtt <id|all> <ms>"},
    {"clear", 2, cmd_clear, "clear <api>"},
    {"help", 1, cmd_help, "help"},
};
#define CTL_NCMDS (sizeof(ctl_cmds) / sizeof(ctl_cmds[0]))

static void cmd_help(db_control_t *ctl, char **argv, char *reply, size_t size)
{
    (void)ctl;
    (void)argv;
    size_t off = (size_t)snprintf(reply, size, "ok");
    for (size_t i = 0; i < CTL_NCMDS && off < size; i++)
        off += (size_t)snprintf(reply + off, size - off, "%s%s", i ? "; " : " ", ctl_cmds[i].usage);
}

/* Runs the command line (len bytes, no newline; may hold anything) and writes the answer,
 * without its newline, into reply. */
static void ctl_exec(db_control_t *ctl, const char *line, size_t len, char *reply, size_t size)
{
    char buf[DB_CONTROL_LINE_MAX + 1], b[48];
    char *argv[CTL_ARGS_MAX + 1];
    int argc = 0;
    if (memchr(line, '\0', len)) {
        say(reply, size, "error NUL byte in the line");
        return;
    }
    memcpy(buf, line, len);
    buf[len] = '\0';
    for (char *save = NULL, *tok = strtok_r(buf, " \t\r", &save); tok;
         tok = strtok_r(NULL, " \t\r", &save)) {
        if (argc == CTL_ARGS_MAX + 1) {
            say(reply, size, "error too many arguments");
            return;
        }
        argv[argc++] = tok;
    }
    if (argc == 0) {
        say(reply, size, "error empty line (try help)");
        return;
    }
    for (size_t i = 0; i < CTL_NCMDS; i++) {
        if (strcmp(ctl_cmds[i].name, argv[0]) != 0)
            continue;
        if (argc != ctl_cmds[i].argc)
            say(reply, size, "error usage: %s", ctl_cmds[i].usage);
        else
            ctl_cmds[i].run(ctl, argv, reply, size);
        return;
    }
    say(reply, size, "error unknown command '%s' (try help)", shown(argv[0], b, sizeof(b)));
}

/* Sends the answer line; -1 when the client does not take it at once (it does not read). */
static int ctl_answer(ctl_client_t *cl, const char *reply)
{
    char out[CTL_REPLY_MAX + 1];
    int n = snprintf(out, sizeof(out), "%s\n", reply);
    if (n < 0 || (size_t)n >= sizeof(out)) {
        n = (int)sizeof(out) - 1;
        out[n - 1] = '\n';
    }
    ssize_t w = send(cl->fd, out, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    return w == n ? 0 : -1;
}

/* One complete line of the client: answered, logged. -1 when the client must go. */
static int ctl_line(db_control_t *ctl, ctl_client_t *cl)
{
    char reply[CTL_REPLY_MAX], shown_line[48];
    if (cl->skipping) { /* answered when it grew too long */
        cl->skipping = 0;
        cl->len = 0;
        return 0;
    }
    ctl_exec(ctl, cl->buf, cl->len, reply, sizeof(reply));
    cl->buf[cl->len] = '\0';
    log_msgf(strncmp(reply, "ok", 2) == 0 ? LOG_INFO : LOG_WARN, "control: %s -> %s",
             shown(cl->buf, shown_line, sizeof(shown_line)), reply);
    cl->len = 0;
    return ctl_answer(cl, reply);
}

/* Reads what the client sent and runs its complete lines. -1 when it must be closed. */
static int ctl_read(db_control_t *ctl, ctl_client_t *cl)
{
    char in[1024];
    ssize_t n = recv(cl->fd, in, sizeof(in), MSG_DONTWAIT);
    if (n == 0)
        return -1;
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    for (ssize_t i = 0; i < n; i++) {
        if (in[i] == '\n') {
            if (ctl_line(ctl, cl) < 0)
                return -1;
        } else if (cl->skipping) {
            continue;
        } else if (cl->len == DB_CONTROL_LINE_MAX) {
            cl->skipping = 1;
            cl->len = 0;
            char reply[96];
            say(reply, sizeof(reply), "error line longer than %d bytes", DB_CONTROL_LINE_MAX);
            log_msgf(LOG_WARN, "control: %s", reply);
            if (ctl_answer(cl, reply) < 0)
                return -1;
        } else {
            cl->buf[cl->len++] = in[i];
        }
    }
    return 0;
}

static void ctl_accept(db_control_t *ctl)
{
    int fd = accept4(ctl->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    for (int i = 0; i < CTL_CLIENTS; i++) {
        if (ctl->clients[i].fd < 0) {
            ctl->clients[i] = (ctl_client_t){.fd = fd};
            return;
        }
    }
    static const char busy[] = "error too many connections\n";
    (void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    close(fd);
}

static void *ctl_thread(void *arg)
{
    db_control_t *ctl = arg;
    for (;;) {
        struct pollfd p[2 + CTL_CLIENTS];
        p[0] = (struct pollfd){.fd = ctl->stop_pipe[0], .events = POLLIN};
        p[1] = (struct pollfd){.fd = ctl->lfd, .events = POLLIN};
        for (int i = 0; i < CTL_CLIENTS; i++)
            p[2 + i] = (struct pollfd){.fd = ctl->clients[i].fd, .events = POLLIN};
        if (poll(p, 2 + CTL_CLIENTS, -1) < 0) {
            if (errno == EINTR)
                continue;
            log_msgf(LOG_ERROR, "control: poll: %s", strerror(errno));
            break;
        }
        if (p[0].revents)
            break;
        for (int i = 0; i < CTL_CLIENTS; i++) {
            ctl_client_t *cl = &ctl->clients[i];
            if (cl->fd >= 0 && p[2 + i].revents && ctl_read(ctl, cl) < 0) {
                close(cl->fd);
                cl->fd = -1;
            }
        }
        if (p[1].revents & POLLIN)
            ctl_accept(ctl);
    }
    return NULL;
}

/* Makes the path free for a new socket: nothing there, or a socket nobody listens on
 * (a devbroker killed before it could remove it), which is removed. 0 or -1 (errstr). */
static int ctl_path_free(const char *path, char *errstr, size_t errstr_size)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        say(errstr, errstr_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISSOCK(st.st_mode)) {
        say(errstr, errstr_size, "%s exists and is not a socket", path);
        return -1;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int live = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    if (fd >= 0)
        close(fd);
    if (live) {
        say(errstr, errstr_size, "%s: another process listens there", path);
        return -1;
    }
    if (unlink(path) < 0 && errno != ENOENT) {
        say(errstr, errstr_size, "cannot remove the stale socket %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* The listening socket at path, 0600; -1 with errstr. */
static int ctl_listen(const char *path, char *errstr, size_t errstr_size)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        say(errstr, errstr_size, "MCPQ_DEVBROKER_CONTROL: path longer than %zu bytes",
            sizeof(sa.sun_path) - 1);
        return -1;
    }
    if (ctl_path_free(path, errstr, errstr_size) < 0)
        return -1;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        say(errstr, errstr_size, "socket: %s", strerror(errno));
        return -1;
    }
    /* Nobody can connect before listen(2), so the mode is right before anyone can use it. */
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        say(errstr, errstr_size, "bind %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (chmod(path, 0600) < 0 || listen(fd, CTL_CLIENTS) < 0) {
        say(errstr, errstr_size, "%s: %s", path, strerror(errno));
        close(fd);
        unlink(path);
        return -1;
    }
    return fd;
}

db_control_t *db_control_start(rd_kafka_mock_cluster_t *mcluster, const db_control_opts_t *opts,
                               char *errstr, size_t errstr_size)
{
    if (opts->brokers < 1 || opts->brokers > CTL_BROKERS_MAX) {
        say(errstr, errstr_size, "control: %d brokers (1..%d)", opts->brokers, CTL_BROKERS_MAX);
        return NULL;
    }
    db_control_t *ctl = calloc(1, sizeof(*ctl));
    if (!ctl) {
        say(errstr, errstr_size, "out of memory");
        return NULL;
    }
    ctl->mcluster = mcluster;
    ctl->opts = *opts;
    ctl->stop_pipe[0] = ctl->stop_pipe[1] = -1;
    for (int i = 0; i < CTL_CLIENTS; i++)
        ctl->clients[i].fd = -1;
    snprintf(ctl->path, sizeof(ctl->path), "%s", opts->path);
    ctl->lfd = ctl_listen(opts->path, errstr, errstr_size);
    if (ctl->lfd < 0)
        goto fail;
    if (pipe2(ctl->stop_pipe, O_CLOEXEC) < 0) {
        say(errstr, errstr_size, "pipe: %s", strerror(errno));
        goto fail;
    }
    int err = pthread_create(&ctl->thread, NULL, ctl_thread, ctl);
    if (err) {
        say(errstr, errstr_size, "pthread_create: %s", strerror(err));
        goto fail;
    }
    return ctl;
fail:
    if (ctl->lfd >= 0) {
        close(ctl->lfd);
        unlink(ctl->path);
    }
    if (ctl->stop_pipe[0] >= 0) {
        close(ctl->stop_pipe[0]);
        close(ctl->stop_pipe[1]);
    }
    free(ctl);
    return NULL;
}

void db_control_stop(db_control_t *ctl)
{
    if (!ctl)
        return;
    (void)!write(ctl->stop_pipe[1], "x", 1);
    pthread_join(ctl->thread, NULL);
    for (int i = 0; i < CTL_CLIENTS; i++)
        if (ctl->clients[i].fd >= 0)
            close(ctl->clients[i].fd);
    close(ctl->lfd);
    unlink(ctl->path);
    close(ctl->stop_pipe[0]);
    close(ctl->stop_pipe[1]);
    free(ctl);
}
