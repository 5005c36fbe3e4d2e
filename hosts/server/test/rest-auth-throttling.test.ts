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

// Failed logins are counted per (email, client address) — 10 per 15 minutes — and per client
// address — 30 per 15 minutes. Every request comes from 127.0.0.1 unless a test connects from
// 127.0.0.2 (another loopback address, hence another client), and each test starts from a clean count.

const OTHER_ADDRESS = '127.0.0.2';
const MAX_FAILURES = 10;
const MAX_FAILURES_PER_ADDRESS = 30;

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let tenant: Tenant;

before(async () => {
  ts = await startTestServer();
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

const median = (values: number[]): number => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

describe('login throttling', () => {
  test('another loopback address works as a second client (the tests below rely on it)', async () => {
    const user = await freshUser();
    expectStatus(await loginAs(user.email, user.password, OTHER_ADDRESS), 200);
  });

  test('10 failures for one email from one address: the 11th attempt there is 429 even with the right password; the owner elsewhere is not locked out', async () => {
    const user = await freshUser();
    for (let i = 0; i < MAX_FAILURES; i++) {
      expectError(await loginAs(user.email, `pw-wrong-${unique()}`), 401, 'UNAUTHENTICATED');
    }
    expectThrottled(await loginAs(user.email, user.password));
    // The email is counted case-insensitively.
    expectThrottled(await loginAs(user.email.toUpperCase(), user.password));
    // The attacker cannot lock the owner out: from the owner's own address the right password works.
    expectStatus(await loginAs(user.email, user.password, OTHER_ADDRESS), 200);
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
    for (let i = 0; i < 5; i++) {
      await timed(`nobody-${unique()}@example.com`, unknownMs);
      await timed(user.email, wrongMs);
    }
    const ratio = median(unknownMs) / median(wrongMs);
    assert.ok(
      ratio > 0.5 && ratio < 2,
      `median unknown-email ${median(unknownMs).toFixed(1)} ms vs wrong-password ${median(wrongMs).toFixed(1)} ms (ratio ${ratio.toFixed(2)})`,
    );
    // Both paths really hash: far above a database round trip.
    assert.ok(median(unknownMs) > 10 && median(wrongMs) > 10, `${median(unknownMs)} / ${median(wrongMs)} ms`);
  });
});

describe('secrets', () => {
  test('no password, refresh token, JWT or bcrypt hash in the logs or in responses', () => {
    assertNoSecrets(ts.logs, client);
  });
});
