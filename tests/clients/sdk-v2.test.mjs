// The official TypeScript SDK v2 client (@modelcontextprotocol/client 2.x) pinned to protocol
// revision 2026-07-28 (stateless: server/discover, per-request _meta, Mcp-Method/Mcp-Name,
// resultType, ttlMs/cacheScope; cancellation = closing the request's SSE stream) against a
// local stack started with scripts/mcpq-local. docs/protocol.md, docs/executors.md.
//
// A recording fetch keeps every HTTP exchange the SDK makes, so the tests also check the
// wire: what was sent (headers, _meta) and what came back (status, session header, bodies).
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import {
  Client, LOG_LEVEL_META_KEY, PROTOCOL_VERSION_META_KEY, ProtocolError, StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { checkPrompts, checkResources } from './lib/fixtures.mjs';
import { API_KEY, TOOL_NAMES, startStack } from './lib/stack.mjs';
import {
  CONTENT_FIXTURES, LOG_LEVELS, isSubsequence, killPids, pidAlive, readPids, sleep, textOf, waitFor,
} from './lib/util.mjs';

const VERSION = '2026-07-28';
const SPEC_VERSIONS = ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26']; // docs/protocol.md, "Protocol versions"
const PAGE_SIZE = 5;
const T = { timeout: 60_000 };

let stack;
let client;
let transport;
const logs = []; // notifications/message params, in arrival order

/**
 * Every HTTP exchange: {method, headers (request, lower-case), body (parsed request),
 * status, resHeaders, text (response body, read from a clone for non-tools/call POSTs)}.
 */
const wire = [];
async function recordingFetch(url, init = {}) {
  const entry = { method: init.method ?? 'GET', headers: Object.fromEntries(new Headers(init.headers)) };
  try { entry.body = typeof init.body === 'string' ? JSON.parse(init.body) : undefined; } catch { /* not JSON */ }
  wire.push(entry);
  const res = await fetch(url, init);
  entry.status = res.status;
  entry.resHeaders = Object.fromEntries(res.headers);
  if (entry.body?.method !== 'tools/call') {
    entry.textP = res.clone().text().then((t) => { entry.text = t; }, () => {});
  }
  return res;
}

/** The JSON-RPC response in a recorded response body (JSON, or the SSE frame answering it). */
async function responseOf(entry) {
  await entry.textP;
  const text = entry.text ?? '';
  if ((entry.resHeaders?.['content-type'] ?? '').startsWith('text/event-stream')) {
    for (const block of text.split(/\r?\n\r?\n/)) {
      const data = block.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
      if (!data) continue;
      const m = JSON.parse(data);
      if (m.id === entry.body?.id && ('result' in m || 'error' in m)) return m;
    }
    return undefined;
  }
  return text ? JSON.parse(text) : undefined;
}

const posts = (method) => wire.filter((w) => w.method === 'POST' && w.body?.method === method);

before(async () => {
  stack = await startStack({ label: 'sdk-v2', env: { MCPQ_PAGE_SIZE: String(PAGE_SIZE) } });
  transport = new StreamableHTTPClientTransport(new URL(stack.url), {
    requestInit: { headers: { Authorization: `Bearer ${API_KEY}` } },
    fetch: recordingFetch,
  });
  client = new Client({ name: 'mcpq-sdk-v2-test', version: '2.0.0' }, {
    capabilities: {},
    versionNegotiation: { mode: { pin: VERSION } }, // modern era or a loud failure: no initialize fallback
  });
  client.setNotificationHandler('notifications/message', (n) => { logs.push(n.params); });
  try {
    await client.connect(transport);
  } catch (err) {
    const probe = wire[0];
    await probe?.textP;
    err.message = `2026-07-28 connect failed: ${err.message}; server/discover got HTTP ${probe?.status} ` +
      `${probe?.resHeaders?.['content-type'] ?? ''} ${probe?.text ?? ''}`;
    throw err;
  }
}, { timeout: 180_000 });

after(async () => {
  try {
    await client?.close().catch(() => {});
  } finally {
    await stack?.stop(); // SIGTERM: exit status 0, nothing left behind
  }
}, { timeout: 60_000 });

test('connect: server/discover (no initialize, no session) negotiates 2026-07-28', T, async () => {
  assert.equal(client.getProtocolEra(), 'modern');
  assert.equal(client.getNegotiatedProtocolVersion(), VERSION);
  assert.equal(transport.sessionId, undefined, 'no Mcp-Session-Id under 2026-07-28');

  const first = wire[0];
  assert.equal(first?.body?.method, 'server/discover', 'the SDK probes with server/discover first');
  assert.equal(first.headers['mcp-protocol-version'], VERSION);
  assert.equal(first.headers['mcp-method'], 'server/discover');
  assert.equal(first.status, 200, `server/discover: HTTP ${first.status} ${first.text}`);
  const discover = await responseOf(first);
  assert.equal(discover?.result?.resultType, 'complete', `discover result: ${JSON.stringify(discover)}`);

  const d = client.getDiscoverResult();
  for (const v of SPEC_VERSIONS) {
    assert.ok(d.supportedVersions.includes(v), `supportedVersions ${JSON.stringify(d.supportedVersions)} lacks ${v}`);
  }
  const caps = client.getServerCapabilities();
  assert.equal(typeof caps?.tools, 'object', `capabilities.tools: ${JSON.stringify(caps)}`);
  assert.deepEqual(caps.resources, { subscribe: true, listChanged: true }, JSON.stringify(caps));
  assert.deepEqual(caps.prompts, { listChanged: true }, JSON.stringify(caps));
  assert.deepEqual(caps.completions, {}, JSON.stringify(caps));

  assert.equal(posts('initialize').length, 0, 'no initialize under 2026-07-28');
  assert.ok(wire.every((w) => w.method === 'POST'), 'no GET stream under 2026-07-28');
  assert.ok(wire.every((w) => w.resHeaders?.['mcp-session-id'] === undefined), 'the server mints no Mcp-Session-Id');
});

test(`tools/list (MCPQ_PAGE_SIZE=${PAGE_SIZE}): every page carries resultType, ttlMs, cacheScope; every tool once`, T, async () => {
  const before = posts('tools/list').length;
  const all = await client.listTools(undefined, { cacheMode: 'bypass' }); // the SDK walks every page
  const names = all.tools.map((t) => t.name);
  assert.equal(new Set(names).size, names.length, `a tool is listed twice: ${names}`);
  assert.deepEqual([...names].sort(), [...TOOL_NAMES].sort());

  const pages = posts('tools/list').slice(before);
  assert.ok(pages.length >= Math.ceil(TOOL_NAMES.length / PAGE_SIZE), `only ${pages.length} tools/list requests`);
  let firstCursor;
  for (const [i, p] of pages.entries()) {
    assert.equal(p.headers['mcp-method'], 'tools/list');
    assert.equal(p.headers['mcp-protocol-version'], VERSION);
    assert.equal(p.body.params?._meta?.[PROTOCOL_VERSION_META_KEY], VERSION, 'the _meta envelope is on every request');
    const msg = await responseOf(p);
    const r = msg?.result;
    assert.ok(r, `tools/list page ${i}: ${p.status} ${p.text}`);
    assert.equal(r.resultType, 'complete');
    assert.ok(Number.isInteger(r.ttlMs) && r.ttlMs >= 0, `ttlMs: ${JSON.stringify(r.ttlMs)}`);
    assert.ok(['public', 'private'].includes(r.cacheScope), `cacheScope: ${JSON.stringify(r.cacheScope)}`);
    assert.ok(r.tools.length <= PAGE_SIZE, `page ${i} has ${r.tools.length} tools`);
    if (i === 0) firstCursor = r.nextCursor;
  }
  assert.ok(firstCursor, 'the first page has a nextCursor');

  // The same walk by hand (explicit cursors: the SDK returns each raw page).
  const walked = (await responseOf(pages[0])).result.tools.map((t) => t.name);
  let cursor = firstCursor;
  while (cursor) {
    const page = await client.listTools({ cursor });
    assert.ok(Number.isInteger(page.ttlMs) && ['public', 'private'].includes(page.cacheScope), JSON.stringify(page));
    walked.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  }
  assert.deepEqual(walked, names, 'a cursor walk gives the same tools in the same order');
});

test('tools/call echo: Mcp-Method/Mcp-Name headers, _meta envelope, a complete result', T, async () => {
  const r = await client.callTool({ name: 'echo', arguments: { text: 'hello v2' } });
  assert.notEqual(r.isError, true, JSON.stringify(r));
  assert.deepEqual(r.structuredContent, { text: 'hello v2' });
  assert.deepEqual(JSON.parse(textOf(r)), { text: 'hello v2' });
  const sent = posts('tools/call').at(-1);
  assert.equal(sent.headers['mcp-method'], 'tools/call');
  assert.equal(sent.headers['mcp-name'], 'echo');
  assert.equal(sent.headers['mcp-protocol-version'], VERSION);
  assert.equal(sent.headers['mcp-session-id'], undefined);
  assert.equal(sent.status, 200);
});

test('an unknown tool is a JSON-RPC error -32602 (ProtocolError)', T, async () => {
  await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), (err) => {
    assert.ok(err instanceof ProtocolError, `expected ProtocolError, got ${err?.constructor?.name}: ${err?.message}`);
    assert.equal(err.code, -32602, err.message);
    return true;
  });
});

