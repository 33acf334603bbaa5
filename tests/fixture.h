/*
 * fixture.h - the stack an integration test runs against: a real redis-server and a real
 * Kafka-protocol broker (mcpq-devbroker, librdkafka's mock cluster), both on random
 * 127.0.0.1 ports, with their state and logs in a fresh temporary directory.
 *
 *     fx_stack_t fx;
 *     if (fx_start(&fx, 6) < 0)
 *         return 1;
 *     ... fx.redis_url, fx.brokers; fx_spawn() an mcpq-worker with MCPQ_KAFKA_BROKERS ...
 *     fx_stop(&fx);
 *
 * Binaries come from $MCPQ_BIN_DIR (ctest sets it to the build dir; default ./build).
 * FX_KEEP=1 keeps the state dir (redis.log, devbroker.log, whatever the test spawned there)
 * after fx_stop() and prints where it is.
 *
 * Every process fx_spawn() starts gets its own process group and is killed (SIGKILL) when
 * the thread that spawned it exits (PR_SET_PDEATHSIG), so a test that crashes or is killed
 * by ctest leaves nothing behind: call fx_start() and fx_spawn() from the test's main thread.
 * None of these functions is thread-safe.
 */
#ifndef MCPQ_TESTS_FIXTURE_H
#define MCPQ_TESTS_FIXTURE_H

#include "util.h"

#include <librdkafka/rdkafka.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

typedef struct fx_stack {
    char dir[256];       /* the state dir (mkdtemp) */
    char redis_url[128]; /* redis://127.0.0.1:<port>/0 */
    char brokers[256];   /* the devbroker's bootstrap servers host:port[,...] */
    pid_t redis_pid, broker_pid;
    int redis_port;
    /* The stack's job signing key (64 random hex digits, drawn by fx_start) and its
     * "MCPQ_JOB_SIGNING_KEY=<key>" setting, which fx_spawn_ingress and fx_spawn_worker give
     * every ingress and worker (extra_env may override it). A test that produces job records
     * itself signs them with it (jobsig.h) or starts its workers without it. */
    char job_key[65];
    char job_key_env[96];
} fx_stack_t;

/*
 * Makes the state dir, starts redis-server (no RDB, no AOF, log in <dir>/redis.log) and
 * mcpq-devbroker with that many partitions (log in <dir>/devbroker.log), and waits until
 * Redis answers PING and the broker has written its bootstrap address (at most ~20 s).
 * Returns 0, or -1 with a message (and the tail of the failing log) on stderr; on failure
 * everything it started is stopped again.
 */
int fx_start(fx_stack_t *fx, int partitions);

/* The password of the restricted user when FX_REDIS_ACL=1 (see fx_acl_user). */
#define FX_ACL_PASSWORD "fx-acl-password"

/*
 * The "user mcpq ..." rule of deploy/redis/mcpq.acl with its CHANGE-ME placeholder replaced
 * by password, into out. 0, or -1 (message on stderr). With FX_REDIS_ACL=1 in the
 * environment, fx_start() starts Redis with that user and puts it in fx.redis_url (the
 * default user keeps every right, for tests that look inside), so any test can run as the
 * least-privileged user; fx_stop() then fails the test when Redis's ACL LOG has an entry.
 */
int fx_acl_user(const char *password, char *out, size_t size);

/* SIGTERM to both (then SIGKILL after 10 s), waits, removes the dir unless FX_KEEP=1.
 * Safe to call twice and on a zeroed fx. */
void fx_stop(fx_stack_t *fx);

/*
 * 0 when program is an executable on PATH; otherwise -1 and, on stderr, "needs <program>
 * (Debian package <package>, installed by scripts/deps.sh)" with its package from
 * scripts/programs.txt: a test whose program is missing fails at once, never after a wait.
 */
int fx_need(const char *program);

/*
 * Runs `promtool check metrics` on text (a whole /metrics body): 0 when promtool accepts it
 * with no lint output at all, else -1 with promtool's output on stderr. Without promtool:
 * -1 (fx_need's message) under CI=true, else 0 with a note on stderr.
 */
int fx_promtool_check(const char *text);

