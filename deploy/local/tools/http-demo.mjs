#!/usr/bin/env node
// A tiny HTTP tool service for the demo config's `add` tool (docs/executors.md, "http").
//   node deploy/local/tools/http-demo.mjs        # listens on 127.0.0.1:8099 (DEMO_HTTP_PORT)
// POST /tool/add with the call envelope as JSON → a CallToolResult with a+b.
// Nothing else: 404. Node >= 20, no npm packages.
import http from 'node:http';

const port = Number(process.env.DEMO_HTTP_PORT || 8099);
const MAX_BODY = 1 << 20;

const server = http.createServer((req, res) => {
  const send = (status, obj) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(obj));
  };
  if (req.method !== 'POST' || req.url !== '/tool/add') return send(404, { error: 'not found' });
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (d) => {
    body += d;
    if (body.length > MAX_BODY) req.destroy();
  });
  req.on('end', () => {
    let args;
    try {
      args = JSON.parse(body).arguments || {};
    } catch {
      return send(400, { error: 'body is not JSON' });
    }
    const { a, b } = args;
    if (!Number.isInteger(a) || !Number.isInteger(b)) {
      return send(200, { content: [{ type: 'text', text: 'a and b must be integers' }], isError: true });
    }
    send(200, { content: [{ type: 'text', text: `${a}+${b}=${a + b}` }], structuredContent: { sum: a + b }, isError: false });
  });
});
server.listen(port, '127.0.0.1', () => console.error(`http-demo: listening on http://127.0.0.1:${port}`));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)));
