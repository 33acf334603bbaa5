// Differential test of common/sch.c against ajv (the 2020-12 build, ajv/dist/2020): a fixed
// seed generates documents for the schemas below (which use the keywords JSON Schema 2020-12
// added: if/then/else, prefixItems, contains, dependent*, multipleOf, unevaluated*, $ref to
// $defs, $anchor and $id), each document is validated by ajv and by sch.c (build/sch-check,
// tests/schema/sch_check.c), and any disagreement fails the test, the first few printed.
//
//   node tests/schema/sch-ajv.mjs SCH_CHECK [COUNT]
//
// ajv comes from the npm packages of tests/clients (package.json pins ajv 8.20.0), installed by
// tests/clients/install.sh into $MCPQ_CLIENTS_DEPS, else $MCPQ_CLIENTS_WORK, else
// <repo>/build/clients; without them the test skips (exit 77). ajv runs with
// multipleOfPrecision 9 (its default divides in binary floating point, so it calls 0.3 not a
// multiple of 0.1; sch.c compares decimals exactly, sch.h) and without format validation
// (format is an annotation in 2020-12, and in sch.c).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
const schCheck = process.argv[2];
const count = Number(process.argv[3] || 2000);
if (!schCheck) {
  console.error('usage: node tests/schema/sch-ajv.mjs SCH_CHECK [COUNT]');
  process.exit(2);
}
const deps =
  process.env.MCPQ_CLIENTS_DEPS || process.env.MCPQ_CLIENTS_WORK || path.join(repo, 'build/clients');
if (!existsSync(path.join(deps, 'node_modules/ajv/dist/2020.js'))) {
  console.log(`ok - # SKIP ajv is not installed in ${deps} (run tests/clients/install.sh)`);
  process.exit(77);
}
const require = createRequire(path.join(deps, 'node_modules/index.js'));
const Ajv2020 = require('ajv/dist/2020').default;
const ajvVersion = require('ajv/package.json').version;