test('content types pass through unchanged: text, image, audio, embedded resource, mixed; isError', T, async () => {
  for (const [name, ok] of Object.entries(CONTENT_FIXTURES)) {
    const r = await client.callTool({ name, arguments: {} });
    assert.notEqual(r.isError, true, `${name}: ${JSON.stringify(r)}`);
    assert.ok(ok(r), `${name} returned ${JSON.stringify(r).slice(0, 600)}`);
  }
  const e = await client.callTool({ name: 'test_error_handling', arguments: {} });
  assert.equal(e.isError, true, JSON.stringify(e));
  assert.equal(textOf(e), 'This tool intentionally returns an error for testing');
});

test('progress: onprogress gets 1/3, 2/3, 3/3 with messages, in order, on the request\'s SSE stream', T, async () => {
  const progress = [];
  const r = await client.callTool({ name: 'progress_job', arguments: {} }, { onprogress: (p) => progress.push(p) });
  assert.equal(textOf(r), 'progress job done');
  const values = progress.map((p) => p.progress);
  for (let i = 1; i < values.length; i++) {
    assert.ok(values[i] > values[i - 1], `progress MUST increase with each notification: ${JSON.stringify(progress)}`);
  }
  const steps = progress.filter((p) => p.total === 3).map((p) => [p.progress, p.message]);
  assert.deepEqual(steps, [[1, 'step 1'], [2, 'step 2'], [3, 'step 3']], JSON.stringify(progress));
  const sent = posts('tools/call').at(-1);
  assert.match(sent.resHeaders['content-type'] ?? '', /^text\/event-stream/, 'progress needs an SSE response');

  const fixture = [];
  await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, { onprogress: (p) => fixture.push(p) });
  assert.ok(isSubsequence([0, 50, 100], fixture.map((p) => p.progress)), JSON.stringify(fixture));
});

