import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { isDomainError, type EnvironmentScope, type Principal, type Repositories } from '@switchyard/core';
import { InMemoryChangeNotifier } from '@switchyard/core/testing';
import { createPostgresRepositories } from '@switchyard/postgres';
import { createTestDatabase, type TestDatabase } from '@switchyard/postgres/testing';
import { ChangeRequestService, FlagService, ScheduledChangeService, ScheduledChangeWorker, ScopeResolver, SegmentService, type ScheduledKind, type ScheduledOutcome } from '@switchyard/services';

// A change request applied at a time, against real PostgreSQL with a controlled clock
// (docs/workflow.md "Change requests and approvals"): scheduled after the apply's checks, applied
// by the scheduler at the time exactly once across racing workers, every change or none;
// re-checked at the time (a version moved, an approver removed: conflicted, nothing written, an
// entry); edits and reviews refused while scheduled; cancel; bad times; lateness and metrics.
// Expected values are derived by hand from the operations.

let db: TestDatabase;
let repos: Repositories;
let clock: number;
const now = () => clock;
let notifier: InMemoryChangeNotifier;
let flags: FlagService;
let segments: SegmentService;
let requests: ChangeRequestService;
let schedules: ScheduledChangeService;
let env: EnvironmentScope;
let author: Principal;
let approver: Principal;
let approverId: string;
let approverEmail: string;
let authorEmail: string;

const T0 = Date.UTC(2031, 5, 1, 9, 0, 0);
const HOUR = 60 * 60_000;

before(async () => {
  db = await createTestDatabase();
  repos = createPostgresRepositories(db.sql);
});
after(async () => {
  await db.drop();
});

async function user(orgId: string, label: string, role: 'org_admin' | 'org_member'): Promise<{ principal: Principal; id: string; email: string }> {
  const email = `${label}-${Math.random()}@example.com`;
  const created = await repos.users.create({ email, displayName: label, passwordHash: 'x' });
  await repos.users.addMembership({ orgId, userId: created.id, role });
  return { principal: { kind: 'user', userId: created.id, orgId, role, isSystem: false }, id: created.id, email };
}

beforeEach(async () => {
  clock = T0;
  notifier = new InMemoryChangeNotifier();
  const scopes = new ScopeResolver(repos);
  flags = new FlagService(repos, scopes, notifier, now);
  segments = new SegmentService(repos, scopes, notifier, now);
  requests = new ChangeRequestService(repos, scopes, notifier, now);
  schedules = new ScheduledChangeService(repos, scopes, notifier, now);
  const org = await repos.orgs.create({ name: `acme-${Math.random()}` });
  const a = await user(org.id, 'author', 'org_admin');
  author = a.principal;
  authorEmail = a.email;
  const r = await user(org.id, 'approver', 'org_admin');
  approver = r.principal;
  approverId = r.id;
  approverEmail = r.email;
  const project = await repos.projects.create({ orgId: org.id }, { name: 'web' });
  const production = await repos.environments.create({ orgId: org.id, projectId: project.id }, { name: 'production' });
  env = { orgId: org.id, projectId: project.id, environmentId: production.id };
  for (const key of ['checkout', 'search']) {
    await flags.create(author, { environment: env }, {
      flag: { key, value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [] },
    });
  }
  await segments.create(author, env, { key: 'beta', context_type: 'user', kind: 'list', included_keys: ['u1'] });
  await requests.putPolicy(author, env, { required: true, min_approvals: 1 });
});

const flagNow = (key: string) => repos.flags.get(env, key);
const entries = async (action: string) => (await repos.audit.list({ orgId: env.orgId }, { limit: 500 })).items.filter((entry) => entry.action === action);
const rejectsWith = (promise: Promise<unknown>, code: string, message?: RegExp) =>
  assert.rejects(promise, (error: unknown) => isDomainError(error) && error.code === code && (message === undefined || message.test(error.message)));

/** An approved open request turning checkout and search on and adding u2 to beta: three changes. */
async function approvedRequest(): Promise<string> {
  const created = await requests.create(author, env, {
    title: 'launch',
    submit: true,
    changes: [
      { flag_key: 'checkout', operations: [{ op: 'set_enabled', enabled: true }] },
      { flag_key: 'search', operations: [{ op: 'set_enabled', enabled: true }] },
      { segment_key: 'beta', operations: [{ op: 'add_members', list: 'included', keys: ['u2'] }] },
    ],
  });
  await requests.review(approver, env, created.id, { verdict: 'approve' });
  return created.id;
}

