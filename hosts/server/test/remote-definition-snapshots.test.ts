import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { DomainError, type EnvironmentScope, type EvaluationContext } from '@switchyard/core';
import { EvaluationService, type EnvironmentSnapshot } from '@switchyard/services';
import type { Logger } from '@switchyard/transport/logging.ts';
import { linkCredential } from '@switchyard/transport/remote/forwarded-credential.ts';
import { RemoteDefinitionSnapshots } from '@switchyard/transport/remote/remote-definition-snapshots.ts';
import { RemoteListMembership } from '@switchyard/transport/remote/remote-list-membership.ts';
import { ACTIVE, createExperiment, moveThrough, prepareEnvironment } from './support/experiment-fixtures.ts';
import { createFlag, createSegment, envFlags, patch, put, segmentsOf } from './support/flag-client.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * A gateway's evaluation (EvaluationService over RemoteDefinitionSnapshots and
 * RemoteListMembership, talking to the real services over the internal gRPC port) against the
 * same server's in-process evaluation of the same requests, and what happens to the remote
 * snapshots when definitions change, a key is revoked or the services stop.
 */

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let address: string;
let remote: RemoteDefinitionSnapshots;
let membership: RemoteListMembership;
let gateway: EvaluationService;
/** Everything the remote parts logged: no credential may be in it. */
const logLines: string[] = [];
const logger = {
  debug: (fields: object, message: string) => logLines.push(JSON.stringify({ fields, message })),
  warn: (fields: object, message: string) => logLines.push(JSON.stringify({ fields, message })),
} as unknown as Pick<Logger, 'debug' | 'warn'>;
const closers: Array<() => void> = [];

const FLAGS = { targeted: 'targeted', split: 'split', disabled: 'disabled', json: 'json-config', archived: 'archived', experiment: 'checkout' };
const SEGMENTS = { beta: 'beta', pros: 'pros', orgs: 'orgs' };

/** The tenant's scope as the server itself evaluates in it (no credential needed in-process). */
const plainScope = (): EnvironmentScope => ({ orgId: a.orgId, projectId: a.projectId, environmentId: a.environmentId });
/** The same scope as a gateway builds it for a caller with `sdkKey`. */
const gatewayScope = (sdkKey = a.rawKey): EnvironmentScope => linkCredential(plainScope(), { sdkKey });

function remoteSnapshots(target = address, options: ConstructorParameters<typeof RemoteDefinitionSnapshots>[2] = {}): RemoteDefinitionSnapshots {
  const snapshots = new RemoteDefinitionSnapshots(target, grpc.credentials.createInsecure(), { logger, ...options });
  closers.push(() => snapshots.stop());
  return snapshots;
}

