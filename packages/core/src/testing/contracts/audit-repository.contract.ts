import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AuditDraft, AuditEntry } from '../../model/entities.ts';
import type { AuditQuery } from '../../ports/audit-ports.ts';
import {
  MALFORMED_ID,
  rejectsWithCode,
  unique,
  UNKNOWN_ID,
  useRepositories,
  type MakeTenancyRepositories,
  type TenancyRepositories,
} from './tenancy-contract-support.ts';

const PROJECT = '11111111-1111-4111-8111-111111111111';
const ENV_A = '22222222-2222-4222-8222-222222222222';
const ENV_B = '33333333-3333-4333-8333-333333333333';

const entryFor = (orgId: string, atMs: number, overrides: Partial<AuditDraft> = {}): AuditDraft => ({
  orgId,
  atMs,
  actor: { type: 'user', id: 'user-1', email: 'ada@example.com' },
  action: 'flag.update',
  resourceType: 'flag',
  resourceId: `checkout-${atMs}`,
  projectId: PROJECT,
  environmentId: ENV_A,
  before: { enabled: false, rules: [] },
  after: { enabled: true, rules: [{ id: 'r1' }] },
  details: { tags: ['a', 'b'], note: null },
  ...overrides,
});

/** Every page of a query, following next_cursor. */
async function allPages(repos: TenancyRepositories, orgId: string, query: Omit<AuditQuery, 'cursor'>): Promise<AuditEntry[][]> {
  const pages: AuditEntry[][] = [];
  let cursor: string | null = null;
  do {
    const page = await repos.audit.list({ orgId }, { ...query, cursor });
    pages.push(page.items);
    cursor = page.nextCursor;
  } while (cursor !== null && pages.length < 100);
  return pages;
}

