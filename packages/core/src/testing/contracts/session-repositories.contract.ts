import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import type { Org, User } from '../../model/entities.ts';
import type { Repositories } from '../../ports/repositories.ts';
import type { Invitation, SessionRecord } from '../../ports/session-ports.ts';
import { assertRecentMs, MALFORMED_ID, rejectsWithCode, unique, UNKNOWN_ID, useRepositories } from './tenancy-contract-support.ts';

/** The ports the session contracts exercise; users and orgs exist only as the records' parents. */
export type SessionRepositories = Pick<Repositories, 'orgs' | 'users' | 'sessions' | 'refreshTokens' | 'invitations' | 'loginThrottle'>;

/** Builds the repositories a suite runs against (a fresh in-memory state, a fresh database). */
export type MakeSessionRepositories = () => Promise<{ repos: SessionRepositories; close(): Promise<void> }>;

/** A token's hash as the service would store it (the token itself is never stored). */
const tokenHash = (): string => createHash('sha256').update(randomBytes(32)).digest('hex');

const HOUR_MS = 3_600_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Lets the clock move so a later write gets a later millisecond timestamp (creation order is by ms). */
const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 5));

async function createUser(repos: SessionRepositories): Promise<User> {
  return repos.users.create({ email: `${unique('user')}@example.com`, displayName: 'Session User', passwordHash: 'not-a-real-hash' });
}

async function createOrgAndUser(repos: SessionRepositories): Promise<{ org: Org; user: User }> {
  return { org: await repos.orgs.create({ name: unique('org') }), user: await createUser(repos) };
}

/** A live session of the user in the org (expiring in an hour unless told). */
function openSession(repos: SessionRepositories, owner: { org: Org; user: User }, expiresAtMs = Date.now() + HOUR_MS): Promise<SessionRecord> {
  return repos.sessions.create({ userId: owner.user.id, orgId: owner.org.id, expiresAtMs });
}

