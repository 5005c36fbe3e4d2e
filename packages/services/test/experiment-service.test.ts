import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { InMemoryChangeNotifier } from '@switchyard/core/testing';
import { FlagService, ScopeResolver } from '../src/index.ts';
import { experimentWorld, rejectsWith, type ExperimentWorld } from './experiment-fixture.ts';

let w: ExperimentWorld;
beforeEach(async () => {
  w = await experimentWorld();
});

describe('ExperimentService.create', () => {
  test("defaults: all the flag's variants, no metrics, full traffic, DRAFT; audited", async () => {
    const created = await w.experiments.create(w.admin, w.scope, { flag_key: 'checkout' });
    assert.deepEqual([created.status, created.variantKeys, created.metricKeys, created.trafficAllocation, created.name], [
      'EXPERIMENT_STATUS_DRAFT', ['control', 'treatment', 'third'], [], 1, '',
    ]);
    assert.equal(w.state.audit.at(-1)?.action, 'experiment.create');
  });

  test('references are checked against the environment', async () => {
    await rejectsWith(w.experiments.create(w.admin, w.scope, {}), 'INVALID_ARGUMENT', /flag_key is required/);
    await rejectsWith(w.experiments.create(w.admin, w.scope, { flag_key: 'nope' }), 'INVALID_ARGUMENT', /does not exist/);
    await rejectsWith(w.experiments.create(w.admin, w.scope, { flag_key: 'checkout', variant_keys: ['control', 'x'] }), 'INVALID_ARGUMENT', /variant_keys: x/);
    await rejectsWith(w.experiments.create(w.admin, w.scope, { flag_key: 'checkout', variant_keys: [] }), 'INVALID_ARGUMENT', /at least 2/);
    await rejectsWith(w.experiments.create(w.admin, w.scope, { flag_key: 'checkout', metric_keys: ['purchase', 'nope'] }), 'INVALID_ARGUMENT', /metric_keys: nope/);
    await rejectsWith(w.experiments.create(w.admin, w.scope, { flag_key: 'checkout', traffic_allocation: -0.1 }), 'INVALID_ARGUMENT', /traffic_allocation/);
    await rejectsWith(w.experiments.create(w.admin, w.scope, { flag_key: 'checkout', name: 'x'.repeat(201) }), 'INVALID_ARGUMENT', /name/);
    await w.repos.flags.setArchived(w.scope, 'checkout', true);
    await rejectsWith(w.experiments.create(w.admin, w.scope, { flag_key: 'checkout' }), 'INVALID_ARGUMENT', /archived/);
  });

  test("another org's user is refused as if nothing existed", async () => {
    await rejectsWith(w.experiments.scope(w.stranger, w.scope.environmentId), 'NOT_FOUND');
    await rejectsWith(w.experiments.create(w.stranger, w.scope, { flag_key: 'checkout' }), 'NOT_FOUND');
  });
});

describe('ExperimentService.update', () => {
  test('a new flag without variant_keys takes all its variants; only in DRAFT', async () => {
    await w.repos.flags.createDefinition(w.scope, { key: 'banner', description: '', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }] });
    // Starting needs a rule splitting traffic between the arms.
    await w.repos.flags.updateState(w.scope, 'banner', {
      rules: [{ id: 'half', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'on', weight_milli: 500 }, { variant_key: 'off', weight_milli: 500 }] } }],
    });
    const created = await w.experiments.create(w.admin, w.scope, { flag_key: 'checkout', variant_keys: ['control', 'treatment'] });
    const moved = await w.experiments.update(w.admin, w.scope, created.id, { flag_key: 'banner' });
    assert.deepEqual([moved.flagKey, moved.variantKeys, moved.version], ['banner', ['on', 'off'], 2]);
    await w.experiments.transition(w.admin, w.scope, created.id, { new_status: 'active' });
    await rejectsWith(w.experiments.update(w.admin, w.scope, created.id, { variant_keys: ['off', 'on'] }), 'FAILED_PRECONDITION');
    const renamed = await w.experiments.update(w.admin, w.scope, created.id, { name: 'n', flag_key: 'banner', variant_keys: ['on', 'off'] });
    assert.equal(renamed.name, 'n');
    await rejectsWith(w.experiments.update(w.admin, w.scope, created.id, { name: 'stale', version: 1 }), 'ABORTED');
  });
});

