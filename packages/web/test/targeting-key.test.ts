import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { anonymousTargetingKey, DEFAULT_TARGETING_KEY_STORAGE_KEY } from '../src/index.ts';
import { memoryStorage } from './fakes.ts';

const UUID = /^anon-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('anonymousTargetingKey', () => {
  test('a random key, kept in storage and the same on every later call (and page load)', () => {
    const storage = memoryStorage();
    const first = anonymousTargetingKey({ storage });
    assert.match(first, UUID);
    assert.equal(storage.entries.get(DEFAULT_TARGETING_KEY_STORAGE_KEY), first);
    assert.equal(anonymousTargetingKey({ storage }), first);
    // A new page load: the module's memory is not what keeps it, the storage is.
    const reloaded = memoryStorage();
    reloaded.setItem(DEFAULT_TARGETING_KEY_STORAGE_KEY, 'anon-kept-from-last-visit');
    assert.equal(anonymousTargetingKey({ storage: reloaded }), 'anon-kept-from-last-visit');
  });

  test('two browsers get different keys', () => {
    const a = anonymousTargetingKey({ storage: memoryStorage(), storageKey: 'two-a' });
    const b = anonymousTargetingKey({ storage: memoryStorage(), storageKey: 'two-b' });
    assert.notEqual(a, b);
  });

  test('storage that throws (private mode, blocked storage): one key in memory for the page, the same on every call', () => {
    const throwing = {
      getItem(): string | null {
        throw new Error('SecurityError');
      },
      setItem(): void {
        throw new Error('QuotaExceededError');
      },
    };
    const first = anonymousTargetingKey({ storage: throwing, storageKey: 'blocked' });
    assert.match(first, UUID);
    assert.equal(anonymousTargetingKey({ storage: throwing, storageKey: 'blocked' }), first);
    assert.equal(anonymousTargetingKey({ storage: null, storageKey: 'blocked' }), first, 'no storage at all: the same memory key');
  });

  test('storage that reads but refuses writes still gives a stable key', () => {
    const readOnly = { getItem: () => null, setItem: () => { throw new Error('QuotaExceededError'); } };
    const first = anonymousTargetingKey({ storage: readOnly, storageKey: 'read-only' });
    assert.equal(anonymousTargetingKey({ storage: readOnly, storageKey: 'read-only' }), first);
  });

  test('a tampered stored value (not a plain token) is replaced', () => {
    const storage = memoryStorage();
    storage.setItem('tampered', 'has spaces and\nnewlines');
    const key = anonymousTargetingKey({ storage, storageKey: 'tampered', generate: () => 'anon-new' });
    assert.equal(key, 'anon-new');
    assert.equal(storage.entries.get('tampered'), 'anon-new');
    storage.setItem('long', 'x'.repeat(300));
    assert.equal(anonymousTargetingKey({ storage, storageKey: 'long', generate: () => 'anon-short' }), 'anon-short');
  });
});
