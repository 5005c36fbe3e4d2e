import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createRequire } from 'node:module';
import path from 'node:path';
import { checkHealth } from './support/grpc-health-client.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from './support/rest-client.ts';
import { endsWith, flagKeys, openSync, sdkKeyMetadata, type OpenStream } from './support/sync-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let it: TestServer;
let rest: ApiClient;
let tenant: Tenant;
const open: OpenStream[] = [];

const flagsPath = (env: string): string => `/v1/environments/${env}/flags`;

before(async () => {
  // Reads the hub's congestion counter, which only the in-process hub of one process exposes.
  it = await startTestServer({}, { topology: 'single' });
  rest = api(it.base);
  const root = await loginAdmin(rest);
  tenant = await seedTenant(rest, root.token, 'sync-life');
  expectStatus(
    await rest.post(flagsPath(tenant.environmentId), {
      token: tenant.admin.token,
      body: { flag: { key: 'big', value_type: 'bool', variants: [{ key: 'on', value: true }], description: '' }, enabled: true },
    }),
    201,
    'create flag',
  );
});

after(async () => {
  for (const stream of open) stream.cancel();
  await it.stop();
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('a slow consumer', () => {
  test('is not buffered without bound: once its buffer is full it gets no changes, then one fresh full snapshot after it reads again', async () => {
    // A small HTTP/2 window, so that few changes fill it.
    const stream = openSync(it.server.syncGrpcPort, { environment_id: tenant.environmentId }, sdkKeyMetadata(tenant.rawKey), { 'grpc-node.flow_control_window': 8192 });
    open.push(stream);
    await stream.next();
    stream.call.pause();
    // Each change carries a ~2 KB description: a few dozen fill the HTTP/2 window and the send buffer.
    const padding = 'x'.repeat(1990);
    let updates = 0;
    for (; updates < 300 && it.server.services.sync.stats().congested === 0; updates++) {
      expectStatus(await rest.request('PUT', `${flagsPath(tenant.environmentId)}/big`, { token: tenant.admin.token, body: { flag: { description: `${updates}:${padding}` } } }), 200, 'update');
      // Let the hub send it before the next change (changes in a burst are coalesced).
      await sleep(5);
    }
    assert.equal(it.server.services.sync.stats().congested, 1, `the stream was congested after ${updates} updates`);
    // More changes while congested are not queued for it.
    for (let i = 0; i < 5; i++) {
      expectStatus(await rest.request('PUT', `${flagsPath(tenant.environmentId)}/big`, { token: tenant.admin.token, body: { flag: { description: `final-${i}` } } }), 200, 'update');
    }
    await sleep(200);
    const beforeResume = stream.messages.length;
    stream.call.resume();
    const snapshot = await stream.until((m) => m.full_snapshot && m.sequence_number > 1);
    assert.equal(snapshot.flags.find((flag) => flag.key === 'big')?.description, 'final-4', 'the snapshot is the latest state');
    assert.ok(stream.messages.length - beforeResume < updates + 5, 'the changes made while congested were not all queued');
    const sequences = stream.messages.map((m) => m.sequence_number);
    assert.deepEqual(sequences, sequences.map((_, i) => i + 1));
    assert.equal(it.server.services.sync.stats().congested, 0);
  });
});

describe('reflection on the sync port', () => {
  test('server reflection lists FlagSyncService and serves its descriptor', async () => {
    const require = createRequire(import.meta.url);
    const reflectionRoot = path.dirname(require.resolve('@grpc/reflection/package.json'));
    const definition = protoLoader.loadSync('grpc/reflection/v1/reflection.proto', { includeDirs: [path.join(reflectionRoot, 'build/proto')], keepCase: true });
    const Reflection = (grpc.loadPackageDefinition(definition) as any).grpc.reflection.v1.ServerReflection as grpc.ServiceClientConstructor;
    const client = new Reflection(`127.0.0.1:${it.server.syncGrpcPort}`, grpc.credentials.createInsecure());
    const call = (client as any).ServerReflectionInfo() as grpc.ClientDuplexStream<unknown, any>;
    const answers: any[] = [];
    const done = new Promise<void>((resolve, reject) => {
      call.on('data', (answer: any) => {
        answers.push(answer);
        if (answers.length === 2) call.end();
      });
      call.on('end', () => resolve());
      call.on('error', reject);
    });
    call.write({ list_services: '*' });
    call.write({ file_containing_symbol: 'svc.flags.v1.FlagSyncService' });
    await done;
    client.close();
    const services = (answers[0].list_services_response.service as Array<{ name: string }>).map((s) => s.name);
    assert.ok(services.includes('svc.flags.v1.FlagSyncService'), services.join());
    assert.ok(!services.includes('svc.flags.v1.FlagService'), 'the internal FlagService is not served on the sync port');
    // The descriptor of the file defining FlagSyncService names the files of the types it imports
    // (svc.segments.v1, svc.common.v1), and they come with it: what grpcurl needs to resolve them.
    const codec = createRequire(require.resolve('@grpc/reflection'))('protobufjs/ext/descriptor');
    const files = (answers[1].file_descriptor_response.file_descriptor_proto as Buffer[]).map((bytes) => codec.FileDescriptorProto.decode(bytes));
    const flags = files.find((file: any) => file.service?.some((service: any) => service.name === 'FlagSyncService'));
    assert.ok(flags, 'the file of FlagSyncService is served');
    assert.equal(flags.dependency.length, 2, `dependencies: ${flags.dependency}`);
    for (const dependency of flags.dependency as string[]) assert.ok(files.some((file: any) => file.name === dependency), `${dependency} is served too`);
  });
});

describe('health on the sync port', () => {
  test('grpc.health.v1 knows the FlagSyncService as SERVING', async () => {
    assert.equal(await checkHealth(it.server.syncGrpcPort, 'svc.flags.v1.FlagSyncService'), 'SERVING');
    assert.equal(await checkHealth(it.server.syncGrpcPort), 'SERVING');
  });
});

describe('shutdown', () => {
  test('ends open streams with UNAVAILABLE before the servers stop', async () => {
    const instance = await it.startAnotherInstance();
    const stream = openSync(instance.syncGrpcPort, { environment_id: tenant.environmentId }, sdkKeyMetadata(tenant.rawKey));
    open.push(stream);
    assert.ok(flagKeys(await stream.next()).includes('big'));
    const stopped = instance.stop();
    // Ended by the sync hub, with its own status and text. Had the gRPC servers been stopped
    // first, they would have waited out their grace period for this call and then cut it off:
    // the stream would end with another status or text (no wall-clock bound needed to tell).
    const error = await endsWith(stream, grpc.status.UNAVAILABLE);
    assert.match(error.details, /shutting down; reconnect/);
    await stopped;
  });
});