const ours = (id: string) => (outcome: { request: { id: string } }) => outcome.request.id === id;

describe('apply at a time', () => {
  test('scheduled after the checks; applied at the time, once across racing workers, every change; entries name the scheduler, who scheduled it and the approvers', async () => {
    const id = await approvedRequest();
    const scheduled = await requests.apply(author, env, id, { execute_at_ms: T0 + HOUR });
    assert.equal(scheduled.status, 'scheduled');
    assert.equal(scheduled.execute_at_ms, T0 + HOUR);
    assert.deepEqual(scheduled.scheduled_by, { type: 'user', id: (author as { userId: string }).userId, email: authorEmail });
    const scheduleEntries = await entries('change_request.schedule');
    assert.equal(scheduleEntries.length, 1);
    assert.equal(scheduleEntries[0]!.resourceId, id);
    assert.equal(scheduleEntries[0]!.details.execute_at_ms, T0 + HOUR);
    assert.deepEqual(scheduleEntries[0]!.details.approved_by, [approverEmail]);
    // Nothing written yet; listed as scheduled.
    assert.equal((await flagNow('checkout'))!.version, 1);
    assert.deepEqual((await requests.list(author, env, { status: 'scheduled' })).change_requests.map((r) => r.id), [id]);

    const workers = Array.from({ length: 4 }, () => new ScheduledChangeWorker(repos, notifier, { now }));
    clock = T0 + HOUR - 1;
    assert.deepEqual((await workers[0]!.runDueRequests()).filter(ours(id)), [], 'not due a millisecond early');
    clock = T0 + HOUR + 2_000;
    const outcomes = (await Promise.all(workers.map((w) => w.runDueRequests()))).flat().filter(ours(id));
    assert.equal(outcomes.length, 1, 'one worker applied it');
    assert.equal(outcomes[0]!.applied, true);
    for (const key of ['checkout', 'search']) {
      const flag = (await flagNow(key))!;
      assert.equal(flag.enabled, true, key);
      assert.equal(flag.version, 2, `${key}: one write`);
    }
    assert.equal((await repos.segments.get(env, 'beta'))!.included_count, 2, 'u2 added');
    const applied = await requests.get(author, env, id);
    assert.equal(applied.status, 'applied');
    assert.equal(applied.applied_at_ms, T0 + HOUR + 2_000);
    assert.deepEqual(applied.applied_by, { applier_id: 'scheduler', approvers: [approverEmail] });
    const flagEntries = (await entries('flag.update')).filter((entry) => entry.details.change_request_id === id);
    assert.equal(flagEntries.length, 2);
    for (const entry of flagEntries) {
      assert.deepEqual(entry.actor, { type: 'system', id: 'scheduler' });
      assert.deepEqual(entry.details.approved_by, [approverEmail]);
      assert.equal((entry.details.scheduled_by as { id: string }).id, (author as { userId: string }).userId);
      assert.equal(entry.details.late_ms, 2_000, 'late by the 2 s the clock moved past the time');
    }
    assert.equal((await entries('segment.update')).filter((entry) => entry.details.change_request_id === id).length, 1);
    const applyEntries = (await entries('change_request.apply')).filter((entry) => entry.resourceId === id);
    assert.equal(applyEntries.length, 1);
    assert.deepEqual(applyEntries[0]!.actor, { type: 'system', id: 'scheduler' });
  });

  test('a version moved in between: conflicted with the reason, nothing of any change written, an entry by the scheduler', async () => {
    const id = await approvedRequest();
    await requests.apply(author, env, id, { execute_at_ms: T0 + HOUR });
    // The second flag moves after the request was scheduled (the policy lifted for a moment: a direct write).
    await requests.putPolicy(author, env, { required: false });
    await flags.replaceRules(author, { environment: env }, 'search', [{ id: 'beta', conditions: [{ attribute: 'plan', op: 'eq', values: ['beta'] }], variant_key: 'on' }]);
    await requests.putPolicy(author, env, { required: true });
    const searchVersion = (await flagNow('search'))!.version;
    clock = T0 + HOUR;
    const [outcome] = (await new ScheduledChangeWorker(repos, notifier, { now }).runDueRequests()).filter(ours(id));
    assert.equal(outcome!.applied, false);
    const conflicted = await requests.get(author, env, id);
    assert.equal(conflicted.status, 'conflicted');
    assert.equal(searchVersion, 2);
    assert.equal(conflicted.conflict, "flag 'search' is at version 2, the request was made against version 1");
    assert.equal((await flagNow('checkout'))!.version, 1, 'the first change was not written either');
    assert.equal((await flagNow('checkout'))!.enabled, false);
    assert.equal((await repos.segments.get(env, 'beta'))!.included_count, 1, 'u2 was not added');
    const conflictEntries = (await entries('change_request.conflict')).filter((entry) => entry.resourceId === id);
    assert.equal(conflictEntries.length, 1);
    assert.deepEqual(conflictEntries[0]!.actor, { type: 'system', id: 'scheduler' });
    assert.equal((await entries('flag.update')).filter((entry) => entry.details.change_request_id === id).length, 0);
  });

  test('an approver removed in between: not applied (conflicted, the approvals no longer count)', async () => {
    const id = await approvedRequest();
    await requests.apply(author, env, id, { execute_at_ms: T0 + HOUR });
    await repos.users.removeMembership({ orgId: env.orgId }, approverId);
    clock = T0 + HOUR;
    const [outcome] = (await new ScheduledChangeWorker(repos, notifier, { now }).runDueRequests()).filter(ours(id));
    assert.equal(outcome!.applied, false);
    const request = await requests.get(author, env, id);
    assert.equal(request.status, 'conflicted');
    assert.match(request.conflict!, /has 0 of the 1 approvals/);
    assert.equal((await flagNow('checkout'))!.enabled, false);
    assert.equal((await flagNow('checkout'))!.version, 1);
  });

  test('the scheduler writes nothing when who scheduled it may no longer write there', async () => {
    const id = await approvedRequest();
    const other = await user(env.orgId, 'scheduler-person', 'org_member');
    // An org_member is an editor by default: allowed to schedule; then narrowed to a viewer.
    await requests.apply(other.principal, env, id, { execute_at_ms: T0 + HOUR });
    await repos.users.setBindings({ orgId: env.orgId }, other.id, [{ role: 'viewer' }]);
    clock = T0 + HOUR;
    const [outcome] = (await new ScheduledChangeWorker(repos, notifier, { now }).runDueRequests()).filter(ours(id));
    assert.equal(outcome!.applied, false);
    assert.match((await requests.get(author, env, id)).conflict!, /who scheduled it, may no longer change flags/);
    assert.equal((await flagNow('checkout'))!.version, 1);
  });

  test('while scheduled: edits and reviews refused naming why; cancel allowed, and the scheduler leaves it', async () => {
    const id = await approvedRequest();
    await requests.apply(author, env, id, { execute_at_ms: T0 + HOUR });
    await rejectsWith(requests.update(author, env, id, { title: 'renamed' }), 'FAILED_PRECONDITION', /scheduled for 2031-06-01T10:00:00.000Z/);
    await rejectsWith(requests.review(approver, env, id, { verdict: 'approve' }), 'FAILED_PRECONDITION', /scheduled/);
    await rejectsWith(requests.review(approver, env, id, { verdict: 'comment', comment: 'hm' }), 'FAILED_PRECONDITION', /scheduled/);
    await rejectsWith(requests.apply(author, env, id), 'FAILED_PRECONDITION', /scheduled/);
    await rejectsWith(requests.apply(author, env, id, { execute_at_ms: T0 + 2 * HOUR }), 'FAILED_PRECONDITION', /scheduled/);
    const cancelled = await requests.cancel(author, env, id);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal(cancelled.execute_at_ms, T0 + HOUR, 'the time it had is kept');
    clock = T0 + 2 * HOUR;
    assert.deepEqual((await new ScheduledChangeWorker(repos, notifier, { now }).runDueRequests()).filter(ours(id)), []);
    assert.equal((await flagNow('checkout'))!.version, 1);
  });

  test('the same checks as an apply before scheduling; bad times answer INVALID_ARGUMENT; a viewer cannot schedule', async () => {
    const created = await requests.create(author, env, { title: 'x', submit: true, changes: [{ flag_key: 'checkout', operations: [{ op: 'set_enabled', enabled: true }] }] });
    await rejectsWith(requests.apply(author, env, created.id, { execute_at_ms: T0 + HOUR }), 'FAILED_PRECONDITION', /0 of the 1 approvals/);
    await requests.review(approver, env, created.id, { verdict: 'approve' });
    await rejectsWith(requests.apply(author, env, created.id, { execute_at_ms: T0 }), 'INVALID_ARGUMENT', /future/);
    await rejectsWith(requests.apply(author, env, created.id, { execute_at_ms: T0 + 6 * 366 * 24 * HOUR }), 'INVALID_ARGUMENT', /5 years/);
    await rejectsWith(requests.apply(author, env, created.id, { execute_at_ms: 'tomorrow' }), 'INVALID_ARGUMENT', /execute_at_ms/);
    await rejectsWith(requests.apply(author, env, created.id, { execute_at_ms: T0 + HOUR, when: 1 }), 'INVALID_ARGUMENT', /when/);
    const viewer: Principal = { ...(approver as Extract<Principal, { kind: 'user' }>), role: 'org_member', bindings: [{ role: 'viewer' }] };
    await rejectsWith(requests.apply(viewer, env, created.id, { execute_at_ms: T0 + HOUR }), 'PERMISSION_DENIED');
    assert.equal((await requests.get(author, env, created.id)).status, 'open', 'none of these scheduled it');
    assert.equal((await entries('change_request.schedule')).length, 0);
  });

  test('the calendar lists scheduled requests beside scheduled changes, in its window', async () => {
    const id = await approvedRequest();
    await requests.apply(author, env, id, { execute_at_ms: T0 + 3 * HOUR });
    const calendar = await schedules.calendar(author, env, {}, null);
    assert.deepEqual(calendar.scheduled_changes, []);
    assert.deepEqual(calendar.change_requests.map((r) => [r.id, r.execute_at_ms, r.flag_keys, r.segment_keys]), [[id, T0 + 3 * HOUR, ['checkout', 'search'], ['beta']]]);
    assert.deepEqual((await schedules.calendar(author, env, { to_ms: String(T0 + 3 * HOUR) }, null)).change_requests, [], 'to_ms is exclusive');
    assert.deepEqual((await schedules.calendar(author, env, { from_ms: String(T0 + 3 * HOUR) }, 'checkout')).change_requests.map((r) => r.id), [id]);
    assert.deepEqual((await schedules.calendar(author, env, {}, 'other')).change_requests, []);
  });

  test('metrics: each handled scheduled request and change by kind and outcome, with its lateness', async () => {
    const seen: Array<[ScheduledKind, ScheduledOutcome, number]> = [];
    const metrics = { scheduledApplication: (kind: ScheduledKind, outcome: ScheduledOutcome, seconds: number) => void seen.push([kind, outcome, seconds]) };
    const id = await approvedRequest();
    await requests.apply(author, env, id, { execute_at_ms: T0 + HOUR });
    await requests.putPolicy(author, env, { required: false });
    const change = await schedules.create(author, env, 'checkout', { execute_at_ms: T0 + HOUR, operations: [{ op: 'set_off_variant', variant_key: 'on' }] });
    clock = T0 + HOUR + 90_000;
    const worker = new ScheduledChangeWorker(repos, notifier, { now, metrics });
    const changes = (await worker.runDue()).filter((o) => o.change.id === change.id);
    assert.equal(changes.length, 1);
    // The scheduled change moved checkout to version 2: the request made against version 1 conflicts.
    const mine = (await worker.runDueRequests()).filter(ours(id));
    assert.equal(mine.length, 1);
    assert.deepEqual(seen.filter(([kind]) => kind === 'scheduled_change').slice(-1), [['scheduled_change', 'applied', 90]]);
    assert.deepEqual(seen.filter(([kind]) => kind === 'change_request').slice(-1), [['change_request', 'conflicted', 90]]);
  });
});
