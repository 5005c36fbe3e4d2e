import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { bearer } from './support/grpc-clients.ts';
import { api, expectStatus, login, loginAdmin, seedTenant, unique, type ApiClient, type Tenant } from './support/rest-client.ts';
import { endsWith, flagKeys, openInternalSync, openSync, sdkKeyMetadata, segmentKeys, type OpenStream } from './support/sync-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let it: TestServer;
let rest: ApiClient;
let tenant: Tenant;
let other: Tenant;
const open: OpenStream[] = [];

const flagsPath = (env: string): string => `/v1/environments/${env}/flags`;
const segmentsPath = (env: string): string => `/v1/environments/${env}/segments`;

const flagBody = (key: string, extra: Record<string, unknown> = {}) => ({
  flag: { key, description: `flag ${key}`, value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', ...extra },
  enabled: true,
});

async function createFlag(t: Tenant, key: string): Promise<void> {
  expectStatus(await rest.post(flagsPath(t.environmentId), { token: t.admin.token, body: flagBody(key) }), 201, `create flag ${key}`);
}

/** A stream opened with the tenant's SDK key, closed after the file's tests. */
function sync(t: Tenant = tenant, request: { environment_id?: string } = { environment_id: t.environmentId }, metadata = sdkKeyMetadata(t.rawKey), options: grpc.ChannelOptions = {}): OpenStream {
  const stream = openSync(it.server.syncGrpcPort, request, metadata, options);
  open.push(stream);
  return stream;
}

before(async () => {
  it = await startTestServer();
  rest = api(it.base);
  const root = await loginAdmin(rest);
  tenant = await seedTenant(rest, root.token, 'sync');
  other = await seedTenant(rest, root.token, 'sync-other');
  await createFlag(tenant, 'base-flag');
  expectStatus(
    await rest.post(segmentsPath(tenant.environmentId), {
      token: tenant.admin.token,
      body: { key: 'beta', context_type: 'user', kind: 'list', included_keys: ['u1'] },
    }),
    201,
    'create list segment',
  );
});

after(async () => {
  for (const stream of open) stream.cancel();
  await it.stop();
});

describe('FlagSyncService.SyncDefinitions', () => {
  // Delivery time is measured by bench/sync; here the change must arrive (next() waits up to 15 s).
  test('first a full snapshot with sequence 1, then only the change of a REST update', async () => {
    const stream = sync();
    const first = await stream.next();
    assert.equal(first.sequence_number, 1);
    assert.equal(first.full_snapshot, true);
    assert.equal(first.environment_id, tenant.environmentId);
    assert.ok(flagKeys(first).includes('base-flag'));
    assert.deepEqual(segmentKeys(first), ['beta']);
    const beta = first.segments[0];
    assert.equal(beta?.segment, 'list_segment');
    assert.equal(beta?.list_segment?.key, 'beta');
    assert.equal(beta?.list_segment?.context_type, 'user');
    assert.match(beta?.list_segment?.id ?? '', /^[0-9a-f-]{36}$/);
    assert.ok(first.server_timestamp_ms > Date.now() - 60_000);
    const baseFlag = first.flags.find((flag) => flag.key === 'base-flag');
    assert.equal(baseFlag?.value_type, 'FLAG_VALUE_TYPE_BOOL');
    assert.deepEqual(baseFlag?.variants.map((v) => [v.key, v.value?.bool_value]), [['on', true], ['off', false]]);

    expectStatus(await rest.request('PUT', `${flagsPath(tenant.environmentId)}/base-flag`, { token: tenant.admin.token, body: { enabled: false } }), 200, 'update');
    const second = await stream.next();
    assert.equal(second.sequence_number, 2);
    assert.equal(second.full_snapshot, false);
    assert.deepEqual(flagKeys(second), ['base-flag']);
    assert.equal(second.flags[0]?.enabled, false);
    assert.deepEqual([second.segments, second.removed_flag_keys, second.removed_segment_keys], [[], [], []]);
    assert.ok(second.server_timestamp_ms >= first.server_timestamp_ms);
  });

  test('a flag created, archived and deleted: the flag, then its key as removed, with strictly increasing sequence numbers', async () => {
    const stream = sync();
    await stream.next();
    const key = `temp-${unique()}`;
    await createFlag(tenant, key);
    const added = await stream.until((m) => flagKeys(m).includes(key));
    assert.equal(added.full_snapshot, false);

    expectStatus(await rest.request('DELETE', `${flagsPath(tenant.environmentId)}/${key}`, { token: tenant.admin.token }), 204, 'delete');
    const removed = await stream.until((m) => m.removed_flag_keys.length > 0);
    assert.deepEqual(removed.removed_flag_keys, [key]);
    assert.deepEqual(removed.flags, []);

    const archived = `arch-${unique()}`;
    await createFlag(tenant, archived);
    await stream.until((m) => flagKeys(m).includes(archived));
    expectStatus(await rest.post(`${flagsPath(tenant.environmentId)}/${archived}/archive`, { token: tenant.admin.token }), 200, 'archive');
    const gone = await stream.until((m) => m.removed_flag_keys.includes(archived));
    assert.equal(gone.full_snapshot, false);

    const sequences = stream.messages.map((m) => m.sequence_number);
    assert.deepEqual(sequences, sequences.map((_, i) => i + 1), 'one more per message, no gaps');
  });

  test('segments: a rule segment in full, list segments as metadata, deletions as removed keys', async () => {
    const stream = sync();
    await stream.next();
    const key = `rules-${unique()}`;
    const conditions = [{ attribute: 'country', op: 'eq', values: ['NZ'] }];
    expectStatus(await rest.post(segmentsPath(tenant.environmentId), { token: tenant.admin.token, body: { key, context_type: 'user', kind: 'rule', conditions } }), 201, 'create');
    const added = await stream.until((m) => segmentKeys(m).includes(key));
    const rule = added.segments[0]?.rule_segment;
    assert.equal(added.segments[0]?.segment, 'rule_segment');
    assert.equal(rule?.context_type, 'user');
    assert.deepEqual(JSON.parse(Buffer.from(rule?.rule_payload ?? []).toString('utf8')), { conditions });

    // A member change of a list segment is announced (SDKs drop cached list-check answers).
    expectStatus(await rest.request('PATCH', `${segmentsPath(tenant.environmentId)}/beta/members`, { token: tenant.admin.token, body: { add_included: ['u2'] } }), 200, 'members');
    const members = await stream.until((m) => segmentKeys(m).includes('beta'));
    assert.equal(members.segments[0]?.segment, 'list_segment');

    expectStatus(await rest.request('DELETE', `${segmentsPath(tenant.environmentId)}/${key}`, { token: tenant.admin.token }), 204, 'delete');
    const removed = await stream.until((m) => m.removed_segment_keys.length > 0);
    assert.deepEqual(removed.removed_segment_keys, [key]);
  });

  test('an empty environment_id means the key\'s own environment', async () => {
    const stream = sync(tenant, {});
    const first = await stream.next();
    assert.equal(first.environment_id, tenant.environmentId);
  });

  test('missing or unknown key → UNAUTHENTICATED; another environment → PERMISSION_DENIED', async () => {
    const missing = await endsWith(sync(tenant, { environment_id: tenant.environmentId }, new grpc.Metadata()), grpc.status.UNAUTHENTICATED);
    assert.match(missing.details, /x-sdk-key/);
    await endsWith(sync(tenant, { environment_id: tenant.environmentId }, sdkKeyMetadata('sk_not_a_real_key')), grpc.status.UNAUTHENTICATED);
    await endsWith(sync(tenant, { environment_id: other.environmentId }), grpc.status.PERMISSION_DENIED);
    // A bearer token is not a credential of the public stream.
    await endsWith(sync(tenant, { environment_id: tenant.environmentId }, bearer(tenant.admin.token)), grpc.status.UNAUTHENTICATED);
  });

  test('revoking the SDK key ends its streams with UNAUTHENTICATED; other keys keep streaming', async () => {
    const extra = expectStatus(await rest.post(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, { token: tenant.admin.token }), 201, 'key');
    const doomed = sync(tenant, { environment_id: tenant.environmentId }, sdkKeyMetadata(extra.raw_key as string));
    const survivor = sync();
    await doomed.next();
    await survivor.next();
    expectStatus(await rest.delete(`/v1/management/environments/${tenant.environmentId}/sdk-keys/${extra.sdk_key_id}`, { token: tenant.admin.token }), 204, 'revoke');
    const error = await endsWith(doomed, grpc.status.UNAUTHENTICATED);
    assert.match(error.details, /revoked/);
    await createFlag(tenant, `after-revoke-${unique()}`);
    await survivor.until((m) => !m.full_snapshot);
    // The revoked key cannot open a new stream either.
    await endsWith(sync(tenant, { environment_id: tenant.environmentId }, sdkKeyMetadata(extra.raw_key as string)), grpc.status.UNAUTHENTICATED);
  });

  test('a project-level change (the project flag route) reaches the environment\'s streams', async () => {
    const stream = sync();
    await stream.next();
    expectStatus(
      await rest.request('PUT', `/v1/projects/${tenant.projectId}/flags/base-flag`, { token: tenant.admin.token, body: { flag: { description: 'edited at project level' } } }),
      200,
      'project update',
    );
    const changed = await stream.until((m) => flagKeys(m).includes('base-flag'));
    assert.equal(changed.flags[0]?.description, 'edited at project level');
  });

  test('a client with its own 1 s keepalive stays connected while idle and still gets the next change', async () => {
    const stream = sync(tenant, { environment_id: tenant.environmentId }, sdkKeyMetadata(tenant.rawKey), {
      'grpc.keepalive_time_ms': 1000,
      'grpc.keepalive_timeout_ms': 1000,
      'grpc.keepalive_permit_without_calls': 1,
    });
    await stream.next();
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const key = `after-idle-${unique()}`;
    await createFlag(tenant, key);
    await stream.until((m) => flagKeys(m).includes(key));
  });
});

describe('after a lost notification connection', () => {
  test('every stream gets a full snapshot (next sequence number) when the LISTEN connection reconnects', async () => {
    const stream = sync();
    const first = await stream.next();
    // Kill the instance's LISTEN connection; postgres.js reconnects and listens again.
    const killed = await it.db.sql<{ pid: number }[]>`
      SELECT pg_terminate_backend(pid) AS pid FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'listen%'`;
    assert.ok(killed.length > 0, 'found the LISTEN connection');
    const resync = await stream.until((m) => m.full_snapshot);
    assert.equal(resync.sequence_number, stream.messages.indexOf(resync) + 1, 'the sequence goes on');
    assert.deepEqual(flagKeys(resync), flagKeys(first));
    // And notifications flow again afterwards.
    const key = `after-reconnect-${unique()}`;
    await createFlag(tenant, key);
    await stream.until((m) => flagKeys(m).includes(key) && !m.full_snapshot);
  });

  test('a key revoked while notifications were lost is caught at the resync', async () => {
    const extra = expectStatus(await rest.post(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, { token: tenant.admin.token }), 201, 'key');
    const stream = sync(tenant, { environment_id: tenant.environmentId }, sdkKeyMetadata(extra.raw_key as string));
    await stream.next();
    // Revoked in the database only: no notification, as if it had been sent while disconnected.
    const scope = { orgId: tenant.orgId, projectId: tenant.projectId, environmentId: tenant.environmentId };
    await it.server.repos.sdkKeys.revoke(scope, extra.sdk_key_id as string);
    it.server.services.snapshots.invalidateAll();
    await endsWith(stream, grpc.status.UNAUTHENTICATED);
  });
});

describe('FlagService.Sync (internal port)', () => {
  test('SDK key: flags, rule_segments and list_segments split by kind, environment_id set', async () => {
    const stream = openInternalSync(it.server.grpcPort, { contexts: [{ context_type: 'user', key: 'u1' }] }, sdkKeyMetadata(tenant.rawKey));
    open.push(stream);
    const first = await stream.next();
    assert.equal(first.sequence_number, 1);
    assert.equal(first.full_snapshot, true);
    assert.equal(first.environment_id, tenant.environmentId);
    assert.ok(flagKeys(first).includes('base-flag'));
    assert.deepEqual(first.list_segments.map((s) => s.key), ['beta']);
    assert.deepEqual(first.segments, []);
    const key = `internal-${unique()}`;
    await createFlag(tenant, key);
    const next = await stream.until((m) => flagKeys(m).includes(key));
    assert.ok(next.sequence_number > 1);
  });

  test('a bearer token syncs an environment of its org; another org\'s environment is NOT_FOUND', async () => {
    const stream = openInternalSync(it.server.grpcPort, { environment_id: tenant.environmentId }, bearer(tenant.member.token));
    open.push(stream);
    assert.equal((await stream.next()).environment_id, tenant.environmentId);
    const foreign = openInternalSync(it.server.grpcPort, { environment_id: other.environmentId }, bearer(tenant.member.token));
    open.push(foreign);
    await endsWith(foreign, grpc.status.NOT_FOUND);
  });

  test('a bearer stream, on this or another instance, ends with UNAUTHENTICATED when its session ends', async () => {
    const session = await login(rest, tenant.member.email, tenant.member.password);
    const another = await it.startAnotherInstance();
    const here = openInternalSync(it.server.grpcPort, { environment_id: tenant.environmentId }, bearer(session.token));
    const there = openInternalSync(another.grpcPort, { environment_id: tenant.environmentId }, bearer(session.token));
    const unrelated = openInternalSync(it.server.grpcPort, { environment_id: tenant.environmentId }, bearer(tenant.member.token));
    open.push(here, there, unrelated);
    for (const stream of [here, there, unrelated]) assert.equal((await stream.next()).sequence_number, 1);
    expectStatus(await rest.post('/v1/auth/logout', { token: session.token }), 204);
    await endsWith(here, grpc.status.UNAUTHENTICATED);
    await endsWith(there, grpc.status.UNAUTHENTICATED);
    // The member's other session streams on.
    const key = `after-logout-${unique()}`;
    await createFlag(tenant, key);
    assert.ok(flagKeys(await unrelated.until((m) => flagKeys(m).includes(key))).includes(key));
  });
});
