// An upstream MCP server built with the official TypeScript SDK 1.x (what users run behind
// the gateway's mcp executor), for tests/integration/test_mcp_exec.c: Streamable HTTP with
// sessions (one McpServer per session), Bearer auth, tools `echo` (structuredContent) and
// `fail` (isError); resource `sdk://readme` (text/markdown), template `sdk://notes/{topic}`
// (topic completions), prompt `greet` (arguments name, required, and style, optional, with
// completions), for tests/integration/test_mcp_methods.c. With the mode `fewer` it lists only
// `echo` and `sdk://readme` (an upstream restarted with fewer objects: federation prunes).
//
//   node --import tests/clients/lib/register.mjs tests/clients/sdk-upstream.mjs PORT READY_FILE TOKEN [fewer]
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const [port, readyFile, token, mode] = process.argv.slice(2);
const transports = new Map();

function newServer() {
    const server = new McpServer({ name: 'sdk-upstream', version: '1.0.0' });
    server.registerTool('echo', {
        description: 'Echo the text (official SDK upstream)',
        inputSchema: { text: z.string() },
        outputSchema: { text: z.string() },
    }, async ({ text }) => ({
        content: [{ type: 'text', text: `sdk echo: ${text}` }],
        structuredContent: { text },
    }));
    server.registerResource('readme', 'sdk://readme', {
        title: 'SDK readme',
        mimeType: 'text/markdown',
    }, async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/markdown', text: '# SDK readme' }] }));
    if (mode === 'fewer') return server;
    server.registerTool('fail', {
        description: 'Always fails',
        inputSchema: {},
    }, async () => ({ content: [{ type: 'text', text: 'sdk tool failed' }], isError: true }));
    const topics = ['kafka', 'kubernetes', 'redis'];
    server.registerResource('notes', new ResourceTemplate('sdk://notes/{topic}', {
        list: undefined,
        complete: { topic: (value) => topics.filter((t) => t.startsWith(value)) },
    }), { mimeType: 'text/plain' }, async (uri, { topic }) => ({
        contents: [{ uri: uri.href, mimeType: 'text/plain', text: `notes on ${topic}` }],
    }));
    const styles = ['formal', 'friendly', 'funny'];
    server.registerPrompt('greet', {
        description: 'Greet someone',
        argsSchema: {
            name: z.string(),
            style: completable(z.string().optional(),
                (value) => styles.filter((s) => s.startsWith(value ?? ''))),
        },
    }, async ({ name, style }) => ({
        description: 'A greeting',
        messages: [{ role: 'user', content: { type: 'text', text: `Greet ${name}${style ? ` in a ${style} way` : ''}` } }],
    }));
    return server;
}

function rpcError(res, status, message) {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } }));
}

const httpServer = http.createServer(async (req, res) => {
    if (req.headers.authorization !== `Bearer ${token}`) return rpcError(res, 401, 'Unauthorized');
    const chunks = [];
    for await (const c of req) chunks.push(c);
    let body;
    try {
        body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    } catch {
        return rpcError(res, 400, 'Parse error');
    }
    const sid = req.headers['mcp-session-id'];
    let transport = sid ? transports.get(sid) : undefined;
    if (sid && !transport) return rpcError(res, 404, 'Session not found');
    if (!transport) {
        if (req.method !== 'POST' || !isInitializeRequest(body))
            return rpcError(res, 400, 'Bad Request: Server not initialized');
        transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: (id) => transports.set(id, transport),
        });
        transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
        await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
});

httpServer.listen(Number(port), '127.0.0.1', () => writeFileSync(readyFile, 'ready\n'));
process.on('SIGTERM', () => { httpServer.close(); process.exit(0); });
