import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import type { Repositories } from '@switchyard/core';
import { createInMemoryRepositories, InMemoryExclusiveLock, InMemoryState } from '@switchyard/core/testing';
import { Pruner } from '../src/index.ts';

const NOW = 1_800_000_000_000;
const MINUTE = 60_000;
const WINDOW = 15 * MINUTE;

type PruneRepos = Pick<Repositories, 'idempotency' | 'refreshTokens' | 'sessions' | 'invitations' | 'loginThrottle' | 'ssoLogins' | 'audit' | 'apiTokens' | 'webhooks'>;

/** Fake tables seeded directly: `expired` rows past their cut-off and `live` rows before it. */
function seeded(counts: { idempotency: [number, number]; refresh: [number, number]; failures: [number, number] }) {
  const state = new InMemoryState();
  const [oldAnswers, liveAnswers] = counts.idempotency;
  for (let i = 0; i < oldAnswers; i += 1) state.idempotency.set(`env/old-${i}`, { answer: i, expiresAtMs: NOW - i * MINUTE });
  for (let i = 0; i < liveAnswers; i += 1) state.idempotency.set(`env/live-${i}`, { answer: i, expiresAtMs: NOW + 1 + i });
  const token = (id: string, expiresAtMs: number) =>
    state.refreshTokens.set(id, { id, userId: 'u', orgId: 'o', sessionId: 'live-session', tokenHash: id, createdAtMs: 0, expiresAtMs, revokedAtMs: null });
  const [oldTokens, liveTokens] = counts.refresh;
  for (let i = 0; i < oldTokens; i += 1) token(`old-${i}`, NOW - i);
  for (let i = 0; i < liveTokens; i += 1) token(`live-${i}`, NOW + MINUTE);
  const [oldFailures, liveFailures] = counts.failures;
  // The throttle counts failures at or after NOW - WINDOW: one millisecond earlier no longer counts.
  for (let i = 0; i < oldFailures; i += 1) state.loginFailures.push({ subject: `email:old-${i}`, atMs: NOW - WINDOW - 1 - i });
  for (let i = 0; i < liveFailures; i += 1) state.loginFailures.push({ subject: `email:live-${i}`, atMs: NOW - WINDOW + i });
  return { state, repos: createInMemoryRepositories(state) as PruneRepos };
}

/** Records every batch call (its limit and how many it deleted) per table. */
function recording(repos: PruneRepos) {
  const calls: Array<{ table: string; limit: number; deleted: number }> = [];
  const record = async (table: string, limit: number, run: Promise<number>) => {
    const deleted = await run;
    calls.push({ table, limit, deleted });
    return deleted;
  };
  const wrapped: PruneRepos = {
    sessions: repos.sessions,
    invitations: repos.invitations,
    ssoLogins: repos.ssoLogins,
    audit: repos.audit,
    apiTokens: repos.apiTokens,
    webhooks: repos.webhooks,
    idempotency: Object.assign(Object.create(repos.idempotency), {
      pruneExpired: (nowMs: number, limit: number) => record('idempotency', limit, repos.idempotency.pruneExpired(nowMs, limit)),
    }),
    refreshTokens: Object.assign(Object.create(repos.refreshTokens), {
      pruneExpired: (nowMs: number, limit: number) => record('refresh', limit, repos.refreshTokens.pruneExpired(nowMs, limit)),
    }),
    loginThrottle: Object.assign(Object.create(repos.loginThrottle), {
      pruneOlderThan: (beforeMs: number, limit: number) => record('failures', limit, repos.loginThrottle.pruneOlderThan(beforeMs, limit)),
    }),
  };
  return { calls, repos: wrapped };
}

const lock = () => new InMemoryExclusiveLock('prune');

const DAY = 24 * 60 * MINUTE;
/** Org ids in id order: ORG(1) < ORG(2) < ... */
const ORG = (n: number): string => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

/** Appends change history entries of one org at these times, through the fake repository. */
async function appendAudit(repos: PruneRepos, orgId: string, times: number[]): Promise<void> {
  for (const atMs of times) {
    await repos.audit.append({
      orgId,
      atMs,
      actor: { type: 'system', id: 'test' },
      action: 'flag.update',
      resourceType: 'flag',
      resourceId: `flag-${atMs}`,
      projectId: null,
      environmentId: null,
      before: null,
      after: null,
      details: {},
    });
  }
}

