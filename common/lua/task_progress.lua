-- task_progress.lua (common/task.h TASK_SCRIPT_PROGRESS): records a running task's progress message.
-- uses: lib_whq.lua lib_clock.lua lib_task.lua
-- KEYS: none (built from the task id, as every task script's).
-- ARGV[1] id, [2] worker, [3] message, [4] progress JSON.
-- Returns: 1, or 0 when the task is not running on that worker.

local k = '@NAMES_KEY_TASK@' .. ARGV[1]
local h = redis.call('HMGET', k, 'state', 'worker')
if h[1] ~= 'running' or h[2] ~= ARGV[2] then return 0 end
redis.call('HSET', k, 'msg', ARGV[3], 'progress', ARGV[4], 'updated_ms', now_ms())
return 1
