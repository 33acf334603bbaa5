-- ask_take.lua (worker/core/ask.h): the worker reads its open question @NAMES_KEY_ASK@<job id>
-- for the answers stored by answer_submit.lua (fields a:<key>, each {"result"} or {"error"}).
-- Mode "poll": when every key is answered the question is deleted and the answers returned;
-- otherwise its expiry is refreshed (the worker is alive). Mode "close" (a timeout, or the
-- job stopped waiting): deleted whatever is answered. A deleted question of a task gives the
-- task back its running state: fields input and input_n removed, task.running event.
-- uses: lib_whq.lua lib_clock.lua
-- KEYS: none (built from the job id).
-- ARGV[1] job id, [2] n, [3] worker, [4] mode (poll | close), [5] TTL ms, [6] delivery id base.
-- Returns: nil when the question is gone (expired, or not this worker's question n), else
-- {state ("wait" | "done"), reply_to, answers JSON (an object of the keys answered)}.

local k = '@NAMES_KEY_ASK@' .. ARGV[1]
local h = redis.call('HMGET', k, 'n', 'worker', 'reqs', 'reply_to', 'task')
if not h[1] or h[1] ~= ARGV[2] or h[2] ~= ARGV[3] then return nil end
local ok, reqs = pcall(cjson.decode, h[3] or '')
if not ok or type(reqs) ~= 'table' then reqs = {} end
local all = redis.call('HGETALL', k)
local parts, have = {}, {}
for i = 1, #all, 2 do
  local f = all[i]
  if string.sub(f, 1, 2) == 'a:' then
    local key = string.sub(f, 3)
    have[key] = true
    parts[#parts + 1] = cjson.encode(key) .. ':' .. all[i + 1]
  end
end
local complete = true
for key, _ in pairs(reqs) do
  if not have[key] then complete = false end
end
local answers = '{' .. table.concat(parts, ',') .. '}'
if not complete and ARGV[4] ~= 'close' then
  redis.call('PEXPIRE', k, ARGV[5])
  return {'wait', h[4] or '', answers}
end
redis.call('DEL', k)
local task = h[5] or ''
if task ~= '' then
  local tk = '@NAMES_KEY_TASK@' .. task
  local t = redis.call('HMGET', tk, 'state', 'worker', 'tenant', 'tool', 'input_n')
  if t[1] == 'running' and t[2] == ARGV[3] and t[5] == ARGV[2] then
    local now = now_ms()
    redis.call('HDEL', tk, 'input', 'input_n')
    redis.call('HSET', tk, 'updated_ms', now)
    local data = '{"TaskId":' .. cjson.encode(task) .. ',"TaskStatus":"running","tool":' ..
      cjson.encode(t[4] or '') .. ',"result":null}'
    whq_enqueue(t[3], 'task.running', task, data, iso(now), now, ARGV[6])
  end
end
return {'done', h[4] or '', answers}
