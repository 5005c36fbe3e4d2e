import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { bearer, metadataWith, rejectsWithStatus } from './support/grpc-clients.ts';
import {
  flagClient,
  parsePayload,
  payload,
  segmentClient,
  type FeatureFlagInput,
  type FeatureFlagMessage,
  type FlagClient,
  type SegmentClient,
} from './support/grpc-flag-clients.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let it: TestServer;
let rest: ApiClient;
let flags: FlagClient;
let segments: SegmentClient;
let tenant: Tenant;
let other: Tenant;
let admin: grpc.Metadata;
let env: string;

before(async () => {
  it = await startTestServer({}, { share: true });
  rest = api(it.base);
  const root = await loginAdmin(rest);
  tenant = await seedTenant(rest, root.token, 'flags');
  other = await seedTenant(rest, root.token, 'other');
  flags = flagClient(it.server.grpcPort);
  segments = segmentClient(it.server.grpcPort);
  admin = bearer(tenant.admin.token);
  env = tenant.environmentId;
  await segments.mutateSegment(
    { environment_id: env, kind: 'SEGMENT_MUTATION_KIND_CREATE', list_segment: { key: 'beta-testers', context_type: 'user', included_keys: ['u1'] } },
    admin,
  );
});

after(async () => {
  flags.close();
  segments.close();
  await it.stop();
});

const MEMBERS = ['bool_value', 'int_value', 'double_value', 'string_value', 'json_value'] as const;

/** A flag message reduced to what a client wrote: payloads and JSON values parsed, output-only fields dropped. */
function comparable(flag: FeatureFlagMessage | FeatureFlagInput) {
  return {
    key: flag.key,
    enabled: flag.enabled,
    value_type: flag.value_type,
    description: flag.description,
    off_variant_key: flag.off_variant_key,
    hashing: flag.hashing,
    variants: (flag.variants ?? []).map((variant) => {
      const value = (variant.value ?? {}) as Record<string, unknown>;
      const member = MEMBERS.find((name) => value[name] !== undefined);
      assert.ok(member, `variant ${variant.key} has a value`);
      return { key: variant.key, member, value: member === 'json_value' ? JSON.parse(value[member] as string) : value[member] };
    }),
    rules: (flag.rules ?? []).map((rule) => ({ ...rule, rule_payload: parsePayload(rule.rule_payload ?? Buffer.alloc(0)) })),
  };
}

const create = (flag: FeatureFlagInput, metadata = admin, environmentId = env) =>
  flags.mutateFlag({ environment_id: environmentId, kind: 'MUTATION_KIND_CREATE', flag }, metadata);

/** A small valid flag of each value type, for cases that only need a flag to exist. */
const simpleFlag = (key: string): FeatureFlagInput => ({
  key,
  value_type: 'FLAG_VALUE_TYPE_BOOL',
  enabled: true,
  variants: [
    { key: 'on', value: { bool_value: true } },
    { key: 'off', value: { bool_value: false } },
  ],
  off_variant_key: 'off',
  rules: [{ rule_payload: payload({ conditions: [] }), variant_key: 'on' }],
});

