/*
 * pin.h - pinned tool definitions (docs/security.md, "Pinned tool definitions"): the defense
 * against a tool poisoning or "rug pull", an upstream MCP server that changes a tool's
 * description or schema after an operator approved it.
 *
 * A federated server whose entry says "federate": {..., "pin": true} has its tools' definitions
 * pinned. The definition of a tool is {name, title, description, inputSchema, outputSchema,
 * annotations} of its published version (the registry name: prefix + upstream name); its hash
 * is SHA-256 over its canonical JSON (ing_pin_canonical: object members sorted by name at every
 * level, no white space), lowercase hex.
 *
 * Two members of a tool's registry document (schemas/config.schema.json, $defs/tool) carry
 * the state:
 *   "pinned":     {"sha256", "approvedAt", "approvedBy", "definition"}: what an operator
 *                 approved (POST /admin/v1/tenants/{t}/tools/{name}:approve or
 *                 .../servers/{s}:approve, ing_pin_approve); kept across refreshes.
 *   "quarantine": {"sha256", "since", "reason", "changed"}: the published definition is not
 *                 the approved one; the tool is hidden from tools/list and its calls are
 *                 refused (registry.h, ing_tool_t.quarantined) until approved.
 *
 * Decision: with pin on, a tool never approved is quarantined as well (reason "new"), not
 * trusted on first use: an upstream that is already poisoned when first imported would
 * otherwise be trusted. Turning pin on for a running upstream therefore hides its tools until
 * the operator approves the server once (:approve on the server approves every tool of it).
 * With pin off, approvals are kept but nothing is quarantined.
 *
 * Every function here is pure (no I/O, no globals) and thread-safe.
 */
#ifndef MCPQ_ING_PIN_H
#define MCPQ_ING_PIN_H

#include <cjson/cJSON.h>
#include <stddef.h>

#define ING_PIN_SHA_LEN 64
/* The members of a definition, in the order "changed" lists them. */
#define ING_PIN_MEMBERS                                                                            \
    {                                                                                              \
        "name", "title", "description", "inputSchema", "outputSchema", "annotations"               \
    }

/* The canonical JSON text of v (members sorted by name at every level, compact), to free with
 * cJSON_free; NULL on ENOMEM. */
char *ing_pin_canonical(const cJSON *v);

/* The definition of a tool document's published version: a new object with "name" and those of
 * title, description, inputSchema, outputSchema, annotations the version has; NULL when the
 * tool has no published version (or ENOMEM). */
cJSON *ing_pin_definition(const cJSON *tool);

/* The hash of a definition into out (65 bytes: 64 hex digits and a NUL). 0, or MCPQ_ENOMEM. */
int ing_pin_hash(const cJSON *definition, char out[ING_PIN_SHA_LEN + 1]);

/* What ing_pin_refresh decided, for the caller's metric, log line and tool.changed event. */
typedef struct ing_pin_change {
    int quarantined;    /* 1: the tool to write is quarantined */
    int newly;          /* 1: it was not quarantined with this definition before (fire the event) */
    int restored;       /* 1: it was quarantined and its definition is the approved one again */
    const char *reason; /* "new" (never approved) or "changed"; NULL when not quarantined */
    char old_sha[ING_PIN_SHA_LEN + 1]; /* the approved hash, "" when never approved */
    char new_sha[ING_PIN_SHA_LEN + 1]; /* the refreshed definition's hash */
    cJSON *changed; /* when quarantined: a new array of the member names that differ from
                     * the approved definition (empty for "new"); the caller frees it */
} ing_pin_change_t;

/*
 * The one check of a refreshed tool (federate.c calls it where an import writes a tool):
 * stored is the tool's current registry document (NULL when new), fresh the document the
 * import built (consumed), pin the server's federate.pin, now an RFC 3339 time. Returns the
 * document to write: fresh with stored's "pinned" carried over and, with pin on and the
 * fresh definition's hash not the approved one, a "quarantine" member (its "since" kept from
 * stored when the pending hash is the same, so a refresh that finds nothing new writes
 * nothing). chg (may be NULL) says what happened. NULL only on ENOMEM (fresh freed).
 */
cJSON *ing_pin_refresh(const cJSON *stored, cJSON *fresh, int pin, const char *now,
                       ing_pin_change_t *chg);

/*
 * What writing the tool document written over stored (NULL: new) does to its pin state, for
 * the report after the write is committed (federate.c): a new object
 *   {"tool", "quarantined": true, "reason", "old_sha256" (null: never approved), "new_sha256",
 *    "changed"}   when written is quarantined and stored was not with the same hash (the
 *                 tool.changed event's data, with tenant and server added), or
 *   {"tool", "quarantined": false}  when stored was quarantined and written is not;
 * NULL when nothing changes (or written is not an object: a deletion).
 */
cJSON *ing_pin_transition(const cJSON *stored, const cJSON *written);

/* Frees what chg holds (chg->changed). */
void ing_pin_change_cleanup(ing_pin_change_t *chg);

/*
 * Approves tool (a registry document, changed in place) as it is published now: "pinned" set
 * to its definition, hash, now and by, "quarantine" removed. expect_sha (may be NULL) is the
 * hash the operator reviewed: when the definition's hash differs, nothing changes and 1 is
 * returned (the definition changed since the review). 0 on success; MCPQ_EINVAL when the tool
 * has no published version or is not a tool (ing_pin_is_tool); MCPQ_ENOMEM.
 */
int ing_pin_approve(cJSON *tool, const char *by, const char *now, const char *expect_sha);

/*
 * The pin state of a tool document as the admin API shows it (a new object), or NULL when the
 * tool has neither "pinned" nor "quarantine" (never pinned):
 *   {"state": "approved" | "quarantined", "sha256"?, "approvedAt"?, "approvedBy"?,
 *    "pending"?: {"sha256", "since", "reason", "changed", "definition", "diff"}}
 * where "pending" (only while quarantined) holds the new definition for review and "diff"
 * one entry per changed member: {"member", "approved", "pending"} (values as JSON, absent
 * when the member is absent on that side).
 */
cJSON *ing_pin_show(const cJSON *tool);

/* 1 when a registry document is a tool (its "kind" absent or "tool"): only tool definitions
 * are pinned; resources, resource templates and prompts are never quarantined. */
int ing_pin_is_tool(const cJSON *doc);

/* 1 when tool (a registry document) is quarantined. */
int ing_pin_quarantined(const cJSON *tool);

#endif
