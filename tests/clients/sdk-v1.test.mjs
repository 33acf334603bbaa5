// The official TypeScript SDK v1 client (@modelcontextprotocol/sdk 1.x, protocol 2025-11-25:
// initialize handshake, Mcp-Session-Id) against a local stack started with scripts/mcpq-local.
// docs/protocol.md (endpoint, progress and logs over SSE, cancellation, tools/list paging)
// and 6 (exec `progress` / `log` stderr lines, cancel kills the process).
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema, LoggingMessageNotificationSchema, ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { checkPrompts, checkResources } from './lib/fixtures.mjs';
import { API_KEY, TOOL_NAMES, startStack } from './lib/stack.mjs';
import {
  CONTENT_FIXTURES, LOG_LEVELS, isSubsequence, killPids, pidAlive, readPids, textOf, waitFor,
} from './lib/util.mjs';

const PAGE_SIZE = 5;
const T = { timeout: 60_000 };

let stack;
let client;
let transport;
const wire = []; // every HTTP exchange of the SDK transport: {method, body, status, contentType}
const logs = []; // notifications/message params, in arrival order

/** fetch that records what the SDK sends and what status it gets back. */
async function recordingFetch(url, init = {}) {
  const entry = { method: init.method ?? 'GET', body: undefined };
  try { entry.body = typeof init.body === 'string' ? JSON.parse(init.body) : undefined; } catch { /* not JSON */ }
  wire.push(entry);
  const res = await fetch(url, init);
  entry.status = res.status;
  entry.contentType = res.headers.get('content-type');
  return res;
}

before(async () => {
  stack = await startStack({ label: 'sdk-v1', env: { MCPQ_PAGE_SIZE: String(PAGE_SIZE) } });
  transport = new StreamableHTTPClientTransport(new URL(stack.url), {
    requestInit: { headers: { Authorization: `Bearer ${API_KEY}` } },
    fetch: recordingFetch,
  });
  client = new Client({ name: 'mcpq-sdk-v1-test', version: '1.0.0' }, { capabilities: {} });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params); });
  await client.connect(transport);
}, { timeout: 180_000 });

after(async () => {
  try {
    await client?.close().catch(() => {});
  } finally {
    await stack?.stop(); // SIGTERM: exit status 0, nothing left behind
  }
}, { timeout: 60_000 });

test('connect: initialize handshake gives an Mcp-Session-Id, 2025-11-25, tools, resources, prompts and completions', T, () => {
  assert.ok(transport.sessionId, 'the initialize response carries Mcp-Session-Id');
  assert.equal(transport.protocolVersion, '2025-11-25');
  const caps = client.getServerCapabilities();
  assert.equal(typeof caps?.tools, 'object', `capabilities.tools: ${JSON.stringify(caps)}`);
  assert.deepEqual(caps.resources, { subscribe: true, listChanged: true }, JSON.stringify(caps));
  assert.deepEqual(caps.prompts, { listChanged: true }, JSON.stringify(caps));
  assert.deepEqual(caps.completions, {}, JSON.stringify(caps));
  assert.ok(client.getServerVersion()?.name, 'initialize result carries serverInfo');
});

test(`tools/list pages (MCPQ_PAGE_SIZE=${PAGE_SIZE}) list every tool exactly once, deterministically`, T, async () => {
  const walk = async () => {
    const pages = [];
    let cursor;
    for (let i = 0; i < 50; i++) {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      pages.push(page.tools.map((t) => t.name));
      for (const t of page.tools) {
        assert.equal(typeof t.description, 'string', `${t.name} has a description`);
        assert.equal(t.inputSchema?.type, 'object', `${t.name} has an object inputSchema`);
      }
      cursor = page.nextCursor;
      if (!cursor) return pages;
    }
    throw new Error('more than 50 pages: the cursor does not advance');
  };
  const pages = await walk();
  const names = pages.flat();
  assert.ok(pages.length >= Math.ceil(TOOL_NAMES.length / PAGE_SIZE),
    `expected >= ${Math.ceil(TOOL_NAMES.length / PAGE_SIZE)} pages of <= ${PAGE_SIZE}, got ${JSON.stringify(pages)}`);
  assert.ok(pages.every((p) => p.length <= PAGE_SIZE), `a page is larger than ${PAGE_SIZE}: ${JSON.stringify(pages)}`);
  assert.equal(new Set(names).size, names.length, `a tool is listed twice: ${names}`);
  assert.deepEqual([...names].sort(), [...TOOL_NAMES].sort());
  assert.deepEqual((await walk()).flat(), names, 'a second walk lists the tools in the same order');
});

