import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { after, before, describe, test } from 'node:test';
import { createFlag } from './support/flag-fixtures.ts';
import { bearer, managementClient, rejectsWithStatus } from './support/grpc-clients.ts';
import { flagClient } from './support/grpc-flag-clients.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Statuses and lifecycle stages (issue 40, docs/insights.md "Statuses and lifecycle stages"), in
// both topologies. The histories are written straight into PostgreSQL (creation and change times,
// per-environment configurations, last evaluations, a running experiment); every expected status
// and stage below is derived by hand from the definitions in docs/insights.md with the default
// thresholds (window 7 days, code removal at 30 days old, archive after 30 days unused, fallback
// 14 days unchanged), counting in days before "now".

const DAY = 86_400_000;
let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;
let staging: string;
let production: string;
const now = Date.now();
const ago = (days: number) => (now - days * DAY) / 1000;

const ALL_ON = [{ id: 'all', conditions: [], variant_key: 'on' }];
const SOME_ON = [{ id: 'pro', conditions: [{ attribute: 'plan', op: 'eq', values: ['pro'] }], variant_key: 'on' }];
const bool = (key: string) => ({ key, value_type: 'bool' as const, variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', enabled: false });

interface History {
  lifetime?: 'temporary' | 'permanent';
  archived?: boolean;
  createdDaysAgo: number;
  /** The environment state: changed this many days ago, serving these rules (enabled) or off. */
  state: { changedDaysAgo: number; rules?: unknown[]; prerequisites?: unknown[] };
  /** Last evaluation in the tenant's environment, days ago (absent: never). */
  lastDaysAgo?: number;
}

/** Writes a flag's history: definition times, lifetime, its state in the tenant's environment, its last evaluation. */
async function history(tenant: Tenant, key: string, h: History): Promise<void> {
  const sql = ts.db.sql;
  const [flag] = await sql<{ id: string }[]>`
    UPDATE flags SET lifetime = ${h.lifetime ?? 'temporary'}, archived = ${h.archived ?? false},
      created_at = to_timestamp(${ago(h.createdDaysAgo)}::float8), updated_at = to_timestamp(${ago(h.createdDaysAgo)}::float8)
    WHERE project_id = ${tenant.projectId} AND key = ${key} RETURNING id`;
  const rules = h.state.rules ?? [];
  await sql`
    INSERT INTO flag_environment_states (flag_id, org_id, project_id, environment_id, enabled, off_variant_key, rules, prerequisites, updated_at)
    VALUES (${flag!.id}, ${tenant.orgId}, ${tenant.projectId}, ${tenant.environmentId}, ${rules.length > 0}, 'off', ${sql.json(rules as never)}, ${sql.json((h.state.prerequisites ?? []) as never)}, to_timestamp(${ago(h.state.changedDaysAgo)}::float8))
    ON CONFLICT (environment_id, flag_id) DO UPDATE SET enabled = excluded.enabled, off_variant_key = excluded.off_variant_key, rules = excluded.rules,
      prerequisites = excluded.prerequisites, updated_at = excluded.updated_at`;
  if (h.lastDaysAgo !== undefined) {
    await sql`
      INSERT INTO flag_evaluation_last (environment_id, flag_id, org_id, project_id, last_evaluated_at)
      VALUES (${tenant.environmentId}, ${flag!.id}, ${tenant.orgId}, ${tenant.projectId}, to_timestamp(${ago(h.lastDaysAgo)}::float8))
      ON CONFLICT (environment_id, flag_id) DO UPDATE SET last_evaluated_at = excluded.last_evaluated_at`;
  }
}

const lifecyclePath = (tenant: Tenant, query = '') => `/v1/projects/${tenant.projectId}/flag-lifecycle${query}`;
const readLifecycle = async (tenant: Tenant, query = ''): Promise<Json> => expectStatus(await client.get(lifecyclePath(tenant, query), { token: tenant.member.token }), 200, 'lifecycle');
const stagesOf = (answer: Json): Record<string, string> => Object.fromEntries(answer.flags.map((flag: Json) => [flag.key, flag.stage]));
const statusesIn = (answer: Json, environmentId: string): Record<string, string> => Object.fromEntries(answer.flags.map((flag: Json) => [flag.key, flag.environments[environmentId].status]));
const patchProject = (tenant: Tenant, token: string, body: unknown) => client.request('PATCH', `/v1/management/projects/${tenant.projectId}`, { token, body });

const A_FLAGS = ['launched', 'busy', 'dep', 'gone', 'perm', 'young', 'exp', 'shelved', 'fresh'];

before(async () => {
  ts = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', INSIGHTS_LIFECYCLE_INTERVAL_MS: '3600000' });
  ts.server.lifecycleJob.unschedule();
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'lifecycle-a');
  b = await seedTenant(client, root.token, 'lifecycle-b');
  production = a.environmentId;
  for (const key of A_FLAGS) await createFlag(ts, client, a, bool(key));
  for (const key of ['cfg_launched', 'cfg_recent', 'cfg_split']) await createFlag(ts, client, b, bool(key));
  staging = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: 'staging' } }), 201, 'staging').environment_id;
  // Tenant a: the environment evaluations come from (production) and staging.
  await history(a, 'launched', { createdDaysAgo: 60, state: { changedDaysAgo: 20, rules: ALL_ON }, lastDaysAgo: 1 });
  await history(a, 'busy', { createdDaysAgo: 60, state: { changedDaysAgo: 20, rules: SOME_ON, prerequisites: [{ flag_key: 'dep', variant_keys: ['on'] }] }, lastDaysAgo: 1 });
  await history(a, 'dep', { createdDaysAgo: 60, state: { changedDaysAgo: 20, rules: ALL_ON }, lastDaysAgo: 1 });
  await history(a, 'gone', { createdDaysAgo: 90, state: { changedDaysAgo: 60 }, lastDaysAgo: 45 });
  await history(a, 'perm', { lifetime: 'permanent', createdDaysAgo: 60, state: { changedDaysAgo: 20, rules: ALL_ON }, lastDaysAgo: 1 });
  await history(a, 'young', { createdDaysAgo: 10, state: { changedDaysAgo: 10, rules: ALL_ON }, lastDaysAgo: 1 });
  await history(a, 'exp', { createdDaysAgo: 60, state: { changedDaysAgo: 20, rules: ALL_ON }, lastDaysAgo: 1 });
  await history(a, 'shelved', { archived: true, createdDaysAgo: 60, state: { changedDaysAgo: 60 } });
  await history(a, 'fresh', { createdDaysAgo: 2, state: { changedDaysAgo: 2 } });
  await ts.db.sql`
    INSERT INTO experiments (org_id, project_id, environment_id, name, flag_key, status, control_variant_key, metrics, analysis)
    VALUES (${a.orgId}, ${a.projectId}, ${production}, 'exp', 'exp', 'EXPERIMENT_STATUS_ACTIVE', 'off', '[]', '{}')`;
  // Staging: no configuration written; 'launched' evaluated there 2 days ago.
  await ts.db.sql`DELETE FROM flag_environment_states WHERE environment_id = ${staging}`;
  await ts.db.sql`
    INSERT INTO flag_evaluation_last (environment_id, flag_id, org_id, project_id, last_evaluated_at)
    SELECT ${staging}, id, org_id, project_id, to_timestamp(${ago(2)}::float8) FROM flags WHERE project_id = ${a.projectId} AND key = 'launched'`;
  // Production is critical: only it counts.
  expectStatus(await client.request('PATCH', `/v1/management/environments/${production}`, { token: a.admin.token, body: { critical: true } }), 200, 'critical');
  // Tenant b: no evaluation data at all (the configuration fallback).
  await history(b, 'cfg_launched', { createdDaysAgo: 60, state: { changedDaysAgo: 20, rules: ALL_ON } });
  await history(b, 'cfg_recent', { createdDaysAgo: 60, state: { changedDaysAgo: 5, rules: ALL_ON } });
  await history(b, 'cfg_split', { createdDaysAgo: 60, state: { changedDaysAgo: 20, rules: SOME_ON } });
});
after(() => ts.stop());

