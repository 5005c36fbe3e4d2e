import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RE2JS } from 're2js';
import { MAX_MATCHES_PROGRAM_SIZE, conditionHolds, matchesProgramSize } from '../src/evaluation/index.ts';
import { checkConditions, isDomainError } from '../src/index.ts';
import { requiredLiteral } from '../src/evaluation/required-literal.ts';

/** A small seeded generator (mulberry32), so a failure names a reproducible case. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(next: () => number, items: readonly T[]): T => items[Math.floor(next() * items.length)]!;

const LITERALS = ['a', 'b', 'c', 'x', '@', '-', '1', '\\.', '\\-', '\\+', '\\(', '\\|', '\\{'];
const OTHER_ATOMS = ['.', '[ab]', '[^a]', '[]a]', '[a-c]', '[.x]', '\\d', '\\w', '\\b', '\\s'];
const QUANTIFIERS = ['', '', '', '?', '*', '+', '{0,2}', '{1}', '{2,}', '{1,3}', '??', '+?', '*?', '{0}'];

/** A random RE2 pattern over a small alphabet: literals, classes, escapes, groups with alternatives, quantifiers, anchors, flags. */
function randomPattern(next: () => number, depth = 0): string {
  let pattern = '';
  const items = 1 + Math.floor(next() * 5);
  for (let i = 0; i < items; i++) {
    const kind = next();
    let atom: string;
    if (kind < 0.55) atom = pick(next, LITERALS);
    else if (kind < 0.75) atom = pick(next, OTHER_ATOMS);
    else if (depth < 2) {
      const alternatives = 1 + Math.floor(next() * 3);
      const body = Array.from({ length: alternatives }, () => randomPattern(next, depth + 1)).join('|');
      atom = `${pick(next, ['(', '(?:', '(?i:'])}${body})`;
    } else atom = pick(next, LITERALS);
    pattern += atom + pick(next, QUANTIFIERS);
  }
  if (depth === 0) {
    if (next() < 0.15) pattern = `${pattern}|${randomPattern(next, 1)}`;
    if (next() < 0.2) pattern = `^${pattern}`;
    if (next() < 0.2) pattern = `${pattern}$`;
    if (next() < 0.05) pattern = `(?i)${pattern}`;
  }
  return pattern;
}

/** Inputs that often match: pieces of the pattern's own text with its escapes removed, and random characters. */
function randomInput(next: () => number, pattern: string): string {
  const plain = pattern.replace(/\\(.)/g, '$1').replace(/[()[\]{}?*+|^$]/g, '');
  let input = '';
  const pieces = Math.floor(next() * 4);
  for (let i = 0; i < pieces; i++) {
    if (next() < 0.6 && plain.length > 0) {
      const start = Math.floor(next() * plain.length);
      input += plain.slice(start, start + 1 + Math.floor(next() * 6));
    } else input += pick(next, ['a', 'b', 'c', 'x', '@', '.', '-', '1', ' ', 'A', 'B', 'ab', 'abc', 'aab']);
  }
  return input;
}