before(async () => {
  // The gateway's parts are built here, against one process's internal port.
  ts = await startTestServer({}, { topology: 'single' });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'remote');
  address = `127.0.0.1:${ts.server.grpcPort}`;
  const token = a.admin.token;
  const env = a.environmentId;

  await createSegment(client, token, env, { key: SEGMENTS.beta, context_type: 'user', kind: 'list', included_keys: ['u-1', 'u-2', 'u-3'], excluded_keys: ['u-3'] });
  await createSegment(client, token, env, { key: SEGMENTS.pros, context_type: 'user', kind: 'rule', conditions: [{ attribute: 'plan', op: 'eq', values: ['pro'] }] });
  await createSegment(client, token, env, { key: SEGMENTS.orgs, context_type: 'org', kind: 'list', included_keys: ['acme'] });
  const variants = (...keys: string[]) => keys.map((key) => ({ key, value: key.toUpperCase() }));
  await createFlag(client, token, env, {
    flag: {
      key: FLAGS.targeted,
      value_type: 'string',
      variants: variants('country', 'list', 'rule', 'org', 'none'),
      off_variant_key: 'none',
      rules: [
        { conditions: [{ attribute: 'country', op: 'in', values: ['de', 'fr'] }], variant_key: 'country' },
        { conditions: [], segment_keys: [SEGMENTS.beta], variant_key: 'list' },
        { conditions: [], segment_keys: [SEGMENTS.pros], variant_key: 'rule' },
        { conditions: [], segment_keys: [SEGMENTS.orgs], variant_key: 'org' },
      ],
    },
    enabled: true,
  });
  const split = { context_hash_specs: {}, buckets: [{ variant_key: 'a', weight_milli: 300 }, { variant_key: 'b', weight_milli: 700 }] };
  await createFlag(client, token, env, { flag: { key: FLAGS.split, value_type: 'string', variants: variants('a', 'b'), off_variant_key: 'a', rules: [{ conditions: [], allocation: split }] }, enabled: true });
  await createFlag(client, token, env, { flag: { key: FLAGS.disabled, value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off' }, enabled: false });
  await createFlag(client, token, env, { flag: { key: FLAGS.json, value_type: 'json', variants: [{ key: 'v', value: { limits: [1, 2], name: 'x' } }], off_variant_key: 'v' }, enabled: true });
  const archived = await createFlag(client, token, env, { flag: { key: FLAGS.archived, value_type: 'bool', variants: [{ key: 'on', value: true }], off_variant_key: 'on' }, enabled: true });
  expectStatus(await client.post(`${envFlags(env)}/${FLAGS.archived}/archive?version=${archived.version}`, { token }), 200, 'archive');
  // The split flag `checkout` under an ACTIVE experiment: its evaluations record exposures.
  await prepareEnvironment(client, a, FLAGS.experiment);
  const experiment = await createExperiment(client, a, { flag_key: FLAGS.experiment });
  await moveThrough(client, a, String(experiment.id), [ACTIVE]);

  remote = remoteSnapshots();
  membership = new RemoteListMembership(address, grpc.credentials.createInsecure(), remote);
  closers.push(() => membership.close());
  gateway = new EvaluationService({ segments: membership }, remote);
});
after(async () => {
  for (const close of closers.splice(0)) close();
  await ts.stop();
});

/** Requests that reach every rule of `targeted`: a country, list members (one excluded), a plan, an org. */
function requests(): EvaluationContext[][] {
  const out: EvaluationContext[][] = [];
  // 40 users: the split's buckets depend on the environment's random id, and with 12 users all of
  // them landed in its 70% bucket about once in 70 runs (0.7^12); with 40, once in 1.5 million.
  for (let i = 0; i < 40; i++) {
    const parameters: Record<string, string> = {};
    if (i % 4 === 1) parameters.country = 'de';
    if (i % 3 === 2) parameters.plan = 'pro';
    const user: EvaluationContext = { context_type: 'user', key: `u-${i}`, parameters };
    out.push(i % 5 === 4 ? [user, { context_type: 'org', key: i % 2 === 0 ? 'acme' : 'globex', parameters: {} }] : [user]);
  }
  return out;
}

async function until(condition: () => boolean, what: string, withinMs: number): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!condition()) {
    assert.ok(Date.now() < deadline, `${what} did not happen within ${withinMs} ms`);
    await sleep(10);
  }
}

/** Every request, all flags and each flag alone, evaluated by the gateway and in-process: equal. */
async function assertSameEvaluations(): Promise<Map<string, Set<string>>> {
  const local = ts.server.services.evaluation;
  const served = new Map<string, Set<string>>();
  for (const contexts of requests()) {
    const expected = await local.evaluate(plainScope(), { contexts });
    assert.deepEqual(await gateway.evaluate(gatewayScope(), { contexts }), expected, `all flags for ${JSON.stringify(contexts)}`);
    for (const result of expected) {
      served.set(result.flag_key, (served.get(result.flag_key) ?? new Set()).add(result.variant_key));
      const one = await gateway.evaluate(gatewayScope(), { contexts, flagKey: result.flag_key });
      assert.deepEqual(one, await local.evaluate(plainScope(), { contexts, flagKey: result.flag_key }), `${result.flag_key} for ${JSON.stringify(contexts)}`);
    }
  }
  return served;
}

