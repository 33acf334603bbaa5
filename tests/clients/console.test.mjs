// The operator console (docs/console.md) in a real browser: Debian's chromium, headless, driven
// by playwright-core, against a local stack whose ingress serves the operations plane on a port
// of its own (mcpq-local --ops-port), with a webhook receiver that fails until the test lets it
// answer 200. The operator's tasks, each asserted on what the page shows: a wrong token
// refused, sign in, the registry (a tool description holding <script> shown as text), publish
// a new version (tools/list over /mcp then has it), roll back, take offline; find the failed
// task in the failed filter and see why, its failed webhook delivery redelivered until
// delivered; the tasks newest first in pages; cancel a running task; the live charts drawn after some calls; sign out. Any
// console error or CSP violation fails the test. Screenshots of each step go to
// <build>/artifacts/console/ (printed). prom.js (the /metrics parser and the quantiles) is
// tests/e2e/console-prom.test.mjs, without a browser.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

import { REPO, freePort, startStack } from './lib/stack.mjs';
import { waitFor } from './lib/util.mjs';

const TOKEN = 'console-admin-token-5e1f';
const KEY = 'ops-key-9a8b7c6d';
const TENANT = 'ops';
const XSS = 'Echo <script>window.__xss = 1</script><img src=x onerror="window.__xss = 2"> back';
const CHROMIUM = process.env.MCPQ_CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = path.join(path.resolve(REPO, process.env.MCPQ_BIN_DIR || 'build'), 'artifacts', 'console');
const WAIT = { timeout: 15_000 };

// ---- the stack, the receiver, the browser ----------------------------------------------------------

let stack;
let browser;
let receiver;
let receiverOk = false;
const received = [];
let tmp;

function config(receiverPort) {
  const tool = (name, published, versions) => ({ tenant: TENANT, server: 'default', name, published, versions });
  const obj = { type: 'object', properties: { who: { type: 'string' } } };
  return {
    tenants: [{
      id: TENANT,
      api_keys: [{ id: 'ops-k1', key: KEY }],
      default_server: 'default',
      webhooks: [{
        id: 'ops-hook', url: `http://127.0.0.1:${receiverPort}/hook`,
        secret: 'whsec_Y29uc29sZS10ZXN0LXdlYmhvb2stc2VjcmV0LWtleQ==',
        events: ['task.completed', 'task.terminated', 'task.cancelled'],
      }],
    }],
    servers: [{ tenant: TENANT, name: 'default' }],
    tools: [
      tool('nightly_export', '1', [{
        version: '1', description: 'Nightly export (task mode): hangs past its 1 s deadline',
        inputSchema: { type: 'object' }, executor: { type: 'exec', argv: ['/bin/sh', '-c', 'sleep 30'] },
        timeout_ms: 1000, mode: 'task',
      }]),
      tool('slow_export', '1', [{
        version: '1', description: 'Slow export (task mode): a minute of work',
        inputSchema: { type: 'object' }, executor: { type: 'exec', argv: ['/bin/sh', '-c', 'sleep 60'] },
        timeout_ms: 90000, mode: 'task',
      }]),
      tool('echo', '1', [{ version: '1', description: XSS, inputSchema: obj, executor: { type: 'builtin', name: 'echo' } }]),
      tool('quick_task', '1', [{ version: '1', description: 'Echo as a task', inputSchema: obj, executor: { type: 'builtin', name: 'echo' }, mode: 'task' }]),
      tool('greet', '1', [{ version: '1', description: 'Greet someone', inputSchema: obj, executor: { type: 'builtin', name: 'echo' } }]),
    ],
  };
}

