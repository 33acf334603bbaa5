// Upstream MCP servers a test starts beside its stack (era-upstream.mjs, server-everything in
// its streamableHttp mode): a Node process in its own process group, ready when its output
// matches a pattern; stop() ends the group (SIGTERM, then SIGKILL after 5 s).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { CLIENTS_DIR, REPO } from './stack.mjs';
import { waitFor } from './util.mjs';

const live = new Set();
process.on('exit', () => {
  for (const pid of live) {
    try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ }
  }
});

/**
 * Runs `node --import lib/register.mjs <args>` (the npm packages resolve from
 * $MCPQ_CLIENTS_DEPS) and waits until ready(output) holds for what it printed on stdout and
 * stderr.
 * @param {string[]} args script and its arguments
 * @param {{ready: (output: string) => boolean, env?: Record<string,string>, label?: string,
 *   timeoutMs?: number}} opts
 * @returns {Promise<{pid: number, output(): string, stop(): Promise<void>}>}
 */
export async function startNode(args, { ready, env = {}, label = 'upstream', timeoutMs = 60_000 }) {
  const register = path.join(CLIENTS_DIR, 'lib', 'register.mjs');
  const child = spawn(process.execPath, ['--import', register, ...args], {
    cwd: REPO,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  live.add(child.pid);
  let out = '';
  let exited = null;
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const gone = new Promise((resolve) => child.once('exit', (code, signal) => {
    exited = { code, signal };
    resolve();
  }));
  const ok = await waitFor(() => exited || ready(out), { timeoutMs, intervalMs: 50 });
  if (!ok || exited) {
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
    live.delete(child.pid);
    throw new Error(`${label} did not become ready (${exited ? `exited ${JSON.stringify(exited)}` : 'timeout'}):\n${out.slice(-3000)}`);
  }
  return {
    pid: child.pid,
    output: () => out,
    async stop() {
      if (!exited) {
        try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
        let timer;
        await Promise.race([gone, new Promise((r) => { timer = setTimeout(r, 5000); })]);
        clearTimeout(timer);
        try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
      }
      live.delete(child.pid);
    },
  };
}
