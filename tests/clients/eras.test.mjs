// The era-pair matrix (issue 31, "Versions translated"): every client era mcpq serves
// (2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28) against every upstream era, on a tool call,
// a resource read, a prompt get and a completion through mcpq. Workers hold the upstream
// sessions, so the two sides negotiate separately and mcpq translates between them.
//
// Upstreams: tests/clients/era-upstream.mjs, one per era, each built with the official SDK of
// its era and speaking ONLY that version (the SDK v1 pinned for the 2025 eras, the SDK v2 in
// modern-only mode for 2026-07-28). The stack (two ingress replicas, two workers) serves one
// server per upstream era, named after it, with a tool `echo_<era>`, a resource `info_<era>`
// (era://info) and a prompt `greet_<era>`, each an `mcp` executor on that upstream
// (docs/executors.md, "mcp"). The clients are raw HTTP, so each speaks exactly its era: a
// legacy client initializes with its version and sends MCP-Protocol-Version, a 2026-07-28
// client sends _meta and the Mcp-Method/Mcp-Name headers with every request; consecutive
// requests alternate between the two replicas.
//
// What each client must see (the shape of its own era, whatever the upstream's):
//   - the upstream's answer itself (text naming the upstream's era, the argument echoed);
//   - 2026-07-28: resultType "complete"; ttlMs and cacheScope on resources/read;
//   - 2025-*: none of the 2026-07-28 fields (resultType, ttlMs, cacheScope);
//   - 2025-03-26: no resource_link content (that era has none: the link arrives as a text
//     block naming its uri);
//   - 2025-06-18 and later: a newer upstream's resource_link and structuredContent intact;
//   - never the upstream's serverInfo (the client talks to mcpq).
// Each upstream must have been spoken to in its own version only (its GET /seen).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startStack } from './lib/stack.mjs';
import { startNode } from './lib/upstream.mjs';

const ERAS = ['2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'];
const MODERN = '2026-07-28';
const KEY = 'eras-key-3c9d1f';
const T = { timeout: 120_000 };
const UPSTREAM_INFO = 'io.modelcontextprotocol/serverInfo';

const upstreams = new Map(); // era -> {url, stop}
let stack;
let tmp;
let nextId = 1;
let turn = 0;

function eraConfig() {
  const objects = [];
  for (const era of ERAS) {
    const executor = { type: 'mcp', url: upstreams.get(era).url };
    const common = { tenant: 'eras', server: era, published: '1' };
    objects.push({
      ...common, name: `echo_${era}`,
      versions: [{
        version: '1', description: `echo on a ${era} upstream`,
        inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
        executor: { ...executor, tool: 'echo' }, timeout_ms: 30000, mode: 'sync',
      }],
    });
    objects.push({
      ...common, kind: 'resource', name: `info_${era}`,
      versions: [{ version: '1', uri: 'era://info', mimeType: 'text/plain', description: `a ${era} upstream's resource`, executor, timeout_ms: 30000 }],
    });
    objects.push({
      ...common, kind: 'prompt', name: `greet_${era}`,
      versions: [{
        version: '1', description: `a ${era} upstream's prompt`,
        arguments: [{ name: 'name', description: 'who to greet', required: true }],
        executor: { ...executor, prompt: 'greet' }, timeout_ms: 30000,
      }],
    });
  }
  return {
    tenants: [{ id: 'eras', api_keys: [{ id: 'eras-k1', key: KEY }], default_server: ERAS[0] }],
    servers: ERAS.map((era) => ({ tenant: 'eras', name: era, description: `the ${era} upstream` })),
    tools: objects,
  };
}

before(async () => {
  for (const era of ERAS) {
    let url;
    const up = await startNode(['tests/clients/era-upstream.mjs', era], {
      label: `era-upstream ${era}`,
      ready: (out) => (url = out.match(/^READY (\S+)$/m)?.[1]),
    });
    upstreams.set(era, { ...up, url });
  }
  tmp = mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'mcpq-eras-cfg-'));
  const config = path.join(tmp, 'eras.json');
  writeFileSync(config, JSON.stringify(eraConfig(), null, 1));
  stack = await startStack({ label: 'eras', config, ingresses: 2, workers: 2 });
}, { timeout: 240_000 });

after(async () => {
  await stack?.stop();
  for (const up of upstreams.values()) await up.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}, { timeout: 60_000 });

/** The JSON-RPC response to request id in a body that is JSON or an SSE stream. */
function responseOf(text, contentType, id) {
  if (!contentType?.includes('text/event-stream')) return JSON.parse(text);
  for (const frame of text.split(/\r?\n\r?\n/)) {
    const data = frame.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
    if (!data) continue;
    const msg = JSON.parse(data);
    if (msg.id === id && ('result' in msg || 'error' in msg)) return msg;
  }
  throw new Error(`no response to id ${id} in the stream:\n${text}`);
}

