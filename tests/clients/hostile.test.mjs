// Hostile-input catalogue (docs/protocol.md, "Errors"; docs/signatures.md): malformed and malicious requests sent as raw
// bytes over TCP to a local stack, each with the exact HTTP status and JSON-RPC error code it
// must get, and then proof that the ingress still serves a normal call. Raw sockets, because
// fetch() refuses to send most of these (bare CR in a header, invalid UTF-8 bodies, ...).
import assert from 'node:assert/strict';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { API_KEY, CONFIG, startStack } from './lib/stack.mjs';

const OTHER_KEY = CONFIG.tenants[1].api_keys[0].key;
const METERED_KEY = CONFIG.tenants[0].api_keys[1].key; // rate_limit: 0.2/s, burst 2
const APP = CONFIG.tenants[0].apps[0];
const T = { timeout: 60_000 };

let stack;

before(async () => {
  stack = await startStack({ label: 'hostile', workers: 1 });
}, { timeout: 180_000 });

after(async () => { await stack?.stop(); }, { timeout: 60_000 });

/** Sends raw request bytes and reads the whole answer (Connection: close). */
function raw(bytes) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    const sock = net.connect({ host: '127.0.0.1', port: stack.port }, () => sock.end(bytes));
    sock.setTimeout(20_000, () => { sock.destroy(); reject(new Error('no answer within 20 s')); });
    sock.on('data', (d) => chunks.push(d));
    // A server that answers before reading the whole request (413, 431) closes the socket
    // while we still write: a reset after an answer is that answer, not a failure.
    sock.on('error', (err) => { if (!chunks.length) reject(err); });
    sock.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      const sep = text.indexOf('\r\n\r\n');
      const head = sep < 0 ? text : text.slice(0, sep);
      const body = sep < 0 ? '' : text.slice(sep + 4);
      let json;
      try { json = JSON.parse(body); } catch { /* not JSON */ }
      resolve({ status: m ? Number(m[1]) : 0, head, body, json });
    });
  });
}

/** A POST /mcp with the given body (string or Buffer) and headers (name → value). */
function request({ body = '', headers = {}, path = '/mcp', method = 'POST', auth = true } = {}) {
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  const h = {
    Host: `127.0.0.1:${stack.port}`,
    'Content-Type': 'application/json',
    Accept: 'application/json',
    Connection: 'close',
    ...(auth ? { Authorization: `Bearer ${API_KEY}` } : {}),
    ...headers,
    'Content-Length': String(buf.length),
  };
  const lines = Object.entries(h).map(([k, v]) => `${k}: ${v}`);
  return Buffer.concat([Buffer.from(`${method} ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`, 'latin1'), buf]);
}

/** The head of a request (through the blank line), without its body. */
const headOnly = (bytes) => bytes.subarray(0, bytes.indexOf('\r\n\r\n') + 4);

