/*
 * rscript.h - the Redis Lua scripts of common/lua/, embedded into the binaries at build time
 * (CMakeLists.txt writes them into a generated .c file, as the schemas), and how they run.
 *
 * One file per script, named <module>_<what>.lua; each begins with a comment saying what it
 * does, its KEYS and ARGV and what it returns. Files named lib_*.lua only define local
 * functions: a script's "-- uses: lib_a.lua lib_b.lua" comment line prepends them, in that
 * order. Key names are not spelled in the scripts: a token @NAME@ stands for the string
 * macro NAME of names.h (or one of a few numeric and string constants of whq.h and task.h),
 * substituted once per process when the scripts are first used, so the scripts and the C
 * code build keys from the same definitions.
 *
 * Running one: EVALSHA with the SHA1 of that text; when Redis does not know it (NOSCRIPT:
 * a fresh or restarted server, SCRIPT FLUSH), SCRIPT LOAD and EVALSHA again. So each
 * server loads each script once; the ACL needs +evalsha and +script|load, not +eval
 * (deploy/redis/mcpq.acl).
 *
 * Thread-safe: the scripts are built once (pthread_once) and read-only afterwards.
 */
#ifndef MCPQ_RSCRIPT_H
#define MCPQ_RSCRIPT_H

#include "kv.h"

#include <hiredis/hiredis.h>
#include <stddef.h>

typedef struct rscript rscript_t;

/* The script of common/lua/<name>.lua (name without ".lua"; a library too, for tests), its
 * text ready to run; NULL when
 * there is none (or it names an unknown @NAME@ or a missing library: a build mistake, which
 * tests/unit/common/test_rscript.c catches). */
const rscript_t *rscript_get(const char *name);
/* Its text as sent by SCRIPT LOAD, and its SHA1 (40 lowercase hex digits). */
const char *rscript_text(const rscript_t *s);
const char *rscript_sha(const rscript_t *s);
/* The name of the i-th embedded script (libraries included, file names with ".lua"), NULL
 * past the last one. */
const char *rscript_file_name(int i);

/*
 * Runs s on the blocking context c: EVALSHA sha nkeys argv[0..argc-1] (the first nkeys are
 * KEYS, the rest ARGV; argvlen NULL: strlen of each), and on NOSCRIPT SCRIPT LOAD + EVALSHA
 * again. The reply (caller frees), or NULL with errstr filled on a connection failure or an
 * error reply (then kv_ctx_failover is told, so a demoted master's context is marked).
 */
redisReply *rscript_run(redisContext *c, const rscript_t *s, int nkeys, int argc,
                        const char *const *argv, const size_t *argvlen, char *errstr,
                        size_t errstr_size);
/* The same on a pooled connection (kv_pool_commandargv): the reply, or NULL with errstr. */
redisReply *rscript_pool_run(kv_pool_t *pool, const rscript_t *s, int nkeys, int argc,
                             const char *const *argv, const size_t *argvlen, char *errstr,
                             size_t errstr_size);
/* For a pipeline: appends EVALSHA to c's output buffer (redisAppendCommandArgv); REDIS_OK or
 * REDIS_ERR. Its reply may be a NOSCRIPT error (rscript_noscript): then run it again with
 * rscript_run, which loads it. */
int rscript_append(redisContext *c, const rscript_t *s, int nkeys, int argc,
                   const char *const *argv);
/* 1 when r is the NOSCRIPT error reply of an EVALSHA. */
int rscript_noscript(const redisReply *r);

#endif