/*
 * fork+exec argv (argv[0] is looked up in PATH when it has no '/'; when it is not there,
 * fx_need's message and -1 at once) with the current
 * environment plus extra_env ("K=V" strings, NULL-terminated; may be NULL), stdin from
 * /dev/null, stdout and stderr appended to log_path (created if missing). The child leads its
 * own process group. Returns the pid, or -1 with a message on stderr. An exec failure
 * shows up as exit status 127 with the reason in the log.
 */
pid_t fx_spawn(const char *const argv[], const char *const extra_env[], const char *log_path);

/*
 * Sends SIGTERM to pid's process group, waits up to timeout_ms, then SIGKILLs the group and
 * reaps pid. Returns the exit status (0..255), 128+signal when it died of a signal, or -1.
 */
int fx_stop_pid(pid_t pid, int timeout_ms);

/* Waits up to timeout_ms for pid to exit; the exit status as fx_stop_pid(), or -1 when it
 * is still running (or is not our child). */
int fx_wait_exit(pid_t pid, int timeout_ms);

/* A TCP port that was free on 127.0.0.1 a moment ago (the kernel's pick), never one this
 * process was given before, or -1. */
int fx_free_port(void);

/* The binary dir: $MCPQ_BIN_DIR, or "./build". */
const char *fx_bin_dir(void);

/* Wall clock in milliseconds; sleeps ms milliseconds (EINTR resumes). */
long long fx_now_ms(void);
void fx_sleep_ms(int ms);

/* Writes content to path with that mode (chmod); on failure prints why and exits the test. */
void fx_write_file(const char *path, const char *content, int mode);

/* The start of the file at path in out (size bytes, NUL-terminated; "" when unreadable). */
void fx_read_file(const char *path, char *out, size_t size);

/* 1 while pid exists and is neither a zombie nor dead (/proc/<pid>/stat). */
int fx_alive(pid_t pid);

/* The result record of job_id ({mcpq}:result:<job_id>) read through c, polled every 50 ms up
 * to timeout_ms: the parsed record (caller frees), or NULL when none came (or it is not
 * JSON). */
struct redisContext;
struct cJSON;
struct cJSON *fx_result_wait(struct redisContext *c, const char *job_id, int timeout_ms);

/* Waits up to timeout_ms for path to exist and be non-empty: 0 or -1. */
int fx_wait_file(const char *path, int timeout_ms);

/*
 * Starts an mcpq-ingress named name on 127.0.0.1:port against fx's Redis and broker with
 * config file config and fx's job signing key, plus extra_env ("K=V", NULL-terminated; may
 * be NULL; later entries win), logging to
 * <dir>/<name>.log (path copied to log_out, log_size bytes, when log_out is not NULL), and
 * waits for its ready file. The pid, or -1 with a message on stderr.
 */
pid_t fx_spawn_ingress(const fx_stack_t *fx, const char *name, int port, const char *config,
                       const char *const extra_env[], char *log_out, size_t log_size);

/*
 * Runs an mcpq-ingress as fx_spawn_ingress() does (on 127.0.0.1:0) that is expected to refuse
 * its config: waits up to 20 s for it to exit and copies the start of its log into text
 * (size bytes, NUL-terminated). Its exit status as fx_wait_exit() (-1: still running or not
 * started).
 */
int fx_ingress_exit(const fx_stack_t *fx, const char *name, const char *config,
                    const char *const extra_env[], char *text, size_t size, char *log_out,
                    size_t log_size);

/* The official TypeScript SDK 1.x upstream MCP server (tests/clients/sdk-upstream.mjs) on
 * 127.0.0.1:port, answering only "Authorization: Bearer <token>", logging to
 * <dir>/sdk-upstream.log, when node and the npm packages of tests/clients/install.sh are there
 * ($MCPQ_CLIENTS_DEPS, else build/clients; the absolute dir goes to deps, size bytes): its
 * pid once ready (30 s); 0 when node or the packages are missing (the caller skips), except
 * in CI (CI=true), where that is -1 too; -1 with a message on stderr when it did not start. */
pid_t fx_sdk_upstream(const fx_stack_t *fx, int port, const char *token, char *deps, size_t size);
/* fx_sdk_upstream() for an upstream script of tests/clients, <name>.mjs (same arguments
 * PORT READY_FILE TOKEN; log <dir>/<name>.log), e.g. sdk2-upstream (the SDK 2.x, 2026-07-28),
 * with one more "K=V" in its environment (env_extra, may be NULL). Started again on the same
 * port (after fx_stop_pid), it waits for its own ready file. */
