import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { beforeEach, describe, test } from 'node:test';
import { DomainError, RateLimitedError, isDomainError, type ErrorCode, type Principal, type Repositories } from '@switchyard/core';
import { InMemoryChangeNotifier, InMemoryState, createInMemoryRepositories } from '@switchyard/core/testing';
import {
  AuthService,
  BcryptPasswordHasher,
  CredentialVerifier,
  DEFAULT_LOGIN_THROTTLE,
  LoginThrottle,
  SessionRegistry,
  TokenService,
  announceSessionChange,
  sha256Hex,
  type Session,
} from '../src/index.ts';

const hasher = new BcryptPasswordHasher(4);
const ALICE = { email: 'alice@example.com', password: 'alice-password-1' };
const ROOT = { email: 'root@example.com', password: 'root-password-1' };
const TTL_SECONDS = 3600;
const WINDOW_S = DEFAULT_LOGIN_THROTTLE.windowMs / 1000;

let state: InMemoryState;
let repos: Repositories;
let clock: { nowMs: number };
let tokens: TokenService;
let auth: AuthService;
let verifier: CredentialVerifier;
let systemOrg: string;
let orgA: string;
let orgB: string;
let orgC: string;
let aliceId: string;
let rootId: string;

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

beforeEach(async () => {
  state = new InMemoryState();
  repos = createInMemoryRepositories(state);
  clock = { nowMs: Date.UTC(2030, 0, 1) };
  const now = () => clock.nowMs;
  tokens = new TokenService({ secret: 'unit-test-secret-of-at-least-32-bytes!!', ttlSeconds: TTL_SECONDS, now });
  const notifier = new InMemoryChangeNotifier();
  const registry = new SessionRegistry(repos, notifier, { now });
  await registry.start();
  notifyChanged = (userId) => announceSessionChange(notifier, userId);
  verifier = new CredentialVerifier(tokens, repos.sdkKeys, notifier, registry, { now });
  auth = new AuthService(repos, hasher, tokens, notifier, new LoginThrottle(repos.loginThrottle, DEFAULT_LOGIN_THROTTLE, now), now);

  systemOrg = (await repos.orgs.create({ name: 'system', isSystem: true })).id;
  orgA = (await repos.orgs.create({ name: 'Org A' })).id;
  orgB = (await repos.orgs.create({ name: 'Org B' })).id;
  orgC = (await repos.orgs.create({ name: 'Org C' })).id;
  const alice = await repos.users.create({ email: ALICE.email, displayName: 'Alice', passwordHash: await hasher.hash(ALICE.password) });
  aliceId = alice.id;
  await repos.users.addMembership({ orgId: orgA, userId: aliceId, role: 'org_admin' });
  await repos.users.addMembership({ orgId: orgB, userId: aliceId, role: 'org_member' });
  const root = await repos.users.create({ email: ROOT.email, displayName: 'Root', passwordHash: await hasher.hash(ROOT.password) });
  rootId = root.id;
  await repos.users.addMembership({ orgId: systemOrg, userId: rootId, role: 'org_admin' });
});

const login = (email: string, password: string, extra: { orgId?: string; clientAddress?: string } = {}): Promise<Session> =>
  auth.login({ email, password, ...extra });

/** What every writer does after changing a user's sessions or roles (the registry listens). */
let notifyChanged: (userId: string) => Promise<void>;

/** The session's caller as every route sees it: through the verifier and its session registry. */
async function callerOf(session: Session): Promise<Extract<Principal, { kind: 'user' }>> {
  const principal = await verifier.verifyBearer(session.accessToken);
  assert.equal(principal.kind, 'user');
  return principal as Extract<Principal, { kind: 'user' }>;
}

/** The claims a token carries, without the issue time (checked separately where it matters). */
async function claimsOf(token: string) {
  const { issuedAtMs: _issuedAt, ...claims } = await tokens.verify(token);
  return claims;
}

