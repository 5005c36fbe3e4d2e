import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { UUID_PATTERN, bearer, metadataWith, rejectsWithStatus } from './support/grpc-clients.ts';
import {
  flagClient,
  parsePayload,
  payload,
  segmentClient,
  type FlagClient,
  type ListSegmentMessage,
  type MutateSegmentInput,
  type RuleSegmentMessage,
  type SegmentClient,
} from './support/grpc-flag-clients.ts';
import { api, loginAdmin, seedTenant, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let it: TestServer;
let segments: SegmentClient;
let flags: FlagClient;
let tenant: Tenant;
let other: Tenant;
let admin: grpc.Metadata;
let env: string;

before(async () => {
  it = await startTestServer({}, { share: true });
  const rest = api(it.base);
  const root = await loginAdmin(rest);
  tenant = await seedTenant(rest, root.token, 'segments');
  other = await seedTenant(rest, root.token, 'other');
  segments = segmentClient(it.server.grpcPort);
  flags = flagClient(it.server.grpcPort);
  admin = bearer(tenant.admin.token);
  env = tenant.environmentId;
});

after(async () => {
  segments.close();
  flags.close();
  await it.stop();
});

const mutate = (request: Omit<MutateSegmentInput, 'environment_id'>, metadata = admin) =>
  segments.mutateSegment({ environment_id: env, ...request }, metadata);
const member = (segment_key: string, context_key: string, context_type = 'user', metadata = admin) =>
  segments.evaluateMembership({ environment_id: env, segment_key, context_key, context_type }, metadata).then((a) => a.is_member);

const CONDITIONS = [{ context_type: 'user', attribute: 'plan', op: 'in', values: ['pro', 'enterprise'] }];

describe('SegmentationService over gRPC: create and read', () => {
  let listSegment: ListSegmentMessage;
  let ruleSegment: RuleSegmentMessage;

  test('MutateSegment CREATE of a list segment answers it with its members and a version', async () => {
    const answer = await mutate({
      kind: 'SEGMENT_MUTATION_KIND_CREATE',
      list_segment: { key: 'vip', context_type: 'user', included_keys: ['carol', 'alice', 'bob'], excluded_keys: ['bob'] },
    });
    assert.equal(answer.rule_segment, null);
    assert.ok(answer.list_segment);
    listSegment = answer.list_segment;
    assert.equal(listSegment.key, 'vip');
    assert.equal(listSegment.context_type, 'user');
    assert.match(listSegment.id, UUID_PATTERN);
    assert.deepEqual(listSegment.included_keys, ['alice', 'bob', 'carol'], 'members in key order');
    assert.deepEqual(listSegment.excluded_keys, ['bob']);
    assert.ok(listSegment.version >= 1);
    assert.equal(answer.version, listSegment.version);
  });

  test('MutateSegment CREATE of a rule segment answers its conditions as the JSON payload', async () => {
    const answer = await mutate({
      kind: 'SEGMENT_MUTATION_KIND_CREATE',
      rule_segment: { key: 'paying', context_type: 'user', rule_payload: payload({ conditions: CONDITIONS }) },
    });
    assert.equal(answer.list_segment, null);
    assert.ok(answer.rule_segment);
    ruleSegment = answer.rule_segment;
    assert.equal(ruleSegment.key, 'paying');
    assert.match(ruleSegment.id, UUID_PATTERN);
    assert.deepEqual(parsePayload(ruleSegment.rule_payload), { conditions: CONDITIONS });
    assert.equal(answer.version, ruleSegment.version);
  });

  test('GetSegment answers a bundle with the segment in the list of its kind', async () => {
    assert.deepEqual(await segments.getSegment({ environment_id: env, segment_key: 'vip' }, admin), { list_segments: [listSegment], rule_segments: [] });
    assert.deepEqual(await segments.getSegment({ environment_id: env, segment_key: 'paying' }, admin), { list_segments: [], rule_segments: [ruleSegment] });
    await rejectsWithStatus(segments.getSegment({ environment_id: env, segment_key: 'nobody' }, admin), grpc.status.NOT_FOUND);
  });

  test('ListSegments answers rule segments in full and list segments as metadata only', async () => {
    const listed = await segments.listSegments({ environment_id: env }, admin);
    assert.deepEqual(listed.rule_segments, [ruleSegment]);
    assert.deepEqual(listed.list_segments, [{ key: 'vip', context_type: 'user', id: listSegment.id, version: listSegment.version }]);
  });

  test('GetSegment carries at most the first 1000 keys of each list inline', async () => {
    const many = Array.from({ length: 1500 }, (_, i) => `user-${String(i).padStart(4, '0')}`);
    await mutate({ kind: 'SEGMENT_MUTATION_KIND_CREATE', list_segment: { key: 'crowd', context_type: 'user', included_keys: many, excluded_keys: many.slice(0, 1200) } });
    const [crowd] = (await segments.getSegment({ environment_id: env, segment_key: 'crowd' }, admin)).list_segments;
    assert.deepEqual(crowd?.included_keys, many.slice(0, 1000));
    assert.deepEqual(crowd?.excluded_keys, many.slice(0, 1000));
    assert.equal(await member('crowd', 'user-1499'), true, 'members beyond the inline page still count');
    assert.equal(await member('crowd', 'user-1100'), false);
  });

  test('CREATE of an existing key is ALREADY_EXISTS', async () => {
    await rejectsWithStatus(
      mutate({ kind: 'SEGMENT_MUTATION_KIND_CREATE', list_segment: { key: 'vip', context_type: 'user' } }),
      grpc.status.ALREADY_EXISTS,
    );
  });
});

describe('SegmentationService over gRPC: EvaluateMembership', () => {
  test('an included key is a member; excluded wins over included; others are not', async () => {
    assert.equal(await member('vip', 'alice'), true);
    assert.equal(await member('vip', 'carol'), true);
    assert.equal(await member('vip', 'bob'), false, 'excluded wins');
    assert.equal(await member('vip', 'dave'), false);
  });

  test('a context of another type is never a member; a rule segment answers false', async () => {
    assert.equal(await member('vip', 'alice', 'device'), false);
    assert.equal(await member('paying', 'alice'), false);
  });

  test('an unknown segment is NOT_FOUND', async () => {
    await rejectsWithStatus(member('nobody', 'alice'), grpc.status.NOT_FOUND);
  });

  test("the environment's SDK key as x-sdk-key metadata gets the same answers", async () => {
    const sdk = metadataWith('x-sdk-key', tenant.rawKey);
    assert.equal(await member('vip', 'alice', 'user', sdk), true);
    assert.equal(await member('vip', 'bob', 'user', sdk), false);
    await rejectsWithStatus(member('nobody', 'alice', 'user', sdk), grpc.status.NOT_FOUND);
    await rejectsWithStatus(member('vip', 'alice', 'user', metadataWith('x-sdk-key', 'sk_not-a-key')), grpc.status.UNAUTHENTICATED);
  });

  test("another environment's SDK key is PERMISSION_DENIED (docs/contract.md \"Roles (RBAC)\"); another org's token NOT_FOUND", async () => {
    await rejectsWithStatus(member('vip', 'alice', 'user', metadataWith('x-sdk-key', other.rawKey)), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(member('vip', 'alice', 'user', bearer(other.admin.token)), grpc.status.NOT_FOUND);
  });
});

describe('SegmentationService over gRPC: update and delete under optimistic locking', () => {
  test('UPDATE of a list segment replaces both lists; a stale version is ABORTED and changes nothing', async () => {
    const [current] = (await segments.getSegment({ environment_id: env, segment_key: 'vip' }, admin)).list_segments;
    assert.ok(current);
    const answer = await mutate({
      kind: 'SEGMENT_MUTATION_KIND_UPDATE',
      list_segment: { key: 'vip', context_type: 'user', included_keys: ['bob', 'erin'], excluded_keys: [] },
      version: current.version,
    });
    assert.deepEqual(answer.list_segment?.included_keys, ['bob', 'erin']);
    assert.deepEqual(answer.list_segment?.excluded_keys, []);
    assert.ok(answer.version > current.version);
    assert.equal(await member('vip', 'alice'), false, 'alice was replaced');
    assert.equal(await member('vip', 'bob'), true, 'bob is no longer excluded');

    await rejectsWithStatus(
      mutate({ kind: 'SEGMENT_MUTATION_KIND_UPDATE', list_segment: { key: 'vip', context_type: 'user', included_keys: ['mallory'] }, version: current.version }),
      grpc.status.ABORTED,
    );
    assert.equal(await member('vip', 'mallory'), false);
    assert.equal(await member('vip', 'erin'), true, 'the stale update changed nothing');
  });

  test('UPDATE of a rule segment replaces its conditions; a stale version is ABORTED', async () => {
    const [current] = (await segments.getSegment({ environment_id: env, segment_key: 'paying' }, admin)).rule_segments;
    assert.ok(current);
    const conditions = [{ attribute: 'plan', op: 'eq', values: ['enterprise'] }];
    const answer = await mutate({
      kind: 'SEGMENT_MUTATION_KIND_UPDATE',
      rule_segment: { key: 'paying', context_type: 'user', rule_payload: payload({ conditions }) },
      version: current.version,
    });
    assert.deepEqual(parsePayload(answer.rule_segment?.rule_payload ?? Buffer.alloc(0)), { conditions });
    assert.equal(answer.version, answer.rule_segment?.version);
    await rejectsWithStatus(
      mutate({ kind: 'SEGMENT_MUTATION_KIND_UPDATE', rule_segment: { key: 'paying', context_type: 'user', rule_payload: payload({ conditions: CONDITIONS }) }, version: current.version }),
      grpc.status.ABORTED,
    );
    const [after] = (await segments.getSegment({ environment_id: env, segment_key: 'paying' }, admin)).rule_segments;
    assert.deepEqual(parsePayload(after?.rule_payload ?? Buffer.alloc(0)), { conditions });
  });

  test('a rejected UPDATE changes nothing, not even the version', async () => {
    const created = await mutate({ kind: 'SEGMENT_MUTATION_KIND_CREATE', list_segment: { key: 'strict', context_type: 'user', included_keys: ['a'] } });
    await rejectsWithStatus(
      mutate({ kind: 'SEGMENT_MUTATION_KIND_UPDATE', list_segment: { key: 'strict', context_type: 'device', included_keys: [''] }, version: created.version }),
      grpc.status.INVALID_ARGUMENT,
    );
    const [after] = (await segments.getSegment({ environment_id: env, segment_key: 'strict' }, admin)).list_segments;
    assert.equal(after?.version, created.version);
    assert.equal(after?.context_type, 'user');
    const answer = await mutate({ kind: 'SEGMENT_MUTATION_KIND_UPDATE', list_segment: { key: 'strict', context_type: 'user', included_keys: ['b'] }, version: created.version });
    assert.deepEqual(answer.list_segment?.included_keys, ['b']);
  });

  test('UPDATE cannot change the kind of a segment', async () => {
    const [current] = (await segments.getSegment({ environment_id: env, segment_key: 'paying' }, admin)).rule_segments;
    await rejectsWithStatus(
      mutate({ kind: 'SEGMENT_MUTATION_KIND_UPDATE', list_segment: { key: 'paying', context_type: 'user', included_keys: ['a'] }, version: current?.version ?? 0 }),
      grpc.status.INVALID_ARGUMENT,
    );
  });

  test('DELETE with a stale version is ABORTED; with the current one the segment is gone', async () => {
    const created = await mutate({ kind: 'SEGMENT_MUTATION_KIND_CREATE', list_segment: { key: 'temporary', context_type: 'user', included_keys: ['x'] } });
    await rejectsWithStatus(mutate({ kind: 'SEGMENT_MUTATION_KIND_DELETE', list_segment: { key: 'temporary' }, version: created.version + 1 }), grpc.status.ABORTED);
    const answer = await mutate({ kind: 'SEGMENT_MUTATION_KIND_DELETE', list_segment: { key: 'temporary' }, version: created.version });
    assert.deepEqual(answer.list_segment?.included_keys, ['x'], 'the answer carries the deleted segment');
    await rejectsWithStatus(segments.getSegment({ environment_id: env, segment_key: 'temporary' }, admin), grpc.status.NOT_FOUND);
    await rejectsWithStatus(member('temporary', 'x'), grpc.status.NOT_FOUND);
    assert.ok(!(await segments.listSegments({ environment_id: env }, admin)).list_segments.some((s) => s.key === 'temporary'));
  });

  test('DELETE of a segment a flag rule references is FAILED_PRECONDITION', async () => {
    await flags.mutateFlag(
      {
        environment_id: env,
        kind: 'MUTATION_KIND_CREATE',
        flag: {
          key: 'vip-banner',
          value_type: 'FLAG_VALUE_TYPE_BOOL',
          variants: [{ key: 'on', value: { bool_value: true } }],
          rules: [{ rule_payload: payload({ conditions: [], segment_keys: ['paying'] }), variant_key: 'on' }],
        },
      },
      admin,
    );
    const [current] = (await segments.getSegment({ environment_id: env, segment_key: 'paying' }, admin)).rule_segments;
    await rejectsWithStatus(mutate({ kind: 'SEGMENT_MUTATION_KIND_DELETE', rule_segment: { key: 'paying' }, version: current?.version ?? 0 }), grpc.status.FAILED_PRECONDITION);
  });
});

describe('SegmentationService over gRPC: invalid input and credentials', () => {
  const invalid: Array<[string, Omit<MutateSegmentInput, 'environment_id'>]> = [
    ['kind UNSPECIFIED', { kind: 'SEGMENT_MUTATION_KIND_UNSPECIFIED', list_segment: { key: 'k', context_type: 'user' } }],
    ['no segment', { kind: 'SEGMENT_MUTATION_KIND_CREATE' }],
    ['an empty key', { kind: 'SEGMENT_MUTATION_KIND_CREATE', list_segment: { key: '', context_type: 'user' } }],
    ['no context_type', { kind: 'SEGMENT_MUTATION_KIND_CREATE', list_segment: { key: 'k1' } }],
    ['a payload that is not JSON', { kind: 'SEGMENT_MUTATION_KIND_CREATE', rule_segment: { key: 'k2', context_type: 'user', rule_payload: Buffer.from('{') } }],
    ['a payload with segment_keys', { kind: 'SEGMENT_MUTATION_KIND_CREATE', rule_segment: { key: 'k3', context_type: 'user', rule_payload: payload({ conditions: [], segment_keys: ['vip'] }) } }],
    ['an invalid condition', { kind: 'SEGMENT_MUTATION_KIND_CREATE', rule_segment: { key: 'k4', context_type: 'user', rule_payload: payload({ conditions: [{ attribute: 'a', op: 'matches', values: ['('] }] }) } }],
    ['an empty member key', { kind: 'SEGMENT_MUTATION_KIND_CREATE', list_segment: { key: 'k5', context_type: 'user', included_keys: [''] } }],
  ];
  for (const [what, request] of invalid) {
    test(`MutateSegment with ${what} is INVALID_ARGUMENT`, async () => {
      await rejectsWithStatus(mutate(request), grpc.status.INVALID_ARGUMENT);
    });
  }

  test('no metadata is UNAUTHENTICATED; an SDK key only checks membership', async () => {
    await rejectsWithStatus(segments.listSegments({ environment_id: env }), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(segments.getSegment({ environment_id: env, segment_key: 'vip' }), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(member('vip', 'alice', 'user', new grpc.Metadata()), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(mutate({ kind: 'SEGMENT_MUTATION_KIND_CREATE', list_segment: { key: 'anon', context_type: 'user' } }, new grpc.Metadata()), grpc.status.UNAUTHENTICATED);
    const sdk = metadataWith('x-sdk-key', tenant.rawKey);
    await rejectsWithStatus(segments.listSegments({ environment_id: env }, sdk), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(mutate({ kind: 'SEGMENT_MUTATION_KIND_CREATE', list_segment: { key: 'by-sdk', context_type: 'user' } }, sdk), grpc.status.UNAUTHENTICATED);
  });

  test("another org's token answers NOT_FOUND for this environment", async () => {
    const stranger = bearer(other.admin.token);
    await rejectsWithStatus(segments.getSegment({ environment_id: env, segment_key: 'vip' }, stranger), grpc.status.NOT_FOUND);
    await rejectsWithStatus(segments.listSegments({ environment_id: env }, stranger), grpc.status.NOT_FOUND);
    await rejectsWithStatus(mutate({ kind: 'SEGMENT_MUTATION_KIND_CREATE', list_segment: { key: 'intruder', context_type: 'user' } }, stranger), grpc.status.NOT_FOUND);
    assert.deepEqual(await segments.listSegments({ environment_id: other.environmentId }, stranger), { rule_segments: [], list_segments: [] });
  });

  test('an org_member may write segments, as on REST', async () => {
    const answer = await mutate({ kind: 'SEGMENT_MUTATION_KIND_CREATE', list_segment: { key: 'by-member', context_type: 'user' } }, bearer(tenant.member.token));
    assert.equal(answer.list_segment?.key, 'by-member');
  });
});
