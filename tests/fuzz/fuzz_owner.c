/*
 * fuzz_owner.c - libFuzzer driver for ingress/core/owner.c (owner.h), who may read or act on a
 * task, a webhook delivery or an idempotent replay: ing_owner_binding (the servers an OAuth
 * token's "aud" claim binds it to), ing_owner_of (a principal's owner string), ing_owner_bound
 * and ing_owner_may (the verdict, on a fixed registry snapshot built in-process).
 *
 * The input is fields separated by NUL or newline, then the claims:
 *   1. the base URL ("-": NULL, no trusted base URL, as when the Host is not allowed);
 *   2. the tenant's oauth.audiences, space-separated ("" none; at most 8);
 *   3. the size of the output buffers, decimal 1..4096 (anything else: ING_OWNER_MAX);
 *   4. the rest: the token's claims as JSON. Besides "aud", the driver reads "kind" (its first
 *      character: 'k' API key, 'a' app, else an OAuth token), "id", "client_id" (the app),
 *      "user", "perms" (space-separated permissions), "owner" (the task's owner string,
 *      absent: the caller's own), "server" and "tool" (the task's; default crm/contacts)
 *      into a principal of tenant acme.
 *
 * Checked, each against an independent reading of the claims (owner.h is the contract):
 *   - binding: 0, MCPQ_ENOTFOUND or MCPQ_ETOOBIG only; never a byte written past n (the buffer
 *     is exactly n bytes, so ASan sees it); "" with 0 exactly when a string aud value is base,
 *     base + "/", base + "/mcp", base + "/mcp/" or one of audiences; otherwise the output is,
 *     in order and without repeats, every server s of an aud value base + "/mcp/<s>" (s 1..127
 *     of [A-Za-z0-9._-]), 0 when it fits, else MCPQ_ETOOBIG with ""; MCPQ_ENOTFOUND (with "")
 *     exactly when no value names this gateway; no base: only audiences count;
 *   - owner string: 0, MCPQ_EINVAL or MCPQ_ETOOBIG, "" on a failure; on 0 exactly "key:<id>",
 *     "app:<id>", "user:<user>" or "client:<client_id>" (a token with a user claim is never
 *     "client:"), MCPQ_ETOOBIG exactly when that does not fit;
 *   - the verdict: ing_owner_bound is 1 exactly for a server in the binding (every server with
 *     none); ing_owner_may is 1 exactly when the caller is bound to the server, the tool's
 *     access rules let it through (ing_access_check) and it holds "tasks:all" or its owner
 *     string equals the task's non-empty owner; so a token whose aud names only some servers
 *     never reaches a task of another server.
 */
#include "access.h"
#include "err.h"
#include "fuzz.h"
#include "owner.h"
#include "registry.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#define MAX_AUDIENCES 8
#define MAX_OUT 4096
#define WANT_MAX (MAX_OUT + 256) /* the expected servers: n and one more name at most */

/* The snapshot the verdict is given: tenant acme (API key ci), servers crm and hr without
 * rules and ops only the app "billing" may reach; tools contacts (crm, no rules), payroll (hr:
 * alice, bob and the key ci, with the permission "hr") and deploy (ops, no rules of its own). */
#define SERVER(NAME, ACCESS) "{\"tenant\":\"acme\",\"name\":\"" NAME "\"" ACCESS "}"
#define TOOL(SRV, NAME, ACCESS)                                                                    \
    "{\"tenant\":\"acme\",\"server\":\"" SRV "\",\"name\":\"" NAME "\",\"published\":\"1\"" ACCESS \
    ",\"versions\":[{\"version\":\"1\"}]}"
static const char *const docs[] = {
    "tenant:acme",
    "{\"id\":\"acme\",\"api_keys\":[{\"id\":\"ci\",\"sha256\":\"" /* any 64 hex digits */
    "00000000000000000000000000000000000000000000000000000000000000ff\"}]}",
    "server:acme:crm",
    SERVER("crm", ""),
    "server:acme:hr",
    SERVER("hr", ""),
    "server:acme:ops",
    SERVER("ops", ",\"access\":{\"apps\":[\"billing\"]}"),
    "tool:acme:contacts",
    TOOL("crm", "contacts", ""),
    "tool:acme:payroll",
    TOOL("hr", "payroll",
         ",\"access\":{\"users\":[\"alice\",\"bob\"],\"keys\":[\"ci\"],\"scopes\":[\"hr\"]}"),
    "tool:acme:deploy",
    TOOL("ops", "deploy", ""),
};

static ing_registry_t *registry(void)
{
    static ing_registry_t *reg;
    if (!reg) {
        enum { N = sizeof(docs) / sizeof(docs[0]) };
        size_t lens[N];
        char err[256];
        for (size_t i = 0; i < N; i++)
            lens[i] = strlen(docs[i]);
        reg = ing_registry_build(docs, lens, N, 1, err, sizeof(err));
        if (!reg) {
            fprintf(stderr, "fuzz_owner: registry: %s\n", err);
            abort();
        }
    }
    return reg;
}