const FLAGS: FeatureFlagInput[] = [
  {
    key: 'new-checkout',
    enabled: true,
    value_type: 'FLAG_VALUE_TYPE_BOOL',
    description: 'The new checkout flow',
    variants: [
      { key: 'on', value: { bool_value: true } },
      { key: 'off', value: { bool_value: false } },
    ],
    off_variant_key: 'off',
    rules: [
      {
        id: 'beta',
        description: 'Beta testers in the Benelux',
        rule_payload: payload({
          conditions: [{ context_type: 'user', attribute: 'country', op: 'in', values: ['NL', 'BE'], negate: false }],
          segment_keys: ['beta-testers'],
        }),
        variant_key: 'on',
        allocation: null,
      },
      {
        id: 'rollout',
        description: '',
        rule_payload: payload({ conditions: [], segment_keys: [] }),
        variant_key: '',
        allocation: {
          context_hash_specs: { user: { parameter_names: ['account_id', 'region'] }, device: { parameter_names: [] } },
          buckets: [
            { variant_key: 'on', weight_milli: 250 },
            { variant_key: 'off', weight_milli: 750 },
          ],
        },
      },
    ],
    hashing: [{ parameter_key: 'account_id', parameter_type: 'user', order: 1 }],
  },
  {
    key: 'max-items',
    enabled: false,
    value_type: 'FLAG_VALUE_TYPE_INT',
    description: '',
    variants: [
      { key: 'few', value: { int_value: -42 } },
      { key: 'zero', value: { int_value: 0 } },
      { key: 'huge', value: { int_value: Number.MAX_SAFE_INTEGER } },
    ],
    off_variant_key: 'zero',
    rules: [],
    hashing: [],
  },
  {
    key: 'price-factor',
    enabled: true,
    value_type: 'FLAG_VALUE_TYPE_DOUBLE',
    description: 'multiplier',
    variants: [
      { key: 'cheap', value: { double_value: 0.25 } },
      { key: 'dear', value: { double_value: -1.5e10 } },
    ],
    off_variant_key: '',
    rules: [{ id: 'all', description: '', rule_payload: payload({ conditions: [], segment_keys: [] }), variant_key: 'cheap', allocation: null }],
    hashing: [],
  },
  {
    key: 'banner-text',
    enabled: true,
    value_type: 'FLAG_VALUE_TYPE_STRING',
    description: '',
    variants: [
      { key: 'hello', value: { string_value: 'Hello, wörld ✓' } },
      { key: 'empty', value: { string_value: '' } },
    ],
    off_variant_key: 'empty',
    rules: [],
    hashing: [],
  },
  {
    key: 'layout',
    enabled: true,
    value_type: 'FLAG_VALUE_TYPE_JSON',
    description: '',
    variants: [
      { key: 'object', value: { json_value: JSON.stringify({ columns: [1, 2, { wide: true }], title: 'x', none: null }) } },
      { key: 'array', value: { json_value: '[1,"two",3.5]' } },
      { key: 'null', value: { json_value: 'null' } },
    ],
    off_variant_key: 'null',
    rules: [],
    hashing: [],
  },
];

describe('FlagService over gRPC: create and read back', () => {
  const created = new Map<string, FeatureFlagMessage>();

  test('MutateFlag CREATE answers the flag of each value type with every field as sent', async () => {
    for (const flag of FLAGS) {
      const answer = await create(flag);
      assert.ok(answer.flag, `${flag.key}: a flag in the answer`);
      assert.deepEqual(comparable(answer.flag), comparable(flag), flag.key);
      assert.equal(answer.version, answer.flag.version);
      assert.ok(answer.version >= 1, 'a written environment state has a version');
      assert.equal(answer.flag.archived, false);
      assert.ok(Math.abs(answer.flag.created_at_ms - Date.now()) < 60_000, 'created_at_ms is epoch ms');
      assert.ok(answer.flag.updated_at_ms >= answer.flag.created_at_ms);
      created.set(flag.key ?? '', answer.flag);
    }
  });

  test('GetFlag answers each flag exactly as created', async () => {
    for (const flag of FLAGS) {
      const got = await flags.getFlag({ environment_id: env, flag_key: flag.key ?? '' }, admin);
      assert.deepEqual(comparable(got), comparable(flag), flag.key);
      assert.deepEqual(got, created.get(flag.key ?? ''));
    }
  });

  test('rule_payload is the UTF-8 JSON of {conditions, segment_keys}, both always present', async () => {
    const got = await flags.getFlag({ environment_id: env, flag_key: 'price-factor' }, admin);
    assert.ok(Buffer.isBuffer(got.rules[0]?.rule_payload));
    assert.deepEqual(parsePayload(got.rules[0]?.rule_payload ?? Buffer.alloc(0)), { conditions: [], segment_keys: [] });
    assert.equal(got.variants[0]?.value?.value, 'double_value', 'the oneof member of a DOUBLE flag');
  });

  test('ListFlags answers every flag of the environment, ordered by key, as GetFlag does', async () => {
    const { flags: listed } = await flags.listFlags({ environment_id: env }, admin);
    assert.deepEqual(
      listed.map((f) => f.key),
      [...created.keys()].sort(),
    );
    for (const flag of listed) assert.deepEqual(flag, created.get(flag.key));
  });

  test('a flag created over gRPC is the same flag over REST', async () => {
    const grpcFlag = created.get('new-checkout');
    const body = expectStatus(await rest.get(`/v1/environments/${env}/flags/new-checkout`, { token: tenant.admin.token }), 200, 'REST GET flag');
    assert.equal(body.key, 'new-checkout');
    assert.equal(body.value_type, 'bool');
    assert.equal(body.enabled, true);
    assert.equal(body.off_variant_key, 'off');
    assert.equal(body.version, grpcFlag?.version);
    assert.deepEqual(body.variants, [
      { key: 'on', value: true },
      { key: 'off', value: false },
    ]);
    assert.deepEqual(body.rules[0].segment_keys, ['beta-testers']);
    assert.deepEqual(body.rules[1].allocation.context_hash_specs.user, { parameter_names: ['account_id', 'region'] });
    assert.deepEqual(body.hashing, [{ parameter_key: 'account_id', parameter_type: 'user', order: 1 }]);
    const json = expectStatus(await rest.get(`/v1/environments/${env}/flags/layout`, { token: tenant.admin.token }), 200, 'REST GET json flag');
    assert.deepEqual(json.variants[0].value, { columns: [1, 2, { wide: true }], title: 'x', none: null });
  });

  test('GetFlag of an unknown key is NOT_FOUND', async () => {
    await rejectsWithStatus(flags.getFlag({ environment_id: env, flag_key: 'no-such-flag' }, admin), grpc.status.NOT_FOUND);
  });

  test('CREATE of an existing key is ALREADY_EXISTS', async () => {
    await rejectsWithStatus(create(simpleFlag('new-checkout')), grpc.status.ALREADY_EXISTS);
  });
});

