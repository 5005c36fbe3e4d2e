import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDomainError } from '@switchyard/core';
import { RowQuota } from '../src/index.ts';

const scope = (environmentId: string) => ({ orgId: 'org', projectId: 'project', environmentId });

test('held = the last count plus what this instance stored since; at the quota FAILED_PRECONDITION', async () => {
  let counts = new Map<string, number>([['e1', 7]]);
  const quota = new RowQuota({ rowsByEnvironment: async () => counts }, { maxRowsPerEnvironment: 10 });
  await quota.refresh();
  quota.check(scope('e1'));
  quota.added(scope('e1'), 2);
  quota.check(scope('e1'));
  quota.added(scope('e1'), 1);
  assert.equal(quota.held('e1'), 10);
  assert.throws(() => quota.check(scope('e1')), (error: unknown) => isDomainError(error) && error.code === 'FAILED_PRECONDITION');
  quota.check(scope('e2'));

  // Counts unchanged (no maintenance run since): the local additions stay.
  await quota.refresh();
  assert.equal(quota.held('e1'), 10);
  // A new count holds them: they are not counted twice.
  counts = new Map([['e1', 10]]);
  await quota.refresh();
  assert.equal(quota.held('e1'), 10);
  // Retention dropped rows: room again.
  counts = new Map([['e1', 3]]);
  await quota.refresh();
  quota.check(scope('e1'));
});
