// A real OAuth 2.1 / OpenID authorization server for the OAuth tests (tests/clients/oauth.test.mjs):
// oidc-provider (npm, pinned in tests/clients/package-lock.json) on loopback.
//
//   node --import tests/clients/lib/register.mjs tests/clients/oidc/provider.mjs \
//        [--port N] [--keys FILE] [--rotate]
//
// It listens on 127.0.0.1:N (0: a free port) with issuer http://127.0.0.1:<port>, and a control
// server on another free loopback port; when both listen it prints one JSON line on stdout:
//   {"issuer": "http://127.0.0.1:P", "control": "http://127.0.0.1:Q", "kids": {"RS256": "...", ...}}
// SIGTERM/SIGINT stop it (exit 0).
//
// Keys: one signing key per algorithm (RS256 and PS256: RSA 2048; ES256: P-256; EdDSA:
// Ed25519), each JWK with its own "alg" and a random kid. --keys FILE reads them from FILE when
// it exists, else generates them and writes FILE; --rotate always generates a new set (new
// kids) and overwrites FILE, so a restart with --rotate on the same --port serves a rotated JWKS.
//
// Clients (all secrets are "secret-<client_id>"):
//   cc-rs256, cc-ps256, cc-es256, cc-eddsa  confidential, client_credentials, scopes
//                                          "mcp:tools mcp:admin"; their access tokens are JWTs
//                                          signed with the alg in their name
//   cc-narrow                              like cc-es256, but only scope "mcp:tools"
//   cc-opaque                              like cc-rs256, but its access tokens are opaque
//                                          (for token introspection, RFC 7662)
//   mcpq-introspect                        confidential, no grant: the resource server's
//                                          credentials for the introspection endpoint
//   mcp-public                             public (PKCE, no secret), authorization_code with
//                                          redirect URI http://127.0.0.1/callback; tokens RS256
// Access tokens (features.resourceIndicators): for a `resource` parameter R, a JWT (typ at+jwt)
// with aud = R, scope = the granted subset of "mcp:tools mcp:admin", client_id, sub (the
// account for the authorization code flow, the client id for client_credentials), 300 s life.
// devInteractions serve the login and consent forms (any login, any password).
//
// Control server (for tokens no honest authorization server would issue):
//   POST /mint {"alg": "RS256"|"PS256"|"ES256"|"EdDSA"|"none"|"HS256",
//               "claims": {...}          merged over iss, iat, exp (+300 s), jti
//               "kid": "..."             header kid (default: the key's kid; null: none)
//               "key": "provider"|"fresh" sign with the provider's key (default) or with a new
//                                         key of the same type that the JWKS does not have
//               "hmac_with": "RS256"}    HS256 only: the HMAC secret is the PEM (SPKI) public
//                                         key of that provider key, kid that key's kid
//     → {"token": "..."}
//   GET /jwks → the public JWKS (same as the issuer's jwks_uri)
import crypto from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { parseArgs } from 'node:util';
import Provider from 'oidc-provider';

// stdout carries only the JSON line; oidc-provider's notices (console.info) go to stderr.
console.info = (...args) => console.error(...args);

const { values: opts } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    keys: { type: 'string' },
    rotate: { type: 'boolean', default: false },
  },
});

const ALGS = ['RS256', 'PS256', 'ES256', 'EdDSA'];
const CLIENT_ALG = {
  'cc-rs256': 'RS256', 'cc-ps256': 'PS256', 'cc-es256': 'ES256', 'cc-eddsa': 'EdDSA',
  'cc-narrow': 'ES256', 'mcp-public': 'RS256',
};
const RESOURCE_SCOPE = 'mcp:tools mcp:admin';
const REDIRECT_URI = 'http://127.0.0.1/callback';

function newKey(alg, kidPrefix = alg) {
  let pair;
  if (alg === 'RS256' || alg === 'PS256') pair = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  else if (alg === 'ES256') pair = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  else if (alg === 'EdDSA') pair = crypto.generateKeyPairSync('ed25519');
  else throw new Error(`no key type for ${alg}`);
  const kid = `${kidPrefix}-${crypto.randomBytes(6).toString('hex')}`;
  return { ...pair.privateKey.export({ format: 'jwk' }), kid, alg, use: 'sig' };
}

function loadKeys() {
  if (opts.keys && existsSync(opts.keys) && !opts.rotate) {
    return JSON.parse(readFileSync(opts.keys, 'utf8')).keys;
  }
  const keys = ALGS.map((alg) => newKey(alg));
  if (opts.keys) writeFileSync(opts.keys, JSON.stringify({ keys }), { mode: 0o600 });
  return keys;
}

const privateJwks = loadKeys();
const keyByAlg = Object.fromEntries(privateJwks.map((k) => [k.alg, k]));
const publicJwk = (jwk) => {
  const pub = crypto.createPublicKey({ key: jwk, format: 'jwk' }).export({ format: 'jwk' });
  return { ...pub, kid: jwk.kid, alg: jwk.alg, use: 'sig' };
};

// ---------------------------------------------------------------- the authorization server
const server = http.createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen({ port: Number(opts.port), host: '127.0.0.1' }, resolve);
});
const issuer = `http://127.0.0.1:${server.address().port}`;

