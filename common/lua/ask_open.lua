-- ask_open.lua (worker/core/ask.h): a running job asks its client a question: the question's
-- hash @NAMES_KEY_ASK@<job id> (docs/internals.md "Redis keys"; PEXPIRE 5 s, refreshed by
-- ask_take.lua while the worker waits), the @NAMES_KEY_ASKED@<job id> marker, for a task its
-- fields input and input_n, the task.input_required webhook event and the input entry to the
-- replicas parked on it, and the input entry on each of the job's reply streams.
-- uses: lib_whq.lua lib_clock.lua
-- KEYS: none (built from the job id, as the task scripts'; the streams come in ARGV).
-- ARGV[1] job id, [2] n, [3] worker, [4] requests JSON, [5] tenant, [6] owner, [7] session,
-- [8] method, [9] task id ("": none), [10] reply_to ("": none), [11] expires_ms,
-- [12] marker TTL s, [13] input entry data JSON, [14] delivery id base, [15..] reply streams.
-- Returns: 1, or 0 when another question of the job is open (nothing written).

local k = '@NAMES_KEY_ASK@' .. ARGV[1]
local open = redis.call('HGET', k, 'n')
if open and open ~= ARGV[2] then return 0 end
redis.call('DEL', k)
redis.call('HSET', k, 'n', ARGV[2], 'worker', ARGV[3], 'reqs', ARGV[4], 'tenant', ARGV[5],
  'owner', ARGV[6], 'session', ARGV[7], 'method', ARGV[8], 'task', ARGV[9],
  'reply_to', ARGV[10], 'expires_ms', ARGV[11])
redis.call('PEXPIRE', k, 5000)
redis.call('SET', '@NAMES_KEY_ASKED@' .. ARGV[1], ARGV[3], 'EX', ARGV[12])
local function entry(stream)
  redis.call('XADD', stream, 'MAXLEN', '~', '100000', '*', 'job', ARGV[1], 'kind', 'input',
    'data', ARGV[13])
  redis.call('EXPIRE', stream, 3600)
end
if ARGV[9] ~= '' then
  local tk = '@NAMES_KEY_TASK@' .. ARGV[9]
  local h = redis.call('HMGET', tk, 'state', 'worker', 'tenant', 'tool')
  if h[1] == 'running' and h[2] == ARGV[3] then
    local now = now_ms()
    redis.call('HSET', tk, 'input', ARGV[4], 'input_n', ARGV[2], 'updated_ms', now)
    local data = '{"TaskId":' .. cjson.encode(ARGV[9]) ..
      ',"TaskStatus":"input_required","tool":' .. cjson.encode(h[4] or '') ..
      ',"inputRequests":' .. ARGV[4] .. '}'
    whq_enqueue(h[3], 'task.input_required', ARGV[9], data, iso(now), now, ARGV[14])
    for _, s in ipairs(redis.call('SMEMBERS', tk .. '@NAMES_SUFFIX_WAITERS@')) do entry(s) end
  end
end
for i = 15, #ARGV do entry(ARGV[i]) end
return 1
