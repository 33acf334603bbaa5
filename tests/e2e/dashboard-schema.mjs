// Validates a Grafana dashboard (the classic JSON model Grafana imports) against Grafana's own
// types, turned into JSON Schema at test time:
//   - the dashboard: `Dashboard` of @grafana/schema (raw/dashboard/x/types.gen.d.ts, what
//     Grafana generates from its CUE schema), with every panel and row, template variables,
//     grid positions, field config, thresholds and mappings;
//   - each panel's options and custom field config: the panel plugin's `Options` and
//     `FieldConfig` of @grafana/schema (raw/composable/<type>/panelcfg/x); a panel of a type
//     with no schema here is refused, so nothing goes unchecked;
//   - each query: the Prometheus `Dataquery` of @grafana/grafana-foundation-sdk.
// ts-json-schema-generator makes the schemas (objects closed: a field the type does not name
// is an error, as a misspelt option would be), ajv validates.
// Then it proves the check can fail: broken copies (a field of the wrong type, a required field
// missing, an unknown panel option value, a query without expr) must each be refused.
//
//   node tests/e2e/dashboard-schema.mjs DASHBOARD.json
//
// The npm packages come from tests/clients (package.json), installed by
// tests/clients/install.sh into $MCPQ_CLIENTS_DEPS, else $MCPQ_CLIENTS_WORK, else
// <repo>/build/clients; without them it exits 77 (skipped).
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
const file = process.argv[2];
if (!file) {
  console.error('usage: node tests/e2e/dashboard-schema.mjs DASHBOARD.json');
  process.exit(2);
}
const deps =
  process.env.MCPQ_CLIENTS_DEPS || process.env.MCPQ_CLIENTS_WORK || path.join(repo, 'build/clients');
const mods = path.join(deps, 'node_modules');
const grafana = path.join(mods, '@grafana/schema/dist/types/raw');
const sdk = path.join(mods, '@grafana/grafana-foundation-sdk/dist');
if (!existsSync(grafana) || !existsSync(sdk) || !existsSync(path.join(mods, 'ts-json-schema-generator'))) {
  console.log(`ok - # SKIP the Grafana packages are not installed in ${deps} (run tests/clients/install.sh)`);
  process.exit(77);
}
const require = createRequire(path.join(mods, 'index.js'));
const { createGenerator } = require('ts-json-schema-generator');
const Ajv = require('ajv').default;
const version = (p) =>
  JSON.parse(readFileSync(path.join(mods, p, 'package.json'), 'utf8')).version.replace(/^v/, '');

const ajv = new Ajv({ allErrors: true, strict: false });
function validator(dts, type) {
  const schema = createGenerator({ path: dts, type, skipTypeCheck: true }).createSchema(type);
  return ajv.compile(schema);
}
const dashboard = validator(path.join(grafana, 'dashboard/x/types.gen.d.ts'), 'Dashboard');
const query = validator(path.join(sdk, 'prometheus/types.gen.d.ts'), 'Dataquery');
const panelTypes = {}; // type -> {options, custom}
for (const type of ['timeseries', 'stat']) {
  const dts = path.join(grafana, `composable/${type}/panelcfg/x/types.gen.d.ts`);
  const src = readFileSync(dts, 'utf8');
  panelTypes[type] = {
    options: validator(dts, 'Options'),
    custom: /export interface FieldConfig\b/.test(src) ? validator(dts, 'FieldConfig') : null,
  };
}

function errs(v, where) {
  return (v.errors || []).map((e) => `${where}${e.instancePath} ${e.message}` +
    (e.params && e.params.additionalProperty ? ` (${e.params.additionalProperty})` : '') +
    (e.params && e.params.allowedValues ? ` (${e.params.allowedValues.join(', ')})` : ''));
}

// Every problem of dash, as "path message" lines (empty: valid).
function check(dash) {
  const problems = [];
  if (!dashboard(dash)) problems.push(...errs(dashboard, ''));
  const all = [];
  for (const p of dash.panels || []) {
    all.push(p);
    for (const q of p.panels || []) all.push(q);
  }
  all.forEach((p, i) => {
    const where = `/panels[${i}] ${JSON.stringify(p.title)}`;
    if (p.type === 'row') return;
    const t = panelTypes[p.type];
    if (!t) {
      problems.push(`${where} panel type ${p.type} has no schema in this check`);
      return;
    }
    if (!t.options(p.options || {})) problems.push(...errs(t.options, `${where}/options`));
    const custom = p.fieldConfig?.defaults?.custom;
    if (custom !== undefined && t.custom && !t.custom(custom))
      problems.push(...errs(t.custom, `${where}/fieldConfig/defaults/custom`));
    (p.targets || []).forEach((q, j) => {
      if (!query(q)) problems.push(...errs(query, `${where}/targets/${j}`));
    });
  });
  return { problems, panels: all.filter((p) => p.type !== 'row').length };
}

const dash = JSON.parse(readFileSync(file, 'utf8'));
const good = check(dash);
if (good.problems.length) {
  console.log(`not ok - ${file} is not a valid Grafana dashboard:`);
  for (const l of good.problems.slice(0, 40)) console.log(`#   ${l}`);
  process.exit(1);
}
console.log(`ok - ${path.basename(file)}: the dashboard, its ${good.panels} panels' options and ` +
  `field config and every query validate against @grafana/schema ${version('@grafana/schema')} ` +
  `and @grafana/grafana-foundation-sdk ${version('@grafana/grafana-foundation-sdk')}`);

// Broken copies: each must be refused, for the reason given.
const firstOf = (d, type) => d.panels.find((p) => p.type === type);
const broken = [
  ['schemaVersion as a string', (d) => { d.schemaVersion = String(d.schemaVersion); }, 'schemaVersion'],
  ['a panel without gridPos.h', (d) => { delete firstOf(d, 'timeseries').gridPos.h; }, 'gridPos'],
  ['a template variable without a name', (d) => { delete d.templating.list[0].name; }, 'templating'],
  ['an unknown legend display mode', (d) => { firstOf(d, 'timeseries').options.legend.displayMode = 'bogus'; }, 'legend/displayMode'],
  ['a misspelt stat option', (d) => { firstOf(d, 'stat').options.colourMode = 'value'; }, 'colourMode'],
  ['a query without expr', (d) => { delete firstOf(d, 'timeseries').targets[0].expr; }, 'expr'],
  ['a query format that does not exist', (d) => { firstOf(d, 'timeseries').targets[0].format = 'graph'; }, 'format'],
  ['a panel type with no schema', (d) => { firstOf(d, 'stat').type = 'gauge-of-doom'; }, 'no schema'],
];
let failed = 0;
for (const [what, breakIt, reason] of broken) {
  const copy = structuredClone(dash);
  breakIt(copy);
  const r = check(copy);
  if (r.problems.some((l) => l.includes(reason))) {
    console.log(`ok - refused: ${what} (${r.problems.find((l) => l.includes(reason))})`);
  } else {
    failed++;
    console.log(`not ok - accepted: ${what}: ${r.problems.join('; ') || 'no problem found'}`);
  }
}
process.exit(failed ? 1 : 0);
