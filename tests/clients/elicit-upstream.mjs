// A stdio MCP server built with the official TypeScript SDK 1.x that asks its client mid-call,
// for tests/clients/elicit.test.mjs: the mcp executor (a worker's stdio pool) runs it and
// relays its server-to-client requests to the caller (docs/executors.md, "Questions from
// upstreams").
//
//   deploy {build?}  elicitation/create (form: confirm, approver), answers with the result
//   colour {}        sampling/createMessage, answers with the result
//   where {}         roots/list, answers with the result
//
// Each result: a text block and structuredContent {answer, upstream_pid, worker_pid} (the
// worker that spawned it: process.ppid).
//
//   node --import tests/clients/lib/register.mjs tests/clients/elicit-upstream.mjs
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'elicit-upstream', version: '1.0.0' }, { capabilities: { tools: {} } });

function answered(what, answer) {
  return {
    content: [{ type: 'text', text: `${what}: ${JSON.stringify(answer)}` }],
    structuredContent: { answer, upstream_pid: process.pid, worker_pid: process.ppid },
  };
}

server.registerTool('deploy', {
  description: 'Asks the user to confirm a deployment (elicitation/create), then answers with the reply',
  inputSchema: { build: z.string().optional() },
}, async ({ build }) => answered('deploy', await server.server.elicitInput({
  message: `Deploy build ${build ?? '42'} to production?`,
  requestedSchema: {
    type: 'object',
    properties: {
      confirm: { type: 'boolean', title: 'Deploy now?' },
      approver: { type: 'string', title: 'Your name' },
    },
    required: ['confirm', 'approver'],
  },
}, { timeout: 120_000 })));

server.registerTool('colour', {
  description: "Asks the client's model for a colour (sampling/createMessage)",
  inputSchema: {},
}, async () => answered('colour', await server.server.createMessage({
  messages: [{ role: 'user', content: { type: 'text', text: 'Name a colour for the release.' } }],
  maxTokens: 20,
}, { timeout: 120_000 })));

server.registerTool('where', {
  description: "Asks the client for its roots (roots/list)",
  inputSchema: {},
}, async () => answered('where', await server.server.listRoots(undefined, { timeout: 120_000 })));

await server.connect(new StdioServerTransport());
