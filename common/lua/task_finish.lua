-- task_finish.lua (common/task.h TASK_SCRIPT_FINISH): ends a running task: its state, result, the result record, waiters and webhook event.
-- uses: lib_whq.lua lib_clock.lua lib_task.lua
-- KEYS: none (built from the task id, as every task script's).
-- ARGV[1] id, [2] worker, [3] state, [4] result JSON, [5] reason, [6] retention s,
-- [7] delivery id base, [8] fault ("": none).
-- Returns: 1, or 0 when the task is no longer that worker's.

local k = '@NAMES_KEY_TASK@' .. ARGV[1]
local h = redis.call('HMGET', k, 'state', 'worker')
if h[1] ~= 'running' or h[2] ~= ARGV[2] then return 0 end
local now = now_ms()
redis.call('HSET', k, 'state', ARGV[3], 'result', ARGV[4], 'error', ARGV[5],
  'end_ms', now, 'updated_ms', now, 'fault', ARGV[8])
redis.call('ZREM', '@NAMES_KEY_TASK_LEASES@', ARGV[1])
redis.call('EXPIRE', k, ARGV[6])
finished(ARGV[1], ARGV[3], ARGV[4], ARGV[6], ARGV[7], now)
return 1
