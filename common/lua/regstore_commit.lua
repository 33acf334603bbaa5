-- regstore_commit.lua (ingress/core/regstore.c): the registry's compare-and-set write.
-- KEYS[1] the registry hash (@NAMES_KEY_REGISTRY@), KEYS[2] its revision (@NAMES_KEY_REGISTRY_REV@).
-- ARGV[1] the channel to publish the revision on (@NAMES_CHAN_REGISTRY_CHANGED@), then triples
-- (field, expected text or "" for absent, new text or "" to delete).
-- Returns: the new revision, or {field} (one element) when a field no longer holds the
-- expected text (nothing written). Fields named meta:* (the config file's mark) are not the
-- registry's content: writing only those leaves the revision as it is (and publishes nothing).

for i = 2, #ARGV, 3 do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  if (cur or '') ~= ARGV[i + 1] then return {ARGV[i]} end
end
local docs = 0
for i = 2, #ARGV, 3 do
  if ARGV[i + 2] == '' then redis.call('HDEL', KEYS[1], ARGV[i])
  else redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2]) end
  if string.sub(ARGV[i], 1, 5) ~= 'meta:' then docs = docs + 1 end
end
if docs == 0 then return tonumber(redis.call('GET', KEYS[2]) or '0') end
local rev = redis.call('INCR', KEYS[2])
redis.call('PUBLISH', ARGV[1], rev)
return rev