describe('requiredLiteral (the matches pre-check)', () => {
  test('hand-derived literals: the longest top-level run no match can lack', () => {
    const cases: Array<[string, string | undefined]> = [
      ['^[a-z0-9.-]+@(corp|staff)\\.example\\.com$', '.example.com'],
      ['abc', 'abc'],
      ['a?bc', 'bc'], // a is optional
      ['ab*c', 'a'], // b is optional, so "ab" is not required; "a" and "c" are
      ['ab+c', 'ab'], // b at least once, but "abc" need not appear ("abbc")
      ['a{0,2}bc', 'bc'],
      ['xa{2}bc', 'xa'],
      ['abc??d', 'ab'],
      ['foo(bar)?baz', 'foo'],
      ['\\d+xyz', 'xyz'],
      ['hello\\.', 'hello.'],
      ['[]a]bc', 'bc'],
      ['(a|b)cd', 'cd'],
      // Given up on: top-level alternation, case folding, quoting, nested classes, non-ASCII,
      // a brace that is not a repeat, and patterns without any literal text.
      ['a|bc', undefined],
      ['(?i)abc', undefined],
      ['(?i:x)abc', undefined],
      ['\\Qa.b\\E', undefined],
      ['a[[:alpha:]]b', undefined],
      ['café', undefined],
      ['ab{x}', undefined],
      ['\\d+', undefined],
      ['.*', undefined],
    ];
    for (const [pattern, expected] of cases) assert.equal(requiredLiteral(pattern), expected, pattern);
  });

  test('never wrong against re2js: whenever a pattern matches an input, the input holds its literal', () => {
    const next = random(20261124);
    let compiled = 0;
    let matchedWithLiteral = 0;
    let refusedWithoutEngine = 0;
    for (let p = 0; p < 3000; p++) {
      const pattern = randomPattern(next);
      let re: RE2JS;
      try {
        re = RE2JS.compile(pattern);
      } catch {
        continue;
      }
      compiled++;
      const literal = requiredLiteral(pattern);
      for (let i = 0; i < 24; i++) {
        const input = randomInput(next, pattern);
        const matches = re.test(input);
        if (literal === undefined) continue;
        if (matches) {
          matchedWithLiteral++;
          assert.ok(input.includes(literal), `pattern ${JSON.stringify(pattern)} matches ${JSON.stringify(input)}, which lacks ${JSON.stringify(literal)}`);
        } else if (!input.includes(literal)) refusedWithoutEngine++;
      }
    }
    // The property was exercised, not skipped: many matches had a literal to check.
    assert.ok(compiled > 2000, `only ${compiled} patterns compiled`);
    assert.ok(matchedWithLiteral > 2000, `only ${matchedWithLiteral} matches had a literal`);
    assert.ok(refusedWithoutEngine > 3000, `only ${refusedWithoutEngine} inputs were answered by the pre-check`);
  });

  test('the pre-check\'s search is bounded by the matches budget: a literal costs at least its length in program size, so a long one is refused at write time', () => {
    const matches = (pattern: string) => [{ attribute: 'email', op: 'matches' as const, values: [pattern] }];
    for (const length of [10, 100, 400]) {
      const pattern = `^${'ab'.repeat(length / 2)}x+@`;
      assert.equal(requiredLiteral(pattern), 'ab'.repeat(length / 2) + 'x');
      assert.ok(matchesProgramSize(matches(pattern)) > length, `a ${length}-character literal compiles to more than ${length} instructions`);
    }
    // Past the budget the pattern never reaches evaluation: the write is refused.
    const tooLong = `@${'z'.repeat(MAX_MATCHES_PROGRAM_SIZE)}`;
    assert.equal(requiredLiteral(tooLong)?.length, MAX_MATCHES_PROGRAM_SIZE + 1);
    assert.throws(() => checkConditions(matches(tooLong), 'conditions'), (error: unknown) => isDomainError(error) && error.code === 'INVALID_ARGUMENT' && /RE2 instructions/.test(error.message));
  });

  test('a matches condition answers as re2js does, with and without the literal in the input', () => {
    const pattern = '^[a-z0-9.-]+@(corp|staff)\\.example\\.com$';
    const re = RE2JS.compile(pattern);
    const inputs = ['ann@corp.example.com', 'bob@staff.example.com', 'ann@mail.example.org', 'ann@corp.example.co', 'x.example.com', 'ANN@corp.example.com', '', 'ann@corp.example.com\n'];
    for (const input of inputs) {
      const holds = conditionHolds({ attribute: 'email', op: 'matches', values: [pattern] }, [{ context_type: 'user', key: 'u', parameters: { email: input } }]);
      assert.equal(holds, re.test(input), JSON.stringify(input));
    }
  });
});