/** The behaviour every AuditRepository must show: append-only, newest first, per org, paged, filtered. */
export function auditRepositoryContract(name: string, makeRepos: MakeTenancyRepositories): void {
  describe(`AuditRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    test('append returns the entry with an id; list gives it back with every field', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const input = entryFor(org.id, 1_700_000_000_123);
      const entry = await repos().audit.append(input);
      assert.match(entry.id, /^[0-9a-f-]{36}$/);
      assert.deepEqual({ ...entry, id: undefined }, { ...input, id: undefined });
      assert.deepEqual(await repos().audit.list({ orgId: org.id }, { limit: 10 }), { items: [entry], nextCursor: null });
    });

    test('absent parts stay absent: no email, no project or environment, no before/after', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const input = entryFor(org.id, 1_000, { actor: { type: 'system', id: 'bootstrap' }, projectId: null, environmentId: null, before: null, after: null, details: {} });
      const entry = await repos().audit.append(input);
      assert.deepEqual({ ...entry, id: undefined }, { ...input, id: undefined });
      assert.deepEqual((await repos().audit.list({ orgId: org.id }, { limit: 1 })).items, [entry]);
    });

    test('newest first by atMs, equal times newest append first; limit and cursor walk every entry once', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const middle = await repos().audit.append(entryFor(org.id, 2_000, { action: 'b' }));
      const oldest = await repos().audit.append(entryFor(org.id, 1_000, { action: 'a' }));
      const newest = await repos().audit.append(entryFor(org.id, 3_000, { action: 'c' }));
      const sameTimeFirst = await repos().audit.append(entryFor(org.id, 2_000, { action: 'd' }));
      const sameTimeSecond = await repos().audit.append(entryFor(org.id, 2_000, { action: 'e' }));
      const order = [newest, sameTimeSecond, sameTimeFirst, middle, oldest];
      assert.deepEqual((await repos().audit.list({ orgId: org.id }, { limit: 10 })).items, order);
      const pages = await allPages(repos(), org.id, { limit: 2 });
      assert.deepEqual(pages, [order.slice(0, 2), order.slice(2, 4), order.slice(4)]);
      const exact = await allPages(repos(), org.id, { limit: 5 });
      assert.deepEqual(exact, [order], 'a full last page says there is no next one');
      assert.deepEqual((await repos().audit.list({ orgId: org.id }, { limit: 0 })).items, []);
    });

    test('filters: resource type and id, project, environment with or without project-level entries', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const inA = await repos().audit.append(entryFor(org.id, 1_000, { resourceId: 'checkout', environmentId: ENV_A }));
      const inB = await repos().audit.append(entryFor(org.id, 2_000, { resourceId: 'checkout', environmentId: ENV_B }));
      const definition = await repos().audit.append(entryFor(org.id, 3_000, { resourceId: 'checkout', environmentId: null }));
      const otherFlag = await repos().audit.append(entryFor(org.id, 4_000, { resourceId: 'banner', environmentId: ENV_A }));
      const segment = await repos().audit.append(entryFor(org.id, 5_000, { resourceType: 'segment', resourceId: 'checkout', environmentId: ENV_A }));
      const project = await repos().audit.append(entryFor(org.id, 6_000, { resourceType: 'project', resourceId: PROJECT, projectId: PROJECT, environmentId: null }));
      const list = async (query: Omit<AuditQuery, 'limit'>) => (await repos().audit.list({ orgId: org.id }, { limit: 50, ...query })).items;
      assert.deepEqual(await list({ resourceType: 'flag' }), [otherFlag, definition, inB, inA]);
      assert.deepEqual(await list({ resourceType: 'flag', resourceId: 'checkout' }), [definition, inB, inA]);
      assert.deepEqual(await list({ environmentId: ENV_A }), [segment, otherFlag, inA]);
      assert.deepEqual(await list({ resourceType: 'flag', resourceId: 'checkout', projectId: PROJECT, environmentId: ENV_A, includeProjectLevel: true }), [definition, inA]);
      assert.deepEqual(await list({ resourceId: PROJECT }), [project]);
      assert.deepEqual(await list({ projectId: UNKNOWN_ID }), []);
      const pages = await allPages(repos(), org.id, { resourceType: 'flag', resourceId: 'checkout', limit: 1 });
      assert.deepEqual(pages, [[definition], [inB], [inA]], 'the cursor keeps the filter');
    });

    test('an org sees only its own entries', async () => {
      const mine = await repos().orgs.create({ name: unique('mine') });
      const theirs = await repos().orgs.create({ name: unique('theirs') });
      const own = await repos().audit.append(entryFor(mine.id, 5_000));
      const foreign = await repos().audit.append(entryFor(theirs.id, 6_000));
      assert.deepEqual((await repos().audit.list({ orgId: mine.id }, { limit: 10 })).items, [own]);
      assert.deepEqual((await repos().audit.list({ orgId: theirs.id }, { limit: 10 })).items, [foreign]);
      assert.deepEqual((await repos().audit.list({ orgId: UNKNOWN_ID }, { limit: 10 })).items, []);
      assert.deepEqual((await repos().audit.list({ orgId: MALFORMED_ID }, { limit: 10 })).items, []);
    });

    test('a cursor that no page handed out is INVALID_ARGUMENT', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      // Not base64url; base64url of JSON; base64url of "1.2" with padding.
      for (const cursor of ['not a cursor', 'eyJ4IjoxfQ', 'MS4y=']) {
        await rejectsWithCode(repos().audit.list({ orgId: org.id }, { limit: 10, cursor }), 'INVALID_ARGUMENT');
      }
    });

    test('a malformed org id is NOT_FOUND on append, not a driver error', async () => {
      await rejectsWithCode(repos().audit.append(entryFor(MALFORMED_ID, 7_000)), 'NOT_FOUND');
    });

    test('changing a returned entry does not change the stored one', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const entry = await repos().audit.append(entryFor(org.id, 8_000));
      (entry.after as { enabled: boolean }).enabled = false;
      entry.details.note = 'tampered';
      const [stored] = (await repos().audit.list({ orgId: org.id }, { limit: 1 })).items;
      assert.deepEqual(stored?.after, { enabled: true, rules: [{ id: 'r1' }] });
      assert.equal(stored?.details.note, null);
    });
  });
}
