-- lib_task.lua: helpers of the task scripts (common/task.h), prepended after lib_whq.lua and
-- lib_clock.lua: qkey(robot) the queue key, qscore(priority, created_ms) its score,
-- task_event(...) the webhook event of a transition, notify_waiters(id, kind, data) wakes the
-- tasks/result calls parked on the task, finished(...) writes the result record, wakes the
-- waiters and sends the webhook event.
-- KEYS, ARGV: none of its own. Returns: nothing (defines local functions).

local function qkey(robot)
  if not robot or robot == '' then return '@NAMES_KEY_TASK_QUEUE@@TASK_ROBOT_ANY@' end
  return '@NAMES_KEY_TASK_QUEUE@' .. robot
end
local function qscore(prio, created)
  return (100 - tonumber(prio)) * 1e13 + tonumber(created)
end
local nevents = 0
local events = {running = 'task.running', complete = 'task.completed',
  terminated = 'task.terminated', cancelled = 'task.cancelled'}
local function task_event(id, state, result, id_base, now)
  local h = redis.call('HMGET', '@NAMES_KEY_TASK@' .. id, 'tenant', 'tool')
  if not h[1] then return end
  local data = '{"TaskId":' .. cjson.encode(id) .. ',"TaskStatus":"' .. state ..
    '","tool":' .. cjson.encode(h[2] or '') .. ',"result":' .. (result or 'null') .. '}'
  nevents = nevents + 1
  whq_enqueue(h[1], events[state], id, data, iso(now), now, id_base .. nevents)
end
local function notify_waiters(id, kind, data)
  local wk = '@NAMES_KEY_TASK@' .. id .. '@NAMES_SUFFIX_WAITERS@'
  for _, s in ipairs(redis.call('SMEMBERS', wk)) do
    redis.call('XADD', s, 'MAXLEN', '~', '100000', '*', 'job', id, 'kind', kind,
      'data', data)
    redis.call('EXPIRE', s, 3600)
  end
  redis.call('DEL', wk)
end
local function finished(id, state, result, retention, id_base, now)
  local h = redis.call('HMGET', '@NAMES_KEY_TASK@' .. id, 'tenant', 'tool')
  local rec = '{"v":1,"job_id":' .. cjson.encode(id) .. ',"tenant":' ..
    cjson.encode(h[1] or '') .. ',"tool":' .. cjson.encode(h[2] or '') ..
    ',"status":"ok","result":' .. result .. '}'
  redis.call('SET', '@NAMES_KEY_RESULT@' .. id, rec, 'NX', 'EX', retention)
  notify_waiters(id, 'result', rec)
  task_event(id, state, result, id_base, now)
end
