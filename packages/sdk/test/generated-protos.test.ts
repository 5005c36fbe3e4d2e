import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { generateSdkProtosSource, SDK_PROTOS_FILE } from '../../../scripts/generate-sdk-protos.ts';

test('src/generated/sync-protos.ts is what scripts/generate-sdk-protos.ts makes of proto/ now', () => {
  const committed = readFileSync(SDK_PROTOS_FILE, 'utf8');
  assert.ok(committed === generateSdkProtosSource(), 'out of date: run `npx tsx scripts/generate-sdk-protos.ts`');
});