describe('statuses per environment', () => {
  // Production (window from day 7): evaluated in it = active or launched (one variant, unchanged
  // since before day 7); not = new (made within it, never evaluated) or inactive.
  const production_statuses = { launched: 'launched', busy: 'active', dep: 'launched', gone: 'inactive', perm: 'launched', young: 'launched', exp: 'launched', shelved: 'inactive', fresh: 'new' };
  // Staging: only 'launched' evaluated (2 days ago; unwritten = off, one outcome, unchanged since day 60).
  const staging_statuses = { launched: 'launched', busy: 'inactive', dep: 'inactive', gone: 'inactive', perm: 'inactive', young: 'inactive', exp: 'inactive', shelved: 'inactive', fresh: 'new' };

  test('flag lists with include=insights carry status and last_evaluated_at_ms', async () => {
    const listed = expectStatus(await client.get(`/v1/environments/${production}/flags?include=insights`, { token: a.member.token }), 200, 'list');
    assert.deepEqual(Object.fromEntries(listed.map((flag: Json) => [flag.key, flag.status])), production_statuses);
    const gone = listed.find((flag: Json) => flag.key === 'gone');
    assert.ok(Math.abs(gone.last_evaluated_at_ms - (now - 45 * DAY)) < 1000);
    const stagingList = expectStatus(await client.get(`/v1/environments/${staging}/flags?include=insights`, { token: a.member.token }), 200, 'staging list');
    assert.deepEqual(Object.fromEntries(stagingList.map((flag: Json) => [flag.key, flag.status])), staging_statuses);
  });

  test('the insights route answers the status', async () => {
    for (const [key, status] of [['gone', 'inactive'], ['busy', 'active'], ['fresh', 'new'], ['launched', 'launched']]) {
      assert.equal(expectStatus(await client.get(`/v1/environments/${production}/flags/${key}/insights`, { token: a.member.token }), 200, key).status, status, key);
    }
  });

  test('the lifecycle answer carries the same statuses per environment', async () => {
    const answer = await readLifecycle(a);
    assert.deepEqual(statusesIn(answer, production), production_statuses);
    assert.deepEqual(statusesIn(answer, staging), staging_statuses);
  });
});

