// ingress/console/prom.js, the operator console's /metrics parser and quantiles (docs/console.md
// "Live metrics"), without a browser: run by tests/e2e/test_console_prom.sh. Every expected
// quantile is worked out by hand in the comment beside it, the way PromQL's histogram_quantile
// computes it (linear interpolation inside the bucket the rank q * count falls in).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { bucketDelta, bucketsOf, counterIncrease, histogramQuantile, parseProm, sumOf } from '../../ingress/console/prom.js';

const near = (got, want, what) => assert.ok(Math.abs(got - want) < 1e-12, `${what}: ${got}, want ${want}`);

test('label values with escaped quote, backslash and newline, and braces or commas inside', () => {
  const s = parseProm('esc{a="x\\"y\\\\z\\nw",b="{,}",c="a # b"} -1.5e3\n');
  assert.deepEqual(s, [{ name: 'esc', labels: { a: 'x"y\\z\nw', b: '{,}', c: 'a # b' }, value: -1500 }]);
  assert.throws(() => parseProm('x{a="\\q"} 1\n'), /line 1: bad escape \\q in label a/);
  assert.throws(() => parseProm('x{a="unterminated} 1\n'), /line 1: unterminated value of label a/);
  assert.throws(() => parseProm('ok 1\nx{a="b" 1\n'), /line 2: expected , or \}/);
  assert.throws(() => parseProm('ok 1\n\n{a="b"} 1\n'), /line 3: no metric name/);
  assert.throws(() => parseProm('x one\n'), /line 1: bad value "one"/);
});

test('+Inf, -Inf and NaN as values and as le', () => {
  const s = parseProm(['a +Inf', 'b -Inf', 'c NaN', 'd Inf', 'h_bucket{le="+Inf"} 4', 'h_bucket{le="1"} 3'].join('\n'));
  assert.equal(sumOf(s, 'a'), Infinity);
  assert.equal(sumOf(s, 'b'), -Infinity);
  assert.ok(Number.isNaN(sumOf(s, 'c')));
  assert.equal(sumOf(s, 'd'), Infinity);
  assert.deepEqual(bucketsOf(s, 'h'), [{ le: 1, count: 3 }, { le: Infinity, count: 4 }]);
});

test('timestamps and exemplars after the value are tolerated, CRLF and comments skipped', () => {
  const s = parseProm([
    '# HELP h_seconds a histogram',
    '# TYPE h_seconds histogram',
    'h_seconds_bucket{le="0.1"} 5 # {trace_id="4bf92f3577b34da6a3ce929d0e0e4736"} 0.05 1700000000.123',
    'h_seconds_bucket{le="+Inf"} 7 # {trace_id="00f067aa0ba902b7"} 2.5',
    'with_ts 3 1700000000000\r',
    'spaced{a="b"}   4   ',
    '',
  ].join('\n'));
  assert.deepEqual(bucketsOf(s, 'h_seconds'), [{ le: 0.1, count: 5 }, { le: Infinity, count: 7 }]);
  assert.equal(sumOf(s, 'with_ts'), 3);
  assert.equal(sumOf(s, 'spaced', { a: 'b' }), 4);
  assert.throws(() => parseProm('x 1 2 3\n'), /line 1: expected a value/);
});

test('bucketsOf sums the other labels per le, the +Inf bucket last', () => {
  const s = parseProm([
    'm_bucket{method="tools/call",pod="a",le="0.01"} 1',
    'm_bucket{method="tools/call",pod="b",le="0.01"} 2',
    'm_bucket{method="tools/call",pod="a",le="+Inf"} 1',
    'm_bucket{method="tools/call",pod="b",le="+Inf"} 4',
    'm_bucket{method="other",le="0.01"} 100',
    'm_bucket{method="other",le="+Inf"} 100',
  ].join('\n'));
  assert.deepEqual(bucketsOf(s, 'm', { method: 'tools/call' }), [{ le: 0.01, count: 3 }, { le: Infinity, count: 5 }]);
  assert.deepEqual(bucketsOf(s, 'absent'), []);
});