/** The behaviour every SessionRepository must show: per-user live sessions, ended by filter. */
export function sessionRepositoryContract(name: string, makeRepos: MakeSessionRepositories): void {
  describe(`SessionRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    test('create returns every field, not ended; get gives the same record back', async () => {
      const { org, user } = await createOrgAndUser(repos());
      const expiresAtMs = Date.now() + HOUR_MS;
      const session = await repos().sessions.create({ userId: user.id, orgId: org.id, expiresAtMs });
      assert.deepEqual(
        { ...session, id: '', createdAtMs: 0 },
        { id: '', userId: user.id, orgId: org.id, createdAtMs: 0, expiresAtMs, endedAtMs: null, providerId: null },
      );
      assert.match(session.id, UUID);
      assertRecentMs(session.createdAtMs);
      assert.deepEqual(await repos().sessions.get(session.id), session);
      const second = await openSession(repos(), { org, user });
      assert.notEqual(second.id, session.id, 'each sign-in opens its own session');
    });

    test('unknown and malformed ids get null', async () => {
      assert.equal(await repos().sessions.get(UNKNOWN_ID), null);
      assert.equal(await repos().sessions.get(MALFORMED_ID), null);
      assert.equal(await repos().sessions.get(''), null);
    });

    test('create for an unknown or malformed user or org is NOT_FOUND and stores nothing', async () => {
      const { org, user } = await createOrgAndUser(repos());
      const expiresAtMs = Date.now() + HOUR_MS;
      for (const parents of [
        { userId: UNKNOWN_ID, orgId: org.id },
        { userId: MALFORMED_ID, orgId: org.id },
        { userId: user.id, orgId: UNKNOWN_ID },
        { userId: user.id, orgId: MALFORMED_ID },
      ]) {
        await rejectsWithCode(repos().sessions.create({ ...parents, expiresAtMs }), 'NOT_FOUND');
      }
      assert.deepEqual(await repos().sessions.listLive(user.id, Date.now()), []);
      assert.deepEqual(await repos().sessions.listLive(UNKNOWN_ID, Date.now()), []);
    });

    test('listLive gives the user\'s unended, unexpired sessions, oldest first', async () => {
      const { org, user } = await createOrgAndUser(repos());
      const otherOrg = await repos().orgs.create({ name: unique('org') });
      const colleague = await createUser(repos());
      const nowMs = Date.now() + 10 * 60_000;
      const first = await openSession(repos(), { org, user });
      await tick();
      const expired = await openSession(repos(), { org, user }, nowMs);
      await tick();
      const ended = await openSession(repos(), { org, user });
      await tick();
      const second = await openSession(repos(), { org: otherOrg, user });
      await tick();
      const theirs = await openSession(repos(), { org, user: colleague });
      await tick();
      const third = await openSession(repos(), { org, user }, nowMs + 1);
      assert.equal(await repos().sessions.end({ userId: user.id, sessionId: ended.id }, Date.now()), 1);
      assert.deepEqual(await repos().sessions.listLive(user.id, nowMs), [first, second, third], 'expiresAtMs == nowMs is expired');
      assert.deepEqual((await repos().sessions.listLive(user.id, nowMs - 1)).map((s) => s.id), [first.id, expired.id, second.id, third.id]);
      assert.deepEqual((await repos().sessions.listLive(user.id, nowMs + 1)).map((s) => s.id), [first.id, second.id]);
      assert.deepEqual(await repos().sessions.listLive(colleague.id, nowMs), [theirs]);
      assert.deepEqual(await repos().sessions.listLive(UNKNOWN_ID, nowMs), []);
      assert.deepEqual(await repos().sessions.listLive(MALFORMED_ID, nowMs), []);
    });

    test('end with a sessionId ends that session only, once, and only for its own user', async () => {
      const owner = await createOrgAndUser(repos());
      const colleague = await createUser(repos());
      const target = await openSession(repos(), owner);
      const sibling = await openSession(repos(), owner);
      const theirs = await openSession(repos(), { org: owner.org, user: colleague });
      const nowMs = Date.now();
      assert.equal(await repos().sessions.end({ userId: colleague.id, sessionId: target.id }, nowMs), 0, 'another user cannot end it');
      assert.equal((await repos().sessions.get(target.id))?.endedAtMs, null);
      assert.equal(await repos().sessions.end({ userId: owner.user.id, sessionId: target.id }, nowMs), 1);
      assert.deepEqual(await repos().sessions.get(target.id), { ...target, endedAtMs: nowMs });
      assert.equal(await repos().sessions.end({ userId: owner.user.id, sessionId: target.id }, nowMs + 5), 0, 'ending twice ends nothing');
      assert.equal((await repos().sessions.get(target.id))?.endedAtMs, nowMs, 'the first end time stays');
      assert.deepEqual(await repos().sessions.listLive(owner.user.id, nowMs), [sibling]);
      assert.deepEqual(await repos().sessions.listLive(colleague.id, nowMs), [theirs]);
    });

    test('end with exceptSessionId ends every other live session of the user', async () => {
      const owner = await createOrgAndUser(repos());
      const otherOrg = await repos().orgs.create({ name: unique('org') });
      const colleague = await createUser(repos());
      const kept = await openSession(repos(), owner);
      const a = await openSession(repos(), owner);
      const b = await openSession(repos(), { org: otherOrg, user: owner.user });
      const theirs = await openSession(repos(), { org: owner.org, user: colleague });
      const nowMs = Date.now();
      assert.equal(await repos().sessions.end({ userId: owner.user.id, exceptSessionId: kept.id }, nowMs), 2);
      assert.deepEqual(await repos().sessions.listLive(owner.user.id, nowMs), [kept]);
      for (const session of [a, b]) assert.equal((await repos().sessions.get(session.id))?.endedAtMs, nowMs);
      assert.deepEqual(await repos().sessions.listLive(colleague.id, nowMs), [theirs], 'another user is untouched');
      assert.equal(await repos().sessions.end({ userId: owner.user.id, exceptSessionId: kept.id }, nowMs), 0, 'nothing left to end');
    });

    test('end with an exceptSessionId that names no session of the user ends them all', async () => {
      // Failing closed: "all but this one" with a foreign or bogus id must not spare anything.
      for (const except of [UNKNOWN_ID, MALFORMED_ID, 'foreign']) {
        const owner = await createOrgAndUser(repos());
        const foreign = await openSession(repos(), { org: owner.org, user: await createUser(repos()) });
        await openSession(repos(), owner);
        await openSession(repos(), owner);
        const exceptSessionId = except === 'foreign' ? foreign.id : except;
        assert.equal(await repos().sessions.end({ userId: owner.user.id, exceptSessionId }, Date.now()), 2, `except ${except}`);
        assert.deepEqual(await repos().sessions.listLive(owner.user.id, Date.now()), []);
        assert.equal((await repos().sessions.get(foreign.id))?.endedAtMs, null);
      }
    });

    test('end with an orgId ends the user\'s live sessions in that org only', async () => {
      const owner = await createOrgAndUser(repos());
      const otherOrg = await repos().orgs.create({ name: unique('org') });
      const colleague = await createUser(repos());
      const a = await openSession(repos(), owner);
      const elsewhere = await openSession(repos(), { org: otherOrg, user: owner.user });
      const b = await openSession(repos(), owner);
      const theirs = await openSession(repos(), { org: owner.org, user: colleague });
      const nowMs = Date.now();
      assert.equal(await repos().sessions.end({ userId: owner.user.id, orgId: owner.org.id }, nowMs), 2);
      for (const session of [a, b]) assert.equal((await repos().sessions.get(session.id))?.endedAtMs, nowMs);
      assert.deepEqual(await repos().sessions.listLive(owner.user.id, nowMs), [elsewhere]);
      assert.deepEqual(await repos().sessions.listLive(colleague.id, nowMs), [theirs]);
      assert.equal(await repos().sessions.end({ userId: owner.user.id, orgId: owner.org.id }, nowMs), 0);
    });

    test('end with only the userId ends all of them; expired sessions are not live and are not counted', async () => {
      const owner = await createOrgAndUser(repos());
      const nowMs = Date.now() + 10 * 60_000;
      const expired = await openSession(repos(), owner, nowMs);
      await openSession(repos(), owner);
      await openSession(repos(), owner);
      assert.equal(await repos().sessions.end({ userId: owner.user.id }, nowMs), 2);
      assert.deepEqual(await repos().sessions.listLive(owner.user.id, nowMs - 1), [expired]);
      assert.equal((await repos().sessions.get(expired.id))?.endedAtMs, null);
    });

    test('end with unknown or malformed ids ends nothing', async () => {
      const owner = await createOrgAndUser(repos());
      const session = await openSession(repos(), owner);
      const userId = owner.user.id;
      const nowMs = Date.now();
      for (const filter of [
        { userId: UNKNOWN_ID },
        { userId: MALFORMED_ID },
        { userId, sessionId: UNKNOWN_ID },
        { userId, sessionId: MALFORMED_ID },
        { userId, orgId: UNKNOWN_ID },
        { userId, orgId: MALFORMED_ID },
      ]) {
        assert.equal(await repos().sessions.end(filter, nowMs), 0, JSON.stringify(filter));
      }
      assert.deepEqual(await repos().sessions.listLive(userId, nowMs), [session]);
    });

    test('pruneExpired deletes ended and expired sessions (with their refresh tokens), at most limit per call; live ones stay', async () => {
      const owner = await createOrgAndUser(repos());
      const ended = await openSession(repos(), owner);
      await repos().sessions.end({ userId: owner.user.id, sessionId: ended.id }, Date.now());
      // Expiries in 1970: no other test's session is that old, so the counts below are exact.
      const expired = [await openSession(repos(), owner, 1_000), await openSession(repos(), owner, 2_000)];
      const live = await openSession(repos(), owner);
      const token = await repos().refreshTokens.create({ userId: owner.user.id, orgId: owner.org.id, sessionId: ended.id, tokenHash: tokenHash(), expiresAtMs: Date.now() + HOUR_MS });
      let pruned = 0;
      for (let call = 0; call < 50; call += 1) {
        const deleted = await repos().sessions.pruneExpired(Date.now(), 1);
        assert.ok(deleted <= 1, 'the batch limit holds');
        if (deleted === 0) break;
        pruned += deleted;
      }
      assert.ok(pruned >= 3, `the ended and the two expired sessions went (${pruned})`);
      for (const gone of [ended, ...expired]) assert.equal(await repos().sessions.get(gone.id), null);
      assert.equal(await repos().refreshTokens.consume(token.tokenHash, Date.now()), null, 'its refresh token went with it');
      assert.equal((await repos().sessions.get(live.id))?.id, live.id, 'a live session stays');
      assert.equal(await repos().sessions.pruneExpired(Date.now(), 0), 0, 'a limit of 0 deletes nothing');
    });
  });
}

/** The behaviour every RefreshTokenRepository must show: hashes only, single use with reuse detection, revocable per user. */
export function refreshTokenRepositoryContract(name: string, makeRepos: MakeSessionRepositories): void {
  describe(`RefreshTokenRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    /** A token in a new session of the owner (or in the session given). */
    const issue = async (owner: { org: Org; user: User }, expiresAtMs = Date.now() + HOUR_MS, session?: SessionRecord) => {
      const sessionId = (session ?? (await openSession(repos(), owner))).id;
      return repos().refreshTokens.create({ userId: owner.user.id, orgId: owner.org.id, sessionId, tokenHash: tokenHash(), expiresAtMs });
    };

    test('create returns every field; consume spends it exactly once, then reports every replay as reused', async () => {
      const owner = await createOrgAndUser(repos());
      const session = await openSession(repos(), owner);
      const input = { userId: owner.user.id, orgId: owner.org.id, sessionId: session.id, tokenHash: tokenHash(), expiresAtMs: Date.now() + HOUR_MS };
      const created = await repos().refreshTokens.create(input);
      assert.deepEqual({ ...created, id: '', createdAtMs: 0 }, { ...input, id: '', createdAtMs: 0 });
      assert.match(created.id, UUID);
      assertRecentMs(created.createdAtMs);
      assert.deepEqual(await repos().refreshTokens.consume(input.tokenHash, Date.now()), { outcome: 'consumed', token: created });
      assert.deepEqual(await repos().refreshTokens.consume(input.tokenHash, Date.now()), { outcome: 'reused', token: created });
      assert.deepEqual(await repos().refreshTokens.consume(input.tokenHash, Date.now()), { outcome: 'reused', token: created });
    });

    test('tokens of one session are independent: spending one leaves the next usable', async () => {
      const owner = await createOrgAndUser(repos());
      const session = await openSession(repos(), owner);
      const first = await issue(owner, undefined, session);
      const rotated = await issue(owner, undefined, session);
      assert.equal(rotated.sessionId, session.id);
      assert.equal((await repos().refreshTokens.consume(first.tokenHash, Date.now()))?.outcome, 'consumed');
      assert.deepEqual(await repos().refreshTokens.consume(rotated.tokenHash, Date.now()), { outcome: 'consumed', token: rotated });
    });

    test('an unknown hash consumes to null', async () => {
      assert.equal(await repos().refreshTokens.consume(tokenHash(), Date.now()), null);
      assert.equal(await repos().refreshTokens.consume('', Date.now()), null);
    });

    test('a token is expired from expiresAtMs on: null then, spent or not, and a failed attempt spends nothing', async () => {
      const owner = await createOrgAndUser(repos());
      const token = await issue(owner);
      assert.equal(await repos().refreshTokens.consume(token.tokenHash, token.expiresAtMs), null, 'expiresAtMs == nowMs is expired');
      assert.equal(await repos().refreshTokens.consume(token.tokenHash, token.expiresAtMs + 1), null);
      // The failed attempts did not spend it: a clock a millisecond earlier still gets it, once.
      assert.deepEqual(await repos().refreshTokens.consume(token.tokenHash, token.expiresAtMs - 1), { outcome: 'consumed', token });
      assert.deepEqual(await repos().refreshTokens.consume(token.tokenHash, token.expiresAtMs - 1), { outcome: 'reused', token });
      assert.equal(await repos().refreshTokens.consume(token.tokenHash, token.expiresAtMs), null, 'an expired spent token is not a reuse');
    });

    test('concurrent consumes of one token: exactly one consumes it, the others see a reuse', async () => {
      // Several rounds, so that an implementation racing between its check and its write is caught.
      const owner = await createOrgAndUser(repos());
      for (let round = 0; round < 5; round += 1) {
        const token = await issue(owner);
        const nowMs = Date.now();
        const outcomes = await Promise.all(Array.from({ length: 5 }, () => repos().refreshTokens.consume(token.tokenHash, nowMs)));
        assert.equal(outcomes.filter((o) => o?.outcome === 'consumed').length, 1, `round ${round}: exactly one consume succeeds`);
        assert.equal(outcomes.filter((o) => o?.outcome === 'reused').length, 4, `round ${round}: the others are reuses`);
        for (const outcome of outcomes) assert.deepEqual(outcome?.token, token);
      }
    });

    test('revokeAllForUser revokes that user\'s active tokens only and says how many', async () => {
      const { org, user } = await createOrgAndUser(repos());
      const colleague = await createUser(repos());
      const mine = [await issue({ org, user }), await issue({ org, user }), await issue({ org, user })];
      const spent = mine[2]!;
      assert.equal((await repos().refreshTokens.consume(spent.tokenHash, Date.now()))?.outcome, 'consumed');
      const theirs = await issue({ org, user: colleague });
      assert.equal(await repos().refreshTokens.revokeAllForUser(user.id), 2, 'the consumed token is not counted again');
      for (const token of mine) {
        assert.deepEqual(await repos().refreshTokens.consume(token.tokenHash, Date.now()), { outcome: 'reused', token }, 'a revoked token is spent');
      }
      assert.equal(await repos().refreshTokens.revokeAllForUser(user.id), 0, 'nothing left to revoke');
      assert.deepEqual(await repos().refreshTokens.consume(theirs.tokenHash, Date.now()), { outcome: 'consumed', token: theirs }, 'another user is untouched');
      // A token issued after the revocation works: revocation is not a ban.
      const fresh = await issue({ org, user });
      assert.deepEqual(await repos().refreshTokens.consume(fresh.tokenHash, Date.now()), { outcome: 'consumed', token: fresh });
    });

    test('revokeAllForUser of an unknown or malformed user revokes nothing', async () => {
      const owner = await createOrgAndUser(repos());
      const token = await issue(owner);
      assert.equal(await repos().refreshTokens.revokeAllForUser(UNKNOWN_ID), 0);
      assert.equal(await repos().refreshTokens.revokeAllForUser(MALFORMED_ID), 0);
      assert.deepEqual(await repos().refreshTokens.consume(token.tokenHash, Date.now()), { outcome: 'consumed', token });
    });

    test('create for an unknown or malformed user, org or session is NOT_FOUND; a stored hash is ALREADY_EXISTS', async () => {
      const { org, user } = await createOrgAndUser(repos());
      const session = await openSession(repos(), { org, user });
      const expiresAtMs = Date.now() + HOUR_MS;
      const valid = { userId: user.id, orgId: org.id, sessionId: session.id };
      for (const parents of [
        { ...valid, userId: UNKNOWN_ID },
        { ...valid, userId: MALFORMED_ID },
        { ...valid, orgId: UNKNOWN_ID },
        { ...valid, orgId: MALFORMED_ID },
        { ...valid, sessionId: UNKNOWN_ID },
        { ...valid, sessionId: MALFORMED_ID },
      ]) {
        const hash = tokenHash();
        await rejectsWithCode(repos().refreshTokens.create({ ...parents, tokenHash: hash, expiresAtMs }), 'NOT_FOUND');
        assert.equal(await repos().refreshTokens.consume(hash, Date.now()), null, 'nothing was stored');
      }
      const token = await issue({ org, user }, undefined, session);
      await rejectsWithCode(repos().refreshTokens.create({ ...valid, tokenHash: token.tokenHash, expiresAtMs }), 'ALREADY_EXISTS');
      assert.deepEqual(await repos().refreshTokens.consume(token.tokenHash, Date.now()), { outcome: 'consumed', token }, 'the original is intact');
    });

    test('pruneExpired deletes expired tokens (spent or not), at most limit per call; live ones stay', async () => {
      // Expiries in 1970 (ms 1,000..5,000): no other test's token is that old, so the counts are exact.
      const owner = await createOrgAndUser(repos());
      const old = [];
      for (let i = 1; i <= 5; i += 1) old.push(await issue(owner, i * 1_000));
      const live = await issue(owner);
      assert.deepEqual(await repos().refreshTokens.consume(old[0]!.tokenHash, 500), { outcome: 'consumed', token: old[0] }, 'spent before it expired');
      assert.equal(await repos().refreshTokens.pruneExpired(3_000, 2), 2, 'the batch limit holds');
      assert.equal(await repos().refreshTokens.pruneExpired(3_000, 2), 1, 'expiresAtMs == nowMs is expired too');
      assert.equal(await repos().refreshTokens.pruneExpired(3_000, 2), 0);
      // Tokens 4 and 5 are still stored: consumable as of a time before their expiry.
      assert.equal((await repos().refreshTokens.consume(old[3]!.tokenHash, 3_500))?.token.id, old[3]!.id);
      assert.equal(await repos().refreshTokens.pruneExpired(5_000, 0), 0, 'a limit of 0 deletes nothing');
      assert.equal(await repos().refreshTokens.pruneExpired(5_000, 10), 2);
      assert.equal(await repos().refreshTokens.consume(old[4]!.tokenHash, 4_500), null, 'pruned');
      assert.deepEqual(await repos().refreshTokens.consume(live.tokenHash, Date.now()), { outcome: 'consumed', token: live });
    });
  });
}

