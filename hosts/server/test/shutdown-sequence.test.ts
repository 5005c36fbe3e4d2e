import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ShutdownSequence } from '@switchyard/transport/shutdown-sequence.ts';

const ORDER = ['streams', 'servers', 'writers'] as const;

test('parts stop in the listed order whatever order they started in, each once; a failure does not stop the rest', async () => {
  const stopped: string[] = [];
  const failures: string[] = [];
  const sequence = new ShutdownSequence(ORDER);
  sequence.add('writers', async () => void stopped.push('writers'));
  sequence.add('servers', async () => {
    stopped.push('servers');
    throw new Error('already closed');
  });
  sequence.add('streams', async () => void stopped.push('streams'));
  await sequence.run((step, error) => failures.push(`${step}: ${(error as Error).message}`));
  assert.deepEqual(stopped, ['streams', 'servers', 'writers']);
  assert.deepEqual(failures, ['servers: already closed']);
  await sequence.run(() => assert.fail('nothing is left to stop'));
  assert.deepEqual(stopped, ['streams', 'servers', 'writers'], 'no part stops twice');
});

test('a part that never started (startup failed before it) is skipped', async () => {
  const stopped: string[] = [];
  const sequence = new ShutdownSequence(ORDER);
  sequence.add('writers', async () => void stopped.push('writers'));
  await sequence.run(() => assert.fail('no failure'));
  assert.deepEqual(stopped, ['writers']);
});

test('each part waits for the one before it', async () => {
  const events: string[] = [];
  const sequence = new ShutdownSequence(ORDER);
  sequence.add('streams', () => new Promise((resolve) => setTimeout(() => resolve(void events.push('streams done')), 20)));
  sequence.add('servers', async () => void events.push('servers started stopping'));
  await sequence.run(() => {});
  assert.deepEqual(events, ['streams done', 'servers started stopping']);
});
