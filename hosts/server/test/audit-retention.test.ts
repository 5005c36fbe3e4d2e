import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { AuditDraft } from '@switchyard/core';
import { auditLogPath, flagHistoryPath, readAll } from './support/audit-log.ts';
import { api, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Json, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Attacks on the change history's bound (docs/contract.md "Change history"): an org writing without
 * pause is cut back to the per-org cap by the server's own pruner, and entries past the retention
 * period go, in real PostgreSQL, while other orgs' entries and the listing's cursors stay sound.
 */

const CAP = 50;
const RETENTION_DAYS = 30;
const DAY = 86_400_000;

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;

before(async () => {
  // Batches of 7, so the excess and the expired entries each take several statements.
  ts = await startTestServer({ AUDIT_MAX_ENTRIES_PER_ORG: String(CAP), AUDIT_RETENTION_DAYS: String(RETENTION_DAYS), PRUNE_BATCH_SIZE: '7' });
  // Runs are made by the tests (runOnce): the scheduled first run, a minute after start, would race them on a slow machine.
  ts.server.pruner.unschedule();
  client = api(ts.base);
  root = await loginAdmin(client);
});
after(() => ts.stop());

const logOf = (tenant: Tenant, limit = 200) => readAll(client, tenant.admin.token, (q) => auditLogPath(tenant.orgId, q), { limit });
const ids = (entries: Json[]): string[] => entries.map((entry) => entry.id);

/** A flag of the tenant's, switched on and off `times` times through REST: one entry per switch. */
async function flood(tenant: Tenant, key: string, times: number): Promise<void> {
  const token = tenant.admin.token;
  const flag = { key, value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], enabled: false, off_variant_key: 'off', rules: [] };
  expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token, body: { flag } }), 201, 'flag');
  for (let i = 0; i < times; i++) {
    expectStatus(await client.request('PUT', `/v1/environments/${tenant.environmentId}/flags/${key}`, { token, body: { enabled: i % 2 === 0 } }), 200, 'switch');
  }
}

/** An entry written straight through the server's repository, at a chosen time. */
function entryAt(tenant: Tenant, atMs: number, resourceId: string): AuditDraft {
  return {
    orgId: tenant.orgId,
    atMs,
    actor: { type: 'user', id: tenant.admin.userId, email: tenant.admin.email },
    action: 'flag.update',
    resourceType: 'flag',
    resourceId,
    projectId: tenant.projectId,
    environmentId: tenant.environmentId,
    before: { enabled: false },
    after: { enabled: true },
    details: {},
  };
}