describe('ExperimentService.transition and results', () => {
  test('illegal moves are FAILED_PRECONDITION; the reason is audited; iterations follow', async () => {
    const created = await w.experiments.create(w.admin, w.scope, { flag_key: 'checkout' });
    await rejectsWith(w.experiments.transition(w.admin, w.scope, created.id, { new_status: 'paused' }), 'FAILED_PRECONDITION');
    await w.experiments.transition(w.admin, w.scope, created.id, { new_status: 'active', reason: 'go' });
    const entry = w.state.audit.at(-1);
    assert.deepEqual(entry?.details, { from: 'EXPERIMENT_STATUS_DRAFT', to: 'EXPERIMENT_STATUS_ACTIVE', reason: 'go' });
    assert.equal(entry?.environmentId, w.scope.environmentId);
    assert.deepEqual([(entry?.before as { status: string }).status, (entry?.after as { status: string }).status], ['EXPERIMENT_STATUS_DRAFT', 'EXPERIMENT_STATUS_ACTIVE']);
    await w.experiments.transition(w.admin, w.scope, created.id, { new_status: 'concluded' });
    await rejectsWith(w.experiments.transition(w.admin, w.scope, created.id, { new_status: 'active' }), 'FAILED_PRECONDITION', /final/);
    const iterations = await w.experiments.iterations(w.admin, w.scope, created.id);
    assert.deepEqual(iterations.map((i) => [i.iterationNumber, i.endedAtMs > 0]), [[1, true]]);
  });

  test('results: NOT_FOUND until saved; is_stale from data received after computed_at_ms', async () => {
    const created = await w.experiments.create(w.admin, w.scope, { flag_key: 'checkout', metric_keys: ['purchase'] });
    await rejectsWith(w.experiments.results(w.admin, w.scope, created.id), 'NOT_FOUND', /not computed yet/);
    const computedAtMs = Date.now();
    await w.repos.results.save(w.scope, { experimentId: created.id, iterationId: null, variantResults: [], srmPValue: null, computedAtMs, nextRunAtMs: 0, computationStatus: 'completed' });
    assert.equal((await w.experiments.results(w.admin, w.scope, created.id)).isStale, false);
    await w.repos.events.insert(w.scope, [{ metricKey: 'revenue', contextType: 'user', contextKey: 'u', value: 1, timestampMs: 1 }]);
    assert.equal((await w.experiments.results(w.admin, w.scope, created.id)).isStale, false, 'not one of its metrics');
    await new Promise((resolve) => setTimeout(resolve, 2));
    await w.repos.exposures.insert(w.scope, [{ flagKey: 'checkout', variantKey: 'control', contextType: 'user', contextKey: 'u', timestampMs: 1 }]);
    assert.equal((await w.experiments.results(w.admin, w.scope, created.id)).isStale, true);
  });
});

