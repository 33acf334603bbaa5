// Real MCP servers nobody here wrote, behind mcpq, through the official SDK clients (issue 31,
// "Done when"): @modelcontextprotocol/server-everything over stdio (a process pool on the
// worker) and over Streamable HTTP (its streamableHttp mode, started here on a loopback
// port), and @modelcontextprotocol/server-filesystem over stdio on a temporary directory.
// Each is a federated server of the stack (docs/executors.md, "Federation": the ingress lists
// the upstream through an mcpq/catalog job on a worker, every kind is imported under a
// prefix). The SDK v1 client (@modelcontextprotocol/sdk, 2025-11-25, session) talks to
// ingress replica 0 and the SDK v2 client (@modelcontextprotocol/client, pinned to
// 2026-07-28) to replica 1; the upstreams run on the worker, a third process.
//
// For each client and each server-everything transport: tools/list and a call, resources/list
// and a read, a template read, prompts/list and a get, completion/complete, a resource
// subscription whose update arrives (server-everything sends them every 5 s once its
// toggle-subscriber-updates tool was called; legacy: resources/subscribe and the session's GET
// stream; 2026-07-28: subscriptions/listen with resourceSubscriptions),
// and progress that
// arrives while the long-running tool still runs. server-filesystem: its allowed directory,
// a file written and read back.
//
// One worker: an upstream session (or stdio process) lives on a worker, and the upstream
// sends its updates to the session that subscribed, so the subscription and the toggle call
// must reach the same one.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { listAll } from './lib/fixtures.mjs';
import { freePort, startStack } from './lib/stack.mjs';
import { startNode } from './lib/upstream.mjs';
import { waitFor } from './lib/util.mjs';

const KEY = 'upstreams-key-5e1a77';
const T = { timeout: 120_000 };
const DEPS = path.join(process.env.MCPQ_CLIENTS_DEPS ?? '', 'node_modules', '@modelcontextprotocol');
const EVERYTHING = path.join(DEPS, 'server-everything', 'dist', 'index.js');
const FILESYSTEM = path.join(DEPS, 'server-filesystem', 'dist', 'index.js');
const TEXT_TEMPLATE = 'demo://resource/dynamic/text/{resourceId}';

/** The federated servers: name -> prefix. */
const EVERYTHING_SERVERS = { everything: 'ev_', 'everything-http': 'evh_' };

let stack;
let tmp;
let fsRoot;
let httpUpstream;

before(async () => {
  tmp = mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'mcpq-upstreams-'));
  fsRoot = path.join(tmp, 'files');
  mkdirSync(fsRoot);
  fsRoot = realpathSync(fsRoot);
  writeFileSync(path.join(fsRoot, 'hello.txt'), 'hello from the filesystem upstream\n');

  const httpPort = await freePort();
  httpUpstream = await startNode([EVERYTHING, 'streamableHttp'], {
    label: 'server-everything (streamableHttp)',
    env: { PORT: String(httpPort) },
    ready: (out) => /listening on port/i.test(out),
  });

  const config = {
    tenants: [{ id: 'up', api_keys: [{ id: 'up-k1', key: KEY }], default_server: 'everything' }],
    servers: [
      { tenant: 'up', name: 'everything', description: 'server-everything over stdio',
        federate: { command: process.execPath, args: [EVERYTHING, 'stdio'], prefix: 'ev_', timeout_ms: 60000,
          limits: { processes: 1 } } },
      { tenant: 'up', name: 'everything-http', description: 'server-everything over Streamable HTTP',
        federate: { url: `http://127.0.0.1:${httpPort}/mcp`, prefix: 'evh_', timeout_ms: 60000 } },
      { tenant: 'up', name: 'files', description: 'server-filesystem over stdio',
        federate: { command: process.execPath, args: [FILESYSTEM, fsRoot], prefix: 'fs_', timeout_ms: 60000 } },
    ],
    tools: [],
  };
  const configPath = path.join(tmp, 'upstreams.json');
  writeFileSync(configPath, JSON.stringify(config, null, 1));
  stack = await startStack({ label: 'upstreams', config: configPath, ingresses: 2, workers: 1 });
}, { timeout: 240_000 });

after(async () => {
  await stack?.stop();
  await httpUpstream?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}, { timeout: 60_000 });