pid_t fx_node_upstream(const fx_stack_t *fx, const char *name, int port, const char *token,
                       const char *env_extra, char *deps, size_t size);
/* The same with a mode (NULL: everything; "fewer": only the tool echo and the resource readme,
 * what an upstream restarted with fewer objects lists). */
pid_t fx_sdk_upstream_mode(const fx_stack_t *fx, int port, const char *token, const char *mode,
                           char *deps, size_t size);

/*
 * Produces a job envelope (v1, server "default", tool "fed", sync, 20 s) of tenant, method,
 * arguments (JSON text; NULL: {}) and executor (JSON text) keyed job_id to the jobs topic
 * "mcpq.jobs", unsigned (a worker started with MCPQ_JOB_SIGNING_KEY= takes it), and waits up to 30
 * s for its result record in Redis: for what no client request makes (a raw method, mcpq/catalog).
 * The record's JSON (malloc'd), or NULL with a message on stderr.
 */
char *fx_job_record(const fx_stack_t *fx, const char *job_id, const char *tenant,
                    const char *method, const char *arguments, const char *executor);

/* Starts an mcpq-worker with MCPQ_WORKER_ID=name against fx's Redis and broker with fx's job
 * signing key, plus extra_env (later entries win), logging to <dir>/<name>.log, and waits
 * (60 s) until it joined the consumer group. The pid, or -1 with a message on stderr. */
pid_t fx_spawn_worker(const fx_stack_t *fx, const char *name, const char *const extra_env[]);

/* The uid an unprivileged process of a test runs as when the test itself runs as root (CI
 * always does): nobody. */
#define FX_UNPRIVILEGED_UID 65534

/* fx_spawn_worker() as user uid (group uid, no supplementary groups) when that is not the
 * test's own uid: through setpriv (util-linux), which needs root, with the parent-death
 * signal set again after the change of user (which clears it). fx's state dir and what is in
 * it become uid's, so the worker can write its ready file there. For checks that root would
 * pass whatever the code does (root reads every process's /proc files). */
pid_t fx_spawn_worker_as(const fx_stack_t *fx, const char *name, const char *const extra_env[],
                         uid_t uid);

/* A Kafka client on fx's broker: with group NULL a producer sending at once (linger.ms 0),
 * dr_cb (may be NULL) reporting each delivery; with a group a consumer that never
 * subscribes, for reading that group's committed offsets (fx_committed). Exits the test when
 * it cannot be made. rd_kafka_destroy() it. */
rd_kafka_t *fx_kafka_new(const fx_stack_t *fx, const char *group,
                         void (*dr_cb)(rd_kafka_t *, const rd_kafka_message_t *, void *));

/* The committed offset of the reader's group on topic's partition: -1001 when none yet, -2
 * when the broker did not answer within 5 s. */
long long fx_committed(rd_kafka_t *reader, const char *topic, int32_t partition);

/* 1 when a line of the file at path holds a and b (b may be NULL), which is then copied to
 * out (size bytes; out may be NULL); 0 otherwise. Lines up to 16 KiB. */
int fx_log_line(const char *path, const char *a, const char *b, char *out, size_t size);
/* How many lines of the file at path hold a and b (b may be NULL); 0 when it cannot be read.
 * Lines up to 16 KiB. */
int fx_log_count(const char *path, const char *a, const char *b);
/* Prints the tail of the log at path on stderr (what a failing check shows). */
void fx_log_tail(const char *path);

/* An HTTP answer as fx_http_post() saw it (the body cut at 8 KiB). */
typedef struct fx_reply {
    long status;
    char body[8192];
    size_t len;
    char retry_after[32]; /* the Retry-After header's value; "" when absent */
    char session_id[128]; /* the Mcp-Session-Id header's value; "" when absent */
    char request_id[160]; /* the X-Request-Id header's value; "" when absent */
    long long ms;         /* how long the exchange took */
} fx_reply_t;

/* POSTs body (Content-Type: application/json, Accept: application/json, plus headers,
 * NULL-terminated "Name: value" strings) to url with a 10 s timeout. 0, or -1 when no
 * HTTP answer came (r->status 0). */