describe('metric definitions, the studied rule and the control', () => {
  test('metric_keys become metrics by their event value type: bool converts, int and double sum', async () => {
    const created = await w.experiments.create(w.admin, w.scope, { flag_key: 'checkout', metric_keys: ['purchase', 'clicks', 'revenue'] });
    assert.deepEqual(created.metrics.map((m) => (m.kind === 'event' ? [m.key, m.eventKey, m.aggregation] : [])), [
      ['purchase', 'purchase', 'conversion'], ['clicks', 'clicks', 'sum'], ['revenue', 'revenue', 'sum'],
    ]);
    assert.deepEqual(created.metricKeys, ['purchase', 'clicks', 'revenue']);
  });

  test('is_stale watches the event keys the metrics read, not their keys', async () => {
    const created = await w.experiments.create(w.admin, w.scope, {
      flag_key: 'checkout',
      metrics: [{ key: 'per-click', ratio: { numerator: { event_key: 'revenue', aggregation: 'sum' }, denominator: { event_key: 'clicks', aggregation: 'count' } } }],
    });
    const computedAtMs = Date.now();
    await w.repos.results.save(w.scope, { experimentId: created.id, iterationId: null, variantResults: [], srmPValue: null, computedAtMs, nextRunAtMs: 0, computationStatus: 'completed' });
    await new Promise((resolve) => setTimeout(resolve, 2));
    await w.repos.events.insert(w.scope, [{ metricKey: 'purchase', contextType: 'user', contextKey: 'u', value: 1, timestampMs: 1 }]);
    assert.equal((await w.experiments.results(w.admin, w.scope, created.id)).isStale, false, 'not an event the metrics read');
    await w.repos.events.insert(w.scope, [{ metricKey: 'clicks', contextType: 'user', contextKey: 'u', value: 1, timestampMs: 1 }]);
    assert.equal((await w.experiments.results(w.admin, w.scope, created.id)).isStale, true, 'the denominator event');
  });

  test('entering ACTIVE needs the studied rule; with it, the move happens', async () => {
    // The fixture's rule gives control and treatment 50/50 and 'third' nothing.
    const third = await w.experiments.create(w.admin, w.scope, { flag_key: 'checkout', variant_keys: ['control', 'third'] });
    await rejectsWith(w.experiments.transition(w.admin, w.scope, third.id, { new_status: 'active' }), 'FAILED_PRECONDITION', /no rule with a percentage allocation giving traffic to the control 'control'/);
    const all = await w.experiments.create(w.admin, w.scope, { flag_key: 'checkout', rule_id: 'split' });
    assert.equal((await w.experiments.transition(w.admin, w.scope, all.id, { new_status: 'active' })).status, 'EXPERIMENT_STATUS_ACTIVE');
    const thirdControl = await w.experiments.create(w.admin, w.scope, { flag_key: 'checkout', control_variant_key: 'third' });
    await rejectsWith(w.experiments.transition(w.admin, w.scope, thirdControl.id, { new_status: 'active' }), 'FAILED_PRECONDITION', /control 'third'/);
  });
});

describe('bucket_by under an ACTIVE experiment', () => {
  test('a change of the flag\'s bucket_by is refused (409) while an experiment on it is ACTIVE, in any environment of the project; other metadata is not', async () => {
    const flags = new FlagService(w.repos, new ScopeResolver(w.repos), new InMemoryChangeNotifier());
    const created = await w.experiments.create(w.admin, w.scope, { flag_key: 'checkout', variant_keys: ['control', 'treatment'] });
    await w.experiments.transition(w.admin, w.scope, created.id, { new_status: 'active' });
    const project = await flags.target(w.admin, w.scope.projectId, 'project');
    await rejectsWith(flags.update(w.admin, project, 'checkout', { flag: { bucket_by: 'project' } }), 'FAILED_PRECONDITION', /bucket_by cannot change while an experiment on the flag is ACTIVE.* in prod/);
    // Another environment's route reaches the same project-level field: refused too.
    const staging = await w.repos.environments.create({ orgId: w.scope.orgId, projectId: w.scope.projectId }, { name: 'staging' });
    await rejectsWith(flags.update(w.admin, await flags.target(w.admin, staging.id, 'environment'), 'checkout', { flag: { bucket_by: 'project' } }), 'FAILED_PRECONDITION');
    assert.equal((await flags.get(w.admin, project, 'checkout')).bucket_by, 'environment');
    // The same value is no change; tags are no reshuffle.
    assert.deepEqual((await flags.update(w.admin, project, 'checkout', { flag: { bucket_by: 'environment', tags: ['exp'] } })).tags, ['exp']);
    await w.experiments.transition(w.admin, w.scope, created.id, { new_status: 'paused' });
    assert.equal((await flags.update(w.admin, project, 'checkout', { flag: { bucket_by: 'project' } })).bucket_by, 'project');
  });
});
