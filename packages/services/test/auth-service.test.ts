import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { beforeEach, describe, test } from 'node:test';
import { DomainError, RateLimitedError, isDomainError, type ErrorCode, type Repositories } from '@switchyard/core';
import { InMemoryState, createInMemoryRepositories } from '@switchyard/core/testing';
import { AuthService, BcryptPasswordHasher, DEFAULT_LOGIN_THROTTLE, LoginThrottle, TokenService, sha256Hex, type Session } from '../src/index.ts';

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
  auth = new AuthService(repos, hasher, tokens, new LoginThrottle(repos.loginThrottle, DEFAULT_LOGIN_THROTTLE, now), now);

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

describe('AuthService.login', () => {
  test('opens a session in the user\'s first org with a token that verifies to its claims', async () => {
    const session = await login(ALICE.email, ALICE.password);
    assert.equal(session.userId, aliceId);
    assert.equal(session.orgId, orgA);
    assert.equal(session.expiresIn, TTL_SECONDS);
    assert.equal(session.expiresAtMs, clock.nowMs + TTL_SECONDS * 1000);
    assert.match(session.refreshToken, /^rt_/);
    assert.deepEqual(await tokens.verify(session.accessToken), { userId: aliceId, orgId: orgA, role: 'org_admin', isSystem: false });
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
  test('a refresh token is single use and opens a new session in the same org', async () => {
    const first = await login(ALICE.email, ALICE.password, { orgId: orgB });
    clock.nowMs += 60_000;
    const second = await auth.refresh(first.refreshToken);
    assert.equal(second.userId, aliceId);
    assert.equal(second.orgId, orgB);
    assert.notEqual(second.refreshToken, first.refreshToken);
    assert.equal(second.expiresAtMs, clock.nowMs + TTL_SECONDS * 1000, 'a fresh access token');
    assert.equal((await tokens.verify(second.accessToken)).role, 'org_member');
    await rejectsWith(auth.refresh(first.refreshToken), 'UNAUTHENTICATED');
    await auth.refresh(second.refreshToken);
    await rejectsWith(auth.refresh(second.refreshToken), 'UNAUTHENTICATED');
  });

  test('unknown tokens, access tokens and tokens older than 30 days are UNAUTHENTICATED', async () => {
    const session = await login(ALICE.email, ALICE.password);
    await rejectsWith(auth.refresh('rt_made-up'), 'UNAUTHENTICATED');
    await rejectsWith(auth.refresh(session.accessToken), 'UNAUTHENTICATED');
    clock.nowMs += 30 * 24 * 3600_000;
    await rejectsWith(auth.refresh(session.refreshToken), 'UNAUTHENTICATED');
  });

  test('only a hash of the refresh token is stored', async () => {
    const session = await login(ALICE.email, ALICE.password);
    const stored = JSON.stringify([...state.refreshTokens.values()]);
    assert.ok(stored.includes(sha256Hex(session.refreshToken)));
    assert.ok(!stored.includes(session.refreshToken));
  });
});

describe('AuthService.switchOrg', () => {
  test('a member gets a session in the target org with its role there', async () => {
    const inA = await login(ALICE.email, ALICE.password);
    const inB = await auth.switchOrg(inA.accessToken, orgB);
    assert.equal(inB.orgId, orgB);
    assert.equal(inB.userId, aliceId);
    assert.deepEqual(await tokens.verify(inB.accessToken), { userId: aliceId, orgId: orgB, role: 'org_member', isSystem: false });
    assert.equal((await auth.refresh(inB.refreshToken)).orgId, orgB);
  });

  test('a non-member is PERMISSION_DENIED; a bad or expired token is UNAUTHENTICATED', async () => {
    const inA = await login(ALICE.email, ALICE.password);
    for (const target of [orgC, systemOrg, randomUUID(), 'not-a-uuid']) {
      await rejectsWith(auth.switchOrg(inA.accessToken, target), 'PERMISSION_DENIED');
    }
    await rejectsWith(auth.switchOrg('not-a-token', orgB), 'UNAUTHENTICATED');
    clock.nowMs += TTL_SECONDS * 1000;
    await rejectsWith(auth.switchOrg(inA.accessToken, orgB), 'UNAUTHENTICATED');
  });
});

describe('AuthService.listUserOrgs', () => {
  test('lists the user\'s orgs with names and roles, oldest membership first', async () => {
    const session = await login(ALICE.email, ALICE.password);
    assert.deepEqual(await auth.listUserOrgs(session.accessToken), [
      { orgId: orgA, orgName: 'Org A', role: 'org_admin' },
      { orgId: orgB, orgName: 'Org B', role: 'org_member' },
    ]);
  });

  test('system orgs are excluded', async () => {
    const session = await login(ROOT.email, ROOT.password);
    assert.deepEqual(await auth.listUserOrgs(session.accessToken), []);
    await repos.users.addMembership({ orgId: orgC, userId: rootId, role: 'org_member' });
    assert.deepEqual(await auth.listUserOrgs(session.accessToken), [{ orgId: orgC, orgName: 'Org C', role: 'org_member' }]);
  });

  test('a bad token is UNAUTHENTICATED', async () => {
    await rejectsWith(auth.listUserOrgs('nope'), 'UNAUTHENTICATED');
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

  test('10 failures refuse the next attempt, even with the right password, for the rest of the window', async () => {
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

  test('a success clears the email counter', async () => {
    await fail(9);
    await login(ALICE.email, ALICE.password);
    await fail(9);
    assert.equal((await login(ALICE.email, ALICE.password)).userId, aliceId);
  });

  test('failures from one address throttle every email from it, but not other addresses; a success does not clear it', async () => {
    for (let i = 0; i < 9; i += 1) await fail(1, `victim-${i}@example.com`, '203.0.113.7');
    await login(ALICE.email, ALICE.password, { clientAddress: '203.0.113.7' });
    await fail(1, 'victim-9@example.com', '203.0.113.7');
    assert.ok((await rateLimited(login(ROOT.email, ROOT.password, { clientAddress: '203.0.113.7' }))) > 0);
    assert.equal((await login(ROOT.email, ROOT.password, { clientAddress: '198.51.100.1' })).userId, rootId);
  });
});
