// A stdio MCP server built with the official TypeScript SDK 2.x (@modelcontextprotocol/server,
// serveStdio: 2026-07-28 through server/discover, or the legacy handshake), for
// tests/integration/test_mcp_stdio.c: the mcp executor's stdio pool talks to it in 2026-07-28.
// Tool `echo` answers "v2 echo: <text>" with structuredContent {text}; the tools that ask
// their client in the multi round-trip pattern (lib/asking.mjs: ask_name, ask_sample,
// ask_roots, ask_twice) for tests/integration/test_mcp_relay.c.
//
//   node --import tests/clients/lib/register.mjs tests/clients/stdio-upstream-v2.mjs
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { addAskingV2 } from './lib/asking.mjs';

serveStdio(() => {
    const server = new McpServer({ name: 'stdio-upstream-v2', version: '1.0.0' },
        { capabilities: { tools: {} } });
    server.registerTool('echo', {
        description: 'Echo the text (official SDK 2.x, stdio)',
        inputSchema: z.object({ text: z.string() }),
    }, async ({ text }) => ({
        content: [{ type: 'text', text: `v2 echo: ${text}` }],
        structuredContent: { text },
    }));
    addAskingV2(server);
    return server;
});
