import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { lifecycleStages, type FlagLifecycleInput, type LifecycleEnvironment } from '../src/insights/flag-lifecycle.ts';
import { flagStatus, oneVariantServed } from '../src/insights/flag-status.ts';
import type { Rule } from '../src/model/definitions.ts';

// Hand-built histories (docs/insights.md): every expectation below is read off the definitions,
// counting in days; "now" is day 100 and the window 7 days, so it starts at day 93.
const DAY = 86_400_000;
const NOW = 100 * DAY;
const day = (d: number) => d * DAY;

describe('oneVariantServed: the one variant the configuration serves to everyone', () => {
  const all = (variant_key: string, more: Partial<Rule> = {}): Rule => ({ id: `all-${variant_key}`, conditions: [], variant_key, ...more });
  const some = (variant_key: string): Rule => ({ id: `some-${variant_key}`, conditions: [{ attribute: 'plan', op: 'eq', values: ['pro'] }], variant_key });
  const split = (weights: Record<string, number>): Rule => ({ id: 'split', conditions: [], allocation: { context_hash_specs: {}, buckets: Object.entries(weights).map(([variant_key, weight_milli]) => ({ variant_key, weight_milli })) } });
  const cases: Array<[string, Parameters<typeof oneVariantServed>[0], string | null]> = [
    ['off: the off variant', { enabled: false, off_variant_key: 'off', rules: [all('on')] }, 'off'],
    ['off without an off variant: the default', { enabled: false, off_variant_key: null, rules: [] }, ''],
    ['on without rules: the off variant (no rule matches)', { enabled: true, off_variant_key: 'off', rules: [] }, 'off'],
    ['on, a rule for everyone', { enabled: true, off_variant_key: 'off', rules: [all('on')] }, 'on'],
    ['on, a rule for some: theirs and the off variant', { enabled: true, off_variant_key: 'off', rules: [some('on')] }, null],
    ['on, a rule for some then everyone, both the same variant', { enabled: true, off_variant_key: 'off', rules: [some('on'), all('on')] }, 'on'],
    ['on, everyone first: a later rule is never reached', { enabled: true, off_variant_key: 'off', rules: [all('on'), some('x')] }, 'on'],
    ['on, a 50/50 split for everyone', { enabled: true, off_variant_key: 'off', rules: [split({ on: 50_000, off: 50_000 })] }, null],
    ['on, a 100/0 split for everyone', { enabled: true, off_variant_key: 'off', rules: [split({ on: 100_000, off: 0 })] }, 'on'],
    ['on, a segment rule is not everyone', { enabled: true, off_variant_key: 'off', rules: [all('on', { segment_keys: ['beta'] })] }, null],
    ['on, with a prerequisite that may fail: the off variant too', { enabled: true, off_variant_key: 'off', rules: [all('on')], prerequisites: [{ flag_key: 'p', variant_keys: ['on'] }] }, null],
    ['on, a prerequisite whose failure serves the same variant', { enabled: true, off_variant_key: 'on', rules: [all('on')], prerequisites: [{ flag_key: 'p', variant_keys: ['on'] }] }, 'on'],
  ];
  for (const [name, flag, expected] of cases) test(name, () => assert.equal(oneVariantServed(flag), expected));
});

describe('flagStatus over the last 7 days', () => {
  const cases: Array<[string, { createdAtMs: number; changedAtMs: number; lastEvaluatedAtMs: number | null; oneVariant: string | null }, string]> = [
    ['made 2 days ago, never evaluated: new', { createdAtMs: day(98), changedAtMs: day(98), lastEvaluatedAtMs: null, oneVariant: 'on' }, 'new'],
    ['made 50 days ago, never evaluated: inactive', { createdAtMs: day(50), changedAtMs: day(50), lastEvaluatedAtMs: null, oneVariant: 'on' }, 'inactive'],
    ['evaluated yesterday, changed yesterday: active', { createdAtMs: day(50), changedAtMs: day(99), lastEvaluatedAtMs: day(99), oneVariant: 'on' }, 'active'],
    ['evaluated yesterday, one variant, unchanged for 20 days: launched', { createdAtMs: day(50), changedAtMs: day(80), lastEvaluatedAtMs: day(99), oneVariant: 'on' }, 'launched'],
    ['evaluated, unchanged, but a split: active', { createdAtMs: day(50), changedAtMs: day(80), lastEvaluatedAtMs: day(99), oneVariant: null }, 'active'],
    ['last evaluated 7.5 days ago: inactive', { createdAtMs: day(50), changedAtMs: day(80), lastEvaluatedAtMs: day(92.5), oneVariant: 'on' }, 'inactive'],
    ['evaluated exactly at the window start: in the window', { createdAtMs: day(50), changedAtMs: day(80), lastEvaluatedAtMs: day(93), oneVariant: 'on' }, 'launched'],
    ['changed exactly at the window start: changed in the window', { createdAtMs: day(50), changedAtMs: day(93), lastEvaluatedAtMs: day(99), oneVariant: 'on' }, 'active'],
    ['made 2 days ago and evaluated: active (made in the window)', { createdAtMs: day(98), changedAtMs: day(98), lastEvaluatedAtMs: day(99), oneVariant: 'on' }, 'active'],
    ['evaluated 8 days ago, made 3 days ago (clock skew): inactive, not new', { createdAtMs: day(97), changedAtMs: day(97), lastEvaluatedAtMs: day(92), oneVariant: 'on' }, 'inactive'],
  ];
  for (const [name, activity, expected] of cases) test(name, () => assert.equal(flagStatus(activity, NOW), expected));
  test('the window is a setting: 30 days makes day 92.5 recent', () =>
    assert.equal(flagStatus({ createdAtMs: day(10), changedAtMs: day(20), lastEvaluatedAtMs: day(92.5), oneVariant: 'on' }, NOW, 30), 'launched'));
});

