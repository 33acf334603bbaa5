/*
 * bare_responder.c - bench-bare_responder: the baseline of the tools/list benchmark.
 *
 * A libmicrohttpd server in the same threading mode as mcpq-ingress (ingress/server.c: an
 * internal polling thread pool of epoll threads, MHD_USE_TURBO, the same connection memory
 * limit and listen backlog) that reads any request body and answers every request with one
 * fixed small JSON-RPC result. It does no parsing, no auth and no allocation beyond what
 * libmicrohttpd itself does, so it is the ceiling an MHD-based server can reach on this
 * machine; the targets (docs/benchmarks.md, "Targets") want tools/list at >= 70% of it.
 *
 *   bench-bare_responder [--port N] [--threads N]
 *
 * Prints "READY http://127.0.0.1:<port>" once listening; SIGINT or SIGTERM stops it cleanly.
 */
#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char answer[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}";

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    static int marker;
    if (*con_cls == NULL) {
        *con_cls = &marker; /* first call: headers only */
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0; /* discard the body */
        return MHD_YES;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(sizeof(answer) - 1, (void *)answer, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long port = 8090, threads = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--port") == 0 && v && parse_uint(v, 65535, &port) == 0) {
            i++;
        } else if (strcmp(a, "--threads") == 0 && v && parse_uint(v, 64, &threads) == 0 &&
                   threads > 0) {
            i++;
        } else {
            fprintf(stderr, "usage: %s [--port N] [--threads N]\n", argv[0]);
            return 2;
        }
    }

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO |
                     MHD_USE_ERROR_LOG | MHD_USE_ITC;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads, MHD_OPTION_CONNECTION_LIMIT, 20000u,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384, MHD_OPTION_CONNECTION_TIMEOUT, 120u,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096u, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "bench-bare_responder: cannot listen on 127.0.0.1:%lu\n", port);
        return 1;
    }
    printf("READY http://127.0.0.1:%lu\n", port);
    fflush(stdout);
    int sig = 0;
    sigwait(&sigs, &sig);
    MHD_stop_daemon(d);
    return 0;
}
