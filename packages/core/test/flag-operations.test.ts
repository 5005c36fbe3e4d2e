import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DomainError, applyFlagOperations, operationsContend, parseFlagOperations, type OperableState, type Rule } from '../src/index.ts';

// Flag operations (docs/workflow.md "Operations"): shapes, application in order, conflicts and
// contention, each expectation written by hand from the documented rules.

const beta: Rule = { id: 'beta', conditions: [{ attribute: 'plan', op: 'eq', values: ['beta'] }], variant_key: 'on' };
const staff: Rule = { id: 'staff', conditions: [], segment_keys: ['staff'], variant_key: 'on' };
const fallback: Rule = { id: 'default', conditions: [], variant_key: 'off' };
const state: OperableState = { enabled: false, off_variant_key: 'off', rules: [beta, staff, fallback], version: 7 };

const code = (code: string, message: RegExp) => (error: unknown) => error instanceof DomainError && error.code === code && message.test(error.message);

describe('parseFlagOperations', () => {
  test('each operation keeps its fields; a bad one is refused naming its place', () => {
    assert.deepEqual(parseFlagOperations([{ op: 'set_enabled', enabled: true }, { op: 'remove_rule', rule_id: 'beta' }]), [
      { op: 'set_enabled', enabled: true },
      { op: 'remove_rule', rule_id: 'beta' },
    ]);
    assert.throws(() => parseFlagOperations([]), code('INVALID_ARGUMENT', /1 to 50/));
    assert.throws(() => parseFlagOperations(Array.from({ length: 51 }, () => ({ op: 'set_enabled', enabled: true }))), code('INVALID_ARGUMENT', /at most 50/));
    assert.throws(() => parseFlagOperations([{ op: 'set_enabled', enabled: true }, { op: 'explode' }]), code('INVALID_ARGUMENT', /operations\[1\]\.op must be one of/));
    assert.throws(() => parseFlagOperations([{ op: 'set_enabled', enabled: 'yes' }]), code('INVALID_ARGUMENT', /enabled must be a boolean/));
    assert.throws(() => parseFlagOperations([{ op: 'set_enabled', enabled: true, extra: 1 }]), code('INVALID_ARGUMENT', /extra is not a field/));
    assert.throws(() => parseFlagOperations([{ op: 'set_rule_serve', rule_id: 'beta' }]), code('INVALID_ARGUMENT', /exactly one of variant_key or allocation/));
    assert.throws(() => parseFlagOperations([{ op: 'add_rule', rule: { conditions: [], variant_key: 'on' } }]), code('INVALID_ARGUMENT', /rule\.id is required/));
    assert.throws(() => parseFlagOperations([{ op: 'set_rules', rules: [] }]), code('INVALID_ARGUMENT', /version is required/));
    assert.deepEqual(parseFlagOperations([{ op: 'set_rules', rules: [], ignore_conflicts: true }]), [{ op: 'set_rules', rules: [], ignore_conflicts: true }]);
  });
});

describe('applyFlagOperations', () => {
  test('operations apply in order, each to what the one before left', () => {
    const after = applyFlagOperations(state, [
      { op: 'set_enabled', enabled: true },
      { op: 'set_rule_serve', rule_id: 'beta', allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'on', weight_milli: 500 }, { variant_key: 'off', weight_milli: 500 }] } },
      { op: 'remove_rule', rule_id: 'staff' },
      { op: 'add_rule', rule: { id: 'eu', conditions: [{ attribute: 'region', op: 'eq', values: ['eu'] }], variant_key: 'off' } },
      { op: 'set_off_variant', variant_key: null },
    ]);
    assert.equal(after.enabled, true);
    assert.equal(after.off_variant_key, null);
    // The added rule goes above the default rule, which stays last.
    assert.deepEqual(after.rules.map((rule) => rule.id), ['beta', 'eu', 'default']);
    assert.equal(after.rules[0]!.variant_key, undefined, 'the allocation replaced the variant');
    assert.deepEqual(after.rules[0]!.conditions, beta.conditions, 'the targeting is kept');
    assert.deepEqual(state.rules.map((rule) => rule.id), ['beta', 'staff', 'default'], 'the input is not changed');
  });

  test('add_rule before a named rule, or last when there is no default rule', () => {
    assert.deepEqual(applyFlagOperations(state, [{ op: 'add_rule', rule: { id: 'first', conditions: [], variant_key: 'on' }, before_rule_id: 'beta' }]).rules.map((r) => r.id), ['first', 'beta', 'staff', 'default']);
    assert.deepEqual(applyFlagOperations({ ...state, rules: [beta] }, [{ op: 'add_rule', rule: { id: 'x', conditions: [], segment_keys: ['s'], variant_key: 'on' } }]).rules.map((r) => r.id), ['beta', 'x']);
  });

  test('conflicts: a rule gone or already there, a stale set_rules; ignore_conflicts replaces anyway', () => {
    assert.throws(() => applyFlagOperations(state, [{ op: 'set_rule_serve', rule_id: 'gone', variant_key: 'on' }]), code('FAILED_PRECONDITION', /operations\[0\] \(set_rule_serve\).*no rule 'gone'/));
    assert.throws(() => applyFlagOperations(state, [{ op: 'remove_rule', rule_id: 'beta' }, { op: 'remove_rule', rule_id: 'beta' }]), code('FAILED_PRECONDITION', /operations\[1\]/));
    assert.throws(() => applyFlagOperations(state, [{ op: 'add_rule', rule: { ...beta } }]), code('FAILED_PRECONDITION', /already has a rule 'beta'/));
    assert.throws(() => applyFlagOperations(state, [{ op: 'add_rule', rule: { id: 'n', conditions: [], variant_key: 'on' }, before_rule_id: 'gone' }]), code('FAILED_PRECONDITION', /no rule 'gone'/));
    assert.throws(() => applyFlagOperations(state, [{ op: 'set_rules', rules: [], version: 6 }]), code('FAILED_PRECONDITION', /version 6 .* version 7/));
    assert.deepEqual(applyFlagOperations(state, [{ op: 'set_rules', rules: [fallback], version: 7 }]).rules, [fallback]);
    assert.deepEqual(applyFlagOperations(state, [{ op: 'set_rules', rules: [], ignore_conflicts: true }]).rules, []);
  });
});