/** A POST /mcp whose body is sent with Transfer-Encoding: chunked (64 KiB chunks). */
function chunked(body) {
  const buf = Buffer.from(body, 'utf8');
  const parts = [Buffer.from(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${stack.port}\r\nContent-Type: application/json\r\n`
    + `Accept: application/json\r\nConnection: close\r\nAuthorization: Bearer ${API_KEY}\r\n`
    + 'Transfer-Encoding: chunked\r\n\r\n', 'latin1')];
  for (let i = 0; i < buf.length; i += 65536) {
    const c = buf.subarray(i, i + 65536);
    parts.push(Buffer.from(`${c.length.toString(16)}\r\n`, 'latin1'), c, Buffer.from('\r\n', 'latin1'));
  }
  parts.push(Buffer.from('0\r\n\r\n', 'latin1'));
  return Buffer.concat(parts);
}

const rpc = (obj) => JSON.stringify(obj);
const call = (name, args, extra = {}) => rpc({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args }, ...extra });

function signed({ body, path = '/mcp', ts = Math.floor(Date.now() / 1000), nonce = randomBytes(12).toString('hex'), secret = APP.secret } = {}) {
  const canonical = `POST\n${path}\n${ts}\n${nonce}\n${createHash('sha256').update(body).digest('hex')}`;
  return {
    'X-App-Id': APP.app_id, 'X-Timestamp': String(ts), 'X-Nonce': nonce,
    'X-Signature': createHmac('sha256', secret).update(canonical).digest('hex'),
  };
}

const PING = rpc({ jsonrpc: '2.0', id: 1, method: 'ping' });

/** Signing version 2 (docs/authentication.md "Authentication") over the named headers (lowercase, sorted). */
function signedV2({ body, headers, path = '/mcp' }) {
  const ts = Math.floor(Date.now() / 1000);
  const nonce = randomBytes(12).toString('hex');
  const names = Object.keys(headers).map((n) => n.toLowerCase()).sort();
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const canonical = [`POST\n${path}\n${ts}\n${nonce}\n${createHash('sha256').update(body).digest('hex')}`,
    names.join(';'), ...names.map((n) => `${n}:${lower[n]}`)].join('\n');
  return {
    'X-App-Id': APP.app_id, 'X-Timestamp': String(ts), 'X-Nonce': nonce, 'X-Signature-Version': '2',
    'X-Signed-Headers': names.join(';'),
    'X-Signature': createHmac('sha256', APP.secret).update(canonical).digest('hex'),
  };
}
// A 2026-07-28 tools/call of echo whose Mcp-Name header is `name` (raw or =?base64?...?=).
const MODERN_CALL = rpc({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'a' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } });
const modernCall = (name) => request({ body: MODERN_CALL, headers: { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': name } });
const jsonWith = (value) => `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"${value}"}}`;
const deep = (n) => '['.repeat(n) + ']'.repeat(n);
const replayBody = rpc({ jsonrpc: '2.0', id: 7, method: 'tools/list' });
const replayHeaders = signed({ body: replayBody });

// [name, request bytes, HTTP status, JSON-RPC error code (null: a result, undefined: no JSON check)],
// built once the stack's port is known.
const cases = () => [
  ['truncated JSON', request({ body: '{"jsonrpc":"2.0","id":1,"method":"pi' }), 400, -32700],
  ['invalid JSON (bare words)', request({ body: '{jsonrpc: 2.0, id: 1}' }), 400, -32700],
  ['empty body', request({ body: '' }), 400, -32700],
  ['trailing bytes after the value', request({ body: `${PING} x` }), 400, -32700],
  ['two JSON values', request({ body: `${PING}${PING}` }), 400, -32700],
  ['10,000-deep nesting in params', request({ body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":${deep(10000)}}}` }), 400, -32700],
  ['10,000-deep nesting at the top', request({ body: deep(10000) }), 400, -32700],
  ['invalid UTF-8 in a string', request({ body: Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}}')]) }), 400, -32700],
  ['overlong UTF-8 encoding', request({ body: Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}}')]) }), 400, -32700],
  ['UTF-16 surrogate encoded as UTF-8', request({ body: Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}}')]) }), 400, -32700],
  ['NUL byte in the body', request({ body: Buffer.from('{"jsonrpc":"2.0","id":1,"method":"pi\u0000ng"}', 'latin1') }), 400, -32700],
  ['raw control character in a string', request({ body: '{"jsonrpc":"2.0","id":1,"method":"ping\t"}' }), 400, -32700],
  ['duplicate keys', request({ body: '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}' }), 400, -32700],
  ['duplicate keys inside arguments', request({ body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a","text":"b"}}}' }), 400, -32700],
  ['oversized array (150,000 elements)', request({ body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[${new Array(150000).fill(0).join(',')}]}}` }), 400, -32700],
  // Announced by Content-Length: refused from the headers alone, so only the head is sent (a
  // server that answers early and closes resets a client still writing, losing the answer).
  ['body over 1 MiB (announced)', headOnly(request({ body: call('echo', { text: 'x'.repeat(1100000) }) })), 413, -32600],
  ['body over 1 MiB (chunked, no length)', chunked(call('echo', { text: 'x'.repeat(1100000) })), 413, -32600],
  ['"jsonrpc": "1.0"', request({ body: '{"jsonrpc":"1.0","id":1,"method":"ping"}' }), 400, -32600],
  ['"jsonrpc" as a number', request({ body: '{"jsonrpc":2.0,"id":1,"method":"ping"}' }), 400, -32600],
  ['no "jsonrpc"', request({ body: '{"id":1,"method":"ping"}' }), 400, -32600],
  ['"id" an object', request({ body: '{"jsonrpc":"2.0","id":{},"method":"ping"}' }), 400, -32600],
  ['"id" an array', request({ body: '{"jsonrpc":"2.0","id":[1],"method":"ping"}' }), 400, -32600],
  ['"id" a boolean', request({ body: '{"jsonrpc":"2.0","id":true,"method":"ping"}' }), 400, -32600],
  ['"id" a huge number (1e400)', request({ body: '{"jsonrpc":"2.0","id":1e400,"method":"ping"}' }), 400, -32600],
  ['"id" a 300-character string', request({ body: rpc({ jsonrpc: '2.0', id: 'i'.repeat(300), method: 'ping' }) }), 400, -32600],
  ['"method" a number', request({ body: '{"jsonrpc":"2.0","id":1,"method":42}' }), 400, -32600],
  ['"method" empty', request({ body: '{"jsonrpc":"2.0","id":1,"method":""}' }), 400, -32600],
  ['no "method"', request({ body: '{"jsonrpc":"2.0","id":1}' }), 400, -32600],
  ['"params" a string', request({ body: '{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}' }), 400, -32600],
  ['"params" a number', request({ body: '{"jsonrpc":"2.0","id":1,"method":"ping","params":5}' }), 400, -32600],
  ['a bare number', request({ body: '42' }), 400, -32600],
  ['a bare string', request({ body: '"ping"' }), 400, -32600],
  ['null', request({ body: 'null' }), 400, -32600],
  ['a batch under 2025-06-18', request({ body: `[${PING}]`, headers: { 'MCP-Protocol-Version': '2025-06-18' } }), 400, -32600],
  ['tools/call without a name', request({ body: rpc({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} }) }), 200, -32602],
  ['tools/call of an unknown tool', request({ body: call('no_such_tool', {}) }), 200, -32602],
  ['tools/call with arguments a string', request({ body: rpc({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: 'x' } }) }), 200, -32602],
  ['a 300-character progressToken', request({ body: call('echo', { text: 'a' }, { params: { name: 'echo', arguments: { text: 'a' }, _meta: { progressToken: 'p'.repeat(300) } } }) }), 200, -32602],
  ['a progressToken of 200 control characters (1,200 bytes as JSON)', request({ body: call('echo', { text: 'a' }, { params: { name: 'echo', arguments: { text: 'a' }, _meta: { progressToken: '\u0001'.repeat(200) } } }) }), 200, -32602],
  ['a progressToken that is an object', request({ body: call('echo', { text: 'a' }, { params: { name: 'echo', arguments: { text: 'a' }, _meta: { progressToken: { a: 1 } } } }) }), 200, -32602],
  ['a progressToken of 1e400', request({ body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"},"_meta":{"progressToken":1e400}}}' }), 200, -32602],
  ['unknown method', request({ body: rpc({ jsonrpc: '2.0', id: 1, method: 'sampling/createMessage' }) }), 200, -32601],
  ['resources/read of an unknown uri', request({ body: rpc({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'file:///no/such' } }) }), 200, -32002],
  ['unsupported protocol version', request({ body: PING, headers: { 'MCP-Protocol-Version': '1999-01-01' } }), 400, -32022],
  ['Mcp-Name header does not match the body', request({ body: call('echo', { text: 'a' }), headers: { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'other_tool' } }), 400, -32020],
  ['Mcp-Method header does not match the body', request({ body: call('echo', { text: 'a' }), headers: { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/list', 'Mcp-Name': 'echo' } }), 400, -32020],
  ['a bare CR inside a header value', request({ body: PING, headers: { 'X-Note': 'a\rInjected: b' } }), 400, -32600],
  ['non-ASCII bytes in a header value are only data', request({ body: PING, headers: { 'X-Note': Buffer.from('h\u00e9llo \u4f60\u597d', 'utf8').toString('latin1') } }), 200, null],
  ['non-ASCII bytes in the API key', request({ auth: false, body: PING, headers: { Authorization: `Bearer ${Buffer.from('k\u00e9y', 'utf8').toString('latin1')}` } }), 401, -32000],
  ['a 10 KiB header', request({ body: PING, headers: { 'X-Big': 'a'.repeat(10240) } }), 431, undefined],
  ['300 headers', request({ body: PING, headers: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`X-H${i}`, 'v'])) }), 431, undefined],
  ['Content-Type text/plain', request({ body: PING, headers: { 'Content-Type': 'text/plain' } }), 415, -32600],
  ['Accept text/html only', request({ body: PING, headers: { Accept: 'text/html' } }), 406, -32600],
  ['an Origin outside the allow-list', request({ body: PING, headers: { Origin: 'http://evil.example.com' } }), 403, -32600],
  ['no credentials, malformed body: 401 before any parsing', request({ auth: false, body: '{"jsonrpc":' }), 401, -32000],
  ['Basic instead of Bearer', request({ auth: false, body: PING, headers: { Authorization: 'Basic dXNlcjpwYXNz' } }), 401, -32000],
  ['a key of another tenant calling this tenant\'s tool', request({ auth: false, body: call('echo', { text: 'x' }), headers: { Authorization: `Bearer ${OTHER_KEY}` } }), 200, -32602],
  ['a key of another tenant on this tenant\'s server path', request({ auth: false, path: '/mcp/no-such-server', body: PING, headers: { Authorization: `Bearer ${OTHER_KEY}` } }), 404, -32602],
  ['a signature dated 600 s in the future', request({ auth: false, body: PING, headers: signed({ body: PING, ts: Math.floor(Date.now() / 1000) + 600 }) }), 401, -32000],
  ['a signature made with the wrong secret', request({ auth: false, body: PING, headers: signed({ body: PING, secret: 'not-the-secret' }) }), 401, -32000],
  ['a signature over another path', request({ auth: false, path: '/mcp?x=1', body: PING, headers: signed({ body: PING }) }), 401, -32000],
  ['a nonce with a forbidden character', request({ auth: false, body: PING, headers: signed({ body: PING, nonce: 'bad nonce!' }) }), 401, -32000],
  ['a signed request, first time', request({ auth: false, body: replayBody, headers: replayHeaders }), 200, null],
  ['the same signed request replayed', request({ auth: false, body: replayBody, headers: replayHeaders }), 401, -32000],
  // Issue 17 finding 1: the =?base64?...?= form of mirrored headers, decoded strictly.
  ['Mcp-Name of padding only (=?base64?====?=)', modernCall('=?base64?====?='), 400, -32020],
  ['Mcp-Name of eight padding characters', modernCall('=?base64?========?='), 400, -32020],
  ['Mcp-Name with three padding characters', modernCall('=?base64?ZWNobw===?='), 400, -32020],
  ['Mcp-Name with a whole quantum of padding', modernCall('=?base64?ZWNobw======?='), 400, -32020],
  ['Mcp-Name with padding inside', modernCall('=?base64?ZW==Y2hv?='), 400, -32020],
  ['Mcp-Name without its padding', modernCall('=?base64?ZWNobw?='), 400, -32020],
  ['Mcp-Name decoding to a NUL byte', modernCall('=?base64?AA==?='), 400, -32020],
  ['Mcp-Name in base64 of the right name', modernCall('=?base64?ZWNobw==?='), 200, null],
  // Finding 2: parking methods in a batch, and its size.
  ['two tasks/result of an unknown task in a batch', request({ body: `[${rpc({ jsonrpc: '2.0', id: 1, method: 'tasks/result', params: { taskId: 'nope' } })},${rpc({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId: 'nope' } })}]` }), 200, undefined],
  ['a batch of 101 pings', request({ body: `[${new Array(101).fill(PING).join(',')}]` }), 400, -32600],
  // Finding 9: a NUL or a character JSON cannot carry, wherever it hides.
  ['\\u0000 inside the method', request({ body: '{"jsonrpc":"2.0","id":1,"method":"ping\\u0000x"}' }), 400, -32700],
  ['\\u0000 inside a tool name', request({ body: call('echo\u0000x', { text: 'a' }) }), 400, -32700],
  ['\\u0000 inside an argument', request({ body: call('echo', { text: 'a\u0000b' }) }), 400, -32700],
  ['an invalid \\u escape', request({ body: jsonWith('\\u12G4') }), 400, -32700],
  ['a lone high surrogate escape', request({ body: jsonWith('\\uD800') }), 400, -32700],
  ['a lone low surrogate escape', request({ body: jsonWith('\\uDC00x') }), 400, -32700],
  ['an escape JSON does not have', request({ body: jsonWith('\\x41') }), 400, -32700],
  // libmicrohttpd 0.9.75 ends a header value at a raw NUL before mcpq sees it
  // (docs/security.md): what hides behind the NUL is never read, so it cannot authenticate.
  ['a raw NUL in the API key header, the key behind it', request({ auth: false, body: PING, headers: { Authorization: `Bearer x\u0000${API_KEY}` } }), 401, -32000],
  ['an encoded NUL in the path', request({ path: '/mcp%00/other', body: PING }), 400, -32600],
  // Finding 3: bodies on routes before any credential is known (64 KiB), refused from the
  // announced length alone.
  ['200 KiB to /mcp without credentials', headOnly(request({ auth: false, body: call('echo', { text: 'x'.repeat(200000) }) })), 413, -32600],
  ['200 KiB to /admin/v1/config without the admin token', headOnly(request({ auth: false, method: 'PUT', path: '/admin/v1/config', body: 'x'.repeat(200000) })), 413, undefined],
  ['200 KiB to the presign route without credentials', headOnly(request({ auth: false, path: '/v1/files/presign-upload', body: 'x'.repeat(200000) })), 413, undefined],
  ['200 KiB to a channel without credentials', headOnly(request({ auth: false, path: '/v1/channels/c_1/messages', body: 'x'.repeat(200000) })), 413, undefined],
  // Finding 8: signing version 2 covers Host and the meaning-changing headers.
  ['a v2 signature over Host and Mcp-Method', request({ auth: false, body: PING, headers: { 'Mcp-Method': 'ping', ...signedV2({ body: PING, headers: { Host: `127.0.0.1:${stack.port}`, 'Mcp-Method': 'ping' } }) } }), 200, null],
  ['a v2 signature leaving out a Mcp-Name that is sent', request({ auth: false, body: PING, headers: { 'Mcp-Name': 'echo', ...signedV2({ body: PING, headers: { Host: `127.0.0.1:${stack.port}` } }) } }), 401, -32000],
  ['a v2 signature made for another Host', request({ auth: false, body: PING, headers: signedV2({ body: PING, headers: { Host: 'other.example' } }) }), 401, -32000],
  ['a rate-limited key, 1st request of its burst of 2', request({ auth: false, body: PING, headers: { Authorization: `Bearer ${METERED_KEY}` } }), 200, null],
  ['a rate-limited key, 2nd request of its burst of 2', request({ auth: false, body: PING, headers: { 'X-Api-Key': METERED_KEY } }), 200, null],
  ['a rate-limited key over its rate (0.2/s)', request({ auth: false, body: PING, headers: { Authorization: `Bearer ${METERED_KEY}` } }), 429, -32029],
  ['a rate-limited key over its rate, a tools/call', request({ auth: false, body: call('echo', { text: 'x' }), headers: { Authorization: `Bearer ${METERED_KEY}` } }), 429, -32029],
];

test('hostile-input catalogue: at least 40 requests, each with its exact status and error', T, async () => {
  const CASES = cases();
  assert.ok(CASES.length >= 40, 'the catalogue holds at least 40 requests');
  const failures = [];
  for (const [name, bytes, status, code] of CASES) {
    const r = await raw(bytes);
    const got = r.json?.error?.code ?? (r.json && 'result' in r.json ? null : undefined);
    // Every case is tried and every miss reported together, so one run shows them all.
    if (r.status !== status || (code !== undefined && got !== code)) {
      failures.push(`${name}: want HTTP ${status} ${code}, got HTTP ${r.status} ${got} ${r.body.slice(0, 200)}`);
      continue;
    }
    if (code !== undefined && code !== null && typeof r.json?.error?.message !== 'string') {
      failures.push(`${name}: no error message in ${r.body.slice(0, 200)}`);
    }
    if (status === 401 && !/\r\nWWW-Authenticate: /i.test(r.head)) {
      failures.push(`${name}: 401 without WWW-Authenticate`);
    }
    if (status === 429) {
      const ra = /\r\nRetry-After: (\d+)\r\n/i.exec(`${r.head}\r\n`);
      if (!(ra && Number(ra[1]) >= 1 && Number(ra[1]) <= 5)) failures.push(`${name}: 429 without Retry-After in seconds (${r.head})`);
      if (!(r.json?.error?.data?.retryAfterMs > 0)) failures.push(`${name}: 429 without data.retryAfterMs`);
    }
  }
  assert.deepEqual(failures, []);
});

// Issue 30 item 4 (docs/security.md "Ownership model"): within one tenant, a task and an
// idempotency key belong to the principal that created them. The API key makes them; the
// tenant's HMAC app is another principal and must get exactly what an unknown task gets, and
// never the first call's answer.
test('ownership catalogue: another principal of the tenant reads, waits on, cancels and replays nothing of the first', T, async () => {
  const V1125 = { 'MCP-Protocol-Version': '2025-11-25' };
  const asApp = (body) => request({ auth: false, body, headers: { ...V1125, ...signed({ body }) } });
  const asKey = (body) => request({ body, headers: V1125 });
  const created = await raw(asKey(call('task_job', { seconds: 5 })));
  const taskId = created.json?.result?.structuredContent?.TaskId;
  assert.match(String(taskId), /^[0-9a-f-]{36}$/, created.body);
  const tasksCall = (method, id) => rpc({ jsonrpc: '2.0', id: 9, method, params: { taskId: id } });
  const failures = [];
  // What an unknown task gets, method by method, is what another principal's task must get.
  for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
    const unknown = await raw(asApp(tasksCall(method, '00000000-0000-4000-8000-000000000000')));
    const theirs = await raw(asApp(tasksCall(method, taskId)));
    if (theirs.status !== 200 || theirs.json?.error?.code !== -32602 || theirs.body !== unknown.body) {
      failures.push(`${method} of another principal's task: want the unknown task's ${unknown.body}, got HTTP ${theirs.status} ${theirs.body.slice(0, 200)}`);
    }
  }
  const listed = await raw(asApp(rpc({ jsonrpc: '2.0', id: 10, method: 'tasks/list' })));
  if (listed.status !== 200 || !Array.isArray(listed.json?.result?.tasks) || listed.body.includes(taskId)) {
    failures.push(`tasks/list of another principal shows the task: ${listed.body.slice(0, 200)}`);
  }
  // The creator still sees it, and it was not cancelled by the other principal.
  const mine = await raw(asKey(tasksCall('tasks/get', taskId)));
  if (mine.json?.result?.taskId !== taskId || mine.json?.result?.status === 'cancelled') {
    failures.push(`the creator's tasks/get: ${mine.body.slice(0, 200)}`);
  }
  // An idempotency key: the first principal's answer is never replayed to another, whatever
  // the arguments.
  const first = await raw(request({ body: call('echo', { text: 'first caller only', idempotency_key: 'hostile-owner-1' }) }));
  assert.equal(first.json?.result?.structuredContent?.text, 'first caller only', first.body);
  for (const text of ['first caller only', 'other arguments']) {
    const body = call('echo', { text, idempotency_key: 'hostile-owner-1' });
    const r = await raw(request({ auth: false, body, headers: signed({ body }) }));
    if (r.status !== 200 || r.json?.error?.code !== -32602 || r.body.includes('first caller only')) {
      failures.push(`a replay by another principal (${text}): want -32602 without the first answer, got HTTP ${r.status} ${r.body.slice(0, 200)}`);
    }
  }
  assert.deepEqual(failures, []);
});

test('after the catalogue the ingress still serves a normal call and /metrics, and nothing leaked to the logs', T, async () => {
  const r = await raw(request({ body: call('echo', { text: 'still here' }) }));
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(r.json?.result?.structuredContent, { text: 'still here' }, r.body);
  const m = await raw(request({ method: 'GET', path: '/metrics', body: '' }));
  assert.equal(m.status, 200);
  assert.match(m.body, /^mcpq_inflight_calls 0$/m);
  // Served at all is the point; how fast is the benchmarks' business (raw() gives each 20 s).
  const logs = readdirSync(stack.stateDir).filter((n) => n.endsWith('.log'))
    .map((n) => readFileSync(path.join(stack.stateDir, n), 'utf8')).join('\n');
  assert.ok(logs.length > 0, 'the stack wrote logs');
  for (const secret of [API_KEY, OTHER_KEY, METERED_KEY, APP.secret, replayHeaders['X-Signature']]) {
    assert.ok(!logs.includes(secret), 'no key, secret or signature in the logs');
  }
});
