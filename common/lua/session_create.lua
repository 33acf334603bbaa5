-- session_create.lua (ingress/core/session.c): creates a session under its tenant's quota. The
-- index keeps ids whose key expired: the lowest-scored are checked first (16 each call, 1000
-- more at the quota), the gone removed, the live re-scored to now.
-- KEYS[1] the session (@NAMES_KEY_SESSION@<id>), KEYS[2] the tenant's index (@NAMES_KEY_SESSIONS@<tenant>).
-- ARGV[1] id, [2] value, [3] ttl s, [4] max ("0": no limit).
-- Returns: 1 created; -1 the tenant holds max live sessions.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function prune(n)
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, n - 1)) do
    if redis.call('EXISTS', '@NAMES_KEY_SESSION@' .. id) == 1 then
      redis.call('ZADD', KEYS[2], now, id)
    else
      redis.call('ZREM', KEYS[2], id)
    end
  end
end
local max = tonumber(ARGV[4])
prune(16)
if max > 0 and redis.call('ZCARD', KEYS[2]) >= max then
  prune(1000)
  if redis.call('ZCARD', KEYS[2]) >= max then return -1 end
end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
redis.call('ZADD', KEYS[2], now, ARGV[1])
return 1