describe('AuthService.login', () => {
  test('opens a session in the user\'s first org with a token that verifies to its claims', async () => {
    const session = await login(ALICE.email, ALICE.password);
    assert.equal(session.userId, aliceId);
    assert.equal(session.orgId, orgA);
    assert.equal(session.expiresIn, TTL_SECONDS);
    assert.equal(session.expiresAtMs, clock.nowMs + TTL_SECONDS * 1000);
    assert.match(session.refreshToken, /^rt_/);
    assert.deepEqual(await claimsOf(session.accessToken), { userId: aliceId, orgId: orgA, role: 'org_admin', isSystem: false, sessionId: session.sessionId });
  });

  test('orgId picks another of the user\'s orgs, with its role there', async () => {
    const session = await login(ALICE.email, ALICE.password, { orgId: orgB });
    assert.equal(session.orgId, orgB);
    assert.equal((await tokens.verify(session.accessToken)).role, 'org_member');
  });

  test('a system-org user gets an is_system token', async () => {
    const session = await login(ROOT.email, ROOT.password);
    assert.equal(session.orgId, systemOrg);
    assert.equal((await tokens.verify(session.accessToken)).isSystem, true);
  });

  test('the email is matched trimmed and case-insensitively', async () => {
    assert.equal((await login('  Alice@Example.COM ', ALICE.password)).userId, aliceId);
  });

  test('wrong password, unknown email and an org the user is not in give the same UNAUTHENTICATED', async () => {
    const wrongPassword = await rejectsWith(login(ALICE.email, 'wrong-password'), 'UNAUTHENTICATED');
    const unknownEmail = await rejectsWith(login('nobody@example.com', ALICE.password), 'UNAUTHENTICATED');
    const notMember = await rejectsWith(login(ALICE.email, ALICE.password, { orgId: orgC }), 'UNAUTHENTICATED');
    const unknownOrg = await rejectsWith(login(ALICE.email, ALICE.password, { orgId: randomUUID() }), 'UNAUTHENTICATED');
    assert.equal(unknownEmail.message, wrongPassword.message);
    assert.equal(notMember.message, wrongPassword.message);
    assert.equal(unknownOrg.message, wrongPassword.message);
  });

  test('an empty email or password is INVALID_ARGUMENT', async () => {
    await rejectsWith(login('', ALICE.password), 'INVALID_ARGUMENT');
    await rejectsWith(login('   ', ALICE.password), 'INVALID_ARGUMENT');
    await rejectsWith(login(ALICE.email, ''), 'INVALID_ARGUMENT');
  });
});

describe('AuthService.refresh', () => {
  test('a refresh token is single use and rotates inside the same session and org', async () => {
    const first = await login(ALICE.email, ALICE.password, { orgId: orgB });
    clock.nowMs += 60_000;
    const second = await auth.refresh(first.refreshToken);
    assert.equal(second.userId, aliceId);
    assert.equal(second.orgId, orgB);
    assert.equal(second.sessionId, first.sessionId, 'the same session');
    assert.notEqual(second.refreshToken, first.refreshToken);
    assert.equal(second.expiresAtMs, clock.nowMs + TTL_SECONDS * 1000, 'a fresh access token');
    assert.equal((await tokens.verify(second.accessToken)).role, 'org_member');
    const third = await auth.refresh(second.refreshToken);
    assert.equal((await callerOf(third)).userId, aliceId);
  });

  test('presenting a spent refresh token again ends the whole session: its access and refresh tokens', async () => {
    const first = await login(ALICE.email, ALICE.password);
    const second = await auth.refresh(first.refreshToken);
    assert.equal((await callerOf(second)).userId, aliceId);
    // Someone replays the first token (stolen): the session ends for both parties.
    await rejectsWith(auth.refresh(first.refreshToken), 'UNAUTHENTICATED');
    await rejectsWith(callerOf(second), 'UNAUTHENTICATED');
    await rejectsWith(callerOf(first), 'UNAUTHENTICATED');
    await rejectsWith(auth.refresh(second.refreshToken), 'UNAUTHENTICATED');
    // Another session of the same user is untouched.
    const other = await login(ALICE.email, ALICE.password);
    assert.equal((await callerOf(other)).userId, aliceId);
  });

  test('a refresh token signed under another JWT secret no longer works (rotating the secret ends sessions)', async () => {
    const session = await login(ALICE.email, ALICE.password);
    const rotated = new TokenService({ secret: 'another-secret-of-at-least-32-bytes!!!', ttlSeconds: TTL_SECONDS, now: () => clock.nowMs });
    const afterRotation = new AuthService(repos, hasher, rotated, new InMemoryChangeNotifier(), undefined, () => clock.nowMs);
    await rejectsWith(afterRotation.refresh(session.refreshToken), 'UNAUTHENTICATED');
    await rejectsWith(rotated.verify(session.accessToken), 'UNAUTHENTICATED');
  });

  test('unknown tokens, access tokens and tokens older than 30 days are UNAUTHENTICATED', async () => {
    const session = await login(ALICE.email, ALICE.password);
    await rejectsWith(auth.refresh('rt_made-up'), 'UNAUTHENTICATED');
    await rejectsWith(auth.refresh(session.accessToken), 'UNAUTHENTICATED');
    clock.nowMs += 30 * 24 * 3600_000;
    await rejectsWith(auth.refresh(session.refreshToken), 'UNAUTHENTICATED');
  });

  test('only a keyed hash of the refresh token is stored', async () => {
    const session = await login(ALICE.email, ALICE.password);
    const stored = JSON.stringify([...state.refreshTokens.values()]);
    assert.ok(stored.includes(tokens.refreshTokenHash(session.refreshToken)));
    assert.ok(!stored.includes(session.refreshToken));
    assert.ok(!stored.includes(sha256Hex(session.refreshToken)), 'not a plain hash: it is bound to the signing secret');
  });
});

