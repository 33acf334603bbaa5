-- agent_append.lua (worker/executors/agent.c): appends a turn to a channel, drops the oldest until
-- both bounds hold, refreshes the TTLs.
-- KEYS[1] the turns (@NAMES_KEY_CHAN@<id>@NAMES_SUFFIX_TURNS@), KEYS[2] the channel (@NAMES_KEY_CHAN@<id>).
-- ARGV[1] turn JSON, [2] max turns, [3] max bytes, [4] ttl ms, [5] tenant, [6] now ms.
-- Returns: how many turns were dropped.

redis.call('RPUSH', KEYS[1], ARGV[1])
local maxn, maxb = tonumber(ARGV[2]), tonumber(ARGV[3])
local items = redis.call('LRANGE', KEYS[1], 0, -1)
local total, n, drop = 0, #items, 0
for i = 1, n do total = total + #items[i] end
while n - drop > 0 and (n - drop > maxn or total > maxb) do
  drop = drop + 1
  total = total - #items[drop]
end
if drop > 0 then redis.call('LTRIM', KEYS[1], drop, -1) end
redis.call('HSETNX', KEYS[2], 'tenant', ARGV[5])
redis.call('HSETNX', KEYS[2], 'created', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return drop
