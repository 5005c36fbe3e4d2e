import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Org, User } from '../../model/entities.ts';
import type { Repositories } from '../../ports/repositories.ts';
import { assertRecentMs, MALFORMED_ID, rejectsWithCode, unique, UNKNOWN_ID } from './tenancy-contract-support.ts';

/** The ports the session contracts exercise; users and orgs exist only as the tokens' parents. */
export type SessionRepositories = Pick<Repositories, 'orgs' | 'users' | 'refreshTokens' | 'loginThrottle'>;

/** Builds the repositories a suite runs against (a fresh in-memory state, a fresh database). */
export type MakeSessionRepositories = () => Promise<{ repos: SessionRepositories; close(): Promise<void> }>;

/** Registers before/after hooks in the current describe and returns a getter for its repositories. */
function useSessionRepositories(makeRepos: MakeSessionRepositories): () => SessionRepositories {
  let handle: Awaited<ReturnType<MakeSessionRepositories>> | undefined;
  before(async () => {
    handle = await makeRepos();
  });
  after(async () => {
    await handle?.close();
  });
  return () => {
    if (!handle) throw new Error('repositories used before the suite started');
    return handle.repos;
  };
}

/** A token's hash as the service would store it (the token itself is never stored). */
const tokenHash = (): string => createHash('sha256').update(randomBytes(32)).digest('hex');

const HOUR_MS = 3_600_000;

async function createUser(repos: SessionRepositories): Promise<User> {
  return repos.users.create({ email: `${unique('user')}@example.com`, displayName: 'Session User', passwordHash: 'not-a-real-hash' });
}

async function createOrgAndUser(repos: SessionRepositories): Promise<{ org: Org; user: User }> {
  return { org: await repos.orgs.create({ name: unique('org') }), user: await createUser(repos) };
}

