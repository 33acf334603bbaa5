// Asking the user mid-call, across the queue (issue 32, "Done when"), with the official SDK
// clients and real processes: a tool running on a worker asks the caller an
// `elicitation/create` (and `sampling/createMessage`, `roots/list`), the question travels
// worker -> Redis -> the ingress replica that holds the call -> the client, and the client's
// answer comes back to the same worker through the OTHER replica (docs/internals.md, "Asking
// the client"; docs/protocol.md, "Asking the user"; docs/tools.md, "Asking the user").
//
// Stack A: two ingress replicas and two workers. Each client's fetch sends its calls to its
// home replica and, on purpose, its answer to the other one: up to 2025-11-25 the JSON-RPC
// response to the request the call's SSE stream carried (id "mcpq-in/<n>/<key>/<job_id>");
// in 2026-07-28 the retried call with `inputResponses` and `requestState`. Every case
// asserts from the wire which replica got what, and that the tool ran on a worker process
// (its pid in a worker-<i>.pid of the launcher, or its job's `job start` in a worker log):
//
//   tools: an exec tool (interactive line protocol, tools/ask_user.sh), an http tool (answers
//          `input_required`, called again with `inputResponses`: a service in this file), an
//          upstream stdio server (elicit-upstream.mjs: SDK v1 server calling elicitInput,
//          relayed by the mcp executor);
//   clients: SDK v1 (`@modelcontextprotocol/sdk`) in 2025-11-25, 2025-06-18 and 2025-03-26, SDK v2
//          (`@modelcontextprotocol/client`) pinned to 2026-07-28 (multi round-trip requests,
//          the SDK fulfils `input_required` itself) and in its default legacy mode.
//   Also sampling and roots, a client without the capability, and a 2026-07-28 call whose
//   answering replica is restarted before the retry (sent to it, then to the other).
//
// Stack B (faults): two ingress replicas, one worker that runs one job at a time
// (MCPQ_MAX_INFLIGHT_JOBS=1), MCPQ_INPUT_TIMEOUT_MS=6000: a silent client (the tool gets the
// timeout error; the next call runs, so the slot was freed), the holding replica stopped
// (SIGTERM: the job is cancelled, the next call runs), the worker SIGKILLed while it waits
// (legacy: the call ends with the input_lost error once the job is delivered again;
// 2026-07-28: the retry gets the input_lost error). Every wait is bounded.
//
//   tests/clients/run.sh elicit      (ctest: e2e/test_clients_elicit)
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { CLIENTS_DIR, freePort, startStack } from './lib/stack.mjs';
import { pidAlive, waitFor } from './lib/util.mjs';

const KEY = 'elicit-key-3c9f1e';
const T = { timeout: 120_000 };
const CALL_TIMEOUT_MS = 90_000;
const MESSAGE = 'Deploy build 42 to production?';
const ELICIT_SCHEMA = {
  type: 'object',
  properties: {
    confirm: { type: 'boolean', title: 'Deploy now?' },
    approver: { type: 'string', title: 'Your name' },
  },
  required: ['confirm', 'approver'],
};
const SAMPLE = { role: 'assistant', content: { type: 'text', text: 'teal' }, model: 'test-model', stopReason: 'endTurn' };
const ROOTS = { roots: [{ uri: 'file:///srv/releases', name: 'releases' }] };
// The stdio upstream resolves the SDK from the npm work dir (lib/register.mjs).
const DEPS_ENV = { MCPQ_CLIENTS_DEPS: process.env.MCPQ_CLIENTS_DEPS ?? '' };
const IN_ID = /^mcpq-in\/(\d+)\/([A-Za-z0-9_.-]{1,64})\/(.+)$/; // docs/internals.md, legacy request id

let tmp;

// ---------------------------------------------------------------------------------------
// The http tool's service: the first POST of a job is answered `input_required` (the MCP
// shape: inputRequests and a requestState of its own); the POST that carries
// `inputResponses` is answered with a CallToolResult holding the answer.
const httpSeen = []; // every envelope POSTed to the service, in arrival order
let httpServer;
let httpPort;