test('logging: _meta logLevel per request filters notifications/message; none without it', T, async () => {
  const call = (level) => client.callTool({
    name: 'log_job', arguments: {}, ...(level ? { _meta: { [LOG_LEVEL_META_KEY]: level } } : {}),
  });

  logs.length = 0;
  assert.equal(textOf(await call('debug')), 'log job done');
  assert.deepEqual(logs.map((l) => l.level), LOG_LEVELS, `logLevel debug: ${JSON.stringify(logs)}`);
  for (const l of logs) {
    assert.ok(JSON.stringify(l.data).includes(`${l.level} message from log_job`), `log data: ${JSON.stringify(l)}`);
  }

  logs.length = 0;
  await call('warning');
  assert.deepEqual(logs.map((l) => l.level), ['warning', 'error'], `logLevel warning: ${JSON.stringify(logs)}`);

  logs.length = 0;
  await call(undefined);
  await sleep(200);
  assert.deepEqual(logs, [], 'servers MUST NOT emit notifications/message for a request without logLevel');
});

test('cancel: aborting callTool closes the request\'s stream and the tool\'s processes are killed', T, async () => {
  const pidfile = path.join(stack.stateDir, 'slow-v2.pids');
  const ac = new AbortController();
  const call = client.callTool({ name: 'slow_job', arguments: { pidfile, seconds: 30 } },
    { signal: ac.signal, timeout: 120_000 });
  const settled = call.then((r) => ({ result: r }), (err) => ({ err }));
  let pids;
  try {
    pids = await waitFor(() => readPids(pidfile), { timeoutMs: 30_000 });
    assert.ok(pids, `slow_job did not write ${pidfile} within 30 s\n${stack.logs()}`);
    assert.ok(pids.every(pidAlive), `slow_job processes ${pids} are running before the cancel`);

    ac.abort('mcpq client test cancels the call');
    const outcome = await settled;
    assert.ok(outcome.err, `the aborted call must reject, got ${JSON.stringify(outcome.result)}`);
    assert.equal(posts('notifications/cancelled').length, 0,
      'under 2026-07-28 over HTTP the stream close is the cancellation (no notifications/cancelled)');

    const t0 = Date.now();
    const gone = await waitFor(() => pids.every((p) => !pidAlive(p)), { timeoutMs: 6_000 });
    assert.ok(gone, `after the stream closed the tool's processes ${pids.filter(pidAlive)} still run ` +
      `${Date.now() - t0} ms later (docs/protocol.md: closing the stream cancels; docs/executors.md: SIGTERM, then ` +
      `SIGKILL to the process group)\n${stack.logs()}`);
  } finally {
    killPids(pids);
  }
  const r = await client.callTool({ name: 'echo', arguments: { text: 'after cancel' } });
  assert.deepEqual(r.structuredContent, { text: 'after cancel' }, 'the gateway keeps serving after a cancel');
});

