import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EvaluationCounter, HOUR_MS, type DrainedCounts, type InsightsRepository } from '@switchyard/core';
import { EvaluationCountFlusher, InsightsService, MAX_COUNTS_PER_REPORT, PartialWriteError, reportsOf } from '../src/index.ts';
import type { ScopeResolver } from '../src/scopes.ts';

// The flusher and the report checks of evaluation counts (docs/insights.md). Expected values are
// the counts each test feeds in, by hand.

const scope = { orgId: 'o', projectId: 'p', environmentId: 'e' };
const on = { flag_key: 'f', variant_key: 'on', reason: 'DEFAULT' };

describe('EvaluationCountFlusher', () => {
  test('stop() writes what is held; a failed write is put back and goes with the next flush, once', async () => {
    const counter = new EvaluationCounter(10, () => 0);
    const written: DrainedCounts[] = [];
    let fail = true;
    const errors: unknown[] = [];
    const flusher = new EvaluationCountFlusher(
      counter,
      async (drained) => {
        if (fail) throw new Error('database down');
        written.push(drained);
      },
      { intervalMs: 60_000, onError: (error) => errors.push(error) },
    );
    counter.count(scope, [on, on]);
    await flusher.flush();
    assert.equal(errors.length, 1);
    assert.equal(written.length, 0);
    fail = false;
    counter.count(scope, [on]);
    await flusher.stop();
    // 2 put back + 1 since = 3, in one write.
    assert.equal(written.length, 1);
    assert.deepEqual(written[0]!.counts.map((c) => c.count), [3]);
    await flusher.flush();
    assert.equal(written.length, 1, 'nothing left: nothing written again');
  });

  test('a partial write puts back only what was not written', async () => {
    const counter = new EvaluationCounter(10, () => 0);
    const writes: number[] = [];
    let calls = 0;
    const flusher = new EvaluationCountFlusher(counter, async (drained) => {
      calls++;
      if (calls === 1) throw new PartialWriteError({ counts: drained.counts.filter((c) => c.flagKey === 'g'), lastEvaluated: [] }, new Error('hop down'));
      writes.push(...drained.counts.map((c) => c.count));
    });
    counter.count(scope, [on, { ...on, flag_key: 'g' }, { ...on, flag_key: 'g' }]);
    await flusher.flush();
    await flusher.flush();
    // f's 1 was written by the first call; only g's 2 goes again.
    assert.deepEqual(writes, [2]);
  });
});

describe('InsightsService.recordCounts (a gateway\'s report)', () => {
  const now = 100 * HOUR_MS + 5;
  const received: unknown[] = [];
  const repository = { addCounts: async (drained: unknown) => (received.push(drained), 1) } as unknown as InsightsRepository;
  const service = new InsightsService({ flags: {} as never, projects: {} as never, lifecycle: {} as never, insights: repository }, {} as ScopeResolver, () => now);
  const count = { orgId: 'o', projectId: 'p', environmentId: 'e', flagKey: 'f', variantKey: 'on', reason: 'DEFAULT', hourMs: 100 * HOUR_MS, count: 2 };

  test('a well-formed report is written', async () => {
    await service.recordCounts({ counts: [count], lastEvaluated: [{ orgId: 'o', projectId: 'p', environmentId: 'e', flagKey: 'f', atMs: now }] });
    assert.equal(received.length, 1);
  });

  test('refused: too many counts, hours not on the hour or far from now, counts not positive, long strings, not a report', async () => {
    const refused = (report: unknown) => assert.rejects(service.recordCounts(report), (error: { code?: string }) => error.code === 'INVALID_ARGUMENT');
    await refused({ counts: Array.from({ length: MAX_COUNTS_PER_REPORT + 1 }, () => count), lastEvaluated: [] });
    await refused({ counts: [{ ...count, hourMs: count.hourMs + 1 }], lastEvaluated: [] });
    await refused({ counts: [{ ...count, hourMs: count.hourMs - 72 * HOUR_MS }], lastEvaluated: [] });
    await refused({ counts: [{ ...count, count: 0 }], lastEvaluated: [] });
    await refused({ counts: [{ ...count, count: 1.5 }], lastEvaluated: [] });
    await refused({ counts: [{ ...count, reason: 'x'.repeat(33) }], lastEvaluated: [] });
    await refused({ counts: [{ ...count, flagKey: 'x'.repeat(257) }], lastEvaluated: [] });
    await refused({ counts: [], lastEvaluated: [{ orgId: 'o', projectId: 'p', environmentId: 'e', flagKey: 'f', atMs: now + 72 * HOUR_MS }] });
    await refused([count]);
    await refused(null);
    assert.equal(received.length, 1, 'nothing refused was written');
  });

  test('reportsOf splits a drain into reports the services accept', () => {
    const drained = { counts: Array.from({ length: 2 * MAX_COUNTS_PER_REPORT + 1 }, () => count), lastEvaluated: [] };
    assert.deepEqual(reportsOf(drained).map((r) => r.counts.length), [MAX_COUNTS_PER_REPORT, MAX_COUNTS_PER_REPORT, 1]);
  });
});
