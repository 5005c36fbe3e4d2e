import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { patternRunMs } from '@switchyard/core/testing';
import { SwitchyardClient, TestData } from '../src/index.ts';
import { FileCache } from '../src/store/file-cache.ts';
import { boolFlag, segment, segmentFlag, silent } from './fixtures.ts';
import { boolFlagMessage, snapshotMessage, startFakeSyncServer, type FakeSyncServer } from './fake-sync-server.ts';

const clients: SwitchyardClient[] = [];
const servers: FakeSyncServer[] = [];
after(async () => {
  for (const client of clients) await client.close();
  for (const server of servers) await server.stop();
});
const track = (client: SwitchyardClient): SwitchyardClient => {
  clients.push(client);
  return client;
};

describe('TestData', () => {
  test('values, typed helpers, change events', async () => {
    const td = new TestData().setFlag('on', true).setFlag('name', 'Ada').setFlag('limit', 3).setFlag('config', { a: 1 });
    const client = track(new SwitchyardClient({ testData: td }));
    await client.waitForReady({ timeoutMs: 0 });
    assert.equal(client.boolVariation('on', { key: 'u' }, false), true);
    assert.equal(client.stringVariation('name', { key: 'u' }, ''), 'Ada');
    assert.equal(client.numberVariation('limit', { key: 'u' }, 0), 3);
    assert.deepEqual(client.jsonVariation('config', { key: 'u' }, null), { a: 1 });
    assert.deepEqual(client.allFlags({ key: 'u' }), { on: true, name: 'Ada', limit: 3, config: { a: 1 } });
    assert.deepEqual(client.variationDetail('on', { key: 'u' }, false), { value: true, variant_key: 'value', reason: 'DEFAULT' });

    const changes: string[][] = [];
    client.on('change', ({ flag_keys }) => changes.push(flag_keys));
    td.setFlag('on', false);
    td.removeFlag('name');
    assert.deepEqual(changes, [['on'], ['name']]);
    assert.equal(client.boolVariation('on', { key: 'u' }, true), false);
  });

  test('whole flag documents, rule and list segments, multi-context', async () => {
    const td = new TestData()
      .setFlag(boolFlag('de-only', false, { rules: [{ id: 'r', conditions: [{ context_type: 'org', attribute: 'country', op: 'eq', values: ['DE'] }], variant_key: 'on' }] }))
      .setFlag(segmentFlag('beta-only', 'beta'))
      .setListMembers('beta', ['u1']);
    const client = track(new SwitchyardClient({ testData: td }));
    assert.equal(client.boolVariation('de-only', [{ key: 'u' }, { key: 'o', type: 'org', attributes: { country: 'DE' } }], false), true);
    assert.equal(client.boolVariation('de-only', { key: 'u', attributes: { country: 'DE' } }, false), false, 'the condition names the org context');
    assert.equal(client.boolVariation('beta-only', { key: 'u1' }, false), true);
    assert.equal(client.boolVariation('beta-only', { key: 'u2' }, true), false);
    assert.equal(await client.variationAsync('beta-only', { key: 'u1' }, false), true);
  });

  test('the evaluation environment follows every change: segments and prerequisite flags set later are used', () => {
    const gated = boolFlag('gated', false, { prerequisites: [{ flag_key: 'gate', variant_keys: ['on'] }], rules: [{ id: 'all', conditions: [], variant_key: 'on' }] });
    const td = new TestData().setFlag(segmentFlag('vip-only', 'vip')).setFlag(gated);
    const client = track(new SwitchyardClient({ testData: td, logger: silent }));
    assert.equal(client.variationDetail('vip-only', { key: 'u1' }, false).error_code, 'SEGMENT_NOT_FOUND');
    assert.equal(client.variationDetail('gated', { key: 'u1' }, false).reason, 'PREREQUISITE_FAILED');
    td.setListMembers('vip', ['u1']);
    assert.equal(client.boolVariation('vip-only', { key: 'u1' }, false), true, 'the segment set after the first evaluation');
    td.setFlag(boolFlag('gate', true));
    assert.equal(client.variationDetail('gated', { key: 'u1' }, false).reason, 'TARGETING_MATCH', 'the prerequisite set after the first evaluation');
  });

  test('a document changed in place and set again is evaluated as it is now (the kept compiled form follows it)', () => {
    const flag = boolFlag('toggled', true);
    const td = new TestData().setFlag(flag);
    const client = track(new SwitchyardClient({ testData: td, logger: silent }));
    assert.deepEqual(client.variationDetail('toggled', { key: 'u' }, null), { value: true, variant_key: 'on', reason: 'DEFAULT' });
    flag.enabled = false;
    td.setFlag(flag);
    assert.deepEqual(client.variationDetail('toggled', { key: 'u' }, null), { value: true, variant_key: 'on', reason: 'DISABLED' });
    flag.enabled = true;
    flag.rules = [{ id: 'all', conditions: [], variant_key: 'on' }];
    td.setFlag(flag);
    assert.deepEqual(client.variationDetail('toggled', { key: 'u' }, null), { value: true, variant_key: 'on', reason: 'TARGETING_MATCH' });
  });
});