describe('evaluating from the sync stream', () => {
  test('the remote snapshot holds what the in-process one holds (flags losslessly, list segments as metadata)', async () => {
    const mine = await remote.get(gatewayScope());
    const theirs = await ts.server.services.snapshots.get(plainScope());
    assert.deepEqual([...mine.flags.keys()], [...theirs.flags.keys()], 'the same active flags in the same order');
    assert.ok(!mine.flags.has(FLAGS.archived));
    assert.deepEqual(mine.flags, theirs.flags);
    assert.deepEqual([...mine.segments.keys()].sort(), [...theirs.segments.keys()].sort());
    for (const [key, segment] of theirs.segments) {
      const got = mine.segments.get(key)!;
      assert.deepEqual([got.kind, got.context_type, got.conditions], [segment.kind, segment.context_type, segment.conditions], key);
    }
    assert.deepEqual(mine.listSegmentKeysByFlag, theirs.listSegmentKeysByFlag);
    assert.deepEqual(mine.experimentFlagKeys, theirs.experimentFlagKeys);
    assert.ok(mine.experimentFlagKeys.has(FLAGS.experiment), 'the experiment flag is known as one');
    assert.deepEqual(mine.scope, plainScope());
  });

  test('evaluations equal the in-process evaluation of the same requests', async () => {
    const served = await assertSameEvaluations();
    // The requests reached every rule, both sides of the list segment and both split buckets.
    assert.deepEqual([...served.get(FLAGS.targeted)!].sort(), ['country', 'list', 'none', 'org', 'rule']);
    assert.deepEqual([...served.get(FLAGS.split)!].sort(), ['a', 'b']);
  });

  test('a flag change made over REST reaches the remote snapshot and onChange; evaluations still agree', async () => {
    const before = await remote.get(gatewayScope());
    const changes: unknown[] = [];
    const unsubscribe = remote.onChange((change) => changes.push(change));
    try {
      const rules = [{ conditions: [{ attribute: 'plan', op: 'eq', values: ['free'] }], variant_key: 'rule' }];
      const response = await put(client, `${envFlags(a.environmentId)}/${FLAGS.targeted}/rules`, { token: a.admin.token, body: { rules } });
      assert.ok(response.status === 200 || response.status === 202, response.text);
      await until(() => remote.current(a.environmentId) !== before, 'the change on the stream', 2_000);
      const after = remote.current(a.environmentId)!;
      assert.deepEqual(after.flags.get(FLAGS.targeted)!.rules.map((r) => r.conditions), rules.map((r) => r.conditions));
      assert.ok(!after.listSegmentKeysByFlag.has(FLAGS.targeted), 'the flag no longer names a list segment');
      assert.ok(changes.some((change) => JSON.stringify(change) === JSON.stringify({ environmentId: a.environmentId, resync: false })), JSON.stringify(changes));
      await assertSameEvaluations();
    } finally {
      unsubscribe();
    }
  });

  test('list membership is asked live: a member added over REST is seen by the next evaluation', async () => {
    const rules = [{ conditions: [], segment_keys: [SEGMENTS.beta], variant_key: 'list' }];
    expectStatus(await put(client, `${envFlags(a.environmentId)}/${FLAGS.targeted}/rules`, { token: a.admin.token, body: { rules } }), 202);
    remote.forget(a.environmentId);
    const newcomer: EvaluationContext[] = [{ context_type: 'user', key: 'late-joiner', parameters: {} }];
    const before = await gateway.evaluate(gatewayScope(), { contexts: newcomer, flagKey: FLAGS.targeted });
    expectStatus(await patch(client, `${segmentsOf(a.environmentId)}/${SEGMENTS.beta}/members`, { token: a.admin.token, body: { add_included: ['late-joiner'] } }), 200);
    const after = await gateway.evaluate(gatewayScope(), { contexts: newcomer, flagKey: FLAGS.targeted });
    assert.notEqual(after[0]!.variant_key, before[0]!.variant_key);
    assert.deepEqual(after, await ts.server.services.evaluation.evaluate(plainScope(), { contexts: newcomer, flagKey: FLAGS.targeted }));
  });

  test('forget() right after a write: the very next get() holds the new definitions', async () => {
    const path = `${envFlags(a.environmentId)}/${FLAGS.disabled}`;
    for (const enabled of [true, false]) {
      await remote.get(gatewayScope());
      expectStatus(await put(client, path, { token: a.admin.token, body: { enabled } }), 200);
      remote.forget(a.environmentId);
      assert.equal((await remote.get(gatewayScope())).flags.get(FLAGS.disabled)!.enabled, enabled);
    }
    // A project-level edit (variants) is forgotten by project.
    const description = `edited-${Date.now()}`;
    await remote.get(gatewayScope());
    expectStatus(await put(client, path, { token: a.admin.token, body: { flag: { description } } }), 200);
    remote.forget(a.projectId);
    assert.equal((await remote.get(gatewayScope())).flags.get(FLAGS.disabled)!.description, description);
    await assertSameEvaluations();
  });
});

