/*
 * kvtls.h - TLS for Redis connections underneath hiredis 0.14, which has none of its own.
 *
 * hiredis 0.14 reads and writes its context's file descriptor with read(2) and write(2);
 * it has no transport hooks. kvtls_connect() therefore opens the TCP connection, completes
 * the TLS handshake (OpenSSL, certificate and host name verified), and hands back one end of
 * a socketpair. A pump thread owned by the connection copies bytes between the other end
 * and the TLS session, so hiredis's own reply reader and command formatter run unchanged on
 * the plain end (redisConnectFd) and its socket timeout (redisSetTimeout) still bounds every
 * command. When hiredis closes its end (redisFree), the pump sends close_notify, closes the
 * TCP connection and exits; when the server closes, the pump closes the plain end, so
 * hiredis sees an ordinary EOF. docs/production.md, "Redis over TLS".
 *
 * Thread safety: an SSL_CTX made by kvtls_ctx_new() is shared read-only by every
 * connection; kvtls_connect() may be called from any thread.
 */
#ifndef MCPQ_KVTLS_H
#define MCPQ_KVTLS_H

#include <openssl/ssl.h>
#include <stddef.h>

/*
 * A client TLS context: peers verified against the PEM CAs in ca_file (NULL: the system's
 * trust store), and cert_file/key_file (both or neither) presented for mutual TLS. NULL with
 * errstr naming the file and OpenSSL's reason when one cannot be loaded.
 */
SSL_CTX *kvtls_ctx_new(const char *ca_file, const char *cert_file, const char *key_file,
                       char *errstr, size_t errstr_size);

/*
 * Connects to host:port, handshakes within timeout_ms, and returns the plain end of the
 * bridge (the caller owns it: redisConnectFd, or close). server_name is sent as SNI (when it
 * is a DNS name) and must match the certificate (a DNS name or an IP address); NULL: host.
 * -1 with errstr filled when the connection, the handshake or the verification fails.
 */
int kvtls_connect(SSL_CTX *ctx, const char *host, int port, const char *server_name, int timeout_ms,
                  char *errstr, size_t errstr_size);

/*
 * Waits until every pump thread has ended (their connections were closed: redisFree), at
 * most timeout_ms: 0, or -1 when some are still running. Called before the process exits, so
 * no thread is left half-way through tearing down its TLS session.
 */
int kvtls_drain(int timeout_ms);

#endif
