-- idem_claim.lua (ingress/core/idem.c): claims an idempotency key for one principal; its value is
-- "<fingerprint> <job id> <owner>" (a value without an owner, written before owners were
-- recorded, belongs to nobody).
-- KEYS: none (ARGV[1] is the key, @NAMES_KEY_IDEM@<tenant>:<scope>).
-- ARGV[1] key, [2] fingerprint, [3] ttl s, [4] proposed job id, [5] owner (the caller's
-- principal, ingress/core/owner.h; never "").
-- Returns: {0, id} claimed for the proposed id (also when the claimed job never ran: its
-- record says "ran": false); {1, id, result record or false} claimed before by the same owner
-- with the same arguments; {2} claimed by the same owner with other arguments; {3} claimed
-- by another owner (nothing about its call is returned, whatever the arguments).

local mine = ARGV[2] .. ' ' .. ARGV[4] .. ' ' .. ARGV[5]
local v = redis.call('GET', ARGV[1])
if not v then
  redis.call('SET', ARGV[1], mine, 'EX', tonumber(ARGV[3]))
  return {0, ARGV[4]}
end
local sp = string.find(v, ' ', 1, true)
local sp2 = sp and string.find(v, ' ', sp + 1, true)
if not sp2 or ARGV[5] == '' or string.sub(v, sp2 + 1) ~= ARGV[5] then return {3} end
if string.sub(v, 1, sp - 1) ~= ARGV[2] then return {2} end
local id = string.sub(v, sp + 1, sp2 - 1)
local rec = redis.call('GET', '@NAMES_KEY_RESULT@' .. id)
-- A job dropped unrun because its deadline passed in the queue ("ran": false,
-- docs/internals.md "Result record"): the repeat claims the key for a new job.
if rec then
  local okd, r = pcall(cjson.decode, rec)
  if okd and type(r) == 'table' and r.ran == false then
    redis.call('SET', ARGV[1], mine, 'EX', tonumber(ARGV[3]))
    return {0, ARGV[4]}
  end
end
return {1, id, rec}
