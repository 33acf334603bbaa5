-- resupd_claim.lua (ingress/core/resupd.c): announces a static resource's changed content once
-- for the fleet. Each replica that swaps to a registry snapshot in which the resource's
-- published content differs from its previous snapshot's runs this with the new state; the
-- first one publishes, the others find the state stored, and a replica that is behind (an
-- older revision) never overwrites a newer state.
-- KEYS[1] the server's resource states (@NAMES_KEY_RESSTATE@<tenant>:<server>).
-- ARGV[1] the uri, [2] the snapshot's registry revision, [3] the content's hash, [4] the
-- message to publish ({"tenant","server","uri"}).
-- Returns: 1 published; 0 this state, or a newer one, was announced already.

local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  local sp = string.find(cur, ' ', 1, true)
  local rev = tonumber(string.sub(cur, 1, sp - 1))
  if rev >= tonumber(ARGV[2]) or string.sub(cur, sp + 1) == ARGV[3] then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. ARGV[3])
redis.call('EXPIRE', KEYS[1], 604800)
redis.call('PUBLISH', '@NAMES_CHAN_RESOURCE_UPDATED@', ARGV[4])
return 1
