import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDomainError, type KeyPrincipal, type SdkKeyUse } from '@switchyard/core';
import { KeyUsageRecorder, KeyUsageService } from '../src/index.ts';

const key = (id: string): KeyPrincipal => ({ kind: 'sdk_key', sdkKeyId: id, orgId: 'o', projectId: 'p', environmentId: 'e' });

function makeRecorder(options: { fail?: boolean; maxTrackedKeys?: number } = {}) {
  let now = 1_000_000;
  const batches: SdkKeyUse[][] = [];
  const errors: unknown[] = [];
  const recorder = new KeyUsageRecorder(
    async (uses) => {
      batches.push(uses);
      if (options.fail) throw new Error('services unreachable');
    },
    { intervalMs: 60_000, batchDelayMs: 60_000, now: () => now, onError: (error) => errors.push(error), ...(options.maxTrackedKeys ? { maxTrackedKeys: options.maxTrackedKeys } : {}) },
  );
  return { recorder, batches, errors, advance: (ms: number) => (now += ms) };
}

test('a key is reported once per interval, uses of a burst go in one batch, users are not keys', async () => {
  const { recorder, batches, advance } = makeRecorder();
  recorder.used(key('a'));
  recorder.used(key('a'));
  recorder.used(key('b'));
  recorder.used({ kind: 'user', userId: 'u', orgId: 'o', role: 'org_admin', isSystem: false });
  await recorder.flush();
  assert.deepEqual(batches, [
    [
      { sdkKeyId: 'a', orgId: 'o', projectId: 'p', environmentId: 'e' },
      { sdkKeyId: 'b', orgId: 'o', projectId: 'p', environmentId: 'e' },
    ],
  ]);
  advance(59_999);
  recorder.used(key('a'));
  await recorder.flush();
  assert.equal(batches.length, 1, 'within the minute: nothing sent');
  advance(1);
  recorder.used(key('a'));
  await recorder.flush();
  assert.deepEqual(batches[1], [{ sdkKeyId: 'a', orgId: 'o', projectId: 'p', environmentId: 'e' }]);
  await recorder.stop();
});

test('a batch that fails is reported again on the next use', async () => {
  const { recorder, batches, errors } = makeRecorder({ fail: true });
  recorder.used(key('a'));
  await recorder.flush();
  assert.equal(errors.length, 1);
  recorder.used(key('a'));
  await recorder.flush();
  assert.equal(batches.length, 2);
});

test('more keys than tracked: older entries go, nothing grows past the bound', async () => {
  const { recorder, batches, advance } = makeRecorder({ maxTrackedKeys: 2 });
  recorder.used(key('a'));
  recorder.used(key('b'));
  await recorder.flush();
  advance(60_000);
  recorder.used(key('c'));
  recorder.used(key('a'));
  await recorder.flush();
  // a and b were forgotten when c came (older than the interval), so a counts again.
  assert.deepEqual(batches.flat().map((use) => use.sdkKeyId), ['a', 'b', 'c', 'a']);
});

test('the service refuses a report that is not a bounded list of uses', async () => {
  const written: SdkKeyUse[][] = [];
  const service = new KeyUsageService({ recordUses: async (uses) => (written.push([...uses]), uses.length) });
  const use = { sdkKeyId: 'k', orgId: 'o', projectId: 'p', environmentId: 'e' };
  for (const bad of [null, 'x', [{ ...use, orgId: 3 }], [null], Array.from({ length: 501 }, () => use)]) {
    await assert.rejects(service.recordUses(bad), (error: unknown) => isDomainError(error) && error.code === 'INVALID_ARGUMENT');
  }
  await service.recordUses([{ ...use, extra: 'dropped' }]);
  assert.deepEqual(written, [[use]]);
});
