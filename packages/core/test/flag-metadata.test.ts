import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bucketFor, evaluate, evaluationFeaturesOf, KNOWN_EVALUATION_FEATURES, unknownEvaluationFeatures } from '../src/evaluation/index.ts';
import type { EvaluationEnvironment } from '../src/evaluation/index.ts';
import {
  DomainError,
  checkBucketBy,
  checkFlagListFilter,
  checkLifetime,
  checkMaintainer,
  checkTags,
  flagMatchesFilter,
  withMetadataDefaults,
  type Flag,
  type Rule,
} from '../src/index.ts';
import { testFlag } from '../src/testing/fixtures.ts';

/** The INVALID_ARGUMENT a check throws, with the field it names. */
function refusal(run: () => unknown, field: string): void {
  assert.throws(run, (error: unknown) => error instanceof DomainError && error.code === 'INVALID_ARGUMENT' && error.field === field);
}

describe('flag metadata checks', () => {
  test('tags are sorted by code point and de-duplicated', () => {
    assert.deepEqual(checkTags(['team:web', 'Beta', 'a/b', 'beta', 'team:web', '0-x']), ['0-x', 'Beta', 'a/b', 'beta', 'team:web']);
    assert.deepEqual(checkTags([]), []);
  });

  test('a tag must match ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}$; the bad one is named by index', () => {
    for (const bad of ['', '-lead', '.x', 'has space', 'é', 'a'.repeat(65), 7, null]) refusal(() => checkTags(['ok', bad]), 'tags[1]');
    assert.deepEqual(checkTags(['a'.repeat(64)]), ['a'.repeat(64)]);
    refusal(() => checkTags('web'), 'tags');
    refusal(() => checkTags(null), 'tags');
  });

  test('at most 50 distinct tags; repeats of one tag count once', () => {
    const fifty = Array.from({ length: 50 }, (_, i) => `t${i}`);
    assert.equal(checkTags(fifty).length, 50);
    assert.equal(checkTags([...fifty, ...fifty]).length, 50);
    refusal(() => checkTags([...fifty, 't50']), 'tags');
    // An outsider's huge list is refused before each entry is checked.
    refusal(() => checkTags(Array.from({ length: 100_000 }, () => 'x')), 'tags');
  });

  test('lifetime and bucket_by are closed sets', () => {
    assert.equal(checkLifetime('temporary'), 'temporary');
    assert.equal(checkLifetime('permanent'), 'permanent');
    for (const bad of ['Temporary', '', null, 1]) refusal(() => checkLifetime(bad), 'lifetime');
    assert.equal(checkBucketBy('project'), 'project');
    assert.equal(checkBucketBy('environment'), 'environment');
    for (const bad of ['org', '', null, true]) refusal(() => checkBucketBy(bad), 'bucket_by');
  });

  test('maintainer: free text of at most 200 characters, trimmed; empty is none', () => {
    assert.equal(checkMaintainer('  ana@example.com '), 'ana@example.com');
    assert.equal(checkMaintainer('team payments'), 'team payments');
    assert.equal(checkMaintainer(''), null);
    assert.equal(checkMaintainer(null), null);
    assert.equal(checkMaintainer('x'.repeat(200)), 'x'.repeat(200));
    refusal(() => checkMaintainer('x'.repeat(201)), 'maintainer');
    refusal(() => checkMaintainer(42), 'maintainer');
  });
});

