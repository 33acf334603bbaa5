// Resource subscriptions on a test upstream built with the SDK 1.x (sdk-upstream.mjs with
// SDK_UPSTREAM_EXTRAS=stream, sdk-stdio-upstream.mjs), for tests/integration/test_mcp_stream.c:
// resources/subscribe and /unsubscribe, and a tool `touch` {uri} that sends
// notifications/resources/updated when uri is subscribed (as a server does when a resource it
// serves changes). The server must declare resources.subscribe in its capabilities.
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export function addSubscriptions(server) {
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
}
