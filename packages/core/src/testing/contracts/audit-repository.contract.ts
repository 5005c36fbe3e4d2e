import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AuditEntry } from '../../model/entities.ts';
import {
  MALFORMED_ID,
  rejectsWithCode,
  unique,
  UNKNOWN_ID,
  useRepositories,
  type MakeTenancyRepositories,
} from './tenancy-contract-support.ts';

const entryFor = (orgId: string, atMs: number, action = 'flag.update'): Omit<AuditEntry, 'id'> => ({
  orgId,
  actor: 'user-1',
  action,
  resourceType: 'flag',
  resourceId: `checkout-${atMs}`,
  atMs,
  details: { before: { enabled: false }, after: { enabled: true }, tags: ['a', 'b'], note: null },
});

/** The behaviour every AuditRepository must show: append-only, newest first, per org. */
export function auditRepositoryContract(name: string, makeRepos: MakeTenancyRepositories): void {
  describe(`AuditRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    test('append returns the entry with an id; list gives it back with every field', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const input = entryFor(org.id, 1_700_000_000_123);
      const entry = await repos().audit.append(input);
      assert.match(entry.id, /^[0-9a-f-]{36}$/);
      assert.deepEqual({ ...entry, id: undefined }, { ...input, id: undefined });
      assert.deepEqual(await repos().audit.list({ orgId: org.id }, { limit: 10 }), [entry]);
    });

    test('list is newest first by atMs and honours the limit', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const middle = await repos().audit.append(entryFor(org.id, 2_000, 'b'));
      const oldest = await repos().audit.append(entryFor(org.id, 1_000, 'a'));
      const newest = await repos().audit.append(entryFor(org.id, 3_000, 'c'));
      assert.deepEqual(await repos().audit.list({ orgId: org.id }, { limit: 10 }), [newest, middle, oldest]);
      assert.deepEqual(await repos().audit.list({ orgId: org.id }, { limit: 2 }), [newest, middle]);
      assert.deepEqual(await repos().audit.list({ orgId: org.id }, { limit: 0 }), []);
    });

    test("an org sees only its own entries", async () => {
      const mine = await repos().orgs.create({ name: unique('mine') });
      const theirs = await repos().orgs.create({ name: unique('theirs') });
      const own = await repos().audit.append(entryFor(mine.id, 5_000));
      const foreign = await repos().audit.append(entryFor(theirs.id, 6_000));
      assert.deepEqual(await repos().audit.list({ orgId: mine.id }, { limit: 10 }), [own]);
      assert.deepEqual(await repos().audit.list({ orgId: theirs.id }, { limit: 10 }), [foreign]);
      assert.deepEqual(await repos().audit.list({ orgId: UNKNOWN_ID }, { limit: 10 }), []);
      assert.deepEqual(await repos().audit.list({ orgId: MALFORMED_ID }, { limit: 10 }), []);
    });

    test('a malformed org id is NOT_FOUND on append, not a driver error', async () => {
      await rejectsWithCode(repos().audit.append(entryFor(MALFORMED_ID, 7_000)), 'NOT_FOUND');
    });

    test('changing a returned entry does not change the stored one', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const entry = await repos().audit.append(entryFor(org.id, 8_000));
      entry.details.after = 'tampered';
      const [stored] = await repos().audit.list({ orgId: org.id }, { limit: 1 });
      assert.deepEqual(stored?.details.after, { enabled: true });
    });
  });
}
