// Compares one run of the conformance CLI (`conformance server`) with the baseline:
//
//   node compare-conformance.mjs CLI_OUTPUT BASELINE RESULTS_DIR
//
// CLI_OUTPUT is what the CLI printed; its `=== SUMMARY ===` block has one line per scenario
// (`✓ name: N passed, M failed` or `✗ ...`: a scenario fails when any of its checks is a
// FAILURE) and a `Total: N passed, M failed` line. BASELINE lists the scenarios expected to
// fail, `<scenario> <reason>` per line (# comments). RESULTS_DIR is the CLI's --output-dir,
// whose server-<scenario>-<time>/checks.json files give the failed checks' messages.
//
// Exit status 1 when a scenario outside the baseline failed, a baseline scenario passed or
// did not run, a baseline line has no reason, or a MUST_PASS scenario did not run.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The scenarios the gateway must pass (each must also have run): tools, elicitation and sampling, resources, prompts, completion. */
const MUST_PASS = [
  'server-initialize', 'ping', 'logging-set-level', 'tools-list',
  'tools-call-simple-text', 'tools-call-image', 'tools-call-audio', 'tools-call-embedded-resource',
  'tools-call-mixed-content', 'tools-call-error', 'tools-call-with-progress', 'tools-call-with-logging',
  'dns-rebinding-protection',
  'resources-list', 'resources-read-text', 'resources-read-binary', 'resources-templates-read',
  'resources-subscribe', 'resources-unsubscribe',
  'prompts-list', 'prompts-get-simple', 'prompts-get-with-args', 'prompts-get-embedded-resource',
  'prompts-get-with-image', 'completion-complete',
  // A tool asking the client mid-call (issue 32): the question crosses the queue.
  'tools-call-sampling', 'tools-call-elicitation', 'elicitation-sep1034-defaults', 'elicitation-sep1330-enums',
];

const [outputFile, baselineFile, resultsDir] = process.argv.slice(2);
// eslint-disable-next-line no-control-regex
const output = readFileSync(outputFile, 'utf8').replace(/\x1b\[[0-9;]*m/g, '');
const problems = [];

const baseline = new Map();
for (const [i, raw] of readFileSync(baselineFile, 'utf8').split('\n').entries()) {
  const line = raw.trim();
  if (!line || line.startsWith('#')) continue;
  const m = line.match(/^(\S+)\s+(\S.*)$/);
  if (!m) {
    problems.push(`${path.basename(baselineFile)}:${i + 1}: "${line}" has no reason`);
    continue;
  }
  baseline.set(m[1], m[2]);
}

const summaryAt = output.lastIndexOf('=== SUMMARY ===');
if (summaryAt < 0) {
  console.log('conformance: the CLI printed no summary (it did not finish)');
  process.exit(1);
}
const results = new Map(); // scenario -> {ok, passed, failed}
for (const line of output.slice(summaryAt).split('\n')) {
  const m = line.match(/^([✓✗])\s+(\S+):\s+(\d+) passed, (\d+) failed/);
  if (m) results.set(m[2], { ok: m[1] === '✓' && m[4] === '0', passed: Number(m[3]), failed: Number(m[4]) });
}
const total = output.slice(summaryAt).match(/^Total: .*$/m)?.[0];

/** FAILURE (and WARNING) checks of one scenario, from its checks.json. */
function failedChecks(scenario) {
  let dirs = [];
  try {
    dirs = readdirSync(resultsDir).filter((d) => d.startsWith(`server-${scenario}-`) &&
      /^\d{4}-\d{2}-\d{2}T/.test(d.slice(`server-${scenario}-`.length)));
  } catch { /* no results dir */ }
  const lines = [];
  for (const d of dirs) {
    try {
      for (const c of JSON.parse(readFileSync(path.join(resultsDir, d, 'checks.json'), 'utf8'))) {
        if (c.status === 'FAILURE' || c.status === 'WARNING') {
          lines.push(`      ${c.status} ${c.id}: ${c.errorMessage ?? c.description}` +
            (c.details ? ` ${JSON.stringify(c.details).slice(0, 400)}` : ''));
        }
      }
    } catch { /* unreadable */ }
  }
  return lines;
}

const unexpected = [];
const stale = [];
const expected = [];
for (const [scenario, r] of results) {
  const inBaseline = baseline.has(scenario);
  if (!r.ok && !inBaseline) unexpected.push(scenario);
  else if (r.ok && inBaseline) stale.push(scenario);
  else if (!r.ok) expected.push(scenario);
}
for (const scenario of baseline.keys()) {
  if (!results.has(scenario)) problems.push(`baseline scenario ${scenario} did not run (no such scenario any more?)`);
}
for (const scenario of MUST_PASS) {
  if (!results.has(scenario)) problems.push(`must-pass scenario ${scenario} did not run`);
  if (baseline.has(scenario)) problems.push(`must-pass scenario ${scenario} is in the baseline`);
}

console.log('');
console.log('conformance: per scenario (✓ pass, ~ expected failure, ✗ unexpected failure, ! passes but is in the baseline)');
for (const [scenario, r] of results) {
  const mark = unexpected.includes(scenario) ? '✗' : stale.includes(scenario) ? '!' : r.ok ? '✓' : '~';
  console.log(`  ${mark} ${scenario} (${r.passed} passed, ${r.failed} failed checks)`);
  if (mark === '✗') for (const l of failedChecks(scenario)) console.log(l);
}
for (const s of unexpected) problems.push(`unexpected failure: ${s}`);
for (const s of stale) problems.push(`passes but is in the baseline (remove it): ${s}`);
for (const p of problems) console.log(`conformance: ${p}`);

const passed = [...results.values()].filter((r) => r.ok).length;
console.log('');
console.log(`conformance CLI ${total ?? 'Total: (missing)'} (checks)`);
console.log(`conformance: ${results.size} scenarios: ${passed} passed, ${results.size - passed} failed ` +
  `(${expected.length} expected by the baseline, ${unexpected.length} unexpected, ${stale.length} stale baseline entries)`);
process.exit(problems.length ? 1 : 0);