describe('the per-org cap (PostgreSQL)', () => {
  let a: Tenant;
  let b: Tenant;
  let aBefore: Json[];
  let bBefore: Json[];
  let cursorAtDeleted: string;
  let cursorAtKept: string;

  before(async () => {
    a = await seedTenant(client, root.token, 'cap-a');
    b = await seedTenant(client, root.token, 'cap-b');
    // Org B: a few writes of its own, and entries 29 days old (old, yet within the retention period).
    await flood(b, `b-${unique()}`, 3);
    for (let i = 0; i < 5; i++) await ts.server.repos.audit.append(entryAt(b, Date.now() - (RETENTION_DAYS - 1) * DAY + i, `b-old-${i}`));
    // Org A writes well past the cap through the REST API.
    await flood(a, `a-${unique()}`, CAP + 30);
    aBefore = await logOf(a);
    bBefore = await logOf(b);
    // Cursors handed out before the pruner runs: one at the 55th newest entry (beyond the cap), one at the 20th.
    cursorAtDeleted = expectStatus(await client.get(auditLogPath(a.orgId, { limit: 55 }), { token: a.admin.token }), 200).next_cursor;
    cursorAtKept = expectStatus(await client.get(auditLogPath(a.orgId, { limit: 20 }), { token: a.admin.token }), 200).next_cursor;
  });

  test("the pruner leaves the over-cap org exactly its newest `cap` entries and never touches another org's", async () => {
    assert.ok(aBefore.length > CAP + 30, `org A wrote ${aBefore.length} entries`);
    assert.ok(bBefore.length < CAP, `org B (${bBefore.length} entries) is under the cap`);
    const report = await ts.server.pruner.runOnce();
    assert.ok(report, 'the lock was free');
    assert.equal(report.auditEntries, aBefore.length - CAP);
    const aAfter = await logOf(a);
    assert.equal(aAfter.length, CAP);
    assert.deepEqual(ids(aAfter), ids(aBefore.slice(0, CAP)), 'the newest entries stay, in order');
    assert.deepEqual(ids(await logOf(b)), ids(bBefore), "org B's entries, the 29-day-old ones included, are all there");
    assert.ok(
      ts.logs.some((line) => line.includes('over the per-org cap') && line.includes(a.orgId)),
      'the log names the org that went over the cap',
    );
  });

  test('a cursor at a pruned entry gives an empty last page; one at a kept entry gives the older entries left', async () => {
    // Runs after the pruning above.
    const token = a.admin.token;
    const fromDeleted = expectStatus(await client.get(auditLogPath(a.orgId, { limit: 10, cursor: cursorAtDeleted }), { token }), 200, 'page after a pruned entry');
    assert.deepEqual(fromDeleted, { entries: [], next_cursor: null });
    const rest = await readAll(client, token, (q) => auditLogPath(a.orgId, { cursor: cursorAtKept, ...q }), { limit: 7 });
    assert.deepEqual(ids(rest), ids(aBefore.slice(20, CAP)), 'the 21st to the 50th newest, page after page');
  });

  test("a flag history cursor at a pruned entry is an empty page too, not an error", async () => {
    const key = `hist-${unique()}`;
    await flood(a, key, 8);
    const token = a.admin.token;
    const page = expectStatus(await client.get(flagHistoryPath(a.environmentId, key, { limit: 8 }), { token }), 200);
    assert.ok(page.next_cursor, 'the flag has a ninth entry (its creation)');
    // Another CAP writes of org A push this flag's entries beyond the cap.
    await flood(a, `more-${unique()}`, CAP);
    await ts.server.pruner.runOnce();
    assert.equal((await logOf(a)).length, CAP);
    const after = expectStatus(await client.get(flagHistoryPath(a.environmentId, key, { cursor: page.next_cursor }), { token }), 200);
    assert.deepEqual(after, { entries: [], next_cursor: null });
    assert.deepEqual(await readAll(client, token, (q) => flagHistoryPath(a.environmentId, key, q)), []);
  });

  test('between runs an org may go over the cap by what it writes; the next run cuts it back', async () => {
    await flood(a, `burst-${unique()}`, 4);
    const over = await logOf(a);
    // The flag's creation (its definition and its state in the environment) and the four switches.
    assert.equal(over.length, CAP + 6, 'over the cap until the next run');
    assert.equal((await ts.server.pruner.runOnce())?.auditEntries, 6);
    assert.deepEqual(ids(await logOf(a)), ids(over.slice(0, CAP)));
  });
});

describe('retention (PostgreSQL)', () => {
  test('entries older than the retention period go, in every org; newer ones stay', async () => {
    const c = await seedTenant(client, root.token, 'ret-c');
    const d = await seedTenant(client, root.token, 'ret-d');
    const now = Date.now();
    const ages = [400, RETENTION_DAYS + 1, RETENTION_DAYS - 1, 1];
    for (const tenant of [c, d]) for (const days of ages) await ts.server.repos.audit.append(entryAt(tenant, now - days * DAY, `${days}-days`));
    const before = { c: await logOf(c), d: await logOf(d) };
    const report = await ts.server.pruner.runOnce();
    assert.equal(report?.auditEntries, 4, 'two entries of each org were past the retention period');
    for (const [tenant, entries] of [[c, before.c], [d, before.d]] as const) {
      const expected = entries.filter((entry) => entry.resource_id !== '400-days' && entry.resource_id !== `${RETENTION_DAYS + 1}-days`);
      assert.equal(expected.length, entries.length - 2);
      assert.deepEqual(ids(await logOf(tenant)), ids(expected));
    }
  });
});
