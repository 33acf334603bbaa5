-- webhook_release.lua (ingress/core/webhook.c): hands a claim back: the delivery is due now.
-- KEYS: none (built from the delivery id).
-- ARGV[1] id, [2] token.
-- Returns: 1 released; 0 when the claim is no longer ours.

local k = '@NAMES_KEY_WH_DELIVERY@' .. ARGV[1]
if redis.call('HGET', k, 'claim') ~= ARGV[2] then return 0 end
local t = redis.call('TIME')
redis.call('HSET', k, 'claim', '')
redis.call('ZADD', '@NAMES_KEY_WH_DUE@', 'XX', tonumber(t[1]) * 1000, ARGV[1])
return 1
