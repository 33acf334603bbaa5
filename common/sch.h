/*
 * sch.h - a JSON Schema validator: draft 2020-12 as MCP clients and servers write it.
 *
 * Tool inputSchemas come from users, an elicitation's requestedSchema from a tool, and every
 * document that crosses a process boundary (config file, job envelope, result record, webhook
 * payload, CallToolResult) is described by a JSON file in schemas/, embedded into the library
 * at build time; all are checked here.
 *
 * Keywords (docs/tools.md "Input schemas"): type (a name or an array of names; "integer" is a
 * number without a fractional part), enum, const; minLength and maxLength (in code points),
 * pattern (POSIX ERE, after translating the common ECMAScript escapes such as \d \w \s: rx.h);
 * minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers, or draft-4 booleans),
 * multipleOf (exact: both numbers are read as the shortest decimal that reads back as the
 * double cJSON holds, as JSON serializers print them, so 0.0075 is a multiple of 0.0001 and
 * 1e308 is not a multiple of 0.123456789); properties, patternProperties,
 * additionalProperties, propertyNames, required, minProperties, maxProperties,
 * dependentRequired, dependentSchemas, dependencies (draft 7: either form);
 * prefixItems and items (2020-12), or the older array form of items with additionalItems;
 * minItems, maxItems, uniqueItems, contains, minContains, maxContains; allOf, anyOf, oneOf,
 * not, if/then/else; unevaluatedProperties and unevaluatedItems, which see what properties,
 * patternProperties, additionalProperties, prefixItems, items, contains, and the in-place
 * subschemas that matched (allOf, anyOf, oneOf, if/then/else, dependentSchemas, $ref)
 * evaluated; boolean schemas. References: $ref to a JSON pointer ("#/$defs/x"), to an
 * $anchor (or a $dynamicAnchor, taken as a plain anchor), or to a subschema's $id, resolved
 * against the base URI $id sets (within the one document: nothing is fetched), or into an
 * embedded schema by file name ("call-tool-result.schema.json#/$defs/x").
 *
 * Annotations, never asserted: format (the 2020-12 default), title, description, default,
 * examples, deprecated, readOnly, writeOnly, $comment, $schema, $vocabulary,
 * contentMediaType, contentEncoding, contentSchema, MCP's enumNames; and every keyword this
 * validator does not know ("x-*", vendor extensions: 2020-12 makes unknown keywords
 * annotations, and MCP servers put all kinds of things into their schemas).
 * The rule against skipping silently: the known validation keywords mcpq does not implement
 * ($dynamicRef, $recursiveRef, $recursiveAnchor, and draft 3's extends, disallow,
 * divisibleBy) make sch_schema_check and sch_compile refuse the schema, naming the keyword and
 * its path; sch_validate meeting $dynamicRef fails the same way.
 *
 * Errors are one line "<path>: <message>", where the path starts at the caller's root name
 * and names object members as ".name" and array items as "[i]"; a message from a keyword
 * added in 2020-12 names it:
 *   arguments.a: expected integer, got string
 *   arguments: missing required property "b"
 *   arguments.n: must be a multiple of 0.5 (multipleOf)
 * Schemas and instances come from users: nesting is bounded (SCH_MAX_DEPTH, $ref hops
 * included, so a cyclic $ref ends there), a validation follows at most SCH_MAX_REFS $refs (a
 * schema whose references fan out cannot run for long), and a malformed schema is reported
 * as an error, never a crash.
 *
 * Every function here is thread-safe; schemas, compiled schemas and instances are only read.
 */
#ifndef MCPQ_SCHEMA_H
#define MCPQ_SCHEMA_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Nesting of schema or instance deeper than this is an error ($ref hops count as levels). */
#define SCH_MAX_DEPTH 64
/* At most this many $refs are followed in one validation; more is an error. */
#define SCH_MAX_REFS 100000

/* A schema checked once (sch_schema_check's rules), with its patterns compiled and its
 * identifiers indexed, for validating many instances: a tool version's inputSchema is
 * compiled when the registry snapshot is built and freed with it. */
typedef struct sch_compiled sch_compiled_t;

/*
 * Validates instance against schema. root names the instance in error paths ("$",
 * "arguments"; NULL means "$"). Returns 0 when valid; MCPQ_EINVAL with errstr =
 * "<path>: <message>" for the first error found (an invalid instance or an invalid
 * schema alike); MCPQ_ENOMEM when memory ran out. errstr may be NULL.
 */
int sch_validate(const cJSON *schema, const cJSON *instance, const char *root, char *errstr,
                 size_t errstr_size);

/*
 * Checks that schema itself is usable by sch_validate: every supported keyword has a
 * value of the right type, every pattern compiles, every $ref resolves, no two subschemas
 * share an identifier, nesting is bounded, and no keyword mcpq does not implement is used
 * (the list above; unknown keywords are annotations and pass). Use it where a schema is accepted
 * (config load, admin API) so a broken schema is refused there rather than on every call. root
 * names the schema in error paths
 * ("$.tools[0].versions[0].inputSchema"). Returns 0 or MCPQ_EINVAL with errstr filled.
 */
int sch_schema_check(const cJSON *schema, const char *root, char *errstr, size_t errstr_size);

/*
 * Compiles schema (copied: the caller keeps its own) after the checks of sch_schema_check.
 * NULL with errstr filled when the schema is refused or memory ran out.
 */
sch_compiled_t *sch_compile(const cJSON *schema, const char *root, char *errstr,
                            size_t errstr_size);
void sch_compiled_free(sch_compiled_t *comp);

/* sch_validate with a compiled schema: the same result and message, without compiling. */
int sch_compiled_validate(const sch_compiled_t *comp, const cJSON *instance, const char *root,
                          char *errstr, size_t errstr_size);

/* The compiled copy of the schema (read-only, lives as long as comp). */
const cJSON *sch_compiled_schema(const sch_compiled_t *comp);

/*
 * An embedded schema by file name ("config.schema.json"), parsed once on first use and
 * kept for the life of the process; NULL if unknown. The result must not be modified.
 */
const cJSON *sch_builtin(const char *name);

#endif
