/*
 * builtin.c - the builtin executor (docs/executors.md): tools the worker answers itself.
 *
 *   echo   its arguments as compact JSON text and as structuredContent
 *   sleep  waits arguments.ms (an integer >= 0) on a loop timer, "slept <ms> ms"
 *   fail   isError with arguments.message (or "tool failed")
 *
 * and the tools that ask their client through worker/core/ask.h (docs/tools.md, "Asking the
 * user"): confirm (the demo: a yes/no elicitation) and the MCP conformance suite's fixtures
 * test_elicitation, test_sampling, test_elicitation_sep1034_defaults and
 * test_elicitation_sep1330_enums, each asking exactly what its scenario expects and answering
 * the text it names. An error answer (the client did not declare the capability, did not
 * answer in time) is an isError result with its message.
 *
 * The executor config is {"type": "builtin", "name": "<tool>"}. sleep keeps its timer and an
 * asking tool its open question as state; cancelling either ends it at once (job.c abandons
 * the question).
 */
#include "job.h"

#include "ask.h"

#include "log.h"
#include "output.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLEEP_MAX_MS 86400000.0 /* a day: the longest deadline a tool may have */

typedef struct builtin_state { /* sleep's timer, or an asking tool's */
    wrk_loop_timer_t timer;
    long long ms;
    const struct ask_tool *asking; /* an asking tool waiting for its answer (no timer) */
} builtin_state_t;

/* ---- tools that ask (ask.h) ---- */

/* The question an asking tool puts (one request, key "q"), from its arguments; NULL with why
 * filled when the arguments do not fit. And its result from the answer's "result". */
typedef struct ask_tool {
    const char *name;
    cJSON *(*request)(const cJSON *args, char *why, size_t why_size);
    cJSON *(*result)(const cJSON *answer);
} ask_tool_t;

#define ASK_KEY "q"

/* {"method": method, "params": params JSON text}; NULL on ENOMEM or bad text. */
static cJSON *request_of(const char *method, const char *params)
{
    cJSON *r = cJSON_CreateObject();
    cJSON *p = cJSON_Parse(params);
    if (!r || !p || !cJSON_AddStringToObject(r, "method", method)) {
        cJSON_Delete(r);
        cJSON_Delete(p);
        return NULL;
    }
    cJSON_AddItemToObject(r, "params", p);
    return r;
}

/* A string argument (NULL when absent or not a string). */
static const char *arg_str(const cJSON *args, const char *name)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, name));
}

/* An elicitation/create request: message and requestedSchema (JSON text). */
static cJSON *elicit(const char *message, const char *schema)
{
    cJSON *r = request_of("elicitation/create", schema);
    cJSON *schema_obj = r ? cJSON_DetachItemFromObjectCaseSensitive(r, "params") : NULL;
    cJSON *params = r ? cJSON_AddObjectToObject(r, "params") : NULL;
    if (!params || !schema_obj || !cJSON_AddStringToObject(params, "message", message)) {
        cJSON_Delete(r);
        cJSON_Delete(schema_obj);
        return NULL;
    }
    cJSON_AddItemToObject(params, "requestedSchema", schema_obj);
    return r;
}

/* The text "<prefix>action=<action>, content=<content JSON>" (content {} when absent). */
static cJSON *elicit_text(const char *prefix, const cJSON *res, const char *sep, const char *end)
{
    const char *action = arg_str(res, "action");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(res, "content");
    char *c = content ? cJSON_PrintUnformatted(content) : NULL;
    size_t n = strlen(prefix) + strlen(action ? action : "") + (c ? strlen(c) : 2) + 64;
    char *text = malloc(n);
    cJSON *out = NULL;
    if (text) {
        snprintf(text, n, "%saction%s%s, content%s%s%s", prefix, sep, action ? action : "", sep,
                 c ? c : "{}", end);
        out = wrk_output_text(text, strlen(text), 0);
    }
    free(text);
    free(c);
    return out;
}