/** A tool document of the clients tenant's default server (docs/config-file.md), as the registry holds it. */
function addedTool(name) {
  return {
    tenant: 'clients', server: 'default', name, published: '1',
    versions: [{ version: '1', description: 'added by the list_changed test', inputSchema: { type: 'object' },
      executor: { type: 'builtin', name: 'echo' } }],
  };
}

test('resources: list, templates, static reads, reads by a worker; every read carries resultType, ttlMs, cacheScope and Mcp-Name', T, async () => {
  await checkResources(client);
  const reads = posts('resources/read').filter((w) => w.body.params.uri !== 'test://no-such-resource');
  assert.ok(reads.length >= 5, `${reads.length} reads`);
  for (const w of reads) {
    assert.equal(w.headers['mcp-name'], w.body.params.uri);
    const r = (await responseOf(w))?.result;
    assert.equal(r?.resultType, 'complete', JSON.stringify(r));
    assert.ok(Number.isInteger(r.ttlMs) && r.ttlMs >= 0, JSON.stringify(r));
    assert.ok(['public', 'private'].includes(r.cacheScope), JSON.stringify(r));
  }
});

test('prompts and completion: arguments substituted, a missing one refused, a prompt from a worker, completions', T, async () => {
  await checkPrompts(client);
  const gets = posts('prompts/get').filter((w) => w.status === 200);
  assert.ok(gets.some((w) => w.headers['mcp-name'] === 'test_prompt_with_image'));
  for (const w of gets) {
    const m = await responseOf(w);
    if (m?.result) assert.equal(m.result.resultType, 'complete', JSON.stringify(m));
  }
});

test('subscriptions/listen: acknowledged with toolsListChanged, then notifications/tools/list_changed', T, async () => {
  let seen = 0;
  client.setNotificationHandler('notifications/tools/list_changed', () => { seen++; });
  const sub = await client.listen({ toolsListChanged: true, promptsListChanged: true });
  assert.deepEqual(sub.honoredFilter, { toolsListChanged: true, promptsListChanged: true });
  const listen = wire.find((w) => w.body?.method === 'subscriptions/listen');
  assert.equal(listen.headers['mcp-method'], 'subscriptions/listen');
  const name = 'e2e_list_changed_v2';
  stack.registrySet(`tool:clients:${name}`, addedTool(name));
  try {
    assert.ok(await waitFor(() => seen >= 1, { timeoutMs: 5_000 }),
      `no notifications/tools/list_changed on the listen stream\n${stack.logs()}`);
  } finally {
    stack.registrySet(`tool:clients:${name}`, null);
  }
  assert.ok(await waitFor(() => seen >= 2, { timeoutMs: 5_000 }), 'removing the tool is a change too');
  await sub.close();
  assert.equal(await sub.closed, 'local');
});