describe('lifecycleStages (thresholds: code removal at 30 days old, archive after 30 days unused, fallback 14 days unchanged)', () => {
  const env = (over: Partial<LifecycleEnvironment> = {}): LifecycleEnvironment => ({ createdAtMs: day(10), changedAtMs: day(20), lastEvaluatedAtMs: day(99), oneVariant: 'on', reportsEvaluations: true, ...over });
  const flag = (over: Partial<FlagLifecycleInput> = {}): FlagLifecycleInput => ({ archived: false, lifetime: 'temporary', createdAtMs: day(10), environments: [env()], prerequisiteKeys: [], underRunningExperiment: false, ...over });
  const stagesOf = (flags: Record<string, FlagLifecycleInput>) => Object.fromEntries(lifecycleStages(new Map(Object.entries(flags)), NOW));

  test('each rule on its own', () =>
    assert.deepEqual(
      stagesOf({
        launchedOld: flag(),
        launchedYoung: flag({ createdAtMs: day(80), environments: [env({ createdAtMs: day(80), changedAtMs: day(80) })] }),
        unusedFor40Days: flag({ environments: [env({ lastEvaluatedAtMs: day(60) })] }),
        unusedFor25Days: flag({ environments: [env({ lastEvaluatedAtMs: day(75) })] }),
        neverEvaluatedOld: flag({ environments: [env({ lastEvaluatedAtMs: null })] }),
        neverEvaluatedYoung: flag({ createdAtMs: day(80), environments: [env({ createdAtMs: day(80), changedAtMs: day(80), lastEvaluatedAtMs: null })] }),
        permanent: flag({ lifetime: 'permanent' }),
        permanentUnused: flag({ lifetime: 'permanent', environments: [env({ lastEvaluatedAtMs: null })] }),
        experimenting: flag({ underRunningExperiment: true }),
        activeSomewhere: flag({ environments: [env(), env({ changedAtMs: day(99) })] }),
        splitting: flag({ environments: [env({ oneVariant: null })] }),
        archived: flag({ archived: true }),
        noEnvironments: flag({ environments: [] }),
      }),
      {
        launchedOld: 'ready_for_code_removal',
        launchedYoung: 'live',
        unusedFor40Days: 'ready_to_archive',
        unusedFor25Days: 'ready_for_code_removal',
        neverEvaluatedOld: 'ready_to_archive',
        neverEvaluatedYoung: 'live',
        permanent: 'live',
        permanentUnused: 'live',
        experimenting: 'live',
        activeSomewhere: 'live',
        splitting: 'live',
        archived: 'archived',
        noEnvironments: 'live',
      },
    ));

  test('without evaluation data the configuration decides, and nothing is ready to archive', () =>
    assert.deepEqual(
      stagesOf({
        unchanged20Days: flag({ environments: [env({ reportsEvaluations: false, lastEvaluatedAtMs: null, changedAtMs: day(80) })] }),
        unchanged10Days: flag({ environments: [env({ reportsEvaluations: false, lastEvaluatedAtMs: null, changedAtMs: day(90) })] }),
        unchangedButSplit: flag({ environments: [env({ reportsEvaluations: false, lastEvaluatedAtMs: null, changedAtMs: day(20), oneVariant: null })] }),
      }),
      { unchanged20Days: 'ready_for_code_removal', unchanged10Days: 'live', unchangedButSplit: 'live' },
    ));

  test('a prerequisite of a live flag stays live, down a chain; of a removable one it may go', () =>
    assert.deepEqual(
      stagesOf({
        // live (active) -> p1 -> p2: both needed.
        liveDependent: flag({ environments: [env({ changedAtMs: day(99) })], prerequisiteKeys: ['p1'] }),
        p1: flag({ prerequisiteKeys: ['p2'] }),
        p2: flag(),
        // removable -> q: q may go too.
        removableDependent: flag({ prerequisiteKeys: ['q'] }),
        q: flag(),
        // a cycle (refused at writes) resolves to live.
        c1: flag({ prerequisiteKeys: ['c2'] }),
        c2: flag({ prerequisiteKeys: ['c1'] }),
      }),
      { liveDependent: 'live', p1: 'live', p2: 'live', removableDependent: 'ready_for_code_removal', q: 'ready_for_code_removal', c1: 'live', c2: 'live' },
    ));
});
