// MCP Tasks on both surfaces over one task model (docs/protocol.md, "MCP Tasks"), against a local stack started with
// scripts/mcpq-local, over raw HTTP (no published client drives the 2026-07-28 tasks
// extension yet; the v2 SDK refuses resultType "task"):
//   - 2026-07-28 with the io.modelcontextprotocol/tasks extension declared per request:
//     resultType "task" (CreateTaskResult = Result & Task, flat), tasks/get with result/error
//     once terminal, tasks/update, tasks/cancel, -32021 for a client that does not declare it;
//   - 2025-11-25 (params.task, tasks/get, tasks/result) and the system server's
//     workerSysGetTaskStatus reading the same tasks.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { API_KEY, CONFIG, startStack } from './lib/stack.mjs';
import { killPids, pidAlive, readPids, textOf, waitFor } from './lib/util.mjs';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const EXT = 'io.modelcontextprotocol/tasks';
const OTHER_KEY = CONFIG.tenants[1].api_keys[0].key;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const T = { timeout: 60_000 };

let stack;
let session; // a 2025-11-25 session id
let nextId = 1;

before(async () => {
  stack = await startStack({ label: 'tasks', workers: 1 });
  const init = await legacy('initialize', {
    protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'mcpq-tasks-test', version: '1' },
  });
  assert.equal(init.status, 200, init.text);
  session = init.headers.get('mcp-session-id');
  assert.ok(session, 'initialize gives a session');
  await legacy('notifications/initialized', undefined, { notification: true });
}, { timeout: 180_000 });

after(async () => { await stack?.stop(); }, { timeout: 60_000 });

async function post(path_, headers, body) {
  const res = await fetch(stack.baseUrl + path_, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json, result: json?.result, error: json?.error };
}

/**
 * A 2026-07-28 request: version, method and name headers mirrored from the body, and the
 * tasks extension in the per-request capabilities unless declare is false.
 */
function modern(method, params = {}, { declare = true, key = API_KEY, name, server = '' } = {}) {
  const meta = { 'io.modelcontextprotocol/protocolVersion': MODERN };
  if (declare) meta['io.modelcontextprotocol/clientCapabilities'] = { extensions: { [EXT]: {} } };
  const headers = { Authorization: `Bearer ${key}`, 'MCP-Protocol-Version': MODERN, 'Mcp-Method': method };
  const mirrored = name ?? (method === 'tools/call' ? params.name : params.taskId);
  if (typeof mirrored === 'string') headers['Mcp-Name'] = mirrored;
  return post(`/mcp${server}`, headers, { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: meta } });
}

/** A 2025-11-25 request in the test's session. */
function legacy(method, params, { notification = false, server = '' } = {}) {
  const headers = { Authorization: `Bearer ${API_KEY}`, 'MCP-Protocol-Version': LEGACY };
  if (session) headers['Mcp-Session-Id'] = session;
  const body = { jsonrpc: '2.0', method, ...(params ? { params } : {}), ...(notification ? {} : { id: nextId++ }) };
  return post(`/mcp${server}`, headers, body);
}

/** Polls the extension's tasks/get until the task leaves "working"; the final result. */
async function untilDone(taskId, timeoutMs = 30_000) {
  let last;
  const done = await waitFor(async () => {
    last = await modern('tasks/get', { taskId });
    return last.result && last.result.status !== 'working' ? last.result : undefined;
  }, { timeoutMs, intervalMs: 200 });
  assert.ok(done, `task ${taskId} still not terminal: ${last?.text}`);
  return done;
}

function assertTaskShape(t, status) {
  assert.match(t.taskId, UUID);
  assert.equal(t.status, status);
  assert.match(t.createdAt, ISO);
  assert.match(t.lastUpdatedAt, ISO);
  assert.ok(Number.isInteger(t.ttlMs) && t.ttlMs > 0, `ttlMs ${t.ttlMs}`);
  assert.equal(t.ttl, undefined, 'the extension names it ttlMs');
}

test('server/discover advertises the tasks extension', T, async () => {
  const r = await modern('server/discover', {});
  assert.deepEqual(r.result?.capabilities?.extensions?.[EXT], {}, r.text);
});

