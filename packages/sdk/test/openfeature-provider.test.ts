import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ErrorCode, OpenFeature, ProviderEvents, type Client } from '@openfeature/server-sdk';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from '../../../hosts/server/test/support/rest-client.ts';
import { startTestServer, type TestServer } from '../../../hosts/server/test/support/test-server.ts';
import { SwitchyardProvider } from '../src/openfeature/index.ts';
import { silent } from './fixtures.ts';

// The stock OpenFeature server SDK with the Switchyard provider (in-process evaluation from the
// sync stream) against the real server: resolutions, error codes, events and tracking.

const WAIT_MS = 15_000;
let ts: TestServer;
let rest: ApiClient;
let tenant: Tenant;
let provider: SwitchyardProvider;
let client: Client;

const flagsPath = (env: string) => `/v1/environments/${env}/flags`;

async function createFlag(flag: Record<string, unknown>): Promise<void> {
  expectStatus(await rest.post(flagsPath(tenant.environmentId), { token: tenant.admin.token, body: { flag, enabled: true } }), 201, `create ${String(flag.key)}`);
}

const providerOptions = (sdkKey: string) => ({
  sdkKey,
  environmentId: tenant.environmentId,
  baseUrl: ts.base,
  syncUrl: `127.0.0.1:${ts.server.syncGrpcPort}`,
  logger: silent,
  readyTimeoutMs: WAIT_MS,
});

before(async () => {
  ts = await startTestServer({}, { share: true });
  rest = api(ts.base);
  const root = await loginAdmin(rest);
  tenant = await seedTenant(rest, root.token, 'of-provider');
  await createFlag({
    key: 'new-checkout',
    value_type: 'bool',
    variants: [{ key: 'on', value: true }, { key: 'off', value: false }],
    off_variant_key: 'off',
    rules: [
      { id: 'germany', conditions: [{ attribute: 'country', op: 'eq', values: ['DE'] }], variant_key: 'on' },
      { id: 'big-orgs', conditions: [{ context_type: 'org', attribute: 'seats', op: 'gte', values: [100] }], variant_key: 'on' },
    ],
  });
  await createFlag({ key: 'banner', value_type: 'string', variants: [{ key: 'hello', value: 'Hello' }], off_variant_key: 'hello' });
  await createFlag({ key: 'max-items', value_type: 'int', variants: [{ key: 'few', value: 10 }], off_variant_key: 'few' });
  await createFlag({ key: 'theme', value_type: 'json', variants: [{ key: 'dark', value: { mode: 'dark', contrast: 2 } }], off_variant_key: 'dark' });
  expectStatus(
    await rest.post(`/v1/environments/${tenant.environmentId}/event-definitions`, { token: tenant.admin.token, body: { key: 'purchase', description: 'a purchase', value_type: 'double' } }),
    202,
    'event definition',
  );
  provider = new SwitchyardProvider(providerOptions(tenant.rawKey));
  await OpenFeature.setProviderAndWait('switchyard-test', provider);
  client = OpenFeature.getClient('switchyard-test');
});

after(async () => {
  await OpenFeature.close();
  await ts.stop();
});

describe('SwitchyardProvider through the stock OpenFeature client', () => {
  test('resolves every type in-process with variant and reason', async () => {
    const germany = await client.getBooleanDetails('new-checkout', false, { targetingKey: 'user-1', country: 'DE' });
    assert.equal(germany.value, true);
    assert.equal(germany.variant, 'on');
    assert.equal(germany.reason, 'TARGETING_MATCH');
    const elsewhere = await client.getBooleanDetails('new-checkout', true, { targetingKey: 'user-2', country: 'FR' });
    assert.deepEqual([elsewhere.value, elsewhere.variant, elsewhere.reason], [false, 'off', 'DEFAULT']);
    assert.equal(await client.getStringValue('banner', 'x', { targetingKey: 'u' }), 'Hello');
    assert.equal(await client.getNumberValue('max-items', 0, { targetingKey: 'u' }), 10);
    assert.deepEqual(await client.getObjectValue('theme', {}, { targetingKey: 'u' }), { mode: 'dark', contrast: 2 });
  });

  test('the context_type attribute names the context type', async () => {
    const org = await client.getBooleanDetails('new-checkout', false, { targetingKey: 'acme', context_type: 'org', seats: 250 });
    assert.equal(org.value, true);
    // The same attributes on a user context do not match the org rule.
    assert.equal(await client.getBooleanValue('new-checkout', false, { targetingKey: 'acme', seats: 250 }), false);
  });

  test('errors come back as OpenFeature error codes with the default value', async () => {
    const missing = await client.getBooleanDetails('no-such-flag', true, { targetingKey: 'u' });
    assert.deepEqual([missing.value, missing.errorCode, missing.reason], [true, ErrorCode.FLAG_NOT_FOUND, 'ERROR']);
    const wrongType = await client.getNumberDetails('banner', 7, { targetingKey: 'u' });
    assert.deepEqual([wrongType.value, wrongType.errorCode], [7, ErrorCode.TYPE_MISMATCH]);
    const noKey = await client.getBooleanDetails('new-checkout', true, { country: 'DE' });
    assert.deepEqual([noKey.value, noKey.errorCode], [true, ErrorCode.TARGETING_KEY_MISSING]);
  });

  test('a REST change emits CONFIGURATION_CHANGED with the flag key, and the next resolution sees it', async () => {
    const changed = new Promise<string[]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no CONFIGURATION_CHANGED within 15 s')), WAIT_MS);
      client.addHandler(ProviderEvents.ConfigurationChanged, (details) => {
        if (details?.flagsChanged?.includes('banner')) {
          clearTimeout(timer);
          resolve(details.flagsChanged);
        }
      });
    });
    expectStatus(
      await rest.request('PUT', `${flagsPath(tenant.environmentId)}/banner`, {
        token: tenant.admin.token,
        body: { flag: { key: 'banner', value_type: 'string', variants: [{ key: 'hello', value: 'Hello again' }], off_variant_key: 'hello' } },
      }),
      200,
      'update banner',
    );
    assert.ok((await changed).includes('banner'));
    assert.equal(await client.getStringValue('banner', 'x', { targetingKey: 'u' }), 'Hello again');
  });

  test('track() sends a metric event that the server stores', async () => {
    client.track('purchase', { targetingKey: 'buyer-1' }, { value: 42.5 });
    await provider.client.flush();
    const rows = await ts.db.sql<{ context_key: string; value: number }[]>`
      SELECT context_key, value FROM events WHERE environment_id = ${tenant.environmentId} AND metric_key = 'purchase'`;
    assert.deepEqual(rows.map((row) => [row.context_key, Number(row.value)]), [['buyer-1', 42.5]]);
  });

  test('a refused SDK key: setProviderAndWait rejects and the provider reports ERROR', async () => {
    const refused = new SwitchyardProvider(providerOptions(`sdk_${'x'.repeat(43)}`));
    await assert.rejects(OpenFeature.setProviderAndWait('refused', refused));
    const refusedClient = OpenFeature.getClient('refused');
    const detail = await refusedClient.getBooleanDetails('new-checkout', true, { targetingKey: 'u' });
    assert.equal(detail.value, true);
    assert.equal(detail.reason, 'ERROR');
  });

  test('invalid options are a clear error at construction', () => {
    assert.throws(() => new SwitchyardProvider({ ...providerOptions(tenant.rawKey), readyTimeoutMs: -1 }), /readyTimeoutMs/);
    assert.throws(() => new SwitchyardProvider({ ...providerOptions(tenant.rawKey), syncUrl: 'not a url at all' }), /syncUrl/);
  });
});
