-- lib_whq.lua: whq_enqueue(tenant, event, task_id, data_json, iso_ts, now_ms, id_base), prepended to
-- other scripts (common/whq.h). Creates one webhook delivery per webhook of the tenant that
-- subscribes to event (@NAMES_KEY_WH_DELIVERY@<id> hash, @NAMES_KEY_WH_DUE@, @NAMES_KEY_WH_INDEX@<tenant>),
-- reading the tenant's document from @NAMES_KEY_REGISTRY@ and the task's traceparent, owner,
-- server and tool (a delivery belongs to its task: ingress/core/owner.h; tool.changed has no
-- task, task_id '': its server and tool come from data_json, no owner), and
-- trims the tenant's index to WHQ_RETENTION_S and WHQ_INDEX_MAX.
-- KEYS, ARGV: none of its own (it defines only the local function whq_enqueue).
-- Returns: nothing itself; whq_enqueue returns how many deliveries it created.

local function whq_enqueue(tenant, event, task_id, data_json, iso_ts, now_ms, id_base)
  if event ~= 'task.running' and event ~= 'task.completed' and event ~= 'task.input_required' and
     event ~= 'task.terminated' and event ~= 'task.cancelled' and
     event ~= 'tool.changed' then return 0 end
  local doc = redis.call('HGET', '@NAMES_KEY_REGISTRY@', 'tenant:' .. tenant)
  if not doc then return 0 end
  local ok, t = pcall(cjson.decode, doc)
  if not ok or type(t) ~= 'table' or type(t.webhooks) ~= 'table' then return 0 end
  local now = string.format('%d', tonumber(now_ms))
  local body = '{"type":"' .. event .. '","timestamp":"' .. iso_ts ..
    '","data":' .. data_json .. '}'
  local idx = '@NAMES_KEY_WH_INDEX@' .. tenant
  local tk = {}
  if task_id ~= '' then
    tk = redis.call('HMGET', '@NAMES_KEY_TASK@' .. task_id, 'traceparent', 'owner', 'server',
      'tool')
  else
    local dok, d = pcall(cjson.decode, data_json)
    if dok and type(d) == 'table' then
      tk = {false, false, type(d.server) == 'string' and d.server or false,
        type(d.tool) == 'string' and d.tool or false}
    end
  end
  local tp = tk[1] or ''
  local n = 0
  for _, w in ipairs(t.webhooks) do
    local sub = false
    if type(w) == 'table' and type(w.id) == 'string' and type(w.events) == 'table' then
      for _, e in ipairs(w.events) do
        if e == event then sub = true end
      end
    end
    if sub then
      n = n + 1
      local id = 'msg_' .. id_base .. '_' .. n
      local k = '@NAMES_KEY_WH_DELIVERY@' .. id
      redis.call('HSET', k, 'id', id, 'tenant', tenant, 'webhook', w.id, 'event', event,
        'task', task_id, 'body', body, 'created_ms', now, 'attempts', '0',
        'status', 'pending', 'next_ms', now, 'last_status', '', 'last_error', '',
        'log', '[]', 'traceparent', tp, 'owner', tk[2] or '', 'server', tk[3] or '',
        'tool', tk[4] or '')
      redis.call('EXPIRE', k, @WHQ_RETENTION_S@)
      redis.call('ZADD', '@NAMES_KEY_WH_DUE@', now, id)
      redis.call('ZADD', idx, now, id)
    end
  end
  if n > 0 then
    redis.call('ZREMRANGEBYSCORE', idx, '-inf',
      '(' .. string.format('%d', tonumber(now) - @WHQ_RETENTION_S@ * 1000))
    redis.call('ZREMRANGEBYRANK', idx, 0, -@WHQ_INDEX_MAX@ - 1)
  end
  return n
end