test('a declaring client gets resultType "task" for a task-mode tool; tasks/get carries the result once completed', T, async () => {
  const r = await modern('tools/call', { name: 'task_job', arguments: { seconds: 1 } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.result.resultType, 'task', r.text);
  assertTaskShape(r.result, 'working');
  assert.ok(Number.isInteger(r.result.pollIntervalMs) && r.result.pollIntervalMs > 0, r.text);
  assert.equal(r.result.task, undefined, 'CreateTaskResult is flat (Result & Task)');
  assert.equal(r.result.structuredContent, undefined, 'not the task-mode answer');
  const { taskId } = r.result;

  // Durable before the answer: tasks/get resolves at once.
  const first = await modern('tasks/get', { taskId });
  assert.equal(first.result?.resultType, 'complete', first.text);
  assert.equal(first.result.taskId, taskId);

  const done = await untilDone(taskId);
  assertTaskShape(done, 'completed');
  assert.equal(done.resultType, 'complete');
  assert.equal(done.pollIntervalMs, undefined, 'no poll interval once terminal');
  assert.equal(textOf(done.result), 'task_job done after 1 s');
  assert.notEqual(done.result.isError, true);

  // The same task through the 2025-11-25 surface and the system server.
  const g = await legacy('tasks/get', { taskId });
  assert.equal(g.result?.status, 'completed', g.text);
  assert.ok(Number.isInteger(g.result.ttl), '2025-11-25 names it ttl');
  const res = await legacy('tasks/result', { taskId });
  assert.equal(textOf(res.result), 'task_job done after 1 s', res.text);
  const sys = await legacy('tools/call', { name: 'workerSysGetTaskStatus', arguments: { TaskId: taskId } }, { server: '/system' });
  const data = sys.result?.structuredContent?.data;
  assert.equal(data?.TaskStatus, 'complete', sys.text);
  assert.equal(data?.AppId, 'task_job');
});

test('a 2026-07-28 client that does not declare the extension gets the task-mode answer and -32021 on tasks/*', T, async () => {
  const r = await modern('tools/call', { name: 'task_job', arguments: { seconds: 0 } }, { declare: false });
  assert.equal(r.result?.resultType, 'complete', r.text);
  const sc = r.result.structuredContent;
  assert.match(sc?.TaskId ?? '', UUID, r.text);
  assert.equal(sc.TaskStatus, 'waiting');

  for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
    const params = method === 'tasks/update' ? { taskId: sc.TaskId, inputResponses: {} } : { taskId: sc.TaskId };
    const e = await modern(method, params, { declare: false });
    assert.equal(e.status, 400, `${method}: ${e.text}`);
    assert.equal(e.error?.code, -32021, e.text);
    assert.deepEqual(e.error.data, { requiredCapabilities: { extensions: { [EXT]: {} } } });
  }
  // Declaring now, the task started without the extension is readable: one model.
  const done = await untilDone(sc.TaskId);
  assert.equal(done.status, 'completed', JSON.stringify(done));
});

test('a tool isError result ends the task completed (extension) but failed (2025-11-25)', T, async () => {
  const r = await modern('tools/call', { name: 'task_job', arguments: { seconds: 0, fail: true } });
  assert.equal(r.result?.resultType, 'task', r.text);
  const done = await untilDone(r.result.taskId);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result?.isError, true);
  assert.equal(textOf(done.result), 'task_job failed as asked');
  assert.equal(done.error, undefined);
  const g = await legacy('tasks/get', { taskId: r.result.taskId });
  assert.equal(g.result?.status, 'failed', g.text);
});

test('a task past its tool timeout fails with the JSON-RPC error -32003', T, async () => {
  const r = await modern('tools/call', { name: 'task_job', arguments: { seconds: 20 } });
  assert.equal(r.result?.resultType, 'task', r.text);
  const done = await untilDone(r.result.taskId, 40_000);
  assert.equal(done.status, 'failed', JSON.stringify(done));
  assert.equal(done.error?.code, -32003);
  assert.match(done.error.message, /timed out after 3000 ms/);
  assert.match(done.statusMessage, /timed out/);
  assert.equal(done.result, undefined);
});

test('any tool becomes a task when a declaring client sends params.task; without it the server answers directly', T, async () => {
  const sync = await modern('tools/call', { name: 'echo', arguments: { text: 'now' } });
  assert.equal(sync.result?.resultType, 'complete', sync.text);
  assert.match(textOf(sync.result), /now/);

  const r = await modern('tools/call', { name: 'echo', arguments: { text: 'later' }, task: {} });
  assert.equal(r.result?.resultType, 'task', r.text);
  const done = await untilDone(r.result.taskId);
  assert.equal(done.status, 'completed');
  assert.match(textOf(done.result), /later/);
});