describe('flag list filter', () => {
  const web = testFlag('web', { tags: ['team:web', 'ui'], lifetime: 'temporary' });
  const api = testFlag('api', { tags: ['team:api'] });
  const bare = testFlag('bare');

  test('every tag named must be carried; lifetime must match (absent fields are [] and permanent)', () => {
    const pick = (query: { tag?: unknown; lifetime?: unknown }) => [web, api, bare].filter((f) => flagMatchesFilter(f, checkFlagListFilter(query))).map((f) => f.key);
    assert.deepEqual(pick({}), ['web', 'api', 'bare']);
    assert.deepEqual(pick({ tag: 'ui' }), ['web']);
    assert.deepEqual(pick({ tag: ['ui', 'team:web'] }), ['web']);
    assert.deepEqual(pick({ tag: ['ui', 'team:api'] }), []);
    assert.deepEqual(pick({ lifetime: 'permanent' }), ['api', 'bare']);
    assert.deepEqual(pick({ lifetime: 'temporary', tag: 'team:web' }), ['web']);
  });

  test('bad values are INVALID_ARGUMENT naming tag or lifetime; at most 50 tags', () => {
    refusal(() => checkFlagListFilter({ tag: 'has space' }), 'tag');
    refusal(() => checkFlagListFilter({ tag: ['ok', ''] }), 'tag');
    refusal(() => checkFlagListFilter({ lifetime: 'forever' }), 'lifetime');
    refusal(() => checkFlagListFilter({ tag: Array.from({ length: 51 }, (_, i) => `t${i}`) }), 'tag');
  });

  test('withMetadataDefaults fills what a document leaves out', () => {
    const shown = withMetadataDefaults(testFlag('x'));
    assert.deepEqual([shown.tags, shown.lifetime, shown.maintainer, shown.bucket_by], [[], 'permanent', null, 'environment']);
  });
});

describe('bucket_by', () => {
  // Expected buckets: the pure-Python MurmurHash3_x86_32 of test-vectors/README.md, run outside the repo:
  // "alice/new-checkout/proj-1" → 42125, "alice/new-checkout/proj-1/env-1" → 56767, ".../env-2" → 36142,
  // "user-9/f/p" → 24215, "user-9/f/p/e" → 49288.
  const split: Rule = {
    id: 'half',
    conditions: [],
    allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'a', weight_milli: 500 }, { variant_key: 'b', weight_milli: 500 }] },
  };
  const flag = (over: Partial<Flag> = {}): Flag =>
    testFlag('new-checkout', { value_type: 'string', variants: [{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }], rules: [split], ...over });
  const alice = [{ context_type: 'user', key: 'alice' }];
  const env1: EvaluationEnvironment = { projectId: 'proj-1', environmentId: 'env-1' };
  const env2: EvaluationEnvironment = { projectId: 'proj-1', environmentId: 'env-2' };

  test('bucketFor with no environment hashes hash_input/flag_key/project_id', () => {
    assert.equal(bucketFor('user-9', 'f', 'p', null), 24215);
    assert.equal(bucketFor('user-9', 'f', 'p', 'e'), 49288);
  });

  test('project: one bucket in every environment; environment (the default): one per environment', () => {
    const byProject = flag({ bucket_by: 'project' });
    assert.equal(evaluate(byProject, alice, env1).bucket, 42125);
    assert.equal(evaluate(byProject, alice, env2).bucket, 42125);
    assert.equal(evaluate(flag(), alice, env1).bucket, 56767);
    assert.equal(evaluate(flag(), alice, env2).bucket, 36142);
    assert.equal(evaluate(flag({ bucket_by: 'environment' }), alice, env2).bucket, 36142);
  });

  test('a document whose bucket_by changes in place is bucketed by the new value (the compiled suffix follows)', () => {
    const document = flag();
    assert.equal(evaluate(document, alice, env1).bucket, 56767);
    document.bucket_by = 'project';
    assert.equal(evaluate(document, alice, env1).bucket, 42125);
    document.bucket_by = 'environment';
    assert.equal(evaluate(document, alice, env1).bucket, 56767);
  });

  test('is the evaluation feature bucket_by_project, named only when some flag uses it', () => {
    assert.deepEqual(evaluationFeaturesOf([flag(), flag({ bucket_by: 'environment' })]), []);
    assert.deepEqual(evaluationFeaturesOf([flag(), flag({ bucket_by: 'project' })]), ['bucket_by_project']);
    assert.deepEqual(
      evaluationFeaturesOf([flag({ bucket_by: 'project' }), flag({ prerequisites: [{ flag_key: 'other', variant_keys: ['a'] }] })]),
      ['bucket_by_project', 'prerequisites'],
    );
    assert.ok(KNOWN_EVALUATION_FEATURES.includes('bucket_by_project'));
    assert.deepEqual(unknownEvaluationFeatures(['bucket_by_project', 'prerequisites', 'later']), ['later']);
  });
});
