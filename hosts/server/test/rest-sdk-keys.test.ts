import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CredentialVerifier } from '@switchyard/services';
import {
  api,
  assertNoSecrets,
  expectError,
  expectStatus,
  loginAdmin,
  seedTenant,
  type ApiClient,
  type LoggedInUser,
  type Tenant,
} from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// No SDK route exists yet: a key "works" when the server's CredentialVerifier accepts it, which
// is the very check every SDK route (REST and sync) makes with the x-sdk-key it receives.

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;
let verifier: CredentialVerifier;

before(async () => {
  ts = await startTestServer();
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'keys-a');
  b = await seedTenant(client, root.token, 'keys-b');
  verifier = ts.server.services.verifier;
});
after(() => ts.stop());

const keysOf = (environmentId: string) => `/v1/management/environments/${environmentId}/sdk-keys`;

interface CreatedKey {
  id: string;
  raw: string;
}

async function createKey(tenant: Tenant, environmentId = tenant.environmentId): Promise<CreatedKey> {
  const body = expectStatus(await client.post(keysOf(environmentId), { token: tenant.admin.token }), 201, 'create sdk key');
  return { id: body.sdk_key_id as string, raw: body.raw_key as string };
}

async function listedIds(tenant: Tenant, environmentId = tenant.environmentId): Promise<string[]> {
  const response = await client.get(keysOf(environmentId), { token: tenant.admin.token });
  const body = expectStatus(response, 200);
  for (const key of body) assert.equal(key.raw_key, undefined, 'a listed key never carries raw_key');
  return body.map((key: { sdk_key_id: string }) => key.sdk_key_id);
}

/** The key is accepted and resolves to exactly this tenant's environment. */
async function expectWorks(raw: string, id: string, tenant: Tenant, environmentId = tenant.environmentId, by = verifier): Promise<void> {
  assert.deepEqual(await by.verifySdkKey(raw), {
    kind: 'sdk_key',
    sdkKeyId: id,
    orgId: tenant.orgId,
    projectId: tenant.projectId,
    environmentId,
  });
}

async function expectRejected(raw: string, by = verifier): Promise<void> {
  await assert.rejects(by.verifySdkKey(raw), (error: unknown) => {
    assert.equal((error as { code?: unknown }).code, 'UNAUTHENTICATED');
    return true;
  });
}

