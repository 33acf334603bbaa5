// Helpers shared by the client test files.
import { existsSync, readFileSync } from 'node:fs';

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls fn() every intervalMs until it returns a truthy value; returns it, or undefined on timeout. */
export async function waitFor(fn, { timeoutMs = 10_000, intervalMs = 50 } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) return undefined;
    await sleep(intervalMs);
  }
}

/** Is pid a live process? A zombie (killed, not yet reaped by its parent) counts as dead. */
export function pidAlive(pid) {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return e.code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false; // gone between the two checks
  }
}

/** The pids slow_job.sh wrote ("<sh pid> <sleep pid>"), or undefined while the file is missing. */
export function readPids(pidfile) {
  if (!existsSync(pidfile)) return undefined;
  const pids = readFileSync(pidfile, 'utf8').trim().split(/\s+/).map(Number);
  return pids.length === 2 && pids.every((p) => Number.isInteger(p) && p > 1) ? pids : undefined;
}

/** Test cleanup: make sure a slow_job left running does not outlive the test. */
export function killPids(pids) {
  for (const pid of pids ?? []) {
    try { process.kill(-pid, 'SIGKILL'); } catch { /* not a group leader, or gone */ }
    try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  }
}

/** Is `sub` a subsequence of `seq` (same order, gaps allowed)? */
export function isSubsequence(sub, seq) {
  let i = 0;
  for (const x of seq) if (i < sub.length && x === sub[i]) i++;
  return i === sub.length;
}

/** Text of the first text content block of a CallToolResult. */
export function textOf(result) {
  return result?.content?.find((c) => c.type === 'text')?.text;
}

/** The content every conformance fixture must return, as the conformance suite checks it. */
export const CONTENT_FIXTURES = {
  test_simple_text: (r) => r.content.length === 1 && r.content[0].type === 'text' &&
    r.content[0].text === 'This is a simple text response for testing.',
  test_image_content: (r) => r.content.some((c) => c.type === 'image' && c.mimeType === 'image/png' &&
    Buffer.from(c.data, 'base64').subarray(1, 4).toString() === 'PNG'),
  test_audio_content: (r) => r.content.some((c) => c.type === 'audio' && c.mimeType === 'audio/wav' &&
    Buffer.from(c.data, 'base64').subarray(0, 4).toString() === 'RIFF'),
  test_embedded_resource: (r) => r.content.some((c) => c.type === 'resource' &&
    c.resource?.uri === 'test://embedded-resource' && c.resource.mimeType === 'text/plain' &&
    c.resource.text === 'This is an embedded resource content.'),
  test_multiple_content_types: (r) => r.content.length === 3 &&
    r.content.map((c) => c.type).join(',') === 'text,image,resource' &&
    JSON.parse(r.content[2].resource.text).value === 123,
};

export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error'];
