import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { isDomainError, type EnvironmentScope, type Principal, type Repositories } from '@switchyard/core';
import { InMemoryChangeNotifier } from '@switchyard/core/testing';
import { createPostgresRepositories } from '@switchyard/postgres';
import { createTestDatabase, type TestDatabase } from '@switchyard/postgres/testing';
import { FlagService, ScheduledChangeService, ScheduledChangeWorker, ScopeResolver } from '@switchyard/services';

// Scheduled changes and revert against real PostgreSQL (docs/workflow.md "Scheduled changes"): the worker
// applies a due change exactly once across racing workers, all or nothing, fails with a reason and
// an entry, records lateness; delete/archive cancel; revert restores the before state. Expected
// values are derived by hand from the operations.

let db: TestDatabase;
let repos: Repositories;
let clock: number;
const now = () => clock;
let notifier: InMemoryChangeNotifier;
let flags: FlagService;
let schedules: ScheduledChangeService;
let env: EnvironmentScope;
let otherEnv: EnvironmentScope;
let admin: Principal;
let memberId: string;
let member: Principal;

const T0 = Date.UTC(2031, 5, 1, 9, 0, 0);
const HOUR = 60 * 60_000;

before(async () => {
  db = await createTestDatabase();
  repos = createPostgresRepositories(db.sql);
});
after(async () => {
  await db.drop();
});

beforeEach(async () => {
  clock = T0;
  notifier = new InMemoryChangeNotifier();
  const scopes = new ScopeResolver(repos);
  flags = new FlagService(repos, scopes, notifier, now);
  schedules = new ScheduledChangeService(repos, scopes, notifier, now);
  const org = await repos.orgs.create({ name: `acme-${Math.random()}` });
  const adminUser = await repos.users.create({ email: `admin-${Math.random()}@example.com`, displayName: 'admin', passwordHash: 'x' });
  await repos.users.addMembership({ orgId: org.id, userId: adminUser.id, role: 'org_admin' });
  admin = { kind: 'user', userId: adminUser.id, orgId: org.id, role: 'org_admin', isSystem: false };
  const memberUser = await repos.users.create({ email: `member-${Math.random()}@example.com`, displayName: 'member', passwordHash: 'x' });
  await repos.users.addMembership({ orgId: org.id, userId: memberUser.id, role: 'org_member' });
  memberId = memberUser.id;
  member = { kind: 'user', userId: memberUser.id, orgId: org.id, role: 'org_member', isSystem: false };
  const project = await repos.projects.create({ orgId: org.id }, { name: 'web' });
  const production = await repos.environments.create({ orgId: org.id, projectId: project.id }, { name: 'production' });
  const staging = await repos.environments.create({ orgId: org.id, projectId: project.id }, { name: 'staging' });
  env = { orgId: org.id, projectId: project.id, environmentId: production.id };
  otherEnv = { orgId: org.id, projectId: project.id, environmentId: staging.id };
  await flags.create(admin, { environment: env }, {
    flag: {
      key: 'checkout',
      value_type: 'bool',
      variants: [{ key: 'on', value: true }, { key: 'off', value: false }],
      off_variant_key: 'off',
      rules: [{ id: 'beta', conditions: [{ attribute: 'plan', op: 'eq', values: ['beta'] }], variant_key: 'on' }],
    },
  });
});

const flagNow = (scope: EnvironmentScope = env) => repos.flags.get(scope, 'checkout');
const entries = async (action: string) => (await repos.audit.list({ orgId: env.orgId }, { limit: 200 })).items.filter((entry) => entry.action === action);
const rejectsWith = (promise: Promise<unknown>, code: string, message?: RegExp) =>
  assert.rejects(promise, (error: unknown) => isDomainError(error) && error.code === code && (message === undefined || message.test(error.message)));

