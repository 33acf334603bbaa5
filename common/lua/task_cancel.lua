-- task_cancel.lua (common/task.h TASK_SCRIPT_CANCEL): cancels a waiting or running task: state cancelled, @NAMES_KEY_CANCEL@<id> and
-- @NAMES_CHAN_CANCEL@ for a running one, waiters woken, webhook event.
-- uses: lib_whq.lua lib_clock.lua lib_task.lua
-- KEYS: none (built from the task id, as every task script's).
-- ARGV[1] id, [2] tenant, [3] reason, [4] retention s, [5] delivery id base.
-- Returns: 1; -1 unknown or another tenant's; -2 already finished.

local k = '@NAMES_KEY_TASK@' .. ARGV[1]
local h = redis.call('HMGET', k, 'tenant', 'state', 'robot')
if h[1] ~= ARGV[2] then return -1 end
if h[2] ~= 'waiting' and h[2] ~= 'running' then return -2 end
local now = now_ms()
if h[2] == 'waiting' then redis.call('ZREM', qkey(h[3]), ARGV[1]) end
redis.call('ZREM', '@NAMES_KEY_TASK_LEASES@', ARGV[1])
redis.call('HSET', k, 'state', 'cancelled', 'error', ARGV[3], 'end_ms', now,
  'updated_ms', now)
redis.call('EXPIRE', k, ARGV[4])
local why = cjson.encode({reason = ARGV[3]})
if h[2] == 'running' then
  redis.call('SET', '@NAMES_KEY_CANCEL@' .. ARGV[1], why, 'EX', 86400)
  redis.call('PUBLISH', '@NAMES_CHAN_CANCEL@', ARGV[1])
end
notify_waiters(ARGV[1], 'cancelled', why)
task_event(ARGV[1], 'cancelled', nil, ARGV[5], now)
return 1
