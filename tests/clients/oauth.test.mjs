// OAuth 2.1 resource server with real parts (docs/authentication.md, docs/security.md): a real
// authorization server, oidc-provider from npm (tests/clients/oidc/provider.mjs, on loopback),
// issues the tokens; the official SDK v1 and v2 clients and mcp-remote use them unmodified.
//
//   - from nothing: 401 + WWW-Authenticate resource_metadata → Protected Resource Metadata
//     (RFC 9728) → authorization server metadata → token (RFC 8707 resource) → the call works,
//     by hand and by each SDK's client-credentials provider; RS256, PS256, ES256 and EdDSA;
//   - the authorization code flow with PKCE through the SDKs' OAuthClientProvider, the login
//     and consent pages driven headlessly (oidc/harness.mjs driveAuthorization), and the SDK
//     v1's step-up: a 403 insufficient_scope makes it ask again for the scopes named;
//   - mcp-remote spawned as Claude Desktop spawns it, with --header "Authorization:${AUTH}";
//   - refusals: expired, wrong audience, wrong issuer, unknown kid, alg none, HS256 signed with
//     the RSA public key → 401 invalid_token; key rotation at the provider → new kid accepted;
//   - per-tool rules: a tool needing a permission the token's scopes do not grant is absent from
//     tools/list and its call is 403 insufficient_scope with the scopes to ask for; a tool
//     limited to apps, keys or users is hidden from everyone else, API keys and HMAC apps too;
//   - no token passthrough: the http tool's service never sees the Authorization header;
//   - CORS for browser clients: preflight for an allowed Origin, 403 for another.
// The stack runs with MCPQ_PUBLIC_URL=http://127.0.0.1:<port>, so the MCP endpoint's resource
// URL is <base>/mcp.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider as CCProviderV1 } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { UnauthorizedError as UnauthorizedV1 } from '@modelcontextprotocol/sdk/client/auth.js';
import {
  Client as ClientV2, ClientCredentialsProvider as CCProviderV2, StreamableHTTPClientTransport as TransportV2,
} from '@modelcontextprotocol/client';
import {
  ALL_SCOPES, CC_CLIENTS, HeadlessBrowserProvider, claimsOf, clientCredentialsToken, headerOf, mint, secretOf,
  startProvider,
} from './oidc/harness.mjs';
import { CLIENTS_DIR, freePort, startStack } from './lib/stack.mjs';

const T = { timeout: 20_000 };
const ORIGIN = 'http://localhost:3000';
const KEY1 = { id: 'oauth-k1', key: 'oauth-key-1f0c9a77' };                       // no permissions
const KEY2 = { id: 'oauth-k2', key: 'oauth-key-2b7e4d31', scopes: ['admin'] };    // permission admin
const APP = { app_id: 'oauth-app', secret: 'oauth-app-secret-5d1c-0123456789abcdef' };

let tmp;
let provider;     // provider.mjs: {issuer, control, kids, stop}
let stranger;     // a second provider.mjs the tenant does not trust
let stack;
let base;         // http://127.0.0.1:<ingress port>
let resource;     // <base>/mcp: the resource indicator tokens are minted for
let headersSvc;   // the http tool's service: records what each call sent it
const seenByTool = [];

const tool = (name, description, executor, extra = {}) => ({
  tenant: 'oauth', server: 'default', name, published: '1', ...extra,
  versions: [{ version: '1', description, inputSchema: { type: 'object' }, executor, timeout_ms: 10000, mode: 'sync' }],
});
const ECHO = { type: 'builtin', name: 'echo' };

/** The stack's config (docs/config-file.md), with the issuer and the http tool's URL of this run. */
function config(issuer, headersUrl) {
  return {
    tenants: [{
      id: 'oauth', default_server: 'default',
      api_keys: [KEY1, KEY2],
      apps: [APP],
      oauth: {
        issuers: [issuer],
        claims: { user: 'sub', app: 'azp' }, // oidc-provider's tokens carry no azp: client_id counts
        scopes: { 'mcp:tools': ['tools'], 'mcp:admin': ['tools', 'admin'] },
        scopes_supported: ['mcp:tools'],
        introspection: { endpoint: `${issuer}/token/introspection`, client_id: 'mcpq-introspect', client_secret: 'secret-mcpq-introspect' },
      },
    }],
    servers: [{ tenant: 'oauth', name: 'default', description: 'OAuth test tools' }],
    tools: [
      tool('echo', 'Echo the arguments (open to every caller)', ECHO),
      tool('headers', 'Answers the headers its HTTP service received', { type: 'http', url: headersUrl }),
      tool('admin_echo', 'Echo, for callers holding the admin permission', ECHO, { access: { scopes: ['admin'] } }),
      tool('rs_only', 'Echo, for the OAuth client cc-rs256 and the HMAC app', ECHO, { access: { apps: ['cc-rs256', APP.app_id] } }),
      tool('key2_only', 'Echo, for the API key oauth-k2', ECHO, { access: { keys: [KEY2.id] } }),
      tool('alice_only', 'Echo, for the user alice', ECHO, { access: { users: ['alice'] } }),
    ],
  };
}