describe('scheduled changes: creation', () => {
  test('is checked against the flag now, and reports contending pending schedules', async () => {
    const first = await schedules.create(member, env, 'checkout', { execute_at_ms: T0 + HOUR, operations: [{ op: 'set_enabled', enabled: true }], comment: 'launch' });
    assert.equal(first.status, 'pending');
    assert.deepEqual(first.contending, []);
    assert.deepEqual(first.created_by, { type: 'user', id: memberId, email: (await repos.users.getById(memberId))!.email });
    // Turning it off later contends with turning it on (both set `enabled`); a rule change does not.
    const second = await schedules.create(member, env, 'checkout', { execute_at_ms: T0 + 2 * HOUR, operations: [{ op: 'set_enabled', enabled: false }] });
    assert.deepEqual(second.contending.map((c) => c.id), [first.id]);
    const third = await schedules.create(member, env, 'checkout', { execute_at_ms: T0 + 2 * HOUR, operations: [{ op: 'set_rule_serve', rule_id: 'beta', variant_key: 'off' }] });
    assert.deepEqual(third.contending, []);
    // Refused now: a rule that does not exist, a variant the flag lacks, a time in the past.
    await rejectsWith(schedules.create(member, env, 'checkout', { execute_at_ms: T0 + HOUR, operations: [{ op: 'remove_rule', rule_id: 'gone' }] }), 'FAILED_PRECONDITION', /no rule 'gone'/);
    await rejectsWith(schedules.create(member, env, 'checkout', { execute_at_ms: T0 + HOUR, operations: [{ op: 'set_off_variant', variant_key: 'purple' }] }), 'INVALID_ARGUMENT');
    await rejectsWith(schedules.create(member, env, 'checkout', { execute_at_ms: T0, operations: [{ op: 'set_enabled', enabled: true }] }), 'INVALID_ARGUMENT', /future/);
    await rejectsWith(schedules.create(member, env, 'nope', { execute_at_ms: T0 + HOUR, operations: [{ op: 'set_enabled', enabled: true }] }), 'NOT_FOUND');
    // The validation wrote nothing to the flag; the three creations wrote an entry each.
    assert.equal((await flagNow())!.version, 1);
    assert.equal((await entries('scheduled_change.create')).length, 3);
    assert.equal((await entries('flag.update')).length, 0);
  });

  test('edit while pending, cancel, and no edit or cancel after that', async () => {
    const change = await schedules.create(member, env, 'checkout', { execute_at_ms: T0 + HOUR, operations: [{ op: 'set_enabled', enabled: true }] });
    const edited = await schedules.update(member, env, 'checkout', change.id, { execute_at_ms: T0 + 3 * HOUR, version: 1 });
    assert.equal(edited.execute_at_ms, T0 + 3 * HOUR);
    assert.equal(edited.version, 2);
    await rejectsWith(schedules.update(member, env, 'checkout', change.id, { comment: 'x', version: 1 }), 'ABORTED');
    await rejectsWith(schedules.update(member, env, 'checkout', change.id, { operations: [{ op: 'remove_rule', rule_id: 'gone' }] }), 'FAILED_PRECONDITION');
    const cancelled = await schedules.cancel(member, env, 'checkout', change.id);
    assert.equal(cancelled.status, 'cancelled');
    await rejectsWith(schedules.cancel(member, env, 'checkout', change.id), 'FAILED_PRECONDITION', /cancelled/);
    await rejectsWith(schedules.update(member, env, 'checkout', change.id, { comment: 'x' }), 'FAILED_PRECONDITION');
    // Another environment's route does not find it.
    await rejectsWith(schedules.get(member, otherEnv, 'checkout', change.id), 'NOT_FOUND');
    assert.deepEqual((await entries('scheduled_change.update')).length, 1);
    assert.deepEqual((await entries('scheduled_change.cancel')).length, 1);
  });

  test('a viewer may list but not schedule; an SDK key may do neither', async () => {
    const viewer: Principal = { ...(member as Extract<Principal, { kind: 'user' }>), bindings: [{ role: 'viewer' }] };
    await rejectsWith(schedules.create(viewer, env, 'checkout', { execute_at_ms: T0 + HOUR, operations: [{ op: 'set_enabled', enabled: true }] }), 'PERMISSION_DENIED');
    assert.deepEqual(await schedules.list(viewer, env, {}, 'checkout'), []);
    const sdk: Principal = { kind: 'sdk_key', sdkKeyId: 'k', ...env };
    await rejectsWith(schedules.list(sdk, env, {}, null), 'PERMISSION_DENIED');
  });
});