describe('AuthService.switchOrg', () => {
  test('a member gets a session in the target org with its role there', async () => {
    const inA = await login(ALICE.email, ALICE.password);
    const inB = await auth.switchOrg(await callerOf(inA), orgB);
    assert.equal(inB.orgId, orgB);
    assert.equal(inB.userId, aliceId);
    assert.deepEqual(await claimsOf(inB.accessToken), { userId: aliceId, orgId: orgB, role: 'org_member', isSystem: false, sessionId: inB.sessionId });
    assert.equal((await auth.refresh(inB.refreshToken)).orgId, orgB);
  });

  test('a non-member is PERMISSION_DENIED; a bad or expired token is UNAUTHENTICATED', async () => {
    const inA = await login(ALICE.email, ALICE.password);
    for (const target of [orgC, systemOrg, randomUUID(), 'not-a-uuid']) {
      await rejectsWith(auth.switchOrg(await callerOf(inA), target), 'PERMISSION_DENIED');
    }
    await rejectsWith(verifier.verifyBearer('not-a-token'), 'UNAUTHENTICATED');
    clock.nowMs += TTL_SECONDS * 1000;
    await rejectsWith(callerOf(inA), 'UNAUTHENTICATED');
  });
});

describe('AuthService.listUserOrgs', () => {
  test('lists the user\'s orgs with names and roles, oldest membership first', async () => {
    const session = await login(ALICE.email, ALICE.password);
    assert.deepEqual(await auth.listUserOrgs(await callerOf(session)), [
      { orgId: orgA, orgName: 'Org A', role: 'org_admin' },
      { orgId: orgB, orgName: 'Org B', role: 'org_member' },
    ]);
  });

  test('system orgs are excluded', async () => {
    const session = await login(ROOT.email, ROOT.password);
    assert.deepEqual(await auth.listUserOrgs(await callerOf(session)), []);
    await repos.users.addMembership({ orgId: orgC, userId: rootId, role: 'org_member' });
    assert.deepEqual(await auth.listUserOrgs(await callerOf(session)), [{ orgId: orgC, orgName: 'Org C', role: 'org_member' }]);
  });

  test('an SDK-key principal or one without a session is UNAUTHENTICATED', async () => {
    await rejectsWith(auth.listUserOrgs({ kind: 'sdk_key', sdkKeyId: 'k', orgId: orgA, projectId: 'p', environmentId: 'e' }), 'UNAUTHENTICATED');
    await rejectsWith(auth.listUserOrgs({ kind: 'user', userId: aliceId, orgId: orgA, role: 'org_admin', isSystem: false }), 'UNAUTHENTICATED');
  });
});

