-- task_heartbeat.lua (common/task.h TASK_SCRIPT_HEARTBEAT): extends the leases of a worker's running tasks.
-- uses: lib_whq.lua lib_clock.lua lib_task.lua
-- KEYS: none (built from the task id, as every task script's).
-- ARGV[1] worker, [2] lease ms, [3...] task ids.
-- Returns: how many leases were extended.

local now = now_ms()
local n = 0
for i = 3, #ARGV do
  local h = redis.call('HMGET', '@NAMES_KEY_TASK@' .. ARGV[i], 'state', 'worker')
  if h[1] == 'running' and h[2] == ARGV[1] then
    redis.call('ZADD', '@NAMES_KEY_TASK_LEASES@', now + tonumber(ARGV[2]), ARGV[i])
    n = n + 1
  end
end
return n