function startAskService() {
  httpServer = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => { raw += d; });
    req.on('end', () => {
      let env;
      try { env = JSON.parse(raw); } catch { res.writeHead(400).end('not JSON'); return; }
      httpSeen.push(env);
      res.setHeader('content-type', 'application/json');
      if (!env.inputResponses) {
        res.end(JSON.stringify({
          resultType: 'input_required',
          inputRequests: { confirm: { method: 'elicitation/create', params: { message: MESSAGE, requestedSchema: ELICIT_SCHEMA } } },
          requestState: `svc-state-${env.job_id}`,
        }));
        return;
      }
      const rounds = httpSeen.filter((e) => e.job_id === env.job_id).length;
      res.end(JSON.stringify({
        content: [{ type: 'text', text: `http tool got ${JSON.stringify(env.inputResponses.confirm)}` }],
        structuredContent: { answer: env.inputResponses.confirm, requestState: env.requestState ?? null, rounds },
      }));
    });
  });
  return new Promise((resolve) => httpServer.listen(httpPort, '127.0.0.1', resolve));
}

// ---------------------------------------------------------------------------------------
// The stacks' config: tenant `elicit`, the asking tools and an echo.
function writeConfig(name) {
  const sync = (toolName, description, executor, inputSchema = { type: 'object', properties: {} }) => ({
    tenant: 'elicit', server: 'default', name: toolName, published: '1',
    versions: [{ version: '1', description, inputSchema, executor, timeout_ms: 150_000, mode: 'sync' }],
  });
  const askExec = (kind) => ({
    type: 'exec', argv: ['/bin/sh', 'tests/clients/tools/ask_user.sh', kind], interactive: true,
    env: { ASK_STATE_DIR: tmp },
  });
  const upstream = (tool) => ({
    type: 'mcp', command: process.execPath,
    args: ['--import', path.join(CLIENTS_DIR, 'lib', 'register.mjs'), path.join(CLIENTS_DIR, 'elicit-upstream.mjs')],
    env: { MCPQ_CLIENTS_DEPS: { env: 'MCPQ_CLIENTS_DEPS' } }, // the worker's variable (stack env)
    // A server's request reaches the call only when it is the one call in flight on its
    // process (docs/executors.md, "stdio upstreams").
    limits: { processes: 1, concurrency: 1 },
    tool,
  });
  const config = {
    tenants: [{ id: 'elicit', api_keys: [{ id: 'elicit-k1', key: KEY }], default_server: 'default' }],
    servers: [{ tenant: 'elicit', name: 'default', description: 'tools that ask their caller mid-call' }],
    tools: [
      sync('echo', 'Echo the arguments back (builtin executor)', { type: 'builtin', name: 'echo' },
        { type: 'object', properties: { text: { type: 'string' } } }),
      sync('ask_exec', 'Asks the caller to confirm a deployment (exec, interactive)', askExec('elicit')),
      sync('ask_exec_sample', "Asks the caller's model for a colour (exec, interactive)", askExec('sample')),
      sync('ask_exec_roots', "Asks the caller for its roots (exec, interactive)", askExec('roots')),
      sync('ask_http', 'Asks the caller to confirm a deployment (http, input_required)',
        { type: 'http', url: `http://127.0.0.1:${httpPort}/ask` }),
      sync('ask_upstream', 'Asks the caller to confirm a deployment (stdio upstream, elicitInput)', upstream('deploy'),
        { type: 'object', properties: { build: { type: 'string' } } }),
      sync('ask_upstream_sample', "Asks the caller's model for a colour (stdio upstream, createMessage)", upstream('colour')),
    ],
  };
  const file = path.join(tmp, `${name}.json`);
  writeFileSync(file, JSON.stringify(config, null, 1));
  return file;
}