/* 1 when word (len bytes, len > 0) is one of the space-separated words of list. */
static int has_word(const char *list, const char *word, size_t len)
{
    while (list && *list) {
        while (*list == ' ')
            list++;
        size_t l = 0;
        while (list[l] && list[l] != ' ')
            l++;
        if (l && l == len && memcmp(list, word, len) == 0)
            return 1;
        list += l;
    }
    return 0;
}

/* 1 when s is a server name as an aud value may carry one: 1..127 of [A-Za-z0-9._-]. */
static int server_name(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > 127)
        return 0;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == len;
}

/* How the aud value v binds, read independently of owner.c: 1 the whole tenant, 2 the server
 * *server (into v), 0 nothing. */
static int expect_binds(const char *v, const char *base, char **aud, size_t n_aud,
                        const char **server)
{
    for (size_t i = 0; i < n_aud; i++)
        if (strcmp(v, aud[i]) == 0)
            return 1;
    if (!base)
        return 0;
    static const char *const whole[] = {"", "/", "/mcp", "/mcp/"};
    size_t bl = strlen(base);
    if (strlen(v) < bl || memcmp(v, base, bl) != 0)
        return 0;
    for (size_t i = 0; i < sizeof(whole) / sizeof(whole[0]); i++)
        if (strcmp(v + bl, whole[i]) == 0)
            return 1;
    if (strncmp(v + bl, "/mcp/", 5) == 0 && server_name(v + bl + 5)) {
        *server = v + bl + 5;
        return 2;
    }
    return 0;
}

/* 1 when a string value of aud (a string or an array) is exactly base + "/mcp/" + s[0..l). */
static int aud_names(const cJSON *aud, const char *base, const char *s, size_t l)
{
    size_t bl = strlen(base);
    const cJSON *v = cJSON_IsArray(aud) ? aud->child : aud;
    for (; v; v = cJSON_IsArray(aud) ? v->next : NULL) {
        const char *x = cJSON_GetStringValue(v);
        if (x && strlen(x) == bl + 5 + l && memcmp(x, base, bl) == 0 &&
            memcmp(x + bl, "/mcp/", 5) == 0 && memcmp(x + bl + 5, s, l) == 0)
            return 1;
    }
    return 0;
}

/* Checks ing_owner_binding against expect_binds; returns its rc with the servers in out. */
static int check_binding(const cJSON *claims, const char *base, char **aud, size_t n_aud, char *out,
                         size_t n)
{
    /* what it should give: whole tenant, or the distinct servers in order */
    char *want = calloc(1, WANT_MAX);
    FUZZ_CHECK(want != NULL);
    size_t used = 0, need = 0;
    int whole = 0, named = 0;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(claims, "aud");
    const cJSON *v = cJSON_IsArray(a) ? a->child : a;
    for (; v && !whole; v = cJSON_IsArray(a) ? v->next : NULL) {
        const char *server = NULL;
        int b = cJSON_IsString(v) ? expect_binds(v->valuestring, base, aud, n_aud, &server) : 0;
        if (b == 1)
            whole = 1;
        if (b != 2)
            continue;
        named = 1;
        size_t l = strlen(server);
        if (need + 1 > n || has_word(want, server, l))
            continue; /* past n the answer is MCPQ_ETOOBIG whatever follows but a whole value */
        need += (used ? 1 : 0) + l;
        if (used + l + 2 < WANT_MAX) { /* always: used <= n before this add */
            if (used)
                want[used++] = ' ';
            memcpy(want + used, server, l);
            used += l;
            want[used] = '\0';
        }
    }

    char *buf = malloc(n); /* exactly n bytes: a write past it is an ASan report */
    FUZZ_CHECK(buf != NULL);
    memset(buf, 'x', n);
    int rc = ing_owner_binding(claims, base, (const char *const *)aud, n_aud, buf, n);
    FUZZ_CHECK(rc == 0 || rc == MCPQ_ENOTFOUND || rc == MCPQ_ETOOBIG);
    FUZZ_CHECK(memchr(buf, '\0', n) != NULL);
    if (whole) {
        FUZZ_CHECK(rc == 0 && buf[0] == '\0');
    } else if (!named) {
        FUZZ_CHECK(rc == MCPQ_ENOTFOUND && buf[0] == '\0');
    } else if (need + 1 > n) {
        FUZZ_CHECK(rc == MCPQ_ETOOBIG && buf[0] == '\0');
    } else {
        FUZZ_CHECK(rc == 0 && strcmp(buf, want) == 0 && buf[0] != '\0');
        /* every server written is named by a string aud value base + "/mcp/<s>" */
        for (const char *p = buf; *p;) {
            size_t l = strcspn(p, " ");
            FUZZ_CHECK(l > 0 && base != NULL && aud_names(a, base, p, l));
            p += l;
            p += *p == ' ';
        }
    }
    snprintf(out, MAX_OUT, "%s", buf);
    free(buf);
    free(want);
    return rc;
}

static const char *member(const cJSON *claims, const char *name)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(claims, name));
}