/** The behaviour every RefreshTokenRepository must show: hashes only, single use, revocable per user. */
export function refreshTokenRepositoryContract(name: string, makeRepos: MakeSessionRepositories): void {
  describe(`RefreshTokenRepository contract: ${name}`, () => {
    const repos = useSessionRepositories(makeRepos);

    const issue = (owner: { org: Org; user: User }, expiresAtMs = Date.now() + HOUR_MS) =>
      repos().refreshTokens.create({ userId: owner.user.id, orgId: owner.org.id, tokenHash: tokenHash(), expiresAtMs });

    test('create returns every field; consume gives the same record back exactly once', async () => {
      const { org, user } = await createOrgAndUser(repos());
      const input = { userId: user.id, orgId: org.id, tokenHash: tokenHash(), expiresAtMs: Date.now() + HOUR_MS };
      const created = await repos().refreshTokens.create(input);
      assert.deepEqual({ ...created, id: '', createdAtMs: 0 }, { ...input, id: '', createdAtMs: 0 });
      assert.match(created.id, /^[0-9a-f-]{36}$/i);
      assertRecentMs(created.createdAtMs);
      assert.deepEqual(await repos().refreshTokens.consume(input.tokenHash, Date.now()), created);
      assert.equal(await repos().refreshTokens.consume(input.tokenHash, Date.now()), null, 'a consumed token is spent');
    });

    test('an unknown hash consumes to null', async () => {
      assert.equal(await repos().refreshTokens.consume(tokenHash(), Date.now()), null);
      assert.equal(await repos().refreshTokens.consume('', Date.now()), null);
    });

    test('a token is expired from expiresAtMs on; consuming it then changes nothing', async () => {
      const owner = await createOrgAndUser(repos());
      const token = await issue(owner);
      assert.equal(await repos().refreshTokens.consume(token.tokenHash, token.expiresAtMs), null, 'expiresAtMs == nowMs is expired');
      assert.equal(await repos().refreshTokens.consume(token.tokenHash, token.expiresAtMs + 1), null);
      // The failed attempts did not spend it: a clock a millisecond earlier still gets it, once.
      assert.deepEqual(await repos().refreshTokens.consume(token.tokenHash, token.expiresAtMs - 1), token);
      assert.equal(await repos().refreshTokens.consume(token.tokenHash, token.expiresAtMs - 1), null);
    });

    test('concurrent consumes of one token: exactly one gets it', async () => {
      // Several rounds, so that an implementation racing between its check and its write is caught.
      const owner = await createOrgAndUser(repos());
      for (let round = 0; round < 5; round += 1) {
        const token = await issue(owner);
        const nowMs = Date.now();
        const outcomes = await Promise.all(Array.from({ length: 5 }, () => repos().refreshTokens.consume(token.tokenHash, nowMs)));
        const winners = outcomes.filter((outcome) => outcome !== null);
        assert.equal(winners.length, 1, `round ${round}: exactly one consume succeeds`);
        assert.deepEqual(winners[0], token);
      }
    });

    test('revokeAllForUser revokes that user\'s active tokens only and says how many', async () => {
      const { org, user } = await createOrgAndUser(repos());
      const colleague = await createUser(repos());
      const mine = [await issue({ org, user }), await issue({ org, user }), await issue({ org, user })];
      const spent = mine[2]!;
      assert.notEqual(await repos().refreshTokens.consume(spent.tokenHash, Date.now()), null);
      const theirs = await issue({ org, user: colleague });
      assert.equal(await repos().refreshTokens.revokeAllForUser(user.id), 2, 'the consumed token is not counted again');
      for (const token of mine) assert.equal(await repos().refreshTokens.consume(token.tokenHash, Date.now()), null);
      assert.equal(await repos().refreshTokens.revokeAllForUser(user.id), 0, 'nothing left to revoke');
      assert.deepEqual(await repos().refreshTokens.consume(theirs.tokenHash, Date.now()), theirs, 'another user is untouched');
      // A token issued after the revocation works: revocation is not a ban.
      const fresh = await issue({ org, user });
      assert.deepEqual(await repos().refreshTokens.consume(fresh.tokenHash, Date.now()), fresh);
    });

    test('revokeAllForUser of an unknown or malformed user revokes nothing', async () => {
      const owner = await createOrgAndUser(repos());
      const token = await issue(owner);
      assert.equal(await repos().refreshTokens.revokeAllForUser(UNKNOWN_ID), 0);
      assert.equal(await repos().refreshTokens.revokeAllForUser(MALFORMED_ID), 0);
      assert.deepEqual(await repos().refreshTokens.consume(token.tokenHash, Date.now()), token);
    });

    test('create for an unknown or malformed user or org is NOT_FOUND; a stored hash is ALREADY_EXISTS', async () => {
      const { org, user } = await createOrgAndUser(repos());
      const expiresAtMs = Date.now() + HOUR_MS;
      for (const parents of [
        { userId: UNKNOWN_ID, orgId: org.id },
        { userId: MALFORMED_ID, orgId: org.id },
        { userId: user.id, orgId: UNKNOWN_ID },
        { userId: user.id, orgId: MALFORMED_ID },
      ]) {
        const hash = tokenHash();
        await rejectsWithCode(repos().refreshTokens.create({ ...parents, tokenHash: hash, expiresAtMs }), 'NOT_FOUND');
        assert.equal(await repos().refreshTokens.consume(hash, Date.now()), null, 'nothing was stored');
      }
      const token = await issue({ org, user });
      await rejectsWithCode(
        repos().refreshTokens.create({ userId: user.id, orgId: org.id, tokenHash: token.tokenHash, expiresAtMs }),
        'ALREADY_EXISTS',
      );
      assert.deepEqual(await repos().refreshTokens.consume(token.tokenHash, Date.now()), token, 'the original is intact');
    });

    test('pruneExpired deletes expired tokens (spent or not), at most limit per call; live ones stay', async () => {
      // Expiries in 1970 (ms 1,000..5,000): no other test's token is that old, so the counts are exact.
      const owner = await createOrgAndUser(repos());
      const old = [];
      for (let i = 1; i <= 5; i += 1) old.push(await issue(owner, i * 1_000));
      const live = await issue(owner);
      assert.deepEqual(await repos().refreshTokens.consume(old[0]!.tokenHash, 500), old[0], 'spent before it expired');
      assert.equal(await repos().refreshTokens.pruneExpired(3_000, 2), 2, 'the batch limit holds');
      assert.equal(await repos().refreshTokens.pruneExpired(3_000, 2), 1, 'expiresAtMs == nowMs is expired too');
      assert.equal(await repos().refreshTokens.pruneExpired(3_000, 2), 0);
      // Tokens 4 and 5 are still stored: consumable as of a time before their expiry.
      assert.equal((await repos().refreshTokens.consume(old[3]!.tokenHash, 3_500))?.id, old[3]!.id);
      assert.equal(await repos().refreshTokens.pruneExpired(5_000, 0), 0, 'a limit of 0 deletes nothing');
      assert.equal(await repos().refreshTokens.pruneExpired(5_000, 10), 2);
      assert.equal(await repos().refreshTokens.consume(old[4]!.tokenHash, 4_500), null, 'pruned');
      assert.deepEqual(await repos().refreshTokens.consume(live.tokenHash, Date.now()), live);
    });
  });
}

