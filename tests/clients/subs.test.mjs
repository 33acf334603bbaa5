// Resource subscriptions and list changes with the official TypeScript SDKs (docs/protocol.md,
// "List changes" and "Resource subscriptions") against a local stack started with
// scripts/mcpq-local. A static resource is added to the registry and later given a new
// published version, the way the admin API and a config change write it:
//   - SDK v1 (@modelcontextprotocol/sdk 1.x, 2025-11-25, a session): subscribeResource answers
//     {}, notifications/resources/updated {uri} arrives on the GET stream the SDK opened, and
//     after unsubscribeResource no more do; a new resource sends
//     notifications/resources/list_changed; an unknown uri is -32002;
//   - SDK v2 (@modelcontextprotocol/client 2.x pinned to 2026-07-28): listen() with
//     resourceSubscriptions and resourcesListChanged is acknowledged with the honoured filter
//     (an unknown uri left out), and the update arrives on that stream.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ResourceListChangedNotificationSchema, ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { API_KEY, startStack } from './lib/stack.mjs';
import { sleep, waitFor } from './lib/util.mjs';

const T = { timeout: 60_000 };
const URI = 'file:///subs/notes.txt';
const FIELD = 'tool:clients:subs_notes';

let stack;

/** The notes resource of the clients tenant's default server, text versions published last. */
function notes(...texts) {
  return {
    tenant: 'clients', server: 'default', name: 'subs_notes', kind: 'resource',
    published: String(texts.length),
    versions: texts.map((text, i) => ({ version: String(i + 1), uri: URI, mimeType: 'text/plain', text })),
  };
}

/** Polls until resources/read of URI through client answers text. */
async function readsAs(client, text) {
  return waitFor(async () => {
    try {
      const r = await client.readResource({ uri: URI });
      return r.contents?.[0]?.text === text;
    } catch { return false; }
  }, { timeoutMs: 20_000 });
}

before(async () => {
  stack = await startStack({ label: 'subs' });
  stack.registrySet(FIELD, notes('one'));
}, { timeout: 180_000 });

after(async () => {
  stack?.registrySet(FIELD, null);
  await stack?.stop();
}, { timeout: 60_000 });

test('SDK v1: resources/subscribe, notifications/resources/updated on the GET stream, unsubscribe', T, async () => {
  const transport = new TransportV1(new URL(stack.url), {
    requestInit: { headers: { Authorization: `Bearer ${API_KEY}` } },
  });
  const client = new ClientV1({ name: 'mcpq-subs-v1', version: '1.0.0' }, { capabilities: {} });
  const updated = [];
  let listChanged = 0;
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updated.push(n.params); });
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => { listChanged++; });
  await client.connect(transport);
  try {
    assert.equal(client.getServerCapabilities()?.resources?.subscribe, true);
    assert.ok(await readsAs(client, 'one'), `the resource is not served\n${stack.logs()}`);
    assert.deepEqual(await client.subscribeResource({ uri: URI }), {});
    await assert.rejects(client.subscribeResource({ uri: 'file:///subs/none' }),
      (err) => err.code === -32002, 'an unknown uri is -32002 Resource not found');

    stack.registrySet(FIELD, notes('one', 'two'));
    assert.ok(await waitFor(() => updated.length >= 1, { timeoutMs: 20_000 }),
      `no notifications/resources/updated on the GET stream\n${stack.logs()}`);
    assert.deepEqual(updated[0], { uri: URI });
    assert.ok(await readsAs(client, 'two'), 'the new content is read after the update');

    const seen = listChanged;
    stack.registrySet('tool:clients:subs_more', { ...notes('more'), name: 'subs_more',
      versions: [{ version: '1', uri: 'file:///subs/more.txt', text: 'more' }], published: '1' });
    try {
      assert.ok(await waitFor(() => listChanged > seen, { timeoutMs: 20_000 }),
        'a new resource sends notifications/resources/list_changed');
    } finally {
      stack.registrySet('tool:clients:subs_more', null);
    }

    assert.deepEqual(await client.unsubscribeResource({ uri: URI }), {});
    const before = updated.length;
    stack.registrySet(FIELD, notes('one', 'two', 'three'));
    assert.ok(await readsAs(client, 'three'));
    await sleep(1000); // an update, had one been sent, arrives within the second
    assert.equal(updated.length, before, 'no update after unsubscribe');
  } finally {
    await client.close().catch(() => {});
  }
});

test('SDK v2 (2026-07-28): listen() with resourceSubscriptions gets the update on its stream', T, async () => {
  const transport = new TransportV2(new URL(stack.url), {
    requestInit: { headers: { Authorization: `Bearer ${API_KEY}` } },
  });
  const client = new ClientV2({ name: 'mcpq-subs-v2', version: '2.0.0' }, {
    capabilities: {},
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  });
  const updated = [];
  client.setNotificationHandler('notifications/resources/updated', (n) => { updated.push(n.params); });
  await client.connect(transport);
  let sub;
  try {
    assert.ok(await readsAs(client, 'three'), `the resource is not served\n${stack.logs()}`);
    sub = await client.listen({
      resourceSubscriptions: [URI, 'file:///subs/none'], resourcesListChanged: true,
    });
    assert.deepEqual(sub.honoredFilter, { resourcesListChanged: true, resourceSubscriptions: [URI] });
    stack.registrySet(FIELD, notes('one', 'two', 'three', 'four'));
    assert.ok(await waitFor(() => updated.length >= 1, { timeoutMs: 20_000 }),
      `no notifications/resources/updated on the subscriptions/listen stream\n${stack.logs()}`);
    assert.equal(updated[0].uri, URI);
  } finally {
    await sub?.close().catch(() => {});
    await client.close().catch(() => {});
  }
});
