import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EvaluationCounter, HOUR_MS, insightsRange, type DrainedCounts } from '../src/index.ts';

// The in-memory evaluation counter (docs/insights.md "Counting"). Expected counts are written by
// hand from the calls each test makes.

const envA = { orgId: 'o1', projectId: 'p1', environmentId: 'e1' };
const envB = { orgId: 'o1', projectId: 'p1', environmentId: 'e2' };
const result = (flag_key: string, variant_key: string, reason = 'TARGETING_MATCH') => ({ flag_key, variant_key, reason });
const sorted = (drained: DrainedCounts) =>
  drained.counts.map((c) => `${c.environmentId}/${c.flagKey}/${c.variantKey}/${c.reason}@${c.hourMs}=${c.count}`).sort();

describe('EvaluationCounter', () => {
  test('counts per (hour, environment, flag, variant, reason) and drains everything once', () => {
    let now = 5 * HOUR_MS + 10;
    const counter = new EvaluationCounter(100, () => now);
    counter.count(envA, [result('f', 'on'), result('g', 'off', 'DEFAULT')]);
    counter.count(envA, [result('f', 'on')]);
    counter.count(envA, [result('f', 'off')]);
    counter.count(envB, [result('f', 'on')]);
    now = 6 * HOUR_MS + 1; // the next hour: a key of its own
    counter.count(envA, [result('f', 'on')]);
    assert.equal(counter.size, 5);
    const drained = counter.drain();
    assert.deepEqual(sorted(drained), [
      `e1/f/off/TARGETING_MATCH@${5 * HOUR_MS}=1`,
      `e1/f/on/TARGETING_MATCH@${5 * HOUR_MS}=2`,
      `e1/f/on/TARGETING_MATCH@${6 * HOUR_MS}=1`,
      `e1/g/off/DEFAULT@${5 * HOUR_MS}=1`,
      `e2/f/on/TARGETING_MATCH@${5 * HOUR_MS}=1`,
    ]);
    const last = Object.fromEntries(drained.lastEvaluated.map((l) => [`${l.environmentId}/${l.flagKey}`, l.atMs]));
    assert.deepEqual(last, { 'e1/f': 6 * HOUR_MS + 1, 'e1/g': 5 * HOUR_MS + 10, 'e2/f': 5 * HOUR_MS + 10 });
    assert.equal(drained.dropped, 0);
    assert.equal(drained.counts[0]!.orgId, 'o1');
    const again = counter.drain();
    assert.deepEqual(again.counts, [], 'a drain hands over everything: the next starts empty');
    assert.equal(counter.size, 0);
  });

  test('at most maxKeys distinct keys: evaluations needing a new key beyond it are dropped and reported; held keys still count', () => {
    const counter = new EvaluationCounter(3, () => 0);
    counter.count(envA, [result('a', 'x'), result('b', 'x'), result('c', 'x')]);
    counter.count(envA, [result('d', 'x'), result('a', 'y'), result('a', 'x')]);
    counter.count(envB, [result('a', 'x')]);
    assert.equal(counter.size, 3);
    const drained = counter.drain();
    assert.deepEqual(sorted(drained), ['e1/a/x/TARGETING_MATCH@0=2', 'e1/b/x/TARGETING_MATCH@0=1', 'e1/c/x/TARGETING_MATCH@0=1']);
    assert.equal(drained.dropped, 3, 'd/x, a/y and e2 a/x were not counted');
    assert.deepEqual(drained.lastEvaluated.map((l) => l.flagKey).sort(), ['a', 'b', 'c'], 'a flag with nothing counted has no last evaluation');
  });

  test('restore puts a failed flush back, adding to what was counted since', () => {
    const counter = new EvaluationCounter(10, () => 42);
    counter.count(envA, [result('f', 'on')]);
    const failed = counter.drain();
    counter.count(envA, [result('f', 'on'), result('f', 'off')]);
    counter.restore(failed);
    assert.deepEqual(sorted(counter.drain()), ['e1/f/off/TARGETING_MATCH@0=1', 'e1/f/on/TARGETING_MATCH@0=2']);
  });

  test('maxKeys must be a positive integer', () => {
    assert.throws(() => new EvaluationCounter(0), RangeError);
  });

  test('the remembered hour and environment: hour edges both ways, environments alternating, a drain forgetting them', () => {
    // Counts written by hand from the calls below. The counter keeps the hour (and environment)
    // counted last; these calls cross the hour edge forwards and back (a clock stepping back),
    // alternate environments within one hour, and count again right after a drain.
    let now = 5 * HOUR_MS + HOUR_MS - 1; // the last ms of hour 5
    const counter = new EvaluationCounter(100, () => now);
    counter.count(envA, [result('f', 'on')]);
    now = 6 * HOUR_MS; // the first ms of hour 6
    counter.count(envA, [result('f', 'on')]);
    counter.count(envB, [result('f', 'on')]);
    counter.count(envA, [result('f', 'on'), result('f', 'on')]);
    now = 6 * HOUR_MS - 1; // the clock steps back into hour 5
    counter.count(envB, [result('f', 'on')]);
    now = 6 * HOUR_MS + 5;
    counter.count(envB, [result('f', 'on')]);
    const first = counter.drain();
    assert.deepEqual(sorted(first), [
      `e1/f/on/TARGETING_MATCH@${5 * HOUR_MS}=1`,
      `e1/f/on/TARGETING_MATCH@${6 * HOUR_MS}=3`,
      `e2/f/on/TARGETING_MATCH@${5 * HOUR_MS}=1`,
      `e2/f/on/TARGETING_MATCH@${6 * HOUR_MS}=2`,
    ]);
    // Same hour and environment as before the drain: counted in the new maps, not the drained ones.
    counter.count(envB, [result('f', 'on')]);
    assert.deepEqual(sorted(first).length, 4, 'the drained counts are not touched by later counting');
    assert.equal(first.counts.find((c) => c.environmentId === 'e2' && c.hourMs === 6 * HOUR_MS)!.count, 2);
    assert.deepEqual(sorted(counter.drain()), [`e2/f/on/TARGETING_MATCH@${6 * HOUR_MS}=1`]);
    // restore() then count in the same hour: one key, added up.
    counter.count(envA, [result('g', 'off', 'DEFAULT')]);
    const held = counter.drain();
    counter.restore(held);
    counter.count(envA, [result('g', 'off', 'DEFAULT')]);
    assert.equal(counter.size, 1);
    assert.deepEqual(sorted(counter.drain()), [`e1/g/off/DEFAULT@${6 * HOUR_MS}=2`]);
  });
});

