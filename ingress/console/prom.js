// The Prometheus text exposition format (version 0.0.4) and histogram quantiles, for the live
// charts of the operator console (docs/console.md). No imports: tests load it as it is.

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*/;

/** A sample value: a float, or +Inf, -Inf, NaN. */
function parseValue(s) {
  if (s === '+Inf' || s === 'Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  if (s === 'NaN') return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) throw new Error(`bad value "${s}"`);
  return Number(s);
}

/** The labels of `{...}` starting at line[i] (which is '{'): [labels, index after '}']. */
function parseLabels(line, i) {
  const labels = {};
  i++;
  for (;;) {
    while (line[i] === ' ' || line[i] === '\t') i++;
    if (line[i] === '}') return [labels, i + 1];
    const m = LABEL.exec(line.slice(i));
    if (!m) throw new Error(`bad label name at column ${i + 1}`);
    const name = m[0];
    i += name.length;
    while (line[i] === ' ' || line[i] === '\t') i++;
    if (line[i] !== '=' || line[i + 1] !== '"') throw new Error(`expected ="value" after ${name}`);
    i += 2;
    let value = '';
    for (;;) {
      const c = line[i];
      if (c === undefined) throw new Error(`unterminated value of label ${name}`);
      if (c === '"') break;
      if (c === '\\') {
        const e = line[i + 1];
        if (e === 'n') value += '\n';
        else if (e === '\\' || e === '"') value += e;
        else throw new Error(`bad escape \\${e} in label ${name}`);
        i += 2;
      } else {
        value += c;
        i++;
      }
    }
    labels[name] = value;
    i++;
    while (line[i] === ' ' || line[i] === '\t') i++;
    if (line[i] === ',') i++;
    else if (line[i] !== '}') throw new Error(`expected , or } after label ${name}`);
  }
}

/**
 * Parses a /metrics body: the samples, each {name, labels, value}. Comments (# HELP, # TYPE)
 * and blank lines are skipped; a timestamp after the value and an OpenMetrics exemplar
 * (` # {labels} value [timestamp]`) are read past; a malformed line throws an Error naming its
 * line number.
 */
export function parseProm(text) {
  const samples = [];
  const lines = text.split('\n');
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n].replace(/\r$/, '');
    if (line.trim() === '' || line.startsWith('#')) continue;
    try {
      const m = NAME.exec(line);
      if (!m) throw new Error('no metric name');
      let i = m[0].length;
      let labels = {};
      if (line[i] === '{') [labels, i] = parseLabels(line, i);
      const after = line.slice(i);
      const exemplar = after.search(/[ \t]#/); // after the labels: no '#' inside a value
      const rest = (exemplar < 0 ? after : after.slice(0, exemplar)).trim().split(/[ \t]+/);
      if (rest.length < 1 || rest.length > 2 || rest[0] === '') throw new Error('expected a value');
      samples.push({ name: m[0], labels, value: parseValue(rest[0]) });
    } catch (e) {
      throw new Error(`/metrics line ${n + 1}: ${e.message}`);
    }
  }
  return samples;
}

function matches(labels, want) {
  for (const [k, v] of Object.entries(want)) if (labels[k] !== v) return false;
  return true;
}

/** The sum of the samples named name whose labels include want. */
export function sumOf(samples, name, want = {}) {
  let s = 0;
  for (const x of samples) if (x.name === name && matches(x.labels, want)) s += x.value;
  return s;
}

/**
 * The cumulative buckets of histogram name (the `_bucket` samples whose labels include want,
 * summed over the other labels per `le`), as [{le, count}] sorted by le (+Inf last).
 */
export function bucketsOf(samples, name, want = {}) {
  const by = new Map();
  for (const x of samples) {
    if (x.name !== `${name}_bucket` || !matches(x.labels, want) || x.labels.le === undefined) continue;
    const le = parseValue(x.labels.le);
    by.set(le, (by.get(le) ?? 0) + x.value);
  }
  return [...by.entries()].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le);
}

/**
 * How much a counter grew between two scrapes: now - before, or now when it went down (the
 * process restarted and counted now since its start, as PromQL's rate() reads a counter
 * reset); never negative. NaN without a before.
 */
export function counterIncrease(before, now) {
  if (typeof before !== 'number' || typeof now !== 'number') return NaN;
  return now < before ? now : now - before;
}

/**
 * The buckets of what was observed between two scrapes (now - before, per le). When a bucket
 * went down the process restarted: what it counted since its start (now) is the delta, never a
 * negative count. null without a before or when the bucket bounds differ.
 */
export function bucketDelta(before, now) {
  if (!before || before.length !== now.length) return null;
  if (before.some((b, i) => b.le !== now[i].le)) return null;
  if (now.some((b, i) => b.count < before[i].count)) return now.map((b) => ({ le: b.le, count: b.count }));
  return now.map((b, i) => ({ le: b.le, count: b.count - before[i].count }));
}

/**
 * The q-quantile (0..1) of cumulative buckets, as PromQL's histogram_quantile computes it:
 * linear interpolation within the bucket the rank falls in (the first bucket's lower bound is
 * 0 when its upper bound is positive); a rank in the +Inf bucket gives the highest finite
 * upper bound. NaN without observations or without a +Inf bucket.
 */
export function histogramQuantile(q, buckets) {
  if (q < 0) return -Infinity;
  if (q > 1) return Infinity;
  if (buckets.length < 2 || buckets[buckets.length - 1].le !== Infinity) return NaN;
  const counts = [];
  let max = 0;
  for (const b of buckets) { max = Math.max(max, b.count); counts.push(max); } // monotonic
  const total = counts[counts.length - 1];
  if (!(total > 0)) return NaN;
  let rank = q * total;
  let b = counts.findIndex((c) => c >= rank);
  if (b === buckets.length - 1) return buckets[buckets.length - 2].le;
  if (b === 0 && buckets[0].le <= 0) return buckets[0].le;
  let start = 0;
  let end = buckets[b].le;
  let count = counts[b];
  if (b > 0) {
    start = buckets[b - 1].le;
    count -= counts[b - 1];
    rank -= counts[b - 1];
  }
  return start + (end - start) * (rank / count);
}