static cJSON *q_elicitation(const cJSON *args, char *why, size_t why_size)
{
    const char *m = arg_str(args, "message");
    if (!m) {
        snprintf(why, why_size, "test_elicitation: arguments.message must be a string");
        return NULL;
    }
    return elicit(m, "{\"type\":\"object\",\"properties\":{"
                     "\"username\":{\"type\":\"string\",\"description\":\"User's response\"},"
                     "\"email\":{\"type\":\"string\",\"description\":\"User's email "
                     "address\"}},\"required\":[\"username\",\"email\"]}");
}

static cJSON *r_elicitation(const cJSON *res)
{
    return elicit_text("User response: <", res, ": ", ">");
}

static cJSON *q_sampling(const cJSON *args, char *why, size_t why_size)
{
    const char *prompt = arg_str(args, "prompt");
    if (!prompt) {
        snprintf(why, why_size, "test_sampling: arguments.prompt must be a string");
        return NULL;
    }
    cJSON *r = request_of("sampling/createMessage", "{\"messages\":[{\"role\":\"user\","
                                                    "\"content\":{\"type\":\"text\"}}],"
                                                    "\"maxTokens\":100}");
    cJSON *content = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(r, "params"), "messages"),
                           0),
        "content");
    if (!content || !cJSON_AddStringToObject(content, "text", prompt)) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

static cJSON *r_sampling(const cJSON *res)
{
    const char *text = arg_str(cJSON_GetObjectItemCaseSensitive(res, "content"), "text");
    char buf[4096];
    snprintf(buf, sizeof(buf), "LLM response: %s", text ? text : "");
    return wrk_output_text(buf, strlen(buf), 0);
}

static cJSON *q_sep1034(const cJSON *args, char *why, size_t why_size)
{
    (void)args;
    (void)why;
    (void)why_size;
    return elicit("Please review and update the form fields with defaults",
                  "{\"type\":\"object\",\"properties\":{"
                  "\"name\":{\"type\":\"string\",\"description\":\"User name\","
                  "\"default\":\"John Doe\"},"
                  "\"age\":{\"type\":\"integer\",\"description\":\"User age\",\"default\":30},"
                  "\"score\":{\"type\":\"number\",\"description\":\"User score\","
                  "\"default\":95.5},"
                  "\"status\":{\"type\":\"string\",\"description\":\"User status\","
                  "\"enum\":[\"active\",\"inactive\",\"pending\"],\"default\":\"active\"},"
                  "\"verified\":{\"type\":\"boolean\",\"description\":\"Verification "
                  "status\",\"default\":true}}}");
}

static cJSON *q_sep1330(const cJSON *args, char *why, size_t why_size)
{
    (void)args;
    (void)why;
    (void)why_size;
    return elicit(
        "Please select options from the enum fields",
        "{\"type\":\"object\",\"properties\":{"
        "\"untitledSingle\":{\"type\":\"string\",\"description\":\"Select one option\","
        "\"enum\":[\"option1\",\"option2\",\"option3\"]},"
        "\"titledSingle\":{\"type\":\"string\",\"description\":\"Select one option with "
        "titles\",\"oneOf\":[{\"const\":\"value1\",\"title\":\"First Option\"},"
        "{\"const\":\"value2\",\"title\":\"Second Option\"},"
        "{\"const\":\"value3\",\"title\":\"Third Option\"}]},"
        "\"legacyEnum\":{\"type\":\"string\",\"description\":\"Select one option (legacy)\","
        "\"enum\":[\"opt1\",\"opt2\",\"opt3\"],"
        "\"enumNames\":[\"Option One\",\"Option Two\",\"Option Three\"]},"
        "\"untitledMulti\":{\"type\":\"array\",\"description\":\"Select multiple options\","
        "\"minItems\":1,\"maxItems\":3,\"items\":{\"type\":\"string\","
        "\"enum\":[\"option1\",\"option2\",\"option3\"]}},"
        "\"titledMulti\":{\"type\":\"array\",\"description\":\"Select multiple options with "
        "titles\",\"minItems\":1,\"maxItems\":3,\"items\":{\"anyOf\":["
        "{\"const\":\"value1\",\"title\":\"First Choice\"},"
        "{\"const\":\"value2\",\"title\":\"Second Choice\"},"
        "{\"const\":\"value3\",\"title\":\"Third Choice\"}]}}},"
        "\"required\":[]}");
}

