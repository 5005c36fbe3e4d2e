import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { groupByStage, lastEvaluatedIn, stageCounts, thresholdDraft, thresholdNamedBy, thresholdsBody } from '../src/components/lifecycle-reading.ts';
import type { LifecycleFlag, LifecycleStage } from '../src/records.ts';

// The Cleanup page's readings (components/lifecycle-reading.ts); every expected value worked out by hand.

const flag = (key: string, stage: LifecycleStage, environments: LifecycleFlag['environments'] = {}): LifecycleFlag => ({ key, lifetime: 'temporary', archived: stage === 'archived', stage, environments });

describe('flags by stage', () => {
  const flags = [flag('a', 'ready_to_archive'), flag('b', 'ready_for_code_removal'), flag('c', 'live'), flag('d', 'ready_for_code_removal'), flag('e', 'archived')];
  const keys = (groups: ReturnType<typeof groupByStage>) => groups.map((g) => [g.stage, g.flags.map((f) => f.key)]);

  test('the cleanup filter: code removal first, then archive, each in key order', () => {
    assert.deepEqual(keys(groupByStage(flags, 'cleanup')), [
      ['ready_for_code_removal', ['b', 'd']],
      ['ready_to_archive', ['a']],
    ]);
  });

  test('one stage; a stage without flags is still a group', () => {
    assert.deepEqual(keys(groupByStage(flags, 'live')), [['live', ['c']]]);
    assert.deepEqual(keys(groupByStage([], 'cleanup')), [
      ['ready_for_code_removal', []],
      ['ready_to_archive', []],
    ]);
  });

  test('counts per stage', () => {
    assert.deepEqual(stageCounts(flags), { ready_for_code_removal: 2, ready_to_archive: 1, live: 1, archived: 1 });
  });
});

describe('last evaluated where it counts', () => {
  const f = flag('x', 'live', {
    prod: { status: 'active', last_evaluated_at_ms: 100 },
    staging: { status: 'active', last_evaluated_at_ms: 300 },
    dev: { status: 'new', last_evaluated_at_ms: null },
  });

  test('the latest of the environments named; null when never in any; unknown ids ignored', () => {
    assert.equal(lastEvaluatedIn(f, ['prod', 'dev']), 100);
    assert.equal(lastEvaluatedIn(f, ['prod', 'staging']), 300);
    assert.equal(lastEvaluatedIn(f, ['dev']), null);
    assert.equal(lastEvaluatedIn(f, ['gone', 'prod']), 100);
    assert.equal(lastEvaluatedIn(f, []), null);
  });
});

describe('the thresholds form', () => {
  const saved = { status_window_days: 7, code_removal_min_age_days: 30, archive_after_days: 30, unchanged_fallback_days: 14 };
  const draft = thresholdDraft(saved);

  test('the draft is the saved values as text; unchanged sends nothing', () => {
    assert.deepEqual(draft, { status_window_days: '7', code_removal_min_age_days: '30', archive_after_days: '30', unchanged_fallback_days: '14' });
    assert.deepEqual(thresholdsBody(draft, saved), { errors: {}, nothing: true });
  });

  test('only the changed thresholds, as numbers; the range is left to the API', () => {
    assert.deepEqual(thresholdsBody({ ...draft, code_removal_min_age_days: '90' }, saved), { body: { lifecycle: { code_removal_min_age_days: 90 } }, errors: {}, nothing: false });
    assert.deepEqual(thresholdsBody({ ...draft, status_window_days: ' 0 ', archive_after_days: '1.5' }, saved), { body: { lifecycle: { status_window_days: 0, archive_after_days: 1.5 } }, errors: {}, nothing: false });
  });

  test('empty or not a number: an error at that field, nothing sent', () => {
    assert.deepEqual(thresholdsBody({ ...draft, status_window_days: '', unchanged_fallback_days: 'two weeks' }, saved), {
      errors: { status_window_days: 'Enter a number of days.', unchanged_fallback_days: 'Enter a number of days.' },
      nothing: false,
    });
  });

  test("the field a refusal names, from the API's message", () => {
    assert.equal(thresholdNamedBy('lifecycle.archive_after_days must be a whole number of days from 1 to 365'), 'archive_after_days');
    assert.equal(thresholdNamedBy('lifecycle.status_window_days must be a whole number of days from 1 to 365'), 'status_window_days');
    assert.equal(thresholdNamedBy('unknown lifecycle thresholds: stale_after_days'), undefined);
    assert.equal(thresholdNamedBy('name at least one setting: client_visible_default or lifecycle'), undefined);
  });
});
