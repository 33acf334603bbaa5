// Checks OTLP/HTTP JSON bodies against the OTLP trace protobuf schema (the generated protobufjs
// root that @opentelemetry/otlp-transformer ships), so a misspelt field, a wrong type or an id
// that is not hex fails (tests/integration/test_otel.c runs it on what its receiver kept).
//
//   node --import ./tests/clients/lib/register.mjs tests/clients/otlp-check.mjs DIR
//
// Every DIR/*.json is decoded as ExportTraceServiceRequest: the hex ids of the JSON mapping are
// turned into bytes, the object goes through fromObject, protobuf binary and back, and must come
// out equal to what was sent (a field protobufjs does not know is dropped, so it shows).
// Exit 0 when all pass, 1 on the first mismatch, 77 when the packages are not installed.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const deps = process.env.MCPQ_CLIENTS_DEPS || 'build/clients';
const rootFile = path.join(deps, 'node_modules/@opentelemetry/otlp-transformer/build/src/generated/root.js');
if (!fs.existsSync(rootFile)) {
  console.error(`otlp-check: ${rootFile} is missing (tests/clients/install.sh)`);
  process.exit(77);
}
const require = createRequire(path.resolve(rootFile));
const root = require(path.resolve(rootFile));
const Req = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

const ID_LEN = { traceId: 32, spanId: 16, parentSpanId: 16 };

// The OTLP JSON mapping's hex ids as the base64 protobufjs reads for bytes fields.
function idsToBase64(v, where) {
  if (Array.isArray(v)) return v.map((x, i) => idsToBase64(x, `${where}[${i}]`));
  if (v && typeof v === 'object') {
    const out = {};
    for (const [k, x] of Object.entries(v)) {
      if (k in ID_LEN) {
        assert.match(x, new RegExp(`^[0-9a-f]{${ID_LEN[k]}}$`), `${where}.${k} is not lowercase hex`);
        out[k] = Buffer.from(x, 'hex').toString('base64');
      } else {
        out[k] = idsToBase64(x, `${where}.${k}`);
      }
    }
    return out;
  }
  return v;
}

// What toObject(defaults: false) leaves out: empty arrays and objects' empty arrays.
function dropEmpty(v) {
  if (Array.isArray(v)) return v.map(dropEmpty);
  if (v && typeof v === 'object') {
    const out = {};
    for (const [k, x] of Object.entries(v)) if (!(Array.isArray(x) && x.length === 0)) out[k] = dropEmpty(x);
    return out;
  }
  return v;
}

const dir = process.argv[2];
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
if (files.length === 0) {
  console.error(`otlp-check: no bodies in ${dir}`);
  process.exit(1);
}
let spans = 0;
for (const f of files) {
  const sent = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
  const obj = idsToBase64(sent, f);
  const wire = Req.encode(Req.fromObject(obj)).finish();
  const back = Req.toObject(Req.decode(wire), { longs: String, enums: Number, bytes: String });
  try {
    assert.deepStrictEqual(back, dropEmpty(obj));
  } catch (e) {
    console.error(`otlp-check: ${f} does not survive the OTLP schema:\n${e.message}`);
    process.exit(1);
  }
  for (const rs of sent.resourceSpans) for (const ss of rs.scopeSpans) spans += ss.spans.length;
}
console.log(`otlp-check: ${files.length} bodies, ${spans} spans match the OTLP trace schema`);
