import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import murmurhash from 'murmurhash';
import { murmur3WithSuffix, prepareSuffix } from '../src/evaluation/murmur3.ts';
import { bucketFor, murmur3 } from '../src/evaluation/index.ts';

/**
 * Core's own murmur3 (packages/core/src/evaluation/murmur3.ts) against sources that are not it:
 * the npm `murmurhash` package (a devDependency, used here only), the WHATWG TextEncoder for the
 * bytes, and bucketing.json, whose buckets were recomputed outside the repository with a Python
 * implementation and the `mmh3` package (packages/core/test-vectors/README.md).
 */

const encoder = new TextEncoder();
const libraryHash = (bytes: Uint8Array): number => murmurhash.v3(bytes, 0);
const joined = (a: Uint8Array, b: Uint8Array): Uint8Array => {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
};

/** Code units of every kind the encoder treats differently, and the edges between them. */
const UNITS = [
  0x00, 0x2f, 0x41, 0x7f, // 1 byte
  0x80, 0xe9, 0x7ff, // 2 bytes
  0x800, 0x65e5, 0xd7ff, 0xe000, 0xfffd, 0xffff, // 3 bytes
  0xd800, 0xdbff, 0xdc00, 0xdfff, // surrogates: pairs when high then low, else lone (U+FFFD)
];
const unit = fc.constantFrom(...UNITS.map((u) => String.fromCharCode(u)));
const astral = fc.constantFrom('😀', '🚀', '\u{10000}', '\u{10ffff}', '\u{1d11e}');
/** Strings mixing ASCII, 2- and 3-byte characters, surrogate pairs and lone surrogates. */
const mixed = fc.array(fc.oneof(unit, astral, fc.string({ maxLength: 3 }), fc.string({ unit: 'binary', maxLength: 3 })), { maxLength: 24 }).map((parts) => parts.join(''));

describe('murmur3 (core) against murmurhash.v3', () => {
  test('published MurmurHash3_x86_32 seed-0 values, through the library', () => {
    for (const [text, hash] of [['', 0], ['hello', 0x248bfa47], ['test', 0xba6bd213], ['The quick brown fox jumps over the lazy dog', 0x2e4ff723]] as const) {
      assert.equal(libraryHash(encoder.encode(text)), hash, text);
      assert.equal(murmur3(text), hash, text);
    }
  });

  test('every length 0-64 of ASCII, 2-, 3- and 4-byte text (every byte length mod 4)', () => {
    for (const piece of ['a', 'é', '日', '😀', 'a日', 'é😀', '\ud800', 'x\udc00']) {
      for (let length = 0; length <= 64; length++) {
        const text = piece.repeat(length);
        assert.equal(murmur3(text), libraryHash(encoder.encode(text)), JSON.stringify(text));
        assert.equal(murmur3(text), murmurhash.v3(text, 0), JSON.stringify(text));
      }
    }
  });

  test('lone surrogates hash as U+FFFD (EF BF BD), as TextEncoder encodes them', () => {
    const fffd = Uint8Array.of(0xef, 0xbf, 0xbd);
    assert.equal(murmur3('\ud800'), libraryHash(fffd));
    assert.equal(murmur3('\udfff'), libraryHash(fffd));
    assert.equal(murmur3('a\udc00\ud800b'), libraryHash(Uint8Array.of(0x61, ...fffd, ...fffd, 0x62)));
    // A high surrogate at the very end, and a low one before a high one: both lone.
    assert.equal(murmur3('ab\udbff'), libraryHash(Uint8Array.of(0x61, 0x62, ...fffd)));
    assert.equal(murmur3('\udc00\ud800'), libraryHash(Uint8Array.of(...fffd, ...fffd)));
    // A pair is one 4-byte character.
    assert.equal(murmur3('\ud83d\ude00'), libraryHash(Uint8Array.of(0xf0, 0x9f, 0x98, 0x80)));
  });

  test('random strings: arbitrary code units, and mixes of every kind', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), mixed), (text) => {
        assert.equal(murmur3(text), libraryHash(encoder.encode(text)));
        assert.equal(murmur3(text), murmurhash.v3(text, 0));
      }),
      { numRuns: 20_000 },
    );
  });

  test('a prepared suffix gives the hash of the input bytes followed by the suffix bytes, at every alignment', () => {
    fc.assert(
      fc.property(mixed, mixed, (input, suffix) => {
        const expected = libraryHash(joined(encoder.encode(input), encoder.encode(suffix)));
        assert.equal(murmur3WithSuffix(input, prepareSuffix(suffix)), expected);
      }),
      { numRuns: 20_000 },
    );
    // Every input length mod 4 against every suffix length 0-12.
    for (let inputLength = 0; inputLength < 8; inputLength++) {
      for (let suffixLength = 0; suffixLength <= 12; suffixLength++) {
        const input = 'u'.repeat(inputLength);
        const suffix = '/'.repeat(suffixLength);
        assert.equal(murmur3WithSuffix(input, prepareSuffix(suffix)), murmurhash.v3(input + suffix, 0), `${inputLength} + ${suffixLength}`);
      }
    }
  });

  test('runs of ASCII read four at a time: after every alignment, and broken by a non-ASCII unit at every place of the four', () => {
    for (const prefix of ['', 'a', 'ab', 'abc', 'é', '日', '😀', 'é日']) {
      for (let run = 0; run <= 9; run++) {
        for (const breaker of ['', 'é', '日', '😀', '\ud800']) {
          for (let at = 0; at <= run; at++) {
            const ascii = 'k'.repeat(run);
            const text = prefix + ascii.slice(0, at) + breaker + ascii.slice(at) + 'z';
            assert.equal(murmur3(text), libraryHash(encoder.encode(text)), JSON.stringify(text));
            assert.equal(murmur3WithSuffix(text, prepareSuffix('/f/p/e')), libraryHash(encoder.encode(`${text}/f/p/e`)), JSON.stringify(text));
          }
        }
      }
    }
  });

  test('long inputs (no buffer, no limit)', () => {
    const long = 'ü€😀a'.repeat(2000);
    assert.equal(murmur3(long), libraryHash(encoder.encode(long)));
    const longKey = 'flag-ü'.repeat(1000);
    const expected = libraryHash(encoder.encode(`${long}/${longKey}/p/e`)) % 100_000;
    assert.equal(bucketFor(long, longKey, 'p', 'e'), expected);
  });
});

describe('bucketing with core murmur3 against the independent vectors', () => {
  const vectors = JSON.parse(readFileSync(new URL('../test-vectors/bucketing.json', import.meta.url), 'utf8')) as {
    cases: { hash_input: string; flag_key: string; project_id: string; environment_id: string; bucket: number }[];
  };

  test('every case of bucketing.json (Python MurmurHash3 and mmh3), and the library agrees', () => {
    assert.ok(vectors.cases.length >= 40);
    for (const c of vectors.cases) {
      const text = `${c.hash_input}/${c.flag_key}/${c.project_id}/${c.environment_id}`;
      assert.equal(bucketFor(c.hash_input, c.flag_key, c.project_id, c.environment_id), c.bucket, JSON.stringify(c));
      assert.equal(murmur3(text) % 100_000, c.bucket, JSON.stringify(c));
      assert.equal(murmurhash.v3(text, 0) % 100_000, c.bucket, JSON.stringify(c));
    }
  });
});
