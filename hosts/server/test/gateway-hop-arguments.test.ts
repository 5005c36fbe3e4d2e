import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { after, before, describe, test } from 'node:test';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';
import { splitFlag } from './support/experiment-fixtures.ts';
import { createFlag, createSegment } from './support/flag-client.ts';
import { bearer, promisified, rejectsWithStatus, type Unary } from './support/grpc-clients.ts';
import { api, loginAdmin, seedTenant, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * The gateway hop (docs/architecture.md "The gateway hop") on the internal port carries a method's
 * arguments as JSON. A caller that is not a gateway can send any JSON there; what the services
 * cannot take is the caller's mistake, INVALID_ARGUMENT — the gRPC fuzzer (grpc-fuzz.test.ts)
 * found these answering INTERNAL. Also the one real input found that passes every edge check
 * but PostgreSQL refuses (a version beyond bigint: SQLSTATE 22003), answered by the class 22 backstop.
 */

interface ServiceCall {
  scope_id: string;
  scope_via: string;
  arguments: Buffer;
}
interface SegmentHop {
  listMembers: Unary<ServiceCall, { result: Buffer }>;
  close(): void;
}
interface FlagHop {
  get: Unary<ServiceCall, { result: Buffer }>;
  close(): void;
}

const FlagGatewayService = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/flags_gateway.proto'), 'svc.flags.v1.FlagGatewayService');
const SegmentGatewayService = lookup<grpc.ServiceClientConstructor>(loadProto('svc/segments/v1/segments_gateway.proto'), 'svc.segments.v1.SegmentGatewayService');
const args = (...values: unknown[]): Buffer => Buffer.from(JSON.stringify({ count: values.length, values: Object.fromEntries(values.map((value, i) => [i, value])) }));

let ts: TestServer;
let tenant: Tenant;
let hop: FlagHop;
let segmentHop: SegmentHop;

before(async () => {
  ts = await startTestServer();
  const client = api(ts.base);
  tenant = await seedTenant(client, (await loginAdmin(client)).token, 'hop-args');
  await createFlag(client, tenant.admin.token, tenant.environmentId, splitFlag('hop-flag'));
  await createSegment(client, tenant.admin.token, tenant.environmentId, { key: 'hop-segment', context_type: 'user', kind: 'list', included_keys: ['u1'] });
  hop = promisified<FlagHop>(FlagGatewayService, ts.server.grpcPort);
  segmentHop = promisified<SegmentHop>(SegmentGatewayService, ts.server.grpcPort);
});
after(async () => {
  hop?.close();
  segmentHop?.close();
  await ts.stop();
});

const scope = () => ({ scope_id: tenant.environmentId, scope_via: 'environment' });

describe('gateway hop arguments the services cannot take are INVALID_ARGUMENT', () => {
  test('the hop itself answers a well-formed call', async () => {
    const answer = await hop.get({ ...scope(), arguments: args('hop-flag') }, bearer(tenant.admin.token));
    assert.equal(JSON.parse(answer.result.toString('utf8')).key, 'hop-flag');
  });

  test('missing arguments', async () => {
    const error = await rejectsWithStatus(hop.get({ ...scope(), arguments: args() }, bearer(tenant.admin.token)), grpc.status.INVALID_ARGUMENT);
    assert.match(error.details, /^Get takes 1 arguments$/);
  });

  test('arguments of the wrong type', async () => {
    for (const key of [true, false]) {
      const error = await rejectsWithStatus(hop.get({ ...scope(), arguments: args(key) }, bearer(tenant.admin.token)), grpc.status.INVALID_ARGUMENT);
      assert.match(error.details, /^arguments do not fit Get$/, JSON.stringify(key));
    }
  });

  test('a string argument with U+0000 or a lone surrogate', async () => {
    const nul = await rejectsWithStatus(hop.get({ ...scope(), arguments: args('hop\u0000flag') }, bearer(tenant.admin.token)), grpc.status.INVALID_ARGUMENT);
    assert.match(nul.details, /^arguments\[0\] must not contain U\+0000 \(NUL\)$/);
    const lone = await rejectsWithStatus(hop.get({ ...scope(), arguments: args('\udc00') }, bearer(tenant.admin.token)), grpc.status.INVALID_ARGUMENT);
    assert.match(lone.details, /^arguments\[0\] must not contain an unpaired UTF-16 surrogate$/);
  });

  test('a value PostgreSQL refuses (SQLSTATE class 22) is INVALID_ARGUMENT without the statement, logged at warn', async () => {
    // REST bounds the page size (1 to 10,000); the hop passes it on, and PostgreSQL refuses a LIMIT beyond bigint (22003).
    const page = await segmentHop.listMembers({ ...scope(), arguments: args('hop-segment', 'included', null, 10) }, bearer(tenant.admin.token));
    assert.deepEqual(JSON.parse(page.result.toString('utf8')).items, ['u1']);
    const error = await rejectsWithStatus(segmentHop.listMembers({ ...scope(), arguments: args('hop-segment', 'included', null, 1e20) }, bearer(tenant.admin.token)), grpc.status.INVALID_ARGUMENT);
    assert.equal(error.details, 'a value in the request cannot be stored (the database refused it)');
    const warning = ts.logs.find((line) => line.includes('the database refused a value of the request'));
    assert.ok(warning, 'logged');
    assert.match(warning, /"level":40/);
    assert.match(warning, /SegmentGatewayService\/ListMembers/);
    assert.match(warning, /"sqlState":"22003"/);
  });
});