before(async () => {
  tmp = mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'mcpq-oauth-'));
  headersSvc = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      seenByTool.push({ headers: req.headers, rawHeaders: req.rawHeaders, body });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ content: [{ type: 'text', text: 'seen' }], structuredContent: { headers: req.headers } }));
    });
  });
  await new Promise((r) => headersSvc.listen(0, '127.0.0.1', r));
  [provider, stranger] = await Promise.all([startProvider({ keysFile: path.join(tmp, 'keys.json') }), startProvider()]);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  resource = `${base}/mcp`;
  const configPath = path.join(tmp, 'oauth-config.json');
  writeFileSync(configPath, JSON.stringify(config(provider.issuer, `http://127.0.0.1:${headersSvc.address().port}/tool`)));
  stack = await startStack({
    label: 'oauth', workers: 1, config: configPath, port,
    env: {
      MCPQ_PUBLIC_URL: base,
      MCPQ_ALLOWED_ORIGINS: ORIGIN,
      MCPQ_OAUTH_JWKS_MIN_REFRESH_S: '1', // the unknown-kid and rotation tests refetch within the run
    },
  });
}, { timeout: 120_000 });

after(async () => {
  try {
    await stack?.stop();
  } finally {
    await provider?.stop();
    await stranger?.stop();
    headersSvc?.closeAllConnections();
    headersSvc?.close();
    if (tmp && process.env.KEEP !== '1') rmSync(tmp, { recursive: true, force: true });
  }
}, { timeout: 40_000 });

// ------------------------------------------------------------------ helpers

