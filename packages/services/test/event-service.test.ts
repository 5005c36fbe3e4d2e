import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { isDomainError, type DomainError, type EnvironmentScope, type ErrorCode, type Principal, type Repositories } from '@switchyard/core';
import { InMemoryChangeNotifier, InMemoryState, createInMemoryRepositories } from '@switchyard/core/testing';
import { EventDefinitionCache } from '../src/events/event-definition-cache.ts';
import { EventDefinitionService } from '../src/events/event-definition-service.ts';
import { IngestService } from '../src/events/event-service.ts';
import { ScopeResolver } from '../src/scopes.ts';

const NOW = Date.UTC(2030, 0, 1);

let state: InMemoryState;
let repos: Repositories;
let notifier: InMemoryChangeNotifier;
let cache: EventDefinitionCache;
let definitions: EventDefinitionService;
let ingest: IngestService;
let env: EnvironmentScope;
let otherOrgEnv: EnvironmentScope;
let admin: Principal;
let member: Principal;
let sdk: Principal;
let outsider: Principal;

async function rejectsWith(call: Promise<unknown>, code: ErrorCode): Promise<DomainError> {
  let caught: unknown;
  await assert.rejects(call, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(isDomainError(caught), `a DomainError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  return caught;
}

function addEnvironment(label: string): EnvironmentScope {
  const org = { id: state.newId(), name: `org-${label}`, isSystem: false, createdAtMs: NOW };
  const project = { id: state.newId(), orgId: org.id, name: 'p', createdAtMs: NOW, clientVisibleDefault: false, lifecycle: { statusWindowDays: 7, codeRemovalMinAgeDays: 30, archiveAfterDays: 30, unchangedFallbackDays: 14 } };
  const environment = { id: state.newId(), orgId: org.id, projectId: project.id, name: 'production', createdAtMs: NOW, critical: false, requireComment: false };
  state.orgs.set(org.id, org);
  state.projects.set(project.id, project);
  state.environments.set(environment.id, environment);
  return { orgId: org.id, projectId: project.id, environmentId: environment.id };
}

const event = (metric_key: string, context_key: string, value?: unknown) => ({ metric_key, context_type: 'user', context_key, value });

beforeEach(async () => {
  state = new InMemoryState();
  repos = createInMemoryRepositories(state);
  notifier = new InMemoryChangeNotifier();
  env = addEnvironment('a');
  otherOrgEnv = addEnvironment('b');
  const scopes = new ScopeResolver(repos);
  cache = new EventDefinitionCache(repos.eventDefinitions, notifier);
  await cache.start();
  definitions = new EventDefinitionService(repos, scopes, cache, () => NOW);
  ingest = new IngestService({
    repos,
    scopes,
    definitions: cache,
    flagVariants: async () => new Map([['checkout', new Set(['control', 'treatment'])]]),
    now: () => NOW,
  });
  admin = { kind: 'user', userId: 'u-admin', orgId: env.orgId, role: 'org_admin', isSystem: false };
  member = { kind: 'user', userId: 'u-member', orgId: env.orgId, role: 'org_member', isSystem: false };
  sdk = { kind: 'sdk_key', sdkKeyId: 'k1', orgId: env.orgId, projectId: env.projectId, environmentId: env.environmentId };
  outsider = { kind: 'user', userId: 'u-out', orgId: otherOrgEnv.orgId, role: 'org_admin', isSystem: false };
  await definitions.create(admin, env, { key: 'signup', value_type: 'bool' });
  await definitions.create(admin, env, { key: 'clicks', value_type: 'int', description: 'Clicks' });
});

describe('EventDefinitionService', () => {
  test('validates key format, value type and description length', async () => {
    await rejectsWith(definitions.create(admin, env, { key: 'bad key', value_type: 'bool' }), 'INVALID_ARGUMENT');
    await rejectsWith(definitions.create(admin, env, { value_type: 'bool' }), 'INVALID_ARGUMENT');
    await rejectsWith(definitions.create(admin, env, { key: 'k', value_type: 'string' }), 'INVALID_ARGUMENT');
    await rejectsWith(definitions.create(admin, env, { key: 'k' }), 'INVALID_ARGUMENT');
    await rejectsWith(definitions.create(admin, env, { key: 'k', value_type: 'int', description: 'd'.repeat(2001) }), 'INVALID_ARGUMENT');
    await rejectsWith(definitions.create(admin, env, { key: 'signup', value_type: 'int' }), 'ALREADY_EXISTS');
    await rejectsWith(definitions.update(admin, env, 'clicks', { key: 'other' }), 'INVALID_ARGUMENT');
    await rejectsWith(definitions.update(admin, env, 'clicks', { value_type: 'json' }), 'INVALID_ARGUMENT');
    await rejectsWith(definitions.update(admin, env, 'missing', { description: 'x' }), 'NOT_FOUND');
    await rejectsWith(definitions.remove(admin, env, 'missing'), 'NOT_FOUND');
    assert.deepEqual((await definitions.list(member, env)).map((d) => d.key), ['clicks', 'signup']);
  });

  test('members may write; an SDK key may not; another org sees nothing (NOT_FOUND)', async () => {
    const created = await definitions.create(member, env, { key: 'revenue', value_type: 'double' });
    assert.equal(created.valueType, 'double');
    await rejectsWith(definitions.list(sdk, env), 'PERMISSION_DENIED');
    await rejectsWith(definitions.create(sdk, env, { key: 'x', value_type: 'bool' }), 'PERMISSION_DENIED');
    await rejectsWith(definitions.scope(outsider, env.environmentId), 'NOT_FOUND');
    await rejectsWith(definitions.list(outsider, env), 'NOT_FOUND');
  });

  test('every change is audited', async () => {
    await definitions.update(member, env, 'clicks', { description: 'Taps' });
    await definitions.remove(member, env, 'signup');
    const actions = state.audit.filter((entry) => entry.resourceType === 'event_definition').map((entry) => [entry.action, entry.resourceId, entry.actor.id]);
    assert.deepEqual(actions, [
      ['event_definition.create', 'signup', 'u-admin'],
      ['event_definition.create', 'clicks', 'u-admin'],
      ['event_definition.update', 'clicks', 'u-member'],
      ['event_definition.delete', 'signup', 'u-member'],
    ]);
    const update = state.audit.find((entry) => entry.action === 'event_definition.update');
    assert.equal((update?.before as { description: string }).description, 'Clicks');
    assert.equal((update?.after as { description: string }).description, 'Taps');
    assert.equal(update?.environmentId, env.environmentId);
  });

  test('a change is seen by the next ingest here at once, and by other instances through the notifier', async () => {
    const elsewhere = new EventDefinitionCache(repos.eventDefinitions, notifier);
    await elsewhere.start();
    assert.equal((await elsewhere.types(env)).get('clicks'), 'int');
    assert.deepEqual(await ingest.ingestEvents(sdk, env, [event('clicks', 'u1', 2.5)]), { accepted_count: 0, rejected_keys: ['clicks'], rejected: [{ index: 0, key: 'clicks', reason: 'wrong_value_type' }] });
    await definitions.update(member, env, 'clicks', { value_type: 'double' });
    assert.deepEqual(await ingest.ingestEvents(sdk, env, [event('clicks', 'u1', 2.5)]), { accepted_count: 1, rejected_keys: [], rejected: [] });
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.equal((await elsewhere.types(env)).get('clicks'), 'double', 'the other instance dropped its copy');
    await elsewhere.stop();
  });
});

describe('IngestService', () => {
  test('stores the accepted events (bool as 1/0, receipt time as default timestamp) before answering', async () => {
    const answer = await ingest.ingestEvents(sdk, env, [event('signup', 'u1'), event('signup', 'u2', false), event('clicks', 'u1', 3), event('ghost', 'u1')]);
    assert.deepEqual(answer, { accepted_count: 3, rejected_keys: ['ghost'], rejected: [{ index: 3, key: 'ghost', reason: 'unknown_metric' }] });
    assert.deepEqual(
      state.events.map((e) => [e.metricKey, e.contextKey, e.value, e.timestampMs]),
      [
        ['signup', 'u1', 1, NOW],
        ['signup', 'u2', 0, NOW],
        ['clicks', 'u1', 3, NOW],
      ],
    );
    assert.equal(ingest.eventWriter.stats.writes, 1);
  });

  test('RBAC: a bearer of the org may ingest; an SDK key of another environment may not; the system org may not', async () => {
    assert.equal((await ingest.ingestEvents(member, env, [event('signup', 'u1')])).accepted_count, 1);
    const foreignKey: Principal = { ...sdk, environmentId: otherOrgEnv.environmentId } as Principal;
    await rejectsWith(ingest.ingestEvents(foreignKey, env, [event('signup', 'u1')]), 'PERMISSION_DENIED');
    await rejectsWith(ingest.scope(outsider, env.environmentId), 'NOT_FOUND');
    const system: Principal = { kind: 'user', userId: 'root', orgId: env.orgId, role: 'org_admin', isSystem: true };
    await rejectsWith(ingest.ingestEvents(system, env, [event('signup', 'u1')]), 'PERMISSION_DENIED');
    await rejectsWith(ingest.ingestExposures(foreignKey, env, []), 'PERMISSION_DENIED');
  });

  test('more than 10,000 entries → RESOURCE_EXHAUSTED, nothing stored', async () => {
    const many = Array.from({ length: 10_001 }, () => event('signup', 'u1'));
    await rejectsWith(ingest.ingestEvents(sdk, env, many), 'RESOURCE_EXHAUSTED');
    await rejectsWith(ingest.ingestExposures(sdk, env, many), 'RESOURCE_EXHAUSTED');
    assert.equal(state.events.length, 0);
  });

  test('Idempotency-Key: a resend gets the first answer and stores nothing; concurrent resends store once', async () => {
    const batch = [event('signup', 'u1'), event('later', 'u1', 1)];
    const first = await ingest.ingestEvents(sdk, env, batch, { idempotencyKey: 'abc' });
    assert.deepEqual(first, { accepted_count: 1, rejected_keys: ['later'], rejected: [{ index: 1, key: 'later', reason: 'unknown_metric' }] });
    await definitions.create(admin, env, { key: 'later', value_type: 'int' });
    assert.deepEqual(await ingest.ingestEvents(sdk, env, batch, { idempotencyKey: 'abc' }), first);
    assert.equal(state.events.length, 1);

    const answers = await Promise.all([1, 2, 3].map(() => ingest.ingestEvents(sdk, env, batch, { idempotencyKey: 'race' })));
    for (const answer of answers) assert.deepEqual(answer, { accepted_count: 2, rejected_keys: [], rejected: [] });
    assert.equal(state.events.length, 3);
    assert.equal(ingest.eventWriter.stats.requests, 0, 'idempotent requests bypass the group commit (their own claim + rows statement)');
  });

  test('Idempotency-Key: per environment and per kind (events and exposures do not share answers); malformed keys are refused', async () => {
    await ingest.ingestEvents(sdk, env, [event('signup', 'u1')], { idempotencyKey: 'same' });
    const exposures = await ingest.ingestExposures(sdk, env, [{ flag_key: 'checkout', variant_key: 'control', context_type: 'user', context_key: 'u1' }], {
      idempotencyKey: 'same',
    });
    assert.deepEqual(exposures, { accepted_count: 1, rejected_keys: [], rejected: [] });
    assert.equal(state.exposures.length, 1);
    await rejectsWith(ingest.ingestEvents(sdk, env, [], { idempotencyKey: '' }), 'INVALID_ARGUMENT');
    await rejectsWith(ingest.ingestEvents(sdk, env, [], { idempotencyKey: 'has space' }), 'INVALID_ARGUMENT');
    await rejectsWith(ingest.ingestEvents(sdk, env, [], { idempotencyKey: 'k'.repeat(256) }), 'INVALID_ARGUMENT');
  });

  test('exposures: checked against the flags and their variants, stored through the exposure writer', async () => {
    const answer = await ingest.ingestExposures(sdk, env, [
      { flag_key: 'checkout', variant_key: 'treatment', context_type: 'user', context_key: 'u1' },
      { flag_key: 'checkout', variant_key: 'nope', context_type: 'user', context_key: 'u1' },
      { flag_key: 'other', variant_key: 'on', context_type: 'user', context_key: 'u1' },
    ]);
    assert.deepEqual(answer, {
      accepted_count: 1,
      rejected_keys: ['checkout', 'other'],
      rejected: [
        { index: 1, key: 'checkout', reason: 'unknown_variant' },
        { index: 2, key: 'other', reason: 'unknown_flag' },
      ],
    });
    assert.deepEqual(
      state.exposures.map((e) => [e.flagKey, e.variantKey, e.timestampMs]),
      [['checkout', 'treatment', NOW]],
    );
    assert.equal(ingest.exposureWriter.stats.writes, 1);
  });

  test('stop() writes what waits (not waiting for the delay), then refuses new events with UNAVAILABLE', async () => {
    const slow = new IngestService({
      repos,
      scopes: new ScopeResolver(repos),
      definitions: cache,
      flagVariants: async () => new Map(),
      writer: { maxDelayMs: 60_000 },
    });
    const pending = slow.ingestEvents(sdk, env, [event('signup', 'u9')]);
    while (slow.eventWriter.stats.requests === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    assert.equal(state.events.length, 0, 'still waiting for company');
    await slow.stop();
    await pending;
    assert.equal(state.events.length, 1);
    await rejectsWith(slow.ingestEvents(sdk, env, [event('signup', 'u10')]), 'UNAVAILABLE');
  });
});
