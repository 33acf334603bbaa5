-- task_claim.lua (common/task.h TASK_SCRIPT_CLAIM): pops the next waiting task of a robot's queue for a worker and leases it
-- (@NAMES_KEY_TASK_LEASES@); sends the task.running webhook event.
-- uses: lib_whq.lua lib_clock.lua lib_task.lua
-- KEYS: none (built from the task id, as every task script's).
-- ARGV[1] robot ("": the queue without one), [2] worker, [3] lease ms, [4] delivery id base.
-- Returns: nil, or {id, envelope JSON, begin_ms, attempts, tracestate ("" none)}.

local now = now_ms()
local q = qkey(ARGV[1])
for i = 1, 50 do
  local p = redis.call('ZPOPMIN', q)
  if #p == 0 then return nil end
  local id = p[1]
  local k = '@NAMES_KEY_TASK@' .. id
  if redis.call('HGET', k, 'state') == 'waiting' then
    local att = redis.call('HINCRBY', k, 'attempts', 1)
    redis.call('HSET', k, 'state', 'running', 'begin_ms', now, 'updated_ms', now,
      'worker', ARGV[2], 'queued', '0')
    -- a question of an attempt that died is nobody's now (worker/core/ask.h)
    redis.call('HDEL', k, 'input', 'input_n')
    redis.call('ZADD', '@NAMES_KEY_TASK_LEASES@', now + tonumber(ARGV[3]), id)
    task_event(id, 'running', nil, ARGV[4], now)
    return {id, redis.call('HGET', k, 'env'), tostring(now), tostring(att),
      redis.call('HGET', k, 'tracestate') or ''}
  end
end
return nil
