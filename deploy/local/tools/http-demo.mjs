#!/usr/bin/env node
// A tiny HTTP tool service for the demo config's `add` and `hello` tools (docs/executors.md,
// "http").
//   node deploy/local/tools/http-demo.mjs        # listens on 127.0.0.1:8099 (DEMO_HTTP_PORT)
// POST /tool/add with the call envelope as JSON → a CallToolResult with a+b.
// POST /tool/hello asks the caller's name (docs/tools.md, "Asking the user"): without
// inputResponses it answers {"resultType": "input_required", "inputRequests": {"name": an
// elicitation}, "requestState"}; called again with inputResponses.name and that requestState,
// it greets (or says the user declined, or that it could not ask).
// Nothing else: 404. Node >= 20, no npm packages.
import http from 'node:http';

const port = Number(process.env.DEMO_HTTP_PORT || 8099);
const MAX_BODY = 1 << 20;

const server = http.createServer((req, res) => {
  const send = (status, obj) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(obj));
  };
  const tools = { '/tool/add': add, '/tool/hello': hello };
  const tool = req.method === 'POST' ? tools[req.url] : undefined;
  if (!tool) return send(404, { error: 'not found' });
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (d) => {
    body += d;
    if (body.length > MAX_BODY) req.destroy();
  });
  req.on('end', () => {
    let envelope;
    try {
      envelope = JSON.parse(body);
    } catch {
      return send(400, { error: 'body is not JSON' });
    }
    send(200, tool(envelope));
  });
});

function text(t, isError = false) {
  return { content: [{ type: 'text', text: t }], isError };
}

function add(envelope) {
  const { a, b } = envelope.arguments || {};
  if (!Number.isInteger(a) || !Number.isInteger(b)) return text('a and b must be integers', true);
  return { ...text(`${a}+${b}=${a + b}`), structuredContent: { sum: a + b } };
}

const HELLO_STATE = 'hello-v1'; // opaque to the caller; a real service would sign what it needs

function hello(envelope) {
  const answer = envelope.inputResponses?.name;
  if (!answer || envelope.requestState !== HELLO_STATE) {
    return {
      resultType: 'input_required',
      inputRequests: {
        name: {
          method: 'elicitation/create',
          params: {
            message: 'What is your name?',
            requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
          },
        },
      },
      requestState: HELLO_STATE,
    };
  }
  if (answer.error) return text(`could not ask your name: ${answer.error.message}`, true);
  if (answer.action !== 'accept') return text('Hello, whoever you are!');
  return text(`Hello, ${answer.content?.name ?? 'stranger'}!`);
}
server.listen(port, '127.0.0.1', () => console.error(`http-demo: listening on http://127.0.0.1:${port}`));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)));
