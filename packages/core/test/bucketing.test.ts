import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import murmurhash from 'murmurhash';
import fc from 'fast-check';
import { bucketOfHash } from '../src/evaluation/bucketing.ts';
import { bucketFor, murmur3, pickBucket, resolveHashInput } from '../src/evaluation/index.ts';
import type { AllocationBucket, EvaluationContext, PercentageAllocation } from '../src/index.ts';

/**
 * An independent MurmurHash3 x86_32 (Appleby's reference algorithm, written from the C source with
 * Math.imul) so that the published vectors are not only "what the npm library says".
 */
function referenceMurmur3(bytes: Uint8Array, seed = 0): number {
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  let h = seed >>> 0;
  const blocks = bytes.length >>> 2;
  for (let b = 0; b < blocks; b++) {
    const i = b * 4;
    let k = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const tail = blocks * 4;
  const rest = bytes.length & 3;
  if (rest > 0) {
    let k = 0;
    if (rest === 3) k ^= bytes[tail + 2]! << 16;
    if (rest >= 2) k ^= bytes[tail + 1]! << 8;
    k ^= bytes[tail]!;
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
  }
  h ^= bytes.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const referenceBucket = (hashInput: string, flag: string, project: string, env: string): number =>
  referenceMurmur3(utf8(`${hashInput}/${flag}/${project}/${env}`)) % 100_000;

/** Random strings mixing ASCII, 2- and 3-byte characters, astral pairs and lone surrogates. */
function randomStrings(count: number, seed: number): string[] {
  let state = seed;
  const next = (n: number): number => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state % n;
  };
  const pieces = ['a', 'Z', '/', '0', 'é', 'ß', 'ж', '日', '語', '😀', '🚀', '\ud800', '\udfff', '\u0000', ' '];
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    let s = '';
    const length = next(20);
    for (let j = 0; j < length; j++) s += pieces[next(pieces.length)];
    out.push(s);
  }
  return out;
}

describe('murmur3', () => {
  test('the reference implementation reproduces published MurmurHash3_x86_32 seed-0 values', () => {
    assert.equal(referenceMurmur3(utf8('')), 0);
    assert.equal(referenceMurmur3(utf8('hello')), 0x248bfa47);
    assert.equal(referenceMurmur3(utf8('test')), 0xba6bd213);
    assert.equal(referenceMurmur3(utf8('The quick brown fox jumps over the lazy dog')), 0x2e4ff723);
  });

  test('agrees with the reference and with murmurhash.v3 on a string, for every length and script', () => {
    for (const s of randomStrings(3000, 7)) {
      const expected = referenceMurmur3(utf8(s));
      assert.equal(murmurhash.v3(s, 0), expected, JSON.stringify(s));
      assert.equal(murmur3(s), expected, JSON.stringify(s));
    }
  });

  test('a lone surrogate hashes as U+FFFD, like the WHATWG encoder', () => {
    assert.equal(murmur3('a\ud800b'), murmur3('a\ufffdb'));
    assert.equal(murmur3('\udc00'), referenceMurmur3(Uint8Array.of(0xef, 0xbf, 0xbd)));
  });

  test('long inputs and long suffixes agree', () => {
    const long = 'ü€😀'.repeat(800);
    assert.equal(murmur3(long), referenceMurmur3(utf8(long)));
    assert.equal(bucketFor(long, 'f', 'p', 'e'), referenceBucket(long, 'f', 'p', 'e'));
    // A suffix (flag key, project, environment) too long for the scratch buffer, alone and with a long input.
    const longKey = 'flag-ü'.repeat(300);
    assert.equal(bucketFor('user-1', longKey, 'p', 'e'), referenceBucket('user-1', longKey, 'p', 'e'));
    assert.equal(bucketFor(long, longKey, 'p', 'e'), referenceBucket(long, longKey, 'p', 'e'));
    // Short again after the long ones: the last suffix kept is replaced, not reused.
    assert.equal(bucketFor('user-1', 'f', 'p', 'e'), referenceBucket('user-1', 'f', 'p', 'e'));
  });
});