describe('AuthService login throttling (injected clock)', () => {
  async function fail(times: number, email = ALICE.email, clientAddress?: string): Promise<void> {
    for (let i = 0; i < times; i += 1) {
      await rejectsWith(auth.login({ email, password: 'wrong-password', clientAddress }), 'UNAUTHENTICATED');
    }
  }

  async function rateLimited(call: Promise<unknown>): Promise<number> {
    const error = await rejectsWith(call, 'RESOURCE_EXHAUSTED');
    assert.ok(error instanceof RateLimitedError);
    return error.retryAfterSeconds;
  }

  test('10 failures for one account from one address refuse the next attempt there, even with the right password, for the rest of the window', async () => {
    await fail(10);
    assert.equal(await rateLimited(login(ALICE.email, ALICE.password)), WINDOW_S);
    clock.nowMs += 5 * 60_000;
    assert.equal(await rateLimited(login(ALICE.email, ALICE.password)), WINDOW_S - 300);
    clock.nowMs += 10 * 60_000 - 1000;
    assert.equal(await rateLimited(login(ALICE.email, 'wrong-password')), 1);
    clock.nowMs += 1000;
    assert.equal((await login(ALICE.email, ALICE.password)).userId, aliceId, 'allowed again once the window passed');
  });

  test('refused attempts are not counted as failures', async () => {
    await fail(10);
    for (let i = 0; i < 5; i += 1) await rateLimited(login(ALICE.email, 'wrong-password'));
    clock.nowMs += DEFAULT_LOGIN_THROTTLE.windowMs;
    await login(ALICE.email, ALICE.password);
  });

  test('the email counter is case-insensitive and per email', async () => {
    await fail(5, 'ALICE@example.com');
    await fail(5, 'alice@EXAMPLE.com');
    await rateLimited(login(ALICE.email, ALICE.password));
    assert.equal((await login(ROOT.email, ROOT.password)).userId, rootId, 'another email is not affected');
  });

  test('the retry-after of a spread-out run counts from the oldest failure in the window', async () => {
    await fail(1);
    clock.nowMs += 4 * 60_000;
    await fail(9);
    assert.equal(await rateLimited(login(ALICE.email, ALICE.password)), WINDOW_S - 240);
    clock.nowMs += WINDOW_S * 1000 - 240_000 + 1;
    // The first failure left the window: 9 remain, one more attempt is allowed, then the 9 + 1 count.
    await fail(1);
    assert.equal(await rateLimited(login(ALICE.email, ALICE.password)), 240);
  });

  test('a success clears the account-and-address counter', async () => {
    await fail(9);
    await login(ALICE.email, ALICE.password);
    await fail(9);
    assert.equal((await login(ALICE.email, ALICE.password)).userId, aliceId);
  });

  test('30 failures from one address throttle every email from it, but not other addresses; a success does not clear it', async () => {
    const address = '203.0.113.7';
    for (let i = 0; i < 29; i += 1) await fail(1, `victim-${i}@example.com`, address);
    await login(ALICE.email, ALICE.password, { clientAddress: address });
    await fail(1, 'victim-29@example.com', address);
    assert.ok((await rateLimited(login(ROOT.email, ROOT.password, { clientAddress: address }))) > 0);
    assert.equal((await login(ROOT.email, ROOT.password, { clientAddress: '198.51.100.1' })).userId, rootId);
  });

  test('an attacker failing 10 times with the victim\'s email does not lock the victim out: the owner waits 1 s at most', async () => {
    await fail(10, ALICE.email, '203.0.113.66');
    assert.ok((await rateLimited(login(ALICE.email, ALICE.password, { clientAddress: '203.0.113.66' }))) > 0, 'the attacker is refused');
    // The account's slow-down (10 free failures, then 1 s) applies from every address...
    assert.equal(await rateLimited(login(ALICE.email, ALICE.password, { clientAddress: '198.51.100.20' })), 1);
    clock.nowMs += 1000;
    const session = await login(ALICE.email, ALICE.password, { clientAddress: '198.51.100.20' });
    assert.equal(session.userId, aliceId, '...and once it has passed, the owner, from its own address, signs in');
  });

  test('the per-account slow-down: one guess per 1 s, 2 s, 4 s, ... 60 s whatever the addresses; the owner still gets in after the delay', async () => {
    // A distributed guesser: every failure from an address of its own, so no per-address limit applies.
    let next = 0;
    const guess = (password = 'wrong-password') => login(ALICE.email, password, { clientAddress: `10.9.${next >> 8}.${next++ & 0xff}` });
    for (let i = 0; i < 10; i += 1) await rejectsWith(guess(), 'UNAUTHENTICATED');
    // Doubling from 1 s after the 10th failure, capped at 60 s (hand-computed: 1, 2, 4, 8, 16, 32, 60, 60).
    for (const seconds of [1, 2, 4, 8, 16, 32, 60, 60]) {
      assert.equal(await rateLimited(guess()), seconds, `waits ${seconds} s`);
      clock.nowMs += seconds * 1000 - 1;
      assert.equal(await rateLimited(guess(ALICE.password)), 1, 'one millisecond early is still refused, right password or not');
      clock.nowMs += 1;
      await rejectsWith(guess(), 'UNAUTHENTICATED');
    }
    assert.equal(await rateLimited(guess(ALICE.password)), 60, 'the delay is capped');
    clock.nowMs += 60_000;
    assert.equal((await guess(ALICE.password)).userId, aliceId, 'after the delay the right password gets in');
    await rejectsWith(guess(), 'UNAUTHENTICATED');
    assert.equal((await guess(ALICE.password)).userId, aliceId, 'a success ended the slow-down');
  });

  test('a refused attempt does not push the slow-down further: hammering during the delay changes nothing', async () => {
    for (let i = 0; i < 10; i += 1) await fail(1, ALICE.email, `10.8.0.${i}`);
    for (let i = 0; i < 20; i += 1) {
      assert.equal(await rateLimited(login(ALICE.email, 'wrong-password', { clientAddress: `10.7.0.${i}` })), 1);
      clock.nowMs += 40;
    }
    clock.nowMs += 200;
    assert.equal((await login(ALICE.email, ALICE.password, { clientAddress: '198.51.100.21' })).userId, aliceId);
  });

  test('IPv6: addresses rotated inside one /64 are one client for the per-account and per-address limits', async () => {
    for (let i = 0; i < 10; i += 1) await fail(1, ROOT.email, `2001:db8:aa:1::${(i + 1).toString(16)}`);
    // A fresh address of the same /64, written differently (leading zeros, upper case): still refused.
    assert.ok((await rateLimited(login(ROOT.email, ROOT.password, { clientAddress: '2001:0DB8:00AA:0001:ffff:1:2:3' }))) > 60);
    for (let i = 0; i < 20; i += 1) await fail(1, `victim-${i}@example.com`, `2001:db8:aa:1:${i.toString(16)}::1`);
    // 30 failures in the /64: every email from it is refused, the neighbouring /64 is not.
    assert.ok((await rateLimited(login(ALICE.email, ALICE.password, { clientAddress: '2001:db8:aa:1:9999::9' }))) > 60);
    assert.equal((await login(ALICE.email, ALICE.password, { clientAddress: '2001:db8:aa:2::1' })).userId, aliceId);
  });

  test('IPv6: 100 failures from one /48, spread over /64s, refuse the whole /48; another /48 is not affected', async () => {
    for (let i = 0; i < 100; i += 1) await fail(1, `victim-${i}@example.com`, `2001:db8:bb:${i.toString(16)}::1`);
    assert.ok((await rateLimited(login(ALICE.email, ALICE.password, { clientAddress: '2001:db8:bb:ffff::1' }))) > 60);
    assert.equal((await login(ALICE.email, ALICE.password, { clientAddress: '2001:db8:bc::1' })).userId, aliceId);
  });

  test('an IPv4 address seen on a dual-stack socket (::ffff:a.b.c.d) is the same client as a.b.c.d', async () => {
    for (let i = 0; i < 5; i += 1) await fail(1, ALICE.email, '198.51.100.77');
    for (let i = 0; i < 5; i += 1) await fail(1, ALICE.email, '::ffff:198.51.100.77');
    // The (account, address) limit's window, not only the account's 1-second slow-down.
    assert.ok((await rateLimited(login(ALICE.email, ALICE.password, { clientAddress: '198.51.100.77' }))) > 60);
  });
});