describe('SDK keys', () => {
  let second: CreatedKey;

  test("a key resolves to its own environment and org; an unknown key is UNAUTHENTICATED", async () => {
    await expectWorks(a.rawKey, a.sdkKeyId, a);
    await expectWorks(b.rawKey, b.sdkKeyId, b);
    await expectRejected(`${a.rawKey.slice(0, -2)}xx`);
    await expectRejected('sdk_not-a-real-key');
  });

  test('deleting the last active key → 409 FAILED_PRECONDITION, and the key still works', async () => {
    expectError(await client.delete(`${keysOf(a.environmentId)}/${a.sdkKeyId}`, { token: a.admin.token }), 409, 'FAILED_PRECONDITION');
    assert.deepEqual(await listedIds(a), [a.sdkKeyId]);
    await expectWorks(a.rawKey, a.sdkKeyId, a);
  });

  test('a second key is listed (without raw_key) next to the first, and works', async () => {
    second = await createKey(a);
    assert.deepEqual(await listedIds(a), [a.sdkKeyId, second.id]);
    await expectWorks(second.raw, second.id, a);
  });

  test('delete → 204 with no body; the key is gone from the list and stops working at once; the other still works', async () => {
    await expectWorks(a.rawKey, a.sdkKeyId, a);
    assert.ok(verifier.cachedSdkKey(a.rawKey), 'the key is answered from the cache before the delete');

    const response = await client.delete(`${keysOf(a.environmentId)}/${a.sdkKeyId}`, { token: a.admin.token });
    assert.equal(response.status, 204);
    assert.equal(response.text, '');

    await expectRejected(a.rawKey);
    await expectRejected(a.rawKey);
    assert.deepEqual(await listedIds(a), [second.id]);
    await expectWorks(second.raw, second.id, a);
  });

  test('deleting the same key again → 404 NOT_FOUND', async () => {
    expectError(await client.delete(`${keysOf(a.environmentId)}/${a.sdkKeyId}`, { token: a.admin.token }), 404, 'NOT_FOUND');
  });

  test('the remaining key is now the last one: 409, and it still works', async () => {
    expectError(await client.delete(`${keysOf(a.environmentId)}/${second.id}`, { token: a.admin.token }), 409, 'FAILED_PRECONDITION');
    await expectWorks(second.raw, second.id, a);
  });

  test('org_member: may list keys, may not create or delete them; the key keeps working', async () => {
    const listed = expectStatus(await client.get(keysOf(a.environmentId), { token: a.member.token }), 200);
    assert.deepEqual(listed.map((key: { sdk_key_id: string }) => key.sdk_key_id), [second.id]);
    expectError(await client.post(keysOf(a.environmentId), { token: a.member.token }), 403, 'PERMISSION_DENIED');
    const extra = await createKey(a);
    expectError(await client.delete(`${keysOf(a.environmentId)}/${extra.id}`, { token: a.member.token }), 403, 'PERMISSION_DENIED');
    await expectWorks(extra.raw, extra.id, a);
    expectStatus(await client.delete(`${keysOf(a.environmentId)}/${extra.id}`, { token: a.admin.token }), 204);
  });

  test("a key id under another environment's path → 404, and the key keeps working", async () => {
    const environment = expectStatus(
      await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: 'staging' } }),
      201,
    );
    const staging = environment.environment_id as string;
    const first = await createKey(a, staging);
    await createKey(a, staging);
    expectError(await client.delete(`${keysOf(a.environmentId)}/${first.id}`, { token: a.admin.token }), 404, 'NOT_FOUND');
    await expectWorks(first.raw, first.id, a, staging);
    assert.ok((await listedIds(a, staging)).includes(first.id));
  });

  test("another org's key: 404 on its own path and on ours, and it keeps working", async () => {
    await createKey(b);
    expectError(await client.delete(`${keysOf(b.environmentId)}/${b.sdkKeyId}`, { token: a.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.delete(`${keysOf(a.environmentId)}/${b.sdkKeyId}`, { token: a.admin.token }), 404, 'NOT_FOUND');
    await expectWorks(b.rawKey, b.sdkKeyId, b);
    assert.ok((await listedIds(b)).includes(b.sdkKeyId));
  });

  test('deleting the last two keys at once: one 204, one 409, and the survivor works', async () => {
    const environment = expectStatus(
      await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: 'race' } }),
      201,
    );
    const race = environment.environment_id as string;
    const keys = [await createKey(a, race), await createKey(a, race)];
    const answers = await Promise.all(keys.map((key) => client.delete(`${keysOf(race)}/${key.id}`, { token: a.admin.token })));
    assert.deepEqual(answers.map((response) => response.status).sort(), [204, 409]);
    const survivors = await listedIds(a, race);
    assert.equal(survivors.length, 1);
    const survivor = keys.find((key) => key.id === survivors[0]);
    assert.ok(survivor);
    await expectWorks(survivor.raw, survivor.id, a, race);
  });

  test('an SDK key is not a bearer credential: management routes answer 401', async () => {
    expectError(await client.get(keysOf(a.environmentId), { sdkKey: second.raw }), 401, 'UNAUTHENTICATED');
    expectError(await client.get(keysOf(a.environmentId), { token: second.raw }), 401, 'UNAUTHENTICATED');
    expectError(await client.post(keysOf(a.environmentId), { sdkKey: second.raw }), 401, 'UNAUTHENTICATED');
  });

  // The revocation must reach the other instance through the notification: its cache would keep
  // the key for 60 s otherwise, so waiting up to 15 s still tells the two apart on a busy machine.
  // How fast it arrives is measured by bench/propagation.
  test('a key cached on another instance is rejected there after the DELETE on this one, long before its cache would expire', async () => {
    const other = await ts.startAnotherInstance();
    const otherVerifier = other.services.verifier;
    const key = await createKey(a);
    await expectWorks(key.raw, key.id, a, a.environmentId, otherVerifier);
    assert.ok(otherVerifier.cachedSdkKey(key.raw), 'the other instance answers the key from its cache');

    expectStatus(await client.delete(`${keysOf(a.environmentId)}/${key.id}`, { token: a.admin.token }), 204);
    const deletedAt = Date.now();
    await expectRejected(key.raw);

    let rejection: unknown;
    while (rejection === undefined) {
      try {
        await otherVerifier.verifySdkKey(key.raw);
      } catch (error) {
        rejection = error;
        break;
      }
      if (Date.now() - deletedAt >= 15_000) break;
      await sleep(50);
    }
    assert.ok(rejection !== undefined, 'the other instance still accepted the key 15 s after the DELETE');
    assert.equal((rejection as { code?: unknown }).code, 'UNAUTHENTICATED');
    // The other instance's answers stay in line with the database for the remaining key.
    await expectWorks(second.raw, second.id, a, a.environmentId, otherVerifier);
  });
});

describe('secrets', () => {
  test('no password, raw SDK key, refresh token, JWT or bcrypt hash in the logs or in responses', () => {
    assertNoSecrets(ts.logs, client);
  });
});
