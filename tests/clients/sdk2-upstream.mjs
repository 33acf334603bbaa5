// An upstream MCP server built with the official TypeScript SDK 2.x (@modelcontextprotocol/server)
// that speaks 2026-07-28 only (createMcpHandler, legacy: 'reject': stateless, server/discover,
// subscriptions/listen), for tests/integration/test_mcp_stream.c: Bearer auth, tools `slow`
// (progress every 200 ms for 1 s) and `touch` {uri} (a resource update on the handler's event
// bus, which reaches the subscriptions/listen streams that name the uri), and the tools that
// ask their client in the multi round-trip pattern (lib/asking.mjs: ask_name, ask_sample,
// ask_roots, ask_twice answer input_required first) for tests/integration/test_mcp_relay.c.
// Each JSON-RPC method received is printed as `method <name>` on stdout.
//
//   node --import tests/clients/lib/register.mjs tests/clients/sdk2-upstream.mjs PORT READY_FILE TOKEN
import http from 'node:http';
import { writeFileSync } from 'node:fs';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { addAskingV2 } from './lib/asking.mjs';

const [port, readyFile, token] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const handler = createMcpHandler(() => {
    const server = new McpServer({ name: 'sdk2-upstream', version: '1.0.0' },
        { capabilities: { resources: { subscribe: true } } });
    server.registerTool('slow', {
        description: 'Progress every 200 ms for 1 s, then done',
        inputSchema: z.object({}),
    }, async (_args, ctx) => {
        const progressToken = ctx.mcpReq?._meta?.progressToken ?? ctx._meta?.progressToken;
        for (let i = 1; i <= 5; i++) {
            if (progressToken !== undefined)
                await ctx.mcpReq.notify({ method: 'notifications/progress',
                    params: { progressToken, progress: i, total: 5 } });
            await sleep(200);
        }
        return { content: [{ type: 'text', text: 'slow done' }] };
    });
    server.registerTool('touch', {
        description: 'Says that a resource changed (to its listeners)',
        inputSchema: z.object({ uri: z.string() }),
    }, async ({ uri }) => {
        handler.notify.resourceUpdated(uri);
        return { content: [{ type: 'text', text: `touched ${uri}` }] };
    });
    addAskingV2(server);
    return server;
}, { legacy: 'reject' });

async function readBody(req) {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    return Buffer.concat(chunks);
}

const httpServer = http.createServer(async (req, res) => {
    if (req.headers.authorization !== `Bearer ${token}`) {
        res.writeHead(401, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Unauthorized' } }));
    }
    const raw = await readBody(req);
    try {
        const m = JSON.parse(raw.toString('utf8'));
        if (m && typeof m.method === 'string') console.log(`method ${m.method}`);
    } catch { /* the handler answers */ }
    const headers = new Headers();
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
    const init = { method: req.method, headers };
    if (req.method !== 'GET' && req.method !== 'HEAD') init.body = raw;
    const ac = new AbortController();
    res.on('close', () => ac.abort());
    init.signal = ac.signal;
    const response = await handler.fetch(new Request(`http://127.0.0.1:${port}${req.url}`, init));
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (!response.body) return res.end();
    try {
        for await (const chunk of response.body) res.write(chunk);
    } catch { /* the client went away */ }
    res.end();
});

httpServer.listen(Number(port), '127.0.0.1', () => writeFileSync(readyFile, 'ready\n'));
process.on('SIGTERM', () => { httpServer.close(); process.exit(0); });