let nextId = 1;
/** A POST /mcp of one JSON-RPC request with the given headers; bounded by 10 s. */
async function post(headers, method, params = {}, { path: p = '/mcp', body } = {}) {
  const text = body ?? JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params });
  const res = await fetch(base + p, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: text,
    signal: AbortSignal.timeout(10_000),
  });
  const raw = await res.text();
  let json;
  try {
    json = JSON.parse(raw);
  } catch {
    const data = raw.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).pop();
    try { json = data ? JSON.parse(data) : undefined; } catch { /* neither */ }
  }
  return { status: res.status, headers: res.headers, raw, json, result: json?.result, error: json?.error };
}
const bearer = (token) => ({ Authorization: `Bearer ${token}` });
async function toolNames(headers) {
  const r = await post(headers, 'tools/list');
  assert.equal(r.status, 200, `tools/list: ${r.status} ${r.raw.slice(0, 300)}\n${stack.logs()}`);
  return r.result.tools.map((t) => t.name).sort();
}
/** HMAC request signing, version 1 (docs/authentication.md). */
function signedHeaders(body) {
  const ts = Math.floor(Date.now() / 1000);
  const nonce = randomBytes(12).toString('hex');
  const canonical = `POST\n/mcp\n${ts}\n${nonce}\n${createHash('sha256').update(body).digest('hex')}`;
  return {
    'X-App-Id': APP.app_id, 'X-Timestamp': String(ts), 'X-Nonce': nonce,
    'X-Signature': createHmac('sha256', APP.secret).update(canonical).digest('hex'),
  };
}
async function signedToolNames() {
  const body = JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: 'tools/list', params: {} });
  const r = await post(signedHeaders(body), 'tools/list', {}, { body });
  assert.equal(r.status, 200, `signed tools/list: ${r.status} ${r.raw.slice(0, 300)}`);
  return r.result.tools.map((t) => t.name).sort();
}
/** The parameters of a `Bearer k="v", ...` challenge. */
function challenge(value) {
  assert.match(value ?? '', /^Bearer\b/, `WWW-Authenticate: ${value}`);
  return Object.fromEntries([...value.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
}
/** A 401 with error="invalid_token" and resource_metadata, for a request with this token. */
async function assertRefused(token, what) {
  const r = await post(bearer(token), 'tools/list');
  assert.equal(r.status, 401, `${what}: want 401, got ${r.status} ${r.raw.slice(0, 300)}`);
  const c = challenge(r.headers.get('www-authenticate'));
  assert.equal(c.error, 'invalid_token', `${what}: ${r.headers.get('www-authenticate')}`);
  assert.ok(c.resource_metadata?.startsWith(`${base}/.well-known/oauth-protected-resource`), `${what}: ${r.headers.get('www-authenticate')}`);
  return r;
}
const now = () => Math.floor(Date.now() / 1000);
/** Claims of a token as the provider would issue it for this stack, for `mint`. */
const goodClaims = (extra = {}) => ({ aud: resource, sub: 'cc-rs256', client_id: 'cc-rs256', scope: ALL_SCOPES, ...extra });

// ------------------------------------------------------------------ discovery from nothing

test('from nothing: 401 → PRM → authorization server metadata → token for <base>/mcp → the call works', T, async () => {
  const r = await post({}, 'tools/list');
  assert.equal(r.status, 401, `no credentials: ${r.status} ${r.raw.slice(0, 200)}`);
  const c = challenge(r.headers.get('www-authenticate'));
  assert.equal(c.error, undefined, 'no credentials is no invalid_token (RFC 6750 3.1)');
  assert.ok(c.resource_metadata, `resource_metadata: ${r.headers.get('www-authenticate')}`);
  assert.equal(c.scope, 'mcp:tools', 'scope = scopes_supported');

  const prmUrls = [c.resource_metadata, `${base}/.well-known/oauth-protected-resource/mcp`];
  for (const u of new Set(prmUrls)) {
    const res = await fetch(u, { signal: AbortSignal.timeout(5_000) });
    assert.equal(res.status, 200, `GET ${u}`);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const prm = await res.json();
    assert.equal(prm.resource, resource, `${u}: ${JSON.stringify(prm)}`);
    assert.deepEqual(prm.authorization_servers, [provider.issuer]);
    assert.deepEqual(prm.bearer_methods_supported, ['header']);
    assert.deepEqual(prm.scopes_supported, ['mcp:tools']);
  }
  const root = await (await fetch(`${base}/.well-known/oauth-protected-resource`, { signal: AbortSignal.timeout(5_000) })).json();
  assert.equal(root.resource, base, `root PRM: ${JSON.stringify(root)}`);
  assert.deepEqual(root.authorization_servers, [provider.issuer]);

  const prm = await (await fetch(c.resource_metadata, { signal: AbortSignal.timeout(5_000) })).json();
  const as = await (await fetch(`${prm.authorization_servers[0]}/.well-known/oauth-authorization-server`,
    { signal: AbortSignal.timeout(5_000) })).json();
  assert.equal(as.issuer, provider.issuer);
  assert.ok(as.grant_types_supported.includes('client_credentials'));
  const token = await clientCredentialsToken({ issuer: as.issuer }, 'cc-rs256', prm.resource);
  assert.equal(claimsOf(token).aud, resource, 'oidc-provider puts the resource indicator in aud');
  const ok = await post(bearer(token), 'tools/call', { name: 'echo', arguments: { text: 'from nothing' } });
  assert.equal(ok.status, 200, `${ok.status} ${ok.raw.slice(0, 300)}\n${stack.logs()}`);
  assert.deepEqual(ok.result?.structuredContent, { text: 'from nothing' });
});

test('JWT access tokens signed RS256, PS256, ES256 and EdDSA by the provider are accepted', T, async () => {
  for (const [clientId, alg] of Object.entries(CC_CLIENTS)) {
    const token = await clientCredentialsToken(provider, clientId, resource);
    assert.equal(headerOf(token).alg, alg);
    const r = await post(bearer(token), 'tools/call', { name: 'echo', arguments: { text: alg } });
    assert.equal(r.status, 200, `${alg}: ${r.status} ${r.raw.slice(0, 300)}`);
    assert.deepEqual(r.result?.structuredContent, { text: alg }, `${alg}: ${r.raw.slice(0, 300)}`);
  }
});

test('opaque access tokens are introspected (RFC 7662): an active one is accepted, an unknown one is 401', T, async () => {
  const opaque = await clientCredentialsToken(provider, 'cc-opaque', resource);
  assert.equal(opaque.split('.').length, 1, `cc-opaque gets an opaque token: ${opaque}`);
  const r = await post(bearer(opaque), 'tools/call', { name: 'admin_echo', arguments: { text: 'opaque' } });
  assert.equal(r.status, 200, `${r.status} ${r.raw.slice(0, 300)}\n${stack.logs()}`);
  assert.deepEqual(r.result?.structuredContent, { text: 'opaque' }, 'scopes from the introspection answer');
  await assertRefused(`${opaque.slice(0, -3)}zzz`, 'an opaque token the provider does not know (inactive)');
  const other = await clientCredentialsToken(provider, 'cc-opaque', 'http://127.0.0.1:1/mcp');
  await assertRefused(other, 'an active opaque token for another resource (aud)');
});

/** fetch that records every exchange (method, url, form body) for the SDK tests. */
function recorder() {
  const wire = [];
  const fetchFn = async (url, init = {}) => {
    const entry = { method: init.method ?? 'GET', url: String(url) };
    if (init.body instanceof URLSearchParams) entry.form = Object.fromEntries(init.body);
    wire.push(entry);
    const res = await fetch(url, { ...init, signal: init.signal ?? AbortSignal.timeout(10_000) });
    entry.status = res.status;
    return res;
  };
  return { wire, fetchFn };
}
function assertDiscoveryWire(wire, sdk) {
  const first = wire[0];
  assert.equal(first.status, 401, `${sdk}: the first request is refused: ${JSON.stringify(wire)}`);
  const prmGet = wire.find((w) => w.url.startsWith(`${base}/.well-known/oauth-protected-resource`));
  assert.equal(prmGet?.status, 200, `${sdk}: fetched the PRM: ${JSON.stringify(wire)}`);
  const tokenPost = wire.find((w) => w.url === `${provider.issuer}/token`);
  assert.equal(tokenPost?.status, 200, `${sdk}: got a token: ${JSON.stringify(wire)}`);
  assert.equal(tokenPost.form?.resource, resource, `${sdk}: RFC 8707 resource = the PRM's resource`);
}

test('SDK v1 (@modelcontextprotocol/sdk) ClientCredentialsProvider: from nothing to tools/call', T, async () => {
  const { wire, fetchFn } = recorder();
  const authProvider = new CCProviderV1({
    clientId: 'cc-ps256', clientSecret: secretOf('cc-ps256'), scope: ALL_SCOPES, expectedIssuer: provider.issuer,
  });
  const transport = new TransportV1(new URL(resource), { authProvider, fetch: fetchFn });
  const client = new ClientV1({ name: 'mcpq-oauth-v1', version: '1.0.0' });
  try {
    await client.connect(transport);
    assertDiscoveryWire(wire, 'v1');
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('echo') && names.includes('admin_echo'), `v1 tools: ${names}`);
    const r = await client.callTool({ name: 'echo', arguments: { text: 'v1 oauth' } });
    assert.deepEqual(r.structuredContent, { text: 'v1 oauth' });
    assert.equal(headerOf(authProvider.tokens().access_token).alg, 'PS256');
  } finally {
    await client.close().catch(() => {});
  }
});

test('SDK v2 (@modelcontextprotocol/client) ClientCredentialsProvider, 2026-07-28: from nothing to tools/call', T, async () => {
  const { wire, fetchFn } = recorder();
  const authProvider = new CCProviderV2({
    clientId: 'cc-eddsa', clientSecret: secretOf('cc-eddsa'), scope: ALL_SCOPES, expectedIssuer: provider.issuer,
  });
  const transport = new TransportV2(new URL(resource), { authProvider, fetch: fetchFn });
  const client = new ClientV2({ name: 'mcpq-oauth-v2', version: '2.0.0' },
    { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  try {
    await client.connect(transport);
    assertDiscoveryWire(wire, 'v2');
    const names = (await client.listTools()).tools.map((t) => t.name);
    // v2 asks for the scope of the 401 challenge (the specification's scope selection:
    // scopes_supported, "mcp:tools"), not its constructor's: the listing follows the token.
    const granted = claimsOf(authProvider.tokens().access_token).scope.split(' ');
    assert.deepEqual(granted, ['mcp:tools'], `v2 token scope: ${granted}`);
    assert.ok(names.includes('echo') && !names.includes('admin_echo'), `v2 tools: ${names}`);
    const r = await client.callTool({ name: 'echo', arguments: { text: 'v2 oauth' } });
    assert.deepEqual(r.structuredContent, { text: 'v2 oauth' });
    assert.equal(headerOf(authProvider.tokens().access_token).alg, 'EdDSA');
  } finally {
    await client.close().catch(() => {});
  }
});

// ------------------------------------------------------------------ authorization code + PKCE

test('authorization code flow with PKCE (SDK v1 and v2 OAuthClientProvider, login and consent driven headlessly); step-up on 403', T, async () => {
  // v1: connect → 401 → redirectToAuthorization (the pages are driven, the code caught at the
  // redirect URI) → UnauthorizedError; finishAuth(code) exchanges it; a new transport connects.
  const p1 = new HeadlessBrowserProvider({ login: 'alice', issuer: provider.issuer });
  let t1 = new TransportV1(new URL(resource), { authProvider: p1 });
  let c1 = new ClientV1({ name: 'mcpq-oauth-pkce-v1', version: '1.0.0' });
  await assert.rejects(c1.connect(t1), UnauthorizedV1);
  assert.ok(p1.code, `no code at the redirect URI: ${p1.steps.join(', ')}`);
  const au = p1.authorizationUrl;
  assert.equal(au.searchParams.get('code_challenge_method'), 'S256');
  assert.equal(au.searchParams.get('resource'), resource);
  assert.equal(au.searchParams.get('scope'), 'mcp:tools', 'the scope of the 401 challenge');
  await t1.finishAuth(p1.code);
  const token = p1.tokens().access_token;
  assert.equal(claimsOf(token).sub, 'alice');
  assert.equal(claimsOf(token).aud, resource);
  t1 = new TransportV1(new URL(resource), { authProvider: p1 });
  c1 = new ClientV1({ name: 'mcpq-oauth-pkce-v1', version: '1.0.0' });
  try {
    await c1.connect(t1);
    const names = (await c1.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['alice_only', 'echo', 'headers'], 'alice with mcp:tools: users rule yes, admin no');
    const r = await c1.callTool({ name: 'alice_only', arguments: { text: 'alice' } });
    assert.deepEqual(r.structuredContent, { text: 'alice' });
    // Step-up: admin_echo is 403 insufficient_scope; the SDK reads the challenge and asks the
    // authorization server again, for the scopes it names.
    await assert.rejects(c1.callTool({ name: 'admin_echo', arguments: { text: 'up' } }), UnauthorizedV1);
    assert.deepEqual(p1.authorizationUrl.searchParams.get('scope')?.split(' ').sort(), ['mcp:admin', 'mcp:tools'],
      `the step-up authorization request: ${p1.authorizationUrl}`);
    await t1.finishAuth(p1.code);
    assert.deepEqual(claimsOf(p1.tokens().access_token).scope.split(' ').sort(), ['mcp:admin', 'mcp:tools']);
  } finally {
    await c1.close().catch(() => {});
  }
  t1 = new TransportV1(new URL(resource), { authProvider: p1 });
  c1 = new ClientV1({ name: 'mcpq-oauth-pkce-v1', version: '1.0.0' });
  try {
    await c1.connect(t1);
    const r = await c1.callTool({ name: 'admin_echo', arguments: { text: 'up' } });
    assert.deepEqual(r.structuredContent, { text: 'up' }, 'after the step-up the admin tool answers');
  } finally {
    await c1.close().catch(() => {});
  }

  // v2: the same, finishAuth with the callback parameters (code and RFC 9207 iss).
  const p2 = new HeadlessBrowserProvider({ login: 'bob', issuer: provider.issuer });
  let t2 = new TransportV2(new URL(resource), { authProvider: p2 });
  const opts = { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } };
  let c2 = new ClientV2({ name: 'mcpq-oauth-pkce-v2', version: '2.0.0' }, opts);
  await assert.rejects(c2.connect(t2), (err) => /unauthori[sz]ed/i.test(`${err.name} ${err.message}`));
  assert.ok(p2.callback?.get('code'), `no code at the redirect URI: ${p2.steps.join(', ')}`);
  await t2.finishAuth(p2.callback);
  t2 = new TransportV2(new URL(resource), { authProvider: p2 });
  c2 = new ClientV2({ name: 'mcpq-oauth-pkce-v2', version: '2.0.0' }, opts);
  try {
    await c2.connect(t2);
    const names = (await c2.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['echo', 'headers'], 'bob is not alice');
    await assert.rejects(c2.callTool({ name: 'alice_only', arguments: {} }), /Unknown tool/);
  } finally {
    await c2.close().catch(() => {});
  }
});

// ------------------------------------------------------------------ mcp-remote

test('mcp-remote (as Claude Desktop spawns it) with --header Authorization: Bearer <token>', { timeout: 30_000 }, async () => {
  const token = await clientCredentialsToken(provider, 'cc-es256', resource);
  const home = path.join(tmp, 'home');
  mkdirSync(home, { recursive: true });
  const cfg = path.join(tmp, 'claude_desktop_config.json');
  writeFileSync(cfg, JSON.stringify({
    mcpServers: {
      mcpq: {
        command: 'npx',
        args: ['-y', 'mcp-remote', resource, '--transport', 'http-only', '--header', 'Authorization:${AUTH_HEADER}'],
        env: { AUTH_HEADER: `Bearer ${token}` },
      },
    },
  }));
  const deps = process.env.MCPQ_CLIENTS_DEPS;
  assert.ok(deps, 'MCPQ_CLIENTS_DEPS (tests/clients/run.sh sets it)');
  const child = spawn(process.execPath, [path.join(CLIENTS_DIR, 'stdio-host.mjs'), cfg, 'mcpq', deps], {
    env: { ...process.env, HOME: home, npm_config_update_notifier: 'false', NO_UPDATE_NOTIFIER: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err = (err + d).slice(-3000); });
  const code = await new Promise((resolve) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); resolve('timeout'); }, 25_000);
    child.once('exit', (c) => { clearTimeout(timer); resolve(c); });
  });
  assert.equal(code, 0, `stdio-host + mcp-remote: ${out}\n${err}`);
  assert.match(out, /^tools\/list: .*\becho\b/m);
  assert.match(out, /^tools\/call echo: \{"text":"hello"\}$/m);
});