// ---------------------------------------------------------------------------------------
// The launcher's processes (state dir <name>.pid) and logs.
function pidOf(stack, name) {
  try { return Number(readFileSync(path.join(stack.stateDir, `${name}.pid`), 'utf8').trim()); } catch { return undefined; }
}
function pidsOf(stack, prefix) {
  return readdirSync(stack.stateDir).filter((n) => n.startsWith(prefix) && n.endsWith('.pid'))
    .map((n) => Number(readFileSync(path.join(stack.stateDir, n), 'utf8').trim()));
}
/** Asserts that pid is one of the stack's workers, a process apart from every ingress replica. */
function assertWorkerPid(stack, pid, what) {
  const workers = pidsOf(stack, 'worker-');
  const ingresses = pidsOf(stack, 'ingress-');
  assert.ok(Number.isInteger(pid) && workers.includes(pid),
    `${what}: the asking process ${pid} is not a worker (workers ${workers}, ingresses ${ingresses})`);
  assert.ok(!ingresses.includes(pid), `${what}: the asking process ${pid} is an ingress replica`);
}
/** The component logs that started job_id (`job start`): the worker that ran it. */
function startedBy(stack, jobId) {
  return readdirSync(stack.stateDir).filter((n) => n.endsWith('.log')).filter((n) => {
    const text = readFileSync(path.join(stack.stateDir, n), 'utf8');
    return text.split('\n').some((l) => l.includes('job start') && l.includes(jobId));
  });
}
function logLines(stack, name, ...needles) {
  const text = readFileSync(path.join(stack.stateDir, `${name}.log`), 'utf8');
  return text.split('\n').filter((l) => needles.every((n) => l.includes(n)));
}
/** The last `<pid> <worker pid> <job id>` ask_user.sh wrote, after `skip` lines. */
function lastAsked(skip) {
  const file = path.join(tmp, 'asked');
  if (!existsSync(file)) return undefined;
  const lines = readFileSync(file, 'utf8').trim().split('\n').filter(Boolean);
  if (lines.length <= skip) return undefined;
  const [pid, workerPid, jobId] = lines[lines.length - 1].split(' ');
  return { pid: Number(pid), workerPid: Number(workerPid), jobId };
}
function askedCount() {
  const file = path.join(tmp, 'asked');
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).length : 0;
}
async function readyz(stack, i) {
  try {
    const r = await fetch(`http://127.0.0.1:${stack.port + i}/readyz`);
    return r.status === 200;
  } catch { return false; }
}
/** Waits (bounded) until the launcher restarted <name> (a new live pid) and it is ready again. */
async function restarted(stack, name, oldPid) {
  const ok = await waitFor(async () => {
    const pid = pidOf(stack, name);
    if (!pid || pid === oldPid || !pidAlive(pid)) return false;
    if (name.startsWith('ingress-')) return readyz(stack, Number(name.slice('ingress-'.length)));
    return existsSync(path.join(stack.stateDir, `${name}.ready`));
  }, { timeoutMs: 60_000, intervalMs: 100 });
  assert.ok(ok, `${name} (pid ${oldPid}) was not restarted and ready within 60 s\n${stack.logs()}`);
}

// ---------------------------------------------------------------------------------------
// Clients. kind: 'v1' (SDK v1, 2025-11-25), 'v1-0618' and 'v1-0326' (SDK v1 with its
// initialize pinned to 2025-06-18 or 2025-03-26, which has no elicitation of its own: mcpq asks
// what the client declared), 'v2' (SDK v2 pinned to 2026-07-28), 'v2-legacy' (SDK v2, default
// legacy mode).
// Requests go to replica `home`; a JSON-RPC response (legacy answer) and a retried call with
// requestState (2026-07-28 answer) go to `answerTo` (default: the other replica).
const KINDS = {
  v1: { label: 'SDK v1, 2025-11-25', era: '2025-11-25', mrtr: false },
  'v1-0618': { label: 'SDK v1, 2025-06-18', era: '2025-06-18', mrtr: false, pin: true },
  'v1-0326': { label: 'SDK v1, 2025-03-26', era: '2025-03-26', mrtr: false, pin: true },
  v2: { label: 'SDK v2, 2026-07-28 (multi round-trip)', era: '2026-07-28', mrtr: true },
  'v2-legacy': { label: 'SDK v2, legacy handshake (2025-11-25)', era: '2025-11-25', mrtr: false },
};

const isResponse = (b) => b && !Array.isArray(b) && b.method === undefined && b.id !== undefined && ('result' in b || 'error' in b);

/**
 * @returns {Promise<{client, kind, wire: object[], asked: object[], callTool(name, args?): Promise<object>, close(): Promise<void>}>}
 *   asked: the server-to-client requests the handlers got ({method, params, id})
 */
