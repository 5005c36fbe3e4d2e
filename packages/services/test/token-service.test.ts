import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SignJWT } from 'jose';
import { isDomainError } from '@switchyard/core';
import { TokenService, type AccessClaims } from '../src/index.ts';

const SECRET = 'unit-test-secret-of-at-least-32-bytes!!';
const CLAIMS: AccessClaims = { userId: 'user-1', orgId: 'org-1', role: 'org_member', isSystem: false, sessionId: 'session-1' };
const T0 = Date.UTC(2030, 0, 1);

const clockAt = (startMs: number) => {
  const clock = { nowMs: startMs, now: () => clock.nowMs };
  return clock;
};

const service = (overrides: Partial<ConstructorParameters<typeof TokenService>[0]> = {}) =>
  new TokenService({ secret: SECRET, ttlSeconds: 3600, now: () => T0, ...overrides });

const base64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
const decodePart = (token: string, index: number): Record<string, unknown> =>
  JSON.parse(Buffer.from(token.split('.')[index] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;

async function rejectsUnauthenticated(verification: Promise<unknown>, message?: RegExp): Promise<void> {
  await assert.rejects(verification, (error: unknown) => {
    assert.ok(isDomainError(error), 'a DomainError');
    assert.equal(error.code, 'UNAUTHENTICATED');
    if (message) assert.match(error.message, message);
    return true;
  });
}

/** A token with the claims our tokens carry, signed as the options say. */
function signed(options: { secret?: string; alg?: 'HS256' | 'HS512'; issuer?: string; audience?: string; payload?: Record<string, unknown> } = {}) {
  return new SignJWT(options.payload ?? { org: 'org-1', role: 'org_admin', sys: false, sid: 'session-1' })
    .setProtectedHeader({ alg: options.alg ?? 'HS256', typ: 'JWT' })
    .setSubject('user-1')
    .setIssuer(options.issuer ?? 'switchyard')
    .setAudience(options.audience ?? 'switchyard-api')
    .setIssuedAt(Math.floor(T0 / 1000))
    .setExpirationTime(Math.floor(T0 / 1000) + 600)
    .sign(new TextEncoder().encode(options.secret ?? SECRET));
}

describe('TokenService', () => {
  test('issue → verify round-trips the claims; exp is the TTL after iat', async () => {
    const tokens = service();
    for (const claims of [CLAIMS, { userId: 'root', orgId: 'sys', role: 'org_admin', isSystem: true, sessionId: 's-2' } satisfies AccessClaims]) {
      const { token, expiresAtMs } = await tokens.issue(claims);
      assert.deepEqual(await tokens.verify(token), { ...claims, issuedAtMs: Math.floor(T0 / 1000) * 1000 });
      assert.equal(expiresAtMs, T0 + 3600_000);
      const payload = decodePart(token, 1);
      assert.equal(payload.exp, Math.floor(T0 / 1000) + 3600);
      assert.equal(payload.iat, Math.floor(T0 / 1000));
      assert.equal(payload.iss, 'switchyard');
      assert.equal(payload.aud, 'switchyard-api');
      assert.equal(payload.sub, claims.userId);
      assert.equal(typeof payload.jti, 'string');
      assert.deepEqual(decodePart(token, 0), { alg: 'HS256', typ: 'JWT' });
    }
    assert.equal(tokens.ttlSeconds, 3600);
  });

  test('two tokens for the same claims differ (each has its own jti)', async () => {
    const tokens = service();
    const first = await tokens.issue(CLAIMS);
    const second = await tokens.issue(CLAIMS);
    assert.notEqual(first.token, second.token);
  });

  test('a token is valid until its expiry and UNAUTHENTICATED from then on (injected clock)', async () => {
    const clock = clockAt(T0);
    const tokens = service({ now: clock.now });
    const { token } = await tokens.issue(CLAIMS);
    clock.nowMs = T0 + 3600_000 - 1000;
    assert.deepEqual(await tokens.verify(token), { ...CLAIMS, issuedAtMs: T0 });
    clock.nowMs = T0 + 3600_000;
    await rejectsUnauthenticated(tokens.verify(token), /expired/);
    clock.nowMs = T0 + 86_400_000;
    await rejectsUnauthenticated(tokens.verify(token), /expired/);
  });

  test('a token verified before is answered from memory: a copy of its claims, refused from its expiry, and dropped then', async () => {
    const clock = clockAt(T0);
    const tokens = service({ now: clock.now });
    const { token } = await tokens.issue(CLAIMS);
    const first = await tokens.verify(token);
    first.orgId = 'changed-by-the-caller';
    assert.deepEqual(await tokens.verify(token), { ...CLAIMS, issuedAtMs: T0 });
    assert.equal(tokens.verifiedTokenCount, 1);
    clock.nowMs = T0 + 3600_000;
    await rejectsUnauthenticated(tokens.verify(token), /expired/);
    assert.equal(tokens.verifiedTokenCount, 0);
  });

  test('only tokens that pass are kept, at most maxVerifiedTokens of them (the oldest goes first)', async () => {
    const tokens = service({ maxVerifiedTokens: 3 });
    await rejectsUnauthenticated(tokens.verify(await signed({ secret: 'another-secret-of-at-least-32-bytes!!!' })));
    await rejectsUnauthenticated(tokens.verify('garbage'));
    assert.equal(tokens.verifiedTokenCount, 0);
    const issued = await Promise.all(Array.from({ length: 5 }, () => tokens.issue(CLAIMS)));
    for (const { token } of issued) await tokens.verify(token);
    assert.equal(tokens.verifiedTokenCount, 3);
    // The first was dropped: it is verified again, and still passes.
    assert.deepEqual(await tokens.verify(issued[0]!.token), { ...CLAIMS, issuedAtMs: Math.floor(T0 / 1000) * 1000 });
    assert.equal(tokens.verifiedTokenCount, 3);
    // 0 keeps none: every check runs jose.
    const none = service({ maxVerifiedTokens: 0 });
    await none.verify(issued[1]!.token);
    assert.equal(none.verifiedTokenCount, 0);
  });

  test('a kept token altered by one character is verified as new text, and refused', async () => {
    const tokens = service();
    const { token } = await tokens.issue(CLAIMS);
    await tokens.verify(token);
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const raised = base64url({ ...decodePart(token, 1), role: 'org_admin' });
    await rejectsUnauthenticated(tokens.verify(`${header}.${raised}.${signature}`));
    // The first character: all six of its bits are signature bits. (The last character of a
    // 32-byte signature carries two padding bits that decoding ignores, so a change there can
    // leave the same bytes: this test failed that way about once in sixteen runs.)
    const flipped = (signature.startsWith('A') ? 'B' : 'A') + signature.slice(1);
    await rejectsUnauthenticated(tokens.verify(`${header}.${payload}.${flipped}`));
  });

  test('a token signed with another secret is UNAUTHENTICATED', async () => {
    const { token } = await service({ secret: 'another-secret-of-at-least-32-bytes!!!' }).issue(CLAIMS);
    await rejectsUnauthenticated(service().verify(token), /invalid token/);
  });

  test('alg none (unsigned) is UNAUTHENTICATED, with or without a trailing signature', async () => {
    const { token } = await service().issue(CLAIMS);
    const payload = token.split('.')[1] ?? '';
    const header = base64url({ alg: 'none', typ: 'JWT' });
    await rejectsUnauthenticated(service().verify(`${header}.${payload}.`));
    await rejectsUnauthenticated(service().verify(`${header}.${payload}.${token.split('.')[2] ?? ''}`));
  });

  test('only HS256 is accepted, even with the right secret', async () => {
    await rejectsUnauthenticated(service().verify(await signed({ alg: 'HS512' })));
    // The same token in HS256 is fine: the difference is the algorithm alone.
    assert.equal((await service().verify(await signed())).role, 'org_admin');
  });

  test('a wrong issuer or audience is UNAUTHENTICATED', async () => {
    await rejectsUnauthenticated(service().verify(await signed({ issuer: 'someone-else' })));
    await rejectsUnauthenticated(service().verify(await signed({ audience: 'another-api' })));
    const { token } = await service({ issuer: 'switchyard-staging' }).issue(CLAIMS);
    await rejectsUnauthenticated(service().verify(token));
    assert.deepEqual(await service({ issuer: 'switchyard-staging' }).verify(token), { ...CLAIMS, issuedAtMs: T0 });
    const forOtherAudience = await service({ audience: 'flags-admin' }).issue(CLAIMS);
    await rejectsUnauthenticated(service().verify(forOtherAudience.token));
  });

  test('a tampered payload (role raised, org changed) is UNAUTHENTICATED', async () => {
    const { token } = await service().issue(CLAIMS);
    const [header, payload, signature] = token.split('.');
    const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
    for (const change of [{ role: 'org_admin' }, { org: 'org-2' }, { sys: true }, { sid: 'someone-elses-session' }, { exp: Number(claims.exp) + 3600 }]) {
      await rejectsUnauthenticated(service().verify(`${header}.${base64url({ ...claims, ...change })}.${signature}`));
    }
  });

  test('a correctly signed token with claims of the wrong shape is UNAUTHENTICATED', async () => {
    for (const payload of [
      { org: 'org-1', role: 'owner', sys: false },
      { org: 'org-1', role: 'org_admin' },
      { org: 42, role: 'org_admin', sys: false },
      { org: 'org-1', role: 'org_admin', sys: 'false' },
      // No session id: a token from before sessions existed, or one that names none.
      { org: 'org-1', role: 'org_admin', sys: false },
      { org: 'org-1', role: 'org_admin', sys: false, sid: 7 },
    ]) {
      await rejectsUnauthenticated(service().verify(await signed({ payload })));
    }
  });

  test('garbage is UNAUTHENTICATED', async () => {
    for (const garbage of ['', 'abc', 'a.b.c', `${base64url({ alg: 'HS256' })}..`]) {
      await rejectsUnauthenticated(service().verify(garbage));
    }
  });
});
