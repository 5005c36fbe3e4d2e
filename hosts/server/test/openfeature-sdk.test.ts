import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { OpenFeature, type Client } from '@openfeature/server-sdk';
import { createFlag } from './support/flag-fixtures.ts';
import { api, loginAdmin, seedTenant, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// The stock OpenFeature server SDK with the stock OFREP provider, pointed at the running server:
// what a user of Switchyard gets without any Switchyard-specific client code.

let ts: TestServer;
let tenant: Tenant;
/** Authenticated with `Authorization: Bearer <sdk key>` (the provider's documented way). */
let client: Client;
/** Authenticated with the `x-sdk-key` header from a headers factory. */
let factoryClient: Client;
/** An unknown key. */
let wrongKeyClient: Client;

const JSON_VALUE = { color: 'blue', sizes: [1, 2, 3], nested: { on: true } };

before(async () => {
  ts = await startTestServer({}, { share: true });
  const rest = api(ts.base);
  const root = await loginAdmin(rest);
  tenant = await seedTenant(rest, root.token, 'openfeature');
  const flags = [
    {
      key: 'new-checkout',
      value_type: 'bool' as const,
      variants: [{ key: 'on', value: true }, { key: 'off', value: false }],
      enabled: true,
      off_variant_key: 'off',
      rules: [{ id: 'germany', conditions: [{ attribute: 'country', op: 'eq', values: ['DE'] }], variant_key: 'on' }],
    },
    {
      key: 'banner-text',
      value_type: 'string' as const,
      variants: [{ key: 'hello', value: 'Hello' }, { key: 'hallo', value: 'Hallo' }],
      enabled: true,
      off_variant_key: 'hello',
      rules: [{ id: 'german-speakers', conditions: [{ attribute: 'language', op: 'in', values: ['de', 'de-AT'] }], variant_key: 'hallo' }],
    },
    {
      key: 'max-items',
      value_type: 'int' as const,
      variants: [{ key: 'few', value: 10 }, { key: 'many', value: 250 }],
      enabled: true,
      off_variant_key: 'few',
      rules: [{ id: 'everyone', conditions: [], allocation: { buckets: [{ variant_key: 'many', weight_milli: 1000 }] } }],
    },
    {
      key: 'discount-rate',
      value_type: 'double' as const,
      variants: [{ key: 'standard', value: 0.15 }],
      enabled: true,
      off_variant_key: 'standard',
    },
    {
      key: 'theme',
      value_type: 'json' as const,
      variants: [{ key: 'blue', value: JSON_VALUE }, { key: 'plain', value: {} }],
      enabled: false,
      off_variant_key: 'blue',
    },
  ];
  for (const flag of flags) await createFlag(ts, rest, tenant, flag);

  await OpenFeature.setProviderAndWait('bearer', new OFREPProvider({ baseUrl: ts.base, headers: { Authorization: `Bearer ${tenant.rawKey}` } }));
  await OpenFeature.setProviderAndWait('factory', new OFREPProvider({ baseUrl: ts.base, headersFactory: async () => [['x-sdk-key', tenant.rawKey]] }));
  await OpenFeature.setProviderAndWait('wrong-key', new OFREPProvider({ baseUrl: ts.base, headers: { Authorization: 'Bearer sdk_unknown' } }));
  client = OpenFeature.getClient('bearer');
  factoryClient = OpenFeature.getClient('factory');
  wrongKeyClient = OpenFeature.getClient('wrong-key');
});
after(async () => {
  await OpenFeature.close();
  await ts.stop();
});

describe('OpenFeature server SDK + OFREP provider', () => {
  test('boolean: a targeting rule on a context attribute changes the result', async () => {
    const germany = await client.getBooleanDetails('new-checkout', false, { targetingKey: 'user-1', country: 'DE' });
    assert.equal(germany.value, true);
    assert.equal(germany.variant, 'on');
    assert.equal(germany.reason, 'TARGETING_MATCH');
    assert.equal(germany.errorCode, undefined);
    assert.deepEqual(germany.flagMetadata, { rule_id: 'germany' });

    const france = await client.getBooleanDetails('new-checkout', true, { targetingKey: 'user-1', country: 'FR' });
    assert.equal(france.value, false);
    assert.equal(france.variant, 'off');
    assert.equal(france.reason, 'DEFAULT');
    assert.equal(france.errorCode, undefined);
  });

  test('string', async () => {
    const details = await client.getStringDetails('banner-text', 'fallback', { targetingKey: 'user-2', language: 'de-AT' });
    assert.deepEqual([details.value, details.variant, details.reason], ['Hallo', 'hallo', 'TARGETING_MATCH']);
    assert.equal(await client.getStringValue('banner-text', 'fallback', { targetingKey: 'user-2', language: 'en' }), 'Hello');
  });

  test('number: an integer flag (decided by a split) and a double flag', async () => {
    const count = await client.getNumberDetails('max-items', 0, { targetingKey: 'user-3' });
    assert.deepEqual([count.value, count.variant, count.reason], [250, 'many', 'SPLIT']);
    const rate = await client.getNumberDetails('discount-rate', 0, { targetingKey: 'user-3' });
    assert.deepEqual([rate.value, rate.variant, rate.reason], [0.15, 'standard', 'DEFAULT']);
  });

  test('object: a json flag (disabled, so its off variant)', async () => {
    const details = await client.getObjectDetails('theme', {}, { targetingKey: 'user-4' });
    assert.deepEqual(details.value, JSON_VALUE);
    assert.deepEqual([details.variant, details.reason], ['blue', 'DISABLED']);
  });

  test('the x-sdk-key header from a headers factory works the same', async () => {
    const details = await factoryClient.getBooleanDetails('new-checkout', false, { targetingKey: 'user-5', country: 'DE' });
    assert.deepEqual([details.value, details.reason], [true, 'TARGETING_MATCH']);
  });

  test('a missing flag: the default value with FLAG_NOT_FOUND', async () => {
    const details = await client.getStringDetails('no-such-flag', 'the default', { targetingKey: 'user-6' });
    assert.equal(details.value, 'the default');
    assert.equal(details.reason, 'ERROR');
    assert.equal(details.errorCode, 'FLAG_NOT_FOUND');
  });

  test('no targeting key for a flag with rules: the default value with TARGETING_KEY_MISSING', async () => {
    const details = await client.getBooleanDetails('new-checkout', true, { country: 'DE' });
    assert.equal(details.value, true);
    assert.equal(details.errorCode, 'TARGETING_KEY_MISSING');
    // A flag without rules needs no targeting key.
    assert.equal(await client.getNumberValue('discount-rate', 0, {}), 0.15);
  });

  test('a structured attribute is ignored rather than failing the evaluation', async () => {
    const details = await client.getBooleanDetails('new-checkout', false, { targetingKey: 'user-7', country: 'DE', address: { city: 'Köln' } });
    assert.deepEqual([details.value, details.reason, details.errorCode], [true, 'TARGETING_MATCH', undefined]);
  });

  test('the wrong type asked for: the default value with TYPE_MISMATCH', async () => {
    const details = await client.getBooleanDetails('banner-text', false, { targetingKey: 'user-8' });
    assert.equal(details.value, false);
    assert.equal(details.errorCode, 'TYPE_MISMATCH');
  });

  test('an unknown SDK key: the default value with an error, never a flag value', async () => {
    const details = await wrongKeyClient.getBooleanDetails('new-checkout', false, { targetingKey: 'user-9', country: 'DE' });
    assert.equal(details.value, false);
    assert.equal(details.reason, 'ERROR');
    assert.equal(typeof details.errorCode, 'string');
  });
});
