-- answer_submit.lua (ingress/core/answer.c): stores a client's answers to a job's open question
-- (docs/internals.md, "Asking the client", step 3) and wakes the worker that asked once every
-- request is answered or the job's reply stream moved.
-- KEYS[1] the question (@NAMES_KEY_ASK@<job_id>).
-- ARGV[1] the question's number n the caller checked, [2] "1": check the caller, "0": the
-- gateway answers itself, [3] tenant, [4] owner, [5] session ("" none), [6] reply_to ("" keep),
-- [7] the job id (published), [8..] pairs: request key, answer JSON.
-- Returns: -1 gone (no question, another n, or another caller: all alike); {-2, key} key is not
-- one of the question's requests (nothing stored); {1, key...} stored, with the keys of the
-- requests still unanswered (none once complete).

local q = redis.call('HMGET', KEYS[1], 'n', 'reqs', 'tenant', 'owner', 'session', 'reply_to')
if not q[1] or q[1] ~= ARGV[1] or not q[2] then return -1 end
if ARGV[2] == '1' then
  if q[3] ~= ARGV[3] or (q[4] or '') ~= ARGV[4] then return -1 end
  if q[5] and q[5] ~= '' and q[5] ~= ARGV[5] then return -1 end
end
local reqs = cjson.decode(q[2])
for i = 8, #ARGV, 2 do
  if type(reqs) ~= 'table' or reqs[ARGV[i]] == nil then return {-2, ARGV[i]} end
end
for i = 8, #ARGV, 2 do
  redis.call('HSET', KEYS[1], 'a:' .. ARGV[i], ARGV[i + 1])
end
local moved = false
if ARGV[6] ~= '' and ARGV[6] ~= q[6] then
  redis.call('HSET', KEYS[1], 'reply_to', ARGV[6])
  moved = true
end
local open = {1}
for k, _ in pairs(reqs) do
  if redis.call('HEXISTS', KEYS[1], 'a:' .. k) == 0 then open[#open + 1] = k end
end
if #open == 1 or moved then redis.call('PUBLISH', '@NAMES_CHAN_ANSWER@', ARGV[7]) end
return open