describe('bucketFor', () => {
  test('is murmur3 of "input/flag/project/environment" modulo 100000, checked independently', () => {
    for (const s of randomStrings(2000, 11)) {
      assert.equal(bucketFor(s, 'flag-😀', 'proj', 'env'), referenceBucket(s, 'flag-😀', 'proj', 'env'));
    }
    assert.equal(bucketFor('', '', '', ''), referenceMurmur3(utf8('///')) % 100_000);
  });

  test('every published bucketing vector matches the independent reference', () => {
    const file = new URL('../test-vectors/bucketing.json', import.meta.url);
    const { cases } = JSON.parse(readFileSync(file, 'utf8')) as {
      cases: { hash_input: string; flag_key: string; project_id: string; environment_id: string; bucket: number }[];
    };
    for (const c of cases) {
      assert.equal(referenceBucket(c.hash_input, c.flag_key, c.project_id, c.environment_id), c.bucket);
    }
  });

  test('published split buckets in evaluation.json come from the documented hash inputs', () => {
    // Hand-derived hash inputs of a few cases: the first context key, an org key, joined parameters.
    const suffix = ['checkout-redesign', 'proj-1', 'env-prod'] as const;
    const file = new URL('../test-vectors/evaluation.json', import.meta.url);
    const { cases } = JSON.parse(readFileSync(file, 'utf8')) as { cases: { name: string; expected: { bucket?: number } }[] };
    const bucketOf = (name: string): number | undefined => cases.find((c) => c.name === name)?.expected.bucket;
    assert.equal(bucketOf('50/50 split on the context key (user-1)'), referenceBucket('user-1', ...suffix));
    assert.equal(bucketOf('50/50 split on the context key (user-4)'), referenceBucket('user-4', ...suffix));
    assert.equal(bucketOf('split on a unicode key'), referenceBucket('Zoë-日本-😀', ...suffix));
    assert.equal(bucketOf('context_hash_specs hashes the organization key'), referenceBucket('acme', ...suffix));
    assert.equal(bucketOf('context_hash_specs with parameters joins their values'), referenceBucket('acme/d-77', ...suffix));
    assert.equal(bucketOf('flag-level hashing configs sorted by order'), referenceBucket('acme/eu', ...suffix));
    assert.equal(bucketOf('rule context_hash_specs win over flag-level hashing'), referenceBucket('user-1', ...suffix));
  });

  test('interleaving flags, projects and environments never reuses another flag\'s suffix', () => {
    const targets = [
      ['flag-a', 'p', 'e'],
      ['flag-b', 'p', 'e'],
      ['flag-a', 'p', 'f'],
      ['flag-a', 'q', 'e'],
      ['flag-ä', 'p', 'e'],
    ] as const;
    for (let i = 0; i < 500; i++) {
      const [flag, project, env] = targets[i % targets.length]!;
      assert.equal(bucketFor(`user-${i}`, flag, project, env), referenceBucket(`user-${i}`, flag, project, env));
    }
  });

  test('stays in 0..99999 and differs across flags and environments', () => {
    const a = bucketFor('user-1', 'flag-a', 'p', 'e');
    const b = bucketFor('user-1', 'flag-b', 'p', 'e');
    const c = bucketFor('user-1', 'flag-a', 'p', 'e2');
    assert.ok(a >= 0 && a < 100_000 && Number.isInteger(a));
    assert.notEqual(a, b);
    assert.notEqual(a, c);
  });
});