/** An SDK client of kind 'v1' or 'v2' on a server of the stack, with what it was sent. */
async function connect(kind, server) {
  const headers = { Authorization: `Bearer ${KEY}` };
  const updates = [];
  let client;
  if (kind === 'v1') {
    client = new ClientV1({ name: 'mcpq-upstreams-v1', version: '1.0.0' }, { capabilities: {} });
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updates.push(n.params.uri); });
    await client.connect(new TransportV1(new URL(`${stack.urls[0]}/${server}`), { requestInit: { headers } }));
  } else {
    client = new ClientV2({ name: 'mcpq-upstreams-v2', version: '2.0.0' }, {
      capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } },
    });
    client.setNotificationHandler('notifications/resources/updated', (n) => { updates.push(n.params.uri); });
    await client.connect(new TransportV2(new URL(`${stack.urls[1]}/${server}`), { requestInit: { headers } }));
  }
  return { client, updates };
}

/** Waits (bounded) until federation has imported the server's prefixed tool. */
async function imported(kind, server, tool) {
  let names = [];
  const ok = await waitFor(async () => {
    const { client } = await connect(kind, server);
    try {
      names = (await listAll(client, 'listTools', 'tools')).map((t) => t.name);
    } finally {
      await client.close();
    }
    return names.includes(tool);
  }, { timeoutMs: 90_000, intervalMs: 500 });
  assert.ok(ok, `federation never imported ${tool} on ${server}; tools: ${names.join(', ')}\n${stack.logs()}`);
}

