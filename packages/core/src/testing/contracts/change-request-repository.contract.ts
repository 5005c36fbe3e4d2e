import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import type { ChangeRequestDraft } from '../../ports/change-request-ports.ts';
import type { Repositories } from '../../ports/repositories.ts';
import type { EnvironmentScope } from '../../ports/scopes.ts';
import { MALFORMED_ID, UNKNOWN_ID, createTenant, environmentScope, rejectsWithCode, useRepositories, type TenancyRepositories } from './tenancy-contract-support.ts';

export type MakeChangeRequestRepositories = () => Promise<{ repos: Repositories; close(): Promise<void> }>;

const AUTHOR = randomUUID();
const REVIEWER = randomUUID();
const SECOND_REVIEWER = randomUUID();

const draft = (scope: EnvironmentScope, title: string, createdAtMs: number, status: ChangeRequestDraft['status'] = 'draft'): ChangeRequestDraft => ({
  orgId: scope.orgId,
  projectId: scope.projectId,
  environmentId: scope.environmentId,
  title,
  description: `about ${title}`,
  changes: [{ flag_key: 'checkout', version: 3, operations: [{ op: 'set_enabled', enabled: false }] }],
  contentHash: `hash-${title}`,
  status,
  authorId: AUTHOR,
  authorEmail: 'author@example.com',
  createdAtMs,
  updatedAtMs: createdAtMs,
});

/**
 * The behaviour every ChangeRequestRepository must show (docs/workflow.md "Change requests and
 * approvals"): requests and their reviews, scoped by org, project and environment (another
 * environment or org neither reads nor changes them), optimistic revisions, the counts the caps
 * read, and the approval policy. Expected values written by hand.
 */