describe('operationsContend', () => {
  test('the same field or rule contends; different rules do not; set_rules contends with any rule', () => {
    assert.equal(operationsContend([{ op: 'set_enabled', enabled: true }], [{ op: 'set_enabled', enabled: false }]), true);
    assert.equal(operationsContend([{ op: 'set_enabled', enabled: true }], [{ op: 'set_off_variant', variant_key: 'on' }]), false);
    assert.equal(operationsContend([{ op: 'remove_rule', rule_id: 'beta' }], [{ op: 'set_rule_serve', rule_id: 'beta', variant_key: 'on' }]), true);
    assert.equal(operationsContend([{ op: 'remove_rule', rule_id: 'beta' }], [{ op: 'remove_rule', rule_id: 'staff' }]), false);
    assert.equal(operationsContend([{ op: 'set_rules', rules: [], version: 1 }], [{ op: 'remove_rule', rule_id: 'staff' }]), true);
    assert.equal(operationsContend([{ op: 'set_rules', rules: [], version: 1 }], [{ op: 'set_enabled', enabled: true }]), false);
    assert.equal(operationsContend([{ op: 'add_rule', rule: { ...beta, id: 'a' } }], [{ op: 'add_rule', rule: { ...beta, id: 'b' } }]), false);
  });
});

describe('set_prerequisites', () => {
  test('its shape is checked (the prerequisites field rules), it replaces the list, and it contends only with another set_prerequisites', () => {
    const gate = { flag_key: 'gate', variant_keys: ['on'] };
    assert.deepEqual(parseFlagOperations([{ op: 'set_prerequisites', prerequisites: [gate] }]), [{ op: 'set_prerequisites', prerequisites: [gate] }]);
    assert.deepEqual(parseFlagOperations([{ op: 'set_prerequisites', prerequisites: [] }]), [{ op: 'set_prerequisites', prerequisites: [] }]);
    assert.throws(() => parseFlagOperations([{ op: 'set_prerequisites' }]), code('INVALID_ARGUMENT', /operations\[0\]\.prerequisites must be an array/));
    assert.throws(() => parseFlagOperations([{ op: 'set_prerequisites', prerequisites: [{ flag_key: 'gate', variant_keys: [] }] }]), code('INVALID_ARGUMENT', /operations\[0\]\.prerequisites\[0\]\.variant_keys must be a non-empty array/));
    assert.throws(() => parseFlagOperations([{ op: 'set_prerequisites', prerequisites: [gate, gate] }]), code('INVALID_ARGUMENT', /named twice/));
    assert.throws(() => parseFlagOperations([{ op: 'set_prerequisites', prerequisites: [], rules: [] }]), code('INVALID_ARGUMENT', /rules is not a field/));
    // Applied: the list is replaced; the rest of the state is untouched; without it the list stays absent.
    const withOne = { ...state, prerequisites: [{ flag_key: 'old', variant_keys: ['x'] }] };
    assert.deepEqual(applyFlagOperations(withOne, [{ op: 'set_prerequisites', prerequisites: [gate] }]), { enabled: false, off_variant_key: 'off', rules: [beta, staff, fallback], prerequisites: [gate] });
    assert.deepEqual(applyFlagOperations(withOne, [{ op: 'set_enabled', enabled: true }]).prerequisites, [{ flag_key: 'old', variant_keys: ['x'] }]);
    assert.equal('prerequisites' in applyFlagOperations(state, [{ op: 'set_enabled', enabled: true }]), false);
    assert.equal(operationsContend([{ op: 'set_prerequisites', prerequisites: [] }], [{ op: 'set_prerequisites', prerequisites: [gate] }]), true);
    assert.equal(operationsContend([{ op: 'set_prerequisites', prerequisites: [] }], [{ op: 'set_rules', rules: [], version: 1 }]), false);
  });
});
