// Resource subscriptions on a test upstream built with the SDK 1.x (sdk-upstream.mjs with
// SDK_UPSTREAM_EXTRAS=stream, sdk-stdio-upstream.mjs), for tests/integration/test_mcp_stream.c:
// resources/subscribe and /unsubscribe, and a tool `touch` {uri} that sends
// notifications/resources/updated to every session (of this process) that subscribed to uri,
// whichever session the touch came from (as a server does when a resource it serves changes:
// two workers holding a session each both hear of it if both subscribed). The server must
// declare resources.subscribe in its capabilities.
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/** uri -> the servers (one per session) subscribed to it. */
const subscribers = new Map();

export function addSubscriptions(server) {
    server.server.setRequestHandler(SubscribeRequestSchema, async (req) => {
        if (!subscribers.has(req.params.uri)) subscribers.set(req.params.uri, new Set());
        subscribers.get(req.params.uri).add(server);
        return {};
    });
    server.server.setRequestHandler(UnsubscribeRequestSchema, async (req) => {
        subscribers.get(req.params.uri)?.delete(server);
        return {};
    });
    server.registerTool('touch', {
        description: 'Says that a resource changed (to its subscribers)',
        inputSchema: { uri: z.string() },
    }, async ({ uri }) => {
        const subs = [...(subscribers.get(uri) ?? [])];
        // a session gone meanwhile (its transport closed) cannot be told: skipped
        await Promise.all(subs.map((s) => s.server.sendResourceUpdated({ uri }).catch(() => {})));
        return { content: [{ type: 'text', text: `touched ${uri}${subs.length ? '' : ' (no subscriber)'}` }] };
    });
}
