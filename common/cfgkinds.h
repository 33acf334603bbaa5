/*
 * cfgkinds.h - the checks a schema cannot make on resources, resource templates and prompts
 * (docs/config-file.md "Kinds"), for the config loader (cfg.c) and, through it, every admin
 * API write.
 *
 * A version of a resource or template has exactly one of "text", "blob" (standard base64,
 * padded) and "executor"; a prompt version exactly one of "messages" and "executor". A
 * template's "uriTemplate" follows kinds.h's rule. A prompt's argument names are unique, and
 * "completions" name only its arguments (a template's: its variables). The size of static
 * content is checked separately against a setting (MCPQ_RESOURCE_MAX_BYTES), by
 * cfg_kinds_sizes, since the loader itself reads no settings.
 *
 * Pure functions: thread-safe.
 */
#ifndef MCPQ_CFGKINDS_H
#define MCPQ_CFGKINDS_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* The default of MCPQ_RESOURCE_MAX_BYTES: the largest static resource content, decoded. */
#define CFG_RESOURCE_MAX_BYTES (1024 * 1024)

/* Checks version v (at path, "$.tools[3].versions[0]") of an object of kind (kinds.h; a
 * tool's versions are cfg.c's). 0, or MCPQ_EINVAL with err = "<path>.<member>: <why>". */
int cfg_kinds_version(int kind, const cJSON *v, const char *path, char *err, size_t err_size);

/* The decoded size in bytes of version v's static content ("text" or "blob"), 0 when it has
 * none. The blob is assumed checked (cfg_kinds_version). */
size_t cfg_kinds_static_bytes(const cJSON *v);

/* Every resource and template version of a normalized config whose static content is larger
 * than max_bytes: 0, or MCPQ_EINVAL with err naming the first one. */
int cfg_kinds_sizes(const cJSON *config, size_t max_bytes, char *err, size_t err_size);

#endif