test('tools/call echo returns the arguments (structuredContent and JSON text)', T, async () => {
  const r = await client.callTool({ name: 'echo', arguments: { text: 'hello v1' } });
  assert.notEqual(r.isError, true, JSON.stringify(r));
  assert.deepEqual(r.structuredContent, { text: 'hello v1' });
  assert.deepEqual(JSON.parse(textOf(r)), { text: 'hello v1' });
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

test('progress: callTool onprogress gets 1/3, 2/3, 3/3 with messages, in order, before the result', T, async () => {
  const progress = [];
  const r = await client.callTool({ name: 'progress_job', arguments: {} }, CallToolResultSchema, {
    onprogress: (p) => progress.push(p),
  });
  assert.equal(textOf(r), 'progress job done');
  const values = progress.map((p) => p.progress);
  for (let i = 1; i < values.length; i++) {
    assert.ok(values[i] > values[i - 1], `progress MUST increase with each notification: ${JSON.stringify(progress)}`);
  }
  const steps = progress.filter((p) => p.total === 3).map((p) => [p.progress, p.message]);
  assert.deepEqual(steps, [[1, 'step 1'], [2, 'step 2'], [3, 'step 3']], JSON.stringify(progress));
});

test('progress: the conformance fixture reports 0, 50, 100 of 100', T, async () => {
  const progress = [];
  await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, CallToolResultSchema, {
    onprogress: (p) => progress.push(p),
  });
  assert.ok(isSubsequence([0, 50, 100], progress.map((p) => p.progress)), JSON.stringify(progress));
  assert.ok(progress.every((p) => p.total === 100), JSON.stringify(progress));
});

test('resources: list, templates, static reads, a read by a worker, a template read by a worker, an unknown uri', T, async () => {
  await checkResources(client);
});

test('prompts and completion: arguments substituted, a missing one refused, a prompt from a worker, completions of a prompt and a template', T, async () => {
  await checkPrompts(client);
});

test('logging: logging capability; setLevel debug → every level arrives; setLevel warning → warning and above only', T, async () => {
  const caps = client.getServerCapabilities();
  assert.equal(typeof caps?.logging, 'object',
    `a server that emits notifications/message MUST declare the logging capability: ${JSON.stringify(caps)}`);

  logs.length = 0;
  assert.deepEqual(await client.setLoggingLevel('debug'), {}, 'logging/setLevel answers an empty result');
  let r = await client.callTool({ name: 'log_job', arguments: {} });
  assert.equal(textOf(r), 'log job done');
  assert.deepEqual(logs.map((l) => l.level), LOG_LEVELS, `at debug every level: ${JSON.stringify(logs)}`);
  for (const l of logs) {
    assert.ok(JSON.stringify(l.data).includes(`${l.level} message from log_job`), `log data: ${JSON.stringify(l)}`);
  }

  logs.length = 0;
  await client.setLoggingLevel('warning');
  r = await client.callTool({ name: 'log_job', arguments: {} });
  assert.equal(textOf(r), 'log job done');
  assert.deepEqual(logs.map((l) => l.level), ['warning', 'error'], `at warning: ${JSON.stringify(logs)}`);

  logs.length = 0;
  await client.setLoggingLevel('info');
  await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
  const all = JSON.stringify(logs.map((l) => l.data));
  for (const m of ['Tool execution started', 'Tool processing data', 'Tool execution completed']) {
    assert.ok(all.includes(m), `conformance fixture log "${m}" missing: ${all}`);
  }
});

test('cancel: aborting callTool sends notifications/cancelled (202) and the tool\'s processes are killed', T, async () => {
  const pidfile = path.join(stack.stateDir, 'slow-v1.pids');
  const ac = new AbortController();
  const call = client.callTool({ name: 'slow_job', arguments: { pidfile, seconds: 30 } }, CallToolResultSchema,
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
    const cancelled = await waitFor(() => wire.find((w) => w.body?.method === 'notifications/cancelled' && w.status),
      { timeoutMs: 5_000 });
    assert.ok(cancelled, 'the SDK POSTs notifications/cancelled');
    assert.equal(cancelled.status, 202, 'a notification is answered 202 Accepted');

    const t0 = Date.now();
    const gone = await waitFor(() => pids.every((p) => !pidAlive(p)), { timeoutMs: 6_000 });
    assert.ok(gone, `after the cancel the tool's processes ${pids.filter(pidAlive)} still run ` +
      `${Date.now() - t0} ms later (docs/executors.md, exec: cancel -> SIGTERM, then SIGKILL to the process group)\n${stack.logs()}`);
  } finally {
    killPids(pids);
  }
  const r = await client.callTool({ name: 'echo', arguments: { text: 'after cancel' } });
  assert.deepEqual(r.structuredContent, { text: 'after cancel' }, 'the session keeps working after a cancel');
});

/** A tool document of the clients tenant's default server (docs/config-file.md), as the registry holds it. */
function addedTool(name) {
  return {
    tenant: 'clients', server: 'default', name, published: '1',
    versions: [{ version: '1', description: 'added by the list_changed test', inputSchema: { type: 'object' },
      executor: { type: 'builtin', name: 'echo' } }],
  };
}

test('tools/list_changed: a registry change reaches the GET stream the SDK opened after initialize', T, async () => {
  const get = wire.find((w) => w.method === 'GET');
  assert.ok(get, 'the SDK opens the standalone GET stream');
  assert.equal(get.status, 200, 'GET /mcp with the session opens the notification stream');
  assert.match(get.contentType ?? '', /^text\/event-stream/);
  let seen = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { seen++; });
  const name = 'e2e_list_changed_v1';
  stack.registrySet(`tool:clients:${name}`, addedTool(name));
  try {
    assert.ok(await waitFor(() => seen >= 1, { timeoutMs: 5_000 }),
      `no notifications/tools/list_changed on the GET stream\n${stack.logs()}`);
    const names = [];
    let cursor;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      names.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor);
    assert.ok(names.includes(name), `tools/list after the notification names ${name}: ${names}`);
  } finally {
    stack.registrySet(`tool:clients:${name}`, null);
  }
  assert.ok(await waitFor(() => seen >= 2, { timeoutMs: 5_000 }), 'removing the tool is a change too');
});
