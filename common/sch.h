/*
 * sch.h - a JSON Schema validator for the subset mcpq needs.
 *
 * Tool inputSchemas come from users, and every document that crosses a process boundary
 * (config file, job envelope, result record, webhook payload, CallToolResult) is described
 * by a JSON file in schemas/, embedded into the library at build time; both are checked
 * here. Keywords: type (a name or an array of names; "integer" is a number without a
 * fractional part), properties, patternProperties, propertyNames, required,
 * additionalProperties, items (a schema, or the older array form), additionalItems,
 * minItems, maxItems, uniqueItems, enum, const, minLength and maxLength (in code points),
 * pattern (POSIX ERE, after translating the common ECMAScript escapes such as \d \w \s),
 * minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers, or draft-4 booleans),
 * minProperties, maxProperties, anyOf, oneOf, allOf, not, boolean schemas, and $ref to a
 * JSON pointer in the same document ("#/$defs/x", "#/definitions/x") or into an embedded
 * schema by file name ("call-tool-result.schema.json#/$defs/x"). format and unknown
 * keywords are ignored.
 *
 * Errors are one line "<path>: <message>", where the path starts at the caller's root name
 * and names object members as ".name" and array items as "[i]":
 *   arguments.a: expected integer, got string
 *   arguments: missing required property "b"
 * Schemas and instances come from users: recursion is bounded (SCH_MAX_DEPTH) and a
 * malformed schema is reported as an error, never a crash.
 *
 * Every function here is thread-safe; schemas and instances are only read.
 */
#ifndef MCPQ_SCHEMA_H
#define MCPQ_SCHEMA_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Nesting of schema or instance deeper than this is an error. */
#define SCH_MAX_DEPTH 64

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
 * value of the right type, every pattern compiles, every $ref resolves, nesting is
 * bounded. Use it where a schema is accepted (config load, admin API) so a broken schema
 * is refused there rather than on every call. root names the schema in error paths
 * ("$.tools[0].versions[0].inputSchema"). Returns 0 or MCPQ_EINVAL with errstr filled.
 */
int sch_schema_check(const cJSON *schema, const char *root, char *errstr, size_t errstr_size);

/*
 * An embedded schema by file name ("config.schema.json"), parsed once on first use and
 * kept for the life of the process; NULL if unknown. The result must not be modified.
 */
const cJSON *sch_builtin(const char *name);

#endif
