/*
 * redis_wait - what MCPQ_REDIS_WAIT_REPLICAS costs the worker's result writer
 * (docs/redis.md): pipelines shaped like worker/core/store.c's (per job SET NX GET EX, then XADD and
 * EXPIRE of a reply stream) sent to a master, with and without WAIT <replicas> <timeout> at
 * the end, timed.
 *
 *   bench-redis_wait <port> [jobs per pipeline (1)] [pipelines (2000)] [replicas (1)]
 *
 * Start a master and a replica first, e.g.
 *   redis-server --port 7001 --save '' &
 *   redis-server --port 7002 --save '' --replicaof 127.0.0.1 7001 &
 * Prints the mean and the 99th percentile per pipeline, in microseconds.
 */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/* Runs n pipelines of `jobs` jobs; with replicas > 0 each ends with WAIT. 0 or -1. */
static int run(redisContext *c, int jobs, int n, int replicas, const char *label)
{
    static const char record[] = "{\"v\":1,\"status\":\"ok\",\"result\":{\"content\":[{\"type\":"
                                 "\"text\",\"text\":\"ok\"}],\"isError\":false}}";
    long long *t = calloc((size_t)n, sizeof(*t));
    if (!t)
        return -1;
    static unsigned long long seq;
    long long total = 0;
    for (int i = 0; i < n; i++) {
        long long t0 = now_us();
        int cmds = 0;
        for (int j = 0; j < jobs; j++, seq++) {
            redisAppendCommand(c, "SET mcpq:bench:%llu %s NX GET EX 60", seq, record);
            redisAppendCommand(c,
                               "XADD mcpq:bench:reply MAXLEN ~ 100000 * job %llu kind result "
                               "data %s",
                               seq, record);
            cmds += 2;
        }
        redisAppendCommand(c, "EXPIRE mcpq:bench:reply 60");
        cmds++;
        if (replicas > 0) {
            redisAppendCommand(c, "WAIT %d 500", replicas);
            cmds++;
        }
        for (int k = 0; k < cmds; k++) {
            redisReply *r = NULL;
            if (redisGetReply(c, (void **)&r) != REDIS_OK || !r) {
                fprintf(stderr, "redis: %s\n", c->errstr);
                free(t);
                return -1;
            }
            if (k == cmds - 1 && replicas > 0 &&
                (r->type != REDIS_REPLY_INTEGER || r->integer < replicas)) {
                fprintf(stderr, "WAIT came back short: is a replica attached?\n");
                freeReplyObject(r);
                free(t);
                return -1;
            }
            freeReplyObject(r);
        }
        t[i] = now_us() - t0;
        total += t[i];
    }
    qsort(t, (size_t)n, sizeof(*t), cmp_ll);
    printf("%-14s jobs/pipeline %4d  pipelines %6d  mean %7.1f us  p99 %7lld us  "
           "%.0f jobs/s\n",
           label, jobs, n, (double)total / n, t[(size_t)n * 99 / 100],
           (double)jobs * n * 1e6 / (double)total);
    free(t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s <port> [jobs per pipeline] [pipelines] [replicas]\n", argv[0]);
        return 2;
    }
    int port = (int)strtol(argv[1], NULL, 10);
    int jobs = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 1;
    int n = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 2000;
    int replicas = argc > 4 ? (int)strtol(argv[4], NULL, 10) : 1;
    if (jobs < 1 || n < 1 || replicas < 1)
        return 2;
    redisContext *c = redisConnect("127.0.0.1", port);
    if (!c || c->err) {
        fprintf(stderr, "cannot connect to 127.0.0.1:%d\n", port);
        return 1;
    }
    int rc = run(c, jobs, n / 10 + 1, 0, "(warm-up)") < 0 ||
             run(c, jobs, n, 0, "without WAIT") < 0 || run(c, jobs, n, replicas, "with WAIT") < 0 ||
             run(c, jobs, n, 0, "without WAIT") < 0 || run(c, jobs, n, replicas, "with WAIT") < 0;
    redisReply *r = redisCommand(c, "DEL mcpq:bench:reply");
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return rc ? 1 : 0;
}