// ------------------------------------------------------------------ refusals

test('refused with 401 invalid_token: expired, wrong audience, wrong issuer, unknown kid, alg none, HS256 with the public key', T, async () => {
  await assertRefused(await mint(provider, { alg: 'RS256', claims: goodClaims({ iat: now() - 7200, exp: now() - 3600 }) }), 'expired');
  await assertRefused(await clientCredentialsToken(provider, 'cc-rs256', 'http://127.0.0.1:1/mcp'),
    'a provider token for another resource (aud http://127.0.0.1:1/mcp)');
  await assertRefused(await clientCredentialsToken(stranger, 'cc-rs256', resource),
    'a token for this resource from another oidc-provider (iss not trusted)');
  await assertRefused(await mint(provider, { alg: 'ES256', claims: goodClaims({ iss: `${provider.issuer}/other` }) }),
    'iss not configured (signed with a key of the JWKS)');
  await assertRefused(await mint(provider, { alg: 'ES256', key: 'fresh', claims: goodClaims() }), 'unknown kid');
  await assertRefused(await mint(provider, { alg: 'none', claims: goodClaims() }), 'alg none');
  await assertRefused(await mint(provider, { alg: 'none', kid: provider.kids.RS256, claims: goodClaims() }), 'alg none with a known kid');
  await assertRefused(await mint(provider, { alg: 'HS256', hmac_with: 'RS256', claims: goodClaims() }),
    'HS256 with the RSA public key (PEM) as the HMAC secret');
  await assertRefused(await mint(provider, { alg: 'HS256', hmac_with: 'EdDSA', claims: goodClaims() }),
    'HS256 with the Ed25519 public key (PEM) as the HMAC secret');
  const valid = await mint(provider, { alg: 'RS256', claims: goodClaims() });
  await assertRefused(`${valid.slice(0, -4)}AAAA`, 'a bad signature');
  // The same minting path with nothing wrong is accepted: the refusals are about the defect.
  const ok = await post(bearer(valid), 'tools/list');
  assert.equal(ok.status, 200, `a minted valid token: ${ok.status} ${ok.raw.slice(0, 300)}`);
});

