// A stdio upstream MCP server built with the official TypeScript SDK 1.x, for
// tests/integration/test_mcp_stream.c: resource subscriptions and a tool `touch` {uri}
// (lib/subscriptions.mjs) whose notifications/resources/updated go out on stdout, as a stdio
// server's do when a resource it serves changes; and the tools that ask their client mid-call
// (lib/asking.mjs: ask_name, ask_sample, ask_roots, ask_twice) on stdout, for
// tests/integration/test_mcp_relay.c.
//
//   node --import tests/clients/lib/register.mjs tests/clients/sdk-stdio-upstream.mjs
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { addSubscriptions } from './lib/subscriptions.mjs';
import { addAskingV1 } from './lib/asking.mjs';

const server = new McpServer({ name: 'sdk-stdio-upstream', version: '1.0.0' },
    { capabilities: { resources: { subscribe: true } } });
addSubscriptions(server);
addAskingV1(server);
await server.connect(new StdioServerTransport());
