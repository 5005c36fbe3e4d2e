import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RE2JS } from 're2js';
import semver from 'semver';
import { MAX_PATTERN_LENGTH, allConditionsHold, conditionHolds, validateConditions } from '../src/evaluation/index.ts';
import { toEpochMillis, toNumber } from '../src/evaluation/conditions.ts';
import type { Condition, ConditionOp, ConditionValue, EvaluationContext, ParameterValue } from '../src/index.ts';

const user = (parameters: Record<string, ParameterValue> = {}, key = 'u1'): EvaluationContext => ({ context_type: 'user', key, parameters });

/** Whether `op values` holds for a user whose `attr` is `value` (absent when undefined). */
function holds(op: ConditionOp, values: ConditionValue[], value: ParameterValue | undefined, negate = false): boolean {
  const condition: Condition = { attribute: 'attr', op, values, negate };
  return conditionHolds(condition, [user(value === undefined ? {} : { attr: value })]);
}

describe('condition ops', () => {
  test('eq and in: any of the values, strict types with documented coercions', () => {
    assert.equal(holds('eq', ['pro'], 'pro'), true);
    assert.equal(holds('eq', ['pro'], 'PRO'), false);
    assert.equal(holds('in', ['a', 'b', 'c'], 'c'), true);
    assert.equal(holds('in', ['a', 'b', 'c'], 'd'), false);
    assert.equal(holds('eq', [30], 30), true);
    assert.equal(holds('eq', [30], '30'), true);
    assert.equal(holds('eq', ['30'], 30), true);
    assert.equal(holds('eq', ['30'], '30.0'), false, 'two strings compare as strings');
    assert.equal(holds('eq', [30], '0x1e'), false, 'only decimal strings are numeric');
    assert.equal(holds('eq', [true], true), true);
    assert.equal(holds('eq', [true], 'true'), true);
    assert.equal(holds('eq', ['false'], false), true);
    assert.equal(holds('eq', [true], 1), false);
    assert.equal(holds('eq', [0], false), false);
    assert.equal(holds('in', [], 'x'), false);
    assert.equal(holds('in', ['a', 30], '30'), true, 'a numeric string equals a number among other values');
    assert.equal(holds('in', ['a', 'b'], '30'), false);
  });

  test('contains, starts_with, ends_with work on strings only', () => {
    assert.equal(holds('contains', ['@example.'], 'ann@example.com'), true);
    assert.equal(holds('contains', ['x', 'ample'], 'example'), true);
    assert.equal(holds('starts_with', ['ann'], 'ann@example.com'), true);
    assert.equal(holds('starts_with', ['bob'], 'ann@example.com'), false);
    assert.equal(holds('ends_with', ['.com'], 'ann@example.com'), true);
    assert.equal(holds('ends_with', ['5'], 12345), false);
    assert.equal(holds('contains', [1], '123'), false);
  });

  test('matches: one pattern shared by many conditions answers each input for itself (its last-input memo never leaks)', () => {
    // Conditions of different flags with the same pattern text share one compiled pattern.
    const pattern = '^[a-z]+@(corp|staff)\\.example\\.com$';
    const inputs = ['ann@corp.example.com', 'bob@mail.example.org', 'ann@corp.example.com', 'ann@corp.example.com ', 'cy@staff.example.com', ''];
    const expected = [true, false, true, false, true, false];
    for (let round = 0; round < 2; round++) {
      inputs.forEach((input, i) => {
        assert.equal(holds('matches', [pattern], input), expected[i], `${JSON.stringify(input)} (round ${round})`);
        assert.equal(holds('matches', ['^bob@'], input), input.startsWith('bob@'), `another pattern in between: ${JSON.stringify(input)}`);
      });
    }
  });

  test('matches: a regular expression, invalid or over-long patterns never match and never throw', () => {
    assert.equal(holds('matches', ['^u\\d+$'], 'u42'), true);
    assert.equal(holds('matches', ['^u\\d+$'], 'x42'), false);
    assert.equal(holds('matches', ['(['], 'anything'), false);
    assert.equal(holds('matches', ['(['], 'anything', true), true, 'negate inverts a present attribute');
    assert.equal(holds('matches', ['a'.repeat(MAX_PATTERN_LENGTH + 1)], 'a'.repeat(MAX_PATTERN_LENGTH + 1)), false);
    assert.equal(holds('matches', ['a'.repeat(MAX_PATTERN_LENGTH)], 'a'.repeat(MAX_PATTERN_LENGTH)), true);
    assert.equal(holds('matches', ['^1'], 123), false);
  });

  test('matches compiles each pattern once, not per evaluation', () => {
    // A pattern no other test uses: compiled patterns are also cached by text.
    const condition: Condition = { attribute: 'attr', op: 'matches', values: ['^compile-once-'] };
    const original = RE2JS.compile;
    let compiled = 0;
    RE2JS.compile = (regex: string, flags?: number) => {
      compiled++;
      return original.call(RE2JS, regex, flags);
    };
    try {
      for (let i = 0; i < 1000; i++) {
        assert.equal(conditionHolds(condition, [user({ attr: i % 2 ? 'compile-once-x' : 'x' })]), i % 2 === 1);
      }
      // A new document carrying the same pattern (a reloaded snapshot) reuses the compiled pattern.
      assert.equal(conditionHolds({ ...condition, values: ['^compile-once-'] }, [user({ attr: 'compile-once-y' })]), true);
    } finally {
      RE2JS.compile = original;
    }
    assert.equal(compiled, 1);
  });

  test('matches runs in linear time: a catastrophic-backtracking pattern answers promptly (ReDoS)', () => {
    // With a backtracking engine (JavaScript's RegExp), ^(a+)+$ against n 'a's and a '!' tries
    // every way of splitting the a's into groups, about 2^n steps: n = 30 already takes seconds,
    // n = 100,000 would never finish. RE2 reads the input once per automaton state.
    const input = `${'a'.repeat(100_000)}!`;
    const started = performance.now();
    assert.equal(holds('matches', ['^(a+)+$'], input), false);
    assert.equal(holds('matches', ['^(a|a)*$'], input), false);
    assert.equal(holds('matches', ['(x+x+)+y'], 'x'.repeat(100_000)), false);
    assert.equal(holds('matches', ['^(a+)+!$'], input), true);
    const elapsed = performance.now() - started;
    // Generous for a busy 2-core machine: linear matching takes tens of milliseconds here.
    assert.ok(elapsed < 5000, `took ${Math.round(elapsed)} ms`);
  });

  test('matches speaks RE2 syntax: anchors, classes, alternation, repetition, (?i), unanchored search', () => {
    // Anchors: ^ and $ are the start and end of the whole value (no multi-line mode).
    assert.equal(holds('matches', ['^[a-z]+@example\\.com$'], 'bob@example.com'), true);
    assert.equal(holds('matches', ['^[a-z]+@example\\.com$'], 'bob@example.com.evil'), false);
    assert.equal(holds('matches', ['^[a-z]+@example\\.com$'], 'Bob@example.com'), false, 'case-sensitive by default');
    assert.equal(holds('matches', ['^beta'], 'a beta'), false);
    assert.equal(holds('matches', ['end$'], 'the end\n'), false, '$ is the end of the text, not before a final newline');
    // Without anchors the pattern may match anywhere in the value.
    assert.equal(holds('matches', ['example'], 'bob@example.com'), true);
    // Classes: \d, \w, \s, negated, POSIX, Unicode.
    assert.equal(holds('matches', ['^\\d{3}-\\d{4}$'], '555-1234'), true);
    assert.equal(holds('matches', ['^\\d{3}-\\d{4}$'], '555-12345'), false);
    assert.equal(holds('matches', ['^\\w+\\s\\w+$'], 'hello world'), true);
    assert.equal(holds('matches', ['^[^@]+$'], 'no-at-sign'), true);
    assert.equal(holds('matches', ['^[^@]+$'], 'a@b'), false);
    assert.equal(holds('matches', ['^[[:upper:]]{2}$'], 'DE'), true);
    assert.equal(holds('matches', ['^\\p{Greek}+$'], 'αβγ'), true);
    assert.equal(holds('matches', ['^.$'], '😀'), true, '. is one code point, not one UTF-16 unit');
    // Alternation, groups and counted repetition.
    assert.equal(holds('matches', ['^(DE|FR|IT)$'], 'FR'), true);
    assert.equal(holds('matches', ['^(DE|FR|IT)$'], 'ES'), false);
    assert.equal(holds('matches', ['^(?:ab){2,3}$'], 'ababab'), true);
    assert.equal(holds('matches', ['^(?:ab){2,3}$'], 'ab'), false);
    assert.equal(holds('matches', ['\\bfoo\\b'], 'a foo b'), true);
    assert.equal(holds('matches', ['\\bfoo\\b'], 'afoob'), false);
    // Flags inside the pattern: (?i) case-insensitive, (?s) dot matches newline.
    assert.equal(holds('matches', ['(?i)^[a-z]+@EXAMPLE\\.com$'], 'Bob@Example.COM'), true);
    assert.equal(holds('matches', ['^a.b$'], 'a\nb'), false);
    assert.equal(holds('matches', ['(?s)^a.b$'], 'a\nb'), true);
    // Named groups in both spellings compile.
    assert.equal(holds('matches', ['^(?P<user>[a-z]+)@(?<host>[a-z.]+)$'], 'ann@example.com'), true);
  });

  test('lt, lte, gt, gte compare numbers; decimal numeric strings are coerced', () => {
    assert.equal(holds('lt', [18], 17), true);
    assert.equal(holds('lt', [18], 18), false);
    assert.equal(holds('lte', [18], 18), true);
    assert.equal(holds('gt', [18], '19'), true);
    assert.equal(holds('gt', ['18.5'], 18.6), true);
    assert.equal(holds('gte', [18], '1e2'), true);
    assert.equal(holds('gte', [18], 'adult'), false);
    assert.equal(holds('gte', [18], ''), false);
    assert.equal(holds('gte', [18], true), false);
    assert.equal(holds('lt', ['abc'], 1), false, 'a non-numeric condition value is ignored');
    assert.equal(holds('lt', [5, 100], 50), true, 'any of the values');
  });

  test('semver ops agree with the semver library on every pair, pre-releases and build metadata included', () => {
    const versions = ['0.0.1', '1.0.0', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-beta', '1.0.0+build.5', '1.2.3', '1.10.0', '1.9.9', '2.0.0', '2.0.0-rc.1', '10.0.0', '1.2.3-0', 'v1.2.3'];
    for (const a of versions) {
      for (const b of versions) {
        assert.equal(holds('semver_gt', [b], a), semver.gt(a, b), `${a} > ${b}`);
        assert.equal(holds('semver_lt', [b], a), semver.lt(a, b), `${a} < ${b}`);
        assert.equal(holds('semver_eq', [b], a), semver.eq(a, b), `${a} = ${b}`);
      }
    }
  });

  test('semver ops compare versions; invalid versions are false', () => {
    assert.equal(holds('semver_eq', ['1.2.3'], '1.2.3'), true);
    assert.equal(holds('semver_eq', ['1.2.3'], 'v1.2.3'), true);
    assert.equal(holds('semver_lt', ['1.10.0'], '1.9.9'), true);
    assert.equal(holds('semver_gt', ['1.10.0'], '1.9.9'), false);
    assert.equal(holds('semver_lt', ['2.0.0'], '2.0.0-rc.1'), true, 'a prerelease sorts before its release');
    assert.equal(holds('semver_gt', ['1.0.0'], 'latest'), false);
    assert.equal(holds('semver_gt', ['1.0.0'], '1.2'), false);
    assert.equal(holds('semver_gt', ['not-a-version'], '1.2.0'), false);
    assert.equal(holds('semver_gt', ['1.0.0'], 2), false);
    assert.equal(holds('semver_gt', ['1.0.0'], `1.${'1'.repeat(300)}.0`), false, 'over-long versions are invalid');
  });

  test('semver ops stay correct over more distinct context versions than the parse cache keeps', () => {
    for (let i = 0; i < 10_000; i++) {
      assert.equal(holds('semver_gt', ['1.5000.0'], `1.${i}.0`), i > 5000, `1.${i}.0`);
      assert.equal(holds('semver_eq', ['1.5000.0'], `1.${i}.0`), i === 5000);
    }
  });

  test('before and after accept epoch ms and ISO 8601 on both sides', () => {
    const jan1 = Date.UTC(2024, 0, 1);
    assert.equal(holds('before', [jan1], '2023-12-31T23:59:59Z'), true);
    assert.equal(holds('before', ['2024-01-01'], jan1 - 1), true);
    assert.equal(holds('after', ['2024-01-01T00:00:00Z'], jan1 + 1), true);
    assert.equal(holds('after', [jan1], jan1), false);
    assert.equal(holds('after', [jan1], '2024-01-01T00:30:00+01:00'), false);
    assert.equal(holds('after', [jan1], 'yesterday'), false);
    assert.equal(holds('after', [jan1], '1704067200001'), false, 'a numeric string is not a date');
  });

  test('exists holds for any present attribute value, falsy ones included', () => {
    assert.equal(holds('exists', [], ''), true);
    assert.equal(holds('exists', [], false), true);
    assert.equal(holds('exists', [], 0), true);
    assert.equal(holds('exists', [], undefined), false);
  });
});

describe('absent attributes and negate', () => {
  test('an absent attribute is false for every op, negated or not, except negated exists', () => {
    for (const op of ['eq', 'in', 'contains', 'starts_with', 'ends_with', 'matches', 'lt', 'lte', 'gt', 'gte',
      'semver_eq', 'semver_lt', 'semver_gt', 'before', 'after'] as const) {
      assert.equal(holds(op, ['x'], undefined), false, op);
      assert.equal(holds(op, ['x'], undefined, true), false, `negated ${op}`);
    }
    assert.equal(holds('exists', [], undefined), false);
    assert.equal(holds('exists', [], undefined, true), true);
  });

  test('negate inverts the result on a present attribute, a type mismatch included', () => {
    assert.equal(holds('eq', ['pro'], 'free', true), true);
    assert.equal(holds('eq', ['pro'], 'pro', true), false);
    assert.equal(holds('gt', [1], 'not-a-number', true), true);
    assert.equal(holds('exists', [], 'x', true), false);
  });

  test('inherited object members and null parameters are absent', () => {
    const odd = { context_type: 'user', key: 'u1', parameters: { nothing: null } } as unknown as EvaluationContext;
    assert.equal(conditionHolds({ attribute: 'toString', op: 'exists', values: [] }, [user()]), false);
    assert.equal(conditionHolds({ attribute: 'constructor', op: 'exists', values: [], negate: true }, [user()]), true);
    assert.equal(conditionHolds({ attribute: 'nothing', op: 'exists', values: [] }, [odd]), false);
  });

  test('an unknown op is false, negated or not', () => {
    const bogus = { attribute: 'attr', op: 'resembles', values: ['x'], negate: true } as unknown as Condition;
    assert.equal(conditionHolds(bogus, [user({ attr: 'x' })]), false);
  });
});

describe('context selection', () => {
  const u = user({ tier: 'free', plan: 'pro' }, 'u1');
  const org: EvaluationContext = { context_type: 'organization', key: 'acme', parameters: { tier: 'enterprise', seats: 50 } };

  test('"key" is the context key, not a parameter named key', () => {
    const shadow: EvaluationContext = { context_type: 'user', key: 'real', parameters: { key: 'fake' } };
    assert.equal(conditionHolds({ attribute: 'key', op: 'eq', values: ['real'] }, [shadow]), true);
    assert.equal(conditionHolds({ attribute: 'key', op: 'eq', values: ['fake'] }, [shadow]), false);
  });

  test('context_type selects that context', () => {
    assert.equal(conditionHolds({ context_type: 'organization', attribute: 'tier', op: 'eq', values: ['enterprise'] }, [u, org]), true);
    assert.equal(conditionHolds({ context_type: 'user', attribute: 'tier', op: 'eq', values: ['enterprise'] }, [u, org]), false);
    assert.equal(conditionHolds({ context_type: 'organization', attribute: 'key', op: 'eq', values: ['acme'] }, [u, org]), true);
    assert.equal(conditionHolds({ context_type: 'device', attribute: 'key', op: 'exists', values: [], negate: true }, [u, org]), true);
  });

  test('without context_type the first context having the attribute is used', () => {
    assert.equal(conditionHolds({ attribute: 'tier', op: 'eq', values: ['free'] }, [u, org]), true);
    assert.equal(conditionHolds({ attribute: 'tier', op: 'eq', values: ['enterprise'] }, [u, org]), false);
    assert.equal(conditionHolds({ attribute: 'seats', op: 'gte', values: [10] }, [u, org]), true);
    assert.equal(conditionHolds({ attribute: 'key', op: 'eq', values: ['u1'] }, [u, org]), true);
  });

  test('a default context type (a rule segment) applies to conditions without their own', () => {
    assert.equal(conditionHolds({ attribute: 'tier', op: 'eq', values: ['enterprise'] }, [u, org], 'organization'), true);
    assert.equal(conditionHolds({ context_type: 'user', attribute: 'tier', op: 'eq', values: ['free'] }, [u, org], 'organization'), true);
  });

  test('allConditionsHold is an AND, and the empty list holds', () => {
    const pro: Condition = { attribute: 'plan', op: 'eq', values: ['pro'] };
    const big: Condition = { attribute: 'seats', op: 'gt', values: [100] };
    assert.equal(allConditionsHold([], [u]), true);
    assert.equal(allConditionsHold([pro], [u, org]), true);
    assert.equal(allConditionsHold([pro, big], [u, org]), false);
  });
});

describe('value parsing', () => {
  test('toNumber accepts decimal literals only', () => {
    assert.equal(toNumber('42'), 42);
    assert.equal(toNumber('-2.5'), -2.5);
    assert.equal(toNumber('.5'), 0.5);
    assert.equal(toNumber('1e3'), 1000);
    for (const bad of ['', ' 1', '0x10', 'Infinity', 'NaN', '1,5', '1e999']) assert.equal(toNumber(bad), undefined, bad);
    assert.equal(toNumber(Number.POSITIVE_INFINITY), undefined);
  });

  test('toEpochMillis reads ISO 8601 as UTC unless a zone is given, and rejects impossible dates', () => {
    assert.equal(toEpochMillis('2024-02-29'), Date.UTC(2024, 1, 29));
    assert.equal(toEpochMillis('2024-02-29T12:30'), Date.UTC(2024, 1, 29, 12, 30));
    assert.equal(toEpochMillis('2024-02-29T12:30:15.1234Z'), Date.UTC(2024, 1, 29, 12, 30, 15, 123));
    assert.equal(toEpochMillis('2024-02-29T12:30:00-0230'), Date.UTC(2024, 1, 29, 15, 0));
    assert.equal(toEpochMillis('2024-02-29T12:30:00+05:30'), Date.UTC(2024, 1, 29, 7, 0));
    assert.equal(toEpochMillis(1_700_000_000_000), 1_700_000_000_000);
    for (const bad of ['2023-02-29', '2024-13-01', '2024-01-01T24:00:00Z', 'March 7, 2024', '2024/01/01', '']) {
      assert.equal(toEpochMillis(bad), undefined, bad);
    }
  });
});

describe('validateConditions', () => {
  const ok = (conditions: unknown): void => assert.equal(validateConditions(conditions), null);
  const bad = (conditions: unknown, pattern: RegExp): void => {
    const message = validateConditions(conditions);
    assert.ok(message !== null && pattern.test(message), `${JSON.stringify(message)} should match ${pattern}`);
  };

  test('accepts valid conditions of every op', () => {
    ok([]);
    ok([
      { attribute: 'plan', op: 'eq', values: ['pro'] },
      { attribute: 'country', op: 'in', values: ['DE', 'FR'], negate: true },
      { context_type: 'organization', attribute: 'name', op: 'contains', values: ['corp'] },
      { attribute: 'email', op: 'matches', values: ['^[a-z]+@example\\.com$'] },
      { attribute: 'age', op: 'gte', values: [18, '21'] },
      { attribute: 'app_version', op: 'semver_gt', values: ['1.2.3'] },
      { attribute: 'signup', op: 'before', values: ['2024-01-01T00:00:00Z', 1704067200000] },
      { attribute: 'beta', op: 'exists', values: [] },
    ]);
  });

  test('names the offending field', () => {
    bad({}, /^conditions must be an array$/);
    bad([null], /^conditions\[0\] must be an object$/);
    bad([{ attribute: '', op: 'eq', values: ['x'] }], /^conditions\[0\]\.attribute/);
    bad([{ attribute: 'a', op: 'like', values: ['x'] }], /^conditions\[0\]\.op must be one of eq, in, .*"like"/);
    bad([{ attribute: 'a', op: 'eq', values: 'x' }], /^conditions\[0\]\.values must be an array$/);
    bad([{ attribute: 'a', op: 'eq', values: [] }], /values must not be empty/);
    bad([{ attribute: 'a', op: 'eq', values: [{}] }], /values\[0\] must be a string, number or boolean/);
    bad([{ attribute: 'a', op: 'eq', values: ['x'], negate: 'yes' }], /negate must be a boolean/);
    bad([{ attribute: 'a', op: 'contains', values: [5] }], /must be a string for op "contains"/);
  });

  test('rejects regular expressions that are too long or do not compile', () => {
    bad([{ attribute: 'a', op: 'matches', values: ['x'.repeat(MAX_PATTERN_LENGTH + 1)] }], /at most 1000/);
    bad([{ attribute: 'a', op: 'matches', values: ['ok', '(['] }], /values\[1\] is not a valid regular expression/);
  });

  test('rejects patterns outside RE2 syntax (backreferences, lookaround), which a linear-time engine cannot run', () => {
    bad([{ attribute: 'a', op: 'matches', values: ['(a)\\1'] }], /^conditions\[0\]\.values\[0\] is not a valid regular expression \(RE2 syntax.*\\1/);
    bad([{ attribute: 'a', op: 'matches', values: ['^x', '(?=a)'] }], /^conditions\[0\]\.values\[1\] is not a valid regular expression.*\(\?=/);
    bad([{ attribute: 'a', op: 'eq', values: ['x'] }, { attribute: 'a', op: 'matches', values: ['(?!a)b'] }], /^conditions\[1\]\.values\[0\] is not a valid/);
    bad([{ attribute: 'a', op: 'matches', values: ['(?<=a)b'] }], /^conditions\[0\]\.values\[0\] is not a valid/);
    bad([{ attribute: 'a', op: 'matches', values: ['a{1001}'] }], /^conditions\[0\]\.values\[0\] is not a valid.*repeat/);
    // A pattern that is catastrophic for a backtracking engine is fine for RE2: accepted.
    ok([{ attribute: 'a', op: 'matches', values: ['^(a+)+$', '(?i)^beta-', '^\\p{L}+$'] }]);
  });

  test('refused patterns never match at evaluation either', () => {
    assert.equal(holds('matches', ['(a)\\1'], 'aa'), false);
    assert.equal(holds('matches', ['(?=a)a'], 'a'), false);
  });

  test('rejects non-numeric, non-semver and non-date values for their ops', () => {
    bad([{ attribute: 'a', op: 'lt', values: ['ten'] }], /must be a number for op "lt", got "ten"/);
    bad([{ attribute: 'a', op: 'semver_eq', values: ['1.2'] }], /must be a semantic version/);
    bad([{ attribute: 'a', op: 'after', values: ['tomorrow'] }], /epoch milliseconds or an ISO 8601 date/);
    assert.match(validateConditions([{ attribute: 'a', op: 'lt', values: [true] }], 'segment.conditions') ?? '', /^segment\.conditions\[0\]/);
  });
});
