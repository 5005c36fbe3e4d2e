import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EvaluationSummaryCounter, type EvaluationSummary } from '../src/events/evaluation-summaries.ts';

// The SDK's per-(flag, variant, reason) counter (docs/sdk.md "Evaluation counts"). Expected counts
// are written by hand from the calls each test makes.

const rows = (summary: EvaluationSummary | undefined) => (summary?.counts ?? []).map((c) => `${c.flag_key}/${c.variant_key}/${c.reason}=${c.count}`).sort();

test('counts per (flag, variant, reason) with flags alternating (the remembered flag switches each call)', () => {
  let now = 1_000;
  const counter = new EvaluationSummaryCounter(100, () => now);
  counter.count('a', 'on', 'SPLIT');
  counter.count('b', 'on', 'SPLIT');
  counter.count('a', 'on', 'SPLIT');
  counter.count('a', 'off', 'SPLIT');
  counter.count('a', 'off', 'DEFAULT');
  counter.count('b', 'on', 'SPLIT');
  counter.count('a', 'on', 'SPLIT');
  counter.count('b', 'off', 'OFF');
  now = 5_000;
  assert.equal(counter.size, 5);
  const summary = counter.take();
  assert.deepEqual(rows(summary), ['a/off/DEFAULT=1', 'a/off/SPLIT=1', 'a/on/SPLIT=3', 'b/off/OFF=1', 'b/on/SPLIT=2']);
  assert.equal(summary!.start_ms, 1_000);
  assert.equal(summary!.end_ms, 5_000);
  assert.equal(counter.take(), undefined, 'a take hands over everything');
  // After a take the remembered flag is forgotten: counting the same flag again starts a new summary.
  counter.count('b', 'on', 'SPLIT');
  assert.deepEqual(rows(counter.take()), ['b/on/SPLIT=1']);
});

test('more than eight (variant, reason) keys for one flag: the rest are counted too', () => {
  const counter = new EvaluationSummaryCounter(100, () => 0);
  // 12 variants × 1 reason, each counted (i + 1) times, interleaved: 12 keys, 78 evaluations.
  for (let round = 0; round < 12; round++) for (let i = round; i < 12; i++) counter.count('f', `v${i}`, 'SPLIT');
  assert.equal(counter.size, 12);
  const expected = Array.from({ length: 12 }, (_, i) => `f/v${i}/SPLIT=${i + 1}`).sort();
  assert.deepEqual(rows(counter.take()), expected);
});

test('the key bound: a new key beyond it is dropped; keys held still count; bad flag keys are never counted', () => {
  const counter = new EvaluationSummaryCounter(3, () => 0);
  // A bad key first, while nothing is remembered (a JavaScript caller may pass anything).
  counter.count(undefined as unknown as string, 'on', 'SPLIT');
  counter.count('', 'on', 'SPLIT');
  counter.count('x'.repeat(257), 'on', 'SPLIT');
  counter.count('a', 'on', 'SPLIT');
  counter.count('a', 'off', 'SPLIT');
  counter.count('b', 'on', 'SPLIT');
  counter.count('b', 'off', 'SPLIT'); // a 4th key: dropped
  counter.count('c', 'on', 'SPLIT'); // a new flag: dropped
  counter.count('a', 'on', 'SPLIT'); // held: counted
  counter.count('b', 'on', 'SPLIT'); // held: counted
  counter.count(undefined as unknown as string, 'on', 'SPLIT');
  assert.equal(counter.size, 3);
  assert.equal(counter.dropped, 2);
  assert.deepEqual(rows(counter.take()), ['a/off/SPLIT=1', 'a/on/SPLIT=2', 'b/on/SPLIT=2']);
});
