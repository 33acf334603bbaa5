// ts_sdk_server.mjs: the baseline of docs/benchmarks.md "Targets", the official MCP TypeScript SDK
// (@modelcontextprotocol/sdk 1.x, pinned in bench/package-lock.json) serving the same tools
// as bench/mcpq-bench.json, in-process, over stateless Streamable HTTP with JSON responses.
//
// It follows the SDK's own stateless example: a fresh McpServer and
// StreamableHTTPServerTransport per request (sessionIdGenerator: undefined; the SDK refuses to
// reuse a stateless transport), enableJsonResponse: true, on Node's plain http module. It
// checks "Authorization: Bearer <key>" like mcpq does, so both sides do the same work.
//
//   node ts_sdk_server.mjs --port 18092 [--key bench-key] [--example]
//
// bench/run.sh copies this file next to the npm install (build/bench/npm) so that the bare
// imports resolve there. Prints "READY http://127.0.0.1:<port>"; SIGTERM/SIGINT stop it.
import http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}
const port = Number(arg('--port', '18092'));
const key = arg('--key', 'bench-key');

// Tuning (docs/benchmarks.md, section "throughput", says what and why). The SDK requires a fresh
// McpServer and transport per stateless request (a stateless transport refuses reuse, and a
// Protocol connects to one transport at a time), so that part stays as in the SDK's example.
// What is not per request is built once here: the tools' zod schemas and handlers (the
// example builds them inside its getServer()). bench/sec_throughput.sh also runs node with
// NODE_ENV=production and a larger young generation (--max-semi-space-size), the usual Node
// throughput settings; `--example` builds the schemas per request, as the example does.
const perRequestSchemas = process.argv.includes('--example');
function tools() {
  return {
    echo: {
      config: { description: 'Echo the arguments', inputSchema: { text: z.string() } },
      run: async (args) => ({
        content: [{ type: 'text', text: JSON.stringify(args) }],
        structuredContent: args,
      }),
    },
    sleep: {
      config: {
        description: 'Wait ms milliseconds',
        inputSchema: { ms: z.number().int().min(0).max(60000) },
      },
      run: async ({ ms }) => {
        await new Promise((resolve) => setTimeout(resolve, ms));
        return { content: [{ type: 'text', text: `slept ${ms} ms` }] };
      },
    },
  };
}
const sharedTools = tools();

function makeServer() {
  const server = new McpServer({ name: 'ts-sdk-baseline', version: '1.0.0' });
  const t = perRequestSchemas ? tools() : sharedTools;
  for (const [name, tool] of Object.entries(t))
    server.registerTool(name, tool.config, tool.run);
  return server;
}

const httpServer = http.createServer(async (req, res) => {
  if (req.headers.authorization !== `Bearer ${key}`) {
    res.writeHead(401, { 'Content-Type': 'application/json', 'WWW-Authenticate': 'Bearer' });
    res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Unauthorized"}}');
    return;
  }
  if (req.method !== 'POST' || !req.url.startsWith('/mcp')) {
    res.writeHead(405, { Allow: 'POST' }).end();
    return;
  }
  const server = makeServer();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(req, res);
  } catch (err) {
    if (!res.headersSent) {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}');
    }
  }
});
httpServer.maxConnections = 100000;
httpServer.keepAliveTimeout = 120000;
httpServer.headersTimeout = 130000;
httpServer.requestTimeout = 0;
httpServer.listen({ port, host: '127.0.0.1', backlog: 4096 }, () => {
  console.log(`READY http://127.0.0.1:${port}`);
});
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    httpServer.close();
    httpServer.closeAllConnections();
    process.exit(0);
  });
}
