import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';
import { bearer, promisified, rejectsWithStatus, type Unary } from './support/grpc-clients.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// svc.flags.v1.FlagsAsCodeService (issue 37, docs/flags-as-code.md): the REST export and import
// over gRPC, with the same answers; a refused import is FAILED_PRECONDITION and writes nothing.

interface FlagsAsCodeClient {
  exportFlags: Unary<{ project_id: string; environment_ids?: string[]; include_versions?: boolean }, { document_json: string }>;
  importFlags: Unary<{ project_id: string; document_json: string; dry_run?: boolean; prune?: boolean }, { dry_run: boolean; applied: boolean; outcome_json: string }>;
  close(): void;
}

const Service = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/flags.proto'), 'svc.flags.v1.FlagsAsCodeService');
const FORMAT = 'switchyard.flags/v1';
const document = {
  format: FORMAT,
  flags: [{ key: 'grpc-flag', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }] }],
  environments: { production: { flags: { 'grpc-flag': { enabled: true, off_variant_key: 'off', rules: [{ id: 'all', conditions: [], variant_key: 'on' }] } } } },
};

let ts: TestServer;
let rest: ApiClient;
let client: FlagsAsCodeClient;
let a: Tenant;
let b: Tenant;

before(async () => {
  ts = await startTestServer({}, { share: true });
  rest = api(ts.base);
  const root = await loginAdmin(rest);
  a = await seedTenant(rest, root.token, 'fac-grpc-a');
  b = await seedTenant(rest, root.token, 'fac-grpc-b');
  client = promisified<FlagsAsCodeClient>(Service, ts.server.grpcPort);
});
after(async () => {
  client.close();
  await ts.stop();
});

describe('svc.flags.v1.FlagsAsCodeService', () => {
  test('a dry run, the import, and the export agree with REST', async () => {
    const dry = await client.importFlags({ project_id: a.projectId, document_json: JSON.stringify(document), dry_run: true }, bearer(a.admin.token));
    assert.deepEqual([dry.dry_run, dry.applied], [true, false]);
    assert.deepEqual((JSON.parse(dry.outcome_json) as Json).created.map((c: Json) => c.key), ['grpc-flag']);
    const applied = await client.importFlags({ project_id: a.projectId, document_json: JSON.stringify(document) }, bearer(a.admin.token));
    assert.deepEqual([applied.dry_run, applied.applied], [false, true]);
    const exported = JSON.parse((await client.exportFlags({ project_id: a.projectId }, bearer(a.admin.token))).document_json);
    assert.deepEqual(exported, expectStatus(await rest.get(`/v1/projects/${a.projectId}/export`, { token: a.admin.token }), 200));
    assert.equal(exported.environments.production.flags['grpc-flag'].enabled, true);
  });

  test('a refused import: FAILED_PRECONDITION naming the refusal, nothing written', async () => {
    const bad = { format: FORMAT, flags: [{ key: 'fine', value_type: 'bool', variants: [] }, { key: 'broken', value_type: 'int', variants: [{ key: 'x', value: 'nope' }] }] };
    const error = await rejectsWithStatus(client.importFlags({ project_id: a.projectId, document_json: JSON.stringify(bad) }, bearer(a.admin.token)), grpc.status.FAILED_PRECONDITION);
    assert.match(error.details, /flag broken: .*INVALID_ARGUMENT/);
    const flags = expectStatus(await rest.get(`/v1/projects/${a.projectId}/flags`, { token: a.admin.token }), 200) as Json[];
    assert.ok(!flags.some((flag) => flag.key === 'fine'));
  });

  test("bad JSON, another org's project and no credential are refused", async () => {
    await rejectsWithStatus(client.importFlags({ project_id: a.projectId, document_json: '{nope' }, bearer(a.admin.token)), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(client.exportFlags({ project_id: a.projectId }, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(client.importFlags({ project_id: a.projectId, document_json: JSON.stringify(document) }, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(client.exportFlags({ project_id: a.projectId }), grpc.status.UNAUTHENTICATED);
  });
});