describe('evaluation never throws', () => {
  const td = new TestData().setFlag('on', true).setFlag('name', 'Ada').setFlag(boolFlag('off', true, { enabled: false, off_variant_key: null }));
  const client = track(new SwitchyardClient({ testData: td, logger: silent }));

  test('type mismatches, unknown flags and bad contexts serve the fallback with an error code', () => {
    assert.deepEqual(client.variationDetail('name', { key: 'u' }, false), {
      value: false,
      variant_key: '',
      reason: 'ERROR',
      error_code: 'TYPE_MISMATCH',
      error_message: 'flag "name" is of type string; a boolean was asked for',
    });
    assert.equal(client.boolVariation('name', { key: 'u' }, true), true);
    assert.equal(client.numberVariation('on', { key: 'u' }, 7), 7);
    assert.equal(client.stringVariation('on', { key: 'u' }, 'x'), 'x');
    assert.equal(client.variationDetail('missing', { key: 'u' }, 1).error_code, 'FLAG_NOT_FOUND');
    for (const context of [null, undefined, 42, 'u', {}, { key: '' }, { key: 1 }, [], [{ key: 'u' }, null], { key: 'u', type: 5 }, { key: 'u', attributes: { a: {} } }]) {
      const detail = client.variationDetail('on', context as never, false);
      assert.equal(detail.error_code, 'INVALID_CONTEXT', JSON.stringify(context));
      assert.equal(detail.value, false);
    }
    assert.equal(client.variation('on', { key: 'u' }, null), true, 'a null fallback implies no type');
    assert.deepEqual(client.variationDetail('off', { key: 'u' }, 'fb'), { value: 'fb', variant_key: '', reason: 'DISABLED' });
  });

  test('a flag document that does not compile serves the fallback with GENERAL, as it does on the server', () => {
    const broken = new TestData().setFlag(boolFlag('broken', true, { rules: 'not a list' as never }));
    const brokenClient = track(new SwitchyardClient({ testData: broken, logger: silent }));
    const detail = brokenClient.variationDetail('broken', { key: 'u' }, 'fb');
    assert.equal(detail.value, 'fb');
    assert.equal(detail.reason, 'ERROR');
    assert.equal(detail.error_code, 'GENERAL');
    assert.equal(brokenClient.boolVariation('broken', { key: 'u' }, false), false);
  });

  test('hostile inputs: a throwing getter, a non-string flag key', () => {
    const evil = { get key(): string { throw new Error('boom'); } };
    assert.equal(client.variationDetail('on', evil as never, false).reason, 'ERROR');
    assert.equal(client.variationDetail(undefined as never, { key: 'u' }, false).error_code, 'FLAG_NOT_FOUND');
    assert.doesNotThrow(() => client.track('m', evil as never));
    assert.deepEqual(client.allFlags(null as never), { on: null, name: null, off: null });
  });
});

interface Posted {
  path: string;
  body: any;
}

function recordingFetch(posted: Posted[], members = new Set<string>()): typeof fetch {
  return (async (url: string, init: RequestInit) => {
    const path = new URL(url).pathname;
    const body = JSON.parse(String(init.body));
    posted.push({ path, body });
    if (path.endsWith('/list-check/batch')) {
      return Response.json(body.map((q: any) => ({ segment_key: q.segment_key, context_key: q.context_key, is_member: members.has(q.context_key) })));
    }
    const count = (body.events ?? body.exposures ?? body).length ?? 1;
    return Response.json({ accepted_count: count, rejected_keys: [] }, { status: 202 });
  }) as unknown as typeof fetch;
}

