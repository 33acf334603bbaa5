-- whapi_list.lua (ingress/api/whapi.c): a page of a tenant's webhook deliveries, newest first,
-- from @NAMES_KEY_WH_INDEX@<tenant>, filtered by task, status and owner, examining at most 1000
-- entries (SCAN_MAX); ids whose delivery is gone or another tenant's leave the index. The owner
-- filter only fills pages: whapi.c decides what the caller sees (ingress/core/owner.h).
-- KEYS: none (built from the tenant).
-- ARGV[1] tenant, [2] limit, [3] cursor score ("" first page), [4] cursor id, [5] task ("" any),
-- [6] status ("" any), [7] owner ("" any).
-- Returns: {cursor score, cursor id ("" "" at the end), then 14 fields (ROW) per delivery:
-- id webhook event task status attempts last_status last_error created_ms next_ms log (the
-- 11 shown, NFIELDS) owner server tool}.

local idx = '@NAMES_KEY_WH_INDEX@' .. ARGV[1]
local limit = tonumber(ARGV[2])
local cs, cid = ARGV[3], ARGV[4]
local maxs = cs == '' and '+inf' or cs
local out = {'', ''}
local n, scanned, offset, done = 0, 0, 0, false
local gone = {}
while not done do
  local page = redis.call('ZREVRANGEBYSCORE', idx, maxs, '-inf', 'WITHSCORES',
    'LIMIT', offset, 100)
  if #page == 0 then break end
  local i = 1
  while i < #page do
    local id, s = page[i], page[i + 1]
    i = i + 2
    if not (cs ~= '' and s == cs and id >= cid) then
      scanned = scanned + 1
      local h = redis.call('HMGET', '@NAMES_KEY_WH_DELIVERY@' .. id, 'id', 'webhook', 'event', 'task', 'status', 'attempts', 'last_status', 'last_error', 'created_ms', 'next_ms', 'log', 'owner', 'server', 'tool', 'tenant')
      if not h[1] or h[15] ~= ARGV[1] then
        gone[#gone + 1] = id
      elseif (ARGV[5] == '' or h[4] == ARGV[5]) and (ARGV[6] == '' or h[5] == ARGV[6]) and
             (ARGV[7] == '' or h[12] == ARGV[7]) then
        for j = 1, 14 do out[#out + 1] = h[j] or '' end
        n = n + 1
      end
      if n >= limit or scanned >= 1000 then
        local more = i < #page or #redis.call('ZREVRANGEBYSCORE', idx, maxs, '-inf',
          'LIMIT', offset + #page / 2, 1) > 0
        if more then out[1] = s; out[2] = id end
        done = true
        break
      end
    end
  end
  offset = offset + #page / 2
end
if #gone > 0 then redis.call('ZREM', idx, unpack(gone)) end
return out
