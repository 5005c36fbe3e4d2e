import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TokenBucket } from '../src/index.ts';

test('a token bucket starts full, refills at its rate up to its burst, and takes only what it has', () => {
  const bucket = new TokenBucket({ perSecond: 10, burst: 100 }, 0);
  assert.equal(bucket.waitMs(100, 0), 0, 'full at the start');
  bucket.take(100, 0);
  // 10 per second: 5 tokens after 500 ms, so 20 tokens need 1.5 s more.
  assert.equal(bucket.waitMs(20, 500), 1_500);
  assert.equal(bucket.waitMs(5, 500), 0);
  bucket.take(5, 500);
  assert.equal(bucket.waitMs(1, 500), 100, 'empty again: one token is 100 ms away');
  assert.equal(bucket.isFull(500 + 10_000), true, 'ten seconds refill all 100');
  assert.equal(bucket.waitMs(101, 20_000), 0, 'never above the burst: a larger cost needs a full bucket');
  bucket.take(101, 20_000);
  assert.equal(bucket.waitMs(1, 20_000), 100, 'and empties it');
});

test('a clock that steps back neither refills nor takes tokens away', () => {
  const bucket = new TokenBucket({ perSecond: 1, burst: 10 }, 1_000_000);
  bucket.take(10, 1_000_000);
  assert.equal(bucket.waitMs(1, 999_000), 1_000);
  assert.equal(bucket.waitMs(1, 1_000_500), 500);
});
