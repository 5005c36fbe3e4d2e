import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ListChecker } from '../src/segments/list-checker.ts';
import { MembershipCache } from '../src/segments/membership-cache.ts';
import { silent } from './fixtures.ts';

describe('MembershipCache', () => {
  test('bounded: the least recently used answer goes first', () => {
    const cache = new MembershipCache(2, 60_000, () => 0);
    cache.set('s', 'a', true);
    cache.set('s', 'b', false);
    assert.equal(cache.get('s', 'a'), true); // a is now the most recent
    cache.set('s', 'c', true);
    assert.equal(cache.get('s', 'b'), undefined);
    assert.equal(cache.get('s', 'a'), true);
    assert.equal(cache.get('s', 'c'), true);
    assert.equal(cache.size, 2);
  });

  test('an answer expires after the TTL; dropSegments forgets one segment', () => {
    let now = 0;
    const cache = new MembershipCache(10, 1000, () => now);
    cache.set('s', 'a', true);
    cache.set('t', 'a', true);
    now = 999;
    assert.equal(cache.get('s', 'a'), true);
    now = 1000;
    assert.equal(cache.get('s', 'a'), undefined);
    cache.set('s', 'a', false);
    cache.dropSegments(['s']);
    assert.equal(cache.get('s', 'a'), undefined);
    assert.equal(cache.get('t', 'a'), undefined, 'expired too');
  });
});

interface Seen {
  url: string;
  headers: Record<string, string>;
  body: Array<{ segment_key: string; context_key: string; context_type: string }>;
}

function fakeFetch(members: Set<string>, seen: Seen[], status = 200): typeof fetch {
  return (async (url: string, init: RequestInit) => {
    const body = JSON.parse(String(init.body)) as Seen['body'];
    seen.push({ url, headers: init.headers as Record<string, string>, body });
    const answer = body.map((q) => ({ segment_key: q.segment_key, context_key: q.context_key, is_member: members.has(`${q.segment_key}/${q.context_key}`) }));
    return new Response(JSON.stringify(status === 200 ? answer : { error: 'x', code: 'INTERNAL' }), { status, headers: { 'content-type': 'application/json' } });
  }) as unknown as typeof fetch;
}

describe('ListChecker', () => {
  const make = (fetchImpl: typeof fetch, env: string | undefined = 'env-1') => {
    const cache = new MembershipCache(10_000, 60_000, Date.now);
    return { cache, checker: new ListChecker({ baseUrl: 'http://sy.test', sdkKey: 'sdk_k', environmentId: () => env, cache, fetch: fetchImpl, logger: silent }) };
  };

  test('lookups of one tick go in one batch request (the same pair once); answers are cached', async () => {
    const seen: Seen[] = [];
    const { checker, cache } = make(fakeFetch(new Set(['beta/u1']), seen));
    const answers = await Promise.all([
      checker.check({ segment_key: 'beta', context_key: 'u1', context_type: 'user' }),
      checker.check({ segment_key: 'beta', context_key: 'u2', context_type: 'user' }),
      checker.check({ segment_key: 'beta', context_key: 'u1', context_type: 'user' }),
    ]);
    assert.deepEqual(answers, [true, false, true]);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.url, 'http://sy.test/v1/environments/env-1/segments/list-check/batch');
    assert.equal(seen[0]!.headers['x-sdk-key'], 'sdk_k');
    assert.deepEqual(seen[0]!.body.map((q) => q.context_key), ['u1', 'u2']);
    assert.equal(cache.get('beta', 'u1'), true);
    assert.equal(await checker.check({ segment_key: 'beta', context_key: 'u2', context_type: 'user' }), false);
    assert.equal(seen.length, 1, 'answered from the cache');
  });

  test('more than 1000 lookups are split into requests of at most 1000', async () => {
    const seen: Seen[] = [];
    const { checker } = make(fakeFetch(new Set(), seen));
    await Promise.all(Array.from({ length: 2500 }, (_, i) => checker.check({ segment_key: 's', context_key: `u${i}`, context_type: 'user' })));
    assert.deepEqual(seen.map((s) => s.body.length), [1000, 1000, 500]);
  });

  test('a failed request answers undefined, caches nothing, and pauses lookups briefly', async () => {
    const seen: Seen[] = [];
    const { checker, cache } = make(fakeFetch(new Set(), seen, 503));
    assert.equal(await checker.check({ segment_key: 's', context_key: 'u', context_type: 'user' }), undefined);
    assert.equal(cache.size, 0);
    assert.equal(await checker.check({ segment_key: 's', context_key: 'u', context_type: 'user' }), undefined);
    assert.equal(seen.length, 1, 'no second request during the pause');
  });

  test('invalidate: answers to a request sent before the change are not cached', async () => {
    const seen: Seen[] = [];
    const { checker, cache } = make(fakeFetch(new Set(['s/u']), seen));
    const answer = checker.check({ segment_key: 's', context_key: 'u', context_type: 'user' });
    await new Promise((resolve) => setImmediate(resolve));
    checker.invalidate(['s']);
    assert.equal(await answer, true);
    assert.equal(cache.get('s', 'u'), undefined);
  });
});