describe('with bootstrap definitions (no server)', () => {
  const bootstrap = {
    environmentId: 'env-1',
    projectId: 'proj-1',
    flags: [boolFlag('exp'), segmentFlag('gated', 'beta')],
    segments: [segment('beta', 'list')],
    experimentFlagKeys: ['exp'],
  };

  test('stale at once; exposures for experiment flags (first context) and track events go to delivery', async () => {
    const posted: Posted[] = [];
    const client = track(new SwitchyardClient({ sdkKey: 'sdk_k', baseUrl: 'http://sy.test', syncUrl: '127.0.0.1:1', bootstrap, fetch: recordingFetch(posted), logger: silent }));
    assert.equal(client.state, 'stale');
    await client.waitForReady({ timeoutMs: 0 });
    assert.equal(client.boolVariation('exp', [{ key: 'u1' }, { key: 'o1', type: 'org' }], false), true);
    client.boolVariation('gated', { key: 'u1' }, false);
    client.track('purchase', { key: 'u1' }, 42.5);
    await client.flush();
    const exposures = posted.filter((p) => p.path === '/v1/environments/env-1/exposures').flatMap((p) => p.body.exposures);
    assert.equal(exposures.length, 1, 'only the experiment flag');
    // rule_id '': no allocation served `on` (the flag has no rules; its off variant serves).
    assert.deepEqual({ ...exposures[0], timestamp_ms: 0 }, { flag_key: 'exp', variant_key: 'on', context_type: 'user', context_key: 'u1', timestamp_ms: 0, rule_id: '' });
    const events = posted.filter((p) => p.path === '/v1/environments/env-1/events/batch').flatMap((p) => p.body.events ?? p.body);
    assert.equal(events.length, 1);
    assert.equal(events[0].metric_key, 'purchase');
    assert.equal(events[0].value, 42.5);
  });

  test('stats(): the client reports its event delivery (sent, rejected, queued, dropped after close, failed requests)', async () => {
    // A server that stores every entry except those of the metric key "unknown" (rejected, as the
    // ingest routes reject an undefined metric), and fails the first exposures request with a 503.
    let exposureRequests = 0;
    const fetchImpl = (async (url: string, init: RequestInit) => {
      const path = new URL(url).pathname;
      const body = JSON.parse(String(init.body));
      if (path.endsWith('/exposures') && ++exposureRequests === 1) return Response.json({ error: 'try again', code: 'UNAVAILABLE' }, { status: 503 });
      const items: any[] = body.events ?? body.exposures ?? [];
      const rejected = items.filter((item) => item.metric_key === 'unknown').map((item) => item.metric_key);
      return Response.json({ accepted_count: items.length - rejected.length, rejected_keys: rejected }, { status: 202 });
    }) as unknown as typeof fetch;
    const client = track(new SwitchyardClient({ sdkKey: 'sdk_k', baseUrl: 'http://sy.test', syncUrl: '127.0.0.1:1', bootstrap, fetch: fetchImpl, logger: silent }));
    await client.waitForReady({ timeoutMs: 0 });
    const zeros = { queuedEvents: 0, queuedExposures: 0, droppedEvents: 0, droppedExposures: 0, sentEvents: 0, sentExposures: 0, failedAttempts: 0 };
    assert.deepEqual(client.stats(), zeros);

    client.track('purchase', { key: 'u1' }, 10);
    client.track('purchase', { key: 'u2' }, 20);
    client.track('unknown', { key: 'u3' }, true);
    client.boolVariation('exp', { key: 'u1' }, false); // one exposure (an experiment flag)
    assert.deepEqual(client.stats(), { ...zeros, queuedEvents: 3, queuedExposures: 1 });

    await client.flush();
    // 3 events in one batch: 2 stored, 1 rejected (dropped); the exposure stored on its retry
    // after one failed request.
    assert.deepEqual(client.stats(), { ...zeros, sentEvents: 2, droppedEvents: 1, sentExposures: 1, failedAttempts: 1 });

    await client.close();
    client.track('purchase', { key: 'u4' }, 1); // after close: dropped and counted
    assert.deepEqual(client.stats(), { ...zeros, sentEvents: 2, droppedEvents: 2, sentExposures: 1, failedAttempts: 1 });
  });

  test('stats(): all zeros for a client that sends no events (TestData)', async () => {
    const client = track(new SwitchyardClient({ testData: new TestData().setFlag('on', true) }));
    client.track('purchase', { key: 'u1' }, 1);
    assert.deepEqual(client.stats(), { queuedEvents: 0, queuedExposures: 0, droppedEvents: 0, droppedExposures: 0, sentEvents: 0, sentExposures: 0, failedAttempts: 0 });
  });

  test('list segments: sync evaluation counts an unknown membership as "no" and fetches it; async asks first', async () => {
    const posted: Posted[] = [];
    const client = track(
      new SwitchyardClient({ sdkKey: 'sdk_k', baseUrl: 'http://sy.test', syncUrl: '127.0.0.1:1', bootstrap, fetch: recordingFetch(posted, new Set(['u1'])), logger: silent, events: { enabled: false } }),
    );
    assert.equal(client.boolVariation('gated', { key: 'u1' }, false), false, 'not known yet');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(client.boolVariation('gated', { key: 'u1' }, false), true, 'cached by the background fetch');
    const before = posted.length;
    const answers = await Promise.all([client.variationAsync('gated', { key: 'u2' }, true), client.variationAsync('gated', { key: 'u3' }, true), client.variationAsync('gated', { key: 'u1' }, false)]);
    assert.deepEqual(answers, [false, false, true]);
    const batches = posted.slice(before).filter((p) => p.path.endsWith('/segments/list-check/batch'));
    assert.equal(batches.length, 1, 'u2 and u3 in one request; u1 from the cache');
    assert.deepEqual(batches[0]!.body, [
      { segment_key: 'beta', context_key: 'u2', context_type: 'user' },
      { segment_key: 'beta', context_key: 'u3', context_type: 'user' },
    ]);
  });
});

