import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { bearer, rejectsWithStatus } from './support/grpc-clients.ts';
import { flagClient, payload, type FeatureFlagInput, type FlagClient } from './support/grpc-flag-clients.ts';
import { api, loginAdmin, seedTenant, unique, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * FeatureFlag.prerequisites over svc.flags.v1.FlagService (docs/contract.md "Prerequisites"):
 * written by CREATE and UPDATE, read by GetFlag, ListFlags and GetFlagDefinitions, refused as
 * REST refuses them, and DELETE/ARCHIVE of a named flag FAILED_PRECONDITION.
 */

let it: TestServer;
let rest: ApiClient;
let flags: FlagClient;
let tenant: Tenant;
let other: Tenant;
let admin: grpc.Metadata;
let env: string;

before(async () => {
  it = await startTestServer({}, { share: true });
  rest = api(it.base);
  const root = await loginAdmin(rest);
  tenant = await seedTenant(rest, root.token, 'grpc-prereq');
  other = await seedTenant(rest, root.token, 'grpc-prereq-other');
  flags = flagClient(it.server.grpcPort);
  admin = bearer(tenant.admin.token);
  env = tenant.environmentId;
});

after(async () => {
  flags.close();
  await it.stop();
});

const flagInput = (key: string, prerequisites: Array<{ flag_key: string; variant_keys: string[] }> = []): FeatureFlagInput => ({
  key,
  value_type: 'FLAG_VALUE_TYPE_BOOL',
  enabled: true,
  variants: [
    { key: 'on', value: { bool_value: true } },
    { key: 'off', value: { bool_value: false } },
  ],
  off_variant_key: 'off',
  rules: [{ rule_payload: payload({ conditions: [] }), variant_key: 'on' }],
  prerequisites,
});

const create = async (label: string, prerequisites: Array<{ flag_key: string; variant_keys: string[] }> = []): Promise<string> => {
  const key = `${label}-${unique()}`;
  const answer = await flags.mutateFlag({ environment_id: env, kind: 'MUTATION_KIND_CREATE', flag: flagInput(key, prerequisites) }, admin);
  assert.deepEqual(answer.flag?.prerequisites, prerequisites);
  return key;
};

describe('gRPC prerequisites', () => {
  test('round trip: CREATE, GetFlag, ListFlags, GetFlagDefinitions, UPDATE replaces (empty removes); REST shows the same', async () => {
    const parent = await create('g-parent');
    const child = await create('g-child', [{ flag_key: parent, variant_keys: ['on'] }]);
    const got = await flags.getFlag({ environment_id: env, flag_key: child }, admin);
    assert.deepEqual(got.prerequisites, [{ flag_key: parent, variant_keys: ['on'] }]);
    assert.deepEqual((await flags.getFlag({ environment_id: env, flag_key: parent }, admin)).prerequisites, []);
    const { flags: listed } = await flags.listFlags({ environment_id: env }, admin);
    assert.deepEqual(listed.find((f) => f.key === child)?.prerequisites, [{ flag_key: parent, variant_keys: ['on'] }]);
    const streamed = await flags.getFlagDefinitions({ environment_id: env }, admin);
    assert.deepEqual(streamed.find((f) => f.key === child)?.prerequisites, [{ flag_key: parent, variant_keys: ['on'] }]);
    const viaRest = await rest.get(`/v1/environments/${env}/flags/${child}`, { token: tenant.admin.token });
    assert.deepEqual(viaRest.body.prerequisites, [{ flag_key: parent, variant_keys: ['on'] }]);

    const updated = await flags.mutateFlag(
      { environment_id: env, kind: 'MUTATION_KIND_UPDATE', flag: flagInput(child, [{ flag_key: parent, variant_keys: ['on', 'off'] }]), version: got.version },
      admin,
    );
    assert.deepEqual(updated.flag?.prerequisites, [{ flag_key: parent, variant_keys: ['on', 'off'] }]);
    const cleared = await flags.mutateFlag({ environment_id: env, kind: 'MUTATION_KIND_UPDATE', flag: flagInput(child), version: updated.version }, admin);
    assert.deepEqual(cleared.flag?.prerequisites, []);
  });

  test('refusals are INVALID_ARGUMENT: unknown flag, unknown variant, self, cycle', async () => {
    const fa = await create('g-a');
    const fb = await create('g-b', [{ flag_key: fa, variant_keys: ['on'] }]);
    const version = (await flags.getFlag({ environment_id: env, flag_key: fa }, admin)).version;
    const update = (prerequisites: Array<{ flag_key: string; variant_keys: string[] }>) =>
      flags.mutateFlag({ environment_id: env, kind: 'MUTATION_KIND_UPDATE', flag: flagInput(fa, prerequisites), version }, admin);
    const cases: Array<[Array<{ flag_key: string; variant_keys: string[] }>, RegExp]> = [
      [[{ flag_key: `missing-${unique()}`, variant_keys: ['on'] }], /no flag/],
      [[{ flag_key: fb, variant_keys: ['maybe'] }], /has no variant 'maybe'/],
      [[{ flag_key: fa, variant_keys: ['on'] }], /its own prerequisite/],
      [[{ flag_key: fb, variant_keys: ['on'] }], /cycle/],
    ];
    for (const [prerequisites, message] of cases) {
      const error = await rejectsWithStatus(update(prerequisites), grpc.status.INVALID_ARGUMENT);
      assert.match(error.details, message);
    }
    assert.deepEqual((await flags.getFlag({ environment_id: env, flag_key: fa }, admin)).prerequisites, []);
  });

  test('DELETE and ARCHIVE of a named flag are FAILED_PRECONDITION naming the dependent', async () => {
    const parent = await create('g-named');
    const child = await create('g-dependent', [{ flag_key: parent, variant_keys: ['off'] }]);
    const version = (await flags.getFlag({ environment_id: env, flag_key: parent }, admin)).version;
    for (const kind of ['MUTATION_KIND_DELETE', 'MUTATION_KIND_ARCHIVE'] as const) {
      const error = await rejectsWithStatus(flags.mutateFlag({ environment_id: env, kind, flag: { key: parent }, version }, admin), grpc.status.FAILED_PRECONDITION);
      assert.match(error.details, new RegExp(`'${child}' \\(in production\\)`));
    }
    assert.equal((await flags.getFlag({ environment_id: env, flag_key: parent }, admin)).archived, false);
  });

  test("another org's admin and an anonymous caller reach nothing", async () => {
    const parent = await create('g-rbac');
    const child = await create('g-rbac-child', [{ flag_key: parent, variant_keys: ['on'] }]);
    await rejectsWithStatus(flags.getFlag({ environment_id: env, flag_key: child }, bearer(other.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(
      flags.mutateFlag({ environment_id: env, kind: 'MUTATION_KIND_UPDATE', flag: flagInput(child) }, bearer(other.admin.token)),
      grpc.status.NOT_FOUND,
    );
    await rejectsWithStatus(flags.getFlag({ environment_id: env, flag_key: child }, new grpc.Metadata()), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(
      flags.mutateFlag({ environment_id: env, kind: 'MUTATION_KIND_UPDATE', flag: flagInput(child) }, new grpc.Metadata()),
      grpc.status.UNAUTHENTICATED,
    );
    assert.deepEqual((await flags.getFlag({ environment_id: env, flag_key: child }, admin)).prerequisites, [{ flag_key: parent, variant_keys: ['on'] }]);
  });
});
