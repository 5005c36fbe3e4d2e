import assert from 'node:assert/strict';
import type { SegmentInput } from '../../ports/flag-ports.ts';
import type { Page } from '../../ports/scopes.ts';
import { ORDERED_KEYS, rejectsWith, settleRace, type ContractCheck } from './flag-segment-fixture.ts';

const listSegment = (key: string): SegmentInput => ({ key, context_type: 'user', kind: 'list' });
const numbered = (prefix: string, from: number, to: number): string[] =>
  Array.from({ length: to - from }, (_, i) => `${prefix}${String(from + i).padStart(6, '0')}`);

/**
 * The member-list cases of the SegmentRepository contract (registered by segmentRepositoryContract
 * inside its describe block): changeMembers, replaceMembers, listMembers, checkMembers.
 */
export function segmentMembersContract(check: ContractCheck): void {
  check('changeMembers keeps exact counts and bumps the version', async ({ repos, scopes }) => {
    await repos.segments.create(scopes.env, listSegment('list'));
    const first = await repos.segments.changeMembers(scopes.env, 'list', { add_included: ['a', 'b', 'c'], add_excluded: ['x'] });
    assert.deepEqual([first.included_count, first.excluded_count, first.version], [3, 1, 2]);
    // Adding a member again (or twice in one call) does not double count.
    const again = await repos.segments.changeMembers(scopes.env, 'list', { add_included: ['a', 'd', 'd'], add_excluded: ['x'] });
    assert.deepEqual([again.included_count, again.excluded_count, again.version], [4, 1, 3]);
    // Removing a key that is not a member does not go negative.
    const removed = await repos.segments.changeMembers(scopes.env, 'list', {
      remove_included: ['b', 'never', 'b'],
      remove_excluded: ['x', 'x', 'ghost'],
    });
    assert.deepEqual([removed.included_count, removed.excluded_count, removed.version], [3, 0, 4]);
    const emptied = await repos.segments.changeMembers(scopes.env, 'list', { remove_excluded: ['x'] });
    assert.deepEqual([emptied.included_count, emptied.excluded_count, emptied.version], [3, 0, 5]);
    assert.deepEqual(await repos.segments.get(scopes.env, 'list'), emptied);
    const members = await repos.segments.listMembers(scopes.env, 'list', 'included', { limit: 10 });
    assert.deepEqual(members, { items: ['a', 'c', 'd'], nextCursor: null });
  });

  check('changeMembers applies removals before additions, per list', async ({ repos, scopes }) => {
    await repos.segments.create(scopes.env, listSegment('order'));
    await repos.segments.changeMembers(scopes.env, 'order', { add_included: ['kept'] });
    const changed = await repos.segments.changeMembers(scopes.env, 'order', {
      remove_included: ['kept', 'fresh'],
      add_included: ['kept', 'fresh'],
      add_excluded: ['kept'],
    });
    assert.deepEqual([changed.included_count, changed.excluded_count], [2, 1]);
    assert.deepEqual((await repos.segments.listMembers(scopes.env, 'order', 'included', { limit: 5 })).items, ['fresh', 'kept']);
    assert.deepEqual((await repos.segments.listMembers(scopes.env, 'order', 'excluded', { limit: 5 })).items, ['kept']);
  });

  check('changeMembers is NOT_FOUND for an unknown segment and FAILED_PRECONDITION for a rule segment', async ({ repos, scopes }) => {
    await rejectsWith(repos.segments.changeMembers(scopes.env, 'nope', { add_included: ['a'] }), 'NOT_FOUND');
    await repos.segments.create(scopes.env, { key: 'rule', context_type: 'user', kind: 'rule', conditions: [] });
    await rejectsWith(repos.segments.changeMembers(scopes.env, 'rule', { add_included: ['a'] }), 'FAILED_PRECONDITION');
    const rule = await repos.segments.get(scopes.env, 'rule');
    assert.deepEqual([rule?.included_count, rule?.version], [0, 1]);
    // A rule segment has no member lists: a list-check of it answers false, not null.
    assert.deepEqual(await repos.segments.checkMembers(scopes.env, [{ segmentKey: 'rule', contextKey: 'a' }]), [false]);
  });

  check('concurrent member changes keep the counts exact', async ({ repos, scopes }) => {
    await repos.segments.create(scopes.env, listSegment('busy'));
    const outcome = await settleRace([
      repos.segments.changeMembers(scopes.env, 'busy', { add_included: numbered('k', 0, 300) }),
      repos.segments.changeMembers(scopes.env, 'busy', { add_included: numbered('k', 200, 500), add_excluded: ['k000001'] }),
      repos.segments.changeMembers(scopes.env, 'busy', { add_included: numbered('k', 450, 600) }),
    ]);
    assert.deepEqual(outcome, { fulfilled: 3, codes: [] });
    const segment = await repos.segments.get(scopes.env, 'busy');
    assert.deepEqual([segment?.included_count, segment?.excluded_count, segment?.version], [600, 1, 4]);
  });

  check('listMembers pages in key order with the last key as cursor', async ({ repos, scopes }) => {
    await repos.segments.create(scopes.env, listSegment('paged'));
    const keys = numbered('user-', 0, 25);
    const shuffled = [...keys.filter((_, i) => i % 2 === 1), ...keys.filter((_, i) => i % 2 === 0).reverse()];
    await repos.segments.changeMembers(scopes.env, 'paged', { add_included: shuffled, add_excluded: ['excluded-only'] });
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const page: Page<string> = await repos.segments.listMembers(scopes.env, 'paged', 'included', { cursor, limit: 10 });
      pages.push(page.items);
      if (page.nextCursor !== null) assert.equal(page.nextCursor, page.items[page.items.length - 1]);
      cursor = page.nextCursor;
    } while (cursor !== null);
    assert.deepEqual(pages, [keys.slice(0, 10), keys.slice(10, 20), keys.slice(20)]);
    // A last page that is exactly full still ends the listing.
    const exact = await repos.segments.listMembers(scopes.env, 'paged', 'included', { cursor: keys[14], limit: 10 });
    assert.deepEqual(exact, { items: keys.slice(15), nextCursor: null });
    // The cursor need not be a member: the page starts after it.
    const between = await repos.segments.listMembers(scopes.env, 'paged', 'included', { cursor: 'user-000003x', limit: 2 });
    assert.deepEqual(between, { items: ['user-000004', 'user-000005'], nextCursor: 'user-000005' });
    assert.deepEqual(await repos.segments.listMembers(scopes.env, 'paged', 'excluded', { limit: 10 }), { items: ['excluded-only'], nextCursor: null });
    await rejectsWith(repos.segments.listMembers(scopes.env, 'paged', 'included', { limit: 0 }), 'INVALID_ARGUMENT');
    await rejectsWith(repos.segments.listMembers(scopes.env, 'nope', 'included', { limit: 10 }), 'NOT_FOUND');
  });

  check('listMembers orders by code point whatever the locale', async ({ repos, scopes }) => {
    await repos.segments.create(scopes.env, listSegment('unicode'));
    await repos.segments.changeMembers(scopes.env, 'unicode', { add_included: [...ORDERED_KEYS].reverse() });
    const first = await repos.segments.listMembers(scopes.env, 'unicode', 'included', { limit: 4 });
    assert.deepEqual(first, { items: ORDERED_KEYS.slice(0, 4), nextCursor: ORDERED_KEYS[3] });
    const rest = await repos.segments.listMembers(scopes.env, 'unicode', 'included', { cursor: first.nextCursor, limit: 4 });
    assert.deepEqual(rest, { items: ORDERED_KEYS.slice(4), nextCursor: null });
  });

  check('checkMembers answers each pair in order: excluded wins, unknown segment null', async ({ repos, scopes }) => {
    await repos.segments.create(scopes.env, listSegment('beta'));
    await repos.segments.create(scopes.env, listSegment('staff'));
    await repos.segments.changeMembers(scopes.env, 'beta', { add_included: ['ann', 'bob', 'eve'], add_excluded: ['eve', 'zed'] });
    await repos.segments.changeMembers(scopes.env, 'staff', { add_included: ['bob'] });
    // The same key in the sibling environment's segment of the same name must not leak in.
    await repos.segments.create(scopes.otherEnvSameProject, listSegment('beta'));
    await repos.segments.changeMembers(scopes.otherEnvSameProject, 'beta', { add_included: ['carl'] });
    const answers = await repos.segments.checkMembers(scopes.env, [
      { segmentKey: 'beta', contextKey: 'ann' },
      { segmentKey: 'beta', contextKey: 'eve' },
      { segmentKey: 'beta', contextKey: 'zed' },
      { segmentKey: 'beta', contextKey: 'carl' },
      { segmentKey: 'unknown', contextKey: 'ann' },
      { segmentKey: 'staff', contextKey: 'bob' },
      { segmentKey: 'staff', contextKey: 'ann' },
      { segmentKey: 'beta', contextKey: 'ann' },
      { segmentKey: 'BETA', contextKey: 'ann' },
    ]);
    assert.deepEqual(answers, [true, false, false, false, null, true, false, true, null]);
    assert.deepEqual(await repos.segments.checkMembers(scopes.env, []), []);
    assert.deepEqual(await repos.segments.checkMembers(scopes.otherEnvSameProject, [{ segmentKey: 'beta', contextKey: 'carl' }]), [true]);
  });

  check('a 20,000-key add in one call keeps counts and membership exact', async ({ repos, scopes }) => {
    await repos.segments.create(scopes.env, listSegment('big'));
    const keys = numbered('ctx-', 0, 20_000);
    const added = await repos.segments.changeMembers(scopes.env, 'big', { add_included: keys, add_excluded: keys.slice(0, 100) });
    assert.deepEqual([added.included_count, added.excluded_count, added.version], [20_000, 100, 2]);
    // Half of them again plus 5,000 new ones: only the new ones count.
    const more = await repos.segments.changeMembers(scopes.env, 'big', { add_included: numbered('ctx-', 10_000, 25_000) });
    assert.equal(more.included_count, 25_000);
    const pairs = ['ctx-000000', 'ctx-000150', 'ctx-019999', 'ctx-024999', 'ctx-025000', 'ctx-00015'].map((contextKey) => ({
      segmentKey: 'big',
      contextKey,
    }));
    assert.deepEqual(await repos.segments.checkMembers(scopes.env, pairs), [false, true, true, true, false, false]);
    // A batch of many pairs gets one answer each, in order.
    const manyPairs = numbered('ctx-', 24_000, 26_000).map((contextKey) => ({ segmentKey: 'big', contextKey }));
    const manyAnswers = await repos.segments.checkMembers(scopes.env, manyPairs);
    assert.deepEqual(manyAnswers, manyPairs.map((_, i) => i < 1_000));
    const page = await repos.segments.listMembers(scopes.env, 'big', 'included', { cursor: 'ctx-012344', limit: 3 });
    assert.deepEqual(page, { items: ['ctx-012345', 'ctx-012346', 'ctx-012347'], nextCursor: 'ctx-012347' });
    const removed = await repos.segments.changeMembers(scopes.env, 'big', { remove_included: keys, remove_excluded: keys });
    assert.deepEqual([removed.included_count, removed.excluded_count], [5_000, 0]);
    assert.deepEqual((await repos.segments.listMembers(scopes.env, 'big', 'included', { limit: 1 })).items, ['ctx-020000']);
  });

  check('replaceMembers makes each given list exactly the new keys, leaves the other, one version bump', async ({ repos, scopes }) => {
    await repos.segments.create(scopes.env, listSegment('swap'));
    await repos.segments.changeMembers(scopes.env, 'swap', { add_included: ['a', 'b', 'c'], add_excluded: ['x', 'y'] });
    const replaced = await repos.segments.replaceMembers(scopes.env, 'swap', { included: ['c', 'd', 'd', 'e'] });
    assert.deepEqual([replaced.included_count, replaced.excluded_count, replaced.version], [3, 2, 3]);
    assert.deepEqual(await repos.segments.get(scopes.env, 'swap'), replaced);
    const all = async (list: 'included' | 'excluded') => (await repos.segments.listMembers(scopes.env, 'swap', list, { limit: 100 })).items;
    assert.deepEqual(await all('included'), ['c', 'd', 'e']);
    assert.deepEqual(await all('excluded'), ['x', 'y'], 'a list not given is not touched');
    // Both lists; an empty list empties it; null leaves it.
    const both = await repos.segments.replaceMembers(scopes.env, 'swap', { included: [], excluded: ['y', 'z'] });
    assert.deepEqual([both.included_count, both.excluded_count, both.version], [0, 2, 4]);
    assert.deepEqual([await all('included'), await all('excluded')], [[], ['y', 'z']]);
    const none = await repos.segments.replaceMembers(scopes.env, 'swap', { included: null, excluded: null });
    assert.deepEqual([none.included_count, none.excluded_count, none.version], [0, 2, 5]);
    assert.deepEqual(await repos.segments.checkMembers(scopes.env, [{ segmentKey: 'swap', contextKey: 'c' }, { segmentKey: 'swap', contextKey: 'z' }]), [false, false]);
  });

  check('replaceMembers: NOT_FOUND for an unknown segment or another scope, FAILED_PRECONDITION for a rule segment', async ({ repos, scopes }) => {
    await rejectsWith(repos.segments.replaceMembers(scopes.env, 'nope', { included: ['a'] }), 'NOT_FOUND');
    await repos.segments.create(scopes.env, { key: 'rules', context_type: 'user', kind: 'rule', conditions: [] });
    await rejectsWith(repos.segments.replaceMembers(scopes.env, 'rules', { included: ['a'] }), 'FAILED_PRECONDITION');
    await repos.segments.create(scopes.env, listSegment('mine'));
    await repos.segments.changeMembers(scopes.env, 'mine', { add_included: ['kept'] });
    await rejectsWith(repos.segments.replaceMembers(scopes.otherEnvSameProject, 'mine', { included: [] }), 'NOT_FOUND');
    assert.deepEqual((await repos.segments.listMembers(scopes.env, 'mine', 'included', { limit: 5 })).items, ['kept']);
  });

  check('replaceMembers of a 30,000-key list by an overlapping 10,000-key list is exact', async ({ repos, scopes }) => {
    await repos.segments.create(scopes.env, listSegment('large'));
    await repos.segments.changeMembers(scopes.env, 'large', { add_included: numbered('k-', 0, 10_000) });
    await repos.segments.changeMembers(scopes.env, 'large', { add_included: numbered('k-', 10_000, 20_000) });
    await repos.segments.changeMembers(scopes.env, 'large', { add_included: numbered('k-', 20_000, 30_000) });
    const next = numbered('k-', 25_000, 35_000);
    const replaced = await repos.segments.replaceMembers(scopes.env, 'large', { included: next });
    assert.equal(replaced.included_count, 10_000);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Page<string> = await repos.segments.listMembers(scopes.env, 'large', 'included', { cursor, limit: 4_000 });
      seen.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor !== null);
    assert.deepEqual(seen, next);
  });
}