test('key rotation: the provider restarts with new keys; a token with the new kid is accepted, old-key tokens refused', T, async () => {
  const oldToken = await clientCredentialsToken(provider, 'cc-rs256', resource);
  assert.equal((await post(bearer(oldToken), 'tools/list')).status, 200);
  const oldKids = provider.kids;
  const port = new URL(provider.issuer).port;
  await provider.stop();
  provider = await startProvider({ port: Number(port), keysFile: path.join(tmp, 'keys.json'), rotate: true });
  assert.equal(new URL(provider.issuer).port, port, 'the same issuer');
  assert.notEqual(provider.kids.RS256, oldKids.RS256, 'new kids');
  await new Promise((r) => setTimeout(r, 1100)); // MCPQ_OAUTH_JWKS_MIN_REFRESH_S=1 since the unknown-kid fetch
  const newToken = await clientCredentialsToken(provider, 'cc-rs256', resource);
  assert.equal(headerOf(newToken).kid, provider.kids.RS256);
  const r = await post(bearer(newToken), 'tools/call', { name: 'echo', arguments: { text: 'rotated' } });
  assert.equal(r.status, 200, `new kid after rotation: ${r.status} ${r.raw.slice(0, 300)}\n${stack.logs()}`);
  assert.deepEqual(r.result?.structuredContent, { text: 'rotated' });
  await new Promise((r2) => setTimeout(r2, 1100));
  await assertRefused(oldToken, 'a token signed by a key the issuer no longer publishes');
});

