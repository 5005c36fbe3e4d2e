import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { after, before, describe, test } from 'node:test';
import { createFlag, envFlags, onOffFlag, patch, segmentsOf } from './support/flag-client.ts';
import { bearer, managementClient, rejectsWithStatus, type ManagementClient } from './support/grpc-clients.ts';
import { flagClient, type FlagClient } from './support/grpc-flag-clients.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Tenant } from './support/rest-client.ts';
import { openSync, sdkKeyMetadata } from './support/sync-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * docs/security.md "Input rules": a string PostgreSQL cannot store as sent (U+0000, an unpaired
 * UTF-16 surrogate) is refused at the edge, 400 / INVALID_ARGUMENT naming where it was, on every
 * transport — it used to reach the database and answer 500. Other non-ASCII text is stored as sent.
 */

let ts: TestServer;
let client: ApiClient;
let tenant: Tenant;
let management: ManagementClient;
let flags: FlagClient;

const NUL = /must not contain U\+0000 \(NUL\)/;
const SURROGATE = /must not contain an unpaired UTF-16 surrogate/;

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  tenant = await seedTenant(client, root.token, 'strings');
  management = managementClient(ts.server.grpcPort);
  flags = flagClient(ts.server.grpcPort);
});
after(async () => {
  management?.close();
  flags?.close();
  await ts.stop();
});

describe('REST refuses U+0000 and lone surrogates with 400 naming the field', () => {
  test('in a path parameter (the operations the fuzzer found answering 500)', async () => {
    const token = tenant.admin.token;
    const env = tenant.environmentId;
    expectError(await client.get(`${envFlags(env)}/a%00b`, { token }), 400, 'INVALID_ARGUMENT', /^params\.flag_id must not contain U\+0000/);
    expectError(await client.delete(`${envFlags(env)}/%00`, { token }), 400, 'INVALID_ARGUMENT', /^params\.flag_id /);
    expectError(await client.post(`${envFlags(env)}/k%00/archive`, { token }), 400, 'INVALID_ARGUMENT', /^params\.flag_id /);
    expectError(await client.get(`${segmentsOf(env)}/s%00/members`, { token }), 400, 'INVALID_ARGUMENT', /^params\.segment_id /);
    expectError(await patch(client, `${segmentsOf(env)}/s%00/members`, { token, body: { add: ['a'] } }), 400, 'INVALID_ARGUMENT', /^params\.segment_id /);
    expectError(await client.delete(`/v1/environments/${env}/event-definitions/d%00`, { token }), 400, 'INVALID_ARGUMENT', /^params\.def_id /);
    expectError(await client.post(`/v1/management/orgs/${tenant.orgId}%00/projects`, { token, body: { name: 'p' } }), 400, 'INVALID_ARGUMENT', /^params\.org_id /);
  });

  test('in a query parameter', async () => {
    const path = `${segmentsOf(tenant.environmentId)}/some-segment/members?cursor=x%00y`;
    expectError(await client.get(path, { token: tenant.admin.token }), 400, 'INVALID_ARGUMENT', /^query\.cursor must not contain U\+0000/);
  });

  test('in a body string, top-level and nested', async () => {
    const token = tenant.admin.token;
    expectError(
      await client.post(`/v1/management/orgs/${tenant.orgId}/projects`, { token, body: { name: 'pro\u0000ject' } }),
      400,
      'INVALID_ARGUMENT',
      /^body\.name must not contain U\+0000 \(NUL\)$/,
    );
    const nested = onOffFlag(`nul-${unique()}`);
    nested.flag.variants[1]!.key = 'o\u0000ff';
    expectError(await client.post(envFlags(tenant.environmentId), { token, body: nested }), 400, 'INVALID_ARGUMENT', /^body\.flag\.variants\[1\]\.key must not contain U\+0000/);
    // An SDK route: the context's attributes (keys and values) are checked like everything else.
    expectError(
      await client.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: tenant.rawKey, body: { context_key: 'u1', context_type: 'user', attributes: { email: 'a\u0000@b' } } }),
      400,
      'INVALID_ARGUMENT',
      /^body\.attributes\.email must not contain U\+0000/,
    );
    expectError(
      await client.post(`/v1/environments/${tenant.environmentId}/events`, { sdkKey: tenant.rawKey, body: { metric_key: 'm', context_key: 'u', properties: { 'k\u0000': 1 } } }),
      400,
      'INVALID_ARGUMENT',
      /^body\.properties \(key #1\) must not contain U\+0000/,
    );
  });

  test('a lone surrogate in a body string, nested, or in a path (as WTF-8 percent-encoding)', async () => {
    const token = tenant.admin.token;
    expectError(await client.post(`/v1/management/orgs/${tenant.orgId}/projects`, { token, body: { name: 'a\ud800' } }), 400, 'INVALID_ARGUMENT', /^body\.name /);
    const nested = onOffFlag(`lone-${unique()}`);
    nested.flag.description = '\udc00 low half only';
    expectError(await client.post(envFlags(tenant.environmentId), { token, body: nested }), 400, 'INVALID_ARGUMENT', /^body\.flag\.description must not contain an unpaired UTF-16 surrogate$/);
    // A URL cannot carry a surrogate in UTF-8; its WTF-8 bytes are not UTF-8, so no route is reached.
    expectError(await client.get(`${envFlags(tenant.environmentId)}/a%ED%A0%80b`, { token }), 400, 'INVALID_ARGUMENT', /not percent-encoded UTF-8/);
  });

  test("refusals made before routing answer {error, code} too: a path parameter over 100 characters, a request line over node's 16 KiB", async () => {
    const token = tenant.admin.token;
    expectError(await client.get(`${envFlags(tenant.environmentId)}/${'k'.repeat(101)}`, { token }), 414, 'INVALID_ARGUMENT', /longer than 100 characters/);
    expectError(await client.get(`${envFlags(tenant.environmentId)}?pad=${'x'.repeat(17_000)}`, { token }), 431, 'INVALID_ARGUMENT', /larger than 16 KiB/);
  });

  test('valid non-ASCII text (emoji, CJK, combining marks) is accepted and answered back unchanged', async () => {
    const token = tenant.admin.token;
    const name = `项目 😀👍🏽 é ${unique()}`;
    const project = expectStatus(await client.post(`/v1/management/orgs/${tenant.orgId}/projects`, { token, body: { name } }), 201);
    assert.equal(project.project_name, name);
    const key = `unicode-${unique()}`;
    const flag = await createFlag(client, token, tenant.environmentId, onOffFlag(key, [], { description: '説明 — 🙂 ﷽' }));
    assert.equal(flag.description, '説明 — 🙂 ﷽');
    const fetched = expectStatus(await client.get(`${envFlags(tenant.environmentId)}/${key}`, { token }), 200);
    assert.equal(fetched.description, '説明 — 🙂 ﷽');
    // An SDK route with non-ASCII attribute names and values evaluates as usual.
    expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: tenant.rawKey, body: { context_key: '用户-1', context_type: 'user', attributes: { 'país': 'España 🇪🇸' } } }),
      200,
    );
  });
});

