import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DomainError, EvaluationCounter, HOUR_MS, type DrainedCounts, type IdempotencyRepository, type InsightsRepository } from '@switchyard/core';
import { CountReportSender, EvaluationCountFlusher, InsightsService, MAX_COUNTS_PER_REPORT, PartialWriteError, reportsOf, type CountReport } from '../src/index.ts';
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
  const received: Array<{ key: string; expiresAtMs: number }> = [];
  const idempotency = {
    storeCountsOnce: async (key: string, _report: unknown, expiresAtMs: number) => (received.push({ key, expiresAtMs }), 1),
  } as unknown as IdempotencyRepository;
  const service = new InsightsService({ flags: {} as never, projects: {} as never, lifecycle: {} as never, insights: {} as InsightsRepository, idempotency }, {} as ScopeResolver, () => now);
  const count = { orgId: 'o', projectId: 'p', environmentId: 'e', flagKey: 'f', variantKey: 'on', reason: 'DEFAULT', hourMs: 100 * HOUR_MS, count: 2 };
  const reportId = '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b';

  test('a well-formed report is written under its id, remembered four days (twice the two days a report may lag)', async () => {
    await service.recordCounts({ reportId, counts: [count], lastEvaluated: [{ orgId: 'o', projectId: 'p', environmentId: 'e', flagKey: 'f', atMs: now }] });
    assert.deepEqual(received, [{ key: `report:${reportId}`, expiresAtMs: now + 4 * 24 * HOUR_MS }]);
  });

  test('refused: no or a bad report id, too many counts, hours not on the hour or far from now, counts not positive, long strings, not a report', async () => {
    const refused = (report: unknown, field = 'counts') =>
      assert.rejects(service.recordCounts(report), (error: { code?: string; field?: string }) => error.code === 'INVALID_ARGUMENT' && error.field === field);
    await refused({ counts: [count], lastEvaluated: [] }, 'reportId');
    for (const bad of ['', 'not-a-uuid', reportId.toUpperCase(), `${reportId}x`, 42, null, { id: reportId }]) await refused({ reportId: bad, counts: [count], lastEvaluated: [] }, 'reportId');
    await refused({ reportId, counts: Array.from({ length: MAX_COUNTS_PER_REPORT + 1 }, () => count), lastEvaluated: [] });
    await refused({ reportId, counts: [{ ...count, hourMs: count.hourMs + 1 }], lastEvaluated: [] });
    await refused({ reportId, counts: [{ ...count, hourMs: count.hourMs - 72 * HOUR_MS }], lastEvaluated: [] });
    await refused({ reportId, counts: [{ ...count, count: 0 }], lastEvaluated: [] });
    await refused({ reportId, counts: [{ ...count, count: 1.5 }], lastEvaluated: [] });
    await refused({ reportId, counts: [{ ...count, reason: 'x'.repeat(33) }], lastEvaluated: [] });
    await refused({ reportId, counts: [{ ...count, flagKey: 'x'.repeat(257) }], lastEvaluated: [] });
    await refused({ reportId, counts: [], lastEvaluated: [{ orgId: 'o', projectId: 'p', environmentId: 'e', flagKey: 'f', atMs: now + 72 * HOUR_MS }] }, 'lastEvaluated');
    await refused([count], 'report');
    await refused(null, 'report');
    assert.equal(received.length, 1, 'nothing refused was written');
  });

  test('reportsOf splits a drain into reports the services accept', () => {
    const drained = { counts: Array.from({ length: 2 * MAX_COUNTS_PER_REPORT + 1 }, () => count), lastEvaluated: [] };
    assert.deepEqual(reportsOf(drained).map((r) => r.counts.length), [MAX_COUNTS_PER_REPORT, MAX_COUNTS_PER_REPORT, 1]);
  });
});

