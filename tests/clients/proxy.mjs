#!/usr/bin/env node
// A small auth-adding reverse proxy for clients that cannot send an Authorization header
// (the MCP conformance CLI):
//
//   node tests/clients/proxy.mjs --target http://127.0.0.1:8080 [--target URL ...] --key KEY [--port 0]
//
// Listens on 127.0.0.1 (port 0: any free one), prints `PROXY http://127.0.0.1:<port>` once
// listening, and forwards every request to a target with `Authorization: Bearer KEY` set.
// With several targets (the ingress replicas of one stack) the requests go round-robin, one
// request each in turn, so one client's session, its calls and its streams land on different
// replicas; on SIGTERM it prints `PROXY SERVED <n1> <n2> ...` (requests sent to each target,
// in --target order) before it exits.
// Everything else passes through unchanged, Host and Origin included (so the gateway's
// DNS-rebinding checks see what the client sent). Bodies stream in both directions without
// buffering: each chunk of a response (an SSE frame, say) is written on as it arrives. One
// upstream connection per request (no keep-alive pool): when the client goes away, the
// upstream connection is closed too, which the gateway treats as cancellation.
// SIGTERM/SIGINT stop it.
import http from 'node:http';

function args(name) {
  const out = [];
  process.argv.forEach((a, i) => { if (a === `--${name}`) out.push(process.argv[i + 1]); });
  return out;
}

function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) {
    if (def === undefined) {
      console.error(`proxy: --${name} is required`);
      process.exit(2);
    }
    return def;
  }
  return process.argv[i + 1];
}

const targets = args('target').map((t) => new URL(t));
if (!targets.length) {
  console.error('proxy: --target is required');
  process.exit(2);
}
const served = targets.map(() => 0);
let next = 0;
const key = arg('key');
const port = Number(arg('port', '0'));

// Hop-by-hop headers (RFC 9110 section 7.6.1) are not forwarded.
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate',
  'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

function forwardHeaders(raw) {
  const out = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (HOP.has(name)) continue;
    if (out[name] === undefined) out[name] = raw[i + 1];
    else out[name] = [].concat(out[name], raw[i + 1]);
  }
  return out;
}

const server = http.createServer((req, res) => {
  req.socket.setNoDelay(true);
  const headers = forwardHeaders(req.rawHeaders);
  headers.authorization = `Bearer ${key}`;
  const at = next;
  next = (next + 1) % targets.length;
  served[at]++;
  const target = targets[at];
  const upstream = http.request({
    host: target.hostname,
    port: target.port,
    method: req.method,
    path: req.url,
    headers, // includes the client's own Host header
    agent: false,
  });
  upstream.on('socket', (s) => s.setNoDelay(true));
  upstream.on('response', (up) => {
    res.writeHead(up.statusCode, up.statusMessage, forwardHeaders(up.rawHeaders));
    res.flushHeaders();
    up.on('data', (chunk) => res.write(chunk));
    up.on('end', () => res.end());
    up.on('error', () => res.destroy());
    up.on('aborted', () => res.destroy());
  });
  upstream.on('error', (err) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(502, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32603, message: `proxy: ${err.message}` } }));
  });
  req.pipe(upstream);
  // The client closed its connection before the whole response went out: close upstream too.
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
});

server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`PROXY http://127.0.0.1:${server.address().port}\n`);
});
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    process.stdout.write(`PROXY SERVED ${served.join(' ')}\n`);
    server.close();
    server.closeAllConnections?.();
    process.exit(0);
  });
}
