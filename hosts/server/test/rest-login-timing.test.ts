import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertNoSecrets, expectError, unique } from './support/rest-client.ts';
import { MAX_FAILURES, checksAllowedWithin, expectThrottled, startThrottlingTestServer } from './support/login-throttling.ts';

// Login throttling where a password check's real cost matters (support/login-throttling.ts has
// the policy): parallel guesses racing one another while each check takes tens of milliseconds,
// and an unknown email costing what a wrong password does. bcrypt at production's cost 10; the
// counting tests are in rest-auth-throttling.test.ts, at the test servers' 4.
const server = startThrottlingTestServer(10);

// topologies: single — what these tests measure happens in the services (how many password checks
// the policy lets run at once, the dummy check for an unknown email); the gateway's part, the client
// address it carries and its logs, is tested in both topologies by rest-auth-throttling.test.ts.
// A split pass would run ~40 more checks at cost 10 (~5 s of CPU) for the same answers.

describe('login throttling with real password checks', () => {
  test('concurrent failures cannot exceed the limit: of 20 parallel wrong passwords at most 10 are checked, the rest are 429', async () => {
    // An attacker sends guesses in parallel. Each guess that is answered 401 was a real password
    // check; the policy allows 10 per email per window, however the guesses are timed.
    const user = await server.freshUser();
    const answers = await Promise.all(Array.from({ length: 20 }, () => server.loginAs(user.email, `pw-wrong-${unique()}`)));
    const checked = answers.filter((response) => response.status === 401).length;
    for (const response of answers) {
      if (response.status === 401) expectError(response, 401, 'UNAUTHENTICATED');
      else expectThrottled(response);
    }
    assert.ok(checked <= MAX_FAILURES, `${checked} of 20 parallel guesses were checked against the password (limit ${MAX_FAILURES})`);
  });

  test('per-account slow-down: of 10 parallel guesses from 10 addresses once the delay has passed, at most one is checked', async () => {
    const user = await server.freshUser();
    for (let i = 0; i < MAX_FAILURES; i++) {
      expectError(await server.loginFrom(`198.18.2.${i + 1}`, user.email, `pw-wrong-${unique()}`), 401, 'UNAUTHENTICATED');
    }
    await sleep(1000);
    const burstSentAt = performance.now();
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => server.loginFrom(`198.18.3.${i + 1}`, user.email, `pw-wrong-${unique()}`)));
    // The server saw the burst over at most this long (2 s on a quiet machine is far more than enough).
    const spreadMs = performance.now() - burstSentAt;
    const checked = answers.filter((response) => response.status === 401).length;
    for (const response of answers) if (response.status !== 401) expectThrottled(response);
    const allowed = checksAllowedWithin(spreadMs, 2000);
    assert.ok(checked <= allowed, `${checked} of 10 parallel guesses were checked against the password (at most ${allowed}: one per delay, over ${spreadMs.toFixed(0)} ms)`);
  });

  test('unknown email and wrong password take about the same time (both run bcrypt)', async () => {
    const user = await server.freshUser();
    const unknownMs: number[] = [];
    const wrongMs: number[] = [];
    const timed = async (email: string, into: number[]) => {
      const started = performance.now();
      expectError(await server.loginAs(email, `pw-wrong-${unique()}`), 401, 'UNAUTHENTICATED');
      into.push(performance.now() - started);
    };
    // One warm-up of each path, then a clean count so that all 10 timed attempts run in full.
    await timed(`nobody-${unique()}@example.com`, []);
    await timed(user.email, []);
    await server.ts.db.sql`DELETE FROM login_failures`;
    for (let i = 0; i < 7; i++) {
      await timed(`nobody-${unique()}@example.com`, unknownMs);
      await timed(user.email, wrongMs);
    }
    // The fastest of each: a loaded machine only ever adds time, so the minimum is the attempt's
    // own cost, where a median still moves with whatever else shares the 2 cores. Within a factor
    // of 3: skipping bcrypt for an unknown email would make it ~20 times faster (one query).
    const unknownFastest = Math.min(...unknownMs);
    const wrongFastest = Math.min(...wrongMs);
    const ratio = unknownFastest / wrongFastest;
    assert.ok(
      ratio > 1 / 3 && ratio < 3,
      `fastest unknown-email ${unknownFastest.toFixed(1)} ms vs wrong-password ${wrongFastest.toFixed(1)} ms (ratio ${ratio.toFixed(2)})`,
    );
    // Both paths really hash: far above a database round trip.
    assert.ok(unknownFastest > 10 && wrongFastest > 10, `${unknownFastest} / ${wrongFastest} ms`);
  });
});

describe('secrets', () => {
  test('no password, refresh token, JWT or bcrypt hash in the logs or in responses', () => {
    assertNoSecrets(server.ts.logs, server.client);
  });
});