// ------------------------------------------------------------------ per-tool rules

test('insufficient scope: the admin tool is absent from tools/list; calling it is 403 insufficient_scope with the scope to ask for', T, async () => {
  const narrow = await clientCredentialsToken(provider, 'cc-narrow', resource, 'mcp:tools');
  assert.equal(claimsOf(narrow).scope, 'mcp:tools');
  assert.deepEqual(await toolNames(bearer(narrow)), ['echo', 'headers']);
  const r = await post(bearer(narrow), 'tools/call', { name: 'admin_echo', arguments: { text: 'x' } });
  assert.equal(r.status, 403, `${r.status} ${r.raw.slice(0, 300)}`);
  const c = challenge(r.headers.get('www-authenticate'));
  assert.equal(c.error, 'insufficient_scope', r.headers.get('www-authenticate'));
  assert.deepEqual((c.scope ?? '').split(' ').sort(), ['mcp:admin', 'mcp:tools'], `scope: ${r.headers.get('www-authenticate')}`);
  assert.ok(c.resource_metadata?.startsWith(`${base}/.well-known/oauth-protected-resource`), r.headers.get('www-authenticate'));
  assert.ok(r.error, `a JSON-RPC error body: ${r.raw.slice(0, 300)}`);

  const full = await clientCredentialsToken(provider, 'cc-es256', resource);
  assert.deepEqual(await toolNames(bearer(full)), ['admin_echo', 'echo', 'headers']);
  const ok = await post(bearer(full), 'tools/call', { name: 'admin_echo', arguments: { text: 'admin' } });
  assert.deepEqual(ok.result?.structuredContent, { text: 'admin' }, ok.raw.slice(0, 300));
});

