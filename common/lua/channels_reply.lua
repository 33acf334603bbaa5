-- channels_reply.lua (ingress/api/channels.c): stores an agent_reply for a waiting agent call and
-- announces it on @NAMES_CHAN_AGENTREPLY@.
-- KEYS[1] the wait key (@NAMES_KEY_AGENTWAIT@<msg>), KEYS[2] the reply key (@NAMES_KEY_AGENTREPLY@<msg>).
-- ARGV[1] tenant, [2] channel id, [3] reply JSON, [4] message id.
-- Returns: 'ok'; 'unknown' (no such message waiting on this tenant's channel); 'duplicate'
-- (a reply is stored already). A stored reply lives at least 60 s.

local w = redis.call('GET', KEYS[1])
if not w then return 'unknown' end
local ok, o = pcall(cjson.decode, w)
if not ok or type(o) ~= 'table' or o.tenant ~= ARGV[1] or o.channel_id ~= ARGV[2] then
  return 'unknown'
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 60000 then ttl = 60000 end
if not redis.call('SET', KEYS[2], ARGV[3], 'NX', 'PX', ttl) then return 'duplicate' end
redis.call('PUBLISH', '@NAMES_CHAN_AGENTREPLY@', ARGV[4])
return 'ok'
