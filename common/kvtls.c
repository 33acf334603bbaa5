#include "kvtls.h"

#include "log.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PUMP_BUF 16384
#define PUMP_DRAIN_POLL_MS 10
#define PUMP_STACK (256 * 1024)

/* One bridged connection: bytes from hiredis (local) go up into the TLS session, bytes
 * from the server come down to hiredis. Owned by its pump thread once started. */
typedef struct pump {
    SSL *ssl;
    int tcp, local;
    unsigned char up[PUMP_BUF];
    size_t up_len, up_off;
    unsigned char down[PUMP_BUF];
    size_t down_len, down_off;
} pump_t;

/* Pump threads still running (kvtls_drain). */
static atomic_int live_pumps;

/* What each side waits for after a pass that moved nothing. */
typedef struct pump_wait {
    short local, tcp;
} pump_wait_t;

static void openssl_reason(char *out, size_t size)
{
    unsigned long e = ERR_get_error();
    if (e)
        ERR_error_string_n(e, out, size);
    else
        snprintf(out, size, "%s", errno ? strerror(errno) : "connection closed");
}

SSL_CTX *kvtls_ctx_new(const char *ca_file, const char *cert_file, const char *key_file,
                       char *errstr, size_t errstr_size)
{
    char why[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        snprintf(errstr, errstr_size, "redis TLS: cannot create a TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    const char *what = NULL;
    ERR_clear_error();
    if (ca_file && *ca_file) {
        if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1)
            what = "MCPQ_REDIS_TLS_CA_FILE";
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        what = "the system trust store";
    }
    int has_cert = cert_file && *cert_file, has_key = key_file && *key_file;
    if (!what && has_cert != has_key) {
        snprintf(errstr, errstr_size,
                 "redis TLS: MCPQ_REDIS_TLS_CERT_FILE and MCPQ_REDIS_TLS_KEY_FILE go together");
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (!what && has_cert && SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1)
        what = "MCPQ_REDIS_TLS_CERT_FILE";
    if (!what && has_key && SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1)
        what = "MCPQ_REDIS_TLS_KEY_FILE";
    if (!what && has_key && SSL_CTX_check_private_key(ctx) != 1)
        what = "MCPQ_REDIS_TLS_KEY_FILE (does not match the certificate)";
    if (what) {
        errno = 0;
        openssl_reason(why, sizeof(why));
        snprintf(errstr, errstr_size, "redis TLS: cannot load %s: %s", what, why);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* Waits for events on fd until deadline (util_mono_ms); 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - util_mono_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, (int)left);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

static void tcp_tune(int fd)
{
    int on = 1, idle = 15, intvl = 5, cnt = 3;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* A non-blocking TCP socket connected to host:port within deadline, or -1 (errstr filled). */
static int tcp_open(const char *host, int port, int64_t deadline, char *errstr, size_t errstr_size)
{
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        snprintf(errstr, errstr_size, "redis %s:%d: %s", host, port, gai_strerror(rc));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            err = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        err = errno;
        if (err == EINPROGRESS) {
            int w = wait_fd(fd, POLLOUT, deadline);
            socklen_t len = sizeof(err);
            if (w > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
                break;
            if (w == 0)
                err = ETIMEDOUT;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        snprintf(errstr, errstr_size, "redis %s:%d: %s", host, port, strerror(err));
    else
        tcp_tune(fd);
    return fd;
}

/* Sets SNI and the name the certificate must carry. */
static int ssl_name(SSL *ssl, const char *name)
{
    unsigned char ip[16];
    if (inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1)
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1 ? 0 : -1;
    if (SSL_set_tlsext_host_name(ssl, name) != 1)
        return -1;
    return SSL_set1_host(ssl, name) == 1 ? 0 : -1;
}

/* Completes the client handshake on a non-blocking ssl within deadline; 0 or -1. */
static int handshake(SSL *ssl, int fd, const char *where, int64_t deadline, char *errstr,
                     size_t errstr_size)
{
    for (;;) {
        ERR_clear_error();
        errno = 0;
        int rc = SSL_connect(ssl);
        if (rc == 1)
            return 0;
        int e = SSL_get_error(ssl, rc);
        short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
        if (ev) {
            int w = wait_fd(fd, ev, deadline);
            if (w > 0)
                continue;
            snprintf(errstr, errstr_size, "redis %s: TLS handshake %s", where,
                     w == 0 ? "timed out" : "failed");
            return -1;
        }
        long v = SSL_get_verify_result(ssl);
        if (v != X509_V_OK) {
            snprintf(errstr, errstr_size, "redis %s: TLS certificate verify failed: %s", where,
                     X509_verify_cert_error_string(v));
        } else {
            char why[256];
            openssl_reason(why, sizeof(why));
            snprintf(errstr, errstr_size, "redis %s: TLS handshake failed: %s", where, why);
        }
        return -1;
    }
}

/* After an SSL_read or SSL_write that returned rc <= 0: what the TCP socket must become
 * (added to w), or -1 when the session is over (closed or failed). */
static int ssl_wants(SSL *ssl, int rc, pump_wait_t *w)
{
    int e = SSL_get_error(ssl, rc);
    if (e == SSL_ERROR_WANT_READ)
        w->tcp |= POLLIN;
    else if (e == SSL_ERROR_WANT_WRITE)
        w->tcp |= POLLOUT;
    else
        return -1;
    return 0;
}

/* One pass over the four directions; 1 when anything moved, 0 when all wait (w filled),
 * -1 when the bridge is over. */
static int pump_pass(pump_t *p, pump_wait_t *w)
{
    int moved = 0;
    w->local = w->tcp = 0;
    if (p->up_len == 0) {
        ssize_t n = recv(p->local, p->up, sizeof(p->up), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return -1; /* hiredis closed its end */
        if (n > 0) {
            p->up_len = (size_t)n;
            p->up_off = 0;
            moved = 1;
        } else {
            w->local |= POLLIN;
        }
    }
    if (p->up_len > 0) {
        ERR_clear_error();
        int n = SSL_write(p->ssl, p->up + p->up_off, (int)(p->up_len - p->up_off));
        if (n > 0) {
            p->up_off += (size_t)n;
            if (p->up_off == p->up_len)
                p->up_len = 0;
            moved = 1;
        } else if (ssl_wants(p->ssl, n, w) < 0) {
            return -1;
        }
    }
    if (p->down_len == 0) {
        ERR_clear_error();
        int n = SSL_read(p->ssl, p->down, (int)sizeof(p->down));
        if (n > 0) {
            p->down_len = (size_t)n;
            p->down_off = 0;
            moved = 1;
        } else if (ssl_wants(p->ssl, n, w) < 0) {
            return -1;
        }
    }
    if (p->down_len > 0) {
        ssize_t n = send(p->local, p->down + p->down_off, p->down_len - p->down_off,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            p->down_off += (size_t)n;
            if (p->down_off == p->down_len)
                p->down_len = 0;
            moved = 1;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            return -1;
        } else {
            w->local |= POLLOUT;
        }
    }
    return moved;
}

static void *pump_run(void *arg)
{
    pump_t *p = arg;
    for (;;) {
        pump_wait_t w;
        int rc;
        while ((rc = pump_pass(p, &w)) > 0)
            ;
        if (rc < 0)
            break;
        struct pollfd fds[2] = {{.fd = p->local, .events = w.local},
                                {.fd = p->tcp, .events = w.tcp}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            break;
        /* hiredis gave up on the connection (redisFree) while the server is stalled. */
        if (fds[0].revents & (POLLHUP | POLLERR))
            break;
    }
    char why[256] = "";
    unsigned long e = ERR_peek_error();
    if (e) {
        ERR_error_string_n(e, why, sizeof(why));
        log_event(LOG_WARN, "redis TLS connection closed", "error", why, (char *)NULL);
    }
    ERR_clear_error();
    SSL_shutdown(p->ssl); /* close_notify, best effort: the socket is non-blocking */
    SSL_free(p->ssl);
    close(p->tcp);
    close(p->local);
    free(p);
    OPENSSL_thread_stop(); /* this thread's OpenSSL state (its error queue), now */
    atomic_fetch_sub(&live_pumps, 1);
    return NULL;
}

int kvtls_drain(int timeout_ms)
{
    for (int waited = 0; atomic_load(&live_pumps) > 0; waited += PUMP_DRAIN_POLL_MS) {
        if (waited >= timeout_ms)
            return -1;
        usleep(PUMP_DRAIN_POLL_MS * 1000);
    }
    return 0;
}

/* Starts the pump for ssl on tcp; the plain end for hiredis, or -1. Frees nothing on
 * failure but the socketpair. */
static int pump_start(SSL *ssl, int tcp, char *errstr, size_t errstr_size)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(errstr, errstr_size, "redis TLS: socketpair: %s", strerror(errno));
        return -1;
    }
    pump_t *p = calloc(1, sizeof(*p));
    pthread_attr_t attr;
    int ok = p && pthread_attr_init(&attr) == 0;
    if (ok) {
        p->ssl = ssl;
        p->tcp = tcp;
        p->local = sv[1];
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, PUMP_STACK);
        pthread_t t;
        atomic_fetch_add(&live_pumps, 1);
        ok = pthread_create(&t, &attr, pump_run, p) == 0;
        if (!ok)
            atomic_fetch_sub(&live_pumps, 1);
        pthread_attr_destroy(&attr);
    }
    if (!ok) {
        snprintf(errstr, errstr_size, "redis TLS: cannot start the connection's thread");
        free(p);
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    return sv[0];
}

int kvtls_connect(SSL_CTX *ctx, const char *host, int port, const char *server_name, int timeout_ms,
                  char *errstr, size_t errstr_size)
{
    char where[300];
    snprintf(where, sizeof(where), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    int64_t deadline = util_mono_ms() + timeout_ms;
    int tcp = tcp_open(host, port, deadline, errstr, errstr_size);
    if (tcp < 0)
        return -1;
    int local = -1;
    SSL *ssl = SSL_new(ctx);
    if (!ssl || SSL_set_fd(ssl, tcp) != 1 ||
        ssl_name(ssl, server_name && *server_name ? server_name : host) < 0) {
        snprintf(errstr, errstr_size, "redis %s: cannot set up TLS", where);
    } else if (handshake(ssl, tcp, where, deadline, errstr, errstr_size) == 0) {
        local = pump_start(ssl, tcp, errstr, errstr_size);
    }
    if (local < 0) {
        SSL_free(ssl);
        close(tcp);
    }
    return local;
}