describe('FlagService over gRPC: update, archive, delete under optimistic locking', () => {
  test('UPDATE with the version read replaces the fields; a stale version is ABORTED and changes nothing', async () => {
    const first = await create(simpleFlag('update-me'));
    const read = first.flag as FeatureFlagMessage;
    const changed = {
      ...read,
      enabled: false,
      description: 'changed',
      variants: [...read.variants, { key: 'maybe', value: { bool_value: true } }],
    };
    const updated = await flags.mutateFlag({ environment_id: env, kind: 'MUTATION_KIND_UPDATE', flag: changed, version: read.version }, admin);
    assert.ok(updated.flag);
    assert.equal(updated.flag.enabled, false);
    assert.equal(updated.flag.description, 'changed');
    assert.deepEqual(updated.flag.variants.map((v) => v.key), ['on', 'off', 'maybe']);
    assert.ok(updated.version > read.version, 'the version moves on');

    const stale = await rejectsWithStatus(
      flags.mutateFlag({ environment_id: env, kind: 'MUTATION_KIND_UPDATE', flag: { ...changed, enabled: true }, version: read.version }, admin),
      grpc.status.ABORTED,
    );
    assert.match(stale.details, /version/);
    const after = await flags.getFlag({ environment_id: env, flag_key: 'update-me' }, admin);
    assert.equal(after.enabled, false, 'the stale update changed nothing');
    assert.equal(after.version, updated.version);
  });

  test('UPDATE with value_type UNSPECIFIED keeps the stored type', async () => {
    const read = (await create(simpleFlag('keep-type'))).flag as FeatureFlagMessage;
    const answer = await flags.mutateFlag(
      { environment_id: env, kind: 'MUTATION_KIND_UPDATE', flag: { ...read, value_type: 'FLAG_VALUE_TYPE_UNSPECIFIED', enabled: false }, version: read.version },
      admin,
    );
    assert.equal(answer.flag?.value_type, 'FLAG_VALUE_TYPE_BOOL');
    assert.equal(answer.flag?.enabled, false);
  });

  test('ARCHIVE with a stale version is ABORTED; with the current one the flag is archived', async () => {
    const read = (await create(simpleFlag('archive-me'))).flag as FeatureFlagMessage;
    await rejectsWithStatus(
      flags.mutateFlag({ environment_id: env, kind: 'MUTATION_KIND_ARCHIVE', flag: { key: 'archive-me' }, version: read.version + 5 }, admin),
      grpc.status.ABORTED,
    );
    assert.equal((await flags.getFlag({ environment_id: env, flag_key: 'archive-me' }, admin)).archived, false);
    const answer = await flags.mutateFlag({ environment_id: env, kind: 'MUTATION_KIND_ARCHIVE', flag: { key: 'archive-me' }, version: read.version }, admin);
    assert.equal(answer.flag?.archived, true);
    assert.equal(answer.version, answer.flag?.version);
    const got = await flags.getFlag({ environment_id: env, flag_key: 'archive-me' }, admin);
    assert.equal(got.archived, true);
    const { flags: listed } = await flags.listFlags({ environment_id: env }, admin);
    assert.equal(listed.find((f) => f.key === 'archive-me')?.archived, true, 'archived flags stay listed, marked');
  });

  test('DELETE with a stale version is ABORTED; with the current one the flag is gone', async () => {
    const read = (await create(simpleFlag('delete-me'))).flag as FeatureFlagMessage;
    await rejectsWithStatus(
      flags.mutateFlag({ environment_id: env, kind: 'MUTATION_KIND_DELETE', flag: { key: 'delete-me' }, version: read.version - 1 }, admin),
      grpc.status.ABORTED,
    );
    const answer = await flags.mutateFlag({ environment_id: env, kind: 'MUTATION_KIND_DELETE', flag: { key: 'delete-me' }, version: read.version }, admin);
    assert.equal(answer.flag?.key, 'delete-me', 'the answer carries the deleted flag');
    assert.equal(answer.version, read.version);
    await rejectsWithStatus(flags.getFlag({ environment_id: env, flag_key: 'delete-me' }, admin), grpc.status.NOT_FOUND);
    const { flags: listed } = await flags.listFlags({ environment_id: env }, admin);
    assert.ok(!listed.some((f) => f.key === 'delete-me'));
    await rejectsWithStatus(
      flags.mutateFlag({ environment_id: env, kind: 'MUTATION_KIND_DELETE', flag: { key: 'delete-me' }, version: read.version }, admin),
      grpc.status.NOT_FOUND,
    );
  });
});