// The schemas: what MCP servers write into inputSchemas and requestedSchemas, and every
// 2020-12 keyword mcpq implements, alone and combined.
const schemas = {
  ifThenElse: {
    type: 'object',
    properties: { kind: { enum: ['a', 'b', 1] } },
    if: { properties: { kind: { const: 'a' } }, required: ['kind'] },
    then: { properties: { x: { type: 'integer' } }, required: ['x'] },
    else: { properties: { x: { type: 'string' } } },
  },
  ifOnly: { if: { type: 'string' }, then: { minLength: 2 } },
  notIf: { not: { if: { type: 'number' }, then: { minimum: 3 }, else: false } },
  prefixClosed: { prefixItems: [{ type: 'integer' }, { type: 'string' }], items: false },
  prefixOpen: { prefixItems: [{ const: 'a' }], items: { type: 'number' }, minItems: 1 },
  contains: { contains: { type: 'integer', minimum: 2 } },
  containsBounds: { contains: { type: 'string' }, minContains: 2, maxContains: 3 },
  containsZero: { contains: { const: 'x' }, minContains: 0, maxContains: 1 },
  dependentRequired: { dependentRequired: { a: ['b', 'c'], b: ['x'] } },
  dependentSchemas: {
    properties: { a: true },
    dependentSchemas: { a: { required: ['b'], properties: { b: { type: 'integer' } } } },
  },
  multipleHalf: { multipleOf: 0.5 },
  multipleInt: { type: 'integer', multipleOf: 3, maximum: 30 },
  multipleCents: { multipleOf: 0.01, minimum: 0 },
  unevalAllOf: {
    properties: { a: true },
    allOf: [{ properties: { b: { type: 'string' } } }],
    unevaluatedProperties: false,
  },
  unevalAnyOf: {
    anyOf: [
      { properties: { a: { type: 'integer' } }, required: ['a'] },
      { properties: { b: { type: 'string' } }, required: ['b'] },
    ],
    unevaluatedProperties: false,
  },
  unevalOneOf: {
    oneOf: [
      { properties: { kind: { const: 'x' }, x: true }, required: ['kind'] },
      { properties: { kind: { const: 'y' }, y: true }, required: ['kind'] },
    ],
    unevaluatedProperties: false,
  },
  unevalIf: {
    if: { properties: { a: { const: 1 } }, required: ['a'] },
    then: { properties: { b: true } },
    else: { properties: { c: true } },
    unevaluatedProperties: false,
  },
  unevalRef: {
    $defs: { base: { properties: { a: true, b: { type: 'integer' } } } },
    $ref: '#/$defs/base',
    properties: { c: true },
    unevaluatedProperties: false,
  },
  unevalDependent: {
    properties: { a: true },
    dependentSchemas: { a: { properties: { b: true } } },
    unevaluatedProperties: false,
  },
  unevalSchema: {
    properties: { a: true },
    patternProperties: { '^x_': { type: 'integer' } },
    unevaluatedProperties: { type: 'string', maxLength: 2 },
  },
  unevalNested: {
    properties: {
      a: { properties: { b: true }, unevaluatedProperties: false },
      c: true,
    },
    unevaluatedProperties: false,
  },
  unevalItemsPrefix: { prefixItems: [{ type: 'integer' }], unevaluatedItems: false },
  // Not unevaluatedItems next to contains: ajv 8.20.0 ignores the items contains evaluated
  // (it fails 6 cases of the official suite's unevaluatedItems.json, "... depends on adjacent
  // contains" among them); sch.c passes them (unit/common/test_sch_suite).
  unevalItemsAllOf: {
    allOf: [{ prefixItems: [true, { type: 'integer' }] }],
    unevaluatedItems: { type: 'boolean' },
  },
  unevalItemsAnyOf: {
    anyOf: [{ prefixItems: [{ const: 1 }] }, { prefixItems: [true, { type: 'string' }] }],
    unevaluatedItems: false,
  },
  anchorRef: {
    $defs: { pos: { $anchor: 'pos', type: 'integer', minimum: 1 } },
    type: 'object',
    properties: { n: { $ref: '#pos' }, m: { type: 'array', items: { $ref: '#/$defs/pos' } } },
  },
  idRef: {
    $id: 'https://example.com/schemas/root.json',
    $defs: { item: { $id: 'item.json', type: 'string', pattern: '^[a-z]+$' } },
    properties: { a: { $ref: 'item.json' }, b: { $ref: 'https://example.com/schemas/item.json' } },
  },
  tree: {
    type: 'object',
    properties: { value: { type: 'integer' }, kids: { type: 'array', items: { $ref: '#' } } },
    required: ['value'],
    additionalProperties: false,
  },
  elicitation: {
    type: 'object',
    properties: {
      name: { type: 'string', title: 'Name', minLength: 1, maxLength: 3 },
      email: { type: 'string', format: 'email' },
      age: { type: 'integer', minimum: 0, maximum: 150 },
      plan: { type: 'string', enum: ['a', 'b'], enumNames: ['A', 'B'] },
      ok: { type: 'boolean', default: false },
      score: { type: 'number', exclusiveMaximum: 5 },
    },
    required: ['name'],
  },
  discriminated: {
    oneOf: [
      { properties: { kind: { const: 'a' }, a: { type: 'integer' } }, required: ['kind', 'a'] },
      { properties: { kind: { const: 'b' }, b: { type: 'string' } }, required: ['kind'] },
    ],
  },
  names: {
    type: 'object',
    propertyNames: { pattern: '^[a-c]+$', maxLength: 2 },
    minProperties: 1,
    maxProperties: 3,
  },
  unique: { type: 'array', items: { enum: [1, 2, 'a', null, [1]] }, uniqueItems: true },
  codePoints: { type: 'string', minLength: 2, maxLength: 3, pattern: '^[^0-9]' },
};

// A small seeded generator (mulberry32): the same documents on every run.
let seed = 0x5eed2020;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (list) => list[Math.floor(rand() * list.length)];

