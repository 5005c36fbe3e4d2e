/**
 * A Node app using the Switchyard SDK (docs/sdk.md): flags evaluated in-process from the
 * definitions sync stream, a `change` listener, a metric event.
 *
 *   SDK_KEY=sdk_... BASE_URL=http://localhost:8080 SYNC_URL=localhost:50050 npx tsx examples/sdk-app.ts
 *
 * Environment: SDK_KEY, BASE_URL (REST API), SYNC_URL (sync port), and optionally ENVIRONMENT_ID
 * (default: the key's own), FLAG_KEY (a boolean flag, default "new-checkout"), METRIC_KEY (a
 * double metric, default "revenue") and RUN_MS (how long to run, default 30000). Stops after
 * RUN_MS or on Ctrl-C (SIGINT) / SIGTERM, delivering the queued events first.
 */
import { SwitchyardClient, type SdkContext } from '@switchyard/sdk';

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is required (see the comment at the top of examples/sdk-app.ts)`);
    process.exit(2);
  }
  return value;
}

const flagKey = process.env.FLAG_KEY || 'new-checkout';
const metricKey = process.env.METRIC_KEY || 'revenue';
const runMs = Number(process.env.RUN_MS || 30_000);

const client = new SwitchyardClient({
  sdkKey: required('SDK_KEY'),
  baseUrl: required('BASE_URL'),
  syncUrl: required('SYNC_URL'),
  environmentId: process.env.ENVIRONMENT_ID || undefined,
});

// Who the flag is evaluated for: a key and the attributes targeting rules read.
const user: SdkContext = { key: 'user-1', attributes: { country: 'DE', plan: 'pro' } };

function show(): void {
  const detail = client.variationDetail(flagKey, user, false);
  const why = detail.reason === 'ERROR' ? `ERROR ${detail.error_code}: ${detail.error_message}` : `${detail.reason}, variant ${detail.variant_key}`;
  console.log(`${flagKey} for ${user.key}: ${String(detail.value)} (${why})`);
}

let stopping = false;
let timer: NodeJS.Timeout | undefined;
async function stop(why: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  clearTimeout(timer);
  console.log(`stopping (${why})`);
  await client.flush(); // deliver the queued events...
  await client.close(); // ...then end the stream and the timers
  console.log('flushed and closed');
}

process.once('SIGINT', () => void stop('SIGINT'));
process.once('SIGTERM', () => void stop('SIGTERM'));

try {
  await client.waitForReady({ timeoutMs: 10_000 });
} catch (error) {
  console.error(`not ready: ${(error as Error).message}`);
  await client.close();
  process.exit(1);
}
console.log(`ready: environment ${client.environmentId}, ${client.diagnostics().flagCount} flags (state ${client.state})`);
show();

// Definitions changed on the server (someone edited a flag): evaluate again.
client.on('change', ({ flag_keys }) => {
  console.log(`change: ${flag_keys.join(', ')}`);
  if (flag_keys.includes(flagKey)) show();
});
client.on('stale', ({ reason }) => console.log(`stale: ${reason}`));

// A metric event for experiments (batched and sent in the background).
client.track(metricKey, user, 42.5);
console.log(`tracked ${metricKey} = 42.5 for ${user.key}`);

timer = setTimeout(() => void stop(`ran ${runMs} ms`), runMs);
