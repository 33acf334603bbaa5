-- channels_use.lua (ingress/api/channels.c): checks a channel_id argument and refreshes its TTLs.
-- KEYS[1] the channel (@NAMES_KEY_CHAN@<id>), KEYS[2] its turns.
-- ARGV[1] tenant, [2] default ttl ms.
-- Returns: the TTL applied (ms), or -1 when the channel is unknown or another tenant's.

local h = redis.call('HMGET', KEYS[1], 'tenant', 'ttl_ms')
if h[1] ~= ARGV[1] then return -1 end
local ttl = tonumber(h[2]) or tonumber(ARGV[2])
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return ttl