describe('FlagService over gRPC: definitions stream and hashing', () => {
  test('GetFlagDefinitions streams every flag of the environment, then ends', async () => {
    const project = expectStatus(
      await rest.post(`/v1/management/orgs/${tenant.orgId}/projects`, { token: tenant.admin.token, body: { name: 'stream-project' } }),
      201,
      'create project',
    );
    const environment = expectStatus(
      await rest.post(`/v1/management/projects/${project.project_id}/environments`, { token: tenant.admin.token, body: { name: 'staging' } }),
      201,
      'create environment',
    );
    const streamEnv = environment.environment_id as string;
    assert.deepEqual(await flags.getFlagDefinitions({ environment_id: streamEnv }, admin), [], 'an empty environment: an empty stream');

    const keys = ['s-a', 's-b', 's-c', 's-d'];
    for (const key of keys) await create(simpleFlag(key), admin, streamEnv);
    const streamed = await flags.getFlagDefinitions({ environment_id: streamEnv }, admin);
    assert.deepEqual(streamed.map((f) => f.key).sort(), keys);
    const { flags: listed } = await flags.listFlags({ environment_id: streamEnv }, admin);
    assert.deepEqual(streamed, listed);
  });

  test('GetFlagDefinitions without credentials fails the stream with UNAUTHENTICATED', async () => {
    await rejectsWithStatus(flags.getFlagDefinitions({ environment_id: env }), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(flags.getFlagDefinitions({ environment_id: env }, bearer(other.admin.token)), grpc.status.NOT_FOUND);
  });

  test('UpdateFlagHashing replaces the configs and answers the flag with them', async () => {
    await create(simpleFlag('hashed'));
    const configs = [
      { parameter_key: 'org_id', parameter_type: 'organisation', order: 0 },
      { parameter_key: 'account_id', parameter_type: 'user', order: 2 },
    ];
    const answer = await flags.updateFlagHashing({ environment_id: env, flag_key: 'hashed', configs }, admin);
    assert.deepEqual(answer.configs, configs);
    assert.deepEqual(answer.flag?.hashing, configs);
    assert.deepEqual((await flags.getFlag({ environment_id: env, flag_key: 'hashed' }, admin)).hashing, configs);

    const cleared = await flags.updateFlagHashing({ environment_id: env, flag_key: 'hashed', configs: [] }, admin);
    assert.deepEqual(cleared.configs, []);
    await rejectsWithStatus(
      flags.updateFlagHashing({ environment_id: env, flag_key: 'hashed', configs: [{ parameter_key: '', parameter_type: 'user', order: 1 }] }, admin),
      grpc.status.INVALID_ARGUMENT,
    );
    await rejectsWithStatus(flags.updateFlagHashing({ environment_id: env, flag_key: 'nope', configs }, admin), grpc.status.NOT_FOUND);
  });
});

describe('FlagService over gRPC: invalid input is INVALID_ARGUMENT', () => {
  const invalid: Array<[string, FeatureFlagInput]> = [
    ['a value of another type than the flag', { ...simpleFlag('bad-1'), variants: [{ key: 'on', value: { string_value: 'true' } }] }],
    ['an INT variant given as double_value', { ...simpleFlag('bad-2'), value_type: 'FLAG_VALUE_TYPE_INT', variants: [{ key: 'on', value: { double_value: 1.5 } }], rules: [], off_variant_key: '' }],
    ['a variant without a value', { ...simpleFlag('bad-3'), variants: [{ key: 'on' }] }],
    ['json_value that is not JSON', { ...simpleFlag('bad-4'), value_type: 'FLAG_VALUE_TYPE_JSON', variants: [{ key: 'on', value: { json_value: '{oops' } }], rules: [], off_variant_key: '' }],
    ['a rule naming a missing variant', { ...simpleFlag('bad-5'), rules: [{ rule_payload: payload({ conditions: [] }), variant_key: 'purple' }] }],
    ['a rule naming a missing segment', { ...simpleFlag('bad-6'), rules: [{ rule_payload: payload({ conditions: [], segment_keys: ['ghosts'] }), variant_key: 'on' }] }],
    ['a rule payload that is not JSON', { ...simpleFlag('bad-7'), rules: [{ rule_payload: Buffer.from('conditions: []'), variant_key: 'on' }] }],
    ['a rule payload with an unknown member', { ...simpleFlag('bad-8'), rules: [{ rule_payload: payload({ conditions: [], variant_key: 'on' }), variant_key: 'on' }] }],
    ['a rule payload that is a JSON array', { ...simpleFlag('bad-9'), rules: [{ rule_payload: payload([]), variant_key: 'on' }] }],
    ['a rule with an unknown condition op', { ...simpleFlag('bad-10'), rules: [{ rule_payload: payload({ conditions: [{ attribute: 'x', op: 'like', values: ['a'] }] }), variant_key: 'on' }] }],
    ['a rule with neither variant_key nor allocation', { ...simpleFlag('bad-11'), rules: [{ rule_payload: payload({ conditions: [] }) }] }],
    ['weights that do not sum to 1000', { ...simpleFlag('bad-12'), rules: [{ allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'on', weight_milli: 999 }] } }] }],
    ['an off_variant_key naming no variant', { ...simpleFlag('bad-13'), off_variant_key: 'purple' }],
    ['value_type UNSPECIFIED', { ...simpleFlag('bad-14'), value_type: 'FLAG_VALUE_TYPE_UNSPECIFIED' }],
    ['a malformed key', simpleFlag('bad key!')],
  ];
  for (const [what, flag] of invalid) {
    test(`CREATE with ${what}`, async () => {
      await rejectsWithStatus(create(flag), grpc.status.INVALID_ARGUMENT);
      if (flag.key !== 'bad key!') await rejectsWithStatus(flags.getFlag({ environment_id: env, flag_key: flag.key ?? '' }, admin), grpc.status.NOT_FOUND);
    });
  }

  test('MUTATION_KIND_UNSPECIFIED, a missing flag and a missing key', async () => {
    await rejectsWithStatus(flags.mutateFlag({ environment_id: env, kind: 'MUTATION_KIND_UNSPECIFIED', flag: simpleFlag('k1') }, admin), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(flags.mutateFlag({ environment_id: env, kind: 'MUTATION_KIND_CREATE' }, admin), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(flags.mutateFlag({ environment_id: env, kind: 'MUTATION_KIND_DELETE', flag: { key: '' } }, admin), grpc.status.INVALID_ARGUMENT);
  });
});