async function connect(stack, kind, { home = 0, answerTo, caps = ['elicitation', 'sampling', 'roots'], answer = {} } = {}) {
  const { era, mrtr } = KINDS[kind];
  const to = answerTo ?? 1 - home;
  const wire = [];
  const asked = [];
  async function routedFetch(url, init = {}) {
    let body;
    try { body = typeof init.body === 'string' ? JSON.parse(init.body) : undefined; } catch { /* not JSON */ }
    if (KINDS[kind].pin && body?.method === 'initialize') {
      body.params.protocolVersion = era;
      init = { ...init, body: JSON.stringify(body) };
    }
    let replica = home;
    if (isResponse(body)) replica = to;
    if (body?.method === 'tools/call' && body.params?.requestState !== undefined) replica = to;
    const target = new URL(url);
    target.port = String(stack.port + replica);
    const entry = { method: init.method ?? 'GET', body, replica, headers: Object.fromEntries(new Headers(init.headers)) };
    wire.push(entry);
    const pending = fetch(target, init);
    // A client may not wait for its POSTed answer's status before the call ends: doneP does.
    entry.doneP = pending.then((res) => {
      entry.status = res.status;
      entry.contentType = res.headers.get('content-type') ?? '';
    }, (err) => { entry.error = err; });
    const res = await pending;
    await entry.doneP;
    if (body?.method === 'tools/call') entry.textP = res.clone().text().then((t) => { entry.text = t; }, () => {});
    return res;
  }
  const record = (method, params, id) => asked.push({ method, params, id });
  const reply = async (method, params, dflt) => (answer[method] ? answer[method](params) : dflt);
  const headers = { Authorization: `Bearer ${KEY}` };
  const url = new URL(stack.urls[home]);
  let client;
  if (kind.startsWith('v1')) {
    const capabilities = {};
    for (const c of caps) capabilities[c] = {};
    client = new ClientV1({ name: `mcpq-elicit-${kind}`, version: '1.0.0' }, { capabilities });
    if (caps.includes('elicitation')) {
      client.setRequestHandler(ElicitRequestSchema, async (req, extra) => {
        record(req.method, req.params, extra.requestId);
        return reply('elicitation/create', req.params, { action: 'accept', content: { confirm: true, approver: `ada-${kind}` } });
      });
    }
    if (caps.includes('sampling')) {
      client.setRequestHandler(CreateMessageRequestSchema, async (req, extra) => {
        record(req.method, req.params, extra.requestId);
        return reply('sampling/createMessage', req.params, SAMPLE);
      });
    }
    if (caps.includes('roots')) {
      client.setRequestHandler(ListRootsRequestSchema, async (req, extra) => {
        record(req.method, req.params, extra.requestId);
        return reply('roots/list', req.params, ROOTS);
      });
    }
    const transport = new TransportV1(url, { requestInit: { headers }, fetch: routedFetch });
    await client.connect(transport);
    assert.equal(transport.protocolVersion, era, `${kind} negotiated ${transport.protocolVersion}`);
  } else {
    const capabilities = {};
    if (caps.includes('elicitation')) capabilities.elicitation = { form: {} };
    if (caps.includes('roots')) capabilities.roots = {};
    if (caps.includes('sampling') && !mrtr) capabilities.sampling = {};
    client = new ClientV2({ name: `mcpq-elicit-${kind}`, version: '2.0.0' }, {
      capabilities,
      ...(mrtr ? { versionNegotiation: { mode: { pin: era } } } : {}),
    });
    if (capabilities.elicitation) {
      client.setRequestHandler('elicitation/create', async (req, ctx) => {
        record(req.method, req.params, ctx?.mcpReq?.id);
        return reply('elicitation/create', req.params, { action: 'accept', content: { confirm: true, approver: `ada-${kind}` } });
      });
    }
    if (capabilities.sampling) {
      client.setRequestHandler('sampling/createMessage', async (req, ctx) => {
        record(req.method, req.params, ctx?.mcpReq?.id);
        return reply('sampling/createMessage', req.params, SAMPLE);
      });
    }
    if (capabilities.roots) {
      client.setRequestHandler('roots/list', async (req, ctx) => {
        record(req.method, req.params, ctx?.mcpReq?.id);
        return reply('roots/list', req.params, ROOTS);
      });
    }
    await client.connect(new TransportV2(url, { requestInit: { headers }, fetch: routedFetch }));
  }
  return {
    client, kind, wire, asked,
    callTool(name, args = {}, timeout = CALL_TIMEOUT_MS) {
      const params = { name, arguments: args };
      return kind.startsWith('v1') ? client.callTool(params, undefined, { timeout }) : client.callTool(params, { timeout });
    },
    async close() { await client.close().catch(() => {}); },
  };
}

/** The tools/call exchanges of the wire from index `from` on, their response bodies read. */
async function callsOnWire(c, from) {
  const calls = c.wire.slice(from).filter((w) => w.method === 'POST' && w.body?.method === 'tools/call');
  await Promise.all(calls.map((w) => w.doneP));
  await Promise.all(calls.map((w) => w.textP));
  return calls;
}
/** The JSON-RPC response of a recorded tools/call (a JSON body or its SSE frame). */
function responseOf(entry) {
  const text = entry.text ?? '';
  if (entry.contentType.startsWith('text/event-stream')) {
    for (const block of text.split(/\r?\n\r?\n/)) {
      const data = block.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
      if (!data) continue;
      const m = JSON.parse(data);
      if (m.id === entry.body.id && ('result' in m || 'error' in m)) return m;
    }
    return undefined;
  }
  return text ? JSON.parse(text) : undefined;
}

