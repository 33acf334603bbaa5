// An upstream MCP server that speaks exactly ONE protocol version, built with the official
// TypeScript SDKs, for the era-pair matrix (tests/clients/eras.test.mjs): what a user runs
// behind mcpq's `mcp` executor, each era as its SDK serves it.
//
//   node --import ./tests/clients/lib/register.mjs tests/clients/era-upstream.mjs ERA [PORT]
//
// It listens on 127.0.0.1:PORT (default 0: any free port) and prints
// `READY http://127.0.0.1:<port>/mcp` on stdout once listening.
//
// ERA 2025-03-26, 2025-06-18 or 2025-11-25: the SDK v1 (@modelcontextprotocol/sdk) over
// Streamable HTTP with sessions. The SDK would answer any version it knows; pinned here, an
// initialize names ERA in its answer whatever the client asked (what a server that knows
// only ERA answers), and any later request whose MCP-Protocol-Version header is not ERA gets
// 400. ERA 2026-07-28: the SDK v2 (@modelcontextprotocol/server) in modern-only mode
// (createMcpHandler with legacy: 'reject'): stateless, no initialize, server/discover.
//
// It serves, on every era:
//   tool `echo` {text}        content [text "echo from a ERA upstream: <text>"]; from 2025-06-18
//                             on also a resource_link to era://info and structuredContent
//                             {text, era} (what a server of that era may send)
//   resource era://info       text/plain "upstream era ERA"
//   prompt `greet` {name}     one user text message "Hello <name> from a ERA upstream";
//                             `name` completes from alice, albert, bob
// GET /seen answers the MCP-Protocol-Version headers of the requests it served (JSON array,
// distinct; a refused probe in another version is not counted), so a test can tell which
// version mcpq really spoke. SIGTERM stops it.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';

const [era, wantPort = '0'] = process.argv.slice(2);
let port = 0;
const ERAS = ['2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'];
if (!ERAS.includes(era)) {
    console.error(`era-upstream: ERA must be one of ${ERAS.join(', ')}`);
    process.exit(2);
}
const NAMES = ['alice', 'albert', 'bob'];
const seen = new Set();

function echoResult(text) {
    const r = { content: [{ type: 'text', text: `echo from a ${era} upstream: ${text}` }] };
    if (era >= '2025-06-18') {
        r.content.push({ type: 'resource_link', uri: 'era://info', name: 'info', mimeType: 'text/plain' });
        r.structuredContent = { text, era };
    }
    return r;
}

/* Registers the tool, the resource and the prompt on an McpServer of either SDK (the v1
 * SDK takes a prompt's arguments as a raw shape, the v2 SDK as a z.object). */
function populate(server, completable, rawShape = false) {
    const args = {
        name: completable(z.string(), (value) => NAMES.filter((n) => n.startsWith(value ?? ''))),
    };
    server.registerTool('echo', {
        description: `Echo the text (a ${era} upstream)`,
        inputSchema: z.object({ text: z.string() }),
    }, async ({ text }) => echoResult(text));
    server.registerResource('info', 'era://info', {
        description: `What this upstream speaks (${era})`,
        mimeType: 'text/plain',
    }, async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: `upstream era ${era}` }] }));
    server.registerPrompt('greet', {
        description: `A greeting from a ${era} upstream`,
        argsSchema: rawShape ? args : z.object(args),
    }, async ({ name }) => ({
        messages: [{ role: 'user', content: { type: 'text', text: `Hello ${name} from a ${era} upstream` } }],
    }));
}

function jsonError(res, status, message) {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } }));
}

async function readBody(req) {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    return Buffer.concat(chunks);
}

let handle;
if (era === '2026-07-28') {
    const { McpServer, createMcpHandler, completable } = await import('@modelcontextprotocol/server');
    const handler = createMcpHandler(() => {
        const server = new McpServer({ name: `era-upstream-${era}`, version: '1.0.0' });
        populate(server, completable);
        return server;
    }, { legacy: 'reject' });
    handle = async (req, res, raw) => {
        const headers = new Headers();
        for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
        const init = { method: req.method, headers };
        if (req.method !== 'GET' && req.method !== 'HEAD') init.body = raw;
        const response = await handler.fetch(new Request(`http://127.0.0.1:${port}${req.url}`, init));
        if (response.status < 400 && req.headers['mcp-protocol-version']) seen.add(req.headers['mcp-protocol-version']);
        res.writeHead(response.status, Object.fromEntries(response.headers));
        if (!response.body) return res.end();
        for await (const chunk of response.body) res.write(chunk);
        res.end();
    };
} else {
    const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
    const { completable } = await import('@modelcontextprotocol/sdk/server/completable.js');
    const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
    const { isInitializeRequest } = await import('@modelcontextprotocol/sdk/types.js');
    const transports = new Map();
    handle = async (req, res, raw) => {
        let body;
        try {
            body = raw.length ? JSON.parse(raw.toString('utf8')) : undefined;
        } catch {
            return jsonError(res, 400, 'Parse error');
        }
        const init = req.method === 'POST' && isInitializeRequest(body);
        if (init) body.params.protocolVersion = era; // pinned: the answer names ERA
        else if (req.headers['mcp-protocol-version'] !== era)
            return jsonError(res, 400, `Bad Request: Unsupported protocol version (this server speaks ${era} only)`);
        else seen.add(era);
        const sid = req.headers['mcp-session-id'];
        let transport = sid ? transports.get(sid) : undefined;
        if (sid && !transport) return jsonError(res, 404, 'Session not found');
        if (!transport) {
            if (!init) return jsonError(res, 400, 'Bad Request: Server not initialized');
            transport = new StreamableHTTPServerTransport({
                sessionIdGenerator: () => randomUUID(),
                onsessioninitialized: (id) => transports.set(id, transport),
            });
            transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
            const server = new McpServer({ name: `era-upstream-${era}`, version: '1.0.0' });
            populate(server, completable, true);
            await server.connect(transport);
        }
        await transport.handleRequest(req, res, body);
    };
}

const httpServer = http.createServer(async (req, res) => {
    if (req.method === 'GET' && req.url === '/seen') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify([...seen]));
    }
    try {
        await handle(req, res, await readBody(req));
    } catch (err) {
        if (!res.headersSent) jsonError(res, 500, `era-upstream: ${err.message}`);
        else res.destroy();
    }
});

httpServer.listen(Number(wantPort), '127.0.0.1', () => {
    port = httpServer.address().port;
    process.stdout.write(`READY http://127.0.0.1:${port}/mcp\n`);
});
process.on('SIGTERM', () => { httpServer.close(); process.exit(0); });
