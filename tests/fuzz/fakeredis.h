/*
 * fakeredis.h - an in-process stand-in for Redis for the whole-request fuzzer (fuzz_http.c):
 * a RESP server on a 127.0.0.1 port of its own, one thread per connection, speaking to the
 * real hiredis client code of the ingress. It keeps strings (GET, SET with NX/XX/EX/PX,
 * GETEX, DEL, EXISTS, EXPIRE, INCR; expiry ignored) and streams (XADD, XREAD with BLOCK),
 * answers PING, AUTH, SELECT, PUBLISH and SUBSCRIBE, refuses scripts (EVAL, EVALSHA, SCRIPT:
 * every Lua path of the ingress then takes its "Redis unavailable" branch), and answers the
 * other reads empty. Two fixtures make parking paths reachable: a task whose id starts with
 * "tk-" exists and runs (HGETALL {mcpq}:task:tk-...: tenant t's task_tool, owned by the API
 * key k1, owner string "key:k1", so only that key, or a caller of tenant t holding tasks:all,
 * may see it; owner.h), and registering a waiter on it (SADD
 * {mcpq}:task:<id>:waiters <reply stream>) makes the "task" end at once with a result entry on
 * that stream, as a worker would. Not a Redis: only what fuzz_http.c needs, never for tests
 * that a user's Redis would run.
 *
 * Thread-safe.
 */
#ifndef MCPQ_FUZZ_FAKEREDIS_H
#define MCPQ_FUZZ_FAKEREDIS_H

#include <stddef.h>

/* Starts the server; url receives redis://127.0.0.1:<port>/0. 0 or -1. */
int fr_start(char *url, size_t url_size);
/* Appends an entry of n/2 field-value pairs to stream key (as XADD key * ...). */
void fr_xadd(const char *key, const char *const *fv, size_t n);
/* Forgets every string key (streams stay: readers hold positions in them). */
void fr_reset(void);

#endif