describe('CountReportSender (a gateway\'s reports, retried with their ids)', () => {
  /** The services as the hop sees them: each report id applied once; `lose` answers calls with an error after applying them. */
  function services() {
    const applied = new Set<string>();
    const sent: string[] = [];
    const state = { total: 0, lose: 0, down: false, refuse: false };
    const send = async (report: CountReport) => {
      sent.push(JSON.stringify(report));
      if (state.down) throw new DomainError('UNAVAILABLE', 'services down');
      if (state.refuse) throw new DomainError('INVALID_ARGUMENT', 'bad report', 'counts');
      if (!applied.has(report.reportId)) {
        applied.add(report.reportId);
        for (const c of report.counts) state.total += c.count;
      }
      if (state.lose > 0) {
        state.lose--;
        throw new DomainError('DEADLINE_EXCEEDED', 'answer lost');
      }
    };
    return { applied, sent, state, send };
  }
  const flusherOf = (counter: EvaluationCounter, sender: CountReportSender) =>
    new EvaluationCountFlusher(counter, (drained) => sender.write(drained), { holdsUnsent: () => sender.holdsUnsent, onError: () => {} });

  test('a report whose answer was lost is sent again byte for byte with its id, and counts once', async () => {
    const hop = services();
    let ids = 0;
    const sender = new CountReportSender(hop.send, { newId: () => `id-${++ids}` });
    const counter = new EvaluationCounter(10, () => 0);
    const flusher = flusherOf(counter, sender);
    counter.count(scope, [on, on]);
    hop.state.lose = 1;
    await flusher.flush(); // applied (2), answer lost: held
    assert.equal(sender.holdsUnsent, true);
    counter.count(scope, [on]);
    await flusher.flush(); // the held report again (adds nothing), then a new one (1)
    assert.equal(hop.sent.length, 3);
    assert.equal(hop.sent[1], hop.sent[0], 'the retry is the same report, id and all');
    assert.equal(JSON.parse(hop.sent[0]!).reportId, 'id-1');
    assert.equal(JSON.parse(hop.sent[2]!).reportId, 'id-2');
    // 2 evaluations, then 1: 3, not 2 + 2 + 1.
    assert.equal(hop.state.total, 3);
    assert.equal(sender.holdsUnsent, false);
  });

  test('a held report is sent at the next flush even when nothing new was counted; the reports after it go back to the counter', async () => {
    const hop = services();
    let ids = 0;
    const sender = new CountReportSender(hop.send, { newId: () => `id-${++ids}` });
    // MAX_COUNTS_PER_REPORT + 1 keys: two reports (5,000 and 1).
    const counter = new EvaluationCounter(MAX_COUNTS_PER_REPORT + 10, () => 0);
    const flusher = flusherOf(counter, sender);
    counter.count(scope, Array.from({ length: MAX_COUNTS_PER_REPORT + 1 }, (_, i) => ({ ...on, flag_key: `f${i}` })));
    hop.state.down = true;
    await flusher.flush(); // the first report fails (held); the second was never sent: back in the counter
    assert.equal(hop.sent.length, 1);
    assert.equal(counter.size, 1, 'the unsent report went back into the counter');
    hop.state.down = false;
    await flusher.flush(); // held report (id-1, 5,000) and the counter's 1 in a new report (id-3; id-2 was never sent)
    assert.deepEqual(hop.sent.map((r) => JSON.parse(r).reportId), ['id-1', 'id-1', 'id-3']);
    assert.equal(hop.sent[1], hop.sent[0]);
    assert.equal(hop.state.total, MAX_COUNTS_PER_REPORT + 1);
    const calls = hop.sent.length;
    await flusher.flush();
    assert.equal(hop.sent.length, calls, 'nothing held, nothing counted: no call');
  });

  test('a report the services refuse as malformed is dropped, not sent again', async () => {
    const hop = services();
    const refused: CountReport[] = [];
    const sender = new CountReportSender(hop.send, { onRefused: (report) => refused.push(report) });
    const counter = new EvaluationCounter(10, () => 0);
    const flusher = flusherOf(counter, sender);
    counter.count(scope, [on]);
    hop.state.refuse = true;
    await flusher.flush();
    assert.equal(refused.length, 1);
    assert.equal(sender.holdsUnsent, false);
    assert.equal(counter.size, 0);
    hop.state.refuse = false;
    await flusher.flush();
    assert.equal(hop.sent.length, 1, 'not sent again');
    // Ids made by default are random UUIDs, the shape the services require.
    assert.match(JSON.parse(hop.sent[0]!).reportId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
