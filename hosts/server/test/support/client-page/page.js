// The page of hosts/server/test/client-browser.test.ts, bundled by esbuild in the test and served
// from another origin than Switchyard's: the STOCK OpenFeature web SDK, OFREP web provider and
// React SDK, set up with @switchyard/web exactly as docs/client-side.md section 8 says. The test
// drives it through `window.sy` and reads back what the page saw (plain JSON).
import { OpenFeature, ProviderEvents } from '@openfeature/web-sdk';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';
import { OpenFeatureProvider, useStringFlagValue } from '@openfeature/react-sdk';
import { createElement as h } from 'react';
import { createRoot } from 'react-dom/client';
import { anonymousTargetingKey, createSwitchyardWeb } from '@switchyard/web';

/** Every request the provider made, as the page's JavaScript could see its answer. */
const calls = [];
/** Provider events in order: READY, ERROR, CONFIGURATION_CHANGED, STALE. */
const events = [];
/** The exposure and event batches @switchyard/web sent, with their answers. */
const sends = [];

async function recordingFetch(request, init) {
  const entry = { at: Date.now(), url: request.url, ifNoneMatch: request.headers.get('if-none-match') };
  calls.push(entry);
  try {
    const response = await fetch(request, init);
    entry.status = response.status;
    entry.etag = response.headers.get('etag');
    entry.retryAfter = response.headers.get('retry-after');
    if (response.status === 200) entry.body = await response.clone().json().catch(() => null);
    return response;
  } catch (error) {
    entry.error = String(error);
    throw error;
  }
}

async function recordingSend(url, init) {
  const entry = { url, body: JSON.parse(init.body), keepalive: init.keepalive === true };
  sends.push(entry);
  try {
    const response = await fetch(url, init);
    entry.status = response.status;
    entry.answer = await response.clone().json().catch(() => null);
    return response;
  } catch (error) {
    entry.error = String(error);
    throw error;
  }
}

function FlagText({ flagKey }) {
  const value = useStringFlagValue(flagKey, 'react-default');
  return h('span', { id: 'react-value' }, value);
}

let web;

window.sy = {
  calls,
  events,
  sends,
  /** Set once per page load: a reload would make a new one. */
  loadId: Math.random().toString(36).slice(2),

  /**
   * Sets the provider up as docs/client-side.md recommends. `headers` replaces the helper's
   * (only to present what the helper refuses to, such as a server key).
   */
  async start({ baseUrl, environmentId, clientKey, context, token, pollInterval = 0, changeDetection, headers, reactFlag, bootstrap }) {
    web = createSwitchyardWeb({ baseUrl, environmentId, clientKey, contextToken: token ? () => token : undefined, flushIntervalMs: 100, fetch: recordingSend });
    const options = { ...web.providerOptions({ pollInterval, bootstrap, fetchImplementation: recordingFetch }), cacheMode: 'disabled' };
    if (headers) options.headers = headers;
    if (changeDetection) options.changeDetection = changeDetection;
    OpenFeature.addHooks(web.exposureHook);
    for (const type of [ProviderEvents.Ready, ProviderEvents.Error, ProviderEvents.ConfigurationChanged, ProviderEvents.Stale]) {
      OpenFeature.addHandler(type, (details) => events.push({ type, at: Date.now(), message: details?.message, flagsChanged: details?.flagsChanged }));
    }
    await OpenFeature.setContext({ targetingKey: anonymousTargetingKey(), ...context });
    try {
      await OpenFeature.setProviderAndWait(new OFREPWebProvider(options));
    } catch (error) {
      return { ready: false, error: String(error) };
    }
    if (reactFlag) {
      const root = document.createElement('div');
      document.body.append(root);
      createRoot(root).render(h(OpenFeatureProvider, null, h(FlagText, { flagKey: reactFlag })));
    }
    return { ready: true };
  },

  /** One read through the stock client, as an app would: `type` is String, Boolean, Number or Object. */
  read(type, flagKey, defaultValue) {
    const details = OpenFeature.getClient()[`get${type}Details`](flagKey, defaultValue);
    return { value: details.value, variant: details.variant ?? null, reason: details.reason ?? null, errorCode: details.errorCode ?? null };
  },

  targetingKey: () => anonymousTargetingKey(),
  flush: () => web.flush(),
  track: (metricKey, value) => web.track(metricKey, OpenFeature.getContext(), value),

  /** A plain cross-origin fetch from the page: what its JavaScript may see of the answer, or the network error. */
  async raw(url, init) {
    try {
      const response = await fetch(url, init);
      return { status: response.status, etag: response.headers.get('etag'), retryAfter: response.headers.get('retry-after'), text: await response.text() };
    } catch (error) {
      return { error: String(error) };
    }
  },

  /**
   * Bulk requests with the given headers until one is answered 429 while `untilProviderLimited`
   * (the provider polling meanwhile) also saw one, or `max` requests were sent.
   */
  async flood({ url, headers, max, concurrency = 10, untilProviderLimited = false }) {
    let sent = 0;
    let first429;
    const done = () => first429 !== undefined && (!untilProviderLimited || calls.some((c) => c.status === 429));
    const worker = async () => {
      while (sent < max && !done()) {
        sent++;
        try {
          const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ context: { targetingKey: 'flood' } }) });
          if (response.status === 429 && first429 === undefined) first429 = { retryAfter: response.headers.get('retry-after'), text: await response.text() };
          else await response.arrayBuffer();
        } catch (error) {
          first429 ??= undefined;
        }
        if (first429 !== undefined && untilProviderLimited) await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return { sent, first429: first429 ?? null, providerLimited: calls.some((c) => c.status === 429) };
  },
};
document.title = 'switchyard client page ready';
