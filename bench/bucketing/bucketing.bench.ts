/**
 * Bucketing and evaluation throughput on one core.
 *
 *   npx tsx bench/bucketing/bucketing.bench.ts [--rounds 7] [--round-ms 300]
 *
 * Prints a table and one JSON line. Each workload runs its own loop (no per-op closure call), is
 * warmed up first so the figures are for optimised code, then runs several timed rounds; the
 * median round is reported next to a baseline measured in the same process: a bare
 * `murmurhash.v3(string)` call, which is what a naive bucketing implementation costs.
 */
import murmurhash from 'murmurhash';
import { bucketFor, evaluate } from '../../packages/core/src/evaluation/index.ts';
import type { EvaluationEnvironment } from '../../packages/core/src/evaluation/index.ts';
import type { EvaluationContext } from '../../packages/core/src/model/context.ts';
import type { Flag } from '../../packages/core/src/model/definitions.ts';

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : Number.NaN;
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

const ROUNDS = option('rounds', 7);
const ROUND_MS = option('round-ms', 300);
const WARMUP_MS = 1000;

// 1024 distinct users, all matching the rule's conditions so that every evaluation reaches the split.
const KEYS = Array.from({ length: 1024 }, (_, i) => `user-${100_000 + i}`);
const CONTEXTS: EvaluationContext[] = KEYS.map((key, i) => ({
  context_type: 'user',
  key,
  parameters: { country: ['DE', 'FR', 'NL'][i % 3]!, plan: 'pro', age: 20 + (i % 50) },
}));
const MASK = KEYS.length - 1;

const FLAG: Flag = {
  key: 'new-checkout',
  description: 'benchmark flag: 3 conditions and a 50/50 split',
  value_type: 'string',
  variants: [
    { key: 'control', value: 'control' },
    { key: 'treatment', value: 'treatment' },
    { key: 'off', value: 'off' },
  ],
  enabled: true,
  off_variant_key: 'off',
  rules: [
    {
      id: 'eu-pro-adults',
      conditions: [
        { attribute: 'country', op: 'in', values: ['DE', 'FR', 'NL', 'AT'] },
        { attribute: 'plan', op: 'eq', values: ['pro'] },
        { attribute: 'age', op: 'gte', values: [18] },
      ],
      allocation: {
        context_hash_specs: { user: { parameter_names: [] } },
        buckets: [
          { variant_key: 'control', weight_milli: 500 },
          { variant_key: 'treatment', weight_milli: 500 },
        ],
      },
    },
  ],
  hashing: [],
  version: 1,
  archived: false,
  created_at_ms: 0,
  updated_at_ms: 0,
};
const ENV: EvaluationEnvironment = { projectId: 'proj-1', environmentId: 'env-prod' };
const FIXED = 'user-100000/new-checkout/proj-1/env-prod';
const FIXED_BYTES = new TextEncoder().encode(FIXED);

interface Workload {
  name: string;
  /** Runs `n` operations and returns something derived from each so that nothing is optimised away. */
  run: (n: number) => number;
}

const workloads: Workload[] = [
  {
    name: 'baseline: murmurhash.v3(fixed string)',
    run: (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink ^= murmurhash.v3(FIXED, 0);
      return sink;
    },
  },
  {
    name: 'murmurhash.v3(pre-encoded bytes)',
    run: (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink ^= murmurhash.v3(FIXED_BYTES, 0);
      return sink;
    },
  },
  {
    name: 'bucketFor',
    run: (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink ^= bucketFor(KEYS[i & MASK]!, 'new-checkout', 'proj-1', 'env-prod');
      return sink;
    },
  },
  {
    name: 'evaluate (3 conditions + 50/50 split)',
    run: (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink ^= evaluate(FLAG, CONTEXTS[i & MASK]!, ENV).bucket ?? -1;
      return sink;
    },
  },
];

/** Calibrates a batch size, warms up, then returns ops/s of each timed round. */
function measure(workload: Workload): number[] {
  let batch = 1000;
  let sink = 0;
  const warmupEnd = performance.now() + WARMUP_MS;
  while (performance.now() < warmupEnd) {
    const start = performance.now();
    sink ^= workload.run(batch);
    if (performance.now() - start < 20) batch *= 2;
  }
  const rates: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let ops = 0;
    const start = performance.now();
    let elapsed = 0;
    while (elapsed < ROUND_MS) {
      sink ^= workload.run(batch);
      ops += batch;
      elapsed = performance.now() - start;
    }
    rates.push((ops / elapsed) * 1000);
  }
  if (sink === 0.5) console.log('unreachable'); // keeps `sink` observable
  return rates;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

// Sanity: the benchmarked evaluation really is a split, or the figure would measure the wrong path.
const probe = evaluate(FLAG, CONTEXTS[0]!, ENV);
if (probe.reason !== 'SPLIT') throw new Error(`benchmark flag did not split: ${JSON.stringify(probe)}`);

const results = workloads.map((w) => {
  const rates = measure(w);
  return { name: w.name, median: median(rates), min: Math.min(...rates), max: Math.max(...rates) };
});
const baseline = results[0]!.median;

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const rows = results.map((r) => [r.name, fmt(r.median), fmt(r.min), fmt(r.max), `${(r.median / baseline).toFixed(2)}x`]);
const header = ['workload', 'median ops/s', 'min', 'max', 'vs baseline'];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
console.log(`node ${process.version}, ${ROUNDS} rounds of ${ROUND_MS} ms after ${WARMUP_MS} ms warm-up, median reported`);
console.log(line(header));
console.log(widths.map((w) => '-'.repeat(w)).join('  '));
for (const row of rows) console.log(line(row));
console.log(
  JSON.stringify({
    bench: 'bucketing',
    node: process.version,
    rounds: ROUNDS,
    round_ms: ROUND_MS,
    baseline_ops_per_s: Math.round(baseline),
    results: results.map((r) => ({
      name: r.name,
      ops_per_s: Math.round(r.median),
      min_ops_per_s: Math.round(r.min),
      max_ops_per_s: Math.round(r.max),
      ratio_to_baseline: Number((r.median / baseline).toFixed(3)),
    })),
  }),
);