/**
 * Checks how the answer travelled: legacy, the handler's request came with an "mcpq-in/..."
 * id on the call's stream and the client's response went to the other replica (202);
 * 2026-07-28, the call was answered input_required with a requestState by the home replica
 * and the retry carrying inputResponses and that requestState was answered by the other.
 */
async function assertAnsweredElsewhere(c, from, { home, to, method, key }) {
  const { mrtr, era } = KINDS[c.kind];
  const calls = await callsOnWire(c, from);
  assert.ok(calls.length >= 1, 'no tools/call on the wire');
  assert.equal(calls[0].replica, home, 'the call went to its home replica');
  for (const w of calls) assert.equal(w.headers['mcp-protocol-version'], era, `the call's era: ${JSON.stringify(w.headers)}`);
  if (!mrtr) {
    const q = c.asked.at(-1);
    const m = String(q?.id ?? '').match(IN_ID);
    if (c.kind.startsWith('v1')) assert.ok(m, `the request id on the call's stream: ${q?.id}`);
    const responses = c.wire.slice(from).filter((w) => w.method === 'POST' && isResponse(w.body));
    await Promise.all(responses.map((w) => w.doneP));
    assert.equal(responses.length, 1, `one JSON-RPC response POSTed: ${JSON.stringify(responses.map((r) => r.body))}`);
    assert.equal(responses[0].replica, to, 'the answer went to the other replica');
    assert.notEqual(responses[0].replica, home);
    assert.equal(responses[0].status, 202, `the answering replica accepted the response (HTTP ${responses[0].status})`);
    assert.match(String(responses[0].body.id), IN_ID);
    if (key) assert.equal(String(responses[0].body.id).match(IN_ID)[2], key, 'the request id names the question key');
    assert.equal(calls.length, 1, 'one tools/call');
    return;
  }
  assert.ok(calls.length >= 2, `the 2026-07-28 call was retried (${calls.length} tools/call)`);
  const first = responseOf(calls[0]);
  assert.equal(first?.result?.resultType, 'input_required', `first answer: ${calls[0].text?.slice(0, 500)}`);
  assert.equal(typeof first.result.requestState, 'string', 'input_required carries a requestState');
  const requests = Object.entries(first.result.inputRequests ?? {});
  assert.equal(requests.length, 1, JSON.stringify(first.result));
  assert.equal(requests[0][1].method, method);
  if (key) assert.equal(requests[0][0], key);
  const retry = calls[1];
  assert.equal(retry.replica, to, 'the retry went to the answering replica');
  assert.equal(retry.body.params.requestState, first.result.requestState, 'the retry echoes the requestState');
  assert.deepEqual(Object.keys(retry.body.params.inputResponses ?? {}), [requests[0][0]]);
  assert.equal(retry.status, 200);
}

before(async () => {
  tmp = mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'mcpq-elicit-'));
  httpPort = await freePort();
  await startAskService();
});

after(async () => {
  await new Promise((r) => (httpServer ? httpServer.close(r) : r()));
  if (tmp && process.env.KEEP !== '1') rmSync(tmp, { recursive: true, force: true });
});

