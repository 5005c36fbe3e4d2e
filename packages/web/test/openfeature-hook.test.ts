import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { InMemoryProvider, OpenFeature, type Hook } from '@openfeature/web-sdk';
import { createSwitchyardWeb } from '../src/index.ts';
import { fakeFetch, fakeTimers } from './fakes.ts';

// The hook is typed structurally; this file proves it is an OpenFeature web SDK `Hook` for the
// type checker, and that the stock SDK calls it with what it needs.
after(() => OpenFeature.close());

test('the stock web SDK calls the exposure hook after each read; one exposure per (context, flag, variant)', async () => {
  const { fetch, requests } = fakeFetch();
  const timers = fakeTimers();
  const web = createSwitchyardWeb({ baseUrl: 'https://flags.example.com', environmentId: 'env-1', clientKey: 'ck_x', fetch, timers, now: timers.now, eventTarget: null });
  const hook: Hook = web.exposureHook;
  await OpenFeature.setContext({ targetingKey: 'visitor-7', country: 'DE' });
  await OpenFeature.setProviderAndWait(
    new InMemoryProvider({
      checkout: { variants: { control: 'old', treatment: 'new' }, defaultVariant: 'treatment', disabled: false },
      banner: { variants: { on: true, off: false }, defaultVariant: 'on', disabled: true },
    }),
  );
  OpenFeature.addHooks(hook);
  const client = OpenFeature.getClient();
  assert.equal(client.getStringValue('checkout', 'fallback'), 'new');
  assert.equal(client.getStringValue('checkout', 'fallback'), 'new');
  assert.equal(client.getBooleanValue('banner', false), false, 'a disabled flag in the in-memory provider: the default');
  assert.equal(client.getStringValue('no-such-flag', 'fallback'), 'fallback');
  await timers.advance(2000);
  assert.equal(requests.length, 1);
  assert.deepEqual(requests[0]!.body.exposures, [
    { flag_key: 'checkout', variant_key: 'treatment', context_type: 'user', context_key: 'visitor-7', timestamp_ms: 1_000_000, attributes: { country: 'DE' } },
  ]);
  OpenFeature.clearHooks();
  await web.close();
});
