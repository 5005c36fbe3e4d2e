import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  assertRejectsWithCode,
  inWorld,
  MALFORMED_ID,
  UNKNOWN_ID,
  type MakeEventExperimentRepos,
} from './event-experiment-fixture.ts';

const LEASE_MS = 500;

/**
 * The behaviour every StatsJobRepository must show; run against the fake and PostgreSQL.
 * claimNext spans every org, so each case starts from a world without jobs.
 */
export function statsJobRepositoryContract(name: string, makeRepos: MakeEventExperimentRepos): void {
  describe(`StatsJobRepository contract: ${name}`, () => {
    test('create makes a pending job that get reads back within its org only', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const org = { orgId: scopes.env.orgId };
        const experimentId = randomUUID();
        const job = await repos.statsJobs.create(org, experimentId, 1_000);
        assert.match(job.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        assert.deepEqual({ ...job, id: '' }, {
          id: '', orgId: org.orgId, experimentId, status: 'pending', error: '', createdAtMs: 1_000,
          startedAtMs: 0, completedAtMs: 0, leaseExpiresAtMs: 0, attempts: 0,
        });
        assert.deepEqual(await repos.statsJobs.get(org, job.id), job);
        assert.equal(await repos.statsJobs.get({ orgId: scopes.otherOrgEnv.orgId }, job.id), null);
        assert.equal(await repos.statsJobs.get(org, UNKNOWN_ID), null);
        assert.equal(await repos.statsJobs.get(org, MALFORMED_ID), null);
        await assertRejectsWithCode(repos.statsJobs.create(org, MALFORMED_ID, 1_000), 'NOT_FOUND');
      }));

    test('claimNext takes the oldest pending job first, sets the lease, and is null when none is claimable', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        assert.equal(await repos.statsJobs.claimNext(5_000, LEASE_MS), null);
        const middle = await repos.statsJobs.create({ orgId: scopes.env.orgId }, randomUUID(), 200);
        const oldest = await repos.statsJobs.create({ orgId: scopes.otherOrgEnv.orgId }, randomUUID(), 100);
        const newest = await repos.statsJobs.create({ orgId: scopes.env.orgId }, randomUUID(), 300);
        const first = await repos.statsJobs.claimNext(5_000, LEASE_MS);
        assert.deepEqual(first, { ...oldest, status: 'running', startedAtMs: 5_000, leaseExpiresAtMs: 5_500, attempts: 1 });
        assert.deepEqual(await repos.statsJobs.get({ orgId: oldest.orgId }, oldest.id), first);
        assert.equal((await repos.statsJobs.claimNext(5_001, LEASE_MS))?.id, middle.id);
        assert.equal((await repos.statsJobs.claimNext(5_002, LEASE_MS))?.id, newest.id);
        assert.equal(await repos.statsJobs.claimNext(5_003, LEASE_MS), null, 'every job is running under a live lease');
      }));

    test('a running job whose lease expired is claimed again, keeping its first start time', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const job = await repos.statsJobs.create({ orgId: scopes.env.orgId }, randomUUID(), 100);
        await repos.statsJobs.claimNext(1_000, LEASE_MS);
        assert.equal(await repos.statsJobs.claimNext(1_499, LEASE_MS), null);
        assert.equal(await repos.statsJobs.claimNext(1_500, LEASE_MS), null, 'a lease ending exactly now still holds');
        const reclaimed = await repos.statsJobs.claimNext(1_501, LEASE_MS);
        assert.deepEqual(reclaimed, {
          ...job, status: 'running', startedAtMs: 1_000, leaseExpiresAtMs: 2_001, attempts: 2,
        });
      }));

    test('complete and fail only from running; fail needs an error; finished jobs are never claimed', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const org = { orgId: scopes.env.orgId };
        const toComplete = await repos.statsJobs.create(org, randomUUID(), 100);
        const toFail = await repos.statsJobs.create(org, randomUUID(), 200);
        await assertRejectsWithCode(repos.statsJobs.complete(toComplete.id, 900), 'FAILED_PRECONDITION');
        await assertRejectsWithCode(repos.statsJobs.fail(toFail.id, 'boom', 900), 'FAILED_PRECONDITION');
        const claimedA = await repos.statsJobs.claimNext(1_000, LEASE_MS);
        const claimedB = await repos.statsJobs.claimNext(1_000, LEASE_MS);
        assert.deepEqual([claimedA?.id, claimedB?.id], [toComplete.id, toFail.id]);

        const completed = await repos.statsJobs.complete(toComplete.id, 1_200);
        assert.deepEqual(completed, { ...claimedA, status: 'completed', completedAtMs: 1_200 });
        await assertRejectsWithCode(repos.statsJobs.complete(toComplete.id, 1_300), 'FAILED_PRECONDITION');
        await assertRejectsWithCode(repos.statsJobs.fail(toComplete.id, 'late', 1_300), 'FAILED_PRECONDITION');

        await assertRejectsWithCode(repos.statsJobs.fail(toFail.id, '', 1_250), 'INVALID_ARGUMENT');
        await assertRejectsWithCode(repos.statsJobs.fail(toFail.id, '   ', 1_250), 'INVALID_ARGUMENT');
        assert.equal((await repos.statsJobs.get(org, toFail.id))?.status, 'running');
        const failed = await repos.statsJobs.fail(toFail.id, 'experiment was deleted', 1_300);
        assert.deepEqual(failed, { ...claimedB, status: 'failed', error: 'experiment was deleted', completedAtMs: 1_300 });
        assert.deepEqual(await repos.statsJobs.get(org, toFail.id), failed);

        assert.equal(await repos.statsJobs.claimNext(1_000_000, LEASE_MS), null, 'finished jobs stay finished');
        await assertRejectsWithCode(repos.statsJobs.complete(UNKNOWN_ID, 1), 'NOT_FOUND');
        await assertRejectsWithCode(repos.statsJobs.complete(MALFORMED_ID, 1), 'NOT_FOUND');
        await assertRejectsWithCode(repos.statsJobs.fail(UNKNOWN_ID, 'x', 1), 'NOT_FOUND');
        await assertRejectsWithCode(repos.statsJobs.fail(MALFORMED_ID, 'x', 1), 'NOT_FOUND');
      }));

    test('five concurrent claims on three pending jobs take three distinct jobs and return two nulls', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const org = { orgId: scopes.env.orgId };
        const jobs = [
          await repos.statsJobs.create(org, randomUUID(), 10),
          await repos.statsJobs.create(org, randomUUID(), 20),
          await repos.statsJobs.create(org, randomUUID(), 30),
        ];
        const claims = await Promise.all(Array.from({ length: 5 }, () => repos.statsJobs.claimNext(1_000, LEASE_MS)));
        const claimedIds = claims.flatMap((claim) => (claim ? [claim.id] : []));
        assert.equal(claims.filter((claim) => claim === null).length, 2);
        assert.deepEqual([...claimedIds].sort(), jobs.map((job) => job.id).sort());
        for (const claim of claims) if (claim) assert.equal(claim.attempts, 1);
      }));

    test('create while the experiment has a pending job returns that job; once it is claimed, a new one', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const org = { orgId: scopes.env.orgId };
        const experimentId = randomUUID();
        const first = await repos.statsJobs.create(org, experimentId, 100);
        assert.deepEqual(await repos.statsJobs.create(org, experimentId, 200), first, 'the queued job, unchanged');
        const other = await repos.statsJobs.create(org, randomUUID(), 300);
        assert.notEqual(other.id, first.id, 'another experiment gets its own job');
        assert.equal((await repos.statsJobs.claimNext(1_000, LEASE_MS))?.id, first.id);
        // Running is not queued: the running computation may already have read the data.
        const second = await repos.statsJobs.create(org, experimentId, 1_100);
        assert.notEqual(second.id, first.id);
        assert.deepEqual([second.status, second.createdAtMs], ['pending', 1_100]);
        assert.equal((await repos.statsJobs.create(org, experimentId, 1_200)).id, second.id);
      }));

    test('concurrent creates for one experiment make exactly one job', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const org = { orgId: scopes.env.orgId };
        const experimentId = randomUUID();
        const jobs = await Promise.all(Array.from({ length: 25 }, (_, i) => repos.statsJobs.create(org, experimentId, 100 + i)));
        assert.equal(new Set(jobs.map((job) => job.id)).size, 1);
        const claimed = await repos.statsJobs.claimNext(1_000, LEASE_MS);
        assert.equal(claimed?.id, jobs[0]?.id);
        assert.equal(await repos.statsJobs.claimNext(1_000, LEASE_MS), null, 'no second job was queued');
      }));

    test("claimNext takes orgs in turn: one org's long queue does not starve another org's job", () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const busy = { orgId: scopes.env.orgId };
        const quiet = { orgId: scopes.otherOrgEnv.orgId };
        const busyJobs = [];
        for (let i = 0; i < 40; i += 1) busyJobs.push(await repos.statsJobs.create(busy, randomUUID(), 100 + i));
        const quietJob = await repos.statsJobs.create(quiet, randomUUID(), 1_000);
        const claims = [];
        for (let i = 0; i < 4; i += 1) claims.push((await repos.statsJobs.claimNext(5_000 + i, LEASE_MS))?.id);
        // Neither org was served: the oldest job goes first (the busy org's), then the quiet
        // org's turn comes before the busy org's second job, then the busy org's, oldest first.
        assert.deepEqual(claims, [busyJobs[0]?.id, quietJob.id, busyJobs[1]?.id, busyJobs[2]?.id]);
        // A new job of the quiet org again goes next: the busy org was served more recently.
        const again = await repos.statsJobs.create(quiet, randomUUID(), 9_000);
        assert.equal((await repos.statsJobs.claimNext(5_010, LEASE_MS))?.id, again.id);
        assert.equal((await repos.statsJobs.claimNext(5_011, LEASE_MS))?.id, busyJobs[3]?.id);
      }));
  });
}