// The names, strings and numbers a schema mentions: documents made of them hit its keywords.
function vocabulary(schema) {
  const v = { names: new Set(['z']), strings: new Set(['', 'é', '😀x', 'ab', '7a']), numbers: new Set([0, 1, -1, 2.5]), values: [] };
  const walk = (s) => {
    if (Array.isArray(s)) return s.forEach(walk);
    if (!s || typeof s !== 'object') return;
    for (const [k, x] of Object.entries(s)) {
      if (['properties', 'dependentRequired', 'dependentSchemas'].includes(k)) Object.keys(x).forEach((n) => v.names.add(n));
      if (k === 'patternProperties') v.names.add('x_1');
      if (k === 'required' || (k === 'dependentRequired')) [].concat(...Object.values(k === 'required' ? { x } : x)).forEach((n) => v.names.add(n));
      if (k === 'const') v.values.push(x);
      if (k === 'enum') v.values.push(...x);
      if (typeof x === 'number') [x, x - 1, x + 1, x * 2, x / 2].forEach((n) => v.numbers.add(n));
      walk(x);
    }
  };
  walk(schema);
  v.names = [...v.names];
  v.strings = [...v.strings, ...v.names];
  v.numbers = [...v.numbers];
  return v;
}

function value(v, depth) {
  const r = rand();
  if (r < 0.15 && v.values.length) return structuredClone(pick(v.values));
  if (r < 0.3) return pick(v.numbers);
  if (r < 0.38) return Math.floor(rand() * 40) / pick([1, 2, 4, 100]);
  if (r < 0.55) return pick(v.strings);
  if (r < 0.62) return pick([true, false, null]);
  if (depth > 2) return pick(v.numbers);
  if (r < 0.8) return Array.from({ length: Math.floor(rand() * 5) }, () => value(v, depth + 1));
  const o = {};
  for (let n = Math.floor(rand() * 5); n > 0; n--) o[pick(v.names)] = value(v, depth + 1);
  return o;
}

// A document for schema: mostly an object or array of its vocabulary, sometimes anything.
function documentFor(v) {
  const r = rand();
  if (r < 0.45) {
    const o = {};
    for (let n = Math.floor(rand() * 5); n > 0; n--) o[pick(v.names)] = value(v, 1);
    return o;
  }
  if (r < 0.7) return Array.from({ length: Math.floor(rand() * 6) }, () => value(v, 1));
  return value(v, 0);
}

const ajv = new Ajv2020({ strict: false, validateFormats: false, multipleOfPrecision: 9 });
const work = mkdtempSync(path.join(tmpdir(), 'mcpq-sch-ajv-'));
const names = Object.keys(schemas);
const perSchema = Math.ceil(count / names.length);
const disagreements = [];
let total = 0;
let valid = 0;
try {
  for (const name of names) {
    const validate = ajv.compile(schemas[name]);
    const v = vocabulary(schemas[name]);
    const docs = Array.from({ length: perSchema }, () => documentFor(v));
    const file = path.join(work, `${name}.json`);
    writeFileSync(file, JSON.stringify(schemas[name]));
    const run = spawnSync(schCheck, [file], {
      input: docs.map((d) => JSON.stringify(d)).join('\n') + '\n',
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    if (run.status !== 0) {
      disagreements.push(`${name}: sch-check exited ${run.status}: ${run.stderr.trim()}`);
      continue;
    }
    const lines = run.stdout.split('\n').slice(0, docs.length);
    docs.forEach((d, i) => {
      const want = validate(d);
      const got = lines[i] || 'E no answer';
      total++;
      valid += want ? 1 : 0;
      if (got.startsWith('E') || (got === '1') !== want)
        disagreements.push(`${name}: ${JSON.stringify(d)}: ajv ${want ? 'valid' : `invalid (${ajv.errorsText(validate.errors)})`}, mcpq ${got === '1' ? 'valid' : got}`);
    });
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
console.log(`sch.c vs ajv ${ajvVersion}: ${names.length} schemas, ${total} documents (${valid} valid, ${total - valid} invalid per ajv), ${disagreements.length} disagreements`);
for (const d of disagreements.slice(0, 10)) console.log(`  ${d}`);
if (disagreements.length || valid < total / 10 || valid > total - total / 10) {
  if (!disagreements.length) console.log('not ok - the documents are too one-sided to compare');
  process.exit(1);
}
console.log('ok - sch.c agrees with ajv');
