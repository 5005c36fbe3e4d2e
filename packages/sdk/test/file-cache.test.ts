import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { FileCache } from '../src/store/file-cache.ts';
import { boolFlag, segment, silent } from './fixtures.ts';

const snapshot = (value: boolean) => ({
  environmentId: 'env-1',
  projectId: 'proj-1',
  flags: [boolFlag('a', value)],
  segments: [segment('beta', 'list')],
  experimentFlagKeys: ['a'],
  serverTimestampMs: 5,
});

test('file cache: round trip, throttled writes keep the latest, no temp files left', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sdk-cache-'));
  const file = path.join(dir, 'nested', 'flags.json');
  const cache = new FileCache(file, 10_000, silent);
  assert.equal(await cache.read(), undefined, 'no file yet');
  cache.schedule(() => snapshot(true));
  cache.schedule(() => snapshot(false));
  await cache.flush();
  assert.deepEqual(await cache.read('env-1'), snapshot(false));
  assert.equal(await cache.read('env-other'), undefined, 'another environment is ignored');
  assert.deepEqual(readdirSync(path.dirname(file)), ['flags.json']);

  writeFileSync(file, '{not json');
  assert.equal(await cache.read(), undefined, 'a broken file is ignored');
  await cache.close();
});