for (const kind of ['v1', 'v2']) {
  for (const [server, prefix] of Object.entries(EVERYTHING_SERVERS)) {
    describe(`SDK ${kind} client, server-everything over ${server === 'everything' ? 'stdio' : 'Streamable HTTP'}`, () => {
      let c;
      before(async () => {
        await imported(kind, server, `${prefix}echo`);
        c = await connect(kind, server);
      }, { timeout: 120_000 });
      after(async () => { await c?.client.close(); });

      test('tools/list and a call', T, async () => {
        const tools = await listAll(c.client, 'listTools', 'tools');
        const names = tools.map((t) => t.name);
        for (const t of ['echo', 'get-sum', 'trigger-long-running-operation']) assert.ok(names.includes(`${prefix}${t}`), names.join(', '));
        const r = await c.client.callTool({ name: `${prefix}echo`, arguments: { message: `hi from ${kind}` } });
        assert.equal(r.isError ?? false, false, JSON.stringify(r));
        assert.equal(r.content[0].text, `Echo: hi from ${kind}`);
        const sum = await c.client.callTool({ name: `${prefix}get-sum`, arguments: { a: 2, b: 40 } });
        assert.match(sum.content[0].text, /\b42\b/, JSON.stringify(sum));
      });

      test('resources/list and a read', T, async () => {
        const resources = await listAll(c.client, 'listResources', 'resources');
        assert.ok(resources.length > 0, 'server-everything lists its static documents');
        const doc = resources.find((r) => r.uri.startsWith('demo://resource/static/document/'));
        assert.ok(doc, JSON.stringify(resources.map((r) => r.uri)));
        const read = await c.client.readResource({ uri: doc.uri });
        assert.equal(read.contents[0].uri, doc.uri);
        assert.ok((read.contents[0].text ?? read.contents[0].blob ?? '').length > 0, JSON.stringify(read).slice(0, 500));
      });

      test('a resource template read', T, async () => {
        const templates = await listAll(c.client, 'listResourceTemplates', 'resourceTemplates');
        assert.ok(templates.some((t) => t.uriTemplate === TEXT_TEMPLATE), JSON.stringify(templates));
        const uri = 'demo://resource/dynamic/text/7';
        const read = await c.client.readResource({ uri });
        assert.equal(read.contents[0].uri, uri);
        assert.match(read.contents[0].text, /^Resource 7: /, JSON.stringify(read));
      });

      test('prompts/list and a get', T, async () => {
        const prompts = await listAll(c.client, 'listPrompts', 'prompts');
        const names = prompts.map((p) => p.name);
        for (const p of ['simple-prompt', 'args-prompt', 'completable-prompt']) assert.ok(names.includes(`${prefix}${p}`), names.join(', '));
        const got = await c.client.getPrompt({ name: `${prefix}args-prompt`, arguments: { city: 'Lisbon' } });
        assert.ok(got.messages.length >= 1, JSON.stringify(got));
        assert.match(JSON.stringify(got.messages), /Lisbon/);
      });

      test('completion/complete', T, async () => {
        const done = await c.client.complete({
          ref: { type: 'ref/prompt', name: `${prefix}completable-prompt` },
          argument: { name: 'department', value: 'E' },
        });
        assert.deepEqual(done.completion.values, ['Engineering'], JSON.stringify(done));
        const named = await c.client.complete({
          ref: { type: 'ref/prompt', name: `${prefix}completable-prompt` },
          argument: { name: 'name', value: '' },
          context: { arguments: { department: 'Sales' } },
        });
        assert.deepEqual(named.completion.values, ['David', 'Eve', 'Frank'], JSON.stringify(named));
      });

      // v1: resources/subscribe; v2: a subscriptions/listen stream naming the uri, which sends the
      // worker the same resources/subscribe job (docs/protocol.md, "Resource subscriptions").
      // Each client its own uri: a legacy unsubscribe leaves the worker subscribed upstream
      // (other sessions may still watch it), so a uri the v1 client watched would reach the v2
      // client's stream without the stream's own job.
      test("a resource subscription's update arrives", T, async () => {
        const uri = `demo://resource/dynamic/text/${kind === 'v1' ? 3 : 4}`;
        let sub;
        if (kind === 'v1') await c.client.subscribeResource({ uri });
        else sub = await c.client.listen({ resourceSubscriptions: [uri] });
        const toggle = `${prefix}toggle-subscriber-updates`;
        const on = await c.client.callTool({ name: toggle, arguments: {} });
        assert.match(on.content[0].text, /^Started/, JSON.stringify(on));
        try {
          assert.ok(await waitFor(() => c.updates.includes(uri), { timeoutMs: 30_000, intervalMs: 100 }),
            `no notifications/resources/updated for ${uri} (got ${JSON.stringify(c.updates)})\n${stack.logs()}`);
        } finally {
          await c.client.callTool({ name: toggle, arguments: {} });
          if (kind === 'v1') await c.client.unsubscribeResource({ uri });
          else await sub.close();
        }
      });

      test('progress arrives while the long-running tool runs', T, async () => {
        const seen = [];
        const started = Date.now();
        const params = { name: `${prefix}trigger-long-running-operation`, arguments: { duration: 5, steps: 5 } };
        const options = { onprogress: (p) => seen.push({ at: Date.now(), progress: p.progress, total: p.total }), timeout: 60_000 };
        // v1: callTool(params, resultSchema, options); v2: callTool(params, options)
        const r = kind === 'v1' ? await c.client.callTool(params, undefined, options) : await c.client.callTool(params, options);
        const ended = Date.now();
        assert.equal(r.isError ?? false, false, JSON.stringify(r));
        assert.ok(seen.length >= 3, `progress notifications: ${JSON.stringify(seen)}`);
        assert.deepEqual(seen.map((p) => p.progress), [...seen.map((p) => p.progress)].sort((a, b) => a - b));
        // The operation takes 5 s in 5 steps: forwarded as they come, the first arrives about
        // 4 s before the result; held back to the end, with it.
        assert.ok(ended - seen[0].at >= 2000,
          `the first progress came ${seen[0].at - started} ms after the call and ${ended - seen[0].at} ms before its result`);
      });
    });
  }

  describe(`SDK ${kind} client, server-filesystem over stdio`, () => {
    let c;
    before(async () => {
      await imported(kind, 'files', 'fs_list_allowed_directories');
      c = await connect(kind, 'files');
    }, { timeout: 120_000 });
    after(async () => { await c?.client.close(); });

    test('the allowed directory, a file written and read back', T, async () => {
      const dirs = await c.client.callTool({ name: 'fs_list_allowed_directories', arguments: {} });
      assert.ok(dirs.content[0].text.includes(fsRoot), JSON.stringify(dirs));
      const hello = await c.client.callTool({ name: 'fs_read_text_file', arguments: { path: path.join(fsRoot, 'hello.txt') } });
      assert.equal(hello.content[0].text, 'hello from the filesystem upstream\n');
      const file = path.join(fsRoot, `from-${kind}.txt`);
      const w = await c.client.callTool({ name: 'fs_write_file', arguments: { path: file, content: `written by ${kind}` } });
      assert.equal(w.isError ?? false, false, JSON.stringify(w));
      const back = await c.client.callTool({ name: 'fs_read_text_file', arguments: { path: file } });
      assert.equal(back.content[0].text, `written by ${kind}`);
      const outside = await c.client.callTool({ name: 'fs_read_text_file', arguments: { path: '/etc/hostname' } });
      assert.equal(outside.isError, true, `a path outside the allowed directory is refused: ${JSON.stringify(outside)}`);
    });
  });
}
