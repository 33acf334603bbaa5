-- idem_claim.lua (ingress/core/idem.c): claims an idempotency key; its value is
-- "<fingerprint> <job id>".
-- KEYS: none (ARGV[1] is the key, @NAMES_KEY_IDEM@<tenant>:<scope>).
-- ARGV[1] key, [2] fingerprint, [3] ttl s, [4] proposed job id.
-- Returns: {0, id} claimed for the proposed id (also when the claimed job never ran: its
-- record says "ran": false); {1, id, result record or false} claimed before
-- with the same arguments; {2} claimed with other arguments.

local v = redis.call('GET', ARGV[1])
if not v then
  redis.call('SET', ARGV[1], ARGV[2] .. ' ' .. ARGV[4], 'EX', tonumber(ARGV[3]))
  return {0, ARGV[4]}
end
local sp = string.find(v, ' ', 1, true)
if not sp or string.sub(v, 1, sp - 1) ~= ARGV[2] then return {2} end
local id = string.sub(v, sp + 1)
local rec = redis.call('GET', '@NAMES_KEY_RESULT@' .. id)
-- A job dropped unrun because its deadline passed in the queue ("ran": false,
-- docs/internals.md "Result record"): the repeat claims the key for a new job.
if rec then
  local okd, r = pcall(cjson.decode, rec)
  if okd and type(r) == 'table' and r.ran == false then
    redis.call('SET', ARGV[1], ARGV[2] .. ' ' .. ARGV[4], 'EX', tonumber(ARGV[3]))
    return {0, ARGV[4]}
  end
end
return {1, id, rec}
