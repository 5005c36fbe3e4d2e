/**
 * Evaluate a flag in-process with the pure core, the way a Node SDK does with definitions it
 * received over the sync stream. No server, no database.
 *
 *   npx tsx examples/evaluate-locally.ts
 */
import { evaluate, type EvaluationEnvironment, type Flag } from '@switchyard/core';

const flag: Flag = {
  key: 'new-checkout',
  description: 'the redesigned checkout',
  value_type: 'bool',
  variants: [
    { key: 'on', value: true },
    { key: 'off', value: false },
  ],
  enabled: true,
  off_variant_key: 'off',
  rules: [
    // 1. Everyone at example.com gets it.
    { id: 'staff', conditions: [{ attribute: 'email', op: 'ends_with', values: ['@example.com'] }], variant_key: 'on' },
    // 2. 20% of German users, by user key (bucket = murmurhash3(key/flag/project/env) mod 100000).
    {
      id: 'de-rollout',
      conditions: [{ attribute: 'country', op: 'eq', values: ['DE'] }],
      allocation: {
        context_hash_specs: { user: { parameter_names: [] } },
        buckets: [
          { variant_key: 'on', weight_milli: 200 },
          { variant_key: 'off', weight_milli: 800 },
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

const environment: EvaluationEnvironment = { projectId: 'project-1', environmentId: 'production' };

for (const user of [
  { key: 'u-1', parameters: { email: 'ada@example.com', country: 'UK' } },
  { key: 'u-2', parameters: { email: 'bob@mail.de', country: 'DE' } },
  { key: 'u-3', parameters: { email: 'cy@mail.fr', country: 'FR' } },
]) {
  const result = evaluate(flag, { context_type: 'user', ...user }, environment);
  console.log(`${user.key}: ${result.variant_key} (${result.reason}${result.bucket === undefined ? '' : `, bucket ${result.bucket}`})`);
}