test('a task created by a 2025-11-25 client is read through the extension', T, async () => {
  const r = await legacy('tools/call', { name: 'echo', arguments: { text: 'old surface' }, task: { ttl: 60000 } });
  const taskId = r.result?.task?.taskId;
  assert.match(taskId ?? '', UUID, r.text);
  const done = await untilDone(taskId);
  assert.equal(done.status, 'completed');
  assert.match(textOf(done.result), /old surface/);
});

test('tasks/cancel stops a running task and kills its process; cancelling again or a finished task is acknowledged', T, async () => {
  const pidfile = path.join(stack.stateDir, `cancel-${process.pid}.pids`);
  const r = await modern('tools/call', { name: 'slow_job', arguments: { pidfile, seconds: 60 }, task: {} });
  assert.equal(r.result?.resultType, 'task', r.text);
  const { taskId } = r.result;
  const pids = await waitFor(() => readPids(pidfile), { timeoutMs: 20_000 });
  assert.ok(pids, 'slow_job started');
  try {
    const c = await modern('tasks/cancel', { taskId });
    assert.equal(c.status, 200, c.text);
    assert.deepEqual(Object.keys(c.result).filter((k) => k !== '_meta'), ['resultType'], c.text);
    assert.equal(c.result.resultType, 'complete');
    const g = await modern('tasks/get', { taskId });
    assert.equal(g.result?.status, 'cancelled', g.text);
    assert.equal(g.result.result, undefined);
    assert.ok(await waitFor(() => pids.every((p) => !pidAlive(p)), { timeoutMs: 15_000 }),
      `slow_job processes ${pids} still alive after tasks/cancel`);
    const again = await modern('tasks/cancel', { taskId });
    assert.equal(again.result?.resultType, 'complete', again.text);
  } finally {
    killPids(pids);
  }
});

test('tasks/update acknowledges a known task (nothing is outstanding) and checks its params', T, async () => {
  const r = await modern('tools/call', { name: 'task_job', arguments: { seconds: 0 } });
  const { taskId } = r.result;
  const u = await modern('tasks/update', { taskId, inputResponses: { nothing: { action: 'accept', content: {} } } });
  assert.equal(u.status, 200, u.text);
  assert.equal(u.result?.resultType, 'complete', u.text);
  const bad = await modern('tasks/update', { taskId });
  assert.equal(bad.error?.code, -32602, bad.text);
  const unknown = await modern('tasks/update', { taskId: '00000000-0000-4000-8000-000000000000', inputResponses: {} });
  assert.equal(unknown.error?.code, -32602, unknown.text);
  await untilDone(taskId);
});

test('unknown and foreign task ids are -32602; Mcp-Name must mirror taskId; tasks/list and tasks/result are not extension methods', T, async () => {
  const unknown = await modern('tasks/get', { taskId: '00000000-0000-4000-8000-000000000000' });
  assert.equal(unknown.error?.code, -32602, unknown.text);
  const cancelUnknown = await modern('tasks/cancel', { taskId: 'no-such-task' });
  assert.equal(cancelUnknown.error?.code, -32602, cancelUnknown.text);
  const noId = await modern('tasks/get', {});
  assert.equal(noId.error?.code, -32602, noId.text);

  const r = await modern('tools/call', { name: 'task_job', arguments: { seconds: 0 } });
  const { taskId } = r.result;
  const foreign = await modern('tasks/get', { taskId }, { key: OTHER_KEY });
  assert.equal(foreign.error?.code, -32602, foreign.text);
  assert.doesNotMatch(foreign.text, /task_job/);
  const foreignCancel = await modern('tasks/cancel', { taskId }, { key: OTHER_KEY });
  assert.equal(foreignCancel.error?.code, -32602, foreignCancel.text);

  const mismatch = await modern('tasks/get', { taskId }, { name: 'some-other-task' });
  assert.equal(mismatch.status, 400, mismatch.text);
  assert.equal(mismatch.error?.code, -32020, mismatch.text);

  for (const method of ['tasks/list', 'tasks/result']) {
    const e = await modern(method, method === 'tasks/result' ? { taskId } : {});
    assert.equal(e.status, 404, `${method}: ${e.text}`);
    assert.equal(e.error?.code, -32601);
  }
  await untilDone(taskId);
});