/** The times of the org's entries left, newest first. */
const auditTimes = (state: InMemoryState, orgId: string): number[] =>
  state.audit.filter((entry) => entry.orgId === orgId).map((entry) => entry.atMs).sort((a, b) => b - a);

/** Records the change history calls of the pruner: each cap search page and each batch. */
function recordingAudit(repos: PruneRepos) {
  const calls: string[] = [];
  const audit = Object.assign(Object.create(repos.audit), {
    async pruneOlderThan(beforeMs: number, limit: number) {
      const deleted = await repos.audit.pruneOlderThan(beforeMs, limit);
      calls.push(`retention ${deleted}/${limit}`);
      return deleted;
    },
    async findOverCap(maxEntries: number, afterOrgId: string | null, orgLimit: number) {
      const scan = await repos.audit.findOverCap(maxEntries, afterOrgId, orgLimit);
      calls.push(`scan after ${afterOrgId?.slice(-2) ?? 'start'}: over ${scan.overCap.map((org) => org.orgId.slice(-2)).join(',') || '-'}`);
      return scan;
    },
    async pruneThrough(orgId: string, throughSeq: number, limit: number) {
      const deleted = await repos.audit.pruneThrough(orgId, throughSeq, limit);
      calls.push(`cap ${orgId.slice(-2)} ${deleted}/${limit}`);
      return deleted;
    },
  }) as PruneRepos['audit'];
  return { calls, repos: { ...repos, audit } };
}

