import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { DomainError, RateLimitedError, type Principal } from '@switchyard/core';
import { gatewayServiceDefinition } from '@switchyard/transport/grpc/gateway-grpc.ts';
import { linkCredential } from '@switchyard/transport/remote/forwarded-credential.ts';
import { GATEWAY_INTERFACES } from '@switchyard/transport/remote/gateway-interfaces.ts';
import { ServicesUnavailableError } from '@switchyard/transport/remote/grpc-status-errors.ts';
import { RouteScope, createRemoteServices } from '@switchyard/transport/remote/remote-services.ts';
import { encodeArguments } from '@switchyard/transport/remote/service-call-codec.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * The gateway hop on its own (docs/architecture.md "The gateway hop"): the gRPC clients of the
 * `*GatewayService`s against a real server's internal port, with principals linked to real
 * credentials the way a gateway's verifier links them.
 */
describe('gateway hop: service interfaces over gRPC', () => {
  let ts: TestServer;
  let client: ApiClient;
  let a: Tenant;
  let b: Tenant;
  let channel: grpc.Channel;
  let changed: string[];
  let remote: ReturnType<typeof createRemoteServices>;
  /** What a gateway's verifier would produce for the tenant's admin: the principal, linked to its token. */
  let adminOfA: Principal;

  before(async () => {
    ts = await startTestServer({}, { topology: 'single' });
    client = api(ts.base);
    const root = await loginAdmin(client);
    a = await seedTenant(client, root.token, 'hop-a');
    b = await seedTenant(client, root.token, 'hop-b');
    channel = new grpc.Channel(`127.0.0.1:${ts.server.grpcPort}`, grpc.credentials.createInsecure(), {});
    changed = [];
    remote = createRemoteServices({ channel, deadlineMs: 5_000, onDefinitionsChanged: (id) => changed.push(id) });
    adminOfA = linkCredential(await ts.server.services.verifier.verifyBearer(a.admin.token), { bearerToken: a.admin.token });
  });

  after(async () => {
    channel?.close();
    await ts?.stop();
  });

  it('every *GatewayService in proto/ lists exactly the methods gateway-interfaces.ts describes', () => {
    for (const gatewayInterface of GATEWAY_INTERFACES) assert.doesNotThrow(() => gatewayServiceDefinition(gatewayInterface), gatewayInterface.service);
  });

  it('a call answers what REST answers for the same caller', async () => {
    const viaHop = await remote.management.listEnvironments(adminOfA, a.projectId);
    const viaRest = expectStatus(await client.get(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token }), 200);
    assert.deepEqual(viaHop, viaRest);
  });

  it('a definitions write reports its route id; a read does not', async () => {
    const target = await remote.flags.target(adminOfA, a.environmentId, 'environment');
    changed.length = 0;
    const flag = await remote.flags.create(adminOfA, target, { key: 'hop-flag', flag: { value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }] } } as never);
    assert.equal(flag.key, 'hop-flag');
    assert.deepEqual(changed, [a.environmentId]);
    const read = await remote.flags.get(adminOfA, target, 'hop-flag');
    assert.equal(read.key, 'hop-flag');
    assert.deepEqual(changed, [a.environmentId], 'a read reports nothing');
    // An omitted optional argument stays omitted (not null): delete without a version succeeds.
    await remote.flags.remove(adminOfA, target, 'hop-flag', undefined);
    const after = expectStatus(await client.get(`/v1/environments/${a.environmentId}/flags`, { token: a.admin.token }), 200);
    assert.equal(after.some((f: { key: string }) => f.key === 'hop-flag'), false);
  });

  it("the route id is resolved again for the caller: another org's environment is NOT_FOUND, as on REST", async () => {
    const foreign = await remote.flags.target(adminOfA, b.environmentId, 'environment');
    await assert.rejects(remote.flags.list(adminOfA, foreign), (error: unknown) => error instanceof DomainError && error.code === 'NOT_FOUND');
    const rest = await client.get(`/v1/environments/${b.environmentId}/flags`, { token: a.admin.token });
    assert.equal(rest.status, 404);
  });

  it('domain errors keep their code and message through the hop', async () => {
    const restAnswer = await client.post(`/v1/management/orgs/${a.orgId}/projects`, { token: a.member.token, body: { name: 'not-allowed' } });
    assert.equal(restAnswer.status, 403);
    const member = linkCredential(await ts.server.services.verifier.verifyBearer(a.member.token), { bearerToken: a.member.token });
    await assert.rejects(remote.management.createProject(member, a.orgId, { name: 'not-allowed' }), (error: unknown) => {
      assert.ok(error instanceof DomainError);
      assert.equal(error.code, 'PERMISSION_DENIED');
      assert.equal(error.message, restAnswer.body.error);
      return true;
    });
  });

  it('a throttled login keeps its retry-after through the hop', async () => {
    let last: unknown;
    for (let attempt = 0; attempt < 12; attempt++) {
      try {
        await remote.auth.login({ email: a.admin.email, password: 'wrong-password-1', clientAddress: '203.0.113.7' });
      } catch (error) {
        last = error;
        if (error instanceof RateLimitedError) break;
      }
    }
    assert.ok(last instanceof RateLimitedError, `expected a RateLimitedError, got ${String(last)}`);
    assert.ok(last.retryAfterSeconds > 0);
  });

  it('a principal with no credential linked to it is never sent (INTERNAL, no call)', async () => {
    const unlinked = await ts.server.services.verifier.verifyBearer(a.admin.token);
    await assert.rejects(remote.management.listOrgs(unlinked), (error: unknown) => error instanceof DomainError && error.code === 'INTERNAL');
  });

  it('the internal port refuses a hop call without a credential, and a scope that is not a RouteScope is never sent', async () => {
    const Client = gatewayServiceDefinition(GATEWAY_INTERFACES.find((i) => i.member === 'flags')!);
    const raw = new Client(`127.0.0.1:${ts.server.grpcPort}`, grpc.credentials.createInsecure()) as unknown as Record<string, Function>;
    const status = await new Promise<grpc.ServiceError>((resolve) =>
      raw.List!.call(raw, { scope_id: a.environmentId, scope_via: 'environment', arguments: encodeArguments([]) }, (error: grpc.ServiceError) => resolve(error)),
    );
    assert.equal(status.code, grpc.status.UNAUTHENTICATED);
    // A resolved scope object (what an attacker would forge) is refused before any call.
    const forged = { environment: { orgId: b.orgId, projectId: b.projectId, environmentId: b.environmentId } };
    await assert.rejects(remote.flags.list(adminOfA, forged as never), (error: unknown) => error instanceof DomainError && error.code === 'INTERNAL');
    (raw as unknown as grpc.Client).close();
  });

  it('arguments that are not {count, values} are INVALID_ARGUMENT, not a crash', async () => {
    const Client = gatewayServiceDefinition(GATEWAY_INTERFACES.find((i) => i.member === 'management')!);
    const raw = new Client(`127.0.0.1:${ts.server.grpcPort}`, grpc.credentials.createInsecure()) as unknown as Record<string, Function>;
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${a.admin.token}`);
    for (const bytes of [Buffer.from('not json'), Buffer.from('{"count":1e9,"values":{}}'), Buffer.from('[1,2]')]) {
      const status = await new Promise<grpc.ServiceError>((resolve) =>
        raw.ListOrgs!.call(raw, { scope_id: '', scope_via: '', arguments: bytes }, metadata, (error: grpc.ServiceError) => resolve(error)),
      );
      assert.equal(status.code, grpc.status.INVALID_ARGUMENT, bytes.toString());
    }
    (raw as unknown as grpc.Client).close();
  });

  it('services that cannot be reached answer ServicesUnavailableError promptly (no hang)', async () => {
    const nowhere = new grpc.Channel('127.0.0.1:1', grpc.credentials.createInsecure(), {});
    const unreachable = createRemoteServices({ channel: nowhere, deadlineMs: 2_000, onDefinitionsChanged: () => {} });
    await assert.rejects(unreachable.management.listOrgs(adminOfA), (error: unknown) => error instanceof ServicesUnavailableError);
    nowhere.close();
  });

  it("an SDK key cannot record exposures in another tenant's environment, nor malformed ones in its own", async () => {
    const keyOfA = linkCredential(await ts.server.services.verifier.verifySdkKey(a.rawKey), { sdkKey: a.rawKey });
    const exposure = { flagKey: 'f', variantKey: 'on', contextType: 'user', contextKey: 'u1', timestampMs: Date.now() };
    const countIn = async (environmentId: string): Promise<number> =>
      (await ts.server.database.sql<Array<{ count: number }>>`SELECT count(*)::int AS count FROM exposures WHERE environment_id = ${environmentId}`)[0]!.count;
    const foreign = await remote.ingest.scope(keyOfA, b.environmentId);
    await assert.rejects(remote.ingest.recordEvaluationExposures(keyOfA, foreign, [exposure]), (error: unknown) => error instanceof DomainError && error.code === 'PERMISSION_DENIED');
    assert.equal(await countIn(b.environmentId), 0);
    const own = await remote.ingest.scope(keyOfA, a.environmentId);
    await assert.rejects(
      remote.ingest.recordEvaluationExposures(keyOfA, own, [{ ...exposure, timestampMs: 'yesterday' } as never]),
      (error: unknown) => error instanceof DomainError && error.code === 'INVALID_ARGUMENT',
    );
    // A rule id is bounded as on the exposures route: a caller cannot store an unbounded string.
    await assert.rejects(
      remote.ingest.recordEvaluationExposures(keyOfA, own, [{ ...exposure, ruleId: 'r'.repeat(129) }]),
      (error: unknown) => error instanceof DomainError && error.code === 'INVALID_ARGUMENT',
    );
    assert.equal(await countIn(a.environmentId), 0);
    await remote.ingest.recordEvaluationExposures(keyOfA, own, [exposure]);
    assert.equal(await countIn(a.environmentId), 1, 'a well-formed exposure of its own environment is committed');
  });

  it("another tenant's SDK key ids are not listed: an SDK key of another environment is 403, a user of another org 404", async () => {
    const keyOfA = linkCredential(await ts.server.services.verifier.verifySdkKey(a.rawKey), { sdkKey: a.rawKey });
    assert.deepEqual(await remote.management.activeSdkKeyIds(keyOfA, a.environmentId), [a.sdkKeyId]);
    await assert.rejects(remote.management.activeSdkKeyIds(keyOfA, b.environmentId), (error: unknown) => error instanceof DomainError && error.code === 'PERMISSION_DENIED');
    await assert.rejects(remote.management.activeSdkKeyIds(adminOfA, b.environmentId), (error: unknown) => error instanceof DomainError && error.code === 'NOT_FOUND');
  });

  it('a RouteScope carries only the route id', async () => {
    const scope = await remote.segments.scope(adminOfA, a.environmentId);
    assert.ok(scope instanceof RouteScope);
    assert.deepEqual({ ...scope }, { routeId: a.environmentId, via: '' });
  });
});
