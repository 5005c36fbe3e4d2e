import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { DomainError, type Principal } from '@switchyard/core';
import { stablePort } from '@switchyard/postgres/testing';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';
import { credentialOf } from '@switchyard/transport/remote/forwarded-credential.ts';
import { RemoteCredentialVerifier, type RemoteCredentialVerifierOptions } from '@switchyard/transport/remote/remote-credential-verifier.ts';
import type { RunningServer } from '../src/server.ts';
import { eventually } from './support/flag-fixtures.ts';
import { assertNoSecrets, api, expectStatus, login, loginAdmin, seedTenant, type ApiClient, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * The gateway's RemoteCredentialVerifier against a real services process (the single-process
 * server over PostgreSQL, through its internal gRPC port), and WatchCredentials from the server's
 * side. The internal port is fixed so that the services can be stopped and started again on it.
 */

let it: TestServer;
let services: RunningServer;
let grpcPort: number;
/** REST of the first services instance: its secrets are what the log scan looks for. */
let client: ApiClient;
/** REST of the instance running now (another one after the restart). */
let rest: ApiClient;
let root: LoggedInUser;
let tenant: Tenant;
const verifiers: RemoteCredentialVerifier[] = [];
/** The gateway's log lines, scanned for secrets with the server's. */
const gatewayLogs: string[] = [];

/**
 * The deadline of each ValidateCredential call (the production default). It was 500 ms, which a
 * loaded 2-core CI machine overran: a call answered UNAVAILABLE (the deadline, mapped) where the
 * test expected an answer. "Services stopped" below still requires failures well inside it.
 */
const CALL_TIMEOUT_MS = 5_000;

/** A started verifier of the services under test; stopped after the file. */
async function remoteVerifier(options: RemoteCredentialVerifierOptions = {}, start = true): Promise<RemoteCredentialVerifier> {
  const verifier = new RemoteCredentialVerifier(`127.0.0.1:${grpcPort}`, undefined, {
    callTimeoutMs: CALL_TIMEOUT_MS,
    log: (level, message, fields) => gatewayLogs.push(JSON.stringify({ level, message, ...fields })),
    ...options,
  });
  verifiers.push(verifier);
  if (start) await verifier.start();
  return verifier;
}

