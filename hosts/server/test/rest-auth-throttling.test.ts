import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  api,
  assertNoSecrets,
  expectError,
  expectStatus,
  loginAdmin,
  seedTenant,
  unique,
  type ApiClient,
  type ApiResponse,
  type LoggedInUser,
  type Tenant,
} from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Failed logins are counted per (email, client) — 10 per 15 minutes — per client — 30 per 15
// minutes — and per IPv6 /48 — 100 per 15 minutes —, where a client is an IPv4 address or an IPv6
// /64; after 10 failures of one account from anywhere its attempts are spaced 1 s, 2 s, 4 s ... 60 s.
// Every request comes from 127.0.0.1 unless a test connects from 127.0.0.2 (another loopback
// address, hence another client) or names its client in X-Forwarded-For: the server trusts one
// proxy hop (TRUST_PROXY=true, the loopback peer being the proxy), the way a deployment behind a
// reverse proxy learns IPv6 client addresses. Each test starts from a clean count.

const OTHER_ADDRESS = '127.0.0.2';
const MAX_FAILURES = 10;
const MAX_FAILURES_PER_ADDRESS = 30;
const MAX_FAILURES_PER_SITE = 100;
const WINDOW_S = 15 * 60;

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let tenant: Tenant;

before(async () => {
  // The production cost: the timing test below needs each comparison to take real time.
  ts = await startTestServer({ TRUST_PROXY: 'true', PASSWORD_HASH_COST: '10' });
  client = api(ts.base);
  root = await loginAdmin(client);
  tenant = await seedTenant(client, root.token, 'throttle');
});
after(() => ts.stop());
/** Forgets every recorded failure, so that tests do not depend on each other's counts. */
beforeEach(async () => {
  await ts.db.sql`DELETE FROM login_failures`;
});

const loginAs = (email: string, password: string, localAddress?: string): Promise<ApiResponse> =>
  client.post('/v1/auth/login', { body: { email, password }, ...(localAddress === undefined ? {} : { localAddress }) });

/** A login from `clientAddress` as the trusted proxy reports it (the rightmost X-Forwarded-For entry). */
const loginFrom = (clientAddress: string, email: string, password: string): Promise<ApiResponse> =>
  client.post('/v1/auth/login', { body: { email, password }, headers: { 'x-forwarded-for': `203.0.113.250, ${clientAddress}` } });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The Retry-After of a 429, in seconds. */
function retryAfterOf(response: ApiResponse): number {
  expectThrottled(response);
  return Number(response.headers.get('retry-after'));
}

/** A user of the tenant's org that has never failed a login. */
async function freshUser(): Promise<{ email: string; password: string }> {
  const email = `fresh-${unique()}@example.com`;
  const password = `pw-fresh-${unique()}-secret`;
  expectStatus(
    await client.post(`/v1/admin/orgs/${tenant.orgId}/users`, { token: root.token, body: { email, display_name: 'Fresh', password, org_role: 'org_member' } }),
    201,
  );
  return { email, password };
}

function expectThrottled(response: ApiResponse): void {
  expectError(response, 429, 'RESOURCE_EXHAUSTED');
  const retryAfter = response.headers.get('retry-after');
  assert.ok(retryAfter !== null, 'a 429 carries Retry-After');
  assert.match(retryAfter, /^\d+$/, 'Retry-After is whole seconds');
  const seconds = Number(retryAfter);
  assert.ok(seconds > 0 && seconds <= 15 * 60, `Retry-After ${seconds}s is within the 15-minute window`);
}

/**
 * Checks the account slow-down's answer to an attempt with the right password, `delaySeconds`
 * after the account's newest failure, whose request was sent at `failureSentAt` (performance.now()).
 * The server measures the delay from when it recorded that failure to when it started this
 * attempt; both lie inside [failureSentAt, now], so on a loaded machine the delay may have passed
 * (200) or partly passed (a smaller Retry-After), but only as far as the time the client saw pass.
 */
function expectSlowedDown(response: ApiResponse, failureSentAt: number, delaySeconds: number): void {
  const elapsedMs = performance.now() - failureSentAt;
  if (response.status === 200) {
    assert.ok(elapsedMs >= delaySeconds * 1000, `200 only ${elapsedMs.toFixed(0)} ms after the failure (delay ${delaySeconds} s)`);
    return;
  }
  const wait = retryAfterOf(response);
  const atLeast = Math.max(1, Math.ceil((delaySeconds * 1000 - elapsedMs) / 1000));
  assert.ok(wait >= atLeast && wait <= delaySeconds, `Retry-After ${wait} s, expected ${atLeast}..${delaySeconds} s (${elapsedMs.toFixed(0)} ms after the failure)`);
}

/**
 * How many of a burst of parallel guesses the slow-down may let through when the burst's
 * attempts reached the server over `spreadMs`: one, then one more each time the (doubling) delay
 * has passed since the previous one, from `firstDelayMs` on.
 */
