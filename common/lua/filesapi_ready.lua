-- filesapi_ready.lua (ingress/api/filesapi.c): marks an uploaded file ready.
-- KEYS[1] the file (@NAMES_KEY_FILE@<id>).
-- ARGV[1] sha256, [2] uploaded_ms.
-- Returns: 1 stored; 0 already ready; -1 gone.

local s = redis.call('HGET', KEYS[1], 'state')
if not s then return -1 end
if s ~= 'pending' then return 0 end
redis.call('HSET', KEYS[1], 'state', 'ready', 'sha256', ARGV[1], 'uploaded_ms', ARGV[2])
return 1
