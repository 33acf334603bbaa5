#include "whq.h"

#include "err.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

/* The only top-level name it defines is whq_enqueue, so it can be prepended to any script. */
const char WHQ_LUA_ENQUEUE[] =
    "local function whq_enqueue(tenant, event, task_id, data_json, iso_ts, now_ms, id_base)\n"
    "  if event ~= 'task.running' and event ~= 'task.completed' and\n"
    "     event ~= 'task.terminated' and event ~= 'task.cancelled' then return 0 end\n"
    "  local doc = redis.call('HGET', '{mcpq}:registry', 'tenant:' .. tenant)\n"
    "  if not doc then return 0 end\n"
    "  local ok, t = pcall(cjson.decode, doc)\n"
    "  if not ok or type(t) ~= 'table' or type(t.webhooks) ~= 'table' then return 0 end\n"
    "  local now = string.format('%d', tonumber(now_ms))\n"
    "  local body = '{\"type\":\"' .. event .. '\",\"timestamp\":\"' .. iso_ts ..\n"
    "    '\",\"data\":' .. data_json .. '}'\n"
    "  local idx = '" WHQ_INDEX_PREFIX "' .. tenant\n"
    "  local tp = redis.call('HGET', '{mcpq}:task:' .. task_id, 'traceparent') or ''\n"
    "  local n = 0\n"
    "  for _, w in ipairs(t.webhooks) do\n"
    "    local sub = false\n"
    "    if type(w) == 'table' and type(w.id) == 'string' and type(w.events) == 'table' then\n"
    "      for _, e in ipairs(w.events) do\n"
    "        if e == event then sub = true end\n"
    "      end\n"
    "    end\n"
    "    if sub then\n"
    "      n = n + 1\n"
    "      local id = 'msg_' .. id_base .. '_' .. n\n"
    "      local k = '" WHQ_DELIVERY_PREFIX "' .. id\n"
    "      redis.call('HSET', k, 'id', id, 'tenant', tenant, 'webhook', w.id, 'event', event,\n"
    "        'task', task_id, 'body', body, 'created_ms', now, 'attempts', '0',\n"
    "        'status', 'pending', 'next_ms', now, 'last_status', '', 'last_error', '',\n"
    "        'log', '[]', 'traceparent', tp)\n"
    "      redis.call('EXPIRE', k, " STR(
        WHQ_RETENTION_S) ")\n"
                         "      redis.call('ZADD', '" WHQ_DUE_KEY "', now, id)\n"
                         "      redis.call('ZADD', idx, now, id)\n"
                         "    end\n"
                         "  end\n"
                         "  if n > 0 then\n"
                         "    redis.call('ZREMRANGEBYSCORE', idx, '-inf',\n"
                         "      '(' .. string.format('%d', tonumber(now) - " STR(
                             WHQ_RETENTION_S) " * 1000))\n"
                                              "    redis.call('ZREMRANGEBYRANK', idx, 0, -" STR(
                                                  WHQ_INDEX_MAX) " - 1)\n"
                                                                 "  end\n"
                                                                 "  return n\n"
                                                                 "end\n";

const char WHQ_LUA_CLOCK[] =
    "local function now_ms()\n"
    "  local t = redis.call('TIME')\n"
    "  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "end\n"
    "local function iso(ms)\n"
    "  local s = math.floor(ms / 1000)\n"
    "  local days = math.floor(s / 86400)\n"
    "  local rem = s - days * 86400\n"
    "  local z = days + 719468\n"
    "  local era = math.floor(z / 146097)\n"
    "  local doe = z - era * 146097\n"
    "  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)\n"
    "                          - math.floor(doe / 146096)) / 365)\n"
    "  local y = yoe + era * 400\n"
    "  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))\n"
    "  local mp = math.floor((5 * doy + 2) / 153)\n"
    "  local d = doy - math.floor((153 * mp + 2) / 5) + 1\n"
    "  local m = mp < 10 and mp + 3 or mp - 9\n"
    "  if m <= 2 then y = y + 1 end\n"
    "  return string.format('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', y, m, d,\n"
    "    math.floor(rem / 3600), math.floor(rem % 3600 / 60), rem % 60, ms % 1000)\n"
    "end\n";

/* The standalone call (after WHQ_LUA_CLOCK): Redis's clock, then whq_enqueue. */
static const char standalone[] =
    "local now = now_ms()\n"
    "return whq_enqueue(ARGV[1], ARGV[2], ARGV[3], ARGV[4], iso(now), now, ARGV[5])\n";

int whq_event_known(const char *event)
{
    static const char *const known[] = {"task.running", "task.completed", "task.terminated",
                                        "task.cancelled"};
    for (size_t i = 0; event && i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(event, known[i]) == 0)
            return 1;
    return 0;
}

int whq_event(kv_pool_t *kv, const char *tenant, const char *event, const char *task_id,
              const char *data_json, char *errstr, size_t errstr_size)
{
    if (!kv || !tenant || !*tenant || !task_id || !*task_id || !data_json ||
        !whq_event_known(event)) {
        snprintf(errstr, errstr_size, "whq_event: bad tenant, event or task id");
        return MCPQ_EINVAL;
    }
    cJSON *data = cJSON_Parse(data_json);
    int is_obj = cJSON_IsObject(data);
    cJSON_Delete(data);
    if (!is_obj) {
        snprintf(errstr, errstr_size, "whq_event: data is not a JSON object");
        return MCPQ_EINVAL;
    }
    size_t n1 = strlen(WHQ_LUA_ENQUEUE), nc = strlen(WHQ_LUA_CLOCK), n2 = strlen(standalone);
    char *script = malloc(n1 + nc + n2 + 1);
    if (!script) {
        snprintf(errstr, errstr_size, "out of memory");
        return MCPQ_ENOMEM;
    }
    memcpy(script, WHQ_LUA_ENQUEUE, n1);
    memcpy(script + n1, WHQ_LUA_CLOCK, nc);
    memcpy(script + n1 + nc, standalone, n2 + 1);
    char base[25];
    if (util_random_hex(base, 12) < 0) {
        free(script);
        snprintf(errstr, errstr_size, "no randomness for the delivery id");
        return MCPQ_EIO;
    }
    const char *argv[] = {"EVAL", script, "0", tenant, event, task_id, data_json, base};
    redisReply *r = kv_pool_commandargv(kv, errstr, errstr_size, 8, argv, NULL);
    free(script);
    if (!r)
        return MCPQ_EUNAVAIL;
    int rc = MCPQ_EPROTO;
    if (r->type == REDIS_REPLY_INTEGER && r->integer >= 0 && r->integer < (1 << 20))
        rc = (int)r->integer;
    else
        snprintf(errstr, errstr_size, "whq_event: unexpected reply from Redis");
    freeReplyObject(r);
    return rc;
}
