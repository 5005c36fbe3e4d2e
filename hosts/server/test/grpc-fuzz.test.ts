import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import fc from 'fast-check';
import { PROTO_ROOT } from '@switchyard/transport/grpc/proto.ts';
import { createExperiment, defineMetric, splitFlag } from './support/experiment-fixtures.ts';
import { createFlag, createSegment } from './support/flag-client.ts';
import { FUZZ_RUNS, FUZZ_SEED, FUZZ_SHRINK, LEAK_PATTERN, replayHint, seedFor } from './support/fuzz-values.ts';
import { ProtoValues } from './support/proto-arbitraries.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Fuzzing of every gRPC method from the protos (docs/security.md "Input rules"): the internal
 * services on the gRPC port (svc.*.v1, the gateway hop's *GatewayService, health) and the public
 * FlagSyncService, each with FUZZ_RUNS messages built from the proto-loader descriptors — valid
 * ids and keys mixed with U+0000, lone surrogates, odd and long strings, extreme numbers, unknown
 * enum values, long repeated fields, missing fields — and a bearer token, an SDK key, nothing or
 * garbage as credential. No call may end INTERNAL or UNKNOWN (a bad request is the caller's
 * fault), hang, or show a stack or SQL in its details; the server is healthy afterwards and
 * logged no unhandled error. Same seed rules as rest-fuzz.test.ts (support/fuzz-values.ts).
 */

/** Generous, as for REST; DEADLINE_EXCEEDED at this deadline is a hang. */
const CALL_DEADLINE_MS = 30_000;
/** A server stream that neither sends nor ends within this is cancelled: it is open and healthy (a sync or watch stream). */
const STREAM_LOOK_MS = 200;
const CONCURRENCY = 8;
const FAULTS = new Set([grpc.status.INTERNAL, grpc.status.UNKNOWN, grpc.status.DEADLINE_EXCEEDED]);

// topologies: single — the internal port is the services' in both topologies (the same code), and
// the public sync port is made by the same startGrpcServer with the same request guard.

let ts: TestServer;
let client: ApiClient;
let tenant: Tenant;
let known: Record<string, string[]>;

/** Where this test logs in itself, so fuzzed logins' failures (throttled per address) never lock it out. */
const OWN_ADDRESS = '127.0.0.2';

/** The fuzzer may log the session out (AuthGatewayService/Logout) or revoke the key: before each method, both are valid again. */
async function ensureCredentials(): Promise<void> {
  if ((await client.get('/v1/auth/orgs', { token: tenant.admin.token })).status !== 200) {
    const body = { email: tenant.admin.email, password: tenant.admin.password, org_id: tenant.orgId };
    tenant.admin.token = expectStatus(await client.post('/v1/auth/login', { body, localAddress: OWN_ADDRESS }), 200, 'login again').token;
  }
  const evaluate = await client.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: tenant.rawKey, body: { context_key: 'u1', context_type: 'user' } });
  if (evaluate.status === 401) {
    tenant.rawKey = expectStatus(await client.post(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, { token: tenant.admin.token }), 201, 'new sdk key').raw_key;
  }
}

interface Method {
  name: string;
  definition: grpc.MethodDefinition<object, unknown>;
  requestType: string;
  port: () => number;
}

