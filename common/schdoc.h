/*
 * schdoc.h - the structure of a JSON Schema document, for sch.c: where its subschemas are
 * (the applicator keywords of JSON Schema 2020-12), how a "$ref" is resolved (RFC 3986
 * section 5.2 against the base URI that "$id" sets, then a JSON pointer or an "$anchor"
 * fragment, 2020-12 section 8.2), and the index of the identified subschemas of one
 * document ("$id", "$anchor", "$dynamicAnchor" taken as a plain anchor).
 *
 * Only subschemas under known keywords count ("$id" inside an unknown keyword or under
 * "enum"/"const" is data). Resolution never leaves the document: a URI that no "$id" of
 * the document names is unresolved here (sch.c then tries the embedded schemas by file name).
 *
 * Pure functions over read-only documents; an index is read-only after sch_doc_index_new:
 * thread-safe.
 */
#ifndef MCPQ_SCHDOC_H
#define MCPQ_SCHDOC_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Longest absolute URI kept (base URIs, "$ref" targets). */
#define SCH_DOC_URI_MAX 512

/* Calls fn(arg, sub, kw, name, index) for every direct subschema of schema object s:
 * kw is the keyword, name the member name under a map keyword ("properties") or NULL,
 * index the position under a list keyword ("allOf") or -1. Stops at the first nonzero
 * return of fn and returns it; 0 when every call returned 0. */
typedef int (*sch_doc_sub_fn)(void *arg, const cJSON *sub, const char *kw, const char *name,
                              int index);
int sch_doc_each_sub(const cJSON *s, sch_doc_sub_fn fn, void *arg);

/* Resolves reference ref against base (either may be ""; neither carries a fragment that
 * matters for base) into out: an absolute URI when base is one, else ref with base's
 * directory prepended. Dot segments are removed. 0, or -1 when the result does not fit. */
int sch_doc_uri_resolve(const char *base, const char *ref, char *out, size_t size);

/* An identified place of a document: a schema resource (its "$id", or the document root)
 * or an anchor. uri is absolute without fragment for a resource, "<resource>#<anchor>" for an
 * anchor; res is the schema resource that holds node, base its URI. */
typedef struct sch_doc_entry {
    char *uri;
    const cJSON *node;
    const cJSON *res;
    const char *base;
} sch_doc_entry_t;

typedef struct sch_doc_index {
    sch_doc_entry_t *v;
    size_t n, cap;
    int depth_exceeded; /* the document nests deeper than max_depth: not fully indexed */
} sch_doc_index_t;

/* Indexes the identifiers of the document root (nesting bounded by max_depth). NULL when
 * memory ran out. Two entries naming the same URI: the first wins (sch.c's check refuses
 * the document, see sch_doc_index_duplicate). */
sch_doc_index_t *sch_doc_index_new(const cJSON *root, int max_depth);
void sch_doc_index_free(sch_doc_index_t *idx);
/* The entry naming uri, or NULL. */
const sch_doc_entry_t *sch_doc_index_find(const sch_doc_index_t *idx, const char *uri);
/* The resource entry whose node is node (a subschema with "$id", or the root), or NULL. */
const sch_doc_entry_t *sch_doc_index_resource(const sch_doc_index_t *idx, const cJSON *node);
/* A URI two identifiers of the document name, or NULL. */
const char *sch_doc_index_duplicate(const sch_doc_index_t *idx);

/* Where a "$ref" lands: the subschema, and the resource (and its base URI) it is in. */
typedef struct sch_doc_loc {
    const cJSON *node;
    const cJSON *res;
    const char *base;
} sch_doc_loc_t;

/* Follows JSON pointer ptr (RFC 6901, percent-decoded, without the '#') from at inside
 * resource *loc (loc->node = at on entry); a subschema with "$id" crossed on the way becomes
 * the resource (idx may be NULL: none). 0 with loc->node set, or -1 when it does not resolve. */
int sch_doc_pointer(const sch_doc_index_t *idx, const char *ptr, sch_doc_loc_t *loc);

/* Resolves "$ref" value ref seen in resource cur (its base URI cur->base) through idx
 * (may be NULL: only "#..." fragments of cur resolve). 0 with *out set; -1 unresolved
 * (*abs, of SCH_DOC_URI_MAX bytes, receives the absolute target for the caller's fallback). */
int sch_doc_ref(const sch_doc_index_t *idx, const sch_doc_loc_t *cur, const char *ref,
                sch_doc_loc_t *out, char *abs);

#endif
