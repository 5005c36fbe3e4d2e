import assert from 'node:assert/strict';
import { describe } from 'node:test';
import type { Condition } from '../../model/definitions.ts';
import type { SegmentInput } from '../../ports/flag-ports.ts';
import {
  MALFORMED_ID,
  MISSING_ID,
  ORDERED_KEYS,
  assertRecentMs,
  contractTest,
  rejectsWith,
  settleRace,
  tick,
  type ContractCheck,
  type MakeFlagSegmentRepos,
} from './flag-segment-fixture.ts';
import { segmentMembersContract } from './segment-members.contract.ts';

const listSegment = (key: string): SegmentInput => ({ key, context_type: 'user', kind: 'list' });
const CONDITIONS: Condition[] = [
  { context_type: 'user', attribute: 'country', op: 'in', values: ['FR', 'DE'] },
  { attribute: 'age', op: 'gte', values: [18.5], negate: false },
  { attribute: 'email', op: 'ends_with', values: ['@example.com'], negate: true },
];

/**
 * The SegmentRepository contract: every implementation (in-memory fake, PostgreSQL) must pass it.
 * `makeRepos` is called once per test and provides fresh tenants. The member-list half lives in
 * segment-members.contract.ts and is registered from here: one suite per port.
 */
export function segmentRepositoryContract(name: string, makeRepos: MakeFlagSegmentRepos): void {
  const check: ContractCheck = (title, body) => contractTest(makeRepos, title, body);

  describe(`SegmentRepository contract: ${name}`, () => {
    check('create starts a list segment at version 1 with zero counts', async ({ repos, scopes }) => {
      const created = await repos.segments.create(scopes.env, listSegment('beta'));
      assert.equal(typeof created.id, 'string');
      assert.deepEqual({ ...created, id: '', created_at_ms: 0, updated_at_ms: 0 }, {
        id: '',
        key: 'beta',
        context_type: 'user',
        kind: 'list',
        description: '',
        conditions: [],
        included_count: 0,
        excluded_count: 0,
        version: 1,
        created_at_ms: 0,
        updated_at_ms: 0,
      });
      assertRecentMs(created.created_at_ms, 'created_at_ms');
      assert.equal(created.updated_at_ms, created.created_at_ms);
      assert.deepEqual(await repos.segments.get(scopes.env, 'beta'), created);
      assert.equal(await repos.segments.get(scopes.env, 'absent'), null);
    });

    check('rule segments keep their conditions exactly; list segments have none', async ({ repos, scopes }) => {
      const rule = await repos.segments.create(scopes.env, {
        key: 'adults',
        context_type: 'user',
        kind: 'rule',
        description: 'grown-ups ✓',
        conditions: CONDITIONS,
      });
      assert.deepEqual([rule.kind, rule.description, rule.conditions], ['rule', 'grown-ups ✓', CONDITIONS]);
      assert.deepEqual((await repos.segments.get(scopes.env, 'adults'))?.conditions, CONDITIONS);
      const list = await repos.segments.create(scopes.env, { ...listSegment('vips'), conditions: CONDITIONS });
      assert.deepEqual(list.conditions, []);
      const updated = await repos.segments.update(scopes.env, 'vips', { conditions: CONDITIONS });
      assert.deepEqual(updated.conditions, []);
      assert.equal(updated.version, 2);
    });

    check('create rejects a duplicate key in the environment only', async ({ repos, scopes }) => {
      await repos.segments.create(scopes.env, listSegment('dup'));
      await rejectsWith(repos.segments.create(scopes.env, { ...listSegment('dup'), kind: 'rule' }), 'ALREADY_EXISTS');
      // Segments are environment-level: the same key elsewhere is another segment.
      const sibling = await repos.segments.create(scopes.otherEnvSameProject, { ...listSegment('dup'), context_type: 'device' });
      const foreign = await repos.segments.create(scopes.otherOrgEnv, listSegment('dup'));
      assert.equal(new Set([sibling.id, foreign.id, (await repos.segments.get(scopes.env, 'dup'))?.id]).size, 3);
      assert.equal((await repos.segments.get(scopes.env, 'dup'))?.context_type, 'user');
      assert.equal((await repos.segments.get(scopes.otherEnvSameProject, 'dup'))?.context_type, 'device');
    });

    check('list is ordered by key (code point order) and holds only the environment\'s segments', async ({ repos, scopes }) => {
      for (const key of [...ORDERED_KEYS].reverse()) await repos.segments.create(scopes.env, listSegment(key));
      await repos.segments.create(scopes.otherEnvSameProject, listSegment('sibling'));
      assert.deepEqual((await repos.segments.list(scopes.env)).map((segment) => segment.key), ORDERED_KEYS);
      assert.deepEqual((await repos.segments.list(scopes.otherEnvSameProject)).map((segment) => segment.key), ['sibling']);
      assert.deepEqual(await repos.segments.list(scopes.otherOrgEnv), []);
    });

    check('update patches, bumps the version and checks the expected version', async ({ repos, scopes }) => {
      const created = await repos.segments.create(scopes.env, { ...listSegment('seg'), description: 'first' });
      await tick();
      const updated = await repos.segments.update(scopes.env, 'seg', { context_type: 'account' }, 1);
      assert.deepEqual([updated.version, updated.context_type, updated.description], [2, 'account', 'first']);
      assert.equal(updated.created_at_ms, created.created_at_ms);
      assert.ok(updated.updated_at_ms > created.updated_at_ms, 'updated_at_ms moves');
      await rejectsWith(repos.segments.update(scopes.env, 'seg', { description: 'lost' }, 1), 'ABORTED');
      await rejectsWith(repos.segments.delete(scopes.env, 'seg', 1), 'ABORTED');
      assert.deepEqual(await repos.segments.get(scopes.env, 'seg'), updated);
      const described = await repos.segments.update(scopes.env, 'seg', { description: 'second' });
      assert.deepEqual([described.version, described.description, described.context_type], [3, 'second', 'account']);
      await rejectsWith(repos.segments.update(scopes.env, 'nope', { description: 'x' }), 'NOT_FOUND');
      await rejectsWith(repos.segments.update(scopes.env, 'nope', { description: 'x' }, 1), 'NOT_FOUND');
      await rejectsWith(repos.segments.delete(scopes.env, 'nope'), 'NOT_FOUND');
    });

    check('two concurrent updates holding the same version: exactly one wins', async ({ repos, scopes }) => {
      await repos.segments.create(scopes.env, listSegment('race'));
      const outcome = await settleRace([
        repos.segments.update(scopes.env, 'race', { description: 'a' }, 1),
        repos.segments.update(scopes.env, 'race', { description: 'b' }, 1),
      ]);
      assert.deepEqual(outcome, { fulfilled: 1, codes: ['ABORTED'] });
      assert.equal((await repos.segments.get(scopes.env, 'race'))?.version, 2);
    });

    check('delete removes the segment and its members', async ({ repos, scopes }) => {
      await repos.segments.create(scopes.env, listSegment('gone'));
      await repos.segments.changeMembers(scopes.env, 'gone', { add_included: ['u1', 'u2'], add_excluded: ['u3'] });
      await repos.segments.delete(scopes.env, 'gone', 2);
      assert.equal(await repos.segments.get(scopes.env, 'gone'), null);
      assert.deepEqual(await repos.segments.checkMembers(scopes.env, [{ segmentKey: 'gone', contextKey: 'u1' }]), [null]);
      await rejectsWith(repos.segments.listMembers(scopes.env, 'gone', 'included', { limit: 10 }), 'NOT_FOUND');
      // A new segment of the same key starts empty.
      const fresh = await repos.segments.create(scopes.env, listSegment('gone'));
      assert.deepEqual([fresh.included_count, fresh.excluded_count, fresh.version], [0, 0, 1]);
      assert.deepEqual(await repos.segments.listMembers(scopes.env, 'gone', 'included', { limit: 10 }), { items: [], nextCursor: null });
      assert.deepEqual(await repos.segments.checkMembers(scopes.env, [{ segmentKey: 'gone', contextKey: 'u1' }]), [false]);
    });

    check('another org or environment cannot see or change the segments (tenant isolation)', async ({ repos, scopes }) => {
      await repos.segments.create(scopes.env, listSegment('mine'));
      await repos.segments.changeMembers(scopes.env, 'mine', { add_included: ['u1'] });
      const theirs = scopes.otherOrgEnv;
      const outsiders = [theirs, scopes.otherEnvSameProject, { ...scopes.env, orgId: theirs.orgId }, { ...theirs, environmentId: scopes.env.environmentId }];
      for (const scope of outsiders) {
        assert.equal(await repos.segments.get(scope, 'mine'), null);
        assert.deepEqual(await repos.segments.list(scope), []);
        await rejectsWith(repos.segments.update(scope, 'mine', { description: 'x' }), 'NOT_FOUND');
        await rejectsWith(repos.segments.delete(scope, 'mine'), 'NOT_FOUND');
        await rejectsWith(repos.segments.changeMembers(scope, 'mine', { remove_included: ['u1'] }), 'NOT_FOUND');
        await rejectsWith(repos.segments.listMembers(scope, 'mine', 'included', { limit: 10 }), 'NOT_FOUND');
        assert.deepEqual(await repos.segments.checkMembers(scope, [{ segmentKey: 'mine', contextKey: 'u1' }]), [null]);
      }
      const mine = await repos.segments.get(scopes.env, 'mine');
      assert.deepEqual([mine?.included_count, mine?.version, mine?.description], [1, 2, '']);
    });

    check('create needs the environment in the scope\'s project and org', async ({ repos, scopes }) => {
      const mismatched = [
        { ...scopes.env, environmentId: scopes.otherOrgEnv.environmentId },
        { ...scopes.otherOrgEnv, orgId: scopes.env.orgId },
        { ...scopes.env, environmentId: MISSING_ID },
      ];
      for (const scope of mismatched) await rejectsWith(repos.segments.create(scope, listSegment('stray')), 'NOT_FOUND');
      assert.deepEqual(await repos.segments.list(scopes.otherOrgEnv), []);
      assert.deepEqual(await repos.segments.list(scopes.env), []);
    });

    check('malformed ids are answered as not found, never as driver errors', async ({ repos, scopes }) => {
      await repos.segments.create(scopes.env, listSegment('real'));
      for (const field of ['orgId', 'projectId', 'environmentId'] as const) {
        const scope = { ...scopes.env, [field]: MALFORMED_ID };
        assert.equal(await repos.segments.get(scope, 'real'), null);
        assert.deepEqual(await repos.segments.list(scope), []);
        await rejectsWith(repos.segments.create(scope, listSegment('new')), 'NOT_FOUND');
        await rejectsWith(repos.segments.update(scope, 'real', { description: 'x' }, 1), 'NOT_FOUND');
        await rejectsWith(repos.segments.delete(scope, 'real'), 'NOT_FOUND');
        await rejectsWith(repos.segments.changeMembers(scope, 'real', { add_included: ['a'] }), 'NOT_FOUND');
        await rejectsWith(repos.segments.listMembers(scope, 'real', 'excluded', { limit: 5, cursor: 'a' }), 'NOT_FOUND');
        assert.deepEqual(await repos.segments.checkMembers(scope, [{ segmentKey: 'real', contextKey: 'a' }]), [null]);
      }
    });

    segmentMembersContract(check);
  });
}