// =======================================================================================
describe('stack A: two replicas, two workers', () => {
  let stack;
  before(async () => {
    stack = await startStack({
      label: 'elicit', config: writeConfig('stack-a'), ingresses: 2, workers: 2,
      env: { ...DEPS_ENV, MCPQ_SHUTDOWN_GRACE_MS: '2000' },
    });
  }, { timeout: 180_000 });
  after(async () => { await stack?.stop(); }, { timeout: 60_000 });

  const homes = { v1: 0, 'v1-0618': 1, 'v1-0326': 0, v2: 0, 'v2-legacy': 1 };
  for (const kind of Object.keys(KINDS)) {
    describe(KINDS[kind].label, () => {
      let c;
      const home = homes[kind];
      before(async () => { c = await connect(stack, kind, { home }); }, { timeout: 60_000 });
      after(async () => { await c?.close(); });

      test('exec tool (line protocol): the client is asked, the tool gets the answer', T, async () => {
        const from = c.wire.length;
        const n = c.asked.length;
        const r = await c.callTool('ask_exec');
        assert.notEqual(r.isError, true, JSON.stringify(r));
        assert.equal(c.asked.length, n + 1, 'the elicitation handler ran once');
        assert.equal(c.asked.at(-1).method, 'elicitation/create');
        assert.equal(c.asked.at(-1).params.message, MESSAGE);
        assert.deepEqual(c.asked.at(-1).params.requestedSchema, ELICIT_SCHEMA);
        assert.deepEqual(r.structuredContent?.answer,
          { result: { action: 'accept', content: { confirm: true, approver: `ada-${kind}` } } }, JSON.stringify(r));
        assertWorkerPid(stack, r.structuredContent.worker_pid, 'exec tool');
        assert.ok(startedBy(stack, r.structuredContent.job_id).every((n) => n.startsWith('worker-')));
        await assertAnsweredElsewhere(c, from, { home, to: 1 - home, method: 'elicitation/create' });
      });

      test('http tool (input_required): the worker asks, then POSTs the answer to the service', T, async () => {
        const from = c.wire.length;
        const seen = httpSeen.length;
        const r = await c.callTool('ask_http');
        assert.notEqual(r.isError, true, JSON.stringify(r));
        const expected = { action: 'accept', content: { confirm: true, approver: `ada-${kind}` } };
        assert.deepEqual(r.structuredContent?.answer, expected, JSON.stringify(r));
        const posts = httpSeen.slice(seen);
        assert.equal(posts.length, 2, `the service got the envelope twice: ${JSON.stringify(posts)}`);
        assert.equal(posts[0].job_id, posts[1].job_id);
        assert.equal(posts[1].requestState, `svc-state-${posts[0].job_id}`, "the service's requestState came back");
        assert.deepEqual(posts[1].inputResponses, { confirm: expected });
        assert.equal(r.structuredContent.rounds, 2);
        const by = startedBy(stack, posts[0].job_id);
        assert.ok(by.length >= 1 && by.every((n) => n.startsWith('worker-')), `job start logged by ${by}`);
        await assertAnsweredElsewhere(c, from, { home, to: 1 - home, method: 'elicitation/create', key: 'confirm' });
      });

      test('upstream stdio server (elicitInput, relayed by the mcp executor): the tool gets the answer', T, async () => {
        const from = c.wire.length;
        const r = await c.callTool('ask_upstream', { build: '42' });
        assert.notEqual(r.isError, true, JSON.stringify(r));
        assert.deepEqual(r.structuredContent?.answer,
          { action: 'accept', content: { confirm: true, approver: `ada-${kind}` } }, JSON.stringify(r));
        assert.equal(c.asked.at(-1).params.message, MESSAGE);
        assertWorkerPid(stack, r.structuredContent.worker_pid, 'the upstream\'s parent');
        await assertAnsweredElsewhere(c, from, { home, to: 1 - home, method: 'elicitation/create' });
      });
    });
  }

  test('sampling: an exec tool and an upstream ask the SDK v1 client\'s model (sampling/createMessage)', T, async () => {
    const c = await connect(stack, 'v1', { home: 1 });
    try {
      const from = c.wire.length;
      const r = await c.callTool('ask_exec_sample');
      assert.deepEqual(r.structuredContent?.answer, { result: SAMPLE }, JSON.stringify(r));
      assert.equal(c.asked.at(-1).method, 'sampling/createMessage');
      assert.equal(c.asked.at(-1).params.maxTokens, 20);
      await assertAnsweredElsewhere(c, from, { home: 1, to: 0, method: 'sampling/createMessage' });
      const u = await c.callTool('ask_upstream_sample');
      assert.equal(u.structuredContent?.answer?.content?.text, 'teal', JSON.stringify(u));
    } finally {
      await c.close();
    }
  });

  test('roots: an exec tool asks roots/list of SDK v1 (legacy) and SDK v2 (2026-07-28)', T, async () => {
    for (const kind of ['v1-0618', 'v2']) {
      const c = await connect(stack, kind, { home: 0 });
      try {
        const from = c.wire.length;
        const r = await c.callTool('ask_exec_roots');
        assert.deepEqual(r.structuredContent?.answer, { result: ROOTS }, `${kind}: ${JSON.stringify(r)}`);
        assert.equal(c.asked.at(-1).method, 'roots/list');
        await assertAnsweredElsewhere(c, from, { home: 0, to: 1, method: 'roots/list' });
      } finally {
        await c.close();
      }
    }
  });

  test('a client without the elicitation capability is never asked: the tool gets the -32601 error', T, async () => {
    for (const kind of ['v1', 'v2']) {
      const c = await connect(stack, kind, { home: 0, caps: [] });
      try {
        const from = c.wire.length;
        const r = await c.callTool('ask_exec');
        assert.deepEqual(r.structuredContent?.answer, {
          error: { code: -32601, message: 'the client did not declare the elicitation capability' },
        }, `${kind}: ${JSON.stringify(r)}`);
        assert.equal(c.asked.length, 0);
        const calls = await callsOnWire(c, from);
        assert.equal(calls.length, 1, `${kind}: one tools/call, no retry`);
        assert.ok(!c.wire.slice(from).some((w) => isResponse(w.body)), 'no answer was POSTed');
      } finally {
        await c.close();
      }
    }
  });

  test('2026-07-28: the replica that answered input_required is restarted; the retry on it, or on the other, succeeds', T, async () => {
    for (const answerTo of [0, 1]) {
      let stopped;
      const c = await connect(stack, 'v2', {
        home: 0, answerTo,
        answer: {
          'elicitation/create': async () => {
            stopped = pidOf(stack, 'ingress-0');
            process.kill(stopped, 'SIGTERM');
            await restarted(stack, 'ingress-0', stopped);
            return { action: 'accept', content: { confirm: true, approver: `after-restart-${answerTo}` } };
          },
        },
      });
      try {
        const from = c.wire.length;
        const r = await c.callTool('ask_exec');
        assert.ok(stopped, 'the handler ran');
        assert.notEqual(pidOf(stack, 'ingress-0'), stopped, 'ingress-0 runs as a new process');
        assert.deepEqual(r.structuredContent?.answer,
          { result: { action: 'accept', content: { confirm: true, approver: `after-restart-${answerTo}` } } },
          `retry on ingress-${answerTo}: ${JSON.stringify(r)}`);
        await assertAnsweredElsewhere(c, from, { home: 0, to: answerTo, method: 'elicitation/create' });
      } finally {
        await c.close();
      }
    }
  });
});