export function changeRequestRepositoryContract(name: string, makeRepos: MakeChangeRequestRepositories): void {
  describe(`ChangeRequestRepository contract: ${name}`, () => {
    const repos = useRepositories<Repositories>(makeRepos);
    const tenancy = (): TenancyRepositories => repos();
    const requests = () => repos().changeRequests;

    /** An environment, a second environment of the same project, and another org's environment. */
    async function scopes(): Promise<{ scope: EnvironmentScope; sibling: EnvironmentScope; foreign: EnvironmentScope }> {
      const tenant = await createTenant(tenancy());
      const scope = environmentScope(tenant);
      const second = await tenancy().environments.create({ orgId: scope.orgId, projectId: scope.projectId }, { name: `second-${randomUUID().slice(0, 8)}` });
      const foreign = environmentScope(await createTenant(tenancy()));
      return { scope, sibling: { ...scope, environmentId: second.id }, foreign };
    }

    test('create stores the draft at revision 1 with no reviews; get reads it back in its scope only', async () => {
      const { scope, sibling, foreign } = await scopes();
      const created = await requests().create(scope, draft(scope, 'first', 1_000, 'open'));
      assert.match(created.id, /^[0-9a-f-]{36}$/);
      assert.deepEqual(
        [created.orgId, created.projectId, created.environmentId, created.title, created.description, created.contentHash, created.status, created.authorId, created.authorEmail],
        [scope.orgId, scope.projectId, scope.environmentId, 'first', 'about first', 'hash-first', 'open', AUTHOR, 'author@example.com'],
      );
      assert.deepEqual(created.changes, [{ flag_key: 'checkout', version: 3, operations: [{ op: 'set_enabled', enabled: false }] }]);
      assert.deepEqual(
        [created.revision, created.reviews, created.conflict, created.appliedBy, created.createdAtMs, created.updatedAtMs, created.submittedAtMs, created.appliedAtMs],
        [1, [], null, null, 1_000, 1_000, null, null],
      );
      assert.deepEqual(await requests().get(scope, created.id), created);
      assert.equal(await requests().get(sibling, created.id), null, 'another environment of the project');
      assert.equal(await requests().get(foreign, created.id), null, 'another org');
      assert.equal(await requests().get({ ...foreign, environmentId: scope.environmentId }, created.id), null, "the environment's id under another org");
      assert.equal(await requests().get(scope, UNKNOWN_ID), null);
      assert.equal(await requests().get(scope, MALFORMED_ID), null);
    });

    test("create refuses a scope whose environment is not the project's or the org's (NOT_FOUND)", async () => {
      const { scope, foreign } = await scopes();
      await rejectsWithCode(requests().create({ ...scope, orgId: foreign.orgId }, draft(scope, 'x', 1_000)), 'NOT_FOUND');
      await rejectsWithCode(requests().create({ ...scope, projectId: foreign.projectId }, draft(scope, 'x', 1_000)), 'NOT_FOUND');
      await rejectsWithCode(requests().create({ ...scope, environmentId: UNKNOWN_ID }, draft(scope, 'x', 1_000)), 'NOT_FOUND');
      assert.deepEqual(await requests().list(scope, { limit: 10 }), []);
    });

    test('list: newest first, at most limit, filtered by status, of its environment only', async () => {
      const { scope, sibling, foreign } = await scopes();
      const old = await requests().create(scope, draft(scope, 'old', 1_000, 'draft'));
      const middle = await requests().create(scope, draft(scope, 'middle', 2_000, 'open'));
      const recent = await requests().create(scope, draft(scope, 'recent', 3_000, 'open'));
      await requests().create(sibling, draft(sibling, 'sibling', 4_000, 'open'));
      await requests().create(foreign, draft(foreign, 'foreign', 5_000, 'open'));
      const titles = async (options: Parameters<Repositories['changeRequests']['list']>[1], at = scope) => (await requests().list(at, options)).map((r) => r.title);
      assert.deepEqual(await titles({ limit: 10 }), ['recent', 'middle', 'old']);
      assert.deepEqual(await titles({ limit: 2 }), ['recent', 'middle']);
      assert.deepEqual(await titles({ limit: 10, statuses: ['open'] }), ['recent', 'middle']);
      assert.deepEqual(await titles({ limit: 10, statuses: ['draft', 'applied'] }), ['old']);
      assert.deepEqual(await titles({ limit: 10, statuses: ['cancelled'] }), []);
      assert.deepEqual(await titles({ limit: 10 }, sibling), ['sibling']);
      assert.deepEqual(await titles({ limit: 10 }, { ...foreign, environmentId: scope.environmentId }), [], "the environment's id under another org");
      // The reviews come with each listed request.
      await requests().addReview(scope, middle.id, { reviewer_id: REVIEWER, reviewer_email: 'r@example.com', verdict: 'approve', comment: null, content_hash: 'hash-middle', at_ms: 2_500 });
      const listed = await requests().list(scope, { limit: 10 });
      assert.deepEqual(listed.map((r) => r.reviews.length), [0, 1, 0]);
      assert.deepEqual([recent.id, middle.id, old.id], listed.map((r) => r.id));
    });

    test('update writes the patch at the expected revision and bumps it; a stale revision is ABORTED and changes nothing', async () => {
      const { scope } = await scopes();
      const created = await requests().create(scope, draft(scope, 'edit me', 1_000));
      const changes = [{ flag_key: 'checkout', version: 4, operations: [{ op: 'set_enabled' as const, enabled: true }] }];
      const edited = await requests().update(scope, created.id, { title: 'edited', changes, contentHash: 'hash-2', updatedAtMs: 1_100 }, 1);
      assert.deepEqual(
        [edited.title, edited.description, edited.contentHash, edited.revision, edited.updatedAtMs, edited.createdAtMs, edited.status],
        ['edited', 'about edit me', 'hash-2', 2, 1_100, 1_000, 'draft'],
      );
      assert.deepEqual(edited.changes, changes);
      await rejectsWithCode(requests().update(scope, created.id, { title: 'late' }, 1), 'ABORTED');
      const stored = await requests().get(scope, created.id);
      assert.deepEqual([stored?.title, stored?.revision, stored?.contentHash], ['edited', 2, 'hash-2']);
    });

    test('update and addReview from another environment or org are NOT_FOUND and change nothing', async () => {
      const { scope, sibling, foreign } = await scopes();
      const created = await requests().create(scope, draft(scope, 'mine', 1_000, 'open'));
      const review = { reviewer_id: REVIEWER, reviewer_email: null, verdict: 'approve' as const, comment: null, content_hash: 'hash-mine', at_ms: 1_100 };
      for (const other of [sibling, foreign, { ...foreign, environmentId: scope.environmentId }]) {
        await rejectsWithCode(requests().update(other, created.id, { status: 'cancelled' }, 1), 'NOT_FOUND');
        await rejectsWithCode(requests().addReview(other, created.id, review), 'NOT_FOUND');
      }
      await rejectsWithCode(requests().update(scope, UNKNOWN_ID, { status: 'cancelled' }, 1), 'NOT_FOUND');
      await rejectsWithCode(requests().update(scope, MALFORMED_ID, { status: 'cancelled' }, 1), 'NOT_FOUND');
      await rejectsWithCode(requests().addReview(scope, MALFORMED_ID, review), 'NOT_FOUND');
      const stored = await requests().get(scope, created.id);
      assert.deepEqual([stored?.status, stored?.revision, stored?.reviews], ['open', 1, []]);
    });

    test('reviews are stored with an id, read oldest first, and kept through updates', async () => {
      const { scope } = await scopes();
      const created = await requests().create(scope, draft(scope, 'reviewed', 1_000, 'open'));
      const late = await requests().addReview(scope, created.id, { reviewer_id: SECOND_REVIEWER, reviewer_email: null, verdict: 'reject', comment: 'not yet', content_hash: 'hash-reviewed', at_ms: 1_300 });
      const early = await requests().addReview(scope, created.id, { reviewer_id: REVIEWER, reviewer_email: 'r@example.com', verdict: 'approve', comment: null, content_hash: 'hash-reviewed', at_ms: 1_200 });
      assert.match(late.id, /^[0-9a-f-]{36}$/);
      assert.notEqual(late.id, early.id);
      assert.deepEqual(early, { id: early.id, reviewer_id: REVIEWER, reviewer_email: 'r@example.com', verdict: 'approve', comment: null, content_hash: 'hash-reviewed', at_ms: 1_200 });
      const stored = await requests().get(scope, created.id);
      assert.deepEqual(stored?.reviews.map((r) => [r.reviewer_id, r.verdict, r.comment, r.at_ms]), [
        [REVIEWER, 'approve', null, 1_200],
        [SECOND_REVIEWER, 'reject', 'not yet', 1_300],
      ]);
      // A review does not bump the revision (the service bumps it with an update in the same unit of work).
      assert.equal(stored?.revision, 1);
      const updated = await requests().update(scope, created.id, { description: 'still reviewed', updatedAtMs: 1_400 }, 1);
      assert.deepEqual(updated.reviews.map((r) => r.id), [early.id, late.id]);
    });

    test('status moves as the service asks (draft → open → conflicted → open → applied; cancelled), with the fields each sets', async () => {
      const { scope } = await scopes();
      const created = await requests().create(scope, draft(scope, 'moving', 1_000));
      const opened = await requests().update(scope, created.id, { status: 'open', submittedAtMs: 1_100, updatedAtMs: 1_100 }, 1);
      assert.deepEqual([opened.status, opened.submittedAtMs, opened.revision], ['open', 1_100, 2]);
      const conflicted = await requests().update(scope, created.id, { status: 'conflicted', conflict: 'flag checkout moved', updatedAtMs: 1_200 }, 2);
      assert.deepEqual([conflicted.status, conflicted.conflict, conflicted.revision], ['conflicted', 'flag checkout moved', 3]);
      const reopened = await requests().update(scope, created.id, { status: 'open', conflict: null, updatedAtMs: 1_300 }, 3);
      assert.deepEqual([reopened.status, reopened.conflict, reopened.submittedAtMs], ['open', null, 1_100]);
      const applied = await requests().update(scope, created.id, { status: 'applied', appliedAtMs: 1_400, appliedBy: { applier_id: AUTHOR, approvers: ['r@example.com'] }, updatedAtMs: 1_400 }, 4);
      assert.deepEqual([applied.status, applied.appliedAtMs, applied.appliedBy, applied.revision], ['applied', 1_400, { applier_id: AUTHOR, approvers: ['r@example.com'] }, 5]);
      const stored = await requests().get(scope, created.id);
      assert.deepEqual([stored?.status, stored?.appliedAtMs, stored?.appliedBy, stored?.updatedAtMs], ['applied', 1_400, { applier_id: AUTHOR, approvers: ['r@example.com'] }, 1_400]);
      const other = await requests().create(scope, draft(scope, 'dropped', 2_000, 'open'));
      assert.equal((await requests().update(scope, other.id, { status: 'cancelled', updatedAtMs: 2_100 }, 1)).status, 'cancelled');
    });

    test('countInStatuses counts the environment\'s requests of those statuses only', async () => {
      const { scope, sibling, foreign } = await scopes();
      for (const [i, status] of (['draft', 'open', 'open', 'conflicted', 'applied', 'cancelled'] as const).entries()) await requests().create(scope, draft(scope, `r${i}`, 1_000 + i, status));
      await requests().create(sibling, draft(sibling, 'sibling', 2_000, 'open'));
      await requests().create(foreign, draft(foreign, 'foreign', 2_000, 'open'));
      const active = ['draft', 'open', 'conflicted', 'scheduled'] as const;
      assert.equal(await requests().countInStatuses(scope, active), 4);
      assert.equal(await requests().countInStatuses(scope, ['open']), 2);
      assert.equal(await requests().countInStatuses(scope, ['applied', 'cancelled']), 2);
      assert.equal(await requests().countInStatuses(sibling, active), 1);
      assert.equal(await requests().countInStatuses({ ...foreign, environmentId: scope.environmentId }, active), 0);
      // Inside a unit of work too (where the Postgres adapter takes the environment's lock first).
      assert.equal(await repos().unitOfWork.run((tx) => tx.changeRequests.countInStatuses(scope, active)), 4);
    });

    test('approval policy: none until put; put replaces it; read in its org only; a foreign scope cannot put', async () => {
      const { scope, sibling, foreign } = await scopes();
      assert.equal(await requests().getPolicy(scope), null);
      const strict = { required: true, min_approvals: 2, allow_self_approval: false, reset_on_change: true, kill_switch_exempt: true };
      assert.deepEqual(await requests().putPolicy(scope, strict, 1_000), strict);
      assert.deepEqual(await requests().getPolicy(scope), strict);
      assert.deepEqual(await requests().getPolicy({ orgId: scope.orgId, environmentId: scope.environmentId }), strict);
      assert.equal(await requests().getPolicy(sibling), null, 'per environment');
      assert.equal(await requests().getPolicy({ orgId: foreign.orgId, environmentId: scope.environmentId }), null, 'another org');
      assert.equal(await requests().getPolicy({ orgId: scope.orgId, environmentId: MALFORMED_ID }), null);
      const relaxed = { required: false, min_approvals: 1, allow_self_approval: true, reset_on_change: false, kill_switch_exempt: false };
      await requests().putPolicy(scope, relaxed, 2_000);
      assert.deepEqual(await requests().getPolicy(scope), relaxed);
      await rejectsWithCode(requests().putPolicy({ ...scope, orgId: foreign.orgId }, strict, 3_000), 'NOT_FOUND');
      await rejectsWithCode(requests().putPolicy({ ...scope, projectId: foreign.projectId }, strict, 3_000), 'NOT_FOUND');
      assert.deepEqual(await requests().getPolicy(scope), relaxed, 'unchanged by the refused puts');
      assert.equal(await requests().getPolicy(foreign), null);
    });
  });
}
