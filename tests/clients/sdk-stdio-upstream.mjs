// A stdio upstream MCP server built with the official TypeScript SDK 1.x, for
// tests/integration/test_mcp_stream.c: resource subscriptions (resources/subscribe,
// /unsubscribe) and a tool `touch` {uri} that sends notifications/resources/updated for a
// subscribed uri on stdout, as a stdio server does when a resource it serves changes.
//
//   node --import tests/clients/lib/register.mjs tests/clients/sdk-stdio-upstream.mjs
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const server = new McpServer({ name: 'sdk-stdio-upstream', version: '1.0.0' },
    { capabilities: { resources: { subscribe: true } } });
const subscribed = new Set();
server.server.setRequestHandler(SubscribeRequestSchema, async (req) => {
    subscribed.add(req.params.uri);
    return {};
});
server.server.setRequestHandler(UnsubscribeRequestSchema, async (req) => {
    subscribed.delete(req.params.uri);
    return {};
});
server.registerTool('touch', {
    description: 'Says that a resource changed (to its subscribers)',
    inputSchema: { uri: z.string() },
}, async ({ uri }) => {
    const known = subscribed.has(uri);
    if (known) await server.server.sendResourceUpdated({ uri });
    return { content: [{ type: 'text', text: `touched ${uri}${known ? '' : ' (no subscriber)'}` }] };
});
await server.connect(new StdioServerTransport());