describe('AuthService.logout', () => {
  test('ends that session only: its access and refresh tokens stop working, other sessions go on', async () => {
    const mine = await login(ALICE.email, ALICE.password);
    const other = await login(ALICE.email, ALICE.password);
    assert.equal((await callerOf(mine)).userId, aliceId);
    await auth.logout(await callerOf(mine));
    await rejectsWith(callerOf(mine), 'UNAUTHENTICATED');
    await rejectsWith(auth.refresh(mine.refreshToken), 'UNAUTHENTICATED');
    assert.equal((await callerOf(other)).userId, aliceId);
    assert.equal((await auth.refresh(other.refreshToken)).sessionId, other.sessionId);
  });
});

describe('AuthService.changePassword', () => {
  test('checks the current password, ends every other session and keeps the caller\'s', async () => {
    const mine = await login(ALICE.email, ALICE.password);
    const other = await login(ALICE.email, ALICE.password, { orgId: orgB });
    await rejectsWith(
      auth.changePassword(await callerOf(mine), { currentPassword: 'wrong-password', newPassword: 'new-password-1' }),
      'PERMISSION_DENIED',
    );
    assert.equal((await callerOf(other)).userId, aliceId, 'a wrong current password changes nothing');
    await rejectsWith(auth.changePassword(await callerOf(mine), { currentPassword: ALICE.password, newPassword: 'short' }), 'INVALID_ARGUMENT');

    await auth.changePassword(await callerOf(mine), { currentPassword: ALICE.password, newPassword: 'new-password-1' });
    assert.equal((await callerOf(mine)).userId, aliceId, 'the session that changed it goes on');
    await rejectsWith(callerOf(other), 'UNAUTHENTICATED');
    await rejectsWith(auth.refresh(other.refreshToken), 'UNAUTHENTICATED');
    await rejectsWith(login(ALICE.email, ALICE.password), 'UNAUTHENTICATED');
    assert.equal((await login(ALICE.email, 'new-password-1')).userId, aliceId);
  });

  test('guessing the current password with a stolen access token is throttled like a login', async () => {
    const mine = await login(ALICE.email, ALICE.password, { clientAddress: '203.0.113.9' });
    const caller = await callerOf(mine);
    for (let i = 0; i < 10; i += 1) {
      await rejectsWith(auth.changePassword(caller, { currentPassword: `guess-${i}-guess`, newPassword: 'new-password-1', clientAddress: '203.0.113.9' }), 'PERMISSION_DENIED');
    }
    await rejectsWith(auth.changePassword(caller, { currentPassword: ALICE.password, newPassword: 'new-password-1', clientAddress: '203.0.113.9' }), 'RESOURCE_EXHAUSTED');
  });
});

