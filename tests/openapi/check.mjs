// Validates docs/openapi.json against a running stack (tests/e2e/test_openapi.sh starts it):
//   1. the document is valid OpenAPI 3.1 (@apidevtools/swagger-parser);
//   2. every documented operation is driven, with its success and its main errors, and every
//      answer must be documented: its status among the operation's responses, its
//      Content-Type one of that response's media types (no body where none is described), its
//      JSON body valid against the response's schema (ajv, JSON Schema 2020-12);
//   3. every operation was answered with a 2xx at least once, and every one but the probes
//      with an error too (coverage);
//   4. the ingress answers nothing the document lacks: every method a documented path does not
//      list gets 405 with an Allow header naming exactly the documented ones (or 404), and
//      paths next to documented ones get 404.
// GET /openapi.json must serve the file byte for byte.
//
//   node check.mjs DOC BASE_URL HOOK_PORT     (env: ADMIN_TOKEN, API_KEY, APP_ID, APP_SECRET,
//                                              OTHER_KEY: another tenant's API key, ISSUER:
//                                              that tenant's OAuth issuer, whose keys the
//                                              tool host serves at /jwks)
import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { createHash, createHmac, generateKeyPairSync, randomBytes, sign as cryptoSign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';

const [DOC_PATH, BASE, HOOK_PORT] = process.argv.slice(2);
const { ADMIN_TOKEN, API_KEY, APP_ID, APP_SECRET, OTHER_KEY, ISSUER } = process.env;
const DOC_TEXT = readFileSync(DOC_PATH);
const doc = JSON.parse(DOC_TEXT);
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const failures = [];
const fail = (msg) => { failures.push(msg); console.log(`not ok - ${msg}`); };

// ---- the document ------------------------------------------------------------------------
try {
  await SwaggerParser.validate(structuredClone(doc));
  console.log('ok - docs/openapi.json is valid OpenAPI 3.1');
} catch (e) {
  fail(`docs/openapi.json is not valid OpenAPI 3.1: ${e.message}`);
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, 'doc');
const ptr = (parts) => parts.map((p) => String(p).replaceAll('~', '~0').replaceAll('/', '~1')).join('/');
const deref = (o) => {
  while (o && o.$ref) o = o.$ref.slice(2).split('/').reduce((a, k) => a[k.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
  return o;
};

// Operations, and a matcher from a concrete path to its template: literal characters win,
// so /apps/{app_id}:rotateSecret beats /apps/{app_id}.
const ops = [];
for (const [tpl, item] of Object.entries(doc.paths)) {
  const re = new RegExp('^' + tpl.split(/(\{[^}]+\})/).map((s) =>
    s.startsWith('{') ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('') + '$');
  const literal = tpl.replace(/\{[^}]+\}/g, '').length;
  for (const m of METHODS) if (item[m]) ops.push({ tpl, re, literal, method: m, op: item[m] });
}
const templates = [...new Set(ops.map((o) => o.tpl))].map((tpl) => ops.find((o) => o.tpl === tpl));
function templateOf(path) {
  const hits = templates.filter((t) => t.re.test(path)).sort((a, b) => b.literal - a.literal);
  return hits[0]?.tpl;
}
const seen = new Map(ops.map((o) => [o.op.operationId, new Set()]));

// ---- requests --------------------------------------------------------------------------------
function sign(method, uri, body) {
  const ts = String(Math.floor(Date.now() / 1000));
  const nonce = randomBytes(12).toString('hex');
  const canon = [method, uri, ts, nonce, createHash('sha256').update(body).digest('hex')].join('\n');
  return { 'X-App-Id': APP_ID, 'X-Timestamp': ts, 'X-Nonce': nonce,
    'X-Signature': createHmac('sha256', APP_SECRET).update(canon).digest('hex') };
}

/**
 * One request, checked against the document. auth: 'key' (default for /v1), 'admin' (default
 * for /admin), 'app' (HMAC signing), or null. expect: the status the scenario must get.
 */
// A request with a Host of its own (fetch sends the URL's): the answer in fetch's shape.
function viaHttp(method, uri, headers, payload) {
  const u = new URL(BASE + uri);
  return new Promise((ok, ko) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method, headers, timeout: 10000 }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => ok({ status: res.statusCode, arrayBuffer: async () => Buffer.concat(chunks),
        headers: new Headers(Object.entries(res.headers).map(([k, v]) => [k, String(v)])) }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${uri}: timed out`)));
    req.on('error', ko);
    req.end(payload);
  });
}

async function call(method, uri, { body, json, headers = {}, auth, expect } = {}) {
  const path = uri.split('?')[0];
  auth = auth === undefined ? (path.startsWith('/admin') ? 'admin' : path.startsWith('/v1/') ? 'key' : null) : auth;
  let payload = json !== undefined ? JSON.stringify(json) : body;
  const h = { ...headers };
  if (json !== undefined && !Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['Content-Type'] = 'application/json';
  if (auth === 'key') h.Authorization = `Bearer ${API_KEY}`;
  if (auth === 'admin') h.Authorization = `Bearer ${ADMIN_TOKEN}`;
  if (auth === 'app') Object.assign(h, sign(method, uri, payload ?? ''));
  const res = 'Host' in h ? await viaHttp(method, uri, h, payload) : await fetch(BASE + uri, { method, headers: h, body: payload });
  const buf = Buffer.from(await res.arrayBuffer());
  const r = { status: res.status, headers: res.headers, buf, text: buf.toString('utf8') };
  try { r.json = JSON.parse(r.text); } catch { /* not JSON */ }
  const what = `${method} ${uri} -> ${r.status}`;
  if (expect !== undefined && r.status !== expect) fail(`${what}: expected ${expect} (${r.text.slice(0, 300)})`);
  validate(method, path, r, what);
  return r;
}

function validate(method, path, r, what) {
  const tpl = templateOf(path);
  const o = tpl && ops.find((x) => x.tpl === tpl && x.method === method.toLowerCase());
  if (!o) {
    const documented = tpl ? METHODS.filter((m) => doc.paths[tpl][m]).map((m) => m.toUpperCase()) : [];
    if (r.status === 404 && !documented.includes(method)) return; // nothing answers here
    if (r.status === 405 && tpl) {
      const allow = (r.headers.get('allow') || '').split(',').map((s) => s.trim()).filter((m) => m && m !== 'HEAD');
      if (allow.sort().join() !== documented.sort().join()) fail(`${what}: Allow "${r.headers.get('allow')}", the document has ${documented}`);
      return;
    }
    fail(`${what}: the document has no such operation (${tpl ?? 'no path'}): ${r.text.slice(0, 200)}`);
    return;
  }
  const id = o.op.operationId;
  seen.get(id).add(r.status);
  const resp = deref(o.op.responses[String(r.status)]);
  if (!resp) { fail(`${what}: status ${r.status} is not documented for ${id}: ${r.text.slice(0, 200)}`); return; }
  const content = resp.content;
  const ct = (r.headers.get('content-type') || '').split(';')[0].trim();
  if (!content) {
    if (r.buf.length) fail(`${what}: ${id} ${r.status} documents no body, got ${r.buf.length} bytes`);
    return;
  }
  const media = Object.keys(content).find((k) => k === ct || k === '*/*');
  if (!media) { fail(`${what}: Content-Type "${ct}" is not one of ${Object.keys(content)} (${id})`); return; }
  if (media !== 'application/json') return;
  if (r.json === undefined) { fail(`${what}: the body is not JSON (${id})`); return; }
  // The schema's own place in the document, so its $refs resolve there.
  const where = o.op.responses[String(r.status)].$ref
    ? o.op.responses[String(r.status)].$ref.slice(1) + '/' + ptr(['content', media, 'schema'])
    : '/' + ptr(['paths', o.tpl, o.method, 'responses', String(r.status), 'content', media, 'schema']);
  const v = ajv.getSchema('doc#' + where) || ajv.compile({ $ref: 'doc#' + where });
  if (!v(r.json)) fail(`${what}: body does not match ${id} ${r.status}: ${ajv.errorsText(v.errors)}; body ${r.text.slice(0, 300)}`);
}

// ---- the issuer of the tenant "other": its key, and ES256 access tokens signed with it -------
const idp = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const JWKS = JSON.stringify({ keys: [{ ...idp.publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256', use: 'sig' }] });
function accessToken(claims) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const input = `${b64({ alg: 'ES256', typ: 'JWT', kid: 'k1' })}.${b64({ iss: ISSUER, sub: 'u1', iat: now - 5, exp: now + 600, ...claims })}`;
  return `${input}.${cryptoSign('sha256', Buffer.from(input), { key: idp.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

// ---- the tool host: an agent, an http tool that keeps its attachments, a webhook receiver,
// the issuer's keys --
const host = { messages: [], attachments: [], hooks: 0 };
const server = http.createServer((req, res) => {
  if (req.url === '/jwks') { res.writeHead(200, { 'Content-Type': 'application/json' }).end(JWKS); return; }
  let data = '';
  req.on('data', (c) => { data += c; });
  req.on('end', () => {
    const body = data ? JSON.parse(data) : {};
    if (req.url === '/agent') { host.messages.push(body); res.writeHead(202).end(); return; }
    if (req.url === '/attach') {
      host.attachments.push(...(body.attachments || []));
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}');
      return;
    }
    if (req.url === '/hook') host.hooks++;
    res.writeHead(200).end();
  });
});
await new Promise((ok) => server.listen(Number(HOOK_PORT), '127.0.0.1', ok));

async function mcp(body) {
  const res = await fetch(BASE + '/mcp', { method: 'POST', body: JSON.stringify(body), headers: {
    Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' } });
  const text = await res.text();
  const line = text.startsWith('{') ? text : (text.split('\n').find((l) => l.startsWith('data: ')) || '').slice(6);
  return JSON.parse(line);
}
const toolCall = (name, args, id = 1) => mcp({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
async function until(what, fn, ms = 8000) {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((ok) => setTimeout(ok, 50))) {
    const v = await fn();
    if (v) return v;
  }
  throw new Error(`timed out waiting for ${what}`);
}

// ---- the scenarios ---------------------------------------------------------------------------
async function meta() {
  const r = await call('GET', '/openapi.json', { expect: 200 });
  if (!r.buf.equals(DOC_TEXT)) fail('GET /openapi.json is not docs/openapi.json byte for byte');
  else console.log('ok - GET /openapi.json serves docs/openapi.json byte for byte');
  if (!/max-age/.test(r.headers.get('cache-control') || '')) fail('GET /openapi.json: no Cache-Control max-age');
  await call('GET', '/openapi.json', { headers: { 'If-None-Match': r.headers.get('etag') }, expect: 304 });
  await call('GET', '/healthz', { expect: 200 });
  await call('GET', '/readyz', { expect: 200 });
  await call('GET', '/metrics', { expect: 200 });
  await consoleFiles();
}

// The operator console's files (docs/console.md): the page, a script under the version the page
// names, revalidation, an unknown file; the console's headers on each.
async function consoleFiles() {
  const csp = (r, what) => {
    if (!/^default-src 'none';/.test(r.headers.get('content-security-policy') || '')) fail(`${what}: no console CSP`);
  };
  const index = await call('GET', '/console/', { expect: 200 });
  csp(index, 'GET /console/');
  if (index.headers.get('cache-control') !== 'no-store') fail('GET /console/: not Cache-Control no-store');
  await call('GET', '/console/', { headers: { 'If-None-Match': index.headers.get('etag') }, expect: 304 });
  const app = index.text.match(/src="(app\.js\?v=[0-9a-f]+)"/);
  if (!app) fail('GET /console/: no app.js?v=<version> script');
  const js = await call('GET', `/console/${app ? app[1] : 'app.js'}`, { expect: 200 });
  csp(js, 'GET /console/app.js');
  await call('GET', '/console/app.js', { headers: { 'If-None-Match': js.headers.get('etag') }, expect: 304 });
  csp(await call('GET', '/console/no-such-file.js', { expect: 404 }), 'GET /console/no-such-file.js');
}

// The Protected Resource Metadata: the tenant "other" takes tokens (its issuer is the tool
// host, which serves its keys), "demo" does not.
async function resourceMetadata() {
  const W = '/.well-known/oauth-protected-resource';
  // A server no tenant has answers as one that exists: no server name is revealed.
  for (const [path, resource] of [[W, ''], [`${W}/mcp`, '/mcp'], [`${W}/mcp/default`, '/mcp/default'],
    [`${W}/mcp/nosuchserver`, '/mcp/nosuchserver']]) {
    const r = await call('GET', path, { auth: null, expect: 200 });
    const m = JSON.parse(r.buf.toString());
    if (m.resource !== BASE + resource) fail(`GET ${path}: resource ${m.resource}, expected ${BASE + resource}`);
    if (m.authorization_servers.join() !== ISSUER) fail(`GET ${path}: ${m.authorization_servers}`);
  }
  await call('GET', `${W}/mcp/no%20such`, { auth: null, expect: 404 });
  // A Host that is neither loopback nor listed in MCPQ_ALLOWED_HOSTS names no URL: 503.
  for (const path of [W, `${W}/mcp`])
    await call('GET', path, { auth: null, headers: { Host: 'mcp.evil.example' }, expect: 503 });
  console.log('ok - the Protected Resource Metadata names the resource and the issuers of the tenants that take tokens');
}

async function files() {
  const P = '/v1/files/presign-upload';
  const text = 'hello, attachments\n';
  const meta = { filename: 'a.txt', content_type: 'text/plain', size: Buffer.byteLength(text) };
  const p = (await call('POST', P, { json: meta, expect: 200 })).json;
  await call('POST', P, { json: meta, auth: 'app', expect: 200 }); // HMAC app signing
  await call('POST', P, { json: { ...meta, size: 0 }, expect: 400 });
  await call('POST', P, { body: '{"filename":', headers: { 'Content-Type': 'application/json' }, expect: 400 });
  await call('POST', P, { json: meta, auth: null, expect: 401 });
  await call('POST', P, { json: meta, headers: { Origin: 'https://evil.example' }, expect: 403 });
  const up = new URL(p.upload_url);
  const content = up.pathname + up.search;
  await call('GET', `/v1/files/${p.file_id}`, { expect: 200 });
  await call('GET', `/v1/files/f_${'0'.repeat(32)}`, { expect: 404 });
  await call('GET', `/v1/files/${p.file_id}`, { auth: null, expect: 401 });
  await call('PUT', up.pathname + '?exp=1&sig=00', { body: text, headers: { 'Content-Type': 'text/plain' }, expect: 403 });
  await call('PUT', content, { body: text, headers: { 'Content-Type': 'image/png' }, expect: 415 });
  await call('PUT', content, { body: text + 'more', headers: { 'Content-Type': 'text/plain' }, expect: 413 });
  await call('PUT', content, { body: text, headers: { 'Content-Type': 'text/plain' }, expect: 201 });
  await call('PUT', content, { body: text, headers: { 'Content-Type': 'text/plain' }, expect: 409 });
  const p2 = (await call('POST', P, { json: meta, expect: 200 })).json;
  const up2 = new URL(p2.upload_url);
  await call('PUT', up2.pathname + up2.search, { body: 'short', headers: { 'Content-Type': 'text/plain' }, expect: 400 });
  // The download URL is what a tool gets: the http tool "attach" keeps its attachments.
  const res = await toolCall('attach', { attachments: [{ file_id: p.file_id }] });
  if (res.error || res.result?.isError) fail(`tools/call attach: ${JSON.stringify(res)}`);
  const url = new URL(host.attachments[0]?.url || 'http://x/none');
  const dl = await call('GET', url.pathname + url.search, { expect: 200 });
  if (dl.text !== text) fail('the download is not the uploaded bytes');
  await call('GET', url.pathname + '?exp=1&sig=00', { expect: 403 });
  return p.file_id;
}

async function webhooksAndChannels() {
  // A task-mode call makes a task; its task.completed goes to the receiver as a delivery.
  await toolCall('tasky', { text: 'hook me' });
  const list = await until('a webhook delivery', async () => {
    const r = await call('GET', '/v1/webhooks/deliveries', { expect: 200 });
    return r.json?.deliveries?.length ? r.json : null;
  });
  const d = list.deliveries[0].id;
  await call('GET', '/v1/webhooks/deliveries?status=delivered&limit=5', { expect: 200 });
  await call('GET', '/v1/webhooks/deliveries?filter=status%20%3D%20%22failed%22&pageSize=2', { auth: 'app', expect: 200 });
  await call('GET', '/v1/webhooks/deliveries?status=lost', { expect: 400 });
  await call('GET', '/v1/webhooks/deliveries?cursor=nope', { expect: 400 });
  await call('GET', '/v1/webhooks/deliveries', { auth: null, expect: 401 });
  await call('POST', `/v1/webhooks/deliveries/${d}/redeliver`, { expect: 202 });
  await call('POST', '/v1/webhooks/deliveries/msg_nope/redeliver', { expect: 404 });
  await call('POST', `/v1/webhooks/deliveries/${d}/redeliver`, { auth: null, expect: 401 });
  await call('GET', '/admin/v1/tenants/demo/deliveries', { expect: 200 });
  await call('GET', '/admin/v1/tenants/demo/deliveries?orderBy=name', { expect: 400 });
  await call('POST', `/admin/v1/tenants/demo/deliveries/${d}:redeliver`, { expect: 202 });
  await call('POST', '/admin/v1/tenants/demo/deliveries/msg_nope:redeliver', { expect: 404 });

  // The agent round-trip: the agent answers 202, then posts its reply to the channel.
  const pending = toolCall('agent', { q: 'hi' }, 7);
  const m = await until('the chat_message', async () => host.messages[0]);
  const C = `/v1/channels/${m.channel_id}/messages`;
  const reply = { type: 'agent_reply', in_reply_to: m.message_id, text: 'hello' };
  await call('POST', C, { json: { type: 'chat_message' }, expect: 400 });
  await call('POST', C, { json: reply, auth: null, expect: 401 });
  await call('POST', C, { json: { ...reply, in_reply_to: 'j_nobody' }, expect: 404 });
  // Two at once: one is accepted; the other is 409 while the reply is stored and the call still
  // waits, 404 once it has taken the reply (the worker is quick: either may come).
  const two = await Promise.all([call('POST', C, { json: reply }), call('POST', C, { json: reply })]);
  const st = two.map((r) => r.status).sort().join();
  if (st !== '200,409' && st !== '200,404') fail(`two replies to one message: ${st}, expected 200 and 409 (or 404)`);
  const res = await pending;
  if (res.result?.content?.[0]?.text !== 'hello') fail(`the agent call did not get the reply: ${JSON.stringify(res)}`);
}

// Tasks over REST: made by tools/call of the task-mode tools (tasky: echo; slowtask: a long
// sleep, cancelled before it ends), read, listed, cancelled; another tenant's are 404.
async function tasks() {
  const taskOf = async (name, args) => {
    const res = await toolCall(name, args);
    const id = res.result?.structuredContent?.TaskId;
    if (!id) throw new Error(`tools/call ${name} made no task: ${JSON.stringify(res)}`);
    return id;
  };
  const a = await taskOf('tasky', { text: 'task a' });
  const T = `/v1/tasks/${a}`;
  // The task belongs to the key that made it (docs/security.md "Ownership model"): the app
  // holds tasks:all and sees it; another key of the same tenant without it does not.
  await call('GET', T, { auth: 'app', expect: 200 });
  const sibling = await call('GET', T, { auth: null, headers: { Authorization: 'Bearer demo-key-2' }, expect: 404 });
  const done = await until('task a to complete', async () => {
    const r = await call('GET', T);
    return r.status === 200 && r.json?.status === 'completed' ? r.json : null;
  });
  if (done.result?.structuredContent?.text !== 'task a' || done.tool !== 'tasky')
    fail(`GET ${T}: not the completed task with its result: ${JSON.stringify(done)}`);
  const other = { auth: null, headers: { Authorization: `Bearer ${OTHER_KEY}` } };
  const missing = await call('GET', '/v1/tasks/00000000-0000-4000-8000-000000000000', { expect: 404 });
  const foreign = await call('GET', T, { ...other, expect: 404 });
  if (foreign.text !== missing.text) fail(`another tenant's task answers unlike a missing one: ${foreign.text}`);
  if (sibling.text !== missing.text) fail(`another key's task answers unlike a missing one: ${sibling.text}`);
  await call('GET', T, { auth: null, expect: 401 });

  const list = (await call('GET', '/v1/tasks', { expect: 200 })).json;
  if (!list?.tasks?.some((t) => t.taskId === a)) fail('GET /v1/tasks does not list task a');
  await call('GET', '/v1/tasks?status=completed&cursor=', { auth: 'app', expect: 200 });
  const theirs = (await call('GET', '/v1/tasks', { ...other, expect: 200 })).json;
  if (theirs?.tasks?.length) fail('another tenant lists this tenant\'s tasks');
  // An OAuth access token of "other" (docs/api.md "Authentication"): taken on /v1 as its key is,
  // with aud = the base URL; another aud is 401 pointing at the root metadata.
  const bearer = (aud) => ({ auth: null, headers: { Authorization: `Bearer ${accessToken({ aud })}` } });
  // (the ingress fetches the keys in the background, from before this host listened: until it
  // has them a token is 503, docs/authorization.md "JWT validation")
  await until('the ingress to have the issuer\'s keys', async () => (await fetch(BASE + '/v1/tasks',
    { headers: { Authorization: `Bearer ${accessToken({ aud: BASE })}` } })).status !== 503);
  const viaToken = (await call('GET', '/v1/tasks', { ...bearer(BASE), expect: 200 })).json;
  if (viaToken?.tasks?.length) fail('a token of another tenant lists this tenant\'s tasks');
  await call('GET', T, { ...bearer(BASE), expect: 404 });
  await call('GET', '/v1/webhooks/deliveries', { ...bearer(BASE), expect: 200 });
  const refused = await call('GET', '/v1/tasks', { ...bearer('https://elsewhere.example'), expect: 401 });
  const challenge = refused.headers.get('www-authenticate') || '';
  if (!challenge.includes(`resource_metadata="${BASE}/.well-known/oauth-protected-resource"`) || !challenge.includes('error="invalid_token"'))
    fail(`GET /v1/tasks with a token for another audience: WWW-Authenticate ${challenge}`);
  // ... and the document says so: every operation a tenant's API key may call takes a token too.
  for (const o of ops) {
    const sec = o.op.security || [];
    if (sec.some((s) => 'apiKey' in s) !== sec.some((s) => 'oauthToken' in s))
      fail(`${o.op.operationId}: takes ${sec.some((s) => 'apiKey' in s) ? 'an API key but no' : 'no API key but an'} OAuth token in the document`);
  }
  await call('GET', '/v1/tasks?status=done', { expect: 400 });
  await call('GET', '/v1/tasks?cursor=nope', { expect: 400 });
  await call('GET', '/v1/tasks', { auth: null, expect: 401 });

  const b = await taskOf('slowtask', { ms: 60000 });
  const C = `/v1/tasks/${b}/cancel`;
  await call('POST', C, { ...other, expect: 404 });
  await call('POST', C, { auth: null, expect: 401 });
  const cancelled = (await call('POST', C, { expect: 200 })).json;
  if (cancelled?.status !== 'cancelled') fail(`POST ${C}: ${JSON.stringify(cancelled)}`);
  await call('POST', C, { expect: 409 });
  await call('POST', `${T}/cancel`, { auth: 'app', expect: 409 });
  await call('POST', '/v1/tasks/00000000-0000-4000-8000-000000000000/cancel', { expect: 404 });
  console.log('ok - tasks over REST: read, result, list, cancel, 409, another tenant\'s 404, OAuth tokens as keys');
  return a;
}

// The operator's view of the same tasks (docs/api.md "Administration"): listed in pages, one with
// its history and deliveries, cancelled; another tenant's is 404 there.
async function adminTasks(a) {
  const AT = '/admin/v1/tenants/demo/tasks';
  const first = (await call('GET', `${AT}?pageSize=1`, { expect: 200 })).json;
  if (first?.tasks?.length !== 1 || !first.nextPageToken) fail(`GET ${AT}?pageSize=1: ${JSON.stringify(first)}`);
  await call('GET', `${AT}?status=completed&pageToken=${first?.nextPageToken}`, { expect: 200 });
  await call('GET', `${AT}?status=done`, { expect: 400 });
  await call('GET', `${AT}?pageSize=51`, { expect: 400 });
  await call('GET', AT, { auth: null, expect: 401 });
  const one = await until('task a\'s delivery to be listed with it', async () => {
    const r = await call('GET', `${AT}/${a}`, { expect: 200 });
    return r.json?.deliveries?.length ? r.json : null;
  });
  const events = (one.history || []).map((e) => e.event).join(',');
  if (one.status !== 'completed' || events !== 'created,started,completed' || one.deliveries[0].task !== a)
    fail(`GET ${AT}/${a}: not the completed task with its history and delivery: ${JSON.stringify(one)}`);
  await call('GET', `${AT}/00000000-0000-4000-8000-000000000000`, { expect: 404 });
  await call('GET', `/admin/v1/tenants/other/tasks/${a}`, { expect: 404 });
  const res = await toolCall('slowtask', { ms: 60000 });
  const c = res.result?.structuredContent?.TaskId;
  const cancelled = (await call('POST', `${AT}/${c}:cancel`, { expect: 200 })).json;
  if (cancelled?.status !== 'cancelled' || cancelled.history?.at(-1)?.event !== 'cancelled')
    fail(`POST ${AT}/${c}:cancel: ${JSON.stringify(cancelled)}`);
  await call('POST', `${AT}/${c}:cancel`, { expect: 409 });
  await call('POST', `${AT}/00000000-0000-4000-8000-000000000000:cancel`, { expect: 404 });
  console.log('ok - the admin API\'s tasks: pages, one with history and deliveries, cancel, 409, 404');
}

async function admin(fileBytesProbe) {
  const A = '/admin/v1';
  const T = `${A}/tenants/oa`;
  const J = { 'Content-Type': 'application/json' };
  await call('GET', `${A}/tenants`, { expect: 200 });
  await call('GET', `${A}/tenants?pageSize=-1`, { expect: 400 });
  await call('GET', `${A}/tenants`, { auth: null, expect: 401 });
  await call('GET', `${A}/tenants`, { headers: { Authorization: 'Bearer wrong' }, auth: null, expect: 401 });
  await call('GET', `${A}/tenants`, { headers: { Origin: 'https://evil.example' }, expect: 403 });
  await call('GET', `${A}/nothing`, { expect: 404 });
  await call('POST', `${A}/tenants`, { json: { id: 'oa', quotas: { file_bytes: 10 } }, expect: 201 });
  await call('POST', `${A}/tenants`, { json: { id: 'oa' }, expect: 409 });
  await call('POST', `${A}/tenants`, { json: { id: 'bad id!' }, expect: 400 });
  await call('POST', `${A}/tenants`, { body: 'id=x', headers: { 'Content-Type': 'text/plain' }, expect: 415 });
  const t = await call('GET', T, { expect: 200 });
  await call('GET', `${A}/tenants/nobody`, { expect: 404 });
  await call('PATCH', T, { json: { rate_limits: { api_key: { per_second: 100 } } }, headers: { 'If-Match': t.headers.get('etag') }, expect: 200 });
  await call('PATCH', T, { json: { robots: ['r1'] }, headers: { 'If-Match': '"00000000000000000000"' }, expect: 412 });
  await call('PATCH', T, { json: { bogus: 1 }, expect: 400 });
  // A tenant's oauth (docs/config-file.md "OAuth"): its introspection secret shows "(hidden)".
  const oauth = { issuers: ['https://idp.example.com/r'], scopes: { 'mcp:tools': ['tools'] },
    introspection: { endpoint: 'https://idp.example.com/i', client_id: 'c', client_secret: 's' } };
  const to = (await call('PATCH', T, { json: { oauth }, expect: 200 })).json;
  if (to.oauth?.introspection?.client_secret !== '(hidden)') fail('a tenant shows its oauth without its secret');
  await call('PATCH', T, { json: { oauth: { issuers: ['http://idp.example.com/r'] } }, expect: 400 });
  await call('PATCH', T, { json: { oauth: null }, expect: 200 });

  // API keys: the new key is the tenant's, and its file_bytes quota of 10 refuses a presign.
  const k = (await call('POST', `${T}/apiKeys`, { json: {}, expect: 201 })).json;
  await call('POST', `${T}/apiKeys`, { json: { id: k.id }, expect: 409 });
  await call('POST', `${T}/apiKeys`, { json: { bogus: true }, expect: 400 });
  await call('GET', `${T}/apiKeys`, { expect: 200 });
  await call('GET', `${T}/apiKeys?pageSize=x`, { expect: 400 });
  await call('GET', `${T}/apiKeys/${k.id}`, { expect: 200 });
  await call('GET', `${T}/apiKeys/nokey`, { expect: 404 });
  await call('PATCH', `${T}/apiKeys/${k.id}`, { json: { scopes: ['tools'] }, expect: 200 });
  await call('PATCH', `${T}/apiKeys/${k.id}`, { json: { sha256: 'x' }, expect: 400 });
  await until('the new key', async () => (await call('POST', '/v1/files/presign-upload', {
    json: { filename: 'big.bin', content_type: 'application/octet-stream', size: fileBytesProbe },
    auth: null, headers: { Authorization: `Bearer ${k.key}` } })).status === 429);

  // Apps.
  const app = (await call('POST', `${T}/apps`, { json: { app_id: 'oa-app' }, expect: 201 })).json;
  if (!app.secret) fail('a created app shows its secret once');
  await call('POST', `${T}/apps`, { json: { app_id: 'oa-app' }, expect: 409 });
  await call('POST', `${T}/apps`, { json: { app_id: 'bad id!' }, expect: 400 });
  await call('GET', `${T}/apps`, { expect: 200 });
  await call('GET', `${T}/apps?pageSize=x`, { expect: 400 });
  await call('GET', `${T}/apps/oa-app`, { expect: 200 });
  await call('GET', `${T}/apps/nobody`, { expect: 404 });
  await call('PATCH', `${T}/apps/oa-app`, { json: { rate_limit: { per_second: 5 } }, expect: 200 });
  await call('PATCH', `${T}/apps/oa-app`, { json: { app_id: 'x' }, expect: 400 });
  await call('PATCH', `${T}/apps/oa-app`, { json: { scopes: ['tools'] }, expect: 200 });
  await call('POST', `${T}/apps/oa-app:rotateSecret`, { json: { grace_s: 60 }, expect: 200 });
  await call('POST', `${T}/apps/oa-app:rotateSecret`, { json: { grace_s: -1 }, expect: 400 });
  await call('POST', `${T}/apps/oa-app:rotateSecret`, { expect: 200 });

  // Webhooks.
  const hook = `http://127.0.0.1:${HOOK_PORT}/hook`;
  const w = (await call('POST', `${T}/webhooks`, { json: { url: hook, events: ['task.completed'] }, expect: 201 })).json;
  if (!/^whsec_/.test(w.secret || '')) fail('a created webhook shows its whsec_ secret once');
  await call('POST', `${T}/webhooks`, { json: { id: w.id, url: hook, events: ['task.completed'] }, expect: 409 });
  await call('POST', `${T}/webhooks`, { json: { url: hook, events: [] }, expect: 400 });
  await call('GET', `${T}/webhooks`, { expect: 200 });
  await call('GET', `${T}/webhooks?pageSize=x`, { expect: 400 });
  await call('GET', `${T}/webhooks/${w.id}`, { expect: 200 });
  await call('GET', `${T}/webhooks/nobody`, { expect: 404 });
  await call('PATCH', `${T}/webhooks/${w.id}`, { json: { events: ['task.completed', 'task.cancelled'] }, expect: 200 });
  await call('PATCH', `${T}/webhooks/${w.id}`, { json: { url: 'ftp://x' }, expect: 400 });
  await call('POST', `${T}/webhooks/${w.id}:rotateSecret`, { json: { grace_s: 0 }, expect: 200 });
  await call('POST', `${T}/webhooks/${w.id}:rotateSecret`, { json: { grace: 1 }, expect: 400 });

  // Servers.
  await call('POST', `${T}/servers`, { json: { name: 's2', description: 'two' }, expect: 201 });
  await call('POST', `${T}/servers`, { json: { name: 's2' }, expect: 409 });
  await call('POST', `${T}/servers`, { json: { name: 'system' }, expect: 403 });
  await call('POST', `${T}/servers`, { json: { name: 's3', bogus: 1 }, expect: 400 });
  await call('GET', `${T}/servers`, { expect: 200 });
  await call('GET', `${T}/servers?pageSize=x`, { expect: 400 });
  await call('GET', `${T}/servers/s2`, { expect: 200 });
  await call('GET', `${T}/servers/none`, { expect: 404 });
  await call('PATCH', `${T}/servers/s2`, { json: { description: 'second' }, expect: 200 });
  await call('PATCH', `${T}/servers/system`, { json: { description: 'x' }, expect: 403 });
  await call('PATCH', `${T}/servers/s2`, { json: { name: 'x' }, expect: 400 });
  await call('PATCH', `${T}/servers/s2`, { json: { access: { scopes: ['crm:write'] } }, expect: 200 });
  await call('PATCH', `${T}/servers/s2`, { json: { access: { keys: ['nokey'] } }, expect: 400 });
  await call('PATCH', `${T}/servers/s2`, { json: { access: null }, expect: 200 });

  // Tools and versions.
  const v1 = { version: '1', description: 'Greet', inputSchema: { type: 'object', properties: { who: { type: 'string' } } },
    executor: { type: 'builtin', name: 'echo' } };
  await call('POST', `${T}/tools`, { json: { name: 'greet', server: 's2', version: v1 }, expect: 201 });
  await call('POST', `${T}/tools`, { json: { name: 'greet', server: 's2', version: v1 }, expect: 409 });
  await call('POST', `${T}/tools`, { json: { name: '1bad', server: 's2', version: v1 }, expect: 400 });
  await call('GET', `${T}/tools?filter=server%20%3D%20%22s2%22&orderBy=create_time%20desc`, { expect: 200 });
  await call('GET', `${T}/tools?orderBy=colour`, { expect: 400 });
  await call('GET', `${T}/tools/greet`, { expect: 200 });
  await call('GET', `${T}/tools/none`, { expect: 404 });
  await call('PATCH', `${T}/tools/greet`, { json: { access: { users: ['alice'] } }, expect: 200 });
  await call('PATCH', `${T}/tools/greet`, { json: { access: { groups: ['x'] } }, expect: 400 });
  await call('PATCH', `${T}/tools/greet`, { json: { access: null }, expect: 200 });
  await call('POST', `${T}/tools/greet/versions`, { json: { version: '2', from_version: '1', description: 'Greet politely' }, expect: 201 });
  await call('POST', `${T}/tools/greet/versions`, { json: { version: '2', from_version: '1' }, expect: 409 });
  await call('POST', `${T}/tools/greet/versions`, { json: { version: '3', from_version: '9' }, expect: 400 });
  await call('GET', `${T}/tools/greet/versions`, { expect: 200 });
  await call('GET', `${T}/tools/greet/versions?filter=colour%20%3D%201`, { expect: 400 });
  await call('GET', `${T}/tools/greet/versions/2`, { expect: 200 });
  await call('GET', `${T}/tools/greet/versions/9`, { expect: 404 });
  await call('PATCH', `${T}/tools/greet/versions/2`, { json: { description: 'Greet, v2' }, expect: 200 });
  await call('PATCH', `${T}/tools/greet/versions/2`, { json: { version: '3' }, expect: 400 });
  await call('POST', `${T}/tools/greet/versions/2:offline`, { expect: 409 });
  await call('POST', `${T}/tools/greet/versions/2:publish`, { expect: 200 });
  await call('POST', `${T}/tools/greet/versions/9:publish`, { expect: 404 });
  await call('PATCH', `${T}/tools/greet/versions/2`, { json: { description: 'x' }, expect: 409 });
  await call('DELETE', `${T}/tools/greet/versions/2`, { expect: 409 });
  await call('POST', `${T}/tools/greet:rename`, { json: { name: 'hello' }, expect: 409 });
  await call('DELETE', `${T}/servers/s2`, { expect: 409 });
  await call('POST', `${T}/tools/greet/versions/2:offline`, { expect: 200 });
  await call('POST', `${T}/tools/greet:rename`, { json: {}, expect: 400 });
  await call('POST', `${T}/tools/greet:rename`, { json: { name: 'hello' }, expect: 200 });
  await call('DELETE', `${T}/tools/hello/versions/2`, { headers: { 'If-Match': '"00000000000000000000"' }, expect: 412 });
  await call('DELETE', `${T}/tools/hello/versions/2`, { expect: 204 });
  await call('DELETE', `${T}/tools/hello/versions/1`, { expect: 204 });
  await call('GET', `${T}/tools/hello`, { expect: 404 });

  // Pinned tool definitions (docs/security.md): approving a federated server's tools.
  await call('POST', `${T}/servers`, { json: { name: 'upfed', federate: { url: 'http://127.0.0.1:9/mcp', pin: true } }, expect: 201 });
  await call('POST', `${T}/tools`, { json: { name: 'up_greet', server: 'upfed', version: v1, publish: true }, expect: 201 });
  await call('POST', `${T}/servers/default:approve`, { expect: 409 });
  await call('POST', `${T}/servers/upfed:approve`, { json: { bogus: 1 }, expect: 400 });
  await call('POST', `${T}/servers/nosuch:approve`, { expect: 404 });
  const approved = (await call('POST', `${T}/servers/upfed:approve`, { json: { approvedBy: 'ops' }, expect: 200 })).json;
  if (approved.approved?.[0]?.name !== 'up_greet') fail(`servers/upfed:approve approved ${JSON.stringify(approved)}`);
  const pinned = (await call('GET', `${T}/tools/up_greet`, { expect: 200 })).json;
  if (pinned.pin?.state !== 'approved' || pinned.pin?.approvedBy !== 'ops') fail(`tools/up_greet pin: ${JSON.stringify(pinned.pin)}`);
  await call('POST', `${T}/tools/up_greet:approve`, { json: { sha256: '0'.repeat(64) }, expect: 409 });
  await call('POST', `${T}/tools/up_greet:approve`, { json: { sha256: 1 }, expect: 400 });
  await call('POST', `${T}/tools/nosuch:approve`, { expect: 404 });
  await call('POST', `${T}/tools/up_greet:approve`, { json: { sha256: pinned.pin.sha256 }, expect: 200 });
  await call('POST', `${T}/tools/up_greet/versions/1:offline`, { expect: 200 });
  await call('DELETE', `${T}/tools/up_greet/versions/1`, { expect: 204 });
  await call('DELETE', `${T}/servers/upfed`, { expect: 204 });

  // The whole configuration.
  const cfg = (await call('GET', `${A}/config`, { expect: 200 })).json;
  await call('PUT', `${A}/config`, { json: cfg, expect: 200 });
  await call('PUT', `${A}/config?prune=false`, { json: { tenants: 'none' }, expect: 400 });
  await call('PUT', `${A}/config`, { body: '{}', headers: { 'Content-Type': 'text/yaml' }, expect: 415 });
  await call('GET', `${A}/config`, { auth: null, expect: 401 });
  // What became of the config file: the stack's start-up load is one event.
  const ev = (await call('GET', `${A}/config/events`, { expect: 200 })).json;
  if (!ev.events.some((e) => e.result === 'applied')) fail(`config/events: no applied event: ${JSON.stringify(ev)}`);
  await call('GET', `${A}/config/events`, { auth: null, expect: 401 });
  await call('POST', `${A}/config/events`, { json: {}, expect: 405 });

  // Deleting.
  await call('DELETE', `${T}/servers/default`, { expect: 409 });
  await call('DELETE', `${T}/servers/s2`, { expect: 204 });
  await call('DELETE', `${T}/servers/s2`, { expect: 404 });
  await call('DELETE', `${T}/webhooks/${w.id}`, { expect: 204 });
  await call('DELETE', `${T}/webhooks/${w.id}`, { expect: 404 });
  await call('DELETE', `${T}/apps/oa-app`, { expect: 204 });
  await call('DELETE', `${T}/apps/oa-app`, { expect: 404 });
  await call('DELETE', `${T}/apiKeys/${k.id}`, { expect: 204 });
  await call('DELETE', `${T}/apiKeys/${k.id}`, { expect: 404 });
  await call('DELETE', T, { headers: { 'If-Match': '"00000000000000000000"' }, expect: 412 });
  await call('DELETE', T, { expect: 204 });
  await call('DELETE', T, { expect: 404 });
}

// Every method a documented path does not list: 405 with the documented Allow, or 404; and
// paths one step beside documented ones: 404 (validate() fails anything else).
async function undocumented(values) {
  for (const tpl of Object.keys(doc.paths)) {
    const path = tpl.replace(/\{([^}]+)\}/g, (_, n) => values[n] ?? 'x');
    for (const m of METHODS) {
      if (doc.paths[tpl][m]) continue;
      const r = await call(m.toUpperCase(), path, { json: m === 'get' || m === 'delete' ? undefined : {} });
      if (r.status !== 405 && r.status !== 404) fail(`${m.toUpperCase()} ${path}: ${r.status}, expected 405 or 404`);
    }
    for (const extra of ['/x', ':x']) {
      if (tpl === '/v1/files/{file_id}' && extra === '/x') continue; // that is .../{id}/x, not a file id
      if (templateOf(path + extra) && templateOf(path + extra) !== tpl) continue; // another documented path (…/mcp/x)
      const r = await call('GET', path + extra);
      if (r.status !== 404) fail(`GET ${path + extra}: ${r.status}, expected 404 (not in the document)`);
    }
  }
  for (const p of ['/v1', '/v1/files', '/v1/tasks/', '/v1/webhooks', '/v1/webhooks/other', '/v1/channels/c/other',
    '/admin', '/admin/v2/tenants', '/admin/v1/tenants/demo/other', '/admin/v1/tenants/demo/tools/echo/versions/1/x']) {
    const r = await call('GET', p);
    if (r.status !== 404) fail(`GET ${p}: ${r.status}, expected 404 (not in the document)`);
  }
  console.log('ok - every undocumented method and neighbouring path is 405 (Allow as documented) or 404');
}

// ---- run ---------------------------------------------------------------------------------------
const t0 = Date.now();
try {
  await meta();
  await resourceMetadata();
  const fileId = await files();
  await webhooksAndChannels();
  await adminTasks(await tasks());
  await admin(100);
  await undocumented({ file_id: fileId, tenant: 'demo', key_id: 'demo-k1', app_id: 'demo-app', webhook_id: 'hook',
    server: 'default', tool: 'echo', version: '1', delivery_id: 'msg_x', channel_id: 'c_x', task_id: 'x' });
} catch (e) {
  fail(`scenario stopped: ${e.stack}`);
}
server.close();

const PROBES = new Set(['getHealthz', 'getReadyz', 'getMetrics']);
for (const o of ops) {
  const id = o.op.operationId;
  const st = [...seen.get(id)];
  if (!st.some((s) => s >= 200 && s < 300)) fail(`coverage: ${id} (${o.method.toUpperCase()} ${o.tpl}) never answered 2xx`);
  if (!PROBES.has(id) && !st.some((s) => s >= 300)) fail(`coverage: ${id} never answered an error`);
}
const calls = [...seen.values()].reduce((n, s) => n + s.size, 0);
console.log(`# ${ops.length} operations, ${calls} (operation, status) pairs seen, ${((Date.now() - t0) / 1000).toFixed(1)} s`);
if (failures.length) {
  console.log(`not ok - ${failures.length} mismatch(es) between the document and the ingress`);
  process.exit(1);
}
console.log('ok - every answer matches docs/openapi.json and every operation was exercised');