// =======================================================================================
describe('stack B (faults): two replicas, one worker running one job at a time', () => {
  let stack;
  before(async () => {
    stack = await startStack({
      label: 'elicit-faults', config: writeConfig('stack-b'), ingresses: 2, workers: 1,
      env: {
        ...DEPS_ENV, MCPQ_MAX_INFLIGHT_JOBS: '1', MCPQ_INPUT_TIMEOUT_MS: '6000', MCPQ_SHUTDOWN_GRACE_MS: '2000',
        // A killed worker's group membership ends sooner, so its job is delivered again
        // sooner (docs/kafka.md; docs/reliability.md on the devbroker's group).
        MCPQ_KAFKA_PROP_SESSION_TIMEOUT_MS: '6000',
      },
    });
  }, { timeout: 180_000 });
  after(async () => { await stack?.stop(); }, { timeout: 60_000 });

  /** A call that must run now on the only worker, whose only slot must be free. */
  async function nextCallRuns(home, what) {
    const c = await connect(stack, 'v1', { home, caps: [] });
    try {
      const r = await c.callTool('echo', { text: `after ${what}` }, 60_000);
      assert.deepEqual(r.structuredContent, { text: `after ${what}` }, JSON.stringify(r));
    } finally {
      await c.close();
    }
  }

  /**
   * A legacy client's answers that never come (until release()): when asked, it first sends
   * `signal` to the launcher's component `name` (when given), whose pid it keeps.
   */
  function neverAnswer(name, signal) {
    let release;
    const never = new Promise((r) => { release = r; });
    const state = { pid: undefined, release: () => release() };
    state.answer = {
      'elicitation/create': async () => {
        if (name) {
          state.pid = pidOf(stack, name);
          process.kill(state.pid, signal);
        }
        await never;
        return { action: 'cancel' };
      },
    };
    return state;
  }

  /** The input_lost error (docs/internals.md, "Asking the client": -32603, data.reason). */
  function assertInputLost(err, again) {
    const seen = JSON.stringify({ code: err?.code, message: err?.message, data: err?.data });
    assert.equal(err?.code, -32603, seen);
    assert.equal(err.data?.reason, 'input_lost', seen);
    assert.match(err.message, again, seen);
  }

  test('a silent client: the tool gets the timeout error after MCPQ_INPUT_TIMEOUT_MS, the call ends, the slot is free', T, async () => {
    const silent = neverAnswer();
    const c = await connect(stack, 'v1', { home: 0, answer: silent.answer });
    try {
      const r = await c.callTool('ask_exec');
      assert.equal(c.asked.length, 1, 'the client was asked');
      assert.deepEqual(r.structuredContent?.answer, {
        error: { code: -32001, message: 'the client did not answer within 6000 ms' },
      }, JSON.stringify(r));
      await nextCallRuns(1, 'a silent client');
    } finally {
      silent.release();
      await c.close();
    }
  });

  test('2026-07-28, a silent client: after the timeout a late retry is told to call again', T, async () => {
    const before0 = askedCount();
    const c = await connect(stack, 'v2', {
      home: 0,
      answer: {
        'elicitation/create': async () => {
          const job = await waitFor(() => lastAsked(before0), { timeoutMs: 30_000 });
          assert.ok(job, 'the tool asked');
          // The worker deletes the question when the timeout gives the tool its error answer.
          const gone = await waitFor(() => stack.redis('EXISTS', `{mcpq}:ask:${job.jobId}`) === '0', { timeoutMs: 60_000, intervalMs: 200 });
          assert.ok(gone, `the question of ${job.jobId} is still open after 60 s`);
          return { action: 'accept', content: { confirm: true, approver: 'too-late' } };
        },
      },
    });
    try {
      const err = await c.callTool('ask_exec').then((r) => assert.fail(`a late retry got a result: ${JSON.stringify(r)}`), (e) => e);
      assert.ok([-32602, -32603].includes(err.code), `${err.code} ${err.message}`);
      assert.match(err.message, /call (the tool )?again/i, err.message);
      await nextCallRuns(1, 'a late retry');
    } finally {
      await c.close();
    }
  });

  test('legacy: the replica holding the call is stopped (SIGTERM): the job is cancelled, the slot is free', T, async () => {
    const before0 = askedCount();
    const held = neverAnswer('ingress-0', 'SIGTERM'); // only the drain can end the job now
    const c = await connect(stack, 'v1', { home: 0, answer: held.answer });
    try {
      const outcome = await c.callTool('ask_exec', {}, 60_000).then((r) => ({ r }), (e) => ({ e }));
      assert.ok(held.pid, 'the handler ran');
      assert.ok(outcome.e, `the held call ends with an error: ${JSON.stringify(outcome.r)}`);
      // The stopping replica's own answer (docs/protocol.md, "Asking the user"), not the
      // client's timeout.
      assert.equal(outcome.e.code, -32603, JSON.stringify({ code: outcome.e.code, message: outcome.e.message }));
      const job = lastAsked(before0);
      assert.ok(job, 'the tool asked');
      const cancelled = await waitFor(() => logLines(stack, 'worker-0', 'job cancelled', job.jobId).length > 0, { timeoutMs: 30_000 });
      assert.ok(cancelled, `the worker did not log "job cancelled" for ${job.jobId}\n${stack.logs()}`);
      assert.ok(await waitFor(() => !pidAlive(job.pid), { timeoutMs: 30_000 }), 'the tool process was stopped');
      await nextCallRuns(1, 'a stopped replica');
      await restarted(stack, 'ingress-0', held.pid);
    } finally {
      held.release();
      await c.close();
    }
  });

  test('legacy: the worker is killed while it waits: the call ends with the input_lost error', T, async () => {
    const held = neverAnswer('worker-0', 'SIGKILL');
    const c = await connect(stack, 'v1', { home: 1, answer: held.answer });
    try {
      const outcome = await c.callTool('ask_exec', {}, 110_000).then((r) => ({ r }), (e) => ({ e }));
      assert.ok(held.pid, 'the handler ran');
      assert.ok(outcome.e, `the call ends with an error, got ${JSON.stringify(outcome.r)}`);
      assertInputLost(outcome.e, /call the tool again/);
      await restarted(stack, 'worker-0', held.pid);
    } finally {
      held.release();
      await c.close();
    }
  }, { timeout: 180_000 });

  test('2026-07-28: the worker is killed while it waits: the retry gets the input_lost error', T, async () => {
    const before0 = askedCount();
    let killed;
    const c = await connect(stack, 'v2', {
      home: 0,
      answer: {
        'elicitation/create': async () => {
          const job = await waitFor(() => lastAsked(before0), { timeoutMs: 30_000 });
          killed = pidOf(stack, 'worker-0');
          process.kill(killed, 'SIGKILL');
          // The dead worker refreshes its question no more: it expires (5 s).
          const gone = await waitFor(() => stack.redis('EXISTS', `{mcpq}:ask:${job.jobId}`) === '0', { timeoutMs: 60_000, intervalMs: 200 });
          assert.ok(gone, `the question of ${job.jobId} outlived its worker by 60 s`);
          return { action: 'accept', content: { confirm: true, approver: 'orphan' } };
        },
      },
    });
    try {
      const err = await c.callTool('ask_exec').then((r) => assert.fail(`the retry got a result: ${JSON.stringify(r)}`), (e) => e);
      assert.ok(killed, 'the handler ran');
      assertInputLost(err, /call (the tool )?again/);
      await restarted(stack, 'worker-0', killed);
    } finally {
      await c.close();
    }
  }, { timeout: 180_000 });
});
