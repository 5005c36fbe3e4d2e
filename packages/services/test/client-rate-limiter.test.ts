import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RateLimitedError, SERVER_KEY_SETTINGS, type Principal } from '@switchyard/core';
import { ClientRateLimiter, type ClientRateLimits } from '../src/index.ts';

const limits: ClientRateLimits = {
  evaluation: { perAddress: { perSecond: 1, burst: 3 }, perKey: { perSecond: 2, burst: 5 } },
  ingest: { perAddress: { perSecond: 10, burst: 100 }, perKey: { perSecond: 10, burst: 150 } },
  stream: { perAddress: { perSecond: 1, burst: 1 }, perKey: { perSecond: 1, burst: 10 } },
};
const clientKey = (id: string): Principal => ({
  kind: 'client_key',
  sdkKeyId: id,
  orgId: 'org',
  projectId: 'project',
  environmentId: 'env',
  client: { ...SERVER_KEY_SETTINGS, name: 'web', allowedOrigins: ['https://app.example.com'] },
});
const serverKey: Principal = { kind: 'sdk_key', sdkKeyId: 's', orgId: 'org', projectId: 'project', environmentId: 'env' };

function refused(call: () => void): RateLimitedError {
  try {
    call();
  } catch (error) {
    assert.ok(error instanceof RateLimitedError);
    return error;
  }
  assert.fail('admitted');
}

test('per (key, address): the burst, then 429 with the seconds until one token; another address and another key go on', () => {
  let now = 0;
  const limiter = new ClientRateLimiter(limits, () => now);
  for (let i = 0; i < 3; i++) limiter.take('evaluation', clientKey('a'), '203.0.113.1');
  const error = refused(() => limiter.take('evaluation', clientKey('a'), '203.0.113.1'));
  assert.match(error.message, /this client key from this address/);
  assert.equal(error.retryAfterSeconds, 1); // one token at 1 per second
  limiter.take('evaluation', clientKey('a'), '203.0.113.2');
  limiter.take('evaluation', clientKey('b'), '203.0.113.1');
  // Work kinds have their own buckets.
  limiter.take('stream', clientKey('a'), '203.0.113.1');
  now = 1_000; // one token back
  limiter.take('evaluation', clientKey('a'), '203.0.113.1');
  refused(() => limiter.take('evaluation', clientKey('a'), '203.0.113.1'));
});

test('per key across addresses: the key\'s burst (5) is shared by every address; a refusal charges neither bucket', () => {
  const limiter = new ClientRateLimiter(limits, () => 0);
  for (const address of ['198.51.100.1', '198.51.100.1', '198.51.100.1', '198.51.100.2', '198.51.100.2']) limiter.take('evaluation', clientKey('k'), address);
  const error = refused(() => limiter.take('evaluation', clientKey('k'), '198.51.100.3'));
  assert.match(error.message, /for this client key;/);
  assert.equal(error.retryAfterSeconds, 1); // one token at 2 per second: 0.5 s, rounded up
  // A refusal by the address bucket leaves the key's bucket as it was: k2 spends 3 of its 5 from
  // one address, is refused there, and still has exactly 2 for another address.
  for (let i = 0; i < 3; i++) limiter.take('evaluation', clientKey('k2'), '198.51.100.1');
  refused(() => limiter.take('evaluation', clientKey('k2'), '198.51.100.1'));
  limiter.take('evaluation', clientKey('k2'), '198.51.100.2');
  limiter.take('evaluation', clientKey('k2'), '198.51.100.2');
  assert.match(refused(() => limiter.take('evaluation', clientKey('k2'), '198.51.100.2')).message, /for this client key;/);
});

test('ingest costs its entries; Retry-After is the wait for all of them', () => {
  const limiter = new ClientRateLimiter(limits, () => 0);
  limiter.take('ingest', clientKey('a'), '192.0.2.1', 100);
  // 40 entries at 10 per second: 4 s.
  assert.equal(refused(() => limiter.take('ingest', clientKey('a'), '192.0.2.1', 40)).retryAfterSeconds, 4);
  limiter.take('ingest', clientKey('a'), '192.0.2.2', 50);
  // The key has 150 - 150 = 0 left: 1 entry waits 0.1 s, rounded up to 1.
  assert.equal(refused(() => limiter.take('ingest', clientKey('a'), '192.0.2.3', 1)).retryAfterSeconds, 1);
});

test('IPv6: one client is a /64 (a host rotating its addresses gains nothing); IPv4-mapped is the IPv4 address', () => {
  const limiter = new ClientRateLimiter(limits, () => 0);
  limiter.take('evaluation', clientKey('a'), '2001:db8:1:2::1');
  limiter.take('evaluation', clientKey('a'), '2001:db8:1:2:ffff::9');
  limiter.take('evaluation', clientKey('a'), '2001:db8:1:2:abcd:1:2:3');
  refused(() => limiter.take('evaluation', clientKey('a'), '2001:db8:1:2::77'));
  limiter.take('evaluation', clientKey('b'), '::ffff:192.0.2.9');
  limiter.take('evaluation', clientKey('b'), '192.0.2.9');
  limiter.take('evaluation', clientKey('b'), '::ffff:c000:209');
  refused(() => limiter.take('evaluation', clientKey('b'), '192.0.2.9'));
});

test('server keys and users are not charged: their limits are the services\'', () => {
  const limiter = new ClientRateLimiter(limits, () => 0);
  const user: Principal = { kind: 'user', userId: 'u', orgId: 'org', role: 'org_member', isSystem: false };
  for (let i = 0; i < 100; i++) {
    limiter.take('evaluation', serverKey, '192.0.2.1');
    limiter.take('ingest', user, '192.0.2.1', 100);
  }
  assert.equal(limiter.bucketCount(), 0);
});

test('memory is bounded: past maxBuckets per table the least recently used is forgotten, and churning addresses never resets a key\'s bucket', () => {
  const limiter = new ClientRateLimiter(limits, () => 0, { maxBuckets: 4 });
  // The key's burst is 5: five requests from five addresses spend it.
  for (let i = 0; i < 5; i++) limiter.take('evaluation', clientKey('k'), `10.0.0.${i}`);
  assert.ok(limiter.bucketCount() <= 8, `${limiter.bucketCount()} buckets`);
  // Fresh addresses (each pushing out an older address bucket) are still refused by the key's bucket.
  for (let i = 10; i < 20; i++) refused(() => limiter.take('evaluation', clientKey('k'), `10.0.0.${i}`));
  assert.ok(limiter.bucketCount() <= 8);
  // A forgotten bucket comes back full: k0 spends its address bucket, k1's push it out, k0 goes on.
  const fresh = new ClientRateLimiter(limits, () => 0, { maxBuckets: 1 });
  for (let i = 0; i < 3; i++) fresh.take('evaluation', clientKey('k0'), '10.0.0.1');
  refused(() => fresh.take('evaluation', clientKey('k0'), '10.0.0.1'));
  fresh.take('evaluation', clientKey('k1'), '10.0.0.1');
  fresh.take('evaluation', clientKey('k0'), '10.0.0.1');
});
