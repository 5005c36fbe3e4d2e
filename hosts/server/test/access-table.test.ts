import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestDnsServer, type TestDnsServer } from './support/dns-server.ts';
import { api, type Json } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';
import { buildShared } from './support/access-table/fixtures.ts';
import { GRPC_DESCRIPTORS, grpcCell, grpcClients, publicMethods, publicServices } from './support/access-table/grpc-cells.ts';
import { REST_DESCRIPTORS, restCell } from './support/access-table/rest-cells.ts';
import { describeRow, runTable, type Row } from './support/access-table/run-rows.ts';
import { buildWorld, type World } from './support/access-table/world.ts';

/**
 * Issue 34's generated access table: every REST operation of /v1/openapi.json and every public
 * gRPC method of proto/svc × every principal
 * (anonymous, the system admin, the org's admin and member, people bound to project P as viewer,
 * editor and admin, an editor of staging only, API tokens in and out of scope, expired and
 * revoked, another org's admin), each answer checked against the rule of
 * support/access-table/rule.ts. An operation without a hand-written descriptor fails the table:
 * a new route must be classified before it ships.
 */

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

let ts: TestServer;
let dns: TestDnsServer;
let world: World;
let operations: string[];
let methods: string[];
let closeClients = () => {};
let rows: Row[] = [];
const started = Date.now();

before(async () => {
  dns = await startTestDnsServer();
  // Every row presents the expired and the revoked token from one address; on a slow run the
  // verifier's 2 s negative cache no longer covers them all, and the default 30 failures per
  // address would answer 429 instead of the 401 the row checks (the throttle has its own tests).
  ts = await startTestServer({ DNS_SERVERS: dns.address, SSO_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', API_TOKEN_FAILURES_PER_ADDRESS: '100000' });
  const client = api(ts.base);
  const doc: Json = (await client.get('/v1/openapi.json')).body;
  operations = Object.entries<Json>(doc.paths).flatMap(([path, item]) => METHODS.filter((method) => item[method]).map((method) => `${method.toUpperCase()} ${path}`));
  world = await buildWorld(client);
  const built = Date.now();
  const shared = await buildShared(world);
  if (process.env.ACCESS_TABLE_TIMING) console.log(`# world ${built - started} ms, shared fixtures ${Date.now() - built} ms`);
  const services = publicServices();
  methods = publicMethods(services);
  const grpc = grpcClients(services, { grpc: ts.server.grpcPort, sync: ts.server.syncGrpcPort });
  closeClients = grpc.close;
  const described = new Set([...operations, ...methods]);
  const cells = [
    ...REST_DESCRIPTORS.filter((descriptor) => described.has(descriptor.operation)).map((descriptor) => restCell(descriptor, world, shared)),
    ...GRPC_DESCRIPTORS.filter((descriptor) => described.has(descriptor.method)).map((descriptor) => grpcCell(descriptor, world, shared, grpc.clients, services)),
  ];
  rows = await runTable(cells, world.principals, 12);
  console.log(`# access table: ${rows.length} rows (${cells.length} operations and methods) in ${Date.now() - started} ms on the ${ts.topology} topology`);
  if (process.env.ACCESS_TABLE_TIMING) {
    for (const row of [...rows].sort((a, b) => b.ms - a.ms).slice(0, 15)) console.log(`#   ${row.ms} ms ${row.operation} as ${row.principal}`);
  }
});

after(async () => {
  closeClients();
  await ts?.stop();
  await dns?.close();
});

describe('the access table covers every operation', () => {
  test('every REST operation of /v1/openapi.json has a hand-written descriptor, and no descriptor is stale', () => {
    const described = new Set(REST_DESCRIPTORS.map((descriptor) => descriptor.operation));
    assert.ok(operations.length > 100, `only ${operations.length} operations in the document`);
    assert.deepEqual(operations.filter((operation) => !described.has(operation)), [], 'operations without a descriptor: classify them in support/access-table/rest');
    assert.deepEqual([...described].filter((operation) => !operations.includes(operation)), [], 'descriptors of operations the server no longer has');
    assert.equal(described.size, REST_DESCRIPTORS.length, 'an operation is described twice');
  });

  test('every public gRPC method of the protos has a hand-written descriptor, and no descriptor is stale', () => {
    const described = new Set(GRPC_DESCRIPTORS.map((descriptor) => descriptor.method));
    assert.ok(methods.length > 50, `only ${methods.length} methods in the protos`);
    assert.deepEqual(methods.filter((method) => !described.has(method)), [], 'methods without a descriptor: classify them in support/access-table/grpc');
    assert.deepEqual([...described].filter((method) => !methods.includes(method)), [], 'descriptors of methods the protos no longer have');
    assert.equal(described.size, GRPC_DESCRIPTORS.length, 'a method is described twice');
  });

  test('principals whose routes are not on this branch are named', (t) => {
    for (const principal of world.principals.filter((p) => p.unavailable)) t.diagnostic(`${principal.name}: skipped, ${principal.unavailable}`);
  });
});

describe('REST: each operation answers every principal as the rule says', () => {
  for (const descriptor of REST_DESCRIPTORS) {
    test(descriptor.operation, () => {
      const mine = rows.filter((row) => row.operation === descriptor.operation);
      assert.ok(mine.length > 0, 'no rows ran');
      const wrong = mine.filter((row) => row.got !== row.want);
      assert.deepEqual(wrong.map(describeRow), []);
    });
  }
});

describe('gRPC: each public method answers every principal as the rule says', () => {
  for (const descriptor of GRPC_DESCRIPTORS) {
    test(descriptor.method, () => {
      const mine = rows.filter((row) => row.operation === `gRPC ${descriptor.method}`);
      assert.ok(mine.length > 0, 'no rows ran');
      const wrong = mine.filter((row) => row.got !== row.want);
      assert.deepEqual(wrong.map(describeRow), []);
    });
  }
});