test('tools limited to apps, keys or users are hidden from other OAuth clients and answered as unknown tools', T, async () => {
  const rs = await clientCredentialsToken(provider, 'cc-rs256', resource);
  const es = await clientCredentialsToken(provider, 'cc-es256', resource);
  assert.deepEqual(await toolNames(bearer(rs)), ['admin_echo', 'echo', 'headers', 'rs_only']);
  const unknown = await post(bearer(es), 'tools/call', { name: 'no_such_tool', arguments: {} });
  for (const name of ['rs_only', 'key2_only', 'alice_only']) {
    const r = await post(bearer(es), 'tools/call', { name, arguments: {} });
    assert.equal(r.status, unknown.status, `${name}: ${r.raw.slice(0, 300)}`);
    assert.equal(r.error?.code, unknown.error?.code, `${name}: ${r.raw.slice(0, 300)}`);
    assert.equal(r.error?.message.replace(name, '<name>'), unknown.error?.message.replace('no_such_tool', '<name>'));
  }
  const ok = await post(bearer(rs), 'tools/call', { name: 'rs_only', arguments: { text: 'rs' } });
  assert.deepEqual(ok.result?.structuredContent, { text: 'rs' }, ok.raw.slice(0, 300));
});

test('API keys and HMAC apps still work and see only their tools', T, async () => {
  assert.deepEqual(await toolNames(bearer(KEY1.key)), ['echo', 'headers']);
  assert.deepEqual(await toolNames({ 'X-Api-Key': KEY2.key }), ['admin_echo', 'echo', 'headers', 'key2_only']);
  assert.deepEqual(await signedToolNames(), ['echo', 'headers', 'rs_only']);
  const hidden = await post(bearer(KEY1.key), 'tools/call', { name: 'admin_echo', arguments: {} });
  assert.equal(hidden.status, 200, 'an API key lacking a permission gets the unknown-tool answer, not 403');
  assert.match(hidden.error?.message ?? JSON.stringify(hidden.result), /Unknown tool/);
  const ok = await post(bearer(KEY2.key), 'tools/call', { name: 'key2_only', arguments: { text: 'k2' } });
  assert.deepEqual(ok.result?.structuredContent, { text: 'k2' }, ok.raw.slice(0, 300));
});

