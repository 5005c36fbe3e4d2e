import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkConditions, checkRules, isDomainError, type Condition } from '../src/index.ts';

// The total RE2 program a definition's `matches` patterns compile to is capped at write time
// (MAX_MATCHES_PROGRAM_SIZE). RE2 is linear in the input, but a condition carrying twenty patterns
// like COSTLY measured 2-3 s per evaluation on a 4096-character value (docs/security.md):
// each forces RE2 through a large program on every character.
const COSTLY = '^(a|b)*a(a|b){14}$';
const ORDINARY = ['^[a-z0-9._%+-]+@example\\.com$', '(?i)^.*@(gmail|yahoo|hotmail)\\.com$', '^user-[0-9]{1,6}$', '^(beta|canary)-.+$'];

const matches = (values: string[]): Condition => ({ attribute: 'email', op: 'matches', values });

function refusedNaming(call: () => unknown, field: RegExp): void {
  assert.throws(call, (error: unknown) => {
    assert.ok(isDomainError(error), String(error));
    assert.equal(error.code, 'INVALID_ARGUMENT');
    assert.match(error.message, /RE2 instructions/);
    assert.match(error.field ?? '', field);
    return true;
  });
}

const variants = new Set(['on', 'off']);
const rule = (id: string, conditions: Condition[]) => ({ id, conditions, variant_key: 'on' });

describe('matches budget per definition', () => {
  test('twenty costly patterns in one condition are refused (a rule segment\'s conditions)', () => {
    refusedNaming(() => checkConditions([matches(Array.from({ length: 20 }, () => COSTLY))], 'conditions'), /^conditions$/);
  });

  test('the same patterns spread over several rules of a flag are refused as a whole', () => {
    const rules = Array.from({ length: 10 }, (_, i) => rule(`r${i}`, [matches([COSTLY, COSTLY])]));
    refusedNaming(() => checkRules(variants, rules), /^rules$/);
  });

  test('ordinary patterns fit many times over: twenty in one flag are accepted', () => {
    const rules = Array.from({ length: 5 }, (_, i) => rule(`r${i}`, [matches(ORDINARY)]));
    assert.equal(checkRules(variants, rules).length, 5);
    assert.equal(checkConditions([matches([...ORDINARY, ...ORDINARY])], 'conditions').length, 1);
  });

  test('one costly pattern alone is accepted (its cost is bounded; it is the sum that is capped)', () => {
    assert.equal(checkRules(variants, [rule('r1', [matches([COSTLY])])]).length, 1);
  });
});