/** The behaviour every InvitationRepository must show: org-scoped, hashes only, single use. */
export function invitationRepositoryContract(name: string, makeRepos: MakeSessionRepositories): void {
  describe(`InvitationRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    const newOrg = () => repos().orgs.create({ name: unique('org') });
    const invite = async (org: Org, overrides: { role?: Invitation['role']; expiresAtMs?: number; tokenHash?: string } = {}) => {
      const hash = overrides.tokenHash ?? tokenHash();
      const invitation = await repos().invitations.create(
        { orgId: org.id },
        { email: `${unique('Invitee')}@Example.com`, role: overrides.role ?? 'org_member', tokenHash: hash, expiresAtMs: overrides.expiresAtMs ?? Date.now() + HOUR_MS },
      );
      return { invitation, hash };
    };

    test('create returns every field (never the hash), not accepted; findActive gives it back', async () => {
      const org = await newOrg();
      const hash = tokenHash();
      const input = { email: `${unique('Ada')}@Example.com`, role: 'org_admin' as const, tokenHash: hash, expiresAtMs: Date.now() + HOUR_MS };
      const invitation = await repos().invitations.create({ orgId: org.id }, input);
      assert.deepEqual(
        { ...invitation, id: '', createdAtMs: 0 },
        { id: '', orgId: org.id, email: input.email, role: 'org_admin', createdBy: null, provesAddress: false, createdAtMs: 0, expiresAtMs: input.expiresAtMs, acceptedAtMs: null },
      );
      assert.match(invitation.id, UUID);
      assertRecentMs(invitation.createdAtMs);
      assert.deepEqual(await repos().invitations.findActive(hash, Date.now()), invitation);
    });

    test('provesAddress round-trips: set only when the link went to the invitee alone', async () => {
      const org = await newOrg();
      const hash = tokenHash();
      const mailed = await repos().invitations.create({ orgId: org.id }, { email: `${unique('m')}@example.com`, role: 'org_member', tokenHash: hash, expiresAtMs: Date.now() + HOUR_MS, provesAddress: true });
      assert.equal(mailed.provesAddress, true);
      assert.equal((await repos().invitations.findActive(hash, Date.now()))?.provesAddress, true);
      assert.equal((await repos().invitations.accept(hash, Date.now()))?.provesAddress, true);
    });

    test('createdBy round-trips; withdrawCreatedBy withdraws that creator\'s pending invitations in the org only', async () => {
      const org = await newOrg();
      const other = await newOrg();
      const ada = await createUser(repos());
      const byAda = { userId: ada.id, email: ada.email };
      const make = (orgId: string, createdBy: Invitation['createdBy']) =>
        repos().invitations.create({ orgId }, { email: `${unique('x')}@example.com`, role: 'org_admin', tokenHash: tokenHash(), expiresAtMs: Date.now() + HOUR_MS, createdBy });
      const mine = await make(org.id, byAda);
      assert.deepEqual(mine.createdBy, byAda);
      const acceptedHash = tokenHash();
      await repos().invitations.create({ orgId: org.id }, { email: 'accepted@example.com', role: 'org_member', tokenHash: acceptedHash, expiresAtMs: Date.now() + HOUR_MS, createdBy: byAda });
      await repos().invitations.accept(acceptedHash, Date.now());
      const someoneElses = await make(org.id, { userId: (await createUser(repos())).id, email: null });
      const unrecorded = await make(org.id, null);
      const elsewhere = await make(other.id, byAda);
      const withdrawn = await repos().invitations.withdrawCreatedBy({ orgId: org.id }, ada.id);
      assert.deepEqual(withdrawn, [mine], 'the pending one only, as it was');
      assert.deepEqual((await repos().invitations.listPending({ orgId: org.id }, Date.now())).map((i) => i.id).sort(), [someoneElses.id, unrecorded.id].sort());
      assert.deepEqual((await repos().invitations.listPending({ orgId: other.id }, Date.now())).map((i) => i.id), [elsewhere.id]);
      assert.deepEqual(await repos().invitations.withdrawCreatedBy({ orgId: org.id }, MALFORMED_ID), []);
    });

    test('create for an unknown or malformed org is NOT_FOUND; a stored hash is ALREADY_EXISTS', async () => {
      for (const orgId of [UNKNOWN_ID, MALFORMED_ID]) {
        const hash = tokenHash();
        await rejectsWithCode(
          repos().invitations.create({ orgId }, { email: 'x@example.com', role: 'org_member', tokenHash: hash, expiresAtMs: Date.now() + HOUR_MS }),
          'NOT_FOUND',
        );
        assert.equal(await repos().invitations.findActive(hash, Date.now()), null, 'nothing was stored');
      }
      const org = await newOrg();
      const { invitation, hash } = await invite(org);
      await rejectsWithCode(
        repos().invitations.create({ orgId: (await newOrg()).id }, { email: 'y@example.com', role: 'org_admin', tokenHash: hash, expiresAtMs: Date.now() + HOUR_MS }),
        'ALREADY_EXISTS',
      );
      assert.deepEqual(await repos().invitations.findActive(hash, Date.now()), invitation, 'the original is intact');
    });

    test('listPending gives the org\'s unaccepted, unexpired invitations, newest first', async () => {
      const org = await newOrg();
      const otherOrg = await newOrg();
      const nowMs = Date.now() + 10 * 60_000;
      const oldest = (await invite(org)).invitation;
      await tick();
      const expired = (await invite(org, { expiresAtMs: nowMs })).invitation;
      await tick();
      const accepted = await invite(org);
      await tick();
      await invite(otherOrg);
      await tick();
      const newest = (await invite(org, { role: 'org_admin', expiresAtMs: nowMs + 1 })).invitation;
      assert.notEqual(await repos().invitations.accept(accepted.hash, Date.now()), null);
      assert.deepEqual(await repos().invitations.listPending({ orgId: org.id }, nowMs), [newest, oldest], 'expiresAtMs == nowMs is expired');
      assert.deepEqual((await repos().invitations.listPending({ orgId: org.id }, nowMs - 1)).map((i) => i.id), [newest.id, expired.id, oldest.id]);
      assert.deepEqual((await repos().invitations.listPending({ orgId: org.id }, nowMs + 1)).map((i) => i.id), [oldest.id]);
      assert.equal((await repos().invitations.listPending({ orgId: otherOrg.id }, nowMs)).length, 1);
      assert.deepEqual(await repos().invitations.listPending({ orgId: UNKNOWN_ID }, nowMs), []);
      assert.deepEqual(await repos().invitations.listPending({ orgId: MALFORMED_ID }, nowMs), []);
    });

    test('delete withdraws a pending invitation: gone from listPending, its token no longer works', async () => {
      const org = await newOrg();
      const { invitation, hash } = await invite(org);
      const kept = (await invite(org)).invitation;
      await repos().invitations.delete({ orgId: org.id }, invitation.id);
      assert.deepEqual(await repos().invitations.listPending({ orgId: org.id }, Date.now()), [kept]);
      assert.equal(await repos().invitations.findActive(hash, Date.now()), null);
      assert.equal(await repos().invitations.accept(hash, Date.now()), null);
      await rejectsWithCode(repos().invitations.delete({ orgId: org.id }, invitation.id), 'NOT_FOUND');
    });

    test('delete is NOT_FOUND for unknown, malformed, another org\'s or accepted invitations, and changes nothing', async () => {
      const org = await newOrg();
      const otherOrg = await newOrg();
      const { invitation } = await invite(org);
      const accepted = await invite(org);
      assert.notEqual(await repos().invitations.accept(accepted.hash, Date.now()), null);
      await rejectsWithCode(repos().invitations.delete({ orgId: org.id }, UNKNOWN_ID), 'NOT_FOUND');
      await rejectsWithCode(repos().invitations.delete({ orgId: org.id }, MALFORMED_ID), 'NOT_FOUND');
      await rejectsWithCode(repos().invitations.delete({ orgId: otherOrg.id }, invitation.id), 'NOT_FOUND');
      await rejectsWithCode(repos().invitations.delete({ orgId: MALFORMED_ID }, invitation.id), 'NOT_FOUND');
      await rejectsWithCode(repos().invitations.delete({ orgId: UNKNOWN_ID }, invitation.id), 'NOT_FOUND');
      await rejectsWithCode(repos().invitations.delete({ orgId: org.id }, accepted.invitation.id), 'NOT_FOUND');
      assert.deepEqual(await repos().invitations.listPending({ orgId: org.id }, Date.now()), [invitation]);
    });

    test('findActive does not spend the invitation; unknown, expired and accepted ones are null', async () => {
      const org = await newOrg();
      const { invitation, hash } = await invite(org);
      assert.deepEqual(await repos().invitations.findActive(hash, Date.now()), invitation);
      assert.deepEqual(await repos().invitations.findActive(hash, Date.now()), invitation, 'still there');
      assert.equal(await repos().invitations.findActive(hash, invitation.expiresAtMs), null, 'expiresAtMs == nowMs is expired');
      assert.deepEqual(await repos().invitations.findActive(hash, invitation.expiresAtMs - 1), invitation);
      assert.equal(await repos().invitations.findActive(tokenHash(), Date.now()), null);
      assert.equal(await repos().invitations.findActive('', Date.now()), null);
      const nowMs = Date.now();
      assert.deepEqual(await repos().invitations.accept(hash, nowMs), { ...invitation, acceptedAtMs: nowMs });
      assert.equal(await repos().invitations.findActive(hash, nowMs), null, 'accepted');
    });

    test('accept spends the invitation once; not when expired, and a failed attempt spends nothing', async () => {
      const org = await newOrg();
      const { invitation, hash } = await invite(org, { role: 'org_admin' });
      assert.equal(await repos().invitations.accept(hash, invitation.expiresAtMs), null, 'expiresAtMs == nowMs is expired');
      assert.equal(await repos().invitations.accept(hash, invitation.expiresAtMs + 1), null);
      const nowMs = invitation.expiresAtMs - 1;
      assert.deepEqual(await repos().invitations.accept(hash, nowMs), { ...invitation, acceptedAtMs: nowMs });
      assert.equal(await repos().invitations.accept(hash, nowMs), null, 'single use');
      assert.equal(await repos().invitations.accept(tokenHash(), nowMs), null, 'unknown hash');
      assert.deepEqual(await repos().invitations.listPending({ orgId: org.id }, Date.now()), []);
    });

    test('concurrent accepts of one invitation: exactly one wins', async () => {
      const org = await newOrg();
      for (let round = 0; round < 5; round += 1) {
        const { invitation, hash } = await invite(org);
        const nowMs = Date.now();
        const outcomes = await Promise.all(Array.from({ length: 5 }, () => repos().invitations.accept(hash, nowMs)));
        const winners = outcomes.filter((outcome) => outcome !== null);
        assert.equal(winners.length, 1, `round ${round}: exactly one accept succeeds`);
        assert.deepEqual(winners[0], { ...invitation, acceptedAtMs: nowMs });
      }
    });


    test('pruneExpired deletes invitations past their expiry (accepted or not), at most limit per call', async () => {
      const org = await newOrg();
      const old = [];
      // Expiries in 1970: no other test's invitation is that old, so the counts are exact.
      for (let i = 1; i <= 3; i += 1) {
        const hash = tokenHash();
        old.push({ hash, invitation: await repos().invitations.create({ orgId: org.id }, { email: `old-${i}@example.com`, role: 'org_member', tokenHash: hash, expiresAtMs: i * 1_000 }) });
      }
      const live = await invite(org);
      assert.equal(await repos().invitations.pruneExpired(5_000, 2), 2, 'the batch limit holds');
      assert.equal(await repos().invitations.pruneExpired(5_000, 2), 1);
      assert.equal(await repos().invitations.pruneExpired(5_000, 2), 0);
      assert.equal(await repos().invitations.pruneExpired(5_000, 0), 0, 'a limit of 0 deletes nothing');
      for (const { hash } of old) assert.equal(await repos().invitations.accept(hash, 500), null, 'pruned');
      assert.equal((await repos().invitations.findActive(live.hash, Date.now()))?.id, live.invitation.id, 'a live invitation stays');
    });
  });
}

/** The behaviour every LoginThrottleRepository must show: per-subject counts over a window, and pruning. */
export function loginThrottleRepositoryContract(name: string, makeRepos: MakeSessionRepositories): void {
  describe(`LoginThrottleRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);
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

    test('newestFailures answers the subject\'s newest failure times from sinceMs on, newest first, at most limit', async () => {
      const t0 = epoch();
      const email = unique('email:f');
      const other = unique('email:g');
      const throttle = repos().loginThrottle;
      for (const at of [t0 + 20, t0, t0 + 30, t0 + 30, t0 + 10]) await throttle.recordFailure([email], at);
      await throttle.recordFailure([other], t0 + 40);
      assert.deepEqual(await throttle.newestFailures(email, t0, 3), [t0 + 30, t0 + 30, t0 + 20], 'same-millisecond failures each count');
      assert.deepEqual(await throttle.newestFailures(email, t0 + 20, 10), [t0 + 30, t0 + 30, t0 + 20], 'a failure at exactly sinceMs is included');
      assert.deepEqual(await throttle.newestFailures(email, t0 + 31, 10), []);
      assert.deepEqual(await throttle.newestFailures(email, t0, 0), []);
      assert.deepEqual(await throttle.newestFailures(unique('email:never'), t0, 2), []);
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

/** Every session-related repository contract. */
export function sessionRepositoriesContract(name: string, makeRepos: MakeSessionRepositories): void {
  sessionRepositoryContract(name, makeRepos);
  refreshTokenRepositoryContract(name, makeRepos);
  invitationRepositoryContract(name, makeRepos);
  loginThrottleRepositoryContract(name, makeRepos);
}
