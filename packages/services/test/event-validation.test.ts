import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { MetricValueType } from '@switchyard/core';
import { REJECTION_REASONS, storedValue, validateEvents, validateExposures, type IncomingEvent, type Rejection } from '../src/events/event-validation.ts';

const NOW = 1_800_000_000_000;
const definitions = new Map<string, MetricValueType>([
  ['signup', 'bool'],
  ['clicks', 'int'],
  ['revenue', 'double'],
]);
const event = (metric_key: unknown, extra: Partial<IncomingEvent> = {}): IncomingEvent => ({ metric_key, context_type: 'user', context_key: 'u1', ...extra });

describe('storedValue (docs/contract.md "Events, exposures and idempotency": value typing)', () => {
  test('bool takes true/false as 1/0; a missing value (absent or null) is true; anything else is refused', () => {
    assert.equal(storedValue('bool', true), 1);
    assert.equal(storedValue('bool', false), 0);
    assert.equal(storedValue('bool', undefined), 1);
    assert.equal(storedValue('bool', null), 1);
    for (const value of [1, 0, 'true', {}, []]) assert.equal(storedValue('bool', value), null, JSON.stringify(value));
  });

  test('int takes safe integers only; a missing value is refused', () => {
    assert.equal(storedValue('int', 3), 3);
    assert.equal(storedValue('int', -7), -7);
    assert.equal(storedValue('int', 0), 0);
    assert.equal(storedValue('int', 3.0), 3, 'JSON cannot tell 3.0 from 3');
    for (const value of [1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '3', true, null, undefined]) {
      assert.equal(storedValue('int', value), null, String(value));
    }
  });

  test('double takes any finite number; a missing value is refused', () => {
    assert.equal(storedValue('double', 2.5), 2.5);
    assert.equal(storedValue('double', 4), 4);
    assert.equal(storedValue('double', -1e300), -1e300);
    for (const value of [Number.NaN, Number.NEGATIVE_INFINITY, '2.5', false, null, undefined]) {
      assert.equal(storedValue('double', value), null, String(value));
    }
  });
});

