// Plays a stdio-only MCP host (Claude Desktop) for tests/e2e/test_clients_snippets.sh:
//
//   node tests/clients/stdio-host.mjs CONFIG.json SERVER [CWD]
//
// CONFIG.json is an `mcpServers` config as docs/clients.md prints it for Claude Desktop. Like
// the host, it starts the server entry's `command` with its `args` and its `env` added to the
// environment (in CWD), then speaks newline-delimited JSON-RPC on the child's stdin/stdout:
// initialize, notifications/initialized, tools/list, tools/call echo {"text": "hello"}. It
// prints one line per answer and exits 0 when tools/list names echo and the call answers
// structuredContent {"text": "hello"}; 1 otherwise (with the child's stderr tail), after 20 s
// at most.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

const [configPath, name, cwd] = process.argv.slice(2);
const entry = JSON.parse(readFileSync(configPath, 'utf8')).mcpServers?.[name];
if (!entry || typeof entry.command !== 'string') {
  console.error(`stdio-host: no mcpServers.${name}.command in ${configPath}`);
  process.exit(2);
}

const child = spawn(entry.command, entry.args ?? [], {
  cwd: cwd ?? process.cwd(),
  env: { ...process.env, ...(entry.env ?? {}) },
  stdio: ['pipe', 'pipe', 'pipe'],
});
let stderr = '';
child.stderr.on('data', (d) => {
  stderr = (stderr + d).slice(-4000);
});

const waiting = new Map();
let buffered = '';
child.stdout.setEncoding('utf8');
child.stdout.on('data', (d) => {
  buffered += d;
  let nl;
  while ((nl = buffered.indexOf('\n')) >= 0) {
    const line = buffered.slice(0, nl).trim();
    buffered = buffered.slice(nl + 1);
    if (!line) continue;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      continue; // not a JSON-RPC line
    }
    const resolve = waiting.get(msg.id);
    if (resolve) {
      waiting.delete(msg.id);
      resolve(msg);
    }
  }
});

const send = (msg) => child.stdin.write(JSON.stringify(msg) + '\n');
const request = (id, method, params) =>
  new Promise((resolve) => {
    waiting.set(id, resolve);
    send({ jsonrpc: '2.0', id, method, params });
  });

function finish(code, why) {
  if (why) console.error(`not ok - ${why}\n# server stderr tail:\n${stderr}`);
  child.kill('SIGTERM');
  process.exit(code);
}
setTimeout(() => finish(1, 'no answer within 20 s'), 20000).unref();
child.on('exit', (status) => finish(1, `the server exited (${status}) before the answers`));

const init = await request(1, 'initialize', {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'stdio-host', version: '1' },
});
if (!init.result?.serverInfo) finish(1, `initialize: ${JSON.stringify(init)}`);
console.log(`initialize: ${init.result.serverInfo.name} ${init.result.protocolVersion}`);
send({ jsonrpc: '2.0', method: 'notifications/initialized' });

const list = await request(2, 'tools/list', {});
const names = (list.result?.tools ?? []).map((t) => t.name);
console.log(`tools/list: ${names.join(' ')}`);
if (!names.includes('echo')) finish(1, `tools/list has no echo: ${JSON.stringify(list)}`);

const call = await request(3, 'tools/call', { name: 'echo', arguments: { text: 'hello' } });
console.log(`tools/call echo: ${JSON.stringify(call.result?.structuredContent)}`);
if (call.result?.structuredContent?.text !== 'hello' || call.result.isError)
  finish(1, `tools/call echo: ${JSON.stringify(call)}`);
child.removeAllListeners('exit');
finish(0);
