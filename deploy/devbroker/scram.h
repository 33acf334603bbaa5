/*
 * scram.h - the server side of SASL/SCRAM-SHA-256 and SCRAM-SHA-512 for the devbroker's front
 * (front.h; docs/kafka.md "What was tested here").
 *
 * As Kafka does it: after a SaslHandshake naming the mechanism, the client's two SCRAM messages
 * travel in SaslAuthenticate requests and the server's two in their answers:
 *   client-first  n,,n=<user>,r=<client nonce>       (gs2 header "n,,": no channel binding,
 *                                                       no authorization id)
 *   server-first  r=<client nonce><server nonce>,s=<salt, base64>,i=<iterations>
 *   client-final  c=biws,r=<both nonces>,p=<ClientProof, base64>
 *   server-final  v=<ServerSignature, base64>
 * One user; its keys are derived from the configured password with a fixed salt and 4096
 * iterations (a test broker keeps no credential store). OpenSSL does the cryptography.
 *
 * A db_scram_t is one connection's exchange; not shared between threads.
 */
#ifndef MCPQ_DEVBROKER_SCRAM_H
#define MCPQ_DEVBROKER_SCRAM_H

#include <stddef.h>
#include <stdint.h>

typedef struct db_scram db_scram_t;

/* 1 when mech is a SCRAM mechanism this module serves ("SCRAM-SHA-256", "SCRAM-SHA-512"). */
int db_scram_known(const char *mech);

/* A new exchange for mech as user with password (both borrowed: they must outlive it).
 * NULL when mech is unknown or memory is short. */
db_scram_t *db_scram_new(const char *mech, const char *user, const char *password);

void db_scram_free(db_scram_t *s);

/* The user the client-first message named ("" before it, or when it was malformed). */
const char *db_scram_user(const db_scram_t *s);

/* Takes the client's next message (in, in_len bytes) and writes the server's answer, a
 * NUL-terminated string, to out. Returns 0 after the client-first message (out: the
 * server-first message), 1 after a client-final message that proves the password (out: the
 * server-final message), or MCPQ_EINVAL when the exchange fails: a malformed message, another
 * user, a wrong nonce or proof, or a message out of turn; why (why_size bytes) then says which,
 * for the broker's log, and out is empty. */
int db_scram_step(db_scram_t *s, const uint8_t *in, size_t in_len, char *out, size_t out_size,
                  char *why, size_t why_size);

#endif
