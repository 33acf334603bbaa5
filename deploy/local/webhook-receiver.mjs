#!/usr/bin/env node
// The demo's webhook receiver (make up starts it; docs/webhooks.md, README "A two-minute tour"): listens on
// 127.0.0.1:8098 (DEMO_WEBHOOK_PORT), verifies every POST with the npm package
// `standardwebhooks` and the secret of the demo webhook, and prints one line per delivery:
//
//   webhook msg_5b0e…_1 task.completed task=3f1e… status=complete verified=yes
//
// A verified delivery gets 204; one that does not verify (wrong signature, a timestamp more
// than 5 minutes off, missing headers) is printed with verified=no and the reason, and gets
// 401, so mcpq retries it (docs/webhooks.md, "Delivery").
//
//   DEMO_NODE_MODULES=build/demo/node_modules node deploy/local/webhook-receiver.mjs
//
// The secret: WEBHOOK_SECRET, else the `secret` of webhook `demo-hook` in
// deploy/local/mcpq.json (DEMO_CONFIG). `standardwebhooks` is pinned by
// deploy/local/package-lock.json; scripts/up.sh installs it with npm ci into build/demo and
// names that node_modules in DEMO_NODE_MODULES.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';

const port = Number(process.env.DEMO_WEBHOOK_PORT || 8098);
const MAX_BODY = 1 << 20;

function demoSecret() {
  if (process.env.WEBHOOK_SECRET) return process.env.WEBHOOK_SECRET;
  const configPath =
    process.env.DEMO_CONFIG || new URL('./mcpq.json', import.meta.url).pathname;
  const config = JSON.parse(readFileSync(configPath, 'utf8'));
  for (const tenant of config.tenants ?? [])
    for (const hook of tenant.webhooks ?? []) if (hook.id === 'demo-hook') return hook.secret;
  throw new Error(`no webhook demo-hook with a secret in ${configPath}`);
}

// `standardwebhooks` from DEMO_NODE_MODULES (the npm ci of deploy/local/package.json that
// scripts/up.sh makes), else from wherever node resolves it next to this file.
function resolveWebhook() {
  const base = process.env.DEMO_NODE_MODULES
    ? path.join(process.env.DEMO_NODE_MODULES, 'package.json')
    : import.meta.url;
  return createRequire(base)('standardwebhooks').Webhook;
}

const Webhook = resolveWebhook();
const wh = new Webhook(demoSecret());

const server = createServer((req, res) => {
  if (req.method !== 'POST') return res.writeHead(405).end();
  const chunks = [];
  let size = 0;
  req.on('data', (c) => {
    size += c.length;
    if (size > MAX_BODY) req.destroy();
    else chunks.push(c);
  });
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8'); // verify the raw bytes as sent
    const id = req.headers['webhook-id'] ?? '-';
    let event;
    let verified = 'yes';
    try {
      event = wh.verify(body, req.headers);
    } catch (err) {
      verified = `no (${err.message})`;
      try {
        event = JSON.parse(body);
      } catch {
        event = {};
      }
    }
    const data = event?.data ?? {};
    console.log(
      `webhook ${id} ${event?.type ?? '-'} task=${data.TaskId ?? '-'} ` +
        `status=${data.TaskStatus ?? '-'} verified=${verified}`,
    );
    res.writeHead(verified === 'yes' ? 204 : 401).end();
  });
});
server.listen(port, '127.0.0.1', () => {
  console.log(`webhook receiver: http://127.0.0.1:${port}/webhook (Standard Webhooks, verifying)`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)));