test('quantiles as PromQL histogram_quantile computes them on a known histogram', () => {
  // 10 observations: 2 in (0, 0.001], 4 in (0.001, 0.01], 4 in (0.01, 0.1], none above.
  const b = [{ le: 0.001, count: 2 }, { le: 0.01, count: 6 }, { le: 0.1, count: 10 }, { le: Infinity, count: 10 }];
  // q=0.5: rank 5 falls in (0.001, 0.01], 3 into its 4: 0.001 + 0.009 * 3/4
  near(histogramQuantile(0.5, b), 0.00775, 'p50');
  // q=0.1: rank 1 in the first bucket, from 0: 0.001 * 1/2
  near(histogramQuantile(0.1, b), 0.0005, 'p10');
  // q=0.99: rank 9.9 in (0.01, 0.1], 3.9 into its 4: 0.01 + 0.09 * 3.9/4
  near(histogramQuantile(0.99, b), 0.09775, 'p99');
  // q=0.6: rank 6 is the upper edge of (0.001, 0.01]
  near(histogramQuantile(0.6, b), 0.01, 'p60');
  // q=0: rank 0 in the first bucket: its lower bound 0
  near(histogramQuantile(0, b), 0, 'p0');
  // a rank in the +Inf bucket: the highest finite upper bound
  assert.equal(histogramQuantile(0.9, [{ le: 0.1, count: 1 }, { le: Infinity, count: 10 }]), 0.1);
  // q outside 0..1
  assert.equal(histogramQuantile(-0.1, b), -Infinity);
  assert.equal(histogramQuantile(1.1, b), Infinity);
  // no +Inf bucket: no value
  assert.ok(Number.isNaN(histogramQuantile(0.5, b.slice(0, 3))));
  // a non-monotonic scrape (buckets read while observed) is made monotonic first: as if
  // (0.01] held 6, so q=0.5 is still 0.00775
  const torn = [{ le: 0.001, count: 2 }, { le: 0.01, count: 6 }, { le: 0.05, count: 5 }, { le: 0.1, count: 10 }, { le: Infinity, count: 10 }];
  near(histogramQuantile(0.5, torn), 0.00775, 'p50 of a torn scrape');
});

test('an empty histogram has no quantile', () => {
  assert.ok(Number.isNaN(histogramQuantile(0.5, [])));
  assert.ok(Number.isNaN(histogramQuantile(0.5, bucketsOf(parseProm('other 1\n'), 'm'))));
  assert.ok(Number.isNaN(histogramQuantile(0.5, [{ le: 1, count: 0 }, { le: Infinity, count: 0 }])));
  assert.ok(Number.isNaN(histogramQuantile(0.99, [{ le: Infinity, count: 5 }])));
});

test('between two scrapes: what was observed in between; a counter reset is a restart, never negative', () => {
  const b = [{ le: 0.001, count: 2 }, { le: 0.01, count: 6 }, { le: 0.1, count: 10 }, { le: Infinity, count: 10 }];
  const later = b.map((x, i) => ({ le: x.le, count: x.count + [0, 0, 4, 4][i] }));
  const d = bucketDelta(b, later);
  assert.deepEqual(d.map((x) => x.count), [0, 0, 4, 4]);
  // the 4 in (0.01, 0.1]: q=0.5 is rank 2 of 4 there, 0.01 + 0.09 * 2/4
  near(histogramQuantile(0.5, d), 0.055, 'p50 of the delta');
  // the process restarted between the scrapes (a bucket went down): what it counted since
  // its start is what was observed, as PromQL's rate() reads a counter reset
  const restarted = [{ le: 0.001, count: 1 }, { le: 0.01, count: 1 }, { le: 0.1, count: 3 }, { le: Infinity, count: 3 }];
  assert.deepEqual(bucketDelta(later, restarted), restarted);
  for (const x of bucketDelta(later, restarted)) assert.ok(x.count >= 0);
  // other bucket bounds (another build): no delta
  assert.equal(bucketDelta(b, [{ le: 1, count: 1 }, { le: Infinity, count: 1 }]), null);
  assert.equal(bucketDelta(null, b), null);
  // counters: the increase, or the value since the restart when it went down
  assert.equal(counterIncrease(10, 14), 4);
  assert.equal(counterIncrease(14, 3), 3);
  assert.equal(counterIncrease(5, 5), 0);
  assert.ok(Number.isNaN(counterIncrease(undefined, 5)));
});
