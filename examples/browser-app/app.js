// The page's code: the STOCK OpenFeature web SDK and OFREP web provider, with @switchyard/web for
// exposures, events and the anonymous targeting key (docs/client-side.md section 8). serve.ts
// bundles this file with esbuild and fills in SWITCHYARD_CONFIG (base URL, environment, client key).
import { OpenFeature, ProviderEvents } from '@openfeature/web-sdk';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';
import { anonymousTargetingKey, createSwitchyardWeb } from '@switchyard/web';

/* global SWITCHYARD_CONFIG */
const config = SWITCHYARD_CONFIG;
const $ = (id) => document.getElementById(id);

const web = createSwitchyardWeb({
  baseUrl: config.baseUrl,
  environmentId: config.environmentId,
  clientKey: config.clientKey,
  onError: (error) => console.warn('switchyard:', error.route, error.status, error.message),
});
OpenFeature.addHooks(web.exposureHook);

function render() {
  const details = OpenFeature.getClient().getBooleanDetails(config.flagKey, false);
  $('flag').textContent = `${config.flagKey} = ${details.value}`;
  // FLAG_NOT_FOUND: no such flag for a client key (hidden, disabled or missing): the default applies.
  $('detail').textContent = details.errorCode
    ? `${details.errorCode}: the default applies (is the flag client-visible and on?)`
    : `variant ${details.variant ?? '-'}, reason ${details.reason}`;
  document.body.dataset.flag = String(details.value);
}

OpenFeature.addHandler(ProviderEvents.Ready, () => {
  $('status').textContent = 'ready';
  render();
});
// A flag changed on the server: the provider refetched (event stream, or polling as the fallback).
OpenFeature.addHandler(ProviderEvents.ConfigurationChanged, () => {
  $('status').textContent = `updated at ${new Date().toLocaleTimeString()}`;
  render();
});
OpenFeature.addHandler(ProviderEvents.Error, (details) => {
  $('status').textContent = `error: ${details?.message ?? 'unknown'} (is this page's origin in the client key's allowed origins?)`;
});

const targetingKey = anonymousTargetingKey();
$('visitor').textContent = targetingKey;
$('buy').addEventListener('click', () => {
  web.track(config.metricKey, OpenFeature.getContext());
  $('status').textContent = `tracked ${config.metricKey}`;
});

await OpenFeature.setContext({ targetingKey, country: navigator.language.split('-')[1] ?? 'unknown' });
await OpenFeature.setProviderAndWait(new OFREPWebProvider(web.providerOptions())).catch(() => {});
