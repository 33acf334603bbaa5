-- task_abandon.lua (common/task.h TASK_SCRIPT_ABANDON): terminates a waiting task that never reached a queue (Kafka refused its job).
-- uses: lib_whq.lua lib_clock.lua lib_task.lua
-- KEYS: none (built from the task id, as every task script's).
-- ARGV[1] id, [2] reason, [3] retention s, [4] delivery id base.
-- Returns: 1, or 0 when not waiting unqueued.

local k = '@NAMES_KEY_TASK@' .. ARGV[1]
local h = redis.call('HMGET', k, 'state', 'queued')
if h[1] ~= 'waiting' or h[2] == '1' then return 0 end
local now = now_ms()
local result = '{"content":[{"type":"text","text":' .. cjson.encode(ARGV[2]) ..
  '}],"isError":true}'
redis.call('HSET', k, 'state', 'terminated', 'result', result, 'error', ARGV[2],
  'end_ms', now, 'updated_ms', now, 'fault', '@TASK_FAULT_INTERNAL@')
redis.call('EXPIRE', k, ARGV[3])
finished(ARGV[1], 'terminated', result, ARGV[3], ARGV[4], now)
return 1
