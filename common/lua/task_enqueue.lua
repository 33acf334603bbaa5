-- task_enqueue.lua (common/task.h TASK_SCRIPT_ENQUEUE): puts a waiting task on its robot's queue (@NAMES_KEY_TASK_QUEUE@<robot>).
-- uses: lib_whq.lua lib_clock.lua lib_task.lua
-- KEYS: none (built from the task id, as every task script's).
-- ARGV[1] task id.
-- Returns: 1 queued; 0 when not waiting or already queued.

local k = '@NAMES_KEY_TASK@' .. ARGV[1]
local h = redis.call('HMGET', k, 'state', 'queued', 'robot', 'priority', 'created_ms')
if h[1] ~= 'waiting' or h[2] == '1' then return 0 end
redis.call('ZADD', qkey(h[3]), qscore(h[4], h[5]), ARGV[1])
redis.call('HSET', k, 'queued', '1')
return 1
