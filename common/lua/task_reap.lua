-- task_reap.lua (common/task.h TASK_SCRIPT_REAP): requeues (or, after max attempts, terminates) running tasks whose lease expired.
-- uses: lib_whq.lua lib_clock.lua lib_task.lua
-- KEYS: none (built from the task id, as every task script's).
-- ARGV[1] max attempts, [2] retention s, [3] delivery id base, [4] at most this many.
-- Returns: {"<id> requeued" | "<id> terminated", ...}.

local now = now_ms()
local ids = redis.call('ZRANGEBYSCORE', '@NAMES_KEY_TASK_LEASES@', '-inf', now, 'LIMIT', 0,
  tonumber(ARGV[4]))
local out = {}
for _, id in ipairs(ids) do
  redis.call('ZREM', '@NAMES_KEY_TASK_LEASES@', id)
  local k = '@NAMES_KEY_TASK@' .. id
  local h = redis.call('HMGET', k, 'state', 'attempts', 'robot', 'priority',
    'created_ms', 'worker')
  if h[1] == 'running' then
    local att = tonumber(h[2]) or 0
    if att >= tonumber(ARGV[1]) then
      local reason = 'its worker (' .. (h[6] or '?') .. ') stopped answering during ' ..
        'each of ' .. att .. ' attempts; not run again'
      local result = '{"content":[{"type":"text","text":' .. cjson.encode(reason) ..
        '}],"isError":true}'
      redis.call('HSET', k, 'state', 'terminated', 'result', result, 'error', reason,
        'end_ms', now, 'updated_ms', now, 'fault', '@TASK_FAULT_INTERNAL@')
      redis.call('EXPIRE', k, ARGV[2])
      finished(id, 'terminated', result, ARGV[2], ARGV[3], now)
      out[#out + 1] = id .. ' terminated'
    else
      redis.call('HSET', k, 'state', 'waiting', 'worker', '', 'queued', '1',
        'updated_ms', now, 'msg', 'waiting again: its worker stopped answering')
      redis.call('ZADD', qkey(h[3]), qscore(h[4], h[5]), id)
      out[#out + 1] = id .. ' requeued'
    end
  end
end
return out
