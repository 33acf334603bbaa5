-- filesapi_presign.lua (ingress/api/filesapi.c): presigns a file under the tenant's file_bytes
-- quota; files that expired leave the tenant's total first.
-- KEYS[1] the file (@NAMES_KEY_FILE@<id>), KEYS[2] the tenant's files by expiry
-- (@NAMES_KEY_FILES@<tenant>), KEYS[3] their sizes (...@NAMES_SUFFIX_SIZES@).
-- ARGV[1] tenant, [2] filename, [3] content_type, [4] size, [5] created_ms, [6] ttl s,
-- [7] max bytes ("0": no limit), [8] file id.
-- Returns: {1, total} presigned; {-1, total} over the quota (nothing written).

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 1000)) do
  local n = redis.call('HGET', KEYS[3], id)
  if n then redis.call('HINCRBY', KEYS[3], 'total', '-' .. n) end
  redis.call('HDEL', KEYS[3], id)
  redis.call('ZREM', KEYS[2], id)
end
local total = tonumber(redis.call('HGET', KEYS[3], 'total') or '0')
local max = tonumber(ARGV[7])
if max > 0 and total + tonumber(ARGV[4]) > max then return {-1, total} end
redis.call('HSET', KEYS[1], 'tenant', ARGV[1], 'filename', ARGV[2], 'content_type', ARGV[3], 'size', ARGV[4], 'state', 'pending', 'created_ms', ARGV[5])
redis.call('EXPIRE', KEYS[1], ARGV[6])
local ttl_ms = tonumber(ARGV[6]) * 1000
redis.call('ZADD', KEYS[2], now + ttl_ms, ARGV[8])
redis.call('HSET', KEYS[3], ARGV[8], ARGV[4])
total = redis.call('HINCRBY', KEYS[3], 'total', ARGV[4])
for i = 2, 3 do
  if redis.call('PTTL', KEYS[i]) < ttl_ms then redis.call('PEXPIRE', KEYS[i], ttl_ms) end
end
return {1, total}
