#include "task.h"

#include "kv.h"
#include "util.h"

#include "whq.h"

#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many of the oldest ids of a tenant's index CREATE checks for expired tasks on every
 * call, and at most when the tenant is at its quota (Lua literals). */
#define PRUNE_EACH "16"
#define PRUNE_FULL "1000"

/* Helpers every script shares: queue keys and scores, the webhook event and the wake-up of
 * parked tasks/result calls. The webhook enqueue function and the clock helpers now_ms() and
 * iso() (whq.h) are prepended to this. */
static const char prelude[] =
    "local function qkey(robot)\n"
    "  if not robot or robot == '' then return '{mcpq}:tq:" TASK_ROBOT_ANY "' end\n"
    "  return '{mcpq}:tq:' .. robot\n"
    "end\n"
    "local function qscore(prio, created)\n"
    "  return (100 - tonumber(prio)) * 1e13 + tonumber(created)\n"
    "end\n"
    "local nevents = 0\n"
    "local events = {running = 'task.running', complete = 'task.completed',\n"
    "  terminated = 'task.terminated', cancelled = 'task.cancelled'}\n"
    "local function task_event(id, state, result, id_base, now)\n"
    "  local h = redis.call('HMGET', '{mcpq}:task:' .. id, 'tenant', 'tool')\n"
    "  if not h[1] then return end\n"
    "  local data = '{\"TaskId\":' .. cjson.encode(id) .. ',\"TaskStatus\":\"' .. state ..\n"
    "    '\",\"tool\":' .. cjson.encode(h[2] or '') .. ',\"result\":' .. (result or 'null') .. "
    "'}'\n"
    "  nevents = nevents + 1\n"
    "  whq_enqueue(h[1], events[state], id, data, iso(now), now, id_base .. nevents)\n"
    "end\n"
    "local function notify_waiters(id, kind, data)\n"
    "  local wk = '{mcpq}:task:' .. id .. ':waiters'\n"
    "  for _, s in ipairs(redis.call('SMEMBERS', wk)) do\n"
    "    redis.call('XADD', s, 'MAXLEN', '~', '100000', '*', 'job', id, 'kind', kind,\n"
    "      'data', data)\n"
    "    redis.call('EXPIRE', s, 3600)\n"
    "  end\n"
    "  redis.call('DEL', wk)\n"
    "end\n"
    /* The end of a run: the durable result record, waiting tasks/result calls, webhooks. */
    "local function finished(id, state, result, retention, id_base, now)\n"
    "  local h = redis.call('HMGET', '{mcpq}:task:' .. id, 'tenant', 'tool')\n"
    "  local rec = '{\"v\":1,\"job_id\":' .. cjson.encode(id) .. ',\"tenant\":' ..\n"
    "    cjson.encode(h[1] or '') .. ',\"tool\":' .. cjson.encode(h[2] or '') ..\n"
    "    ',\"status\":\"ok\",\"result\":' .. result .. '}'\n"
    "  redis.call('SET', '{mcpq}:result:' .. id, rec, 'NX', 'EX', retention)\n"
    "  notify_waiters(id, 'result', rec)\n"
    "  task_event(id, state, result, id_base, now)\n"
    "end\n";