describe('FlagService over gRPC: credentials and tenancy', () => {
  test('no metadata, a malformed bearer or an SDK key is UNAUTHENTICATED', async () => {
    await rejectsWithStatus(flags.listFlags({ environment_id: env }), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(flags.getFlag({ environment_id: env, flag_key: 'new-checkout' }, metadataWith('authorization', 'Basic abc')), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(flags.getFlag({ environment_id: env, flag_key: 'new-checkout' }, bearer('not-a-jwt')), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(flags.listFlags({ environment_id: env }, metadataWith('x-sdk-key', tenant.rawKey)), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(create(simpleFlag('anonymous'), new grpc.Metadata()), grpc.status.UNAUTHENTICATED);
  });

  test("another org's token answers NOT_FOUND for this environment", async () => {
    const stranger = bearer(other.admin.token);
    await rejectsWithStatus(flags.getFlag({ environment_id: env, flag_key: 'new-checkout' }, stranger), grpc.status.NOT_FOUND);
    await rejectsWithStatus(flags.listFlags({ environment_id: env }, stranger), grpc.status.NOT_FOUND);
    await rejectsWithStatus(create(simpleFlag('intruder'), stranger), grpc.status.NOT_FOUND);
    await rejectsWithStatus(flags.updateFlagHashing({ environment_id: env, flag_key: 'new-checkout', configs: [] }, stranger), grpc.status.NOT_FOUND);
    await rejectsWithStatus(flags.getFlag({ environment_id: 'not-a-uuid', flag_key: 'x' }, admin), grpc.status.NOT_FOUND);
    // Its own environment works and does not see this org's flags.
    assert.deepEqual((await flags.listFlags({ environment_id: other.environmentId }, stranger)).flags, []);
  });

  test('an org_member may write flags, as on REST', async () => {
    const answer = await create(simpleFlag('by-member'), bearer(tenant.member.token));
    assert.equal(answer.flag?.key, 'by-member');
  });
});

describe('FlagService over gRPC: tags, lifetime, maintainer, bucket_by and the list filter', () => {
  const metadataOf = (flag: FeatureFlagMessage | null | undefined) => ({ tags: flag?.tags, lifetime: flag?.lifetime, maintainer: flag?.maintainer, bucket_by: flag?.bucket_by });

  test('CREATE carries them (tags sorted, de-duplicated); unset: [], PERMANENT, no maintainer, ENVIRONMENT; REST shows the same', async () => {
    const plain = await create(simpleFlag('meta-plain'));
    assert.deepEqual(metadataOf(plain.flag), { tags: [], lifetime: 'FLAG_LIFETIME_PERMANENT', maintainer: undefined, bucket_by: 'FLAG_BUCKET_BY_ENVIRONMENT' });
    const set = await create({ ...simpleFlag('meta-set'), tags: ['web', 'team:a', 'web'], lifetime: 'FLAG_LIFETIME_TEMPORARY', maintainer: 'ana@example.com', bucket_by: 'FLAG_BUCKET_BY_PROJECT' });
    const expected = { tags: ['team:a', 'web'], lifetime: 'FLAG_LIFETIME_TEMPORARY', maintainer: 'ana@example.com', bucket_by: 'FLAG_BUCKET_BY_PROJECT' };
    assert.deepEqual(metadataOf(set.flag), expected);
    assert.deepEqual(metadataOf(await flags.getFlag({ environment_id: env, flag_key: 'meta-set' }, admin)), expected);
    const body = expectStatus(await rest.get(`/v1/environments/${env}/flags/meta-set`, { token: tenant.admin.token }), 200);
    assert.deepEqual([body.tags, body.lifetime, body.maintainer, body.bucket_by], [['team:a', 'web'], 'temporary', 'ana@example.com', 'project']);
  });

  test('UPDATE: UNSPECIFIED enums and an unset maintainer keep them, tags are replaced, "" removes the maintainer', async () => {
    const read = await flags.getFlag({ environment_id: env, flag_key: 'meta-set' }, admin);
    const { maintainer: _maintainer, ...withoutMaintainer } = read;
    const kept = await flags.mutateFlag(
      { environment_id: env, kind: 'MUTATION_KIND_UPDATE', flag: { ...withoutMaintainer, lifetime: 'FLAG_LIFETIME_UNSPECIFIED', bucket_by: 'FLAG_BUCKET_BY_UNSPECIFIED', tags: ['web'] }, version: read.version },
      admin,
    );
    assert.deepEqual(metadataOf(kept.flag), { tags: ['web'], lifetime: 'FLAG_LIFETIME_TEMPORARY', maintainer: 'ana@example.com', bucket_by: 'FLAG_BUCKET_BY_PROJECT' });
    const cleared = await flags.mutateFlag(
      { environment_id: env, kind: 'MUTATION_KIND_UPDATE', flag: { ...kept.flag!, maintainer: '', lifetime: 'FLAG_LIFETIME_PERMANENT', bucket_by: 'FLAG_BUCKET_BY_ENVIRONMENT' }, version: kept.version },
      admin,
    );
    assert.deepEqual(metadataOf(cleared.flag), { tags: ['web'], lifetime: 'FLAG_LIFETIME_PERMANENT', maintainer: undefined, bucket_by: 'FLAG_BUCKET_BY_ENVIRONMENT' });
  });

  test('bad values are INVALID_ARGUMENT naming the field', async () => {
    const bad = async (flag: FeatureFlagInput, field: RegExp) => assert.match((await rejectsWithStatus(create(flag), grpc.status.INVALID_ARGUMENT)).details, field);
    await bad({ ...simpleFlag('meta-bad-1'), tags: ['has space'] }, /tags\[0\]/);
    await bad({ ...simpleFlag('meta-bad-2'), tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, /tags/);
    await bad({ ...simpleFlag('meta-bad-3'), maintainer: 'x'.repeat(201) }, /maintainer/);
    await bad({ ...simpleFlag('meta-bad-4'), lifetime: 7 }, /lifetime/);
    await bad({ ...simpleFlag('meta-bad-5'), bucket_by: 9 }, /bucket_by/);
    await rejectsWithStatus(flags.getFlag({ environment_id: env, flag_key: 'meta-bad-1' }, admin), grpc.status.NOT_FOUND);
  });

  test('ListFlags filters by every tag given and by lifetime; bad filter values are INVALID_ARGUMENT', async () => {
    await create({ ...simpleFlag('meta-list-a'), tags: ['list-x', 'list-y'] });
    await create({ ...simpleFlag('meta-list-b'), tags: ['list-x'], lifetime: 'FLAG_LIFETIME_TEMPORARY' });
    const keys = async (request: { tags?: string[]; lifetime?: string | number }) =>
      (await flags.listFlags({ environment_id: env, ...request }, admin)).flags.map((flag) => flag.key).filter((key) => key.startsWith('meta-list-'));
    assert.deepEqual(await keys({ tags: ['list-x'] }), ['meta-list-a', 'meta-list-b']);
    assert.deepEqual(await keys({ tags: ['list-x', 'list-y'] }), ['meta-list-a']);
    assert.deepEqual(await keys({ tags: ['list-x'], lifetime: 'FLAG_LIFETIME_TEMPORARY' }), ['meta-list-b']);
    assert.deepEqual(await keys({ lifetime: 'FLAG_LIFETIME_PERMANENT', tags: ['list-y'] }), ['meta-list-a']);
    assert.deepEqual(await keys({}), ['meta-list-a', 'meta-list-b']);
    assert.match((await rejectsWithStatus(flags.listFlags({ environment_id: env, tags: ['bad tag'] }, admin), grpc.status.INVALID_ARGUMENT)).details, /tag/);
    assert.match((await rejectsWithStatus(flags.listFlags({ environment_id: env, lifetime: 5 }, admin), grpc.status.INVALID_ARGUMENT)).details, /lifetime/);
  });
});
