import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertNoSecrets, expectError, expectStatus, unique } from './support/rest-client.ts';
import {
  MAX_FAILURES,
  MAX_FAILURES_PER_ADDRESS,
  MAX_FAILURES_PER_SITE,
  OTHER_ADDRESS,
  WINDOW_S,
  expectSlowedDown,
  expectThrottled,
  retryAfterOf,
  startThrottlingTestServer,
} from './support/login-throttling.ts';

// Login throttling's counts and delays (support/login-throttling.ts has the policy). bcrypt at
// the test servers' cost 4: counting needs no real cost; what does (parallel guesses, timing) is
// in rest-login-timing.test.ts at production's.
const server = startThrottlingTestServer(4);

describe('login throttling', () => {
  test('another loopback address works as a second client (the tests below rely on it)', async () => {
    const user = await server.freshUser();
    expectStatus(await server.loginAs(user.email, user.password, OTHER_ADDRESS), 200);
  });

  test('10 failures for one email from one address: the 11th attempt there is 429 even with the right password; the owner elsewhere is not locked out', async () => {
    const user = await server.freshUser();
    let lastFailureSentAt = 0;
    for (let i = 0; i < MAX_FAILURES; i++) {
      lastFailureSentAt = performance.now();
      expectError(await server.loginAs(user.email, `pw-wrong-${unique()}`), 401, 'UNAUTHENTICATED');
    }
    // The (email, address) limit: Retry-After is the window's.
    assert.ok(retryAfterOf(await server.loginAs(user.email, user.password)) > 60, 'the attacker waits for the window');
    // The email is counted case-insensitively.
    expectThrottled(await server.loginAs(user.email.toUpperCase(), user.password));
    // The attacker cannot lock the owner out: from the owner's own address the right password
    // works once the account's slow-down (1 s after its 10th failure) has passed.
    const owner = await server.loginAs(user.email, user.password, OTHER_ADDRESS);
    expectSlowedDown(owner, lastFailureSentAt, 1);
    if (owner.status !== 200) {
      await sleep(retryAfterOf(owner) * 1000);
      expectStatus(await server.loginAs(user.email, user.password, OTHER_ADDRESS), 200);
    }
    // Another email from the attacker's address is not affected yet (the address has 10 of its 30).
    expectStatus(await server.loginAs(server.tenant.admin.email, server.tenant.admin.password), 200);
  });

  test('30 failures from one address (10 emails, 3 each): a fresh email from that address is 429, from another address 200', async () => {
    const user = await server.freshUser();
    for (let i = 0; i < MAX_FAILURES_PER_ADDRESS; i++) {
      expectError(await server.loginAs(`nobody-${i % 10}-${unique().slice(0, 1)}@example.com`, `pw-guess-${unique()}`), 401, 'UNAUTHENTICATED');
    }
    expectThrottled(await server.loginAs(user.email, user.password));
    expectThrottled(await server.loginAs(server.tenant.admin.email, server.tenant.admin.password));
    expectStatus(await server.loginAs(user.email, user.password, OTHER_ADDRESS), 200);
  });

  test('IPv6: 30 failures from addresses rotated inside one /64 (30 emails) throttle the whole /64; the next /64 is not affected', async () => {
    const user = await server.freshUser();
    for (let i = 0; i < MAX_FAILURES_PER_ADDRESS; i++) {
      expectError(await server.loginFrom(`2001:db8:64:1:${(i + 1).toString(16)}::${unique().slice(-4)}`, `nobody-${i}-${unique()}@example.com`, 'pw-guess-wrong'), 401, 'UNAUTHENTICATED');
    }
    assert.ok(retryAfterOf(await server.loginFrom('2001:db8:64:1:abcd:ef01:2345:6789', user.email, user.password)) > 60, 'a fresh address of that /64 is refused for the window');
    expectStatus(await server.loginFrom('2001:db8:64:2::1', user.email, user.password), 200);
  });

  test('IPv6: 10 failures for one email from addresses rotated inside one /64: the /64 is refused for that email for the window', async () => {
    const user = await server.freshUser();
    for (let i = 0; i < MAX_FAILURES; i++) {
      expectError(await server.loginFrom(`2001:db8:64:3::${(i + 1).toString(16)}`, user.email, `pw-wrong-${unique()}`), 401, 'UNAUTHENTICATED');
    }
    // The (email, /64) limit, not only the account's 1-second slow-down: Retry-After is the window's.
    const wait = retryAfterOf(await server.loginFrom('2001:db8:64:3:ffff::1', user.email, user.password));
    assert.ok(wait > 60 && wait <= WINDOW_S, `Retry-After ${wait}s`);
  });

  test('IPv6: 100 failures from one /48, one per /64 (100 emails), throttle the whole /48; another /48 is not affected', async () => {
    const user = await server.freshUser();
    for (let i = 0; i < MAX_FAILURES_PER_SITE; i++) {
      expectError(await server.loginFrom(`2001:db8:48:${i.toString(16)}::1`, `nobody-${i}-${unique()}@example.com`, 'pw-guess-wrong'), 401, 'UNAUTHENTICATED');
    }
    assert.ok(retryAfterOf(await server.loginFrom('2001:db8:48:ffff::1', user.email, user.password)) > 60, 'a fresh /64 of that /48 is refused');
    expectStatus(await server.loginFrom('2001:db8:49::1', user.email, user.password), 200);
  });

  test('per-account slow-down: failures from ever new addresses space the attempts 1 s, then 2 s; the owner gets in after the delay', async () => {
    const user = await server.freshUser();
    // One failure per address (a botnet): no per-address or per-pair limit is reached.
    let lastFailureSentAt = 0;
    for (let i = 0; i < MAX_FAILURES; i++) {
      lastFailureSentAt = performance.now();
      expectError(await server.loginFrom(`198.18.0.${i + 1}`, user.email, `pw-wrong-${unique()}`), 401, 'UNAUTHENTICATED');
    }
    // Even the right password waits 1 s after the 10th failure. (A 200 would clear the account's
    // count; only a loaded machine, taking over a second per attempt, lets it through here.)
    const early = await server.loginFrom('198.18.1.1', user.email, user.password);
    expectSlowedDown(early, lastFailureSentAt, 1);
    if (early.status === 200) return;
    await sleep(1000);
    lastFailureSentAt = performance.now();
    expectError(await server.loginFrom('198.18.1.2', user.email, `pw-wrong-${unique()}`), 401, 'UNAUTHENTICATED');
    // After the 11th failure, 2 s.
    const later = await server.loginFrom('198.18.1.3', user.email, user.password);
    expectSlowedDown(later, lastFailureSentAt, 2);
    if (later.status === 200) return;
    await sleep(retryAfterOf(later) * 1000);
    expectStatus(await server.loginFrom('198.51.100.9', user.email, user.password), 200);
  });

  test('9 failures are not throttled yet: the 10th attempt with the right password succeeds', async () => {
    const user = await server.freshUser();
    for (let i = 0; i < MAX_FAILURES - 1; i++) {
      expectError(await server.loginAs(user.email, `pw-wrong-${unique()}`), 401, 'UNAUTHENTICATED');
    }
    expectStatus(await server.loginAs(user.email, user.password), 200);
  });

  test('a throttled attempt does not reveal whether the password was right', async () => {
    const user = await server.freshUser();
    for (let i = 0; i < MAX_FAILURES; i++) await server.loginAs(user.email, `pw-wrong-${unique()}`, OTHER_ADDRESS);
    const right = await server.loginAs(user.email, user.password, OTHER_ADDRESS);
    const wrong = await server.loginAs(user.email, `pw-wrong-${unique()}`, OTHER_ADDRESS);
    expectThrottled(right);
    expectThrottled(wrong);
    assert.deepEqual(right.body, wrong.body);
  });
});

describe('secrets', () => {
  test('no password, refresh token, JWT or bcrypt hash in the logs or in responses', () => {
    assertNoSecrets(server.ts.logs, server.client);
  });
});