const ccClient = (id, scope = RESOURCE_SCOPE) => ({
  client_id: id,
  client_secret: `secret-${id}`,
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
  token_endpoint_auth_method: 'client_secret_basic',
  scope,
});

const provider = new Provider(issuer, {
  clients: [
    ccClient('cc-rs256'), ccClient('cc-ps256'), ccClient('cc-es256'), ccClient('cc-eddsa'),
    ccClient('cc-narrow', 'mcp:tools'), ccClient('cc-opaque'),
    {
      client_id: 'mcpq-introspect', client_secret: 'secret-mcpq-introspect',
      grant_types: [], response_types: [], redirect_uris: [], token_endpoint_auth_method: 'client_secret_basic',
    },
    {
      client_id: 'mcp-public',
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [REDIRECT_URI],
      scope: `openid offline_access ${RESOURCE_SCOPE}`,
    },
  ],
  jwks: { keys: privateJwks },
  cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
  scopes: ['openid', 'offline_access', 'mcp:tools', 'mcp:admin'],
  findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  pkce: { required: () => true },
  ttl: {
    AccessToken: 300, AuthorizationCode: 60, ClientCredentials: 300, Grant: 3600, IdToken: 300,
    Interaction: 300, RefreshToken: 3600, Session: 3600,
  },
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    introspection: {
      enabled: true,
      allowedPolicy: (ctx, client, token) => client.clientId === 'mcpq-introspect' || token.clientId === client.clientId,
    },
    resourceIndicators: {
      enabled: true,
      defaultResource: (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource, client) => ({
        scope: RESOURCE_SCOPE,
        audience: resource,
        accessTokenFormat: client.clientId === 'cc-opaque' ? 'opaque' : 'jwt',
        accessTokenTTL: 300,
        jwt: { sign: { alg: CLIENT_ALG[client.clientId] ?? 'RS256' } },
      }),
    },
  },
});
provider.on('server_error', (_ctx, err) => console.error(`provider: server_error ${err.stack ?? err}`));
server.on('request', provider.callback());

// ---------------------------------------------------------------- the control server
const b64u = (buf) => Buffer.from(buf).toString('base64url');

function mint({ alg = 'RS256', claims = {}, kid, key = 'provider', hmac_with: hmacWith } = {}) {
  const now = Math.floor(Date.now() / 1000);
  const payload = { iss: issuer, iat: now, exp: now + 300, jti: crypto.randomUUID(), ...claims };
  for (const [k, v] of Object.entries(payload)) if (v === null) delete payload[k];
  let jwk;
  let secret;
  if (alg === 'HS256') {
    const src = keyByAlg[hmacWith ?? 'RS256'];
    if (!src) throw new Error(`hmac_with: no provider key for ${hmacWith}`);
    secret = crypto.createPublicKey({ key: src, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
    jwk = src;
  } else if (alg !== 'none') {
    jwk = key === 'fresh' ? newKey(alg, 'unknown') : keyByAlg[alg];
    if (!jwk) throw new Error(`no key for alg ${alg}`);
  }
  const header = { alg, typ: 'at+jwt' };
  const headerKid = kid === undefined ? jwk?.kid : kid;
  if (headerKid !== null && headerKid !== undefined) header.kid = headerKid;
  const input = `${b64u(JSON.stringify(header))}.${b64u(JSON.stringify(payload))}`;
  let sig;
  if (alg === 'none') {
    sig = Buffer.alloc(0);
  } else if (alg === 'HS256') {
    sig = crypto.createHmac('sha256', secret).update(input).digest();
  } else {
    const pk = crypto.createPrivateKey({ key: jwk, format: 'jwk' });
    if (alg === 'RS256') sig = crypto.sign('sha256', Buffer.from(input), pk);
    else if (alg === 'PS256') {
      sig = crypto.sign('sha256', Buffer.from(input), {
        key: pk, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 32,
      });
    } else if (alg === 'ES256') sig = crypto.sign('sha256', Buffer.from(input), { key: pk, dsaEncoding: 'ieee-p1363' });
    else if (alg === 'EdDSA') sig = crypto.sign(null, Buffer.from(input), pk);
    else throw new Error(`cannot sign ${alg}`);
  }
  return `${input}.${b64u(sig)}`;
}

const control = http.createServer((req, res) => {
  const send = (status, obj) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(obj));
  };
  if (req.method === 'GET' && req.url === '/jwks') return send(200, { keys: privateJwks.map(publicJwk) });
  if (req.method !== 'POST' || req.url !== '/mint') return send(404, { error: 'not found' });
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (d) => {
    body += d;
    if (body.length > 65536) req.destroy();
  });
  req.on('end', () => {
    try {
      send(200, { token: mint(JSON.parse(body || '{}')) });
    } catch (err) {
      send(400, { error: err.message });
    }
  });
});
await new Promise((resolve, reject) => {
  control.once('error', reject);
  control.listen({ port: 0, host: '127.0.0.1' }, resolve);
});

process.stdout.write(`${JSON.stringify({
  issuer,
  control: `http://127.0.0.1:${control.address().port}`,
  kids: Object.fromEntries(privateJwks.map((k) => [k.alg, k.kid])),
})}\n`);

function stop() {
  server.closeAllConnections?.();
  control.closeAllConnections?.();
  let open = 2;
  const done = () => { if (--open === 0) process.exit(0); };
  server.close(done);
  control.close(done);
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