/** Every method of every service in proto/ (health included), with the port that serves it. */
function methodsFromProtos(): { methods: Method[]; definitions: protoLoader.PackageDefinition } {
  const files = (readdirSync(PROTO_ROOT, { recursive: true }) as string[]).filter((file) => file.endsWith('.proto')).map((file) => file.split(path.sep).join('/'));
  const definitions = protoLoader.loadSync(files, { includeDirs: [PROTO_ROOT], keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
  const methods: Method[] = [];
  for (const [serviceName, service] of Object.entries(definitions)) {
    if ('format' in service) continue;
    for (const definition of Object.values(service as grpc.ServiceDefinition)) {
      const requestType = (definition as unknown as { requestType: { type: { name: string } } }).requestType.type;
      // The descriptor names the type without its package (it may be another file's): found by name and content.
      const sameContent = JSON.stringify(requestType);
      const typeName = Object.keys(definitions).find(
        (name) => name.endsWith(`.${requestType.name}`) && JSON.stringify((definitions[name] as { type?: unknown }).type) === sameContent,
      );
      assert.ok(typeName, `the request type of ${definition.path}`);
      methods.push({
        name: definition.path,
        definition: definition as grpc.MethodDefinition<object, unknown>,
        requestType: typeName,
        port: serviceName === 'svc.flags.v1.FlagSyncService' ? () => ts.server.syncGrpcPort : () => ts.server.grpcPort,
      });
    }
  }
  return { methods, definitions };
}

const credential = fc.constantFrom('bearer', 'bearer', 'bearer', 'bearer', 'sdk_key', 'sdk_key', 'none', 'garbage');

function metadataFor(kind: string, garbage: string): grpc.Metadata {
  const metadata = new grpc.Metadata();
  if (kind === 'bearer') metadata.set('authorization', `Bearer ${tenant.admin.token}`);
  if (kind === 'sdk_key') {
    metadata.set('x-sdk-key', tenant.rawKey);
    metadata.set('authorization', `Bearer ${tenant.rawKey}`);
  }
  if (kind === 'garbage') metadata.set('authorization', `Bearer ${garbage}`);
  return metadata;
}

/** One call's final status (a stream is cancelled once it sends or after STREAM_LOOK_MS, as a healthy open stream). */
function call(channel: grpc.Client, method: Method, request: object, metadata: grpc.Metadata): Promise<grpc.StatusObject> {
  const { definition } = method;
  const options = { deadline: Date.now() + CALL_DEADLINE_MS };
  return new Promise((resolve) => {
    if (!definition.responseStream) {
      channel.makeUnaryRequest(method.name, definition.requestSerialize, definition.responseDeserialize, request, metadata, options, (error) =>
        resolve(error ? { code: error.code, details: error.details, metadata: error.metadata } : { code: grpc.status.OK, details: '', metadata: new grpc.Metadata() }),
      );
      return;
    }
    const stream = channel.makeServerStreamRequest(method.name, definition.requestSerialize, definition.responseDeserialize, request, metadata, options);
    const look = setTimeout(() => stream.cancel(), STREAM_LOOK_MS);
    stream.on('data', () => stream.cancel());
    stream.on('error', () => undefined);
    stream.on('status', (status: grpc.StatusObject) => {
      clearTimeout(look);
      resolve(status);
    });
  });
}

before(async () => {
  ts = await startTestServer({}, { topology: 'single' });
  client = api(ts.base);
  const root = await loginAdmin(client);
  tenant = await seedTenant(client, root.token, 'grpc-fuzz');
  const token = tenant.admin.token;
  await createFlag(client, token, tenant.environmentId, splitFlag('fuzz-flag'));
  await defineMetric(client, tenant, 'purchase', 'bool');
  await createSegment(client, token, tenant.environmentId, { key: 'fuzz-list', context_type: 'user', kind: 'list', included_keys: ['u1'] });
  const experiment = await createExperiment(client, tenant, { flag_key: 'fuzz-flag', metric_keys: ['purchase'] });
  const spare = expectStatus(await client.post(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, { token }), 201, 'spare key');
  const changeRequest = expectStatus(
    await client.post(`/v1/environments/${tenant.environmentId}/change-requests`, { token, body: { title: 'fuzz', changes: [{ flag_key: 'fuzz-flag', operations: [{ op: 'set_enabled', enabled: true }] }], submit: true } }),
    201,
    'change request',
  );
  const scheduled = expectStatus(
    await client.post(`/v1/environments/${tenant.environmentId}/flags/fuzz-flag/scheduled-changes`, { token, body: { execute_at_ms: Date.now() + 365 * 24 * 60 * 60_000, operations: [{ op: 'set_enabled', enabled: false }] } }),
    201,
    'scheduled change',
  );
  const history = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/fuzz-flag/history`, { token }), 200, 'history');
  known = {
    audit_entry_id: (history.entries as Array<{ id: string }>).map((entry) => entry.id),
    org_id: [tenant.orgId],
    change_request_id: [changeRequest.id],
    target_org_id: [tenant.orgId],
    project_id: [tenant.projectId],
    environment_id: [tenant.environmentId],
    scope_id: [tenant.environmentId, tenant.projectId],
    scope_via: ['environment', 'project'],
    flag_key: ['fuzz-flag'],
    key: ['fuzz-flag', 'purchase', 'fuzz-list'],
    variant_key: ['control', 'treatment'],
    segment_key: ['fuzz-list'],
    metric_key: ['purchase'],
    experiment_id: [experiment.id],
    id: [experiment.id, scheduled.id],
    user_id: [tenant.member.userId],
    sdk_key_id: [spare.sdk_key_id],
    context_type: ['user'],
    context_key: ['u1'],
    service: ['', 'svc.flags.v1.FlagService'],
    target_environment_id: [tenant.environmentId],
    from_environment_id: [tenant.environmentId],
    flag_keys: ['fuzz-flag'],
    include: ['rules', 'enabled', 'prerequisites', 'segments'],
  };
});
after(() => ts.stop());

describe('gRPC fuzzing from the protos', () => {
  test(`every method, ${FUZZ_RUNS} messages each (seed ${FUZZ_SEED}): never INTERNAL or UNKNOWN, no hang, no leak`, async (t) => {
    const { methods, definitions } = methodsFromProtos();
    assert.ok(methods.length >= 100, `the protos list ${methods.length} methods`);
    const values = new ProtoValues(definitions, known);
    const internal = new grpc.Client(`127.0.0.1:${ts.server.grpcPort}`, grpc.credentials.createInsecure());
    const sync = new grpc.Client(`127.0.0.1:${ts.server.syncGrpcPort}`, grpc.credentials.createInsecure());
    const failures: string[] = [];
    const codes = new Map<string, number>();
    let sent = 0;
    const started = performance.now();
    const queue = [...methods];
    const worker = async () => {
      for (let method = queue.shift(); method !== undefined; method = queue.shift()) {
        const current = method;
        await ensureCredentials();
        const channel = current.port() === ts.server.syncGrpcPort ? sync : internal;
        const requests = fc.record({ message: values.message(current.requestType), credential, garbage: fc.stringMatching(/^[\x21-\x7e]{0,60}$/) });
        const property = fc.asyncProperty(requests, async ({ message, credential: kind, garbage }) => {
          sent++;
          const status = await call(channel, current, message, metadataFor(kind, garbage));
          const name = grpc.status[status.code] ?? String(status.code);
          codes.set(name, (codes.get(name) ?? 0) + 1);
          const shown = `${current.name} ${JSON.stringify(message).slice(0, 400)}`;
          assert.ok(!FAULTS.has(status.code), `${shown}: ended ${name}: ${status.details}`);
          assert.doesNotMatch(status.details ?? '', LEAK_PATTERN, `${shown}: details leak internals: ${status.details}`);
        });
        const details = await fc.check(property, { seed: seedFor(current.name), numRuns: FUZZ_RUNS, endOnFailure: !FUZZ_SHRINK });
        if (details.failed) {
          const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
          failures.push(`${current.name}: ${cause}\n  ${replayHint(current.name)}`);
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    } finally {
      internal.close();
      sync.close();
    }
    t.diagnostic(`${methods.length} methods, ${sent} calls in ${((performance.now() - started) / 1000).toFixed(1)} s (seed ${FUZZ_SEED})`);
    t.diagnostic(`statuses: ${[...codes].sort().map(([code, count]) => `${code}×${count}`).join(' ')}`);
    assert.deepEqual(failures, [], `fuzzing found ${failures.length} failing methods:\n${failures.join('\n')}`);
  });

  test('the server is healthy afterwards and logged no unhandled error', async () => {
    assert.equal((await fetch(`${ts.base}/readyz`)).status, 200);
    const key = `after-fuzz-${Date.now()}`;
    const login = expectStatus(await client.post('/v1/auth/login', { body: { email: tenant.admin.email, password: tenant.admin.password, org_id: tenant.orgId }, localAddress: OWN_ADDRESS }), 200, 'login');
    // The fuzzed UpdateEnvironment may have made the environment critical and require a comment
    // (docs/access.md "Critical environments"): the write confirms it and comments, as a person must.
    const protectionMet = { 'x-confirm-environment': tenant.environmentId, 'x-change-comment': 'after fuzzing' };
    expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token: login.token, body: splitFlag(key), headers: protectionMet }), 201, 'create a flag');
    expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/${key}`, { token: login.token }), 200, 'read it back');
    const unhandled = ts.logs.filter((line) => line.includes('unhandled error'));
    assert.deepEqual(unhandled.map((line) => line.slice(0, 500)), [], 'no call ended in an unhandled error');
  });
});
