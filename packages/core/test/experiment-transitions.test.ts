import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  EXPERIMENT_STATUSES,
  canTransition,
  isDomainError,
  nextStatus,
  parseExperimentStatus,
  type ExperimentStatus,
} from '../src/index.ts';

const DRAFT = 'EXPERIMENT_STATUS_DRAFT';
const ACTIVE = 'EXPERIMENT_STATUS_ACTIVE';
const PAUSED = 'EXPERIMENT_STATUS_PAUSED';
const CONCLUDED = 'EXPERIMENT_STATUS_CONCLUDED';

/** docs/contract.md "Experiments and statistics", written out independently of the module's table. */
const LEGAL: ReadonlyArray<[ExperimentStatus, ExperimentStatus]> = [
  [DRAFT, ACTIVE],
  [ACTIVE, PAUSED],
  [PAUSED, ACTIVE],
  [DRAFT, CONCLUDED],
  [ACTIVE, CONCLUDED],
  [PAUSED, CONCLUDED],
];

function assertCode(fn: () => unknown, code: string, message?: RegExp): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(isDomainError(error));
    assert.equal(error.code, code);
    if (message) assert.match(error.message, message);
    return true;
  });
}

describe('canTransition / nextStatus', () => {
  test('exactly the six moves of docs/contract.md "Experiments and statistics" are legal', () => {
    for (const from of EXPERIMENT_STATUSES) {
      for (const to of EXPERIMENT_STATUSES) {
        const legal = LEGAL.some(([f, t]) => f === from && t === to);
        assert.equal(canTransition(from, to), legal, `${from} → ${to}`);
        if (legal) assert.equal(nextStatus(from, to), to);
        else assertCode(() => nextStatus(from, to), 'FAILED_PRECONDITION', new RegExp(`from ${from} to ${to}`));
      }
    }
  });

  test('the refusal names what is allowed, or that CONCLUDED is final', () => {
    assertCode(() => nextStatus(ACTIVE, DRAFT), 'FAILED_PRECONDITION', /allowed from EXPERIMENT_STATUS_ACTIVE: EXPERIMENT_STATUS_PAUSED, EXPERIMENT_STATUS_CONCLUDED/);
    assertCode(() => nextStatus(CONCLUDED, ACTIVE), 'FAILED_PRECONDITION', /is final/);
    assertCode(() => nextStatus(PAUSED, PAUSED), 'FAILED_PRECONDITION');
  });
});

describe('parseExperimentStatus', () => {
  test('takes the enum names and the short forms in any case', () => {
    assert.equal(parseExperimentStatus('EXPERIMENT_STATUS_ACTIVE'), ACTIVE);
    assert.equal(parseExperimentStatus('active'), ACTIVE);
    assert.equal(parseExperimentStatus(' Paused '), PAUSED);
    assert.equal(parseExperimentStatus('experiment_status_concluded'), CONCLUDED);
    assert.equal(parseExperimentStatus('DRAFT'), DRAFT);
  });

  test('refuses UNSPECIFIED, unknown words and non-strings, naming the field', () => {
    for (const value of ['EXPERIMENT_STATUS_UNSPECIFIED', 'unspecified', 'running', '', 'EXPERIMENT_STATUS_', 3, null, undefined]) {
      assert.throws(() => parseExperimentStatus(value, 'status'), (error: unknown) => {
        assert.ok(isDomainError(error));
        assert.deepEqual([error.code, error.field], ['INVALID_ARGUMENT', 'status']);
        assert.match(error.message, /draft, active, paused, concluded/);
        return true;
      }, String(value));
    }
  });
});
