-- webhook_outcome.lua (ingress/core/webhook.c): records an attempt's outcome of a claimed
-- delivery: status, log (the last 50, ING_WH_LOG_MAX), next due time, disabled mark.
-- KEYS: none (built from the delivery id).
-- ARGV[1] id, [2] token, [3] status, [4] http status, [5] error, [6] ms, [7] delay ms,
-- [8] counted ("1"/"0"), [9] url to disable ("" none).
-- Returns: 1 recorded; 0 when the claim is no longer ours.

local k = '@NAMES_KEY_WH_DELIVERY@' .. ARGV[1]
if redis.call('HGET', k, 'claim') ~= ARGV[2] then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local st = ARGV[3]
local f = {'claim', '', 'status', st, 'last_status', ARGV[4], 'last_error', ARGV[5]}
if ARGV[8] == '1' then
  local ok, log = pcall(cjson.decode, redis.call('HGET', k, 'log') or '[]')
  if not ok or type(log) ~= 'table' then log = {} end
  log[#log + 1] = {at_ms = now, status = tonumber(ARGV[4]) or cjson.null,
    error = ARGV[5] ~= '' and ARGV[5] or cjson.null, ms = tonumber(ARGV[6]) or 0}
  while #log > 50 do table.remove(log, 1) end
  redis.call('HINCRBY', k, 'attempts', 1)
  f[#f + 1] = 'log'
  f[#f + 1] = cjson.encode(log)
end
f[#f + 1] = 'next_ms'
if st == 'pending' then
  local nx = now + tonumber(ARGV[7])
  redis.call('ZADD', '@NAMES_KEY_WH_DUE@', nx, ARGV[1])
  f[#f + 1] = string.format('%d', nx)
else
  redis.call('ZREM', '@NAMES_KEY_WH_DUE@', ARGV[1])
  f[#f + 1] = ''
end
if ARGV[9] ~= '' then
  local h = redis.call('HMGET', k, 'tenant', 'webhook')
  redis.call('SET', '@NAMES_KEY_WH_DISABLED@' .. h[1] .. ':' .. h[2], ARGV[9])
end
redis.call('HSET', k, unpack(f))
redis.call('EXPIRE', k, @WHQ_RETENTION_S@)
return 1
