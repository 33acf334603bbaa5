// JSON-RPC batches of protocol version 2025-03-26 (the default version) as a proper aggregate
// (docs/internals.md, "Batches"), against a local stack started with scripts/mcpq-local:
//   - the regression of issue 17 finding 2: two tasks/result elements for the same task used
//     to add one call to the pending table twice and spin the ingress at 100% CPU forever;
//     now each waits on its own, /metrics is served meanwhile (it shows both waiting) and so
//     are other calls (within generous bounds: no wall-clock deadline), and the array
//     carries both results;
//   - tools/call inside a batch: each element runs, the array is answered in element order
//     when the last one ends (Accept: application/json);
//   - a client that accepts text/event-stream gets every element's notifications and
//     responses as frames of one stream, which ends after the last response;
//   - over 100 messages: HTTP 400 with -32600.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { API_KEY, startStack } from './lib/stack.mjs';

const T = { timeout: 60_000 };
let stack;

before(async () => {
  stack = await startStack({ label: 'batch', workers: 2 });
}, { timeout: 180_000 });

after(async () => { await stack?.stop(); }, { timeout: 60_000 });

const req = (id, method, params) => ({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) });
const call = (id, name, args = {}, meta) => req(id, 'tools/call', { name, arguments: args, ...(meta ? { _meta: meta } : {}) });

/** POST /mcp without a session (2025-03-26 by default); the answer's text and parsed JSON. */
async function post(body, { accept = 'application/json', signal } = {}) {
  const res = await fetch(`${stack.baseUrl}/mcp`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json', Accept: accept },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { /* SSE or empty */ }
  return { status: res.status, type: res.headers.get('content-type') || '', text, json };
}

/** The JSON messages of an SSE body, in order. */
const frames = (text) => text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));

/** Waits up to 30 s (generous: a busy machine is slow, not wrong) for fn's answer. */
async function answered(what, fn) {
  try {
    return await fn(AbortSignal.timeout(30_000));
  } catch (err) {
    assert.fail(`${what} not answered within 30 s (${err.name}: ${err.message})`);
  }
}

/** /metrics' text. */
const metricsText = (signal) => fetch(`${stack.baseUrl}/metrics`, { signal }).then((r) => r.text());

test('two tasks/result of one task in a batch: both answered, the ingress keeps serving', T, async () => {
  const created = await post(call(1, 'task_job', { seconds: 2 }));
  assert.equal(created.status, 200, created.text);
  const taskId = created.json?.result?.structuredContent?.TaskId;
  assert.match(taskId ?? '', /^[0-9a-f-]{36}$/, created.text);

  let batchDone = false;
  const batch = post([req(11, 'tasks/result', { taskId }), req(12, 'tasks/result', { taskId }),
    req(13, 'ping')]).finally(() => { batchDone = true; });
  // While both elements wait, /metrics is served: polled until it shows both waiting (a
  // /metrics rendered while the batch waits, so no clock decides), and a normal call is
  // answered. Bounds are generous: a busy machine is slow, not wrong.
  let metrics = '';
  for (const until = Date.now() + 30_000; !/^mcpq_inflight_calls 2$/m.test(metrics) && !batchDone && Date.now() < until;) {
    metrics = await answered('/metrics', metricsText);
  }
  assert.match(metrics, /^mcpq_inflight_calls 2$/m, 'both elements wait as calls of their own');
  const echo = await answered('a tools/call', (signal) => post(call(2, 'echo', { text: 'meanwhile' }), { signal }));
  assert.deepEqual(echo.json?.result?.structuredContent, { text: 'meanwhile' }, echo.text);

  const r = await batch;
  assert.equal(r.status, 200, r.text);
  assert.ok(Array.isArray(r.json), r.text);
  assert.deepEqual(r.json.map((m) => m.id), [11, 12, 13]);
  for (const m of r.json.slice(0, 2)) {
    assert.match(JSON.stringify(m.result?.content ?? m), /task_job done after 2 s/, r.text);
    assert.equal(m.result._meta?.['io.modelcontextprotocol/related-task']?.taskId, taskId);
  }
  assert.deepEqual(r.json[2].result, {});
  const after_ = await answered('/metrics after the batch', metricsText);
  assert.match(after_, /^mcpq_inflight_calls 0$/m);
});

test('tools/call elements run and the array answers in element order', T, async () => {
  const r = await post([
    call(1, 'echo', { text: 'one' }),
    req(2, 'tools/list'),
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    call(3, 'progress_job'),
    call(4, 'no_such_tool'),
    { jsonrpc: '1.0', id: 5, method: 'ping' },
    call(6, 'echo', { text: 'six' }),
  ]);
  assert.equal(r.status, 200, r.text);
  assert.match(r.type, /^application\/json/);
  assert.deepEqual(r.json.map((m) => m.id), [1, 2, 3, 4, 5, 6], r.text);
  assert.deepEqual(r.json[0].result.structuredContent, { text: 'one' });
  assert.ok(r.json[1].result.tools.some((t) => t.name === 'echo'));
  assert.equal(r.json[2].result.isError, false, r.text);
  assert.equal(r.json[3].error.code, -32602);
  assert.equal(r.json[4].error.code, -32600);
  assert.deepEqual(r.json[5].result.structuredContent, { text: 'six' });
});

test('a client that accepts SSE gets every notification and response on one stream', T, async () => {
  const r = await post([
    call('p', 'progress_job', {}, { progressToken: 'tok-b' }),
    call('e', 'echo', { text: 'sse' }),
    req('g', 'ping'),
  ], { accept: 'application/json, text/event-stream' });
  assert.equal(r.status, 200, r.text);
  assert.match(r.type, /^text\/event-stream/);
  const msgs = frames(r.text);
  const progress = msgs.filter((m) => m.method === 'notifications/progress');
  assert.ok(progress.length >= 1 && progress.every((m) => m.params.progressToken === 'tok-b'), r.text);
  const responses = msgs.filter((m) => 'id' in m);
  assert.deepEqual(responses.map((m) => m.id).sort(), ['e', 'g', 'p'], r.text);
  assert.deepEqual(responses.find((m) => m.id === 'e').result.structuredContent, { text: 'sse' });
  assert.equal(responses.find((m) => m.id === 'p').result.isError, false);
  // The progress of the element comes before its response.
  assert.ok(msgs.indexOf(progress[0]) < msgs.indexOf(responses.find((m) => m.id === 'p')));
});

test('a batch of only immediate answers stays one JSON array, even for an SSE client', T, async () => {
  const r = await post([req(1, 'ping'), req(2, 'tools/list')], { accept: 'application/json, text/event-stream' });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.map((m) => m.id), [1, 2]);
  const n = await post([{ jsonrpc: '2.0', method: 'notifications/initialized' }]);
  assert.equal(n.status, 202);
});

test('more than 100 messages in a batch: 400 with -32600, and nothing runs', T, async () => {
  const r = await post(Array.from({ length: 101 }, (_, i) => call(i + 1, 'echo', { text: String(i) })));
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.error.code, -32600);
  assert.match(r.json.error.message, /at most 100/);
  const ok = await post(Array.from({ length: 100 }, (_, i) => req(i + 1, 'ping')));
  assert.equal(ok.status, 200);
  assert.equal(ok.json.length, 100);
});
