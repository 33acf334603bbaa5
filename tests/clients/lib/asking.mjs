// Tools that ask their client mid-call, for the upstream servers of tests/clients (what the
// mcp executor relays: docs/executors.md, "Questions from upstreams"). The same names in
// both SDKs, so a test drives them alike whatever the upstream's era:
//   ask_name     an elicitation (form: {name: string}, required) → "hello <name>", or
//                "the user declined" / "the user cancelled"
//   ask_sample   a sampling request ("What is 2+2?", maxTokens 10) → "the model said: <text>"
//   ask_roots    roots/list → "roots: <uri> <uri> ..."
//   ask_twice    two elicitations at once (first {a}, second {b}) → "a=<a> b=<b>"
// SDK 1.x (addAskingV1): server-to-client requests sent through extra.sendRequest, so they
// travel on the call's own SSE stream (HTTP) or stdout (stdio) and relate to the call.
// SDK 2.x (addAskingV2, 2026-07-28): the multi round-trip pattern, an InputRequiredResult
// with the requests, then the retried call's inputResponses (basic/patterns/mrtr.mdx).
import { z } from 'zod';
import { ElicitResultSchema, CreateMessageResultSchema, ListRootsResultSchema } from
    '@modelcontextprotocol/sdk/types.js';
import { inputRequired } from '@modelcontextprotocol/server';

const NAME_SCHEMA = {
    type: 'object',
    properties: { name: { type: 'string', description: 'Your name' } },
    required: ['name'],
};
const SAMPLE = {
    messages: [{ role: 'user', content: { type: 'text', text: 'What is 2+2?' } }],
    maxTokens: 10,
};

function text(s) {
    return { content: [{ type: 'text', text: s }] };
}

function elicited(r, field) {
    if (r?.action === 'accept') return r.content?.[field];
    return undefined;
}

function nameAnswer(r) {
    if (r?.action === 'accept') return text(`hello ${r.content?.name}`);
    return text(`the user ${r?.action === 'decline' ? 'declined' : 'cancelled'}`);
}

function sampleAnswer(r) {
    const c = Array.isArray(r?.content) ? r.content[0] : r?.content;
    return text(`the model said: ${c?.text}`);
}

function rootsAnswer(r) {
    return text(`roots: ${(r?.roots ?? []).map((x) => x.uri).join(' ')}`);
}

/* SDK 1.x McpServer (@modelcontextprotocol/sdk). */
export function addAskingV1(server) {
    const elicit = (extra, message, schema) => extra.sendRequest({
        method: 'elicitation/create',
        params: { mode: 'form', message, requestedSchema: schema },
    }, ElicitResultSchema, { timeout: 600000 });
    server.registerTool('ask_name', { description: 'Asks the user their name (elicitation)',
        inputSchema: {} }, async (_a, extra) => nameAnswer(await elicit(extra, 'Your name?', NAME_SCHEMA)));
    server.registerTool('ask_sample', { description: 'Asks the client to sample (sampling)',
        inputSchema: {} }, async (_a, extra) => sampleAnswer(await extra.sendRequest(
        { method: 'sampling/createMessage', params: SAMPLE }, CreateMessageResultSchema,
        { timeout: 600000 })));
    server.registerTool('ask_roots', { description: 'Asks the client its roots',
        inputSchema: {} }, async (_a, extra) => rootsAnswer(await extra.sendRequest(
        { method: 'roots/list' }, ListRootsResultSchema, { timeout: 600000 })));
    const one = (f) => ({ type: 'object', properties: { [f]: { type: 'string' } }, required: [f] });
    server.registerTool('ask_twice', { description: 'Two elicitations at once',
        inputSchema: {} }, async (_a, extra) => {
        const [a, b] = await Promise.all([elicit(extra, 'First?', one('a')),
            elicit(extra, 'Second?', one('b'))]);
        return text(`a=${elicited(a, 'a')} b=${elicited(b, 'b')}`);
    });
}

/* SDK 2.x McpServer (@modelcontextprotocol/server), 2026-07-28. */
export function addAskingV2(server) {
    const responses = (ctx) => ctx.mcpReq?.inputResponses ?? {};
    server.registerTool('ask_name', { description: 'Asks the user their name (elicitation)',
        inputSchema: z.object({}) }, async (_a, ctx) => {
        const r = responses(ctx).name;
        if (r) return nameAnswer(r);
        return inputRequired({ inputRequests: {
            name: inputRequired.elicit({ message: 'Your name?', requestedSchema: NAME_SCHEMA }) } });
    });
    server.registerTool('ask_sample', { description: 'Asks the client to sample (sampling)',
        inputSchema: z.object({}) }, async (_a, ctx) => {
        const r = responses(ctx).sum;
        if (r) return sampleAnswer(r);
        return inputRequired({ inputRequests: { sum: inputRequired.createMessage(SAMPLE) } });
    });
    server.registerTool('ask_roots', { description: 'Asks the client its roots',
        inputSchema: z.object({}) }, async (_a, ctx) => {
        const r = responses(ctx).roots;
        if (r) return rootsAnswer(r);
        return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
    });
    // two rounds: the first answer travels in requestState to the second round
    const one = (f) => ({ type: 'object', properties: { [f]: { type: 'string' } }, required: [f] });
    server.registerTool('ask_twice', { description: 'Two elicitations, one round each',
        inputSchema: z.object({}) }, async (_a, ctx) => {
        const got = responses(ctx);
        const state = ctx.mcpReq?.requestState?.() ?? undefined;
        if (got.b && state) return text(`a=${state} b=${elicited(got.b, 'b')}`);
        if (got.a) return inputRequired({ requestState: String(elicited(got.a, 'a')),
            inputRequests: { b: inputRequired.elicit({ message: 'Second?', requestedSchema: one('b') }) } });
        return inputRequired({ inputRequests: {
            a: inputRequired.elicit({ message: 'First?', requestedSchema: one('a') }) } });
    });
}