describe('scheduled changes: the worker', () => {
  test('applies at the time, exactly once across racing workers, with the scheduler as actor and who scheduled it', async () => {
    const change = await schedules.create(member, env, 'checkout', { execute_at_ms: T0 + HOUR, operations: [{ op: 'set_enabled', enabled: true }, { op: 'set_rule_serve', rule_id: 'beta', variant_key: 'off' }] });
    const workers = Array.from({ length: 4 }, () => new ScheduledChangeWorker(repos, notifier, { now }));
    clock = T0 + HOUR - 1;
    assert.deepEqual((await workers[0]!.runDue()).filter((outcome) => outcome.change.id === change.id), [], 'not due a millisecond early');
    clock = T0 + HOUR;
    // (The database is shared by this file's tests: earlier tests' schedules in other orgs may be due too.)
    const outcomes = (await Promise.all(workers.map((w) => w.runDue()))).flat().filter((outcome) => outcome.change.id === change.id);
    assert.equal(outcomes.length, 1, 'one worker applied it');
    assert.equal(outcomes[0]!.applied, true);
    const flag = (await flagNow())!;
    assert.equal(flag.enabled, true);
    assert.equal(flag.rules[0]!.variant_key, 'off');
    assert.equal(flag.version, 2, 'one write');
    const applied = await entries('flag.scheduled_change');
    assert.equal(applied.length, 1);
    assert.deepEqual(applied[0]!.actor, { type: 'system', id: 'scheduler' });
    assert.equal((applied[0]!.details.scheduled_by as { id: string }).id, memberId);
    assert.equal(applied[0]!.details.scheduled_change_id, change.id);
    assert.equal(applied[0]!.details.late_ms, 0);
    const stored = await schedules.get(admin, env, 'checkout', change.id);
    assert.equal(stored.status, 'applied');
    assert.equal(stored.applied_at_ms, T0 + HOUR);
  });

  test('applies late after downtime and records how late', async () => {
    const change = await schedules.create(member, env, 'checkout', { execute_at_ms: T0 + HOUR, operations: [{ op: 'set_enabled', enabled: true }] });
    clock = T0 + 3 * HOUR + 5;
    await new ScheduledChangeWorker(repos, notifier, { now }).runDue();
    const stored = await schedules.get(admin, env, 'checkout', change.id);
    assert.equal(stored.applied_at_ms, T0 + 3 * HOUR + 5);
    assert.equal(stored.execute_at_ms, T0 + HOUR);
    assert.equal((await entries('flag.scheduled_change'))[0]!.details.late_ms, 2 * HOUR + 5);
  });

  test('never partially: a change whose second operation no longer applies writes nothing and fails with the reason and an entry', async () => {
    const change = await schedules.create(member, env, 'checkout', { execute_at_ms: T0 + HOUR, operations: [{ op: 'set_enabled', enabled: true }, { op: 'remove_rule', rule_id: 'beta' }] });
    // A person removes rule beta meanwhile.
    await flags.replaceRules(admin, { environment: env }, 'checkout', []);
    const version = (await flagNow())!.version;
    clock = T0 + HOUR;
    const [outcome] = (await new ScheduledChangeWorker(repos, notifier, { now }).runDue()).filter((o) => o.change.id === change.id);
    assert.equal(outcome!.applied, false);
    const flag = (await flagNow())!;
    assert.equal(flag.enabled, false, 'the first operation was not written');
    assert.equal(flag.version, version);
    const stored = await schedules.get(admin, env, 'checkout', change.id);
    assert.equal(stored.status, 'failed');
    assert.match(stored.reason!, /operations\[1\] \(remove_rule\) no longer applies: the flag has no rule 'beta'/);
    const failed = await entries('scheduled_change.fail');
    assert.equal(failed.length, 1);
    assert.equal(failed[0]!.resourceId, change.id);
    assert.match(String(failed[0]!.details.reason), /no rule 'beta'/);
    assert.equal((await entries('flag.scheduled_change')).length, 0);
  });

  test("a removed or demoted member's schedule fails with a reason", async () => {
    const change = await schedules.create(member, env, 'checkout', { execute_at_ms: T0 + HOUR, operations: [{ op: 'set_enabled', enabled: true }] });
    await repos.users.removeMembership({ orgId: env.orgId }, memberId);
    clock = T0 + HOUR;
    await new ScheduledChangeWorker(repos, notifier, { now }).runDue();
    const stored = await schedules.get(admin, env, 'checkout', change.id);
    assert.equal(stored.status, 'failed');
    assert.match(stored.reason!, /no longer a member/);
    assert.equal((await flagNow())!.enabled, false);
  });

  test("a member demoted to viewer, or a revoked API token: the schedule fails with a reason and writes nothing", async () => {
    const byMember = await schedules.create(member, env, 'checkout', { execute_at_ms: T0 + HOUR, operations: [{ op: 'set_enabled', enabled: true }] });
    await repos.users.setBindings({ orgId: env.orgId }, memberId, [{ role: 'viewer' }]);
    const token = await repos.apiTokens.create({ orgId: env.orgId }, { name: 'ci', role: 'editor', scope: {}, tokenPrefix: 'swy_x', tokenHash: `h-${Math.random()}`, createdByUserId: null, expiresAtMs: null });
    const tokenPrincipal: Principal = { kind: 'api_token', tokenId: token.id, name: 'ci', orgId: env.orgId, role: 'editor', scope: {}, expiresAtMs: null };
    const byToken = await schedules.create(tokenPrincipal, env, 'checkout', { execute_at_ms: T0 + HOUR, operations: [{ op: 'set_off_variant', variant_key: 'on' }] });
    await repos.apiTokens.revoke({ orgId: env.orgId }, token.id, T0);
    clock = T0 + HOUR;
    await new ScheduledChangeWorker(repos, notifier, { now }).runDue();
    const memberOutcome = await schedules.get(admin, env, 'checkout', byMember.id);
    assert.equal(memberOutcome.status, 'failed');
    assert.match(memberOutcome.reason!, /may no longer change flags in this environment/);
    const tokenOutcome = await schedules.get(admin, env, 'checkout', byToken.id);
    assert.equal(tokenOutcome.status, 'failed');
    assert.match(tokenOutcome.reason!, /API token 'ci', which scheduled it, is revoked/);
    const flag = (await flagNow())!;
    assert.deepEqual([flag.enabled, flag.off_variant_key, flag.version], [false, 'off', 1]);
  });

  test('deleting or archiving the flag cancels its pending schedules in the same write', async () => {
    const inProduction = await schedules.create(member, env, 'checkout', { execute_at_ms: T0 + HOUR, operations: [{ op: 'set_enabled', enabled: true }] });
    const inStaging = await schedules.create(member, otherEnv, 'checkout', { execute_at_ms: T0 + HOUR, operations: [{ op: 'set_enabled', enabled: true }] });
    await flags.archive(admin, { environment: env }, 'checkout', true);
    for (const [scope, id] of [[env, inProduction.id], [otherEnv, inStaging.id]] as const) {
      const stored = await schedules.get(admin, scope, 'checkout', id);
      assert.equal(stored.status, 'cancelled');
      assert.equal(stored.reason, 'the flag was archived');
    }
    await flags.archive(admin, { environment: env }, 'checkout', false);
    const again = await schedules.create(member, env, 'checkout', { execute_at_ms: T0 + HOUR, operations: [{ op: 'set_enabled', enabled: true }] });
    await flags.remove(admin, { environment: env }, 'checkout');
    const [row] = await db.sql<{ status: string; reason: string }[]>`SELECT status, reason FROM scheduled_changes WHERE id = ${again.id}`;
    assert.deepEqual({ ...row }, { status: 'cancelled', reason: 'the flag was deleted' });
    clock = T0 + HOUR;
    const ours = new Set([inProduction.id, inStaging.id, again.id]);
    assert.deepEqual((await new ScheduledChangeWorker(repos, notifier, { now }).runDue()).filter((o) => ours.has(o.change.id)), []);
  });
});