// ------------------------------------------------------------------ no passthrough

test('the token is never passed on: the http tool\'s service gets no Authorization header and no token bytes', T, async () => {
  const token = await clientCredentialsToken(provider, 'cc-rs256', resource);
  seenByTool.length = 0;
  const r = await post(bearer(token), 'tools/call', { name: 'headers', arguments: { probe: 1 } });
  assert.equal(r.status, 200, `${r.status} ${r.raw.slice(0, 300)}`);
  assert.equal(seenByTool.length, 1, 'the service got the call');
  const seen = seenByTool[0];
  assert.equal(seen.headers.authorization, undefined, `Authorization reached the tool: ${JSON.stringify(seen.headers)}`);
  const everything = `${seen.rawHeaders.join('\n')}\n${seen.body}`;
  const [, payload, sig] = token.split('.');
  for (const part of [token, payload, sig]) assert.ok(!everything.includes(part), 'token bytes reached the tool');
  assert.ok(!JSON.stringify(r.result).includes(sig), 'token bytes in the result');
});

// ------------------------------------------------------------------ CORS

test('CORS: preflight from an allowed Origin; 403 from another; a POST carries the CORS answer headers', T, async () => {
  const pre = await fetch(resource, {
    method: 'OPTIONS',
    headers: {
      Origin: ORIGIN, 'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization, content-type, mcp-session-id, mcp-protocol-version',
    },
    signal: AbortSignal.timeout(5_000),
  });
  assert.equal(pre.status, 204);
  const h = (n) => pre.headers.get(n) ?? '';
  const list = (n) => h(n).toLowerCase().split(',').map((s) => s.trim());
  assert.equal(h('access-control-allow-origin'), ORIGIN);
  assert.ok(list('access-control-allow-methods').includes('post'), h('access-control-allow-methods'));
  for (const name of ['authorization', 'content-type', 'mcp-session-id', 'mcp-protocol-version']) {
    assert.ok(list('access-control-allow-headers').includes(name), `Allow-Headers lacks ${name}: ${h('access-control-allow-headers')}`);
  }
  for (const name of ['mcp-session-id', 'www-authenticate']) {
    assert.ok(list('access-control-expose-headers').includes(name), `Expose-Headers lacks ${name}: ${h('access-control-expose-headers')}`);
  }
  assert.ok(list('vary').includes('origin'), `Vary: ${h('vary')}`);

  const bad = await fetch(resource, {
    method: 'OPTIONS',
    headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST' },
    signal: AbortSignal.timeout(5_000),
  });
  assert.equal(bad.status, 403);
  for (const [name] of bad.headers) assert.ok(!name.startsWith('access-control-'), `a refused Origin got ${name}`);

  const token = await clientCredentialsToken(provider, 'cc-rs256', resource);
  const r = await post({ ...bearer(token), Origin: ORIGIN }, 'tools/list');
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('access-control-allow-origin'), ORIGIN);
  const expose = (r.headers.get('access-control-expose-headers') ?? '').toLowerCase();
  assert.ok(expose.includes('mcp-session-id') && expose.includes('www-authenticate'), expose);
  const unauth = await post({ Origin: ORIGIN }, 'tools/list');
  assert.equal(unauth.status, 401);
  assert.equal(unauth.headers.get('access-control-allow-origin'), ORIGIN, 'a browser client must be able to read the 401');
  for (const res of [pre, r, unauth]) assert.notEqual(res.headers.get('access-control-allow-origin'), '*');
});
