-- webhook_claim.lua (ingress/core/webhook.c): claims due deliveries of @NAMES_KEY_WH_DUE@ for
-- this replica: each is re-scored to now + visibility and gets a claim token.
-- KEYS: none (built from the delivery ids).
-- ARGV[1] limit, [2] visibility ms, [3] token base, [4] first delay ms.
-- Returns: 10 strings (CLAIM_FIELDS) per claimed delivery: id tenant webhook event body attempts
-- sched_base token disabled-url traceparent.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = '@NAMES_KEY_WH_DUE@'
local ids = redis.call('ZRANGE', due, '-inf', now, 'BYSCORE', 'LIMIT', 0, ARGV[1])
local out = {}
for i, id in ipairs(ids) do
  local k = '@NAMES_KEY_WH_DELIVERY@' .. id
  local h = redis.call('HMGET', k, 'tenant', 'webhook', 'event', 'body', 'attempts',
    'sched_base', 'created_ms', 'status', 'traceparent')
  local att = tonumber(h[5]) or 0
  local first = (tonumber(h[7]) or 0) + tonumber(ARGV[4])
  if not h[1] or h[8] ~= 'pending' then
    redis.call('ZREM', due, id)
  elseif att == 0 and first > now then
    redis.call('ZADD', due, first, id)
    redis.call('HSET', k, 'next_ms', string.format('%d', first))
  else
    local tok = ARGV[3] .. ':' .. i
    redis.call('ZADD', due, now + tonumber(ARGV[2]), id)
    redis.call('HSET', k, 'claim', tok)
    local dis = redis.call('GET', '@NAMES_KEY_WH_DISABLED@' .. h[1] .. ':' .. (h[2] or ''))
    for _, v in ipairs({id, h[1], h[2] or '', h[3] or '', h[4] or '', tostring(att),
        h[6] or '0', tok, dis or '', h[9] or ''}) do
      out[#out + 1] = v
    end
  end
end
return out
