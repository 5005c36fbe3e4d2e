import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDomainError, type EvaluationContext, type KeyPrincipal, type SdkKeyUse, type SeenContextAttribute } from '@switchyard/core';
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
  const service = new KeyUsageService({ recordUses: async (uses) => (written.push([...uses]), uses.length) }, { record: async () => 0 });
  const use = { sdkKeyId: 'k', orgId: 'o', projectId: 'p', environmentId: 'e' };
  for (const bad of [null, 'x', [{ ...use, orgId: 3 }], [null], Array.from({ length: 501 }, () => use)]) {
    await assert.rejects(service.recordUses(bad), (error: unknown) => isDomainError(error) && error.code === 'INVALID_ARGUMENT');
  }
  await service.recordUses([{ ...use, extra: 'dropped' }]);
  assert.deepEqual(written, [[use]]);
});

const envScope = (environmentId: string) => ({ orgId: 'o', projectId: 'p', environmentId });
const userContext = (parameters: Record<string, string | number | boolean>): EvaluationContext => ({ context_type: 'user', key: 'k', parameters });
const namesOf = (count: number, prefix: string) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`${prefix}${i}`, 'secret-value']));

function makeAttributeRecorder() {
  let now = 1_000_000;
  const batches: SeenContextAttribute[][] = [];
  const recorder = new KeyUsageRecorder(
    async (_uses, attributes) => {
      batches.push(attributes);
    },
    { intervalMs: 60_000, batchDelayMs: 60_000, now: () => now, maxTrackedAttributes: 60, maxTrackedEnvironments: 2 },
  );
  const flushed = async (): Promise<string[]> => {
    const before = batches.length;
    await recorder.flush();
    return batches.slice(before).flat().map((seen) => `${seen.environmentId}:${seen.contextType}.${seen.name}`);
  };
  return { recorder, batches, flushed, advance: (ms: number) => (now += ms) };
}

test('context attributes: names only, at most 64 characters, once per interval', async () => {
  const { recorder, batches, flushed } = makeAttributeRecorder();
  const long = 'y'.repeat(64);
  recorder.contextsSeen(envScope('e1'), [
    userContext({ plan: 'gold', ['x'.repeat(65)]: 1, [long]: 2 }),
    { context_type: 'z'.repeat(65), key: 'k', parameters: { a: 1 } },
    { context_type: 'device', key: 'd' },
  ]);
  assert.deepEqual(await flushed(), ['e1:user.plan', `e1:user.${long}`]);
  assert.deepEqual(batches[0]![0], { orgId: 'o', projectId: 'p', environmentId: 'e1', contextType: 'user', name: 'plan' });
  assert.ok(!JSON.stringify(batches).includes('gold'), 'no value travels');
  recorder.contextsSeen(envScope('e1'), [userContext({ plan: 'silver' })]);
  assert.deepEqual(await flushed(), [], 'within the interval: nothing sent');
});

test('context attributes: at most 50 new pairs of an environment per batch, 60 remembered, 2 environments', async () => {
  const { recorder, flushed, advance } = makeAttributeRecorder();
  recorder.contextsSeen(envScope('e1'), [userContext(namesOf(100, 'a'))]);
  const first = await flushed();
  assert.equal(first.length, 50);
  assert.deepEqual([first[0], first[49]], ['e1:user.a0', 'e1:user.a49']);
  // 50 remembered, room for 10 more of the 60; the rest are not noted.
  recorder.contextsSeen(envScope('e1'), [userContext(namesOf(100, 'b'))]);
  const second = await flushed();
  assert.deepEqual(second, Array.from({ length: 10 }, (_, i) => `e1:user.b${i}`));
  recorder.contextsSeen(envScope('e2'), [userContext({ plan: 1 })]);
  recorder.contextsSeen(envScope('e3'), [userContext({ plan: 1 })]);
  assert.deepEqual(await flushed(), ['e2:user.plan'], 'a third environment is not noted while two are recent');
  advance(60_000);
  // Past the interval the old pairs and environments are forgotten: new ones come in again.
  recorder.contextsSeen(envScope('e1'), [userContext({ b99: 1 })]);
  recorder.contextsSeen(envScope('e3'), [userContext({ plan: 1 })]);
  assert.deepEqual(await flushed(), ['e1:user.b99', 'e3:user.plan']);
  await recorder.stop();
});

test('context attributes of a failed batch are reported again on their next sighting', async () => {
  let fail = true;
  const sent: SeenContextAttribute[][] = [];
  const recorder = new KeyUsageRecorder(
    async (_uses, attributes) => {
      sent.push(attributes);
      if (fail) throw new Error('services unreachable');
    },
    { batchDelayMs: 60_000, onError: () => {} },
  );
  recorder.contextsSeen(envScope('e1'), [userContext({ plan: 'gold' })]);
  await recorder.flush();
  fail = false;
  recorder.contextsSeen(envScope('e1'), [userContext({ plan: 'gold' })]);
  await recorder.flush();
  assert.equal(sent.length, 2);
  assert.deepEqual(sent[1]!.map((seen) => seen.name), ['plan']);
});

test('the service refuses attribute reports beyond the bounds and writes the rest with the cap of 500', async () => {
  const written: Array<{ attributes: SeenContextAttribute[]; max: number }> = [];
  const service = new KeyUsageService({ recordUses: async () => 0 }, { record: async (attributes, max) => (written.push({ attributes: [...attributes], max }), attributes.length) });
  const seen = (environmentId: string, name: string) => ({ orgId: 'o', projectId: 'p', environmentId, contextType: 'user', name });
  const fiftyOne = Array.from({ length: 51 }, (_, i) => seen('e1', `n${i}`));
  const fiveHundredOne = Array.from({ length: 501 }, (_, i) => seen(`e${Math.floor(i / 50)}`, `n${i}`));
  for (const bad of ['x', [null], [seen('e1', '')], [seen('e1', 'n'.repeat(65))], [{ ...seen('e1', 'n'), contextType: 3 }], fiftyOne, fiveHundredOne]) {
    await assert.rejects(service.recordUses([], bad), (error: unknown) => isDomainError(error) && error.code === 'INVALID_ARGUMENT');
  }
  assert.equal(written.length, 0);
  await service.recordUses([], [{ ...seen('e1', 'plan'), value: 'gold' }, ...fiftyOne.slice(2)]);
  assert.equal(written[0]!.max, 500);
  assert.equal(written[0]!.attributes.length, 50);
  assert.deepEqual(written[0]!.attributes[0], seen('e1', 'plan'));
});
