import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evaluate, evaluateAll } from '../src/evaluation/index.ts';
import { MAX_PREREQUISITE_DEPTH } from '../src/evaluation/evaluate.ts';
import type { Flag, Prerequisite } from '../src/index.ts';

/**
 * Prerequisites beyond the conformance vectors (test-vectors/evaluation.json has the semantics):
 * the bound on chains, malformed lists and hosts that give no flags fail closed.
 */
const flag = (key: string, prerequisites?: Prerequisite[], extra: Partial<Flag> = {}): Flag => ({
  key, description: '', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }],
  enabled: true, off_variant_key: 'off', rules: [{ id: 'all', conditions: [], variant_key: 'on' }], hashing: [],
  version: 1, archived: false, client_visible: false, created_at_ms: 0, updated_at_ms: 0,
  ...(prerequisites === undefined ? {} : { prerequisites }), ...extra,
});
const user = { context_type: 'user', key: 'u1' };

/** f0 needs f1 needs ... needs f(n−1), each serving "on". */
function chain(n: number): Map<string, Flag> {
  const flags = Array.from({ length: n }, (_, i) => flag(`f${i}`, i + 1 < n ? [{ flag_key: `f${i + 1}`, variant_keys: ['on'] }] : undefined));
  return new Map(flags.map((f) => [f.key, f]));
}

test(`a chain of ${MAX_PREREQUISITE_DEPTH} flags holds; one flag more and its last link fails, so the top fails on its first prerequisite`, () => {
  assert.equal(MAX_PREREQUISITE_DEPTH, 16);
  const env = (flags: Map<string, Flag>) => ({ projectId: 'p', environmentId: 'e', flags });
  const holding = chain(16);
  assert.deepEqual(
    (({ variant_key, reason }) => ({ variant_key, reason }))(evaluate(holding.get('f0')!, user, env(holding))),
    { variant_key: 'on', reason: 'TARGETING_MATCH' },
  );
  const deep = chain(17);
  const top = evaluate(deep.get('f0')!, user, env(deep));
  assert.equal(top.reason, 'PREREQUISITE_FAILED');
  assert.equal(top.prerequisite_key, 'f1');
  assert.equal(top.variant_key, 'off');
  // Evaluated from f1, the same chain is one shorter and holds.
  assert.equal(evaluate(deep.get('f1')!, user, env(deep)).reason, 'TARGETING_MATCH');
});

test('a host that gives no flags fails every prerequisite closed: the off variant, never the rules', () => {
  const dependent = flag('dependent', [{ flag_key: 'base', variant_keys: ['on'] }]);
  const result = evaluate(dependent, user, { projectId: 'p', environmentId: 'e' });
  assert.deepEqual([result.variant_key, result.value, result.reason, result.prerequisite_key], ['off', false, 'PREREQUISITE_FAILED', 'base']);
});

test('malformed prerequisites make the flag an ERROR for every input, as malformed rules do', () => {
  const env = { projectId: 'p', environmentId: 'e', flags: new Map([['base', flag('base')]]) };
  for (const prerequisites of [{}, [null], [{ flag_key: 'base' }], [{ flag_key: 7, variant_keys: ['on'] }], 'base']) {
    const broken = flag('broken', prerequisites as unknown as Prerequisite[]);
    for (const result of [evaluate(broken, user, env), evaluateAll([broken], user, env)[0]!]) {
      assert.equal(result.reason, 'ERROR', JSON.stringify(prerequisites));
      assert.equal(result.error_code, 'GENERAL');
    }
  }
  // An empty list is no prerequisite at all.
  assert.equal(evaluate(flag('plain', []), user, env).reason, 'TARGETING_MATCH');
});

test('evaluating a prerequisite records nothing for it: only the flags asked for get results', () => {
  const flags = chain(3);
  const results = evaluateAll([flags.get('f0')!], user, { projectId: 'p', environmentId: 'e', flags });
  assert.deepEqual(results.map((r) => [r.flag_key, r.variant_key]), [['f0', 'on']]);
});

test('a dense graph of shared prerequisites costs one evaluation per flag, not one per path (10 layers of 10: 10^10 paths)', () => {
  // Layer i's flags each need every flag of layer i + 1 (serving "on"); the last layer needs none.
  const layers = 10;
  const width = 10;
  const flags = new Map<string, Flag>();
  for (let layer = 0; layer < layers; layer++) {
    for (let i = 0; i < width; i++) {
      const next = layer + 1 < layers ? Array.from({ length: width }, (_, j) => ({ flag_key: `l${layer + 1}-${j}`, variant_keys: ['on'] })) : undefined;
      flags.set(`l${layer}-${i}`, flag(`l${layer}-${i}`, next));
    }
  }
  let lookups = 0;
  const counted = new Map(flags);
  const originalGet = counted.get.bind(counted);
  counted.get = (key: string) => {
    lookups += 1;
    return originalGet(key);
  };
  const env = { projectId: 'p', environmentId: 'e', flags: counted };
  assert.equal(evaluate(flags.get('l0-0')!, user, env).reason, 'TARGETING_MATCH');
  // Each of the 90 flags below the top is looked up (and evaluated) once.
  assert.equal(lookups, (layers - 1) * width);
  lookups = 0;
  const all = evaluateAll([...flags.values()], user, env);
  assert.ok(all.every((result) => result.reason === 'TARGETING_MATCH'));
  assert.ok(lookups <= (layers - 1) * width, `${lookups} look-ups for one call over every flag`);
});