describe('insightsRange', () => {
  const now = 1_700_000_000_000;
  const DAY = 24 * HOUR_MS;
  test('defaults: the last 24 hours of hours, from aligned to its hour', () => {
    const range = insightsRange({}, now);
    assert.deepEqual(range, { granularity: 'hour', toMs: now, fromMs: now - DAY - ((now - DAY) % HOUR_MS) });
  });
  test('day granularity aligns from to its UTC day', () => {
    const range = insightsRange({ from: String(now - 10 * DAY), to: String(now), granularity: 'day' }, now);
    assert.equal(range.fromMs % DAY, 0);
    assert.ok(range.fromMs <= now - 10 * DAY && range.fromMs > now - 11 * DAY);
  });
  test('refused: from not before to, spans beyond 31 days of hours or 400 days of days, bad values', () => {
    const refused = (query: Record<string, unknown>, field: string) =>
      assert.throws(() => insightsRange(query, now), (error: { code?: string; field?: string }) => error.code === 'INVALID_ARGUMENT' && error.field === field, JSON.stringify(query));
    refused({ from: String(now), to: String(now) }, 'from');
    refused({ from: String(now), to: String(now - 1) }, 'from');
    refused({ from: String(now - 31 * DAY - 1), to: String(now) }, 'to');
    refused({ from: String(now - 400 * DAY - 1), to: String(now), granularity: 'day' }, 'to');
    refused({ granularity: 'minute' }, 'granularity');
    refused({ from: 'yesterday' }, 'from');
    refused({ to: '-5' }, 'to');
    assert.doesNotThrow(() => insightsRange({ from: String(now - 31 * DAY), to: String(now) }, now));
    assert.doesNotThrow(() => insightsRange({ from: String(now - 400 * DAY), to: String(now), granularity: 'day' }, now));
  });
});