describe('AuthService.me and the sessions of an account', () => {
  test('me names the account, the session\'s org and the role there now', async () => {
    const inB = await login(ALICE.email, ALICE.password, { orgId: orgB });
    assert.deepEqual(await auth.me(await callerOf(inB)), {
      userId: aliceId,
      email: ALICE.email,
      displayName: 'Alice',
      orgId: orgB,
      orgName: 'Org B',
      role: 'org_member',
      isSystemOrg: false,
      singleSignOn: false,
    });
  });

  test('lists only the account\'s live sessions, oldest first, marking the caller\'s; ends one by id, and all but the caller\'s', async () => {
    const first = await login(ALICE.email, ALICE.password);
    clock.nowMs += 1000;
    const second = await login(ALICE.email, ALICE.password, { orgId: orgB });
    clock.nowMs += 1000;
    const third = await login(ALICE.email, ALICE.password);
    const rootSession = await login(ROOT.email, ROOT.password);
    const loggedOut = await login(ALICE.email, ALICE.password);
    await auth.logout(await callerOf(loggedOut));

    const listed = await auth.listSessions(await callerOf(second));
    // Sessions expire 30 days after sign-in on the service's clock; the fake stamps creation with its own.
    const start = Date.UTC(2030, 0, 1);
    const thirtyDays = 30 * 24 * 3600_000;
    assert.deepEqual(
      listed.map(({ createdAtMs: _created, ...rest }) => rest),
      [
        { sessionId: first.sessionId, orgId: orgA, orgName: 'Org A', expiresAtMs: start + thirtyDays, singleSignOn: false, current: false },
        { sessionId: second.sessionId, orgId: orgB, orgName: 'Org B', expiresAtMs: start + 1000 + thirtyDays, singleSignOn: false, current: true },
        { sessionId: third.sessionId, orgId: orgA, orgName: 'Org A', expiresAtMs: start + 2000 + thirtyDays, singleSignOn: false, current: false },
      ],
    );
    assert.ok(listed[0]!.createdAtMs <= listed[1]!.createdAtMs && listed[1]!.createdAtMs <= listed[2]!.createdAtMs, 'oldest first');

    // Another account's session, an ended one and an unknown id are all "not found"; nothing ends.
    await rejectsWith(auth.endSession(await callerOf(second), rootSession.sessionId), 'NOT_FOUND');
    await rejectsWith(auth.endSession(await callerOf(second), loggedOut.sessionId), 'NOT_FOUND');
    await rejectsWith(auth.endSession(await callerOf(second), randomUUID()), 'NOT_FOUND');
    assert.equal((await callerOf(rootSession)).userId, rootId, 'root\'s session goes on');

    await auth.endSession(await callerOf(second), first.sessionId);
    await rejectsWith(callerOf(first), 'UNAUTHENTICATED');
    await rejectsWith(auth.refresh(first.refreshToken), 'UNAUTHENTICATED');

    assert.deepEqual(await auth.endOtherSessions(await callerOf(second)), { ended: 1 });
    await rejectsWith(callerOf(third), 'UNAUTHENTICATED');
    assert.equal((await callerOf(second)).userId, aliceId, 'the caller\'s session goes on');
    assert.equal((await callerOf(rootSession)).userId, rootId, 'another account\'s session goes on');
    assert.deepEqual((await auth.listSessions(await callerOf(second))).map((s) => s.sessionId), [second.sessionId]);
    assert.deepEqual(await auth.endOtherSessions(await callerOf(second)), { ended: 0 });
  });

  test('lists at most the 100 newest sessions, the caller\'s always among them; revoke-others ends them all', async () => {
    const oldest = await login(ALICE.email, ALICE.password);
    const later: Session[] = [];
    for (let i = 0; i < 100; i += 1) later.push(await login(ALICE.email, ALICE.password));
    const fromNewest = await auth.listSessions(await callerOf(later[99]!));
    assert.deepEqual(fromNewest.map((s) => s.sessionId), later.map((s) => s.sessionId), 'the 100 newest: not the oldest');
    const fromOldest = await auth.listSessions(await callerOf(oldest));
    assert.deepEqual(fromOldest.map((s) => s.sessionId), [oldest.sessionId, ...later.slice(1).map((s) => s.sessionId)], 'the caller\'s and the 99 newest');
    assert.deepEqual(await auth.endOtherSessions(await callerOf(oldest)), { ended: 100 });
  });

  test('a session an identity provider opened sees and ends only its own org\'s sessions', async () => {
    const provider = await repos.authProviders.create(
      { orgId: orgA },
      {
        id: randomUUID(),
        type: 'saml',
        displayName: 'Org A SAML',
        enabled: true,
        defaultRole: 'org_member',
        redirectUris: ['https://app.example/'],
        oidc: null,
        saml: { idpMetadataUrl: null, idpMetadataXml: '<x/>', nameIdFormat: null, spEntityId: 'sp' },
        clientSecretCiphertext: null,
        linkExistingAccounts: true,
        enableRequestedBy: null,
        updatedBy: null,
      },
      20,
    );
    const inB = await login(ALICE.email, ALICE.password, { orgId: orgB });
    const inA = await login(ALICE.email, ALICE.password, { orgId: orgA });
    const viaSso = await auth.openSessionFor(aliceId, orgA, provider.id);
    const caller = await callerOf(viaSso);
    assert.equal((await auth.me(caller)).singleSignOn, true);
    assert.deepEqual(
      (await auth.listSessions(caller)).map((s) => [s.sessionId, s.singleSignOn, s.current]),
      [
        [inA.sessionId, false, false],
        [viaSso.sessionId, true, true],
      ],
    );
    await rejectsWith(auth.endSession(caller, inB.sessionId), 'NOT_FOUND');
    assert.deepEqual(await auth.endOtherSessions(caller), { ended: 1 });
    await rejectsWith(callerOf(inA), 'UNAUTHENTICATED');
    assert.equal((await callerOf(inB)).orgId, orgB, 'the session in the other org goes on');
  });

  test('a token whose session record is gone or ended is refused, never taken for an unconfined session', async () => {
    const inB = await login(ALICE.email, ALICE.password, { orgId: orgB });
    const inA = await login(ALICE.email, ALICE.password, { orgId: orgA });
    // A token that outlived its session row (pruned), and one whose session was ended meanwhile.
    const pruned: Principal = { kind: 'user', userId: aliceId, orgId: orgA, role: 'org_admin', isSystem: false, sessionId: randomUUID() };
    const ended = { ...(await callerOf(inA)) };
    await repos.sessions.end({ userId: aliceId, sessionId: inA.sessionId }, clock.nowMs);
    for (const principal of [pruned, ended]) {
      await rejectsWith(auth.listSessions(principal), 'UNAUTHENTICATED');
      await rejectsWith(auth.endOtherSessions(principal), 'UNAUTHENTICATED');
      await rejectsWith(auth.endSession(principal, inB.sessionId), 'UNAUTHENTICATED');
    }
    assert.equal((await callerOf(inB)).orgId, orgB, 'the session in the other org goes on');
  });

  test('an SDK-key principal or one without a session is UNAUTHENTICATED', async () => {
    const sdk: Principal = { kind: 'sdk_key', sdkKeyId: 'k', orgId: orgA, projectId: 'p', environmentId: 'e' };
    const sessionless: Principal = { kind: 'user', userId: aliceId, orgId: orgA, role: 'org_admin', isSystem: false };
    for (const principal of [sdk, sessionless]) {
      await rejectsWith(auth.me(principal), 'UNAUTHENTICATED');
      await rejectsWith(auth.listSessions(principal), 'UNAUTHENTICATED');
      await rejectsWith(auth.endOtherSessions(principal), 'UNAUTHENTICATED');
      await rejectsWith(auth.endSession(principal, randomUUID()), 'UNAUTHENTICATED');
    }
  });
});

