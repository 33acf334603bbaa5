-- session_touch.lua (ingress/core/session.c): reads a session and refreshes its idle TTL, and
-- that of its resource subscriptions (ingress/core/rsub.h), which live as long as it does.
-- KEYS[1] the session (@NAMES_KEY_SESSION@<id>), KEYS[2] its subscriptions (@NAMES_KEY_RSUBS@<id>).
-- ARGV[1] ttl s.
-- Returns: the session's JSON, or nil when it is gone.

local v = redis.call('GETEX', KEYS[1], 'EX', ARGV[1])
if v then redis.call('EXPIRE', KEYS[2], ARGV[1]) end
return v
