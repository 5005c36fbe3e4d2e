import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Principal } from '@switchyard/core';
import { ValidatedCredentialCache, credentialCacheKey } from '../src/remote/validated-credential-cache.ts';

/**
 * A gateway's credential cache must stay bounded whatever a caller sends: valid credentials of its
 * own (answers) or made-up ones (refusals) cannot grow it past maxEntries.
 */
const sdkPrincipal = (id: string): Principal => ({ kind: 'sdk_key', sdkKeyId: id, orgId: 'o', projectId: 'p', environmentId: 'e' });

describe('ValidatedCredentialCache bounds', () => {
  test('answers beyond maxEntries push out the oldest; the index of the evicted owner goes with it', () => {
    const cache = new ValidatedCredentialCache({ maxEntries: 2, now: () => 0 });
    for (const id of ['k1', 'k2', 'k3']) cache.remember(credentialCacheKey('sdk_key', `raw-${id}`), sdkPrincipal(id), 1_000);
    assert.equal(cache.size, 2);
    assert.equal(cache.get(credentialCacheKey('sdk_key', 'raw-k1')), undefined, 'the oldest answer is gone');
    assert.deepEqual(cache.get(credentialCacheKey('sdk_key', 'raw-k3')), sdkPrincipal('k3'));
    // Revoking the evicted key touches nothing; revoking a cached one forgets exactly it.
    cache.forgetOwner('sdk_key', 'k1');
    cache.forgetOwner('sdk_key', 'k2');
    assert.equal(cache.size, 1);
    assert.equal(cache.get(credentialCacheKey('sdk_key', 'raw-k2')), undefined);
  });

  test('a flood of made-up keys cannot grow the refusals past maxEntries', () => {
    const cache = new ValidatedCredentialCache({ maxEntries: 3, now: () => 0 });
    for (let i = 0; i < 3; i++) cache.rememberRefusal(credentialCacheKey('sdk_key', `junk-${i}`), 1_000);
    assert.equal(cache.get(credentialCacheKey('sdk_key', 'junk-0')), null, 'refused while under the bound');
    cache.rememberRefusal(credentialCacheKey('sdk_key', 'junk-3'), 1_000);
    assert.equal(cache.get(credentialCacheKey('sdk_key', 'junk-0')), undefined, 'the full set of refusals was dropped, not grown');
    assert.equal(cache.get(credentialCacheKey('sdk_key', 'junk-3')), null);
    assert.equal(cache.size, 0, 'refusals never count as answers');
  });
});
