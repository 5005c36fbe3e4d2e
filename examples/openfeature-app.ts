/**
 * A Node app using Switchyard through OpenFeature (docs/sdk.md, "OpenFeature"): the stock
 * OpenFeature server SDK with the SwitchyardProvider, which evaluates in-process like the client.
 *
 *   SDK_KEY=sdk_... BASE_URL=http://localhost:8080 SYNC_URL=localhost:50050 npx tsx examples/openfeature-app.ts
 *
 * Environment: SDK_KEY, BASE_URL (REST API), SYNC_URL (sync port), and optionally ENVIRONMENT_ID
 * (default: the key's own), FLAG_KEY (a boolean flag, default "new-checkout"), METRIC_KEY (a
 * double metric, default "revenue") and RUN_MS (how long to run, default 30000). Stops after
 * RUN_MS or on Ctrl-C (SIGINT) / SIGTERM; OpenFeature.close() closes the provider, which
 * delivers the queued events.
 */
import { OpenFeature, ProviderEvents, type EvaluationContext } from '@openfeature/server-sdk';
import { SwitchyardProvider } from '@switchyard/sdk/openfeature';

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is required (see the comment at the top of examples/openfeature-app.ts)`);
    process.exit(2);
  }
  return value;
}

const flagKey = process.env.FLAG_KEY || 'new-checkout';
const metricKey = process.env.METRIC_KEY || 'revenue';
const runMs = Number(process.env.RUN_MS || 30_000);

const provider = new SwitchyardProvider({
  sdkKey: required('SDK_KEY'),
  baseUrl: required('BASE_URL'),
  syncUrl: required('SYNC_URL'),
  environmentId: process.env.ENVIRONMENT_ID || undefined,
  readyTimeoutMs: 10_000,
});

// targetingKey is the context key; `context_type` (default "user") its type; the rest are attributes.
const context: EvaluationContext = { targetingKey: 'user-1', country: 'DE', plan: 'pro' };
const client = OpenFeature.getClient('example-app');

async function show(): Promise<void> {
  const details = await client.getBooleanDetails(flagKey, false, context);
  const why = details.errorCode ? `ERROR ${details.errorCode}: ${details.errorMessage}` : `${details.reason}, variant ${details.variant}`;
  console.log(`${flagKey} for ${context.targetingKey}: ${String(details.value)} (${why})`);
}

let stopping = false;
let timer: NodeJS.Timeout | undefined;
async function stop(why: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  clearTimeout(timer);
  console.log(`stopping (${why})`);
  await OpenFeature.close(); // closes the provider: delivers the queued events, ends the stream
  console.log('flushed and closed');
}

process.once('SIGINT', () => void stop('SIGINT'));
process.once('SIGTERM', () => void stop('SIGTERM'));

try {
  await OpenFeature.setProviderAndWait(provider);
} catch (error) {
  console.error(`provider not ready: ${(error as Error).message}`);
  await OpenFeature.close();
  process.exit(1);
}
console.log(`ready: provider ${provider.metadata.name}, environment ${provider.client.environmentId}`);
await show();

// Definitions changed on the server: OpenFeature's CONFIGURATION_CHANGED with the flag keys.
client.addHandler(ProviderEvents.ConfigurationChanged, (details) => {
  const changed = details?.flagsChanged ?? [];
  console.log(`change: ${changed.join(', ')}`);
  if (changed.includes(flagKey)) void show();
});
client.addHandler(ProviderEvents.Stale, (details) => console.log(`stale: ${details?.message ?? ''}`));

// OpenFeature's tracking API: a metric event with a value.
client.track(metricKey, context, { value: 42.5 });
console.log(`tracked ${metricKey} = 42.5 for ${context.targetingKey}`);

timer = setTimeout(() => void stop(`ran ${runMs} ms`), runMs);