static cJSON *r_completed(const cJSON *res)
{
    return elicit_text("Elicitation completed: ", res, "=", "");
}

static cJSON *q_confirm(const cJSON *args, char *why, size_t why_size)
{
    const char *q = arg_str(args, "question");
    (void)why;
    (void)why_size;
    return elicit(q ? q : "Proceed?",
                  "{\"type\":\"object\",\"properties\":{\"confirmed\":{\"type\":\"boolean\","
                  "\"title\":\"Yes?\",\"description\":\"Check to say yes\"}},"
                  "\"required\":[\"confirmed\"]}");
}

static cJSON *r_confirm(const cJSON *res)
{
    const char *action = arg_str(res, "action");
    const cJSON *yes = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(res, "content"), "confirmed");
    const char *text = "You cancelled.";
    if (action && strcmp(action, "accept") == 0)
        text = cJSON_IsTrue(yes) ? "You said yes." : "You said no.";
    else if (action && strcmp(action, "decline") == 0)
        text = "You declined to answer.";
    cJSON *out = wrk_output_text(text, strlen(text), 0);
    cJSON *sc = cJSON_CreateObject();
    cJSON_AddStringToObject(sc, "action", action ? action : "");
    if (cJSON_IsBool(yes))
        cJSON_AddBoolToObject(sc, "confirmed", cJSON_IsTrue(yes));
    if (out)
        cJSON_AddItemToObject(out, "structuredContent", sc);
    else
        cJSON_Delete(sc);
    return out;
}

static const ask_tool_t ask_tools[] = {
    {"confirm", q_confirm, r_confirm},
    {"test_elicitation", q_elicitation, r_elicitation},
    {"test_sampling", q_sampling, r_sampling},
    {"test_elicitation_sep1034_defaults", q_sep1034, r_completed},
    {"test_elicitation_sep1330_enums", q_sep1330, r_completed},
};

/* The answer: the tool's result, or an isError result with an error answer's message. */
static void ask_answered(wrk_job_t *job, const cJSON *answers, void *arg)
{
    builtin_state_t *s = arg;
    const ask_tool_t *t = s->asking;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(answers, ASK_KEY);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(a, "result");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(a, "error");
    cJSON *out;
    if (cJSON_IsObject(res)) {
        out = t->result(res);
    } else {
        const char *m = arg_str(err, "message");
        out = wrk_output_errorf("%s: the client was not asked or did not answer: %s", t->name,
                                m ? m : "no answer");
    }
    free(s);
    job->ex_state = NULL;
    wrk_job_finish(job, out);
}

static int builtin_ask_start(wrk_job_t *job, const ask_tool_t *t, const cJSON *args)
{
    char why[256] = "";
    cJSON *req = t->request(args, why, sizeof(why));
    if (!req) {
        if (!why[0])
            return -1;
        wrk_job_finish(job, wrk_output_errorf("%s", why));
        return 0;
    }
    cJSON *reqs = cJSON_CreateObject();
    builtin_state_t *s = calloc(1, sizeof(*s));
    if (!reqs || !s) {
        cJSON_Delete(req);
        cJSON_Delete(reqs);
        free(s);
        return -1;
    }
    cJSON_AddItemToObject(reqs, ASK_KEY, req);
    s->asking = t;
    job->ex_state = s;
    int rc = wrk_ask_open(job, reqs, ask_answered, s, why, sizeof(why));
    cJSON_Delete(reqs);
    if (rc < 0) {
        free(s);
        job->ex_state = NULL;
        wrk_job_finish(job, wrk_output_errorf("%s: cannot ask the client: %s", t->name, why));
    }
    return 0;
}