async function admin(method, p, body) {
  const r = await fetch(`${stack.opsUrl}/admin/v1/tenants/${TENANT}${p}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  assert.ok(r.ok, `${method} ${p}: ${r.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

let rpcId = 0;
async function mcp(method, params) {
  const r = await fetch(stack.url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-06-18' },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method, params }),
  });
  const text = await r.text();
  const data = text.startsWith('{') ? text : text.split('\n').filter((l) => l.startsWith('data: ')).at(-1)?.slice(6);
  return JSON.parse(data);
}

async function greetDescription() {
  const r = await mcp('tools/list', {});
  return r.result.tools.find((t) => t.name === 'greet')?.description ?? null;
}

async function startTask(name) {
  const r = await mcp('tools/call', { name, arguments: {} });
  const id = r.result?.structuredContent?.TaskId ?? r.result?.task?.taskId ??
    JSON.stringify(r).match(/"TaskId":"([^"]+)"/)?.[1];
  assert.ok(id, `no TaskId in ${JSON.stringify(r)}`);
  return id;
}

before(async () => {
  rmSync(ARTIFACTS, { recursive: true, force: true }); // this run's screenshots only
  mkdirSync(ARTIFACTS, { recursive: true });
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      received.push({ ok: receiverOk, body });
      res.writeHead(receiverOk ? 200 : 503, { 'Content-Type': 'text/plain' });
      res.end(receiverOk ? 'ok' : 'receiver down for maintenance');
    });
  });
  const rport = await freePort();
  await new Promise((r) => receiver.listen(rport, '127.0.0.1', r));
  tmp = mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'mcpq-console-'));
  const cfg = path.join(tmp, 'mcpq.json');
  writeFileSync(cfg, JSON.stringify(config(rport)));
  stack = await startStack({
    config: cfg, ops: true, workers: 1, label: 'console',
    env: { MCPQ_ADMIN_TOKEN: TOKEN, MCPQ_WEBHOOK_RETRY_SCHEDULE: '0,0' },
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], headless: true });
});

