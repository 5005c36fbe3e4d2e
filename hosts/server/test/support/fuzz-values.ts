import { createHash } from 'node:crypto';
import fc from 'fast-check';

/**
 * What the fuzz tests (rest-fuzz.test.ts, grpc-fuzz.test.ts) share: the seed and run count, and
 * the hostile values they mix into otherwise well-formed requests.
 *
 * The seed is fixed (17) unless FUZZ_SEED says otherwise, so every run — CI included — sends the
 * same requests, and a failure names the seed that replays it. FUZZ_RUNS raises the cases per
 * operation (at least 100); FUZZ_SHRINK=1 lets fast-check shrink a failure to a smaller request
 * (slower: each step is a real request).
 */
export const FUZZ_SEED = Number.parseInt(process.env.FUZZ_SEED ?? '17', 10);
export const FUZZ_RUNS = Math.max(100, Number.parseInt(process.env.FUZZ_RUNS ?? '100', 10));
export const FUZZ_SHRINK = process.env.FUZZ_SHRINK === '1';

/** One seed per operation, derived from FUZZ_SEED and its name, so one operation replays on its own. */
export function seedFor(operation: string): number {
  return createHash('sha256').update(`${FUZZ_SEED}:${operation}`).digest().readInt32BE(0);
}

/** How to replay a finding, printed with each failure. */
export const replayHint = (operation: string): string => `replay with FUZZ_SEED=${FUZZ_SEED} (operation ${operation}, its fast-check seed ${seedFor(operation)})`;

/** Strings that have broken servers: NUL, lone surrogates, odd Unicode, injection-shaped text, numbers as text. */
export const ODD_STRINGS: readonly string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\u0000'.repeat(64),
  '\ud800',
  '\udfff',
  'x\ud83d',
  '\ude00y',
  '😀',
  '👍🏽👨‍👩‍👧',
  '中文字符',
  '\u202eevil',
  '\ufeff',
  '\ufffd',
  '\u0085\u2028\u2029',
  'e\u0301',
  '\u0001\u001f\u007f',
  '\n\r\t',
  '%00',
  '%ED%A0%80',
  '../../etc/passwd',
  "' OR 1=1 --",
  '"; DROP TABLE x; --',
  '${jndi:ldap://x}',
  '<script>alert(1)</script>',
  '\\',
  '"',
  '{}',
  'null',
  'NaN',
  '-1',
  '1e400',
  '99999999999999999999',
  '00000000-0000-0000-0000-000000000000',
  'not-a-uuid',
];

/** Long strings: around the usual caps (128, 1024, 4096) and far beyond them, inside the 1 MiB body. */
const LONG_STRINGS: readonly string[] = ['k'.repeat(129), 'x'.repeat(1025), 'é'.repeat(4097), '😀'.repeat(3000), 'a'.repeat(100_000), `${'\u0000'.repeat(10)}${'b'.repeat(20_000)}`];

/** The characters PostgreSQL cannot store as sent (issue: they reached it and answered 500). */
const BAD_CHARACTERS = ['\u0000', '\ud800', '\udbff', '\udc00', '\udfff'] as const;

/** `base`'s values with one U+0000 or lone surrogate put in at any position: well-formed otherwise, so the rest of a request still passes. */
export function withBadCharacter(base: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.tuple(base, fc.constantFrom(...BAD_CHARACTERS), fc.nat()).map(([raw, bad, at]) => {
    const value = String(raw ?? '');
    const position = value.length === 0 ? 0 : at % (value.length + 1);
    return value.slice(0, position) + bad + value.slice(position);
  });
}

/** Hostile strings short enough for a URL (node:http takes 16 KiB of request line and headers). */
export const hostileUrlString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...ODD_STRINGS) },
  { weight: 3, arbitrary: withBadCharacter(fc.string({ maxLength: 20 })) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.uuid() },
  { weight: 1, arbitrary: fc.constantFrom(...LONG_STRINGS.slice(0, 2)) },
);

/** A string that is likely to be refused: odd, carrying a bad character, long, random in any code unit (lone surrogates included), or a random id. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: hostileUrlString },
  { weight: 1, arbitrary: fc.constantFrom(...LONG_STRINGS) },
);

/** `[[[…]]]` or `{"a":{"a":…}}` `levels` deep. */
function nested(levels: number, asObject: boolean): unknown {
  let value: unknown = 'deep';
  for (let i = 0; i < levels; i++) value = asObject ? { a: value } : [value];
  return value;
}

/** A value of any JSON type, including ones no schema asks for: nulls, extreme numbers, deep or wide structures, prototype keys. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  {
    weight: 3,
    arbitrary: fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, -0.000001, 2 ** 31, -(2 ** 31) - 1, 2 ** 53 + 2, -(2 ** 63), 1e308, -1e308),
  },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.constantFrom<unknown>([], {}, [null], [''], nested(30, false), nested(70, false), nested(40, true), nested(70, true)) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(Array.from({ length: 2000 }, (_, i) => `k${i}`), Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`f${i}`, i]))) },
  // JSON.stringify keeps an own "__proto__" key: the parser must refuse it, not merge it.
  { weight: 1, arbitrary: fc.constantFrom<unknown>(JSON.parse('{"__proto__":{"admin":true}}'), { constructor: { prototype: { admin: true } } }) },
);

/**
 * Percent-encodes a string for a URL. A lone surrogate has no UTF-8 form, so it is written as the
 * three bytes of its WTF-8 form (`%ED%A0%80`): what a client that does not check would send.
 */
export function percentEncode(value: string): string {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    const next = value.charCodeAt(i + 1);
    if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out += encodeURIComponent(value.slice(i, i + 2));
      i++;
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      out += [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)].map((byte) => `%${byte.toString(16).toUpperCase()}`).join('');
    } else {
      out += encodeURIComponent(value[i]!);
    }
  }
  return out;
}

/** A response text that leaks internals: a stack frame, or PostgreSQL's wording of a statement or its failure. */
export const LEAK_PATTERN = /\n\s+at [^\n]*:\d+:\d+|\bnode_modules\b|\b(INSERT INTO|DELETE FROM)\b|\bSELECT\b[^"]{0,80}\bFROM\b|violates [a-z ]*constraint|invalid input syntax for|invalid byte sequence for encoding|SQLSTATE/;
