import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AuditDraft, AuditEntry } from '../../model/entities.ts';
import { decodeAuditCursor, type AuditQuery } from '../../ports/audit-ports.ts';
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

/** The atMs of an org's entries, newest first, as the listing gives them. */
async function timesOf(repos: TenancyRepositories, orgId: string): Promise<number[]> {
  return (await repos.audit.list({ orgId }, { limit: 1_000 })).items.map((entry) => entry.atMs);
}

/** The behaviour every AuditRepository must show: append-only for writers, newest first, per org, paged, filtered, pruned from the old end. */
export function auditRepositoryContract(name: string, makeRepos: MakeTenancyRepositories): void {
  describe(`AuditRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    test('append returns the entry with an id; list gives it back with every field', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const input = entryFor(org.id, 1_700_000_000_123);
      const entry = await repos().audit.append(input);
      assert.match(entry.id, /^[0-9a-f-]{36}$/);
      assert.deepEqual({ ...entry, id: undefined }, { ...input, comment: null, id: undefined });
      assert.deepEqual(await repos().audit.list({ orgId: org.id }, { limit: 10 }), { items: [entry], nextCursor: null });
    });

    test("get finds an entry by id in its own org only; an unknown or malformed id is null", async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const other = await repos().orgs.create({ name: unique('org') });
      const entry = await repos().audit.append(entryFor(org.id, 3_000));
      assert.deepEqual(await repos().audit.get({ orgId: org.id }, entry.id), entry);
      assert.equal(await repos().audit.get({ orgId: other.id }, entry.id), null);
      assert.equal(await repos().audit.get({ orgId: org.id }, '00000000-0000-4000-8000-000000000000'), null);
      assert.equal(await repos().audit.get({ orgId: org.id }, 'not-a-uuid'), null);
    });

    test('an API token actor keeps its name, and a comment is kept', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const input = entryFor(org.id, 2_000, { actor: { type: 'api_token', id: 'token-1', name: 'deploy bot' } });
      const entry = await repos().audit.append({ ...input, comment: 'release 1.2' });
      assert.deepEqual(entry.actor, { type: 'api_token', id: 'token-1', name: 'deploy bot' });
      assert.equal(entry.comment, 'release 1.2');
      assert.deepEqual((await repos().audit.list({ orgId: org.id }, { limit: 1 })).items, [entry]);
    });

    test('absent parts stay absent: no email, no project or environment, no before/after', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const input = entryFor(org.id, 1_000, { actor: { type: 'system', id: 'bootstrap' }, projectId: null, environmentId: null, before: null, after: null, details: {} });
      const entry = await repos().audit.append(input);
      assert.deepEqual({ ...entry, id: undefined }, { ...input, comment: null, id: undefined });
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

    test('excluded resource types are left out before the page is cut, on every page', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const appended: AuditEntry[] = [];
      // Newest first below: flag 6, invitation 5, provider 4, flag 3, invitation 2, flag 1.
      for (const [at, resourceType] of [[1, 'flag'], [2, 'invitation'], [3, 'flag'], [4, 'auth_provider'], [5, 'invitation'], [6, 'flag']] as const) {
        appended.push(await repos().audit.append(entryFor(org.id, at * 1_000, { resourceType })));
      }
      const [flag1, , flag3, , , flag6] = appended;
      const excludeResourceTypes = ['invitation', 'auth_provider'];
      assert.deepEqual(await allPages(repos(), org.id, { excludeResourceTypes, limit: 2 }), [[flag6, flag3], [flag1]], 'full pages of what is left');
      assert.deepEqual(await allPages(repos(), org.id, { excludeResourceTypes, limit: 1 }), [[flag6], [flag3], [flag1]]);
      assert.deepEqual((await repos().audit.list({ orgId: org.id }, { resourceType: 'invitation', excludeResourceTypes, limit: 10 })).items, []);
      assert.equal((await repos().audit.list({ orgId: org.id }, { excludeResourceTypes: [], limit: 10 })).items.length, 6, 'an empty list excludes nothing');
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

  // Each pruning test has a store of its own: pruneOlderThan and findOverCap see every org.
  const pruningTest = (title: string, body: (repos: TenancyRepositories) => Promise<void>): void => {
    describe(`AuditRepository contract: ${name}: pruning`, () => {
      const repos = useRepositories(makeRepos);
      test(title, () => body(repos()));
    });
  };

  pruningTest('pruneOlderThan deletes entries of every org older than the cut-off, oldest first, at most limit per call', async (repos) => {
    const a = await repos.orgs.create({ name: unique('a') });
    const b = await repos.orgs.create({ name: unique('b') });
    for (const atMs of [1_000, 2_000, 3_000, 4_000]) await repos.audit.append(entryFor(a.id, atMs));
    for (const atMs of [500, 2_500, 3_500]) await repos.audit.append(entryFor(b.id, atMs));
    assert.equal(await repos.audit.pruneOlderThan(3_000, 0), 0, 'a limit of 0 deletes nothing');
    assert.equal(await repos.audit.pruneOlderThan(3_000, 2), 2, 'the batch limit holds');
    assert.deepEqual([await timesOf(repos, a.id), await timesOf(repos, b.id)], [[4_000, 3_000, 2_000], [3_500, 2_500]], 'the two oldest went first');
    assert.equal(await repos.audit.pruneOlderThan(3_000, 10), 2);
    assert.equal(await repos.audit.pruneOlderThan(3_000, 10), 0, 'nothing older is left');
    assert.deepEqual([await timesOf(repos, a.id), await timesOf(repos, b.id)], [[4_000, 3_000], [3_500]], 'an entry at the cut-off stays');
  });

  pruningTest('findOverCap reports the orgs holding more than maxEntries, in id order, a page of orgs at a time', async (repos) => {
    const orgs = await Promise.all(['x', 'y', 'z'].map((label) => repos.orgs.create({ name: unique(label) })));
    const counts = [5, 3, 6];
    for (const [i, org] of orgs.entries()) for (let n = 0; n < counts[i]!; n++) await repos.audit.append(entryFor(org.id, 1_000 + n));
    // Appended in time order, so the newest entry beyond a cap of 3 is the 4th newest: where a page of 4 ends.
    const fourthNewest = async (orgId: string) => decodeAuditCursor((await repos.audit.list({ orgId }, { limit: 4 })).nextCursor!).seq;
    const expected = await Promise.all(
      orgs.filter((_, i) => counts[i]! > 3).map(async (org) => ({ orgId: org.id, newestExcessSeq: await fourthNewest(org.id) })),
    );
    expected.sort((p, q) => (p.orgId < q.orgId ? -1 : 1));
    const all = await repos.audit.findOverCap(3, null, 10);
    assert.deepEqual(all, { overCap: expected, nextAfterOrgId: null }, 'an org at exactly the cap is not over it');
    const ids = orgs.map((org) => org.id).sort();
    const first = await repos.audit.findOverCap(3, null, 2);
    assert.equal(first.nextAfterOrgId, ids[1], 'a full page says where the next starts');
    const second = await repos.audit.findOverCap(3, first.nextAfterOrgId, 2);
    assert.equal(second.nextAfterOrgId, null, 'a short page is the last');
    assert.deepEqual([...first.overCap, ...second.overCap], expected);
    assert.deepEqual(await repos.audit.findOverCap(6, null, 10), { overCap: [], nextAfterOrgId: null });
    assert.deepEqual(await repos.audit.findOverCap(3, ids[2]!, 10), { overCap: [], nextAfterOrgId: null }, 'no org after the last');
  });

  pruningTest("pruneThrough deletes one org's entries appended up to the position, first appended first, in batches; others untouched", async (repos) => {
    const org = await repos.orgs.create({ name: unique('org') });
    const other = await repos.orgs.create({ name: unique('other') });
    for (const atMs of [1_000, 2_000, 2_000, 2_000, 3_000]) await repos.audit.append(entryFor(org.id, atMs, { action: `at-${atMs}` }));
    for (const atMs of [500, 2_000]) await repos.audit.append(entryFor(other.id, atMs));
    const before = (await repos.audit.list({ orgId: org.id }, { limit: 10 })).items;
    const { overCap } = await repos.audit.findOverCap(2, null, 10);
    assert.deepEqual(overCap.map((found) => found.orgId), [org.id]);
    // Appended after the position was read, with an older time (another instance's clock): it comes
    // after the position in append order, so it is never part of the excess.
    const later = await repos.audit.append(entryFor(org.id, 1_500, { action: 'later-but-earlier-clock' }));
    const through = overCap[0]!.newestExcessSeq;
    assert.equal(await repos.audit.pruneThrough(org.id, through, 0), 0);
    assert.equal(await repos.audit.pruneThrough(org.id, through, 2), 2);
    assert.equal(await repos.audit.pruneThrough(org.id, through, 2), 1);
    assert.equal(await repos.audit.pruneThrough(org.id, through, 2), 0);
    // The two last appended of the five stay (the 3,000 entry and the last of the three at 2,000),
    // and the one appended since.
    assert.deepEqual((await repos.audit.list({ orgId: org.id }, { limit: 10 })).items, [...before.slice(0, 2), later]);
    assert.deepEqual(await timesOf(repos, other.id), [2_000, 500], "the other org's entries, older ones included, are all there");
  });

  pruningTest('after pruning, a page from a cursor gives the older entries left, and an empty last page where none is', async (repos) => {
    const org = await repos.orgs.create({ name: unique('org') });
    for (let n = 1; n <= 6; n++) await repos.audit.append(entryFor(org.id, n * 1_000));
    const atSecond = (await repos.audit.list({ orgId: org.id }, { limit: 2 })).nextCursor;
    const atFourth = (await repos.audit.list({ orgId: org.id }, { limit: 4 })).nextCursor;
    // Retention takes 1,000 and 2,000; the cap of 3 then takes 3,000 (the 4th newest, the cursor's entry).
    assert.equal(await repos.audit.pruneOlderThan(2_500, 10), 2);
    const { overCap } = await repos.audit.findOverCap(3, null, 10);
    assert.equal(await repos.audit.pruneThrough(org.id, overCap[0]!.newestExcessSeq, 10), 1);
    const fromSecond = await repos.audit.list({ orgId: org.id }, { limit: 10, cursor: atSecond });
    assert.deepEqual([fromSecond.items.map((entry) => entry.atMs), fromSecond.nextCursor], [[4_000], null]);
    assert.deepEqual(await repos.audit.list({ orgId: org.id }, { limit: 10, cursor: atFourth }), { items: [], nextCursor: null }, "the cursor's own entry is gone");
  });
}