describe('Pruner', () => {
  test('expired rows go and live rows stay, each table by its own cut-off', async () => {
    const { state, repos } = seeded({ idempotency: [5, 2], refresh: [3, 1], failures: [4, 2] });
    const pruner = new Pruner(repos, lock(), { now: () => NOW, loginWindowMs: WINDOW, pauseMs: 0 });
    assert.deepEqual(await pruner.runOnce(), { idempotencyKeys: 5, refreshTokens: 3, sessions: 0, invitations: 0, loginFailures: 4, ssoLogins: 0, auditEntries: 0, apiTokens: 0, webhookDeliveries: 0 });
    assert.deepEqual([...state.idempotency.keys()].sort(), ['env/live-0', 'env/live-1']);
    assert.deepEqual([...state.refreshTokens.keys()], ['live-0']);
    assert.deepEqual(state.loginFailures.map((f) => f.subject).sort(), ['email:live-0', 'email:live-1']);
    assert.deepEqual(await pruner.runOnce(), { idempotencyKeys: 0, refreshTokens: 0, sessions: 0, invitations: 0, loginFailures: 0, ssoLogins: 0, auditEntries: 0, apiTokens: 0, webhookDeliveries: 0 }, 'nothing left to prune');
  });

  test('ended and expired sessions and expired invitations go; live ones stay', async () => {
    const { state, repos } = seeded({ idempotency: [0, 0], refresh: [0, 0], failures: [0, 0] });
    const session = (id: string, expiresAtMs: number, endedAtMs: number | null) =>
      state.sessions.set(id, { id, userId: 'u', orgId: 'o', createdAtMs: 0, expiresAtMs, endedAtMs, providerId: null });
    session('ended', NOW + MINUTE, NOW - 1);
    session('expired', NOW, null);
    session('live-session', NOW + MINUTE, null);
    const invitation = (id: string, expiresAtMs: number) =>
      state.invitations.set(id, { id, orgId: 'o', email: 'x@example.com', role: 'org_member', createdBy: null, provesAddress: false, createdAtMs: 0, expiresAtMs, acceptedAtMs: null, tokenHash: id });
    invitation('old', NOW - 1);
    invitation('live', NOW + 1);
    const report = await new Pruner(repos, lock(), { now: () => NOW, loginWindowMs: WINDOW, pauseMs: 0 }).runOnce();
    assert.equal(report?.sessions, 2);
    assert.equal(report?.invitations, 1);
    assert.deepEqual([...state.sessions.keys()], ['live-session']);
    assert.deepEqual([...state.invitations.keys()], ['live']);
  });

  test('the login cut-off defaults to the login throttle window (15 minutes)', async () => {
    const { state, repos } = seeded({ idempotency: [0, 0], refresh: [0, 0], failures: [3, 3] });
    assert.equal((await new Pruner(repos, lock(), { now: () => NOW, pauseMs: 0 }).runOnce())?.loginFailures, 3);
    assert.equal(state.loginFailures.length, 3);
  });

  test('every statement deletes at most batchSize rows; batches repeat until one comes back short', async () => {
    const { state, repos } = seeded({ idempotency: [5, 1], refresh: [4, 0], failures: [1, 0] });
    const { calls, repos: wrapped } = recording(repos);
    const report = await new Pruner(wrapped, lock(), { now: () => NOW, loginWindowMs: WINDOW, batchSize: 2, pauseMs: 0 }).runOnce();
    assert.deepEqual(report, { idempotencyKeys: 5, refreshTokens: 4, sessions: 0, invitations: 0, loginFailures: 1, ssoLogins: 0, auditEntries: 0, apiTokens: 0, webhookDeliveries: 0 });
    assert.deepEqual(calls, [
      { table: 'idempotency', limit: 2, deleted: 2 },
      { table: 'idempotency', limit: 2, deleted: 2 },
      { table: 'idempotency', limit: 2, deleted: 1 },
      { table: 'refresh', limit: 2, deleted: 2 },
      { table: 'refresh', limit: 2, deleted: 2 },
      { table: 'refresh', limit: 2, deleted: 0 },
      { table: 'failures', limit: 2, deleted: 1 },
    ]);
    assert.equal(state.idempotency.size, 1);
  });

  test('two pruners at once: the one that finds the lock held skips and deletes nothing', async () => {
    const held = new Set<string>();
    const first = seeded({ idempotency: [3, 0], refresh: [0, 0], failures: [0, 0] });
    // The first run stops inside its first batch until released.
    let release = (): void => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered = (): void => {};
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const slowRepos: PruneRepos = {
      ...first.repos,
      idempotency: Object.assign(Object.create(first.repos.idempotency), {
        async pruneExpired(nowMs: number, limit: number) {
          entered();
          await gate;
          return first.repos.idempotency.pruneExpired(nowMs, limit);
        },
      }),
    };
    const second = seeded({ idempotency: [3, 0], refresh: [2, 0], failures: [2, 0] });
    const { calls, repos: secondRepos } = recording(second.repos);
    const a = new Pruner(slowRepos, new InMemoryExclusiveLock('prune', held), { now: () => NOW, pauseMs: 0 });
    const b = new Pruner(secondRepos, new InMemoryExclusiveLock('prune', held), { now: () => NOW, pauseMs: 0 });
    const running = a.runOnce();
    await inside;
    assert.equal(await b.runOnce(), null, 'skipped');
    assert.deepEqual(calls, [], 'the skipping pruner issued no delete');
    release();
    assert.deepEqual(await running, { idempotencyKeys: 3, refreshTokens: 0, sessions: 0, invitations: 0, loginFailures: 0, ssoLogins: 0, auditEntries: 0, apiTokens: 0, webhookDeliveries: 0 });
    assert.deepEqual(await b.runOnce(), { idempotencyKeys: 3, refreshTokens: 2, sessions: 0, invitations: 0, loginFailures: 2, ssoLogins: 0, auditEntries: 0, apiTokens: 0, webhookDeliveries: 0 }, 'once free, the other may run');
  });

  test('stop() during a backlog ends the run after the current batch, without waiting out the pause', async () => {
    const { state, repos } = seeded({ idempotency: [10, 0], refresh: [5, 0], failures: [0, 0] });
    const { calls, repos: wrapped } = recording(repos);
    const pruner = new Pruner(wrapped, lock(), { now: () => NOW, batchSize: 1, pauseMs: 3_600_000 });
    const run = pruner.runOnce();
    for (let waited = 0; calls.length === 0 && waited < 15_000; waited += 10) await sleep(10);
    await pruner.stop();
    assert.deepEqual(await run, { idempotencyKeys: 1, refreshTokens: 0, sessions: 0, invitations: 0, loginFailures: 0, ssoLogins: 0, auditEntries: 0, apiTokens: 0, webhookDeliveries: 0 });
    assert.equal(state.idempotency.size, 9);
    assert.equal(state.refreshTokens.size, 5);
  });

  test('change history: entries past the retention period go, whatever their org; newer ones stay', async () => {
    const { state, repos } = seeded({ idempotency: [0, 0], refresh: [0, 0], failures: [0, 0] });
    await appendAudit(repos, ORG(1), [NOW - 40 * DAY, NOW - 30 * DAY - 1, NOW - 30 * DAY, NOW - DAY]);
    await appendAudit(repos, ORG(2), [NOW - 31 * DAY, NOW]);
    const pruner = new Pruner(repos, lock(), { now: () => NOW, pauseMs: 0, auditRetentionMs: 30 * DAY });
    assert.equal((await pruner.runOnce())?.auditEntries, 3);
    assert.deepEqual(auditTimes(state, ORG(1)), [NOW - DAY, NOW - 30 * DAY], 'an entry exactly at the cut-off stays');
    assert.deepEqual(auditTimes(state, ORG(2)), [NOW]);
  });

  test('API tokens revoked or expired more than 30 days ago go; live ones and recently ended ones stay', async () => {
    const { state, repos } = seeded({ idempotency: [0, 0], refresh: [0, 0], failures: [0, 0] });
    const org = await createInMemoryRepositories(state).orgs.create({ name: 'token-org' });
    const made = async (hash: string, expiresAtMs: number | null) =>
      (await repos.apiTokens.create({ orgId: org.id }, { name: hash, role: 'viewer', scope: {}, tokenPrefix: 'swy_', tokenHash: hash, createdByUserId: null, expiresAtMs })).id;
    const live = await made('live', null);
    const expiredLongAgo = await made('expired-31d', NOW - 31 * DAY);
    const expiredRecently = await made('expired-29d', NOW - 29 * DAY);
    const revokedLongAgo = await made('revoked-31d', null);
    const revokedRecently = await made('revoked-1d', null);
    await repos.apiTokens.revoke({ orgId: org.id }, revokedLongAgo, NOW - 31 * DAY);
    await repos.apiTokens.revoke({ orgId: org.id }, revokedRecently, NOW - DAY);
    assert.equal((await new Pruner(repos, lock(), { now: () => NOW, pauseMs: 0 }).runOnce())?.apiTokens, 2);
    assert.deepEqual([...state.apiTokens.keys()].sort(), [live, expiredRecently, revokedRecently].sort());
    assert.ok(!state.apiTokens.has(expiredLongAgo));
  });

  test('the retention period defaults to 365 days and the per-org cap to 100,000 entries', async () => {
    const { state, repos } = seeded({ idempotency: [0, 0], refresh: [0, 0], failures: [0, 0] });
    await appendAudit(repos, ORG(1), [NOW - 365 * DAY - 1, NOW - 365 * DAY, NOW - 364 * DAY]);
    const pruner = new Pruner(repos, lock(), { now: () => NOW, pauseMs: 0 });
    assert.equal(pruner.auditMaxEntriesPerOrg, 100_000);
    assert.equal((await pruner.runOnce())?.auditEntries, 1);
    assert.deepEqual(auditTimes(state, ORG(1)), [NOW - 364 * DAY, NOW - 365 * DAY]);
  });

  test("the per-org cap keeps an org's most recently appended entries; orgs at or under it keep all theirs", async () => {
    const { state, repos } = seeded({ idempotency: [0, 0], refresh: [0, 0], failures: [0, 0] });
    const times = (count: number) => Array.from({ length: count }, (_, i) => NOW - DAY + i);
    await appendAudit(repos, ORG(1), times(12));
    await appendAudit(repos, ORG(2), times(5));
    await appendAudit(repos, ORG(3), times(4));
    const pruner = new Pruner(repos, lock(), { now: () => NOW, pauseMs: 0, auditMaxEntriesPerOrg: 5 });
    assert.equal((await pruner.runOnce())?.auditEntries, 7);
    assert.deepEqual(auditTimes(state, ORG(1)), times(12).slice(7).reverse());
    assert.deepEqual(auditTimes(state, ORG(2)), times(5).reverse(), 'exactly at the cap');
    assert.deepEqual(auditTimes(state, ORG(3)), times(4).reverse());
    assert.equal((await pruner.runOnce())?.auditEntries, 0, 'nothing left over the cap');
  });

  test('retention runs before the cap, the cap deletes in batches, and the orgs are searched a page at a time', async () => {
    const { state, repos } = seeded({ idempotency: [0, 0], refresh: [0, 0], failures: [0, 0] });
    await appendAudit(repos, ORG(1), [NOW - 100 * DAY, NOW - 3, NOW - 2, NOW - 1]);
    for (const n of [2, 3, 4]) await appendAudit(repos, ORG(n), [NOW - 2, NOW - 1]);
    await appendAudit(repos, ORG(5), [NOW - 5, NOW - 4, NOW - 3, NOW - 2, NOW - 1]);
    const { calls, repos: wrapped } = recordingAudit(repos);
    const pruner = new Pruner(wrapped, lock(), { now: () => NOW, pauseMs: 0, batchSize: 2, auditRetentionMs: 30 * DAY, auditMaxEntriesPerOrg: 2, orgsPerCapScan: 2 });
    assert.equal((await pruner.runOnce())?.auditEntries, 5);
    assert.deepEqual(calls, [
      'retention 1/2',
      // After retention org 1 holds three entries, one over the cap.
      'scan after start: over 01',
      'cap 01 1/2',
      'scan after 02: over -',
      'scan after 04: over 05',
      'cap 05 2/2',
      'cap 05 1/2',
    ]);
    for (const n of [1, 2, 3, 4, 5]) assert.deepEqual(auditTimes(state, ORG(n)), [NOW - 1, NOW - 2], `org ${n}`);
  });

  test('stop() during a cap backlog ends the run after the current batch', async () => {
    const { state, repos } = seeded({ idempotency: [0, 0], refresh: [0, 0], failures: [0, 0] });
    await appendAudit(repos, ORG(1), Array.from({ length: 10 }, (_, i) => NOW - 10 + i));
    const { calls, repos: wrapped } = recordingAudit(repos);
    const pruner = new Pruner(wrapped, lock(), { now: () => NOW, batchSize: 1, pauseMs: 3_600_000, auditMaxEntriesPerOrg: 2 });
    const run = pruner.runOnce();
    for (let waited = 0; !calls.some((call) => call.startsWith('cap')) && waited < 15_000; waited += 10) await sleep(10);
    await pruner.stop();
    assert.equal((await run)?.auditEntries, 1);
    assert.equal(state.audit.length, 9);
  });

  test('audit options are checked when the pruner is built', () => {
    const { repos } = seeded({ idempotency: [0, 0], refresh: [0, 0], failures: [0, 0] });
    for (const options of [{ auditRetentionMs: 0 }, { auditMaxEntriesPerOrg: 0 }, { auditMaxEntriesPerOrg: 1.5 }, { orgsPerCapScan: 0 }]) {
      assert.throws(() => new Pruner(repos, lock(), options), RangeError, JSON.stringify(options));
    }
  });

  test('start() runs on its schedule; stop() ends it', async () => {
    const { repos } = seeded({ idempotency: [0, 0], refresh: [0, 0], failures: [0, 0] });
    const { calls, repos: wrapped } = recording(repos);
    const pruner = new Pruner(wrapped, lock(), { now: () => NOW, firstRunAfterMs: 1, intervalMs: 20, pauseMs: 0 });
    pruner.start();
    const runs = () => calls.filter((call) => call.table === 'idempotency').length;
    for (let waited = 0; runs() < 3 && waited < 15_000; waited += 10) await sleep(10);
    assert.ok(runs() >= 3, `three runs expected, saw ${runs()}`);
    await pruner.stop();
    const afterStop = runs();
    await sleep(100);
    assert.equal(runs(), afterStop, 'no run after stop()');
  });
});
