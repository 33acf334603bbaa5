-- task_handback.lua (common/task.h TASK_SCRIPT_HANDBACK): puts a worker's running task back at the head of its priority (a shutdown: the
-- attempt is not counted).
-- uses: lib_whq.lua lib_clock.lua lib_task.lua
-- KEYS: none (built from the task id, as every task script's).
-- ARGV[1] id, [2] worker.
-- Returns: 1, or 0 when the task was not running on that worker.

local k = '@NAMES_KEY_TASK@' .. ARGV[1]
local h = redis.call('HMGET', k, 'state', 'worker', 'robot', 'priority', 'created_ms',
  'attempts')
if h[1] ~= 'running' or h[2] ~= ARGV[2] then return 0 end
local att = math.max((tonumber(h[6]) or 1) - 1, 0)
redis.call('HSET', k, 'state', 'waiting', 'worker', '', 'queued', '1', 'attempts', att,
  'updated_ms', now_ms(), 'msg', 'waiting again: its worker shut down')
redis.call('ZREM', '@NAMES_KEY_TASK_LEASES@', ARGV[1])
redis.call('ZADD', qkey(h[3]), qscore(h[4], h[5]), ARGV[1])
return 1
