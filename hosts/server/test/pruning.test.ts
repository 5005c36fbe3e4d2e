import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { connect, PgAdvisoryLock, type Sql } from '@switchyard/postgres';
import { api, expectStatus, loginAdmin, seedTenant, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let ts: TestServer;
let tenant: Tenant;

before(async () => {
  // Batches of 2, so the five expired rows of each table below take three statements each.
  ts = await startTestServer({ PRUNE_BATCH_SIZE: '2' });
  // Runs are made by the tests (runOnce): the scheduled first run, a minute after start, would race them on a slow machine.
  ts.server.pruner.unschedule();
  const client = api(ts.base);
  tenant = await seedTenant(client, (await loginAdmin(client)).token, 'prune');
});
after(() => ts.stop());

const HOUR = 3_600_000;

/** Five rows past their cut-off and two before it in each table, written in SQL. */
async function seed(sql: Sql, label: string): Promise<void> {
  const now = Date.now();
  // The tokens belong to a live session (which the pruner keeps): only their own expiry matters.
  const [session] = await sql<{ id: string }[]>`
    INSERT INTO sessions (user_id, org_id, created_at_ms, expires_at_ms)
    VALUES (${tenant.admin.userId}, ${tenant.orgId}, ${now}, ${now + 31 * 24 * HOUR}) RETURNING id`;
  const sessionId = session!.id;
  // Single sign-on logins in flight and one-time codes hang off a provider.
  const [provider] = await sql<{ id: string }[]>`
    INSERT INTO auth_providers (id, org_id, provider_type, display_name, enabled, default_role, redirect_uris, settings, created_at_ms, updated_at_ms)
    VALUES (gen_random_uuid(), ${tenant.orgId}, 'saml', ${label}, true, 'org_member', '[]', '{}', ${now}, ${now}) RETURNING id`;
  const ssoLogin = (key: string, expiresAtMs: number) => sql`
    INSERT INTO sso_pending_logins (state_hash, provider_id, org_id, redirect_uri, created_at_ms, expires_at_ms)
    VALUES (${key}, ${provider!.id}, ${tenant.orgId}, 'https://example.com/acs', ${now - HOUR}, ${expiresAtMs})`;
  const ssoCode = (key: string, expiresAtMs: number) => sql`
    INSERT INTO sso_codes (code_hash, provider_id, user_id, org_id, expires_at_ms)
    VALUES (${key}, ${provider!.id}, ${tenant.admin.userId}, ${tenant.orgId}, ${expiresAtMs})`;
  for (let i = 0; i < 3; i += 1) await ssoLogin(`${label}-old-login-${i}`, now - i);
  for (let i = 0; i < 2; i += 1) await ssoCode(`${label}-old-code-${i}`, now - 1 - i);
  await ssoLogin(`${label}-live-login`, now + HOUR);
  await ssoCode(`${label}-live-code`, now + 60_000);
  for (let i = 0; i < 5; i += 1) {
    await sql`INSERT INTO idempotency_keys (environment_id, key, answer, expires_at_ms) VALUES (${tenant.environmentId}, ${`${label}-old-${i}`}, '{}', ${now - HOUR - i})`;
    await sql`
      INSERT INTO refresh_tokens (user_id, org_id, session_id, token_hash, created_at_ms, expires_at_ms)
      VALUES (${tenant.admin.userId}, ${tenant.orgId}, ${sessionId}, ${`${label}-old-${i}`}, ${now - 31 * 24 * HOUR}, ${now - HOUR - i})`;
    // The throttle window is 15 minutes: an hour-old failure no longer counts.
    await sql`INSERT INTO login_failures (subject, at_ms) VALUES (${`email:${label}-old-${i}@example.com`}, ${now - HOUR - i})`;
  }
  for (let i = 0; i < 2; i += 1) {
    await sql`INSERT INTO idempotency_keys (environment_id, key, answer, expires_at_ms) VALUES (${tenant.environmentId}, ${`${label}-live-${i}`}, '{}', ${now + HOUR})`;
    await sql`
      INSERT INTO refresh_tokens (user_id, org_id, session_id, token_hash, created_at_ms, expires_at_ms)
      VALUES (${tenant.admin.userId}, ${tenant.orgId}, ${sessionId}, ${`${label}-live-${i}`}, ${now}, ${now + HOUR})`;
    await sql`INSERT INTO login_failures (subject, at_ms) VALUES (${`email:${label}-live-${i}@example.com`}, ${now - 60_000})`;
  }
}

/** The seeded keys still stored, per table. */
async function remaining(sql: Sql, label: string): Promise<{ idempotency: string[]; refresh: string[]; failures: string[]; sso: string[] }> {
  const pattern = `${label}-%`;
  const idempotency = await sql<{ v: string }[]>`SELECT key AS v FROM idempotency_keys WHERE key LIKE ${pattern} ORDER BY 1`;
  const refresh = await sql<{ v: string }[]>`SELECT token_hash AS v FROM refresh_tokens WHERE token_hash LIKE ${pattern} ORDER BY 1`;
  const failures = await sql<{ v: string }[]>`SELECT subject AS v FROM login_failures WHERE subject LIKE ${`email:${pattern}`} ORDER BY 1`;
  const sso = await sql<{ v: string }[]>`
    SELECT state_hash AS v FROM sso_pending_logins WHERE state_hash LIKE ${pattern}
    UNION ALL SELECT code_hash FROM sso_codes WHERE code_hash LIKE ${pattern} ORDER BY 1`;
  return { idempotency: idempotency.map((r) => r.v), refresh: refresh.map((r) => r.v), failures: failures.map((r) => r.v), sso: sso.map((r) => r.v) };
}

describe('pruning expired rows (PostgreSQL)', () => {
  test("the server's pruner deletes expired idempotency answers, refresh tokens, old login failures and SSO logins and codes; live rows stay", async () => {
    await seed(ts.db.sql, 'p1');
    assert.equal(ts.server.pruner.batchSize, 2, 'PRUNE_BATCH_SIZE reaches the pruner');
    const report = await ts.server.pruner.runOnce();
    assert.ok(report, 'the lock was free');
    assert.deepEqual(report, { idempotencyKeys: 5, refreshTokens: 5, sessions: 0, invitations: 0, loginFailures: 5, ssoLogins: 5, auditEntries: 0, apiTokens: 0, webhookDeliveries: 0 });
    assert.deepEqual(await remaining(ts.db.sql, 'p1'), {
      idempotency: ['p1-live-0', 'p1-live-1'],
      refresh: ['p1-live-0', 'p1-live-1'],
      failures: ['email:p1-live-0@example.com', 'email:p1-live-1@example.com'],
      sso: ['p1-live-code', 'p1-live-login'],
    });
    // The live sessions still work: the tenant's refresh token was not touched.
    expectStatus(await api(ts.base).post('/v1/auth/refresh', { body: { refresh_token: tenant.member.refreshToken } }), 200);
  });

  test('while another instance holds the prune lock, this one skips and deletes nothing', async () => {
    await seed(ts.db.sql, 'p2');
    const otherInstance = connect(ts.db.url, { poolSize: 2 });
    try {
      let release = (): void => {};
      const gate = new Promise<void>((resolve) => (release = resolve));
      let entered = (): void => {};
      const holding = new Promise<void>((resolve) => (entered = resolve));
      const other = new PgAdvisoryLock(otherInstance, 'switchyard:prune').tryRun(async () => {
        entered();
        await gate;
      });
      await holding;
      assert.equal(await ts.server.pruner.runOnce(), null);
      assert.equal((await remaining(ts.db.sql, 'p2')).idempotency.length, 7, 'nothing deleted while skipped');
      release();
      assert.deepEqual(await other, { ran: true, value: undefined });
      assert.deepEqual(await ts.server.pruner.runOnce(), { idempotencyKeys: 5, refreshTokens: 5, sessions: 0, invitations: 0, loginFailures: 5, ssoLogins: 5, auditEntries: 0, apiTokens: 0, webhookDeliveries: 0 });
    } finally {
      await otherInstance.end({ timeout: 5 });
    }
  });

  test('two instances started pruning together: every expired row is deleted once, live ones stay', async () => {
    await seed(ts.db.sql, 'p3');
    const second = await ts.startAnotherInstance();
    const reports = await Promise.all([ts.server.pruner.runOnce(), second.pruner.runOnce()]);
    const ran = reports.filter((report) => report !== null);
    // One skips (the other holds the lock), or they ran one after the other: never side by side.
    const total = ran.reduce((sum, report) => sum + report!.idempotencyKeys, 0);
    assert.equal(total, 5, 'each expired row deleted once');
    assert.deepEqual((await remaining(ts.db.sql, 'p3')).idempotency, ['p3-live-0', 'p3-live-1']);
  });
});
