import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Backoff } from '../src/sync/backoff.ts';

test('full jitter: a random share of min(cap, base · 2^n); reset after a healthy stream', () => {
  let now = 0;
  let random = 0.5;
  const backoff = new Backoff({ baseDelayMs: 500, maxDelayMs: 30_000, resetAfterMs: 60_000, random: () => random, now: () => now });
  assert.deepEqual(
    Array.from({ length: 9 }, () => backoff.nextDelayMs()),
    [250, 500, 1000, 2000, 4000, 8000, 15_000, 15_000, 15_000],
  );
  random = 0.999;
  assert.equal(backoff.nextDelayMs(), 29_970);
  random = 0;
  assert.equal(backoff.nextDelayMs(), 0);

  // Connected, failed after 10 s: the count goes on.
  random = 1;
  backoff.connected();
  now += 10_000;
  assert.equal(backoff.nextDelayMs(), 30_000);
  // Connected and healthy for 60 s: starts over.
  backoff.connected();
  now += 60_000;
  assert.equal(backoff.nextDelayMs(), 500);
  assert.equal(backoff.nextDelayMs(), 1000);
});