describe('streams that end', () => {
  test('revoking the SDK key that opened the stream ends it and drops the snapshot; another key opens a new one', async () => {
    const extra = expectStatus(await client.post(`/v1/management/environments/${a.environmentId}/sdk-keys`, { token: a.admin.token }), 201, 'create sdk key');
    const snapshots = remoteSnapshots();
    const changes: unknown[] = [];
    snapshots.onChange((change) => changes.push(change));
    await snapshots.get(gatewayScope(extra.raw_key));
    assert.equal(snapshots.environmentCount(), 1);
    expectStatus(await client.delete(`/v1/management/environments/${a.environmentId}/sdk-keys/${extra.sdk_key_id}`, { token: a.admin.token }), 204, 'revoke');
    await until(() => snapshots.environmentCount() === 0, 'the end of the revoked key stream', 5_000);
    assert.equal(snapshots.current(a.environmentId), undefined);
    // The stream ended: revocations may have been missed, so listeners resync.
    assert.deepEqual(changes, [{ environmentId: a.environmentId, resync: true }]);

    const refused = await snapshots.get(gatewayScope(extra.raw_key)).catch((e: unknown) => e);
    assert.ok(refused instanceof DomainError && refused.code === 'UNAUTHENTICATED', String(refused));
    assert.equal(snapshots.environmentCount(), 0, 'a refused stream is not kept');
    const reopened: EnvironmentSnapshot = await snapshots.get(gatewayScope());
    assert.ok(reopened.flags.has(FLAGS.split));
    for (const line of logLines) assert.ok(!line.includes(extra.raw_key) && !line.includes(a.rawKey), `a raw key in a log line: ${line}`);
  });

  test('the services stop: the snapshot is dropped, then get() and evaluate reject with UNAVAILABLE at once', async () => {
    const services = await ts.startAnotherInstance();
    // A snapshot timeout far beyond the wait below: the rejection must come from the failed connection.
    const snapshots = remoteSnapshots(`127.0.0.1:${services.grpcPort}`, { firstSnapshotTimeoutMs: 120_000 });
    const changes: unknown[] = [];
    snapshots.onChange((change) => changes.push(change));
    await snapshots.get(gatewayScope());
    await services.stop();
    await until(() => snapshots.environmentCount() === 0, 'the end of the stream', 10_000);
    // The stream ended: revocations may have been missed, so listeners resync.
    assert.deepEqual(changes, [{ environmentId: a.environmentId, resync: true }]);

    const stoppedMembership = new RemoteListMembership(`127.0.0.1:${services.grpcPort}`, grpc.credentials.createInsecure(), snapshots);
    closers.push(() => stoppedMembership.close());
    const evaluation = new EvaluationService({ segments: stoppedMembership }, snapshots);
    const contexts: EvaluationContext[] = [{ context_type: 'user', key: 'u-1', parameters: {} }];
    for (const attempt of [() => snapshots.get(gatewayScope()), () => evaluation.evaluate(gatewayScope(), { contexts })]) {
      const outcome = await Promise.race([attempt().catch((e: unknown) => e), sleep(30_000, 'still waiting', { ref: false })]);
      assert.ok(outcome instanceof DomainError, `expected a rejection, got ${String(outcome)}`);
      assert.equal(outcome.code, 'UNAVAILABLE');
    }
    assert.equal(snapshots.environmentCount(), 0);
  });
});
