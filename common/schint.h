/*
 * schint.h - what the files of the JSON Schema validator share (sch.h is the module's
 * interface; nothing else includes this): the validation context, the annotations
 * unevaluated* read, and the helpers of schctx.c (paths, errors, keyword values, patterns)
 * and schkw.c (the keywords that look at one instance type).
 *
 * Layers, bottom up: schdoc.c (document structure), schctx.c, schkw.c, sch.c (references,
 * the applicators, schema checking, the API). schkw.c applies subschemas through
 * vctx_t.validate, so no file calls one above it.
 *
 * A context belongs to one validation on one thread.
 */
#ifndef MCPQ_SCHINT_H
#define MCPQ_SCHINT_H

#include "sch.h"
#include "schdoc.h"

#include <regex.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#define PATH_CAP 512
#define MSG_CAP 512
#define PATTERN_CACHE 8
#define PATTERN_MAX 4096 /* longest pattern source accepted */

/* Outcome of one validation step: the instance is invalid (a user error), or the schema is
 * unusable, nesting is too deep or memory ran out (stop at once, even inside anyOf/not). */
enum { V_OK = 0, V_FAIL = 1, V_HARD = 2 };

typedef struct pattern_entry {
    const cJSON *node;
    regex_t rx;
} pattern_entry_t;

/* A schema checked once, with its patterns compiled and its identifiers indexed. */
struct sch_compiled {
    cJSON *schema;        /* a copy, owned */
    sch_doc_index_t *idx; /* $id and $anchor of the copy */
    pattern_entry_t *rx;  /* every pattern of the copy, sorted by node */
    size_t nrx;
};

/* Which members (an object instance) or items (an array instance) some keyword evaluated
 * successfully: the annotations unevaluatedProperties and unevaluatedItems read. */
typedef struct eval {
    unsigned char *seen; /* one per member or item */
    int n;
} eval_t;

/* One validation (or schema check): the current path, the first error, compiled patterns,
 * the document and the schema resource being read. */
typedef struct vctx vctx_t;

/* Applies schema s to instance inst (sch.c's validate, reached by the keywords of schkw.c
 * through the context): V_OK, V_FAIL or V_HARD; ev as eval_t says, or NULL. */
typedef int (*sch_apply_fn)(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev);

struct vctx {
    char path[PATH_CAP];
    size_t path_len;
    char err_path[PATH_CAP];
    char err_msg[MSG_CAP];
    int oom;
    int nrx;
    pattern_entry_t rx[PATTERN_CACHE];
    /* sch_compile: every pattern compiled is kept here (grown as needed) */
    int collect;
    pattern_entry_t *all;
    size_t nall, capall;
    const sch_compiled_t *comp; /* validating a compiled schema, else NULL */
    const cJSON *doc;           /* the root document */
    sch_doc_index_t *idx;       /* its identifiers: comp's, or built on first need */
    int own_idx;
    sch_doc_loc_t cur; /* the schema resource being read (its base URI for $ref) */
    long refs;         /* $refs followed so far (SCH_MAX_REFS) */
    sch_apply_fn validate;
};

/* ---- schctx.c: paths, errors, keyword values, patterns ---- */

/* Appends member key (".key", or ["key"] quoted) or item i ("[i]") to the current path;
 * each returns the length to give sch_ctx_pop. */
size_t sch_ctx_push_key(vctx_t *c, const char *key);
size_t sch_ctx_push_index(vctx_t *c, int i);
void sch_ctx_pop(vctx_t *c, size_t saved);
/* The instance is invalid: records "<path>: <message>" and returns V_FAIL. */
int sch_ctx_fail(vctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The schema is unusable: records "<path>: invalid schema: <message>", returns V_HARD. */
int sch_ctx_bad_schema(vctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Nesting beyond SCH_MAX_DEPTH; memory ran out (c->oom set): both V_HARD. */
int sch_ctx_too_deep(vctx_t *c);
int sch_ctx_oom(vctx_t *c);
/* The type names v has, as a mask (an integral number is "integer" and "number"). */
unsigned sch_ctx_type_bits(const cJSON *v);
/* "expected <types of mask>, got <type of inst>" (V_FAIL). */
int sch_ctx_type_error(vctx_t *c, unsigned mask, const cJSON *inst);
/* Appends printf-style text to the string in buf (of size), clipped to fit. */
void sch_ctx_appendf(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Keyword values of schema s: 1 present (*out set), 0 absent, -V_HARD malformed (the error
 * recorded). type as a mask; a non-negative integer; a number (or a draft-4 boolean for
 * exclusiveM*); an object, array or boolean (kind cJSON_Object, cJSON_Array, cJSON_True). */
int sch_ctx_types(vctx_t *c, const cJSON *s, unsigned *mask);
int sch_ctx_count(vctx_t *c, const cJSON *s, const char *kw, double *out);
int sch_ctx_number(vctx_t *c, const cJSON *s, const char *kw, const cJSON **out);
int sch_ctx_kind(vctx_t *c, const cJSON *s, const char *kw, int kind, const cJSON **out);
/* Orders pattern_entry_t by node (the compiled schema's table). */
int sch_ctx_pattern_cmp(const void *a, const void *b);
/* Pattern text of node against s: 1 match, 0 no match, -V_HARD when the pattern is unusable.
 * Compiled once: the compiled schema's, else cached per validation (c->collect: kept). */
int sch_ctx_pattern_match(vctx_t *c, const cJSON *node, const char *pattern, const char *s);

/* ---- schkw.c: the keywords of one instance type ---- */

/* Schema s for member key (or item index when key is NULL) inst: a new instance location,
 * so no annotations flow back. */
int sch_kw_at(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, const char *key, int index);
/* enum and const. */
int sch_kw_enum(vctx_t *c, const cJSON *s, const cJSON *inst, int depth);
/* minLength, maxLength, pattern. */
int sch_kw_string(vctx_t *c, const cJSON *s, const cJSON *inst);
/* minimum, maximum, exclusive*, multipleOf. */
int sch_kw_number(vctx_t *c, const cJSON *s, const cJSON *inst);
/* The object keywords (properties ... dependencies); ev collects the members evaluated. */
int sch_kw_object(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev);
/* The array keywords (prefixItems, items ... uniqueItems); ev collects the items evaluated. */
int sch_kw_array(vctx_t *c, const cJSON *s, const cJSON *inst, int depth, eval_t *ev);

#endif