/* Checks ing_owner_of against the rules of owner.h; mine gets the string (or ""). */
static void check_owner_of(const ing_principal_t *who, size_t n, char *mine)
{
    char want[2 * MAX_OUT];
    const char *kind = NULL, *id = who->id;
    want[0] = '\0';
    if (who->kind == 'k')
        kind = "key";
    else if (who->kind == 'a')
        kind = "app";
    else if (who->kind == 'o') {
        kind = who->user ? "user" : "client";
        id = who->user ? who->user : who->app;
    }
    int valid = kind && who->id && *who->id && id && *id;
    if (valid)
        snprintf(want, sizeof(want), "%s:%s", kind, id);

    char *buf = malloc(n);
    FUZZ_CHECK(buf != NULL);
    memset(buf, 'x', n);
    int rc = ing_owner_of(who, buf, n);
    FUZZ_CHECK(memchr(buf, '\0', n) != NULL);
    if (!valid)
        FUZZ_CHECK(rc == MCPQ_EINVAL && buf[0] == '\0');
    else if (strlen(want) + 1 > n)
        FUZZ_CHECK(rc == MCPQ_ETOOBIG && buf[0] == '\0');
    else {
        FUZZ_CHECK(rc == 0 && strcmp(buf, want) == 0);
        FUZZ_CHECK(strncmp(buf, "key:", 4) == 0 || strncmp(buf, "app:", 4) == 0 ||
                   strncmp(buf, "user:", 5) == 0 || strncmp(buf, "client:", 7) == 0);
        FUZZ_CHECK(!(who->kind == 'o' && who->user) || strncmp(buf, "user:", 5) == 0);
    }
    snprintf(mine, MAX_OUT, "%s", rc == 0 ? buf : "");
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = NULL, *f[3];
    size_t rest_len = 0;
    const char *rest = fuzz_fields(data, size, &copy, f, 3, &rest_len);
    if (!rest)
        return 0;
    const char *base = f[0] && strcmp(f[0], "-") != 0 ? f[0] : NULL;
    char *aud[MAX_AUDIENCES];
    size_t n_aud = 0;
    for (char *p = f[1]; p && *p && n_aud < MAX_AUDIENCES;) {
        size_t l = strcspn(p, " ");
        if (l)
            aud[n_aud++] = p;
        if (!p[l])
            break;
        p[l] = '\0';
        p += l + 1;
    }
    long n = f[2] && *f[2] ? strtol(f[2], NULL, 10) : 0;
    if (n < 1 || n > MAX_OUT)
        n = ING_OWNER_MAX;

    cJSON *claims = cJSON_ParseWithLength(rest, rest_len);
    char *servers = malloc(MAX_OUT), *mine = malloc(MAX_OUT);
    FUZZ_CHECK(servers && mine);
    int rc = check_binding(claims, base, aud, n_aud, servers, (size_t)n);

    const char *kind = member(claims, "kind");
    ing_principal_t who = {
        .tenant = ing_registry_tenant(registry(), "acme"),
        .kind = kind && (kind[0] == 'k' || kind[0] == 'a') ? kind[0] : 'o',
        .id = member(claims, "id"),
        .app = member(claims, "client_id"),
        .user = member(claims, "user"),
        .perms = member(claims, "perms") ? member(claims, "perms") : "",
        .token_scopes = "",
    };
    who.rate.per_s = -1;
    /* as the front door (auth.c): a token bound to servers keeps them; one naming nothing here
     * is refused there, so only the rest reach the verdict */
    if (who.kind == 'o' && rc == 0 && servers[0])
        who.servers = servers;
    check_owner_of(&who, (size_t)n, mine);

    if (who.kind != 'o' || rc == 0) {
        const char *server = member(claims, "server") ? member(claims, "server") : "crm";
        const char *tool = member(claims, "tool") ? member(claims, "tool") : "contacts";
        const char *owner = cJSON_HasObjectItem(claims, "owner") ? member(claims, "owner") : mine;
        char full[ING_OWNER_MAX];
        int self = ing_owner_of(&who, full, sizeof(full)) == 0 && owner && *owner &&
                   strcmp(owner, full) == 0;
        int bound = !who.servers || (*server && has_word(who.servers, server, strlen(server)));
        FUZZ_CHECK(ing_owner_bound(&who, server) == bound);
        int access = ing_access_check(registry(), &who, server, tool, NULL, 0) == ING_ACCESS_OK;
        int all = has_word(who.perms, ING_OWNER_PERM_ALL, strlen(ING_OWNER_PERM_ALL));
        int may = ing_owner_may(registry(), &who, owner, server, tool);
        FUZZ_CHECK(may == (bound && access && (all || self)));
        /* a token bound to some servers never reaches another server's task */
        if (who.servers && may)
            FUZZ_CHECK(has_word(servers, server, strlen(server)));
    }
    FUZZ_CHECK(ing_owner_may(registry(), NULL, "key:ci", "crm", "contacts") == 0);
    FUZZ_CHECK(ing_owner_bound(NULL, "crm") == 0);

    free(servers);
    free(mine);
    cJSON_Delete(claims);
    free(copy);
    return 0;
}
