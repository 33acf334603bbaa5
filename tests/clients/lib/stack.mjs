// One local mcpq stack for a test file, through scripts/mcpq-local (README "Two commands"):
//   mcpq-local --bin-dir B --port P --workers N --config tests/clients/mcpq-clients.json
//              --state-dir <fresh temp dir> [--env K=V ...]
// It waits for the `READY http://127.0.0.1:P` line; stop() sends SIGTERM and requires exit
// status 0 within 20 s with no process left in the launcher's process group.
import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLIENTS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const REPO = path.resolve(CLIENTS_DIR, '..', '..');
export const CONFIG_PATH = path.join(CLIENTS_DIR, 'mcpq-clients.json');
export const CONFIG = JSON.parse(readFileSync(CONFIG_PATH, 'utf8'));
export const API_KEY = CONFIG.tenants[0].api_keys[0].key;
/** The config's registry objects of one kind ("tool" when `kind` is absent), in config order. */
export function objectsOfKind(kind) {
  return CONFIG.tools.filter((t) => (t.kind ?? 'tool') === kind);
}
/** Every tool of the tenant's default server, in config order (resources and prompts share the array). */
export const TOOL_NAMES = objectsOfKind('tool').map((t) => t.name);

const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 20_000;

/** A port that is free on 127.0.0.1 right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen({ port: 0, host: '127.0.0.1' }, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** The first of n consecutive ports that are free on 127.0.0.1 right now. */
async function freePorts(n) {
  if (n === 1) return freePort();
  for (let attempt = 0; attempt < 50; attempt++) {
    const first = await freePort();
    let ok = first + n - 1 <= 65535;
    for (let p = first + 1; ok && p < first + n; p++) ok = await portFree(p);
    if (ok) return first;
  }
  throw new Error(`found no ${n} consecutive free ports`);
}

function portFree(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '127.0.0.1' }, () => srv.close(() => resolve(true)));
  });
}

function tail(text, lines = 40) {
  return text.split('\n').slice(-lines).join('\n');
}

function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

const live = new Set();
process.on('exit', () => {
  for (const pid of live) {
    try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ }
  }
});

/**
 * @param {{env?: Record<string,string>, workers?: number, ingresses?: number, label?: string,
 *   config?: string, port?: number, ops?: boolean}} [opts] config: the config file (default
 *   mcpq-clients.json); port: the first ingress's port (default: a free one; ingress i listens
 *   on port+i, whose URLs are `urls`); ingresses: replicas (default 1); ops: the operations
 *   plane on ports of its own (mcpq-local --ops-port; `opsUrl` is ingress 0's)
 * @returns {Promise<{url: string, baseUrl: string, port: number, stateDir: string, opsUrl: string,
 *   urls: string[], stop(): Promise<void>, logs(): string, redis(...args: string[]): string,
 *   registrySet(field: string, doc: object|null): void}>}
 */