describe('pickBucket', () => {
  const halves: AllocationBucket[] = [
    { variant_key: 'a', weight_milli: 500 },
    { variant_key: 'b', weight_milli: 500 },
  ];

  test('splits at the cumulative weight_milli * 100 boundary', () => {
    assert.equal(pickBucket(halves, 0)?.variant_key, 'a');
    assert.equal(pickBucket(halves, 49_999)?.variant_key, 'a');
    assert.equal(pickBucket(halves, 50_000)?.variant_key, 'b');
    assert.equal(pickBucket(halves, 99_999)?.variant_key, 'b');
  });

  test('skips zero weights and handles 0.1 percent steps', () => {
    const buckets: AllocationBucket[] = [
      { variant_key: 'none', weight_milli: 0 },
      { variant_key: 'tiny', weight_milli: 1 },
      { variant_key: 'rest', weight_milli: 999 },
    ];
    assert.equal(pickBucket(buckets, 0)?.variant_key, 'tiny');
    assert.equal(pickBucket(buckets, 99)?.variant_key, 'tiny');
    assert.equal(pickBucket(buckets, 100)?.variant_key, 'rest');
  });

  test('weights summing to less than 1000 leave the top buckets unassigned', () => {
    assert.equal(pickBucket([{ variant_key: 'a', weight_milli: 100 }], 10_000), undefined);
    assert.equal(pickBucket([], 0), undefined);
  });
});

describe('resolveHashInput', () => {
  const user: EvaluationContext = { context_type: 'user', key: 'u1', parameters: { tenant: 'acme', n: 7, beta: true } };
  const org: EvaluationContext = { context_type: 'organization', key: 'o1', parameters: { region: 'eu' } };
  const alloc = (specs: PercentageAllocation['context_hash_specs']): PercentageAllocation => ({ context_hash_specs: specs, buckets: [] });

  test('without specs or configs: the first context key', () => {
    assert.equal(resolveHashInput(alloc({}), [], [org, user]), 'o1');
    assert.equal(resolveHashInput(alloc({}), undefined, [user]), 'u1');
  });

  test('specs: the first listed type present; empty names give its key, names join values', () => {
    assert.equal(resolveHashInput(alloc({ device: { parameter_names: [] }, user: { parameter_names: [] } }), [], [org, user]), 'u1');
    assert.equal(resolveHashInput(alloc({ user: { parameter_names: ['tenant', 'n', 'beta'] } }), [], [user]), 'acme/7/true');
    assert.equal(resolveHashInput(alloc({ user: { parameter_names: ['key', 'tenant'] } }), [], [user]), 'u1/acme');
  });

  test('specs: a missing parameter or no listed type gives no hash input', () => {
    assert.equal(resolveHashInput(alloc({ user: { parameter_names: ['tenant', 'absent'] } }), [], [user]), undefined);
    assert.equal(resolveHashInput(alloc({ device: { parameter_names: [] } }), [], [user]), undefined);
    assert.equal(resolveHashInput(alloc({ user: { parameter_names: ['toString'] } }), [], [user]), undefined);
  });

  test('flag-level configs are sorted by order and read their context type', () => {
    const configs = [
      { parameter_key: 'region', parameter_type: 'organization', order: 5 },
      { parameter_key: 'key', parameter_type: 'user', order: 1 },
    ];
    assert.equal(resolveHashInput(alloc({}), configs, [org, user]), 'u1/eu');
    assert.equal(resolveHashInput(alloc({}), configs, [user]), undefined);
  });

  test('the rule specs win over flag-level configs', () => {
    const configs = [{ parameter_key: 'key', parameter_type: 'organization', order: 1 }];
    assert.equal(resolveHashInput(alloc({ user: { parameter_names: [] } }), configs, [org, user]), 'u1');
  });
});

describe('bucketOfHash (integer-only modulo of a signed hash)', () => {
  // The reference: the unsigned value as a JavaScript number, then `%` (floating-point remainder).
  const reference = (hash: number): number => (hash >>> 0) % 100_000;

  test('the edges of the signed range and of each sign', () => {
    for (const hash of [0, 1, 99_999, 100_000, 2 ** 31 - 1, -1, -2, -67_296, -67_297, -100_000, -(2 ** 31), -(2 ** 31) + 1]) {
      assert.equal(bucketOfHash(hash), reference(hash), String(hash));
    }
  });

  test('every signed 32-bit value drawn at random', () => {
    fc.assert(fc.property(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), (hash) => bucketOfHash(hash) === reference(hash)), { numRuns: 100_000 });
  });
});