describe('validateEvents', () => {
  test('accepted events become rows; timestamp defaults to the receipt time (absent, null or 0)', () => {
    const { rows, answer } = validateEvents(
      [
        event('signup'),
        event('clicks', { value: 2, timestamp_ms: 1_700_000_000_000 }),
        event('revenue', { value: 9.5, timestamp_ms: null }),
        event('signup', { value: false, timestamp_ms: 0 }),
      ],
      definitions,
      NOW,
    );
    assert.deepEqual(answer, { accepted_count: 4, rejected_keys: [], rejected: [] });
    assert.deepEqual(rows, [
      { metricKey: 'signup', contextType: 'user', contextKey: 'u1', value: 1, timestampMs: NOW },
      { metricKey: 'clicks', contextType: 'user', contextKey: 'u1', value: 2, timestampMs: 1_700_000_000_000 },
      { metricKey: 'revenue', contextType: 'user', contextKey: 'u1', value: 9.5, timestampMs: NOW },
      { metricKey: 'signup', contextType: 'user', contextKey: 'u1', value: 0, timestampMs: NOW },
    ]);
  });

  test('unknown keys and wrong types are rejected; each key once, in order of first appearance; the rest accepted', () => {
    const { rows, answer } = validateEvents(
      [
        event('nope'),
        event('clicks', { value: 1.5 }),
        event('clicks', { value: 2 }),
        event('nope'),
        event('signup', { value: 'yes' }),
        event('clicks', { value: 'x' }),
      ],
      definitions,
      NOW,
    );
    assert.deepEqual(answer, {
      accepted_count: 1,
      rejected_keys: ['nope', 'clicks', 'signup'],
      rejected: [
        { index: 0, key: 'nope', reason: 'unknown_metric' },
        { index: 1, key: 'clicks', reason: 'wrong_value_type' },
        { index: 3, key: 'nope', reason: 'unknown_metric' },
        { index: 4, key: 'signup', reason: 'wrong_value_type' },
        { index: 5, key: 'clicks', reason: 'wrong_value_type' },
      ],
    });
    assert.equal(rows.length, 1);
  });

  test('missing or malformed fields reject the event with its key (or "") and say which field', () => {
    const missing = (field: string) => ({ reason: 'missing_field', field });
    const invalid = (field: string) => ({ reason: 'invalid_field', field });
    const tooLong = (field: string) => ({ reason: 'field_too_long', field });
    const cases: Array<[IncomingEvent, string, object]> = [
      [{ context_type: 'user', context_key: 'u1' }, '', missing('metric_key')],
      [event(''), '', missing('metric_key')],
      [event(42), '', invalid('metric_key')],
      [event('clicks'), 'clicks', missing('value')],
      [event('revenue', { value: null }), 'revenue', missing('value')],
      [event('signup', { context_type: undefined }), 'signup', missing('context_type')],
      [event('signup', { context_type: '' }), 'signup', missing('context_type')],
      [event('signup', { context_type: null }), 'signup', missing('context_type')],
      [event('signup', { context_type: 5 }), 'signup', invalid('context_type')],
      [event('signup', { context_type: 'x'.repeat(65) }), 'signup', tooLong('context_type')],
      [event('signup', { context_key: undefined }), 'signup', missing('context_key')],
      [event('signup', { context_key: 7 }), 'signup', invalid('context_key')],
      [event('signup', { context_key: 'k'.repeat(513) }), 'signup', tooLong('context_key')],
      [event('signup', { timestamp_ms: -1 }), 'signup', invalid('timestamp_ms')],
      [event('signup', { timestamp_ms: 1.5 }), 'signup', invalid('timestamp_ms')],
      [event('signup', { timestamp_ms: '1700000000000' }), 'signup', invalid('timestamp_ms')],
    ];
    for (const [input, key, why] of cases) {
      assert.deepEqual(
        validateEvents([input], definitions, NOW),
        { rows: [], answer: { accepted_count: 0, rejected_keys: [key], rejected: [{ index: 0, key, ...why }] } },
        JSON.stringify(input),
      );
    }
    const longest = validateEvents([event('signup', { context_type: 't'.repeat(64), context_key: 'k'.repeat(512) })], definitions, NOW);
    assert.equal(longest.answer.accepted_count, 1);
  });

  test('an event with several problems reports the first in the documented order: key, value, context_type, context_key, timestamp_ms', () => {
    const { answer } = validateEvents(
      [
        { metric_key: 'nope', value: 'x', timestamp_ms: -1 },
        { metric_key: 'clicks', value: 'x', timestamp_ms: -1 },
        { metric_key: 'clicks', value: 1, context_key: 'k'.repeat(513), timestamp_ms: -1 },
        { metric_key: 'clicks', value: 1, context_type: 'user', context_key: 'k'.repeat(513), timestamp_ms: -1 },
        { metric_key: 'clicks', value: 1, context_type: 'user', context_key: 'u1', timestamp_ms: -1 },
      ],
      definitions,
      NOW,
    );
    assert.deepEqual(answer.rejected, [
      { index: 0, key: 'nope', reason: 'unknown_metric' },
      { index: 1, key: 'clicks', reason: 'wrong_value_type' },
      { index: 2, key: 'clicks', reason: 'missing_field', field: 'context_type' },
      { index: 3, key: 'clicks', reason: 'field_too_long', field: 'context_key' },
      { index: 4, key: 'clicks', reason: 'invalid_field', field: 'timestamp_ms' },
    ] satisfies Rejection[]);
  });

  test('the reason codes are the documented set, each a stable snake_case word', () => {
    assert.deepEqual([...REJECTION_REASONS], [
      'unknown_metric',
      'wrong_value_type',
      'unknown_flag',
      'unknown_variant',
      'missing_field',
      'invalid_field',
      'field_too_long',
      'no_active_experiment',
      'variant_not_served',
      'context_mismatch',
      'invalid_context',
    ]);
  });

  test('no definitions: every event is rejected', () => {
    assert.deepEqual(validateEvents([event('signup'), event('clicks', { value: 1 })], new Map(), NOW).answer, {
      accepted_count: 0,
      rejected_keys: ['signup', 'clicks'],
      rejected: [
        { index: 0, key: 'signup', reason: 'unknown_metric' },
        { index: 1, key: 'clicks', reason: 'unknown_metric' },
      ],
    });
  });
});