describe('GET /v1/projects/{project_id}/flag-lifecycle', () => {
  test('stages from the critical environment (hand-derived)', async () => {
    const answer = await readLifecycle(a);
    assert.deepEqual(answer.thresholds, { status_window_days: 7, code_removal_min_age_days: 30, archive_after_days: 30, unchanged_fallback_days: 14 });
    const [productionName] = await ts.db.sql<{ name: string }[]>`SELECT name FROM environments WHERE id = ${production}`;
    assert.deepEqual(answer.environments, [
      { id: production, name: productionName!.name, critical: true, counted: true, reports_evaluations: true },
      { id: staging, name: 'staging', critical: false, counted: false, reports_evaluations: true },
    ]);
    assert.equal(answer.truncated, false);
    assert.deepEqual(stagesOf(answer), {
      // temporary, 60 days old, launched in production: its code can go.
      launched: 'ready_for_code_removal',
      // split and changed: live.
      busy: 'live',
      // launched, but a prerequisite of busy (live): live.
      dep: 'live',
      // 90 days old, last evaluated 45 days ago (> 30): ready to archive.
      gone: 'ready_to_archive',
      perm: 'live',
      // launched but 10 days old (< 30).
      young: 'live',
      // under an ACTIVE experiment.
      exp: 'live',
      shelved: 'archived',
      fresh: 'live',
    });
    const launched = answer.flags.find((flag: Json) => flag.key === 'launched');
    assert.deepEqual(Object.keys(launched), ['key', 'lifetime', 'archived', 'stage', 'environments']);
    assert.equal(launched.lifetime, 'temporary');
    assert.equal(launched.archived, false);
    assert.ok(Math.abs(launched.environments[staging].last_evaluated_at_ms - (now - 2 * DAY)) < 1000);
    assert.equal(answer.flags.find((flag: Json) => flag.key === 'fresh').environments[production].last_evaluated_at_ms, null);
  });

  test('?stage filters', async () => {
    assert.deepEqual((await readLifecycle(a, '?stage=ready_for_code_removal')).flags.map((flag: Json) => flag.key), ['launched']);
    assert.deepEqual((await readLifecycle(a, '?stage=ready_to_archive')).flags.map((flag: Json) => flag.key), ['gone']);
    assert.deepEqual((await readLifecycle(a, '?stage=archived')).flags.map((flag: Json) => flag.key), ['shelved']);
    assert.equal((await readLifecycle(a, '?stage=live')).flags.length, 6);
  });

  test('without evaluation data the configuration decides (unchanged 14 days, one variant: launched)', async () => {
    const answer = await readLifecycle(b);
    assert.deepEqual(answer.environments.map((e: Json) => [e.counted, e.reports_evaluations]), [[true, false]]);
    // cfg_launched unchanged 20 days, one variant; cfg_recent changed 5 days ago; cfg_split serves two.
    assert.deepEqual(stagesOf(answer), { cfg_launched: 'ready_for_code_removal', cfg_recent: 'live', cfg_split: 'live' });
    // The statuses themselves read evaluations only: never evaluated, made 60 days ago.
    assert.deepEqual(statusesIn(answer, b.environmentId), { cfg_launched: 'inactive', cfg_recent: 'inactive', cfg_split: 'inactive' });
  });

  test('gRPC GetFlagLifecycle answers the same', async () => {
    const flags = flagClient(ts.server.grpcPort);
    try {
      const answer = await flags.getFlagLifecycle({ project_id: a.projectId, stage: 'ready_to_archive' }, bearer(a.member.token));
      assert.deepEqual(answer.flags.map((flag) => [flag.key, flag.stage, flag.environments[production]?.status]), [['gone', 'ready_to_archive', 'inactive']]);
      assert.equal(answer.thresholds.archive_after_days, 30);
      await rejectsWithStatus(flags.getFlagLifecycle({ project_id: a.projectId }, bearer(b.member.token)), grpc.status.NOT_FOUND);
      await rejectsWithStatus(flags.getFlagLifecycle({ project_id: a.projectId }), grpc.status.UNAUTHENTICATED);
      await rejectsWithStatus(flags.getFlagLifecycle({ project_id: a.projectId, stage: 'gone' }, bearer(a.member.token)), grpc.status.INVALID_ARGUMENT);
    } finally {
      flags.close();
    }
  });

  test('refused: another tenant, no credential, an SDK key, a bad stage, a malformed id', async () => {
    expectError(await client.get(lifecyclePath(a), { token: b.member.token }), 404, 'NOT_FOUND');
    expectError(await client.get(lifecyclePath(a), { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.get(lifecyclePath(a)), 401, 'UNAUTHENTICATED');
    assert.ok([401, 403].includes((await client.get(lifecyclePath(a), { sdkKey: a.rawKey })).status), 'an SDK key reads no lifecycle');
    expectError(await client.get(lifecyclePath(a, '?stage=stale'), { token: a.member.token }), 400, 'INVALID_ARGUMENT');
    expectError(await client.get(lifecyclePath(a, '?stage=ready_to_archive&stage=live'), { token: a.member.token }), 400, 'INVALID_ARGUMENT');
    expectError(await client.get('/v1/projects/not-a-uuid/flag-lifecycle', { token: a.member.token }), 404, 'NOT_FOUND');
  });
});

describe('lifecycle thresholds (project settings)', () => {
  test('an org admin changes some thresholds; the others keep theirs; audited; the stages follow', async () => {
    const changed = expectStatus(await patchProject(a, a.admin.token, { lifecycle: { code_removal_min_age_days: 90 } }), 200, 'patch');
    assert.deepEqual(changed.lifecycle, { status_window_days: 7, code_removal_min_age_days: 90, archive_after_days: 30, unchanged_fallback_days: 14 });
    assert.equal(changed.client_visible_default, false, 'unchanged');
    // launched is 60 days old (< 90): live now; gone (90 days, archive after 30) stays ready to archive.
    const stages = stagesOf(await readLifecycle(a));
    assert.equal(stages.launched, 'live');
    assert.equal(stages.gone, 'ready_to_archive');
    const [entry] = await ts.db.sql<{ before: Json; after: Json }[]>`
      SELECT before, after FROM audit_log WHERE org_id = ${a.orgId} AND action = 'project.update' ORDER BY seq DESC LIMIT 1`;
    assert.equal(entry!.before.lifecycle.code_removal_min_age_days, 30);
    assert.equal(entry!.after.lifecycle.code_removal_min_age_days, 90);
    expectStatus(await patchProject(a, a.admin.token, { lifecycle: { code_removal_min_age_days: 30 } }), 200, 'back');
    assert.equal(stagesOf(await readLifecycle(a)).launched, 'ready_for_code_removal');
  });

  test('refused: out of range, not whole, unknown, not an object, nothing named, a member, another tenant', async () => {
    for (const body of [
      { lifecycle: { status_window_days: 0 } },
      { lifecycle: { archive_after_days: 366 } },
      { lifecycle: { unchanged_fallback_days: 1.5 } },
      { lifecycle: { status_window_days: '7' } },
      { lifecycle: { stale_after_days: 7 } },
      { lifecycle: 7 },
      { lifecycle: [] },
      {},
    ]) {
      expectError(await patchProject(a, a.admin.token, body), 400, 'INVALID_ARGUMENT');
    }
    expectError(await patchProject(a, a.member.token, { lifecycle: { status_window_days: 8 } }), 403, 'PERMISSION_DENIED');
    expectError(await patchProject(a, b.admin.token, { lifecycle: { status_window_days: 8 } }), 404, 'NOT_FOUND');
    assert.equal((await readLifecycle(a)).thresholds.status_window_days, 7, 'nothing changed');
  });
});

describe('lifecycle thresholds over gRPC (ManagementService.UpdateProject)', () => {
  test('unset fields are unchanged; out of range refused; members refused', async () => {
    const management = managementClient(ts.server.grpcPort);
    try {
      const changed = await management.updateProject({ project_id: b.projectId, lifecycle: { unchanged_fallback_days: 30 } }, bearer(b.admin.token));
      assert.deepEqual(changed.lifecycle, { status_window_days: 7, code_removal_min_age_days: 30, archive_after_days: 30, unchanged_fallback_days: 30 });
      assert.equal(changed.client_visible_default, false);
      // cfg_launched unchanged for 20 days (< 30): the fallback no longer calls it launched.
      assert.equal(stagesOf(await readLifecycle(b)).cfg_launched, 'live');
      await rejectsWithStatus(management.updateProject({ project_id: b.projectId, lifecycle: { status_window_days: 0 } }, bearer(b.admin.token)), grpc.status.INVALID_ARGUMENT);
      await rejectsWithStatus(management.updateProject({ project_id: b.projectId, lifecycle: { status_window_days: 9 } }, bearer(b.member.token)), grpc.status.PERMISSION_DENIED);
      await rejectsWithStatus(management.updateProject({ project_id: b.projectId, lifecycle: { status_window_days: 9 } }, bearer(a.admin.token)), grpc.status.NOT_FOUND);
      const back = await management.updateProject({ project_id: b.projectId, lifecycle: { unchanged_fallback_days: 14 } }, bearer(b.admin.token));
      assert.equal(back.lifecycle?.unchanged_fallback_days, 14);
      assert.equal(stagesOf(await readLifecycle(b)).cfg_launched, 'ready_for_code_removal');
    } finally {
      management.close();
    }
  });
});

describe('the daily lifecycle job', () => {
  const entries = async (orgId: string) =>
    ts.db.sql<{ resource_id: string; details: Json; actor_type: string; actor: string }[]>`
      SELECT resource_id, details, actor_type, actor FROM audit_log WHERE org_id = ${orgId} AND action = 'flag.lifecycle_stage_changed' ORDER BY seq`;

  test('records flag.lifecycle_stage_changed once per entry into a cleanup stage, with its webhook delivery', async () => {
    expectStatus(
      await client.post(`/v1/management/orgs/${a.orgId}/webhooks`, { token: a.admin.token, body: { name: 'cleanup', url: 'http://127.0.0.1:9/hook', event_types: ['flag.lifecycle_stage_changed'] } }),
      201,
      'webhook',
    );
    const report = await ts.server.lifecycleJob.runOnce();
    assert.ok(report !== null);
    const recorded = await entries(a.orgId);
    assert.deepEqual(
      recorded.map((e) => [e.resource_id, e.details, e.actor_type, e.actor]).sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
      [
        ['gone', { stage: 'ready_to_archive', previous_stage: null }, 'system', 'lifecycle'],
        ['launched', { stage: 'ready_for_code_removal', previous_stage: null }, 'system', 'lifecycle'],
      ],
    );
    assert.deepEqual((await entries(b.orgId)).map((e) => [e.resource_id, e.details]), [['cfg_launched', { stage: 'ready_for_code_removal', previous_stage: null }]]);
    const deliveries = await ts.db.sql<{ payload: string }[]>`SELECT payload FROM webhook_deliveries WHERE org_id = ${a.orgId} AND event_type = 'flag.lifecycle_stage_changed'`;
    assert.deepEqual(deliveries.map((d) => JSON.parse(d.payload).data.resource_id).sort(), ['gone', 'launched']);

    // Again: nothing entered anything.
    await ts.server.lifecycleJob.runOnce();
    assert.equal((await entries(a.orgId)).length, 2);
    assert.equal((await entries(b.orgId)).length, 1);

    // young grows old (40 days): it enters ready_for_code_removal from live, once.
    await ts.db.sql`UPDATE flags SET created_at = to_timestamp(${ago(40)}::float8) WHERE project_id = ${a.projectId} AND key = 'young'`;
    await ts.server.lifecycleJob.runOnce();
    await ts.server.lifecycleJob.runOnce();
    const after = await entries(a.orgId);
    assert.equal(after.length, 3);
    assert.deepEqual([after[2]!.resource_id, after[2]!.details], ['young', { stage: 'ready_for_code_removal', previous_stage: 'live' }]);
  });
});
