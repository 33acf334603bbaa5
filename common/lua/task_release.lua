-- task_release.lua (common/task.h TASK_SCRIPT_RELEASE): expires now every lease a worker holds (it is going away).
-- uses: lib_whq.lua lib_clock.lua lib_task.lua
-- KEYS: none (built from the task id, as every task script's).
-- ARGV[1] worker.
-- Returns: how many leases.

local n = 0
for _, id in ipairs(redis.call('ZRANGE', '@NAMES_KEY_TASK_LEASES@', 0, -1)) do
  if redis.call('HGET', '@NAMES_KEY_TASK@' .. id, 'worker') == ARGV[1] then
    redis.call('ZADD', '@NAMES_KEY_TASK_LEASES@', 0, id)
    n = n + 1
  end
end
return n