test('cache file: written after a sync message, then used by a client that cannot reach the server', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sdk-cache-'));
  const cacheFile = path.join(dir, 'flags.json');
  const server = await startFakeSyncServer();
  servers.push(server);
  server.onStream = (stream) => stream.send(snapshotMessage(1, [boolFlagMessage('a', true)]));
  const online = new SwitchyardClient({ sdkKey: 'sdk_k', baseUrl: 'http://sy.test', syncUrl: `127.0.0.1:${server.port}`, cacheFile, cacheWriteIntervalMs: 0, logger: silent, events: { enabled: false } });
  await online.waitForReady({ timeoutMs: 15_000 });
  await online.close();
  const cached = await new FileCache(cacheFile, 0, silent).read();
  assert.equal(cached?.projectId, 'proj-1');
  await server.stop();

  const offline = track(
    new SwitchyardClient({ sdkKey: 'sdk_k', baseUrl: 'http://sy.test', syncUrl: `127.0.0.1:${server.port}`, cacheFile, logger: silent, events: { enabled: false }, reconnect: { baseDelayMs: 1000 } }),
  );
  await offline.waitForReady({ timeoutMs: 15_000 });
  assert.equal(offline.state, 'stale');
  assert.equal(offline.environmentId, 'env-1');
  assert.equal(offline.boolVariation('a', { key: 'u' }, false), true);
});

describe('the evaluation budget (docs/sdk.md "Options")', () => {
  // 12 rules, each a different pattern costing 0.1-0.5 s on 4,096 random a/b characters: a flag
  // stored before the server's write-time limits, or a context the application got from outside.
  const costly = (n: number): string => `^(?:[ab]*a[ab]{${n}}){1,14}$`;
  const rules = Array.from({ length: 12 }, (_, i) => ({ id: `r${i}`, conditions: [{ attribute: 'a', op: 'matches' as const, values: [costly(20 + i)] }], variant_key: 'on' }));
  const abValue = (): string => `${Array.from({ length: 4095 }, () => (Math.random() < 0.5 ? 'a' : 'b')).join('')}!`;

  test('a flag that runs past evaluationBudgetMs serves the fallback with GENERAL, soon after the budget', () => {
    const td = new TestData().setFlag(boolFlag('costly', false, { rules }));
    const client = track(new SwitchyardClient({ testData: td, logger: silent, evaluationBudgetMs: 20 }));
    const value = abValue();
    // The costliest rule's pattern once, measured now: a busy CI machine slows it as much as the call.
    const onePatternRun = patternRunMs(costly(31), value);
    const started = performance.now();
    const detail = client.variationDetail('costly', { key: 'u', attributes: { a: value } }, true);
    const elapsed = performance.now() - started;
    assert.deepEqual([detail.value, detail.reason, detail.error_code], [true, 'ERROR', 'GENERAL']);
    assert.match(detail.error_message ?? '', /budget of 20 ms/);
    // The budget, plus the pattern run that starts the clock and at most one more already started;
    // all 12 rules run about seven of the costliest's runs. The ERROR above is what fails without
    // a budget at all.
    assert.ok(elapsed < 20 + 3 * onePatternRun + 100, `took ${elapsed.toFixed(0)} ms; one pattern run ${onePatternRun.toFixed(0)} ms`);
  });

  test('evaluationBudgetMs must be a non-negative number', () => {
    assert.throws(() => new SwitchyardClient({ testData: new TestData(), evaluationBudgetMs: -1 }), /evaluationBudgetMs/);
  });
});
