-- task_create.lua (common/task.h TASK_SCRIPT_CREATE): creates a task (hash @NAMES_KEY_TASK@<id>, state waiting) under its tenant's max_tasks quota,
-- first dropping from @NAMES_KEY_TASKS@<tenant> ids whose hash expired (16 each call, 1000 at the quota).
-- uses: lib_whq.lua lib_clock.lua lib_task.lua
-- KEYS: none (built from the task id, as every task script's).
-- ARGV[1] id, [2] tenant, [3] server, [4] tool, [5] version, [6] args JSON, [7] robot,
-- [8] priority, [9] envelope JSON, [10] retention s, [11] ttl ms, [12] surface, [13] traceparent,
-- [14] max_tasks ("0": no limit), [15] owner (the creator's principal, ingress/core/owner.h;
-- "" none), [16] tracestate (the client's W3C tracestate, relayed with the job; "" none).
-- Returns: created_ms; 0 when the id exists; -1 when the tenant is at max_tasks (nothing created).

local k = '@NAMES_KEY_TASK@' .. ARGV[1]
if redis.call('EXISTS', k) == 1 then return 0 end
local idx = '@NAMES_KEY_TASKS@' .. ARGV[2]
local function prune(n)
  for _, id in ipairs(redis.call('ZRANGE', idx, 0, n - 1)) do
    if redis.call('EXISTS', '@NAMES_KEY_TASK@' .. id) == 0 then redis.call('ZREM', idx, id) end
  end
end
local max = tonumber(ARGV[14]) or 0
prune(16)
if max > 0 and redis.call('ZCARD', idx) >= max then
  prune(1000)
  if redis.call('ZCARD', idx) >= max then return -1 end
end
local now = now_ms()
redis.call('HSET', k, 'id', ARGV[1], 'tenant', ARGV[2], 'server', ARGV[3],
  'tool', ARGV[4], 'version', ARGV[5], 'args', ARGV[6], 'robot', ARGV[7],
  'priority', ARGV[8], 'env', ARGV[9], 'state', 'waiting', 'created_ms', now,
  'updated_ms', now, 'attempts', 0, 'ttl_ms', ARGV[11], 'surface', ARGV[12],
  'traceparent', ARGV[13] or '', 'tracestate', ARGV[16] or '', 'owner', ARGV[15] or '')
redis.call('EXPIRE', k, ARGV[10])
redis.call('ZADD', idx, now, ARGV[1])
return now