export async function startStack({ env = {}, workers = 2, ingresses = 1, label = 'clients', config = CONFIG_PATH, port: wantPort, ops = false } = {}) {
  const launcher = path.join(REPO, 'scripts', 'mcpq-local');
  const binDir = path.resolve(REPO, process.env.MCPQ_BIN_DIR || 'build');
  const stateDir = mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), `mcpq-${label}-`));
  const port = wantPort ?? await freePorts(ingresses);
  const args = [
    '--bin-dir', binDir,
    '--port', String(port),
    '--ingresses', String(ingresses),
    '--workers', String(workers),
    '--config', config,
    '--state-dir', stateDir,
  ];
  let opsPort = port;
  if (ops) {
    do opsPort = await freePorts(ingresses);
    while (opsPort < port + ingresses && opsPort + ingresses > port);
    args.push('--ops-port', String(opsPort));
  }
  for (const [k, v] of Object.entries(env)) args.push('--env', `${k}=${v}`);

  const out = createWriteStream(path.join(stateDir, 'launcher.out'));
  out.write(`$ ${launcher} ${args.join(' ')}\n`);
  let output = '';
  let stdoutBuf = '';
  let exitInfo = null;
  // The stack is configured by flags and --env only.
  const childEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MCPQ_')));
  const child = spawn(launcher, args, {
    cwd: REPO,
    detached: true, // its own process group, so stop() can check that nothing is left
    stdio: ['ignore', 'pipe', 'pipe'],
    env: childEnv,
  });
  live.add(child.pid);
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal };
      resolve(exitInfo);
    });
  });
  const record = (d) => {
    output += d;
    if (!out.writableEnded) out.write(d);
  };
  child.stderr.on('data', record);

  let ready = false;
  const readyP = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(
      `no READY line within ${READY_TIMEOUT_MS / 1000} s (state dir ${stateDir}):\n${tail(output)}`)), READY_TIMEOUT_MS);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${launcher}: ${err.message}`));
    });
    child.stdout.on('data', (d) => {
      record(d);
      if (ready) return;
      stdoutBuf += d;
      const m = stdoutBuf.match(/^READY (http:\/\/127\.0\.0\.1:(\d+))\r?\n/m);
      if (!m) return;
      ready = true;
      clearTimeout(timer);
      if (Number(m[2]) !== port) reject(new Error(`launcher was given --port ${port} but printed ${m[0].trim()}`));
      else resolve(m[1]);
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`launcher exited before READY (code ${code}, signal ${signal}); state dir ${stateDir}:\n${tail(output)}`));
    });
  });
  let baseUrl;
  try {
    baseUrl = await readyP;
  } catch (err) {
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
    live.delete(child.pid);
    out.end();
    throw err;
  }

  let stopped = false;
  async function stop() {
    if (stopped) return;
    stopped = true;
    let failure = null;
    if (exitInfo) {
      failure = `the launcher had already exited (code ${exitInfo.code}, signal ${exitInfo.signal})`;
    } else {
      process.kill(child.pid, 'SIGTERM');
      let timer;
      const res = await Promise.race([
        exited,
        new Promise((r) => { timer = setTimeout(() => r(null), STOP_TIMEOUT_MS); }),
      ]);
      clearTimeout(timer);
      if (!res) {
        try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
        await exited;
        failure = `the launcher did not exit within ${STOP_TIMEOUT_MS / 1000} s of SIGTERM`;
      } else if (res.code !== 0) {
        failure = `after SIGTERM the launcher exited with code ${res.code} signal ${res.signal}, want 0`;
      }
    }
    for (let i = 0; i < 20 && groupAlive(child.pid); i++) await new Promise((r) => setTimeout(r, 100));
    if (groupAlive(child.pid)) {
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
      failure = failure || 'processes were left in the launcher\'s process group (killed them)';
    }
    live.delete(child.pid);
    await new Promise((r) => out.end(r));
    if (failure) throw new Error(`${failure}; state dir kept: ${stateDir}\n${tail(output)}`);
    if (process.env.KEEP !== '1') rmSync(stateDir, { recursive: true, force: true });
  }

  /** Launcher output and the tail of every component log (for failure messages). */
  function logs() {
    let text = `--- launcher\n${tail(output, 20)}\n`;
    try {
      for (const name of readdirSync(stateDir).filter((n) => n.endsWith('.log')).sort()) {
        text += `--- ${name}\n${tail(readFileSync(path.join(stateDir, name), 'utf8'), 15)}\n`;
      }
    } catch { /* state dir gone */ }
    return text;
  }

  /** redis-cli against the stack's Redis (the launcher prints its port). */
  function redis(...args) {
    const m = output.match(/redis ready on 127\.0\.0\.1:(\d+)/);
    if (!m) throw new Error(`the launcher printed no Redis port:\n${tail(output)}`);
    return execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', m[1], ...args], { encoding: 'utf8' }).trim();
  }

  /**
   * Changes a field of the registry hash the way the admin API does (docs/internals.md):
   * the document (doc null: the field is deleted), a revision bump, the Pub/Sub wake-up.
   */
  function registrySet(field, doc) {
    if (doc === null) redis('HDEL', '{mcpq}:registry', field);
    else redis('HSET', '{mcpq}:registry', field, JSON.stringify(doc));
    redis('PUBLISH', 'mcpq:registry:changed', redis('INCR', '{mcpq}:registry:rev'));
  }

  const urls = Array.from({ length: ingresses }, (_, i) => `http://127.0.0.1:${port + i}/mcp`);
  const opsUrl = `http://127.0.0.1:${opsPort}`;
  return { url: `${baseUrl}/mcp`, baseUrl, opsUrl, urls, port, stateDir, stop, logs, redis, registrySet };
}