after(async () => {
  await browser?.close();
  await stack?.stop();
  receiver?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

// ---- the operator's tasks -------------------------------------------------------------------

test('the console drives the operator tasks in chromium, under its CSP', async (t) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  const page = await context.newPage();
  const problems = [];
  let allowed = null; // a console error the current step expects
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (allowed && allowed.test(m.text())) return;
    problems.push(`console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  let n = 0;
  const shot = async (name) => {
    const file = path.join(ARTIFACTS, `${String(++n).padStart(2, '0')}-${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    console.log(`# screenshot: ${file}`);
  };
  const clean = async (step) => {
    const csp = await page.evaluate(() => window.__csp);
    assert.deepEqual(csp, [], `${step}: CSP violations`);
    assert.deepEqual(problems.splice(0), [], `${step}: console errors`);
  };
  const text = (sel) => page.locator(sel).innerText(WAIT);

  // The failing task and the running one start now, so they have ended (or not) by the time the
  // operator looks.
  const quick = [];
  for (let i = 0; i < 21; i++) quick.push(await startTask('quick_task'));
  const failed = await startTask('nightly_export');
  const running = await startTask('slow_export');

  await t.test('a wrong token is refused, the right one signs in', async () => {
    const resp = await page.goto(`${stack.opsUrl}/console/`);
    assert.equal(resp.status(), 200);
    assert.match(resp.headers()['content-security-policy'], /default-src 'none'.*script-src 'self'/);
    await page.locator('#token').waitFor(WAIT);
    assert.equal(await page.locator('#nav').isHidden(), true, 'the tenant picker and tabs wait for a sign-in');
    allowed = /status of 401/;
    await page.fill('#token', 'not-the-token');
    await page.click('#signin-form button[type=submit]');
    await page.locator('#signin-msg', { hasText: 'refused (401' }).waitFor(WAIT);
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    assert.equal(await page.locator('#nav').isHidden(), true, 'no tabs after a refused token');
    await shot('signin-refused');
    allowed = null;
    await page.fill('#token', TOKEN);
    await page.click('#signin-form button[type=submit]');
    // The tabs show once the tenants are in the picker (app.js signIn), never before.
    await page.locator('#nav').waitFor({ state: 'visible', ...WAIT });
    assert.equal(await page.locator('#tenant').inputValue(), TENANT,
      `tenant select; status "${await page.locator('#status').textContent()}", options ${await page.locator('#tenant').innerHTML()}`);
    await clean('sign in');
  });

  await t.test('registry: servers, tools, a <script> description shown as text', async () => {
    await page.locator('#registry tr[data-tool="greet"]').waitFor(WAIT);
    assert.match(await text('#registry tr[data-tool="echo"]'), /echo\s+tool\s+1/);
    await page.click('#registry tr[data-tool="echo"] button');
    const cell = page.locator('#versions-table tr[data-version="1"] td.description');
    await cell.waitFor(WAIT);
    assert.equal(await cell.textContent(), XSS);
    assert.equal(await page.locator('#versions-table img').count(), 0);
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    await shot('registry');
    await clean('registry');
  });

  await t.test('publish version 2, roll back to 1, take the tool offline', async () => {
    await admin('POST', '/tools/greet/versions', { version: '2', from_version: '1', description: 'Greet someone, politely (v2)' });
    await page.click('#registry tr[data-tool="greet"] button');
    const v2 = page.locator('#versions-table tr[data-version="2"]');
    await v2.waitFor(WAIT);
    assert.match(await v2.innerText(), /offline/);
    await v2.locator('button', { hasText: 'Publish' }).click();
    await page.locator('#confirm-text', { hasText: 'Publish version 2 of greet' }).waitFor(WAIT);
    await page.click('#confirm-yes');
    await page.locator('#versions-state', { hasText: 'published: version 2' }).waitFor(WAIT);
    assert.equal(await waitFor(async () => (await greetDescription()) === 'Greet someone, politely (v2)', { timeoutMs: 10_000, intervalMs: 200 }), true,
      'tools/list over /mcp shows version 2');
    await shot('published-v2');

    await page.locator('#rollback', { hasText: 'Roll back to version 1' }).click();
    await page.locator('#confirm-text', { hasText: 'from version 2 to version 1' }).waitFor(WAIT);
    await page.click('#confirm-yes');
    await page.locator('#versions-state', { hasText: 'published: version 1' }).waitFor(WAIT);
    assert.equal(await waitFor(async () => (await greetDescription()) === 'Greet someone', { timeoutMs: 10_000, intervalMs: 200 }), true,
      'tools/list over /mcp shows version 1 again');

    await page.locator('#versions-table tr[data-version="1"] button', { hasText: 'Take offline' }).click();
    await page.click('#confirm-yes');
    await page.locator('#versions-state', { hasText: 'offline: no version is published' }).waitFor(WAIT);
    assert.equal(await waitFor(async () => (await greetDescription()) === null, { timeoutMs: 10_000, intervalMs: 200 }), true,
      'tools/list over /mcp no longer lists greet');
    assert.match(await text('#registry tr[data-tool="greet"]'), /offline/);
    await shot('offline');
    await clean('publish');
  });

  await t.test('the failed task: found in the failed filter, why it failed, its webhook redelivered', async () => {
    // The API's view, to compare with the page's.
    const task = await waitFor(async () => {
      const x = await admin('GET', `/tasks/${failed}`);
      return x.status === 'failed' ? x : null;
    }, { timeoutMs: 30_000, intervalMs: 250 });
    assert.ok(task, 'the task failed');
    assert.ok(task.error?.message, `the failed task has an error: ${JSON.stringify(task)}`);
    const delivery = await waitFor(async () => {
      const d = (await admin('GET', `/deliveries?filter=${encodeURIComponent(`task = "${failed}"`)}`)).deliveries?.[0];
      return d?.status === 'failed' ? d : null;
    }, { timeoutMs: 30_000, intervalMs: 250 });
    assert.ok(delivery, 'its webhook delivery failed (the receiver answers 503)');

    await page.click('nav .tab[data-view="tasks"]');
    await page.selectOption('#task-status', 'failed');
    await page.locator('#tasks-table[data-shows="failed"]').waitFor(WAIT); // not the unfiltered list the tab loaded
    const row = page.locator(`#tasks-table tr[data-task="${failed}"]`);
    await row.waitFor(WAIT);
    assert.match(await row.innerText(), /nightly_export\s+failed/);
    assert.equal(await page.locator(`#tasks-table tr[data-task="${running}"]`).count(), 0, 'the failed filter shows no running task');
    await row.click();
    await page.locator('#task-fields [data-field="status"]', { hasText: 'failed' }).waitFor(WAIT);
    assert.ok((await text('#task-error')).includes(task.error.message), 'the page shows why it failed');
    assert.ok((await page.locator('#task-history li').count()) >= 2, 'the history has its steps');
    const drow = page.locator(`#task-deliveries tr[data-delivery="${delivery.id}"]`);
    assert.equal(await drow.locator('[data-field="status"]').innerText(), 'failed');
    const attempts = Number(await drow.locator('[data-field="attempts"]').innerText());
    assert.equal(attempts, delivery.attempts);
    assert.match(await text('#task-deliveries'), /503/);
    await shot('task-failed');

    receiverOk = true;
    await drow.locator('button', { hasText: 'Redeliver' }).click();
    await page.locator('#confirm-text', { hasText: `delivery ${delivery.id}` }).waitFor(WAIT);
    await page.click('#confirm-yes');
    const delivered = await waitFor(async () => {
      await row.click(); // the detail again, as an operator would look again
      await drow.locator('[data-field="status"]').waitFor(WAIT);
      return (await drow.locator('[data-field="status"]').innerText()) === 'delivered';
    }, { timeoutMs: 20_000, intervalMs: 500 });
    assert.ok(delivered, 'the redelivered delivery shows delivered');
    assert.equal(Number(await drow.locator('[data-field="attempts"]').innerText()), attempts + 1);
    assert.ok(received.some((r) => r.ok && r.body.includes(failed)), 'the receiver got it');
    await shot('task-redelivered');

    await page.click('nav .tab[data-view="deliveries"]');
    await page.locator(`#deliveries tr[data-delivery="${delivery.id}"]`).waitFor(WAIT);
    await page.locator(`#deliveries tr.attempts summary`).first().click();
    await shot('deliveries');
    await clean('tasks');
  });

  await t.test('tasks come newest first, 20 a page', async () => {
    await page.click('nav .tab[data-view="tasks"]');
    await page.selectOption('#task-status', '');
    await page.locator('#tasks-table[data-shows="all"]').waitFor(WAIT);
    const rows = page.locator('#tasks-table tbody tr[data-task]');
    await page.locator(`#tasks-table tr[data-task="${running}"]`).waitFor(WAIT);
    assert.equal(await rows.count(), 20);
    // (tasks created in the same millisecond may come in either order)
    const created = () => rows.evaluateAll((trs) => trs.map((tr) => tr.cells[4].textContent));
    const times = await created();
    assert.deepEqual(times, [...times].sort().reverse(), 'the newest first');
    await page.click('#tasks-more');
    await page.locator(`#tasks-table tr[data-task="${quick[0]}"]`).waitFor(WAIT);
    const all = await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.task));
    assert.equal(all.length, 23);
    assert.deepEqual([...all].sort(), [running, failed, ...quick].sort(), 'every task once');
    const times2 = await created();
    assert.deepEqual(times2, [...times2].sort().reverse(), 'the newest first over both pages');
    assert.equal(await page.locator('#tasks-more').isHidden(), true, 'no page after the last');
    await clean('paging');
  });

  await t.test('a running task is cancelled from the page', async () => {
    await page.click('nav .tab[data-view="tasks"]');
    await page.selectOption('#task-status', 'working');
    await page.locator('#tasks-table[data-shows="working"]').waitFor(WAIT);
    const row = page.locator(`#tasks-table tr[data-task="${running}"]`);
    await row.waitFor(WAIT);
    await row.click();
    await page.click('#task-cancel');
    await page.locator('#confirm-text', { hasText: `Cancel task ${running}` }).waitFor(WAIT);
    await page.click('#confirm-yes');
    await page.locator('#task-fields [data-field="status"]', { hasText: 'cancelled' }).waitFor(WAIT);
    assert.equal((await admin('GET', `/tasks/${running}`)).status, 'cancelled');
    assert.equal(await page.locator('#task-cancel').isHidden(), true);
    await clean('cancel');
  });

  await t.test('live charts from /metrics draw after some calls', async () => {
    await page.click('nav .tab[data-view="metrics"]');
    const stop = Date.now() + 8_000;
    const calls = (async () => {
      while (Date.now() < stop) {
        await Promise.all(Array.from({ length: 4 }, () => mcp('tools/call', { name: 'echo', arguments: { who: 'ops' } })));
      }
    })();
    const drawn = await waitFor(async () => {
      const rate = Number(await text('#m-rate'));
      const p50 = Number(await text('#m-p50'));
      return rate > 0 && p50 > 0;
    }, { timeoutMs: 20_000, intervalMs: 250 });
    await calls;
    assert.ok(drawn, `the rate and p50 show numbers: ${await text('#m-rate')} ${await text('#m-p50')}`);
    const p50 = Number(await text('#m-p50'));
    const p99 = Number(await text('#m-p99'));
    assert.ok(p99 >= p50, `p99 ${p99} >= p50 ${p50}`);
    assert.match(await text('#m-inflight'), /^\d+$/);
    // The rate's line is on its canvas: pixels of its colour (#1f4e79). The line grows by one
    // segment per scrape (every 2 s), so a slow stack (ASan) may need more scrapes to draw 20.
    const ink = () => page.evaluate(() => {
      const c = document.getElementById('c-rate');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let k = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] === 0x1f && d[i + 1] === 0x4e && d[i + 2] === 0x79) k++;
      return k;
    });
    const inked = await waitFor(async () => (await ink()) > 20, { timeoutMs: 20_000, intervalMs: 500 });
    assert.ok(inked, `the rate chart has a line (${await ink()} pixels)`);
    await shot('metrics');
    await clean('metrics');
  });

  await t.test('sign out returns to the form and forgets the token', async () => {
    await page.click('#signout');
    await page.locator('#signin').waitFor({ state: 'visible', ...WAIT });
    assert.equal(await page.locator('#nav').isHidden(), true, 'no tabs once signed out');
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    await page.reload();
    await page.locator('#token').waitFor({ state: 'visible', ...WAIT });
    await clean('sign out');
  });
  await context.close();
});