static const char *const bodies[TASK_SCRIPT_COUNT] = {
    [TASK_SCRIPT_CREATE] =
        "local k = '{mcpq}:task:' .. ARGV[1]\n"
        "if redis.call('EXISTS', k) == 1 then return 0 end\n"
        "local idx = '" TASK_INDEX_PREFIX "' .. ARGV[2]\n"
        /* The index keeps ids whose hash has expired: the oldest are dropped as they are
         * found (every call looks at a few, a call at the quota at many), then it counts. */
        "local function prune(n)\n"
        "  for _, id in ipairs(redis.call('ZRANGE', idx, 0, n - 1)) do\n"
        "    if redis.call('EXISTS', '{mcpq}:task:' .. id) == 0 then redis.call('ZREM', idx, id) "
        "end\n"
        "  end\n"
        "end\n"
        "local max = tonumber(ARGV[14]) or 0\n"
        "prune(" PRUNE_EACH ")\n"
        "if max > 0 and redis.call('ZCARD', idx) >= max then\n"
        "  prune(" PRUNE_FULL ")\n"
        "  if redis.call('ZCARD', idx) >= max then return -1 end\n"
        "end\n"
        "local now = now_ms()\n"
        "redis.call('HSET', k, 'id', ARGV[1], 'tenant', ARGV[2], 'server', ARGV[3],\n"
        "  'tool', ARGV[4], 'version', ARGV[5], 'args', ARGV[6], 'robot', ARGV[7],\n"
        "  'priority', ARGV[8], 'env', ARGV[9], 'state', 'waiting', 'created_ms', now,\n"
        "  'updated_ms', now, 'attempts', 0, 'ttl_ms', ARGV[11], 'surface', ARGV[12],\n"
        "  'traceparent', ARGV[13] or '')\n"
        "redis.call('EXPIRE', k, ARGV[10])\n"
        "redis.call('ZADD', idx, now, ARGV[1])\n"
        "return now\n",
    [TASK_SCRIPT_ENQUEUE] =
        "local k = '{mcpq}:task:' .. ARGV[1]\n"
        "local h = redis.call('HMGET', k, 'state', 'queued', 'robot', 'priority', 'created_ms')\n"
        "if h[1] ~= 'waiting' or h[2] == '1' then return 0 end\n"
        "redis.call('ZADD', qkey(h[3]), qscore(h[4], h[5]), ARGV[1])\n"
        "redis.call('HSET', k, 'queued', '1')\n"
        "return 1\n",
    [TASK_SCRIPT_CLAIM] =
        "local now = now_ms()\n"
        "local q = qkey(ARGV[1])\n"
        "for i = 1, 50 do\n"
        "  local p = redis.call('ZPOPMIN', q)\n"
        "  if #p == 0 then return nil end\n"
        "  local id = p[1]\n"
        "  local k = '{mcpq}:task:' .. id\n"
        "  if redis.call('HGET', k, 'state') == 'waiting' then\n"
        "    local att = redis.call('HINCRBY', k, 'attempts', 1)\n"
        "    redis.call('HSET', k, 'state', 'running', 'begin_ms', now, 'updated_ms', now,\n"
        "      'worker', ARGV[2], 'queued', '0')\n"
        "    redis.call('ZADD', '{mcpq}:task:leases', now + tonumber(ARGV[3]), id)\n"
        "    task_event(id, 'running', nil, ARGV[4], now)\n"
        "    return {id, redis.call('HGET', k, 'env'), tostring(now), tostring(att)}\n"
        "  end\n"
        "end\n"
        "return nil\n",
    [TASK_SCRIPT_HEARTBEAT] =
        "local now = now_ms()\n"
        "local n = 0\n"
        "for i = 3, #ARGV do\n"
        "  local h = redis.call('HMGET', '{mcpq}:task:' .. ARGV[i], 'state', 'worker')\n"
        "  if h[1] == 'running' and h[2] == ARGV[1] then\n"
        "    redis.call('ZADD', '{mcpq}:task:leases', now + tonumber(ARGV[2]), ARGV[i])\n"
        "    n = n + 1\n"
        "  end\n"
        "end\n"
        "return n\n",
    [TASK_SCRIPT_PROGRESS] =
        "local k = '{mcpq}:task:' .. ARGV[1]\n"
        "local h = redis.call('HMGET', k, 'state', 'worker')\n"
        "if h[1] ~= 'running' or h[2] ~= ARGV[2] then return 0 end\n"
        "redis.call('HSET', k, 'msg', ARGV[3], 'progress', ARGV[4], 'updated_ms', now_ms())\n"
        "return 1\n",
    [TASK_SCRIPT_FINISH] =
        "local k = '{mcpq}:task:' .. ARGV[1]\n"
        "local h = redis.call('HMGET', k, 'state', 'worker')\n"
        "if h[1] ~= 'running' or h[2] ~= ARGV[2] then return 0 end\n"
        "local now = now_ms()\n"
        "redis.call('HSET', k, 'state', ARGV[3], 'result', ARGV[4], 'error', ARGV[5],\n"
        "  'end_ms', now, 'updated_ms', now, 'fault', ARGV[8])\n"
        "redis.call('ZREM', '{mcpq}:task:leases', ARGV[1])\n"
        "redis.call('EXPIRE', k, ARGV[6])\n"
        "finished(ARGV[1], ARGV[3], ARGV[4], ARGV[6], ARGV[7], now)\n"
        "return 1\n",
    [TASK_SCRIPT_REAP] =
        "local now = now_ms()\n"
        "local ids = redis.call('ZRANGEBYSCORE', '{mcpq}:task:leases', '-inf', now, 'LIMIT', 0,\n"
        "  tonumber(ARGV[4]))\n"
        "local out = {}\n"
        "for _, id in ipairs(ids) do\n"
        "  redis.call('ZREM', '{mcpq}:task:leases', id)\n"
        "  local k = '{mcpq}:task:' .. id\n"
        "  local h = redis.call('HMGET', k, 'state', 'attempts', 'robot', 'priority',\n"
        "    'created_ms', 'worker')\n"
        "  if h[1] == 'running' then\n"
        "    local att = tonumber(h[2]) or 0\n"
        "    if att >= tonumber(ARGV[1]) then\n"
        "      local reason = 'its worker (' .. (h[6] or '?') .. ') stopped answering during ' ..\n"
        "        'each of ' .. att .. ' attempts; not run again'\n"
        "      local result = '{\"content\":[{\"type\":\"text\",\"text\":' .. cjson.encode(reason) "
        "..\n"
        "        '}],\"isError\":true}'\n"
        "      redis.call('HSET', k, 'state', 'terminated', 'result', result, 'error', reason,\n"
        "        'end_ms', now, 'updated_ms', now, 'fault', '" TASK_FAULT_INTERNAL "')\n"
        "      redis.call('EXPIRE', k, ARGV[2])\n"
        "      finished(id, 'terminated', result, ARGV[2], ARGV[3], now)\n"
        "      out[#out + 1] = id .. ' terminated'\n"
        "    else\n"
        "      redis.call('HSET', k, 'state', 'waiting', 'worker', '', 'queued', '1',\n"
        "        'updated_ms', now, 'msg', 'waiting again: its worker stopped answering')\n"
        "      redis.call('ZADD', qkey(h[3]), qscore(h[4], h[5]), id)\n"
        "      out[#out + 1] = id .. ' requeued'\n"
        "    end\n"
        "  end\n"
        "end\n"
        "return out\n",
    [TASK_SCRIPT_RELEASE] =
        "local n = 0\n"
        "for _, id in ipairs(redis.call('ZRANGE', '{mcpq}:task:leases', 0, -1)) do\n"
        "  if redis.call('HGET', '{mcpq}:task:' .. id, 'worker') == ARGV[1] then\n"
        "    redis.call('ZADD', '{mcpq}:task:leases', 0, id)\n"
        "    n = n + 1\n"
        "  end\n"
        "end\n"
        "return n\n",
    [TASK_SCRIPT_HANDBACK] =
        "local k = '{mcpq}:task:' .. ARGV[1]\n"
        "local h = redis.call('HMGET', k, 'state', 'worker', 'robot', 'priority', 'created_ms',\n"
        "  'attempts')\n"
        "if h[1] ~= 'running' or h[2] ~= ARGV[2] then return 0 end\n"
        "local att = math.max((tonumber(h[6]) or 1) - 1, 0)\n"
        "redis.call('HSET', k, 'state', 'waiting', 'worker', '', 'queued', '1', 'attempts', att,\n"
        "  'updated_ms', now_ms(), 'msg', 'waiting again: its worker shut down')\n"
        "redis.call('ZREM', '{mcpq}:task:leases', ARGV[1])\n"
        "redis.call('ZADD', qkey(h[3]), qscore(h[4], h[5]), ARGV[1])\n"
        "return 1\n",
    [TASK_SCRIPT_ABANDON] =
        "local k = '{mcpq}:task:' .. ARGV[1]\n"
        "local h = redis.call('HMGET', k, 'state', 'queued')\n"
        "if h[1] ~= 'waiting' or h[2] == '1' then return 0 end\n"
        "local now = now_ms()\n"
        "local result = '{\"content\":[{\"type\":\"text\",\"text\":' .. cjson.encode(ARGV[2]) ..\n"
        "  '}],\"isError\":true}'\n"
        "redis.call('HSET', k, 'state', 'terminated', 'result', result, 'error', ARGV[2],\n"
        "  'end_ms', now, 'updated_ms', now, 'fault', '" TASK_FAULT_INTERNAL "')\n"
        "redis.call('EXPIRE', k, ARGV[3])\n"
        "finished(ARGV[1], 'terminated', result, ARGV[3], ARGV[4], now)\n"
        "return 1\n",
    [TASK_SCRIPT_CANCEL] =
        "local k = '{mcpq}:task:' .. ARGV[1]\n"
        "local h = redis.call('HMGET', k, 'tenant', 'state', 'robot')\n"
        "if h[1] ~= ARGV[2] then return -1 end\n"
        "if h[2] ~= 'waiting' and h[2] ~= 'running' then return -2 end\n"
        "local now = now_ms()\n"
        "if h[2] == 'waiting' then redis.call('ZREM', qkey(h[3]), ARGV[1]) end\n"
        "redis.call('ZREM', '{mcpq}:task:leases', ARGV[1])\n"
        "redis.call('HSET', k, 'state', 'cancelled', 'error', ARGV[3], 'end_ms', now,\n"
        "  'updated_ms', now)\n"
        "redis.call('EXPIRE', k, ARGV[4])\n"
        "local why = cjson.encode({reason = ARGV[3]})\n"
        "if h[2] == 'running' then\n"
        "  redis.call('SET', '{mcpq}:cancel:' .. ARGV[1], why, 'EX', 86400)\n"
        "  redis.call('PUBLISH', 'mcpq:cancel', ARGV[1])\n"
        "end\n"
        "notify_waiters(ARGV[1], 'cancelled', why)\n"
        "task_event(ARGV[1], 'cancelled', nil, ARGV[5], now)\n"
        "return 1\n",
};

