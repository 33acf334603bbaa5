-- ratelimit_take.lua (ingress/core/ratelimit.c): draws tokens from a token bucket refilled by
-- Redis's clock; an idle bucket expires once it would be full again (absent means full).
-- KEYS[1] the bucket (@NAMES_KEY_RATELIMIT@... or @NAMES_KEY_AUTHFAIL@...).
-- ARGV[1] rate (tokens/s), [2] burst, [3] tokens wanted.
-- Returns: {granted (min(wanted, whole tokens)), ms until the next token when none was granted}.

local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HMGET', KEYS[1], 't', 'ts')
local tokens = tonumber(b[1])
local ts = tonumber(b[2])
if tokens == nil or ts == nil then tokens = burst; ts = now end
if now > ts then tokens = tokens + (now - ts) * rate / 1000; ts = now end
if tokens > burst then tokens = burst end
local grant = math.floor(math.min(want, tokens))
if grant < 0 then grant = 0 end
tokens = tokens - grant
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'ts', ts)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
local wait = 0
if grant == 0 then wait = math.max(1, math.ceil((1 - tokens) * 1000 / rate)) end
return {grant, wait}