static cJSON *builtin_echo(const cJSON *args)
{
    cJSON *empty = NULL;
    if (!args)
        args = empty = cJSON_CreateObject();
    cJSON *res = args ? wrk_output_structured(args) : NULL;
    cJSON_Delete(empty);
    return res;
}

static cJSON *builtin_fail(const cJSON *args)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(args, "message");
    const char *msg = cJSON_IsString(m) && m->valuestring[0] ? m->valuestring : "tool failed";
    return wrk_output_text(msg, strlen(msg), 1);
}

static void sleep_done(wrk_loop_timer_t *t, void *arg)
{
    wrk_job_t *job = arg;
    builtin_state_t *s = job->ex_state;
    (void)t;
    char text[64];
    snprintf(text, sizeof(text), "slept %lld ms", s->ms);
    cJSON *res = wrk_output_text(text, strlen(text), 0);
    cJSON *sc = cJSON_CreateObject();
    if (res && sc && cJSON_AddNumberToObject(sc, "slept_ms", (double)s->ms)) {
        cJSON *is_error = cJSON_DetachItemFromObjectCaseSensitive(res, "isError");
        cJSON_AddItemToObject(res, "structuredContent", sc);
        cJSON_AddItemToObject(res, "isError", is_error);
        sc = NULL;
    } else {
        cJSON_Delete(res);
        res = NULL;
    }
    cJSON_Delete(sc);
    free(s);
    wrk_job_finish(job, res);
}

static int builtin_sleep_start(wrk_job_t *job, const cJSON *args)
{
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(args, "ms");
    if (!cJSON_IsNumber(ms) || !isfinite(ms->valuedouble) || ms->valuedouble < 0 ||
        ms->valuedouble != floor(ms->valuedouble) || ms->valuedouble > SLEEP_MAX_MS) {
        wrk_job_finish(job, wrk_output_errorf("sleep: arguments.ms must be an integer from 0 "
                                              "to %.0f",
                                              SLEEP_MAX_MS));
        return 0;
    }
    builtin_state_t *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->ms = (long long)ms->valuedouble;
    wrk_loop_timer_init(&s->timer, sleep_done, job);
    if (wrk_loop_timer_start(job->rt->loop, &s->timer, s->ms) < 0) {
        free(s);
        return -1;
    }
    job->ex_state = s;
    return 0;
}

static int builtin_start(wrk_job_t *job)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(job->env.executor, "name");
    const char *n = cJSON_IsString(name) ? name->valuestring : "";
    const cJSON *args = job->env.arguments;
    if (strcmp(n, "echo") == 0) {
        wrk_job_finish(job, builtin_echo(args));
    } else if (strcmp(n, "sleep") == 0) {
        return builtin_sleep_start(job, args);
    } else if (strcmp(n, "fail") == 0) {
        wrk_job_finish(job, builtin_fail(args));
    } else {
        for (size_t i = 0; i < sizeof(ask_tools) / sizeof(ask_tools[0]); i++)
            if (strcmp(n, ask_tools[i].name) == 0)
                return builtin_ask_start(job, &ask_tools[i], args);
        wrk_job_finish(job, wrk_output_errorf("builtin tool \"%.64s\" does not exist (builtin "
                                              "tools: echo, sleep, fail, confirm, "
                                              "test_elicitation, test_sampling, "
                                              "test_elicitation_sep1034_defaults, "
                                              "test_elicitation_sep1330_enums)",
                                              n));
    }
    return 0;
}

static void builtin_cancel(wrk_job_t *job, wrk_cancel_t how)
{
    (void)how;
    builtin_state_t *s = job->ex_state;
    if (!s)
        return;
    wrk_ask_abandon(job); /* an asking tool: job.c did already; no callback after this */
    if (!s->asking)
        wrk_loop_timer_stop(job->rt->loop, &s->timer);
    free(s);
    job->ex_state = NULL;
    wrk_job_finish(job, NULL);
}

const wrk_executor_t wrk_builtin_executor = {
    .type = "builtin",
    .start = builtin_start,
    .cancel = builtin_cancel,
};
