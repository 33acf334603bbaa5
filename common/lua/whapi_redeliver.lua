-- whapi_redeliver.lua (ingress/api/whapi.c): makes a delivery pending and due now with a fresh
-- schedule, and deletes its endpoint's disabled mark.
-- KEYS: none (built from the tenant and the delivery id).
-- ARGV[1] tenant, [2] delivery id.
-- Returns: false when unknown or another tenant's, else its 11 fields (as whapi_list.lua).

local k = '@NAMES_KEY_WH_DELIVERY@' .. ARGV[2]
local h = redis.call('HMGET', k, 'tenant', 'webhook', 'attempts', 'created_ms')
if h[1] ~= ARGV[1] then return false end
local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
redis.call('HSET', k, 'status', 'pending', 'next_ms', now, 'sched_base', h[3] or '0',
  'claim', '')
redis.call('ZADD', '@NAMES_KEY_WH_DUE@', now, ARGV[2])
redis.call('ZADD', '@NAMES_KEY_WH_INDEX@' .. ARGV[1], 'NX', h[4] or now, ARGV[2])
redis.call('DEL', '@NAMES_KEY_WH_DISABLED@' .. ARGV[1] .. ':' .. (h[2] or ''))
redis.call('EXPIRE', k, @WHQ_RETENTION_S@)
return redis.call('HMGET', k, 'id', 'webhook', 'event', 'task', 'status', 'attempts', 'last_status', 'last_error', 'created_ms', 'next_ms', 'log')