int fx_http_post(const char *url, const char *const headers[], const char *body, fx_reply_t *r);
/* A GET of url whose whole body (up to 8 MiB, NUL-terminated) is returned, malloc'd; NULL
 * when the exchange failed or its status was not 200. For bodies past fx_reply_t's 8 KiB
 * (/metrics). */
char *fx_http_text(const char *url);
/* fx_http_post() with another method: "GET" (body NULL, no Content-Type), "POST", "DELETE"... */
int fx_http_request(const char *method, const char *url, const char *const headers[],
                    const char *body, fx_reply_t *r);

/* A long-lived HTTP exchange (a GET stream, a subscriptions/listen, or any request) read by a
 * thread of its own: what arrived so far is in buf (cut at 64 KiB), its status and
 * Content-Type once the headers came, done once the exchange ended. */
typedef struct fx_stream {
    char url[128];
    char body[2048]; /* POST body; "" for a GET */
    const char *headers[8];
    pthread_t th;
    pthread_mutex_t lock;
    char buf[65536];
    size_t len;
    long status;
    char ctype[64];
    char request_id[160]; /* the X-Request-Id header's value; "" when absent */
    atomic_int stop, done;
} fx_stream_t;

/* Starts the exchange: GET (body NULL) or POST of body (Content-Type: application/json) to
 * http://127.0.0.1:<port><path> with headers (NULL-terminated "Name: value", at most 7,
 * borrowed until fx_stream_close), 120 s at most. Exits the test when no thread starts. */
void fx_stream_open(fx_stream_t *s, int port, const char *path, const char *body,
                    const char *const headers[]);
/* Ends the exchange (if still going) and joins its thread. */
void fx_stream_close(fx_stream_t *s);
/* How many times needle occurs in what the stream received so far. */
int fx_stream_count(fx_stream_t *s, const char *needle);
/* Waits up to ms for needle to have occurred at least times times: 1, or 0 on timeout. */
int fx_stream_wait(fx_stream_t *s, const char *needle, int times, int ms);
/* Waits up to ms for the exchange to end: 1, or 0 on timeout. */
int fx_stream_wait_done(fx_stream_t *s, int ms);
/* Prints what the stream received, headed by what, on stderr. */
void fx_stream_dump(fx_stream_t *s, const char *what);

/* A request an in-process test server received in full: its body is in b. */
typedef enum MHD_Result (*fx_server_fn)(struct MHD_Connection *conn, const char *url,
                                        const char *method, const util_buf_t *b);

/* Starts an HTTP server on 127.0.0.1:port (a thread per connection) that reads each request
 * body (up to 8 MiB) and then calls handler (at most 8 handlers per process). Stop it with
 * MHD_stop_daemon. NULL on failure. */
struct MHD_Daemon *fx_server_start(int port, fx_server_fn handler);

/* For a handler of fx_server_start: queues the answer status with body (copied) as
 * Content-Type ctype, and the header hname: hvalue when hname is not NULL. libmicrohttpd's
 * result. */
enum MHD_Result fx_server_reply(struct MHD_Connection *conn, int status, const char *ctype,
                                const char *body, const char *hname, const char *hvalue);

/* The four headers of an HMAC-signed request (docs/authentication.md "Authentication", version 1)
 * of app with secret, for POST uri with body, dated now with a fresh nonce: "X-App-Id: ...",
 * "X-Timestamp: ...", "X-Nonce: ...", "X-Signature: ..." (no line ends). */
void fx_sign_headers(const char *app, const char *secret, const char *uri, const char *body,
                     char h[4][200]);

/* An EC P-256 key that signs test access tokens (ES256), with its kid and its public JWK. */
typedef struct fx_es256 {
    struct evp_pkey_st *pkey;
    char kid[16];
    char jwk[512]; /* {"kty":"EC","crv":"P-256","alg":"ES256","kid":...,"x":...,"y":...} */
} fx_es256_t;

/* Makes a new key named kid (exits the test on failure); fx_es256_free releases it. */
void fx_es256_new(fx_es256_t *k, const char *kid);
void fx_es256_free(fx_es256_t *k);

/* A compact JWT of payload (JSON text) signed ES256 by k, its kid in the header; malloc'd. */
char *fx_es256_jwt(const fx_es256_t *k, const char *payload);

#endif