typedef struct compiled {
    char *src;
    char sha[41];
} compiled_t;

static compiled_t scripts[TASK_SCRIPT_COUNT];
static pthread_once_t scripts_once = PTHREAD_ONCE_INIT;

static void compile_all(void)
{
    for (int i = 0; i < TASK_SCRIPT_COUNT; i++) {
        size_t n = strlen(WHQ_LUA_ENQUEUE) + strlen(WHQ_LUA_CLOCK) + strlen(prelude) +
                   strlen(bodies[i]) + 2;
        char *src = malloc(n);
        if (!src)
            continue;
        snprintf(src, n, "%s\n%s%s%s", WHQ_LUA_ENQUEUE, WHQ_LUA_CLOCK, prelude, bodies[i]);
        unsigned char d[SHA_DIGEST_LENGTH];
        SHA1((const unsigned char *)src, strlen(src), d);
        for (int j = 0; j < SHA_DIGEST_LENGTH; j++)
            snprintf(scripts[i].sha + 2 * j, 3, "%02x", d[j]);
        scripts[i].src = src;
    }
}

redisReply *task_script_run(redisContext *c, task_script_t s, int argc, const char *const *argv,
                            char *errstr, size_t errstr_size)
{
    pthread_once(&scripts_once, compile_all);
    if (s < 0 || s >= TASK_SCRIPT_COUNT || !scripts[s].src || argc < 0 || argc > 64) {
        snprintf(errstr, errstr_size, "task script unavailable");
        return NULL;
    }
    const char *args[68];
    args[0] = "EVALSHA";
    args[1] = scripts[s].sha;
    args[2] = "0";
    for (int i = 0; i < argc; i++)
        args[3 + i] = argv[i];
    for (int attempt = 0; attempt < 2; attempt++) {
        redisReply *r = redisCommandArgv(c, argc + 3, args, NULL);
        if (!r) {
            snprintf(errstr, errstr_size, "redis: %s", c->errstr[0] ? c->errstr : "no reply");
            return NULL;
        }
        if (r->type != REDIS_REPLY_ERROR)
            return r;
        int noscript = r->str && strncmp(r->str, "NOSCRIPT", 8) == 0;
        snprintf(errstr, errstr_size, "redis: %s", r->str ? r->str : "error");
        /* A demoted master: c is marked broken so its holder reconnects (docs/redis.md). */
        kv_ctx_failover(NULL, c, r);
        freeReplyObject(r);
        if (!noscript)
            return NULL;
        args[0] = "EVAL";
        args[1] = scripts[s].src;
    }
    return NULL;
}

void task_id_new(char out[TASK_ID_LEN])
{
    char hex[33];
    util_random_hex(hex, 16);
    hex[12] = '4';
    static const char variant[] = "89ab";
    hex[16] = variant[(unsigned char)hex[16] % 4];
    snprintf(out, TASK_ID_LEN, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16,
             hex + 20);
}

int task_robot_ok(const char *robot)
{
    size_t n = robot ? strlen(robot) : 0;
    if (n == 0 || n > TASK_ROBOT_MAX)
        return 0;
    for (const char *p = robot; *p; p++) {
        char ch = *p;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '.' || ch == ':' || ch == '-'))
            return 0;
    }
    return 1;
}

const char *task_mcp_status(const char *state, const char *fault, int ext)
{
    if (!state || strcmp(state, "waiting") == 0 || strcmp(state, "running") == 0)
        return "working";
    if (strcmp(state, "complete") == 0)
        return "completed";
    if (strcmp(state, "terminated") == 0)
        return ext && !(fault && *fault) ? "completed" : "failed";
    return "cancelled";
}
