import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  DEFAULT_APPROVAL_POLICY,
  canonicalJson,
  countingReviews,
  parseApprovalPolicy,
  parseChangeRequestChanges,
  type ApprovalPolicy,
  type ChangeRequestReview,
} from '../src/index.ts';

/** The pure part of change requests (docs/workflow.md "Change requests and approvals"); expected values written by hand. */

const code = (run: () => unknown): string | undefined => {
  try {
    run();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
};

describe('approval policy', () => {
  test('fields left out keep the current value; bounds and types are checked', () => {
    assert.deepEqual(parseApprovalPolicy({}), { required: false, min_approvals: 1, allow_self_approval: false, reset_on_change: true, kill_switch_exempt: false });
    const current: ApprovalPolicy = { ...DEFAULT_APPROVAL_POLICY, required: true, min_approvals: 3 };
    assert.deepEqual(parseApprovalPolicy({ kill_switch_exempt: true }, current), { required: true, min_approvals: 3, allow_self_approval: false, reset_on_change: true, kill_switch_exempt: true });
    assert.equal(parseApprovalPolicy({ min_approvals: 5 }).min_approvals, 5);
    for (const bad of [{ min_approvals: 0 }, { min_approvals: 6 }, { min_approvals: 1.5 }, { required: 'true' }, { other: true }, null, []]) {
      assert.equal(code(() => parseApprovalPolicy(bad)), 'INVALID_ARGUMENT', JSON.stringify(bad));
    }
  });
});

describe('changes', () => {
  test('flag and segment changes, versions optional, one change per subject', () => {
    const parsed = parseChangeRequestChanges([
      { flag_key: 'checkout', operations: [{ op: 'set_enabled', enabled: true }], version: 4 },
      { segment_key: 'beta', operations: [{ op: 'add_members', list: 'included', keys: ['u1'] }, { op: 'set_conditions', conditions: [] }] },
      { flag_key: 'beta', operations: [{ op: 'remove_rule', rule_id: 'r1' }] },
    ]);
    assert.deepEqual(parsed, [
      { flag_key: 'checkout', operations: [{ op: 'set_enabled', enabled: true }], version: 4 },
      { segment_key: 'beta', operations: [{ op: 'add_members', list: 'included', keys: ['u1'] }, { op: 'set_conditions', conditions: [] }] },
      { flag_key: 'beta', operations: [{ op: 'remove_rule', rule_id: 'r1' }] },
    ]);
    const refused: unknown[] = [
      [],
      Array.from({ length: 21 }, (_, i) => ({ flag_key: `f${i}`, operations: [{ op: 'set_enabled', enabled: true }] })),
      [{ flag_key: 'a', segment_key: 'b', operations: [] }],
      [{ operations: [] }],
      [{ flag_key: 'a', operations: [{ op: 'set_enabled', enabled: true }] }, { flag_key: 'a', operations: [{ op: 'set_enabled', enabled: false }] }],
      [{ flag_key: 'a', operations: [{ op: 'set_enabled', enabled: true }], version: -1 }],
      [{ flag_key: 'a', operations: [{ op: 'set_enabled', enabled: true }], extra: 1 }],
      [{ segment_key: 'b', operations: [{ op: 'add_members', list: 'both', keys: ['u'] }] }],
      [{ segment_key: 'b', operations: [{ op: 'add_members', list: 'included', keys: [] }] }],
      [{ segment_key: 'b', operations: [{ op: 'add_members', list: 'included', keys: Array.from({ length: 1001 }, (_, i) => `u${i}`) }] }],
      [{ segment_key: 'b', operations: [{ op: 'drop_segment' }] }],
      [{ flag_key: '../x', operations: [{ op: 'set_enabled', enabled: true }] }],
    ];
    for (const input of refused) assert.equal(code(() => parseChangeRequestChanges(input)), 'INVALID_ARGUMENT', JSON.stringify(input).slice(0, 120));
  });

  test('canonical JSON sorts keys at every level and keeps array order', () => {
    assert.equal(canonicalJson({ b: 1, a: [{ z: true, y: null }, 'x'], c: { e: 'é', d: 2 } }), '{"a":[{"y":null,"z":true},"x"],"b":1,"c":{"d":2,"e":"é"}}');
    assert.equal(canonicalJson({ a: undefined, b: 1 }), '{"b":1}');
  });
});

describe('counting reviews', () => {
  const review = (reviewer_id: string, verdict: ChangeRequestReview['verdict'], content_hash: string, at_ms: number): ChangeRequestReview => ({
    id: `${reviewer_id}-${at_ms}`,
    reviewer_id,
    reviewer_email: `${reviewer_id}@example.com`,
    verdict,
    comment: null,
    content_hash,
    at_ms,
  });
  const policy = (changes: Partial<ApprovalPolicy> = {}): ApprovalPolicy => ({ ...DEFAULT_APPROVAL_POLICY, required: true, ...changes });
  const ids = (list: ChangeRequestReview[]) => list.map((r) => r.reviewer_id);

  test('only reviews of the current content count (reset_on_change); without it, every review counts', () => {
    const reviews = [review('ann', 'approve', 'h1', 1), review('bob', 'approve', 'h2', 2)];
    assert.deepEqual(ids(countingReviews(reviews, 'h2', 'author', policy()).approvals), ['bob']);
    assert.deepEqual(ids(countingReviews(reviews, 'h2', 'author', policy({ reset_on_change: false })).approvals), ['ann', 'bob']);
  });

  test("the author's own approval counts only with allow_self_approval; a reviewer counts once, with their latest verdict; comments never count", () => {
    const reviews = [review('author', 'approve', 'h', 1), review('ann', 'approve', 'h', 2), review('ann', 'approve', 'h', 3), review('bob', 'approve', 'h', 4), review('bob', 'reject', 'h', 5), review('cy', 'comment', 'h', 6)];
    const counted = countingReviews(reviews, 'h', 'author', policy());
    assert.deepEqual(ids(counted.approvals), ['ann']);
    assert.deepEqual(ids(counted.rejections), ['bob']);
    assert.deepEqual(ids(countingReviews(reviews, 'h', 'author', policy({ allow_self_approval: true })).approvals).sort(), ['ann', 'author']);
  });
});
