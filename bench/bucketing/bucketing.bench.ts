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
import { runBenchmark, type Workload } from '../support/measure.ts';
import { bucketFor, evaluate } from '../../packages/core/src/evaluation/index.ts';
import type { EvaluationEnvironment } from '../../packages/core/src/evaluation/index.ts';
import type { EvaluationContext } from '../../packages/core/src/model/context.ts';
import type { Flag } from '../../packages/core/src/model/definitions.ts';


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
  client_visible: false,
  created_at_ms: 0,
  updated_at_ms: 0,
};
const ENV: EvaluationEnvironment = { projectId: 'proj-1', environmentId: 'env-prod' };
const FIXED = 'user-100000/new-checkout/proj-1/env-prod';
const FIXED_BYTES = new TextEncoder().encode(FIXED);


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

// Sanity: the benchmarked evaluation really is a split, or the figure would measure the wrong path.
const probe = evaluate(FLAG, CONTEXTS[0]!, ENV);
if (probe.reason !== 'SPLIT') throw new Error(`benchmark flag did not split: ${JSON.stringify(probe)}`);

await runBenchmark('bucketing', workloads);