describe('SessionRegistry through the verifier: role changes and removals apply to tokens already issued', () => {
  test('a role change is seen by the next request; a removal ends the org\'s sessions', async () => {
    const inA = await login(ALICE.email, ALICE.password);
    const inB = await login(ALICE.email, ALICE.password, { orgId: orgB });
    const before = await callerOf(inA);
    assert.equal(before.role, 'org_admin');
    // Another admin exists so Alice may be demoted.
    const bob = await repos.users.create({ email: 'bob@example.com', displayName: 'Bob', passwordHash: 'x' });
    await repos.users.addMembership({ orgId: orgA, userId: bob.id, role: 'org_admin' });
    await repos.users.setMembershipRole({ orgId: orgA }, aliceId, 'org_member');
    // Without an announcement the registry still answers from memory (no database read per request)...
    const cached = await callerOf(inA);
    assert.equal(cached.role, 'org_admin');
    // ...and the announcement every writer makes is what every instance acts on.
    await notifyChanged(aliceId);
    const after = await callerOf(inA);
    assert.equal(after.role, 'org_member');

    await repos.users.removeMembership({ orgId: orgB }, aliceId);
    await notifyChanged(aliceId);
    await rejectsWith(callerOf(inB), 'UNAUTHENTICATED');
    assert.equal((await callerOf(inA)).userId, aliceId, 'the other org is untouched');
  });

  test('verifying a cached session makes no repository call', async () => {
    const session = await login(ALICE.email, ALICE.password);
    await callerOf(session);
    let reads = 0;
    const counted = <T extends object>(target: T): T =>
      new Proxy(target, {
        get(object, property, receiver) {
          const value = Reflect.get(object, property, receiver);
          return typeof value === 'function' ? (...args: unknown[]) => { reads += 1; return value.apply(object, args); } : value;
        },
      });
    const notifier = new InMemoryChangeNotifier();
    const registry = new SessionRegistry({ sessions: counted(repos.sessions), users: counted(repos.users) }, notifier, { now: () => clock.nowMs });
    const counting = new CredentialVerifier(tokens, repos.sdkKeys, notifier, registry, { now: () => clock.nowMs });
    await counting.verifyBearer(session.accessToken);
    const afterFirst = reads;
    assert.ok(afterFirst > 0, 'the first request reads the user\'s sessions');
    for (let i = 0; i < 100; i += 1) await counting.verifyBearer(session.accessToken);
    assert.equal(reads, afterFirst, '100 more requests: no read');
  });
});
