-- whq_event.lua: the webhook deliveries of one task event outside any other script
-- (whq_event in common/whq.c).
-- uses: lib_whq.lua lib_clock.lua
-- KEYS: none (the keys are built from the tenant and the task id).
-- ARGV[1] tenant, ARGV[2] event (task.running ...), ARGV[3] task id, ARGV[4] the event's data
-- (a JSON object), ARGV[5] the base of the delivery ids.
-- Returns: how many deliveries were created.

local now = now_ms()
return whq_enqueue(ARGV[1], ARGV[2], ARGV[3], ARGV[4], iso(now), now, ARGV[5])