describe('gRPC refuses them with INVALID_ARGUMENT naming the field', () => {
  test('a string field of an internal service, top-level and nested', async () => {
    const metadata = bearer(tenant.admin.token);
    const error = await rejectsWithStatus(management.createProject({ org_id: tenant.orgId, name: 'p\u0000' }, metadata), grpc.status.INVALID_ARGUMENT);
    assert.match(error.details, /^name /);
    assert.match(error.details, NUL);
    const idError = await rejectsWithStatus(flags.getFlag({ environment_id: tenant.environmentId, flag_key: '\u0000' }, metadata), grpc.status.INVALID_ARGUMENT);
    assert.match(idError.details, /^flag_key /);
    const nested = await rejectsWithStatus(
      flags.mutateFlag(
        { environment_id: tenant.environmentId, kind: 'MUTATION_KIND_CREATE', flag: { key: `g-${unique()}`, value_type: 'string', variants: [{ key: 'x\u0000', value: { string_value: 'X' } }] } },
        metadata,
      ),
      grpc.status.INVALID_ARGUMENT,
    );
    assert.match(nested.details, /^flag\.variants\[0\]\.key must not contain U\+0000/);
  });

  test('a sync request on the public port', async () => {
    const stream = openSync(ts.server.syncGrpcPort, { environment_id: `${tenant.environmentId}\u0000` }, sdkKeyMetadata(tenant.rawKey));
    const status = await stream.ended;
    assert.equal(status?.code, grpc.status.INVALID_ARGUMENT, status?.details);
    assert.match(status.details, /^environment_id must not contain U\+0000/);
  });

  test('a lone surrogate never reaches storage as something else', async () => {
    // protobuf carries UTF-8: whatever a client's encoder makes of a lone surrogate is either
    // refused at the edge or decoded as U+FFFD, never stored as what was sent and never a 500.
    const metadata = bearer(tenant.admin.token);
    const outcome = await management.createProject({ org_id: tenant.orgId, name: `lone \ud800 ${unique()}` }, metadata).then(
      (created) => ({ created }),
      (error: grpc.ServiceError) => ({ error }),
    );
    if ('error' in outcome) {
      assert.equal(outcome.error.code, grpc.status.INVALID_ARGUMENT, outcome.error.details);
      assert.match(outcome.error.details, SURROGATE);
    } else {
      assert.doesNotMatch(outcome.created.project_name, /[\ud800-\udfff](?![\udc00-\udfff])/);
    }
  });

  test('valid non-ASCII text is accepted', async () => {
    const name = `プロジェクト 🚀 ${unique()}`;
    const created = await management.createProject({ org_id: tenant.orgId, name }, bearer(tenant.admin.token));
    assert.equal(created.project_name, name);
  });
});