/** Awaits a call that must fail with a DomainError of `code`; returns it. */
async function rejectsWith(call: Promise<unknown>, code: string): Promise<DomainError> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof DomainError, `expected a DomainError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return error;
  }
  assert.fail(`expected ${code}, but the call succeeded`);
}

/**
 * Retries until the credential is refused (a revocation reaches the gateway asynchronously). Its
 * 10 s is a third of the cache's 30 s lifetime: a refusal in time comes from the announced
 * eviction, not from the answer expiring, and a stalled shared test process still makes it.
 */
async function refusedSoon(verify: () => Promise<Principal>, what: string): Promise<DomainError> {
  let outcome: unknown = null;
  await eventually(
    what,
    async () => {
      outcome = await verify().then(
        (principal) => principal,
        (error: unknown) => error,
      );
      return outcome instanceof Error;
    },
    10_000,
  );
  assert.ok(outcome instanceof DomainError);
  assert.equal(outcome.code, 'UNAUTHENTICATED', outcome.message);
  return outcome;
}

const sessionIdOf = (token: string): string =>
  (JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sid: string }).sid;

async function createKey(environmentId: string): Promise<{ id: string; raw: string }> {
  const key = expectStatus(await rest.post(`/v1/management/environments/${environmentId}/sdk-keys`, { token: tenant.admin.token }), 201, 'create key');
  return { id: key.sdk_key_id as string, raw: key.raw_key as string };
}

async function revokeKey(id: string): Promise<void> {
  expectStatus(await rest.delete(`/v1/management/environments/${tenant.environmentId}/sdk-keys/${id}`, { token: tenant.admin.token }), 204, 'delete key');
}

// --- WatchCredentials as a raw stream ---

const AuthServiceClient = lookup<grpc.ServiceClientConstructor>(loadProto('svc/auth/v1/auth.proto'), 'svc.auth.v1.AuthService');
type WatchEvent = { event: string; ready?: boolean; sdk_key_revoked?: { sdk_key_id: string }; session_changed?: { user_id: string } };

function openWatch(port: number, options: grpc.ChannelOptions = {}) {
  // A channel of its own (not shared with other clients of the port), so its window is its own.
  const raw = new AuthServiceClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1, ...options });
  const call = (raw as unknown as { watchCredentials(request: object): grpc.ClientReadableStream<WatchEvent> }).watchCredentials({});
  const events: WatchEvent[] = [];
  let status: grpc.StatusObject | null = null;
  call.on('data', (event: WatchEvent) => events.push(event));
  call.on('error', () => {});
  call.on('status', (received: grpc.StatusObject) => (status = received));
  return {
    call,
    events,
    status: () => status,
    close() {
      call.cancel();
      raw.close();
    },
  };
}

before(async () => {
  grpcPort = await stablePort();
  // The gateway's verifier is built here, against one process's internal port.
  it = await startTestServer({ GRPC_PORT: String(grpcPort) }, { topology: 'single' });
  services = it.server;
  client = api(it.base);
  rest = client;
  root = await loginAdmin(client);
  tenant = await seedTenant(client, root.token, 'remote-cred');
});

after(async () => {
  for (const verifier of verifiers) await verifier.stop();
  await it.stop();
});

describe('WatchCredentials (the services side)', () => {
  test('ready first, then the id of a revoked key and of a user who logged out', async () => {
    const watch = openWatch(grpcPort);
    try {
      await eventually('ready', async () => watch.events.length > 0);
      assert.equal(watch.events[0]?.event, 'ready');
      assert.equal(watch.events[0]?.ready, true);

      const key = await createKey(tenant.environmentId);
      await revokeKey(key.id);
      await eventually('the revocation', async () => watch.events.some((e) => e.event === 'sdk_key_revoked'));
      assert.deepEqual(watch.events.find((e) => e.event === 'sdk_key_revoked')?.sdk_key_revoked, { sdk_key_id: key.id });

      const session = await login(client, tenant.member.email, tenant.member.password);
      expectStatus(await client.post('/v1/auth/logout', { token: session.token }), 204, 'logout');
      await eventually('the session change', async () => watch.events.some((e) => e.event === 'session_changed'));
      assert.deepEqual(watch.events.find((e) => e.event === 'session_changed')?.session_changed, { user_id: tenant.member.userId });
      assert.equal(watch.events.filter((e) => e.event === 'ready').length, 1, 'ready only once');
      assert.equal(watch.status(), null, 'the stream is still open');
    } finally {
      watch.close();
    }
  });

  test('a watch that is not read is ended with RESOURCE_EXHAUSTED, not buffered without bound', async () => {
    const watch = openWatch(grpcPort, { 'grpc-node.flow_control_window': 8192 });
    try {
      await eventually('ready', async () => watch.events.length > 0);
      watch.call.pause();
      // Revocations of ids that name no key: only the events matter here.
      for (let batch = 0; batch < 100 && watch.status() === null; batch++) {
        for (let i = 0; i < 500; i++) services.services.verifier.evict(`00000000-0000-4000-8000-${String(batch * 500 + i).padStart(12, '0')}`);
        await new Promise((resolve) => setImmediate(resolve));
      }
      watch.call.resume();
      await eventually('the stream to end', async () => watch.status() !== null);
      assert.equal(watch.status()?.code, grpc.status.RESOURCE_EXHAUSTED, watch.status()?.details);
    } finally {
      watch.close();
    }
  });
});

describe('RemoteCredentialVerifier', () => {
  let verifier: RemoteCredentialVerifier;
  let watchingAtStart = false;
  let startMs = 0;

  before(async () => {
    const began = performance.now();
    verifier = await remoteVerifier();
    startMs = performance.now() - began;
    watchingAtStart = verifier.isWatching();
    // start() waits for the watch at most callTimeoutMs, which a loaded machine can take: the
    // tests below need answers cached.
    await eventually('the watch', async () => verifier.isWatching());
  });

  test('start() resolves with the watch established (or once its callTimeoutMs wait is over)', () => {
    assert.ok(watchingAtStart || startMs >= CALL_TIMEOUT_MS, `start() resolved after ${startMs.toFixed(0)} ms without the watch`);
  });

  test('a bearer token → the same principal as the services build, linked to the token', async () => {
    for (const user of [tenant.admin, tenant.member, root]) {
      const principal = await verifier.verifyBearer(user.token);
      assert.deepEqual(principal, await services.services.verifier.verifyBearer(user.token));
      assert.deepEqual(credentialOf(principal), { bearerToken: user.token });
    }
    assert.deepEqual(await verifier.verify({ bearerToken: tenant.member.token }), {
      kind: 'user',
      userId: tenant.member.userId,
      orgId: tenant.orgId,
      role: 'org_member',
      isSystem: false,
      sessionId: sessionIdOf(tenant.member.token),
    });
    const admin = await verifier.verifyBearer(tenant.admin.token);
    assert.equal(admin.kind === 'user' && admin.role, 'org_admin');
    const system = await verifier.verifyBearer(root.token);
    assert.equal(system.kind === 'user' && system.isSystem, true);
  });

  test('an SDK key → the same principal as the services build, linked to the key, then answered from memory', async () => {
    const principal = await verifier.verifySdkKey(tenant.rawKey);
    assert.deepEqual(principal, await services.services.verifier.verifySdkKey(tenant.rawKey));
    assert.deepEqual(principal, {
      kind: 'sdk_key',
      sdkKeyId: tenant.sdkKeyId,
      orgId: tenant.orgId,
      projectId: tenant.projectId,
      environmentId: tenant.environmentId,
    });
    assert.deepEqual(credentialOf(principal), { sdkKey: tenant.rawKey });
    assert.equal(verifier.cachedSdkKey(tenant.rawKey), principal);
    assert.equal(await verifier.verify({ sdkKey: tenant.rawKey }), principal);
  });

  test('invalid credentials → UNAUTHENTICATED with the services\' message', async () => {
    const local = services.services.verifier;
    for (const [what, remote, inProcess] of [
      ['garbage bearer', () => verifier.verifyBearer('not-a-jwt'), () => local.verifyBearer('not-a-jwt')],
      ['empty bearer', () => verifier.verifyBearer(''), () => local.verifyBearer('')],
      ['unknown SDK key', () => verifier.verifySdkKey('sdk_not-a-real-key'), () => local.verifySdkKey('sdk_not-a-real-key')],
      ['empty SDK key', () => verifier.verifySdkKey(''), () => local.verifySdkKey('')],
      ['no credential', () => verifier.verify({}), () => local.verify({})],
      ['two credentials', () => verifier.verify({ bearerToken: root.token, sdkKey: tenant.rawKey }), () => local.verify({ bearerToken: root.token, sdkKey: tenant.rawKey })],
    ] as const) {
      const error = await rejectsWith(remote(), 'UNAUTHENTICATED');
      const expected = await rejectsWith(inProcess(), 'UNAUTHENTICATED');
      assert.equal(error.message, expected.message, what);
    }
    assert.equal(verifier.cachedSdkKey('sdk_not-a-real-key'), null, 'a refused key is remembered briefly');
  });

  test('an SDK key revoked through REST is refused, though it was answered from memory, and onRevoked is told', async () => {
    const key = await createKey(tenant.environmentId);
    const revoked: string[] = [];
    const unsubscribe = verifier.onRevoked((id) => revoked.push(id));
    try {
      await verifier.verifySdkKey(key.raw);
      assert.ok(verifier.cachedSdkKey(key.raw), 'cached before the revocation');
      await revokeKey(key.id);
      const refusal = await refusedSoon(() => verifier.verifySdkKey(key.raw), 'the revoked key to be refused');
      assert.equal(refusal.message, 'invalid SDK key');
      assert.ok(revoked.includes(key.id));
      assert.notEqual(verifier.cachedSdkKey(key.raw)?.kind, 'sdk_key');
    } finally {
      unsubscribe();
    }
    assert.ok(await verifier.verifySdkKey(tenant.rawKey), 'another key of the environment still works');
  });

  test('after a logout the token is refused and onSessionChanged names the user; the user\'s other session still works', async () => {
    const session = await login(client, tenant.admin.email, tenant.admin.password);
    const changed: Array<string | null> = [];
    const unsubscribe = verifier.onSessionChanged((userId) => changed.push(userId));
    try {
      await verifier.verifyBearer(session.token);
      await verifier.verifyBearer(tenant.admin.token);
      expectStatus(await client.post('/v1/auth/logout', { token: session.token }), 204, 'logout');
      const refusal = await refusedSoon(() => verifier.verifyBearer(session.token), 'the logged-out token to be refused');
      await rejectsWith(services.services.verifier.verifyBearer(session.token), 'UNAUTHENTICATED').then((expected) => assert.equal(refusal.message, expected.message));
      assert.ok(changed.includes(tenant.admin.userId));
    } finally {
      unsubscribe();
    }
    assert.equal((await verifier.verifyBearer(tenant.admin.token)).kind, 'user');
  });

  test("a member's role bindings: a gateway's cached principal gives way to the announced change and carries them exactly", async () => {
    const member = await login(client, tenant.member.email, tenant.member.password);
    const path = `/v1/management/orgs/${tenant.orgId}/members/${tenant.member.userId}/role-bindings`;
    assert.equal('bindings' in (await verifier.verifyBearer(member.token)), false, 'cached without bindings');
    const changed: Array<string | null> = [];
    const unsubscribe = verifier.onSessionChanged((userId) => changed.push(userId));
    try {
      expectStatus(await client.request('PUT', path, { token: tenant.admin.token, body: { bindings: [{ role: 'viewer', environment_id: tenant.environmentId }, { role: 'editor', project_id: tenant.projectId }] } }), 200);
      await eventually('the change to reach the gateway', async () => changed.includes(tenant.member.userId), 10_000);
      const principal = await verifier.verifyBearer(member.token);
      assert.deepEqual(principal, await services.services.verifier.verifyBearer(member.token));
      assert.deepEqual(principal.kind === 'user' && principal.bindings, [
        { role: 'viewer', projectId: tenant.projectId, environmentId: tenant.environmentId },
        { role: 'editor', projectId: tenant.projectId },
      ]);
      expectStatus(await client.request('PUT', path, { token: tenant.admin.token, body: { bindings: [] } }), 200);
      await eventually('the empty list to reach the gateway', async () => {
        const next = await verifier.verifyBearer(member.token);
        return next.kind === 'user' && next.bindings?.length === 0;
      }, 10_000);
    } finally {
      unsubscribe();
      expectStatus(await client.delete(path, { token: tenant.admin.token }), 200);
    }
    await eventually('the default again', async () => !('bindings' in (await verifier.verifyBearer(member.token))), 10_000);
  });

  test('answers expire after cacheTtlMs', async () => {
    let clock = Date.now();
    const timed = await remoteVerifier({ now: () => clock, cacheTtlMs: 10_000 });
    // start() stops waiting for the watch after callTimeoutMs, which a loaded machine can take;
    // answers are cached only once it is up.
    await eventually('the watch', async () => timed.isWatching());
    await timed.verifySdkKey(tenant.rawKey);
    clock += 9_999;
    assert.ok(timed.cachedSdkKey(tenant.rawKey));
    clock += 2;
    assert.equal(timed.cachedSdkKey(tenant.rawKey), undefined);
    await timed.stop();
  });

  test('without the watch nothing is cached', async () => {
    const unstarted = await remoteVerifier({}, false);
    assert.equal(unstarted.isWatching(), false);
    assert.equal((await unstarted.verifySdkKey(tenant.rawKey)).kind, 'sdk_key');
    assert.equal(unstarted.cachedSdkKey(tenant.rawKey), undefined);
    await unstarted.stop();
  });

  test('services stopped → the watch ends at once with UNAVAILABLE, the cache is dropped, verification is UNAVAILABLE (not a hang)', async () => {
    const watch = openWatch(grpcPort);
    await eventually('ready', async () => watch.events.length > 0);
    await verifier.verifySdkKey(tenant.rawKey);
    await verifier.verifyBearer(tenant.member.token);
    assert.ok(verifier.cachedSdkKey(tenant.rawKey));

    await services.stop();
    // Ended by the shutdown step with our status, not cancelled when the gRPC grace period ran out.
    await eventually('the watch status', async () => watch.status() !== null);
    assert.equal(watch.status()?.code, grpc.status.UNAVAILABLE);
    assert.equal(watch.status()?.details, 'the server is shutting down; reconnect');
    watch.close();

    await eventually('the verifier to notice', async () => !verifier.isWatching());
    assert.equal(verifier.cachedSdkKey(tenant.rawKey), undefined, 'no answer outlives the watch');
    for (const call of [() => verifier.verifySdkKey(tenant.rawKey), () => verifier.verifyBearer(tenant.member.token)]) {
      const started = Date.now();
      const error = await rejectsWith(call(), 'UNAVAILABLE');
      assert.equal(error.message, 'the services are unavailable; retry later');
      // The refused connection fails the call, not its deadline: a stopped service costs no wait.
      assert.ok(Date.now() - started < CALL_TIMEOUT_MS / 2, `failed after ${Date.now() - started} ms, not at once`);
    }
  });

  test('services back on the same port → the watch is re-established, listeners hear "anyone", verification and revocation work again', async () => {
    const changed: Array<string | null> = [];
    const unsubscribe = verifier.onSessionChanged((userId) => changed.push(userId));
    try {
      const restarted = await it.startAnotherInstance();
      assert.equal(restarted.grpcPort, grpcPort);
      rest = api(`http://127.0.0.1:${restarted.httpPort}`);
      await eventually('the watch to be re-established', async () => verifier.isWatching(), 10_000);
      assert.ok(changed.includes(null), 'changes missed while away are announced as anyone\'s');
      const principal = await verifier.verifySdkKey(tenant.rawKey);
      assert.equal(principal.kind === 'sdk_key' && principal.sdkKeyId, tenant.sdkKeyId);
      assert.equal(verifier.cachedSdkKey(tenant.rawKey), principal, 'cached again');
      assert.equal((await verifier.verifyBearer(tenant.member.token)).kind, 'user');

      const key = await createKey(tenant.environmentId);
      await verifier.verifySdkKey(key.raw);
      await revokeKey(key.id);
      await refusedSoon(() => verifier.verifySdkKey(key.raw), 'a key revoked after the restart to be refused');
    } finally {
      unsubscribe();
    }
  });

  test('no raw credential in the server\'s or the gateway\'s logs', () => {
    assert.ok(gatewayLogs.some((line) => line.includes('credential watch lost')), 'the gateway logged the loss');
    assertNoSecrets([...it.logs, ...gatewayLogs], client);
    assertNoSecrets([...it.logs, ...gatewayLogs], rest, ['raw_key']);
    const all = [...it.logs, ...gatewayLogs].join('\n');
    for (const secret of [tenant.rawKey, tenant.admin.token, tenant.member.token, root.token]) assert.ok(!all.includes(secret));
  });
});
