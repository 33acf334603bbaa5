-- rsub_add.lua (ingress/core/rsub.c): adds a resource subscription to a legacy session's set,
-- at most max of them, and gives the set the session's TTL.
-- KEYS[1] the session's subscriptions (@NAMES_KEY_RSUBS@<session id>).
-- ARGV[1] the member ("<server> <uri>"), [2] ttl s, [3] max.
-- Returns: 1 added; 0 it was there already; -1 the set holds max members (nothing added).

if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  return 0
end
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[3]) then return -1 end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
