-- idem_claim.lua (ingress/core/idem.c): claims an idempotency key; its value is
-- "<fingerprint> <job id>".
-- KEYS: none (ARGV[1] is the key, @NAMES_KEY_IDEM@<tenant>:<scope>).
-- ARGV[1] key, [2] fingerprint, [3] ttl s, [4] proposed job id.
-- Returns: {0, id} claimed for the proposed id; {1, id, result record or false} claimed before
-- with the same arguments; {2} claimed with other arguments.

local v = redis.call('GET', ARGV[1])
if not v then
  redis.call('SET', ARGV[1], ARGV[2] .. ' ' .. ARGV[4], 'EX', tonumber(ARGV[3]))
  return {0, ARGV[4]}
end
local sp = string.find(v, ' ', 1, true)
if not sp or string.sub(v, 1, sp - 1) ~= ARGV[2] then return {2} end
local id = string.sub(v, sp + 1)
return {1, id, redis.call('GET', '@NAMES_KEY_RESULT@' .. id)}
