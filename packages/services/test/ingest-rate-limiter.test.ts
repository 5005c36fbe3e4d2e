import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RateLimitedError, type Principal } from '@switchyard/core';
import { IngestRateLimiter, type IngestRateLimits } from '../src/index.ts';

const limits: IngestRateLimits = {
  ingest: { perKey: { perSecond: 1, burst: 10 }, perEnvironment: { perSecond: 1, burst: 15 } },
  list_check: { perKey: { perSecond: 1, burst: 3 }, perEnvironment: { perSecond: 1, burst: 3 } },
};
const key = (id: string, environmentId = 'env-1'): Principal => ({ kind: 'sdk_key', sdkKeyId: id, orgId: 'org', projectId: 'project', environmentId });
const scope = (environmentId = 'env-1') => ({ orgId: 'org', projectId: 'project', environmentId });

function refused(call: () => void): RateLimitedError {
  try {
    call();
  } catch (error) {
    assert.ok(error instanceof RateLimitedError);
    return error;
  }
  assert.fail('admitted');
}

test('both buckets must hold the cost; a refusal charges neither and names the one that lacks', () => {
  const now = 0;
  const limiter = new IngestRateLimiter(limits, () => now);
  limiter.admit('ingest', key('a'), scope(), 10);
  assert.match(refused(() => limiter.admit('ingest', key('a'), scope(), 1)).message, /credential/);
  // The environment has 5 left: key b's 6 are refused by it (and key b keeps its 10).
  const byEnvironment = refused(() => limiter.admit('ingest', key('b'), scope(), 6));
  assert.match(byEnvironment.message, /environment/);
  assert.equal(byEnvironment.retryAfterSeconds, 1);
  limiter.admit('ingest', key('b'), scope(), 5);
  // Work kinds have their own buckets.
  limiter.admit('list_check', key('a'), scope(), 3);
});

test('the buckets kept are bounded: past maxBuckets the least recently used is forgotten (it comes back full)', () => {
  const limiter = new IngestRateLimiter(limits, () => 0, { maxBuckets: 3 });
  limiter.admit('ingest', key('a', 'e1'), scope('e1'), 10);
  refused(() => limiter.admit('ingest', key('a', 'e1'), scope('e1'), 1));
  // Two more buckets (key b and its environment e2) push out key a's, the least recently used.
  limiter.admit('ingest', key('b', 'e2'), scope('e2'), 1);
  limiter.admit('ingest', key('a', 'e1'), scope('e1'), 1);
});