/** The behaviour every LoginThrottleRepository must show: per-subject counts over a window, and pruning. */
export function loginThrottleRepositoryContract(name: string, makeRepos: MakeSessionRepositories): void {
  describe(`LoginThrottleRepository contract: ${name}`, () => {
    const repos = useSessionRepositories(makeRepos);
    // Each test has its own subjects and starts a day later than the one before, so clear()'s
    // global pruning only ever reaches failures of tests that have already finished.
    let day = 0;
    const epoch = (): number => 1_700_000_000_000 + (day += 1) * 86_400_000;

    test('failures are counted per subject from sinceMs on, with the oldest one\'s time', async () => {
      const t0 = epoch();
      const email = unique('email:a');
      const ip = unique('ip:10.0.0.1');
      const throttle = repos().loginThrottle;
      await throttle.recordFailure([email, ip], t0);
      await throttle.recordFailure([email], t0 + 10);
      await throttle.recordFailure([email], t0 + 20);
      assert.deepEqual(await throttle.failuresSince([email, ip], t0), [
        { subject: email, count: 3, oldestAtMs: t0 },
        { subject: ip, count: 1, oldestAtMs: t0 },
      ]);
      assert.deepEqual(await throttle.failuresSince([email, ip], t0 + 10), [
        { subject: email, count: 2, oldestAtMs: t0 + 10 },
        { subject: ip, count: 0, oldestAtMs: t0 + 10 },
      ], 'a failure at exactly sinceMs counts; older ones do not');
      assert.deepEqual(await throttle.failuresSince([email], t0 + 21), [{ subject: email, count: 0, oldestAtMs: t0 + 21 }]);
    });

    test('one call records a failure for each distinct subject it is given', async () => {
      const t0 = epoch();
      const subjects = [unique('email:b'), unique('ip:10.0.0.2'), unique('ip:10.0.0.3')];
      await repos().loginThrottle.recordFailure([...subjects, subjects[0]!], t0);
      await repos().loginThrottle.recordFailure([], t0 + 1);
      assert.deepEqual(
        await repos().loginThrottle.failuresSince(subjects, t0),
        subjects.map((subject) => ({ subject, count: 1, oldestAtMs: t0 })),
      );
    });

    test('every subject asked about is answered once, in the order asked, with count 0 when it has no failures', async () => {
      const t0 = epoch();
      const known = unique('email:c');
      const unknown = unique('email:never');
      await repos().loginThrottle.recordFailure([known], t0);
      assert.deepEqual(await repos().loginThrottle.failuresSince([unknown, known, unknown], t0 - 5), [
        { subject: unknown, count: 0, oldestAtMs: t0 - 5 },
        { subject: known, count: 1, oldestAtMs: t0 },
      ]);
      assert.deepEqual(await repos().loginThrottle.failuresSince([], t0), []);
    });

    test('clear forgets one subject entirely and prunes everyone\'s failures older than beforeMs', async () => {
      const t0 = epoch();
      const cleared = unique('email:d');
      const other = unique('ip:10.0.0.4');
      const throttle = repos().loginThrottle;
      await throttle.recordFailure([cleared, other], t0);
      await throttle.recordFailure([cleared, other], t0 + 10);
      await throttle.recordFailure([cleared, other], t0 + 20);
      await throttle.clear(cleared, t0 + 10);
      assert.deepEqual(await throttle.failuresSince([cleared, other], 0), [
        { subject: cleared, count: 0, oldestAtMs: 0 },
        { subject: other, count: 2, oldestAtMs: t0 + 10 },
      ], 'a failure at exactly beforeMs is kept');
      await throttle.recordFailure([cleared], t0 + 30);
      assert.deepEqual(await throttle.failuresSince([cleared], 0), [{ subject: cleared, count: 1, oldestAtMs: t0 + 30 }], 'counting starts afresh');
    });

    test('forgetOne removes exactly one failure at that time for each subject', async () => {
      const t0 = epoch();
      const email = unique('email:e');
      const ip = unique('ip:10.0.0.5');
      const throttle = repos().loginThrottle;
      await throttle.recordFailure([email, ip], t0);
      await throttle.recordFailure([email, ip], t0);
      await throttle.recordFailure([email], t0 + 1);
      await throttle.forgetOne([email, ip], t0);
      assert.deepEqual(await throttle.failuresSince([email, ip], t0), [
        { subject: email, count: 2, oldestAtMs: t0 },
        { subject: ip, count: 1, oldestAtMs: t0 },
      ]);
      await throttle.forgetOne([ip], t0 + 5);
      assert.deepEqual(await throttle.failuresSince([ip], t0), [{ subject: ip, count: 1, oldestAtMs: t0 }], 'no failure at that time: nothing removed');
    });

    test('pruneOlderThan deletes failures before the instant, at most limit per call, of any subject', async () => {
      const throttle = repos().loginThrottle;
      const t0 = epoch();
      // Earlier tests' failures are all older than t0: clear them so the counts below are exact.
      while ((await throttle.pruneOlderThan(t0, 1_000)) > 0);
      const subjects = [`email:${unique('pruned')}@example.com`, `ip:${unique('10.0.0')}`];
      await throttle.recordFailure(subjects, t0);
      await throttle.recordFailure(subjects, t0 + 10);
      await throttle.recordFailure(subjects, t0 + 20);
      assert.equal(await throttle.pruneOlderThan(t0 + 20, 3), 3, 'the batch limit holds');
      assert.equal(await throttle.pruneOlderThan(t0 + 20, 3), 1, 'beforeMs is exclusive: the failures at t0 + 20 stay');
      assert.equal(await throttle.pruneOlderThan(t0 + 20, 3), 0);
      assert.equal(await throttle.pruneOlderThan(t0 + 30, 0), 0, 'a limit of 0 deletes nothing');
      assert.deepEqual(await throttle.failuresSince(subjects, 0), subjects.map((subject) => ({ subject, count: 1, oldestAtMs: t0 + 20 })));
    });
  });
}

/** Both session repository contracts. */
export function sessionRepositoriesContract(name: string, makeRepos: MakeSessionRepositories): void {
  refreshTokenRepositoryContract(name, makeRepos);
  loginThrottleRepositoryContract(name, makeRepos);
}
