import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bucketFor, evaluate } from '../src/evaluation/index.ts';
import { flagsOf, load, type EvaluationCase } from './support/test-vector-cases.ts';

// The conformance contract (test-vectors/README.md): every SDK runs these same files.
interface BucketingCase {
  hash_input: string;
  flag_key: string;
  project_id: string;
  environment_id: string;
  bucket: number;
}


const bucketingCases = load<BucketingCase>('bucketing.json');
const evaluationCases = load<EvaluationCase>('evaluation.json');

describe('bucketing.json', () => {
  test('holds at least 40 cases, including unicode and empty strings', () => {
    assert.ok(bucketingCases.length >= 40);
    assert.ok(bucketingCases.some((c) => c.hash_input === '' && c.flag_key !== ''));
    assert.ok(bucketingCases.some((c) => /[^\u0000-\u007f]/.test(c.hash_input)));
  });

  for (const c of bucketingCases) {
    const label = JSON.stringify([c.hash_input, c.flag_key, c.project_id, c.environment_id]).slice(0, 80);
    test(`bucket of ${label}`, () => {
      assert.equal(bucketFor(c.hash_input, c.flag_key, c.project_id, c.environment_id), c.bucket);
    });
  }
});

describe('evaluation.json', () => {
  test('holds at least 40 uniquely named cases', () => {
    assert.ok(evaluationCases.length >= 40);
    assert.equal(new Set(evaluationCases.map((c) => c.name)).size, evaluationCases.length);
  });

  test('every case says how its expectation was derived (a non-empty one-line why)', () => {
    for (const c of evaluationCases) {
      assert.equal(typeof c.why, 'string', c.name);
      assert.ok(c.why.trim() !== '' && !c.why.includes('\n'), c.name);
      // A split's why names the bucket computed independently of the engine.
      if (c.expected.bucket !== undefined) assert.match(c.why, new RegExp(`= ${c.expected.bucket};`), c.name);
    }
  });

  test('covers every condition op, negate, segments of both kinds and every reason', () => {
    const ops = new Set<string>();
    let negated = false;
    for (const c of evaluationCases) {
      const conditions = [...c.flag.rules.flatMap((r) => r.conditions), ...(c.segments ?? []).flatMap((s) => s.conditions)];
      for (const condition of conditions) {
        ops.add(condition.op);
        negated ||= condition.negate === true;
      }
    }
    for (const op of ['eq', 'in', 'contains', 'starts_with', 'ends_with', 'matches', 'lt', 'lte', 'gt', 'gte',
      'semver_eq', 'semver_lt', 'semver_gt', 'before', 'after', 'exists']) {
      assert.ok(ops.has(op), `a case uses ${op}`);
    }
    assert.ok(negated);
    const kinds = new Set(evaluationCases.flatMap((c) => (c.segments ?? []).map((s) => s.kind)));
    assert.deepEqual([...kinds].sort(), ['list', 'rule']);
    const reasons = new Set(evaluationCases.map((c) => c.expected.reason));
    assert.deepEqual([...reasons].sort(), ['DEFAULT', 'DISABLED', 'ERROR', 'PREREQUISITE_FAILED', 'SPLIT', 'TARGETING_MATCH']);
  });

  for (const c of evaluationCases) {
    test(c.name, () => {
      const members = c.list_members ?? {};
      const result = evaluate(c.flag, c.contexts, {
        projectId: c.project_id,
        environmentId: c.environment_id,
        segments: new Map((c.segments ?? []).map((s) => [s.key, s])),
        flags: flagsOf(c),
        // Excluded wins over included (docs/contract.md "Segments").
        isListMember: (segmentKey, contextKey) => {
          const list = members[segmentKey];
          return list !== undefined && !list.excluded.includes(contextKey) && list.included.includes(contextKey);
        },
      });
      assert.equal(result.flag_key, c.flag.key);
      assert.equal(result.variant_key, c.expected.variant_key);
      assert.deepEqual(result.value, c.expected.value);
      assert.equal(result.is_enabled, c.expected.is_enabled);
      assert.equal(result.reason, c.expected.reason);
      assert.equal(result.bucket, c.expected.bucket);
      assert.equal(result.error_code, c.expected.error_code);
      assert.equal(result.prerequisite_key, c.expected.prerequisite_key);
    });
  }
});