/** A client of one era on one server of the stack; each request goes to the next replica. */
function client(era, server) {
  let session;
  const modern = era === MODERN;
  async function send(method, params, { notification = false } = {}) {
    const url = `${stack.urls[turn++ % stack.urls.length]}/${server}`;
    const headers = {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${KEY}`,
    };
    let body;
    const id = notification ? undefined : nextId++;
    if (modern) {
      headers['MCP-Protocol-Version'] = era;
      headers['Mcp-Method'] = method;
      const name = method === 'resources/read' ? params.uri
        : method === 'tools/call' || method === 'prompts/get' ? params.name : undefined;
      if (name !== undefined) headers['Mcp-Name'] = name;
      const _meta = {
        'io.modelcontextprotocol/protocolVersion': era,
        'io.modelcontextprotocol/clientInfo': { name: 'mcpq-eras-test', version: '1' },
        'io.modelcontextprotocol/clientCapabilities': {},
      };
      body = { jsonrpc: '2.0', id, method, params: { ...params, _meta } };
    } else {
      if (method !== 'initialize') headers['MCP-Protocol-Version'] = era;
      if (session) headers['Mcp-Session-Id'] = session;
      body = { jsonrpc: '2.0', method, ...(params ? { params } : {}), ...(notification ? {} : { id }) };
    }
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
    const text = await res.text();
    if (notification) {
      assert.equal(res.status, 202, `${method} at ${url}: ${text}`);
      return undefined;
    }
    assert.equal(res.status, 200, `${era} ${method} at ${url}: HTTP ${res.status} ${text}`);
    const msg = responseOf(text, res.headers.get('content-type'), id);
    if (method === 'initialize') session = res.headers.get('mcp-session-id');
    assert.equal(msg.error, undefined, `${era} ${method} at ${url}: ${text}`);
    return msg.result;
  }
  return {
    async open() {
      if (modern) return;
      const init = await send('initialize', {
        protocolVersion: era, capabilities: {}, clientInfo: { name: 'mcpq-eras-test', version: '1' },
      });
      assert.equal(init.protocolVersion, era, `mcpq settles on the client's own version ${era}`);
      assert.ok(session, 'initialize gives a session');
      await send('notifications/initialized', undefined, { notification: true });
    },
    send,
  };
}

/** The checks every result must pass for a client of era (see the header). */
function assertEraShape(era, method, r) {
  const what = `${method} to a ${era} client: ${JSON.stringify(r)}`;
  if (era === MODERN) {
    assert.equal(r.resultType, 'complete', what);
    if (method === 'resources/read') {
      assert.ok(Number.isInteger(r.ttlMs) && r.ttlMs >= 0, `ttlMs: ${what}`);
      assert.ok(['public', 'private'].includes(r.cacheScope), `cacheScope: ${what}`);
    }
  } else {
    for (const k of ['resultType', 'ttlMs', 'cacheScope']) assert.equal(r[k], undefined, `${k} is a 2026-07-28 field: ${what}`);
  }
  const blocks = method === 'tools/call' ? r.content : method === 'prompts/get' ? r.messages.map((m) => m.content) : [];
  if (era === '2025-03-26') {
    assert.ok(blocks.every((b) => b.type !== 'resource_link'), `2025-03-26 has no resource_link: ${what}`);
  }
  const info = r._meta?.[UPSTREAM_INFO];
  assert.ok(!info || !String(info.name).startsWith('era-upstream'), `the upstream's serverInfo leaked: ${what}`);
}

for (const clientEra of ERAS) {
  for (const upEra of ERAS) {
    test(`a ${clientEra} client, a ${upEra} upstream: tool call, resource read, prompt get, completion`, T, async () => {
      const c = client(clientEra, upEra);
      await c.open();
      const text = `${clientEra} to ${upEra}`;

      const call = await c.send('tools/call', { name: `echo_${upEra}`, arguments: { text } });
      assert.equal(call.isError ?? false, false, JSON.stringify(call));
      assert.equal(call.content[0].type, 'text', JSON.stringify(call));
      assert.equal(call.content[0].text, `echo from a ${upEra} upstream: ${text}`);
      assertEraShape(clientEra, 'tools/call', call);
      if (upEra >= '2025-06-18') {
        if (clientEra === '2025-03-26') {
          assert.ok(call.content.some((b) => b.type === 'text' && b.text.startsWith('era://info')),
            `the resource_link arrives as text naming its uri: ${JSON.stringify(call)}`);
        } else {
          assert.ok(call.content.some((b) => b.type === 'resource_link' && b.uri === 'era://info'), JSON.stringify(call));
        }
        assert.deepEqual(call.structuredContent, { text, era: upEra });
      }

      const read = await c.send('resources/read', { uri: 'era://info' });
      assert.equal(read.contents.length, 1, JSON.stringify(read));
      assert.equal(read.contents[0].uri, 'era://info');
      assert.equal(read.contents[0].text, `upstream era ${upEra}`);
      assertEraShape(clientEra, 'resources/read', read);

      const prompt = await c.send('prompts/get', { name: `greet_${upEra}`, arguments: { name: 'alice' } });
      assert.equal(prompt.messages.length, 1, JSON.stringify(prompt));
      assert.equal(prompt.messages[0].role, 'user');
      assert.deepEqual(prompt.messages[0].content, { type: 'text', text: `Hello alice from a ${upEra} upstream` });
      assertEraShape(clientEra, 'prompts/get', prompt);

      const done = await c.send('completion/complete', {
        ref: { type: 'ref/prompt', name: `greet_${upEra}` }, argument: { name: 'name', value: 'al' },
      });
      assert.deepEqual(done.completion.values, ['alice', 'albert'], JSON.stringify(done));
      assertEraShape(clientEra, 'completion/complete', done);
    });
  }
}

test('each upstream was spoken to in its own version only', T, async () => {
  for (const [era, up] of upstreams) {
    const seen = await (await fetch(up.url.replace(/\/mcp$/, '/seen'))).json();
    assert.deepEqual(seen, [era], `the ${era} upstream saw MCP-Protocol-Version ${JSON.stringify(seen)}`);
  }
});
