/*
 * kinds.h - the kinds of registry object (docs/config-file.md "Kinds") and the one URI
 * template rule mcpq serves.
 *
 * A registry object (config "tools", registry field tool:<tenant>:<name>) is a tool, a
 * resource, a resource template or a prompt, named by its "kind" member ("tool" when absent).
 * The config loader (cfg.c) checks templates with kinds_template_check; the ingress matches
 * resources/read URIs against them with kinds_template_match. Templates are RFC 6570 level 1
 * restricted further: literal text and "{var}" expressions, var 1-64 of [A-Za-z0-9_],
 * at least one variable, no variable twice, no two variables side by side (so a match is
 * unambiguous enough to explain). A variable matches 1 or more characters other than '/', the
 * shortest run that lets the rest of the template match;
 * the matched text is taken as it is (no percent-decoding).
 *
 * Pure functions: thread-safe.
 */
#ifndef MCPQ_KINDS_H
#define MCPQ_KINDS_H

#include <cjson/cJSON.h>
#include <stddef.h>

enum { KINDS_TOOL = 0, KINDS_RESOURCE, KINDS_TEMPLATE, KINDS_PROMPT, KINDS_COUNT };

/* The MCP request a job answers: the job envelope's "method" (schemas/job.schema.json), one
 * table for the ingress that writes it and the worker that reads it. */
typedef enum {
    KINDS_METHOD_CALL = 0,    /* tools/call (the default when the envelope names none) */
    KINDS_METHOD_READ,        /* resources/read */
    KINDS_METHOD_PROMPT,      /* prompts/get */
    KINDS_METHOD_COMPLETE,    /* completion/complete */
    KINDS_METHOD_SUBSCRIBE,   /* resources/subscribe */
    KINDS_METHOD_UNSUBSCRIBE, /* resources/unsubscribe */
    KINDS_METHOD_CATALOG,     /* mcpq/catalog: list an upstream (federation) */
} kinds_method_t;
#define KINDS_METHOD_COUNT (KINDS_METHOD_CATALOG + 1)

/* The job method named name ("resources/read", ...), or -1 (name NULL or unknown). */
int kinds_method(const char *name);
/* The name of method (a static string; "tools/call" for an unknown one). */
const char *kinds_method_name(kinds_method_t method);

/* The longest URI or URI template mcpq stores or matches, in bytes. */
#define KINDS_URI_MAX 2048

/* The kind named s ("tool", "resource", "resource_template", "prompt"; NULL: "tool"), or -1. */
int kinds_parse(const char *s);

/* The config name of kind ("tool" for an unknown one). */
const char *kinds_name(int kind);

/* The kind of a registry object document (its "kind" member), or -1 when it names none. */
int kinds_of(const cJSON *obj);

/* Checks tpl against the template rule above: 0, or MCPQ_EINVAL with a message in err
 * ("unclosed '{' at byte 12"). */
int kinds_template_check(const char *tpl, char *err, size_t err_size);

/* Matches uri against tpl (checked by kinds_template_check): 1 with *vars a new object
 * {"<var>": "<matched text>"} (the caller frees it), 0 when it does not match (*vars NULL),
 * MCPQ_ENOMEM. The work is bounded by the number of variables times the uri's length
 * squared; uris longer than KINDS_URI_MAX never match. vars may be NULL (only the answer). */
int kinds_template_match(const char *tpl, const char *uri, cJSON **vars);

/* The message of the Redis channel mcpq:resource:updated (names.h NAMES_CHAN_RESOURCE_UPDATED,
 * docs/internals.md): compact JSON {"tenant","server","uri"}, as the ingress's change detection
 * and the workers' upstream subscriptions publish it and ingress/http/listen.c reads it. A new
 * string (cJSON_free), NULL on ENOMEM. */
char *kinds_updated_message(const char *tenant, const char *server, const char *uri);

#endif