describe('validateExposures', () => {
  const flags = new Map([['checkout', new Set(['control', 'treatment'])]]);
  const exposure = (extra: Record<string, unknown> = {}) => ({ flag_key: 'checkout', variant_key: 'treatment', context_type: 'user', context_key: 'u1', ...extra });

  test('an exposure to an existing variant of an active flag is accepted, timestamp defaulting to receipt', () => {
    const { rows, answer } = validateExposures([exposure(), exposure({ variant_key: 'control', timestamp_ms: 5 })], flags, NOW);
    assert.deepEqual(answer, { accepted_count: 2, rejected_keys: [], rejected: [] });
    assert.deepEqual(rows, [
      { flagKey: 'checkout', variantKey: 'treatment', contextType: 'user', contextKey: 'u1', timestampMs: NOW, ruleId: null },
      { flagKey: 'checkout', variantKey: 'control', contextType: 'user', contextKey: 'u1', timestampMs: 5, ruleId: null },
    ]);
  });

  test('rule_id is kept as sent (\'\' = no allocation served it; absent or null = not reported); a non-string or one over 128 characters rejects the exposure', () => {
    const { rows, answer } = validateExposures(
      [
        exposure({ rule_id: 'split-rule' }),
        exposure({ rule_id: '' }),
        exposure({ rule_id: null }),
        exposure({ rule_id: 7 }),
        exposure({ rule_id: 'r'.repeat(129) }),
        exposure({ rule_id: 'r'.repeat(128) }),
      ],
      flags,
      NOW,
    );
    assert.deepEqual(rows.map((row) => row.ruleId), ['split-rule', '', null, 'r'.repeat(128)]);
    assert.deepEqual(answer.rejected, [
      { index: 3, key: 'checkout', reason: 'invalid_field', field: 'rule_id' },
      { index: 4, key: 'checkout', reason: 'field_too_long', field: 'rule_id' },
    ]);
  });

  test('an unknown flag or variant, or a bad field, rejects the exposure with its flag key (or "") and why', () => {
    const { rows, answer } = validateExposures(
      [
        exposure({ flag_key: 'ghost' }),
        exposure({ variant_key: 'missing' }),
        exposure({ variant_key: undefined }),
        exposure({ context_key: '' }),
        exposure({ flag_key: undefined }),
        exposure({ timestamp_ms: -3 }),
        exposure(),
        exposure({ flag_key: 7 }),
        exposure({ variant_key: true }),
        exposure({ context_type: 'x'.repeat(65) }),
        exposure({ flag_key: 'ghost', variant_key: 'missing', context_key: '' }),
      ],
      flags,
      NOW,
    );
    assert.deepEqual(answer, {
      accepted_count: 1,
      rejected_keys: ['ghost', 'checkout', ''],
      rejected: [
        { index: 0, key: 'ghost', reason: 'unknown_flag' },
        { index: 1, key: 'checkout', reason: 'unknown_variant' },
        { index: 2, key: 'checkout', reason: 'missing_field', field: 'variant_key' },
        { index: 3, key: 'checkout', reason: 'missing_field', field: 'context_key' },
        { index: 4, key: '', reason: 'missing_field', field: 'flag_key' },
        { index: 5, key: 'checkout', reason: 'invalid_field', field: 'timestamp_ms' },
        { index: 7, key: '', reason: 'invalid_field', field: 'flag_key' },
        { index: 8, key: 'checkout', reason: 'invalid_field', field: 'variant_key' },
        { index: 9, key: 'checkout', reason: 'field_too_long', field: 'context_type' },
        { index: 10, key: 'ghost', reason: 'unknown_flag' },
      ],
    });
    assert.equal(rows.length, 1);
  });
});