describe('revert', () => {
  test("restores an entry's before state as a new version, and refuses another flag's or environment's entry", async () => {
    await flags.update(admin, { environment: env }, 'checkout', { flag: { enabled: true, off_variant_key: 'on', rules: [] } });
    const [change] = (await repos.audit.list({ orgId: env.orgId }, { resourceType: 'flag', resourceId: 'checkout', environmentId: env.environmentId, limit: 1 })).items;
    assert.equal(change!.action, 'flag.update');
    const answer = await schedules.revert(admin, env, 'checkout', { audit_entry_id: change!.id });
    assert.ok('flag' in answer, 'applied: no approval required here');
    const reverted = answer.flag;
    assert.equal(reverted.enabled, false);
    assert.equal(reverted.off_variant_key, 'off');
    assert.deepEqual(reverted.rules.map((rule) => [rule.id, rule.variant_key]), [['beta', 'on']]);
    assert.equal(reverted.version, 3);
    const [entry] = await entries('flag.revert');
    assert.equal(entry!.details.reverts_entry_id, change!.id);
    // The same entry through another environment's route, or another flag's: not found.
    await flags.create(admin, { environment: env }, { flag: { key: 'other', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }] } });
    await rejectsWith(schedules.revert(admin, otherEnv, 'checkout', { audit_entry_id: change!.id }), 'NOT_FOUND');
    await rejectsWith(schedules.revert(admin, env, 'other', { audit_entry_id: change!.id }), 'NOT_FOUND');
    await rejectsWith(schedules.revert(admin, env, 'checkout', { audit_entry_id: 'not-a-uuid' }), 'NOT_FOUND');
    await rejectsWith(schedules.revert(admin, env, 'checkout', {}), 'INVALID_ARGUMENT');
    // A viewer may not revert.
    const viewer: Principal = { ...(member as Extract<Principal, { kind: 'user' }>), bindings: [{ role: 'viewer' }] };
    await rejectsWith(schedules.revert(viewer, env, 'checkout', { audit_entry_id: change!.id }), 'PERMISSION_DENIED');
  });
});