function checksAllowedWithin(spreadMs: number, firstDelayMs: number): number {
  let allowed = 1;
  for (let delay = firstDelayMs, next = firstDelayMs; next <= spreadMs; delay *= 2, next += delay) allowed++;
  return allowed;
}

describe('login throttling', () => {
  test('another loopback address works as a second client (the tests below rely on it)', async () => {
    const user = await freshUser();
    expectStatus(await loginAs(user.email, user.password, OTHER_ADDRESS), 200);
  });

  test('10 failures for one email from one address: the 11th attempt there is 429 even with the right password; the owner elsewhere is not locked out', async () => {
    const user = await freshUser();
    let lastFailureSentAt = 0;
    for (let i = 0; i < MAX_FAILURES; i++) {
      lastFailureSentAt = performance.now();
      expectError(await loginAs(user.email, `pw-wrong-${unique()}`), 401, 'UNAUTHENTICATED');
    }
    // The (email, address) limit: Retry-After is the window's.
    assert.ok(retryAfterOf(await loginAs(user.email, user.password)) > 60, 'the attacker waits for the window');
    // The email is counted case-insensitively.
    expectThrottled(await loginAs(user.email.toUpperCase(), user.password));
    // The attacker cannot lock the owner out: from the owner's own address the right password
    // works once the account's slow-down (1 s after its 10th failure) has passed.
    const owner = await loginAs(user.email, user.password, OTHER_ADDRESS);
    expectSlowedDown(owner, lastFailureSentAt, 1);
    if (owner.status !== 200) {
      await sleep(retryAfterOf(owner) * 1000);
      expectStatus(await loginAs(user.email, user.password, OTHER_ADDRESS), 200);
    }
    // Another email from the attacker's address is not affected yet (the address has 10 of its 30).
    expectStatus(await loginAs(tenant.admin.email, tenant.admin.password), 200);
  });

  test('30 failures from one address (10 emails, 3 each): a fresh email from that address is 429, from another address 200', async () => {
    const user = await freshUser();
    for (let i = 0; i < MAX_FAILURES_PER_ADDRESS; i++) {
      expectError(await loginAs(`nobody-${i % 10}-${unique().slice(0, 1)}@example.com`, `pw-guess-${unique()}`), 401, 'UNAUTHENTICATED');
    }
    expectThrottled(await loginAs(user.email, user.password));
    expectThrottled(await loginAs(tenant.admin.email, tenant.admin.password));
    expectStatus(await loginAs(user.email, user.password, OTHER_ADDRESS), 200);
  });

  test('concurrent failures cannot exceed the limit: of 20 parallel wrong passwords at most 10 are checked, the rest are 429', async () => {
    // An attacker sends guesses in parallel. Each guess that is answered 401 was a real password
    // check; the policy allows 10 per email per window, however the guesses are timed.
    const user = await freshUser();
    const answers = await Promise.all(Array.from({ length: 20 }, () => loginAs(user.email, `pw-wrong-${unique()}`)));
    const checked = answers.filter((response) => response.status === 401).length;
    for (const response of answers) {
      if (response.status === 401) expectError(response, 401, 'UNAUTHENTICATED');
      else expectThrottled(response);
    }
    assert.ok(checked <= MAX_FAILURES, `${checked} of 20 parallel guesses were checked against the password (limit ${MAX_FAILURES})`);
  });

  test('IPv6: 30 failures from addresses rotated inside one /64 (30 emails) throttle the whole /64; the next /64 is not affected', async () => {
    const user = await freshUser();
    for (let i = 0; i < MAX_FAILURES_PER_ADDRESS; i++) {
      expectError(await loginFrom(`2001:db8:64:1:${(i + 1).toString(16)}::${unique().slice(-4)}`, `nobody-${i}-${unique()}@example.com`, 'pw-guess-wrong'), 401, 'UNAUTHENTICATED');
    }
    assert.ok(retryAfterOf(await loginFrom('2001:db8:64:1:abcd:ef01:2345:6789', user.email, user.password)) > 60, 'a fresh address of that /64 is refused for the window');
    expectStatus(await loginFrom('2001:db8:64:2::1', user.email, user.password), 200);
  });

  test('IPv6: 10 failures for one email from addresses rotated inside one /64: the /64 is refused for that email for the window', async () => {
    const user = await freshUser();
    for (let i = 0; i < MAX_FAILURES; i++) {
      expectError(await loginFrom(`2001:db8:64:3::${(i + 1).toString(16)}`, user.email, `pw-wrong-${unique()}`), 401, 'UNAUTHENTICATED');
    }
    // The (email, /64) limit, not only the account's 1-second slow-down: Retry-After is the window's.
    const wait = retryAfterOf(await loginFrom('2001:db8:64:3:ffff::1', user.email, user.password));
    assert.ok(wait > 60 && wait <= WINDOW_S, `Retry-After ${wait}s`);
  });

  test('IPv6: 100 failures from one /48, one per /64 (100 emails), throttle the whole /48; another /48 is not affected', async () => {
    const user = await freshUser();
    for (let i = 0; i < MAX_FAILURES_PER_SITE; i++) {
      expectError(await loginFrom(`2001:db8:48:${i.toString(16)}::1`, `nobody-${i}-${unique()}@example.com`, 'pw-guess-wrong'), 401, 'UNAUTHENTICATED');
    }
    assert.ok(retryAfterOf(await loginFrom('2001:db8:48:ffff::1', user.email, user.password)) > 60, 'a fresh /64 of that /48 is refused');
    expectStatus(await loginFrom('2001:db8:49::1', user.email, user.password), 200);
  });

  test('per-account slow-down: failures from ever new addresses space the attempts 1 s, then 2 s; the owner gets in after the delay', async () => {
    const user = await freshUser();
    // One failure per address (a botnet): no per-address or per-pair limit is reached.
    let lastFailureSentAt = 0;
    for (let i = 0; i < MAX_FAILURES; i++) {
      lastFailureSentAt = performance.now();
      expectError(await loginFrom(`198.18.0.${i + 1}`, user.email, `pw-wrong-${unique()}`), 401, 'UNAUTHENTICATED');
    }
    // Even the right password waits 1 s after the 10th failure. (A 200 would clear the account's
    // count; only a loaded machine, taking over a second per attempt, lets it through here.)
    const early = await loginFrom('198.18.1.1', user.email, user.password);
    expectSlowedDown(early, lastFailureSentAt, 1);
    if (early.status === 200) return;
    await sleep(1000);
    lastFailureSentAt = performance.now();
    expectError(await loginFrom('198.18.1.2', user.email, `pw-wrong-${unique()}`), 401, 'UNAUTHENTICATED');
    // After the 11th failure, 2 s.
    const later = await loginFrom('198.18.1.3', user.email, user.password);
    expectSlowedDown(later, lastFailureSentAt, 2);
    if (later.status === 200) return;
    await sleep(retryAfterOf(later) * 1000);
    expectStatus(await loginFrom('198.51.100.9', user.email, user.password), 200);
  });

  test('per-account slow-down: of 10 parallel guesses from 10 addresses once the delay has passed, at most one is checked', async () => {
    const user = await freshUser();
    for (let i = 0; i < MAX_FAILURES; i++) {
      expectError(await loginFrom(`198.18.2.${i + 1}`, user.email, `pw-wrong-${unique()}`), 401, 'UNAUTHENTICATED');
    }
    await sleep(1000);
    const burstSentAt = performance.now();
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => loginFrom(`198.18.3.${i + 1}`, user.email, `pw-wrong-${unique()}`)));
    // The server saw the burst over at most this long (2 s on a quiet machine is far more than enough).
    const spreadMs = performance.now() - burstSentAt;
    const checked = answers.filter((response) => response.status === 401).length;
    for (const response of answers) if (response.status !== 401) expectThrottled(response);
    const allowed = checksAllowedWithin(spreadMs, 2000);
    assert.ok(checked <= allowed, `${checked} of 10 parallel guesses were checked against the password (at most ${allowed}: one per delay, over ${spreadMs.toFixed(0)} ms)`);
  });

  test('9 failures are not throttled yet: the 10th attempt with the right password succeeds', async () => {
    const user = await freshUser();
    for (let i = 0; i < MAX_FAILURES - 1; i++) {
      expectError(await loginAs(user.email, `pw-wrong-${unique()}`), 401, 'UNAUTHENTICATED');
    }
    expectStatus(await loginAs(user.email, user.password), 200);
  });

  test('a throttled attempt does not reveal whether the password was right', async () => {
    const user = await freshUser();
    for (let i = 0; i < MAX_FAILURES; i++) await loginAs(user.email, `pw-wrong-${unique()}`, OTHER_ADDRESS);
    const right = await loginAs(user.email, user.password, OTHER_ADDRESS);
    const wrong = await loginAs(user.email, `pw-wrong-${unique()}`, OTHER_ADDRESS);
    expectThrottled(right);
    expectThrottled(wrong);
    assert.deepEqual(right.body, wrong.body);
  });

  test('unknown email and wrong password take about the same time (both run bcrypt)', async () => {
    const user = await freshUser();
    const unknownMs: number[] = [];
    const wrongMs: number[] = [];
    const timed = async (email: string, into: number[]) => {
      const started = performance.now();
      expectError(await loginAs(email, `pw-wrong-${unique()}`), 401, 'UNAUTHENTICATED');
      into.push(performance.now() - started);
    };
    // One warm-up of each path, then a clean count so that all 10 timed attempts run in full.
    await timed(`nobody-${unique()}@example.com`, []);
    await timed(user.email, []);
    await ts.db.sql`DELETE FROM login_failures`;
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
    assertNoSecrets(ts.logs, client);
  });
});
