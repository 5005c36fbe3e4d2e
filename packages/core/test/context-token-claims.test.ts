import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyContextBinding, checkContextClaims, environmentOfKid } from '../src/client/context-token-claims.ts';

const NOW_MS = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const NOW_S = NOW_MS / 1000;
const valid = { ck: 'key-1', sub: 'alice', ctx: { plan: 'free' }, iat: NOW_S, exp: NOW_S + 3600 };

test('valid claims are read; ck, sub, ctx, iat and exp are checked', () => {
  assert.deepEqual(checkContextClaims(valid, 'key-1', NOW_MS), { clientKeyId: 'key-1', targetingKey: 'alice', attributes: { plan: 'free' }, issuedAtS: NOW_S, expiresAtS: NOW_S + 3600 });
  assert.equal(typeof checkContextClaims(valid, 'key-2', NOW_MS), 'string', 'another client key');
  assert.equal(typeof checkContextClaims({ ...valid, sub: '' }, 'key-1', NOW_MS), 'string');
  assert.equal(typeof checkContextClaims({ ...valid, exp: NOW_S + 24 * 3600 + 1 }, 'key-1', NOW_MS), 'string', 'longer than 24 h');
  assert.equal(typeof checkContextClaims({ ...valid, exp: NOW_S + 24 * 3600 }, 'key-1', NOW_MS), 'object', 'exactly 24 h');
  assert.equal(typeof checkContextClaims({ ...valid, iat: NOW_S - 7200, exp: NOW_S - 120 }, 'key-1', NOW_MS), 'string', 'expired beyond the skew');
  assert.equal(typeof checkContextClaims({ ...valid, iat: NOW_S + 600, exp: NOW_S + 1200 }, 'key-1', NOW_MS), 'string', 'issued in the future');
  assert.equal(typeof checkContextClaims({ ...valid, ctx: { nested: { a: 1 } } }, 'key-1', NOW_MS), 'string');
  assert.equal(typeof checkContextClaims({ ...valid, ctx: { targetingKey: 'bob' } }, 'key-1', NOW_MS), 'string');
  assert.equal(typeof checkContextClaims({ ...valid, iat: 1.5 }, 'key-1', NOW_MS), 'string');
});

test('binding: key mode keeps the body attributes; context mode takes the token’s; another key is refused', () => {
  const claims = { clientKeyId: 'k', targetingKey: 'alice', attributes: { plan: 'free' }, issuedAtS: 0, expiresAtS: 1 };
  assert.deepEqual(applyContextBinding('key', claims, { key: 'alice', parameters: { plan: 'enterprise', locale: 'de' } }), { key: 'alice', parameters: { plan: 'enterprise', locale: 'de' } });
  assert.deepEqual(applyContextBinding('context', claims, { key: undefined, parameters: { plan: 'enterprise', locale: 'de' } }), { key: 'alice', parameters: { plan: 'free', locale: 'de' } });
  assert.equal(applyContextBinding('key', claims, { key: 'bob', parameters: {} }), null);
});

test('a kid names its environment', () => {
  assert.equal(environmentOfKid('0b0c1d2e-0000-4000-8000-000000000000.abc'), '0b0c1d2e-0000-4000-8000-000000000000');
  assert.equal(environmentOfKid('nodot'), undefined);
});
