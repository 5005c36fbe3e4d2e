import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { api, expectError, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let it: TestServer;
let client: ApiClient;
let tenant: Tenant;
let other: Tenant;

const exposures = (environmentId = tenant.environmentId) => `/v1/environments/${environmentId}/exposures`;

const exposure = (context_key: string, extra: Record<string, unknown> = {}) => ({
  flag_key: 'new-checkout',
  variant_key: 'treatment',
  context_type: 'user',
  context_key,
  ...extra,
});

interface StoredExposure {
  flag_key: string;
  variant_key: string;
  context_type: string;
  timestamp_ms: number;
}

async function storedFor(contextKey: string): Promise<StoredExposure[]> {
  const sql = it.server.database.sql;
  const rows = await sql<StoredExposure[]>`
    SELECT flag_key, variant_key, context_type, timestamp_ms FROM exposures
    WHERE org_id = ${tenant.orgId} AND environment_id = ${tenant.environmentId} AND context_key = ${contextKey}
    ORDER BY variant_key`;
  return [...rows];
}

before(async () => {
  it = await startTestServer({}, { share: true });
  client = api(it.base);
  const admin = await loginAdmin(client);
  tenant = await seedTenant(client, admin.token, 'exposures');
  other = await seedTenant(client, admin.token, 'intruder');
  expectStatus(
    await client.post(`/v1/environments/${tenant.environmentId}/flags`, {
      token: tenant.admin.token,
      body: {
        flag: {
          key: 'new-checkout',
          value_type: 'string',
          variants: [
            { key: 'control', value: 'old' },
            { key: 'treatment', value: 'new' },
          ],
        },
        enabled: true,
      },
    }),
    201,
    'create flag',
  );
});

after(async () => {
  await it.stop();
});

describe('POST /exposures', () => {
  test('{exposures: [...]} with the SDK key: 202, committed before the answer, timestamp defaults to receipt time', async () => {
    const user = `u-${unique()}`;
    const sentAt = Date.now();
    const answer = expectStatus(
      await client.post(exposures(), {
        sdkKey: tenant.rawKey,
        body: { exposures: [exposure(user), exposure(user, { variant_key: 'control', timestamp_ms: 1_700_000_000_000 })] },
      }),
      202,
    );
    const answeredAt = Date.now();
    assert.deepEqual(answer, { accepted_count: 2, rejected_keys: [], rejected: [] });
    const [control, treatment] = await storedFor(user);
    assert.deepEqual(control, { flag_key: 'new-checkout', variant_key: 'control', context_type: 'user', timestamp_ms: 1_700_000_000_000 });
    assert.equal(treatment?.variant_key, 'treatment');
    assert.ok(treatment && treatment.timestamp_ms >= sentAt && treatment.timestamp_ms <= answeredAt);
  });

  test('a bare array with a bearer token of the org', async () => {
    const user = `u-${unique()}`;
    assert.deepEqual(expectStatus(await client.post(exposures(), { token: tenant.member.token, body: [exposure(user)] }), 202), {
      accepted_count: 1,
      rejected_keys: [],
      rejected: [],
    });
    assert.equal((await storedFor(user)).length, 1);
  });

  test('an unknown flag, an unknown variant or a missing, bad or too long field rejects that entry alone (its flag key, or "") and says why', async () => {
    const user = `u-${unique()}`;
    const answer = expectStatus(
      await client.post(exposures(), {
        sdkKey: tenant.rawKey,
        body: {
          exposures: [
            exposure(user, { flag_key: 'ghost-flag' }),
            exposure(user, { variant_key: 'no-such-variant' }),
            { flag_key: 'new-checkout', variant_key: 'control', context_type: 'user' },
            { variant_key: 'control', context_type: 'user', context_key: user },
            exposure(user, { timestamp_ms: 'yesterday' }),
            exposure(user),
            exposure('k'.repeat(513)),
          ],
        },
      }),
      202,
    );
    assert.deepEqual(answer, {
      accepted_count: 1,
      rejected_keys: ['ghost-flag', 'new-checkout', ''],
      rejected: [
        { index: 0, key: 'ghost-flag', reason: 'unknown_flag' },
        { index: 1, key: 'new-checkout', reason: 'unknown_variant' },
        { index: 2, key: 'new-checkout', reason: 'missing_field', field: 'context_key' },
        { index: 3, key: '', reason: 'missing_field', field: 'flag_key' },
        { index: 4, key: 'new-checkout', reason: 'invalid_field', field: 'timestamp_ms' },
        { index: 6, key: 'new-checkout', reason: 'field_too_long', field: 'context_key' },
      ],
    });
    assert.equal((await storedFor(user)).length, 1);
  });

  test('a body that is not exposures → 400', async () => {
    for (const body of ['x', 1, { exposure: [] }, { exposures: {} }, ['flag'], null]) {
      expectError(await client.post(exposures(), { sdkKey: tenant.rawKey, body }), 400, 'INVALID_ARGUMENT');
    }
  });

  test('more than 10,000 exposures → 413 RESOURCE_EXHAUSTED, nothing stored', async () => {
    const user = `many-${unique()}`;
    const many = Array.from({ length: 10_001 }, () => ({ flag_key: 'f', variant_key: 'v', context_type: 'u', context_key: user }));
    expectError(await client.post(exposures(), { sdkKey: tenant.rawKey, body: { exposures: many } }), 413, 'RESOURCE_EXHAUSTED');
    assert.deepEqual(await storedFor(user), []);
  });

  test('Idempotency-Key: a resend stores nothing and gets the first answer', async () => {
    const user = `idem-${unique()}`;
    const headers = { 'idempotency-key': `exp-${unique()}` };
    const body = { exposures: [exposure(user), exposure(user, { flag_key: 'ghost' })] };
    const answers = await Promise.all([0, 1, 2].map(() => client.post(exposures(), { sdkKey: tenant.rawKey, body, headers })));
    for (const answer of answers) assert.deepEqual(expectStatus(answer, 202), { accepted_count: 1, rejected_keys: ['ghost'], rejected: [{ index: 1, key: 'ghost', reason: 'unknown_flag' }] });
    assert.deepEqual(expectStatus(await client.post(exposures(), { sdkKey: tenant.rawKey, body, headers }), 202), { accepted_count: 1, rejected_keys: ['ghost'], rejected: [{ index: 1, key: 'ghost', reason: 'unknown_flag' }] });
    assert.equal((await storedFor(user)).length, 1);
  });

  test('no credential → 401; an SDK key of another environment → 403; a bearer of another org → 404', async () => {
    const user = `who-${unique()}`;
    expectError(await client.post(exposures(), { body: [exposure(user)] }), 401, 'UNAUTHENTICATED');
    expectError(await client.post(exposures(), { sdkKey: other.rawKey, body: [exposure(user)] }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(exposures(), { token: other.admin.token, body: [exposure(user)] }), 404, 'NOT_FOUND');
    assert.deepEqual(await storedFor(user), []);
  });
});
