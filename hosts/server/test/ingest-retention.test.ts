import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { PgIngestStorage } from '@switchyard/postgres';
import { IngestRetention } from '@switchyard/services';
import { rejectsWithStatus } from './support/grpc-clients.ts';
import { eventClient, sdkKey, type EventClient } from './support/grpc-event-clients.ts';
import { createExperiment, defineMetric, prepareEnvironment } from './support/experiment-fixtures.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Event retention and the row quota (docs/security.md "Ingest rate limits, row quota and event
 * retention"): the pruner's run turns the default partition's rows into a partition of their own,
 * creates day partitions ahead, drops partitions past retention except those a running
 * experiment iteration still needs, and counts rows for the quota. The tests run in order: the
 * partitions they look at are the database's.
 */
const DAY = 86_400_000;
const QUOTA = 20;

let it: TestServer;
let client: ApiClient;
let admin: LoggedInUser;
let grpcEvents: EventClient;

before(async () => {
  // A day between automatic runs: only the tests run the pruner.
  it = await startTestServer({ PRUNE_INTERVAL_MS: '86400000', EVENT_ROWS_QUOTA_PER_ENVIRONMENT: String(QUOTA) });
  // Runs are made by the tests (runOnce): the scheduled first run, a minute after start, would race them on a slow machine.
  it.server.pruner.unschedule();
  client = api(it.base);
  admin = await loginAdmin(client);
  grpcEvents = eventClient(it.server.grpcPort);
});

after(async () => {
  grpcEvents.close();
  await it.stop();
});

const dayStart = (ms: number): number => ms - (ms % DAY);
/** `events_p20261127`: the name of the day partition holding `ms` (UTC), written out independently. */
function dayPartition(table: string, ms: number): string {
  const date = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${table}_p${date.getUTCFullYear()}${pad(date.getUTCMonth() + 1)}${pad(date.getUTCDate())}`;
}

interface PartitionRow {
  name: string;
  oid: number;
  bound: string;
}

async function partitionsOf(table: string): Promise<PartitionRow[]> {
  return [
    ...(await it.db.sql<PartitionRow[]>`
      SELECT c.relname AS name, c.oid::int8 AS oid, pg_get_expr(c.relpartbound, c.oid) AS bound
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = ${table}::regclass ORDER BY c.relname`),
  ];
}

async function insertEvent(environmentId: string, orgId: string, receivedAtMs: number, contextKey: string): Promise<void> {
  await it.db.sql`
    INSERT INTO events (org_id, environment_id, metric_key, context_type, context_key, value, timestamp_ms, received_at_ms)
    VALUES (${orgId}, ${environmentId}, 'clicks', 'user', ${contextKey}, 1, ${receivedAtMs}, ${receivedAtMs})`;
}

const sendEvents = (tenant: Tenant, count: number) =>
  client.post(`/v1/environments/${tenant.environmentId}/events/batch`, {
    sdkKey: tenant.rawKey,
    body: Array.from({ length: count }, (_, i) => ({ metric_key: 'clicks', context_type: 'user', context_key: `u${i}`, value: 1 })),
  });

describe('time partitions of events and exposures (PostgreSQL)', () => {
  let first: Tenant;

  test('rows of the default partition are moved out without a copy, and day partitions are created ahead', async () => {
    first = await seedTenant(client, admin.token, 'partitions');
    await defineMetric(client, first, 'clicks', 'int');
    const now = Date.now();
    // Before the first run every row lands in the default partition, old or new.
    for (const [i, age] of [200 * DAY, 10 * DAY, 0].entries()) await insertEvent(first.environmentId, first.orgId, now - age, `old-${i}`);
    expectStatus(await sendEvents(first, 1), 202);
    await it.db.sql`
      INSERT INTO exposures (org_id, environment_id, flag_key, variant_key, context_type, context_key, timestamp_ms, received_at_ms)
      VALUES (${first.orgId}, ${first.environmentId}, 'f', 'on', 'user', 'x', ${now - 5 * DAY}, ${now - 5 * DAY})`;
    const [defaultBefore] = (await partitionsOf('events')).filter((p) => p.name === 'events_default');
    assert.deepEqual((await partitionsOf('events')).map((p) => p.name), ['events_default'], 'a new database has the default partition only');

    assert.ok(await it.server.pruner.runOnce(), 'the lock was free');

    const [{ n: left } = { n: -1 }] = await it.db.sql<{ n: number }[]>`SELECT count(*)::int8 AS n FROM events_default`;
    assert.equal(left, 0, 'the default partition is empty');
    const [{ n: exposuresLeft } = { n: -1 }] = await it.db.sql<{ n: number }[]>`SELECT count(*)::int8 AS n FROM exposures_default`;
    assert.equal(exposuresLeft, 0);
    const [{ n: kept } = { n: -1 }] = await it.db.sql<{ n: number }[]>`SELECT count(*)::int8 AS n FROM events WHERE environment_id = ${first.environmentId}`;
    assert.equal(kept, 4, 'every row is still there');

    const partitions = await partitionsOf('events');
    const relabeled = partitions.find((p) => p.oid === defaultBefore!.oid);
    assert.ok(relabeled, 'the old default table itself became a range partition: no row was copied');
    const upTo = dayStart(now) + 2 * DAY;
    assert.equal(relabeled.bound, `FOR VALUES FROM (MINVALUE) TO ('${upTo}')`);
    const expected = ['events_default', relabeled.name];
    for (let day = upTo; day <= dayStart(now) + 7 * DAY; day += DAY) expected.push(dayPartition('events', day));
    assert.deepEqual(partitions.map((p) => p.name).sort(), expected.sort(), 'a partition per day up to a week ahead');
    assert.deepEqual(
      (await partitionsOf('exposures')).map((p) => p.name).filter((name) => name.startsWith('exposures_p')).sort(),
      expected.filter((name) => name.startsWith('events_p')).map((name) => name.replace('events_', 'exposures_')).sort(),
    );

    // New rows land in a range partition, not the default.
    expectStatus(await sendEvents(first, 1), 202);
    const [{ n: inDefault } = { n: -1 }] = await it.db.sql<{ n: number }[]>`SELECT count(*)::int8 AS n FROM events_default`;
    assert.equal(inDefault, 0);

    assert.ok(await it.server.pruner.runOnce());
    assert.deepEqual((await partitionsOf('events')).map((p) => p.name).sort(), expected.sort(), 'a second run changes nothing');
    assert.deepEqual(it.logs.filter((line) => line.includes('ingest retention: could not')), [], 'no step failed');
  });

  test('the row quota: an environment holding its quota is refused (409 FAILED_PRECONDITION), another goes on', async () => {
    const full = await seedTenant(client, admin.token, 'quota');
    const neighbour = await seedTenant(client, admin.token, 'quota-neighbour');
    for (const tenant of [full, neighbour]) await defineMetric(client, tenant, 'clicks', 'int');

    expectStatus(await sendEvents(full, 15), 202);
    expectStatus(await sendEvents(full, 10), 202, 'admitted below the quota: the request stores all its events');
    expectError(await sendEvents(full, 1), 409, 'FAILED_PRECONDITION', /quota of 20 event and exposure rows/);
    expectError(
      await client.post(`/v1/environments/${full.environmentId}/exposures`, { sdkKey: full.rawKey, body: { exposures: [{ flag_key: 'f', variant_key: 'on', context_type: 'user', context_key: 'u' }] } }),
      409,
      'FAILED_PRECONDITION',
    );
    await rejectsWithStatus(grpcEvents.ingest({ environment_id: full.environmentId, events: [{ metric_key: 'clicks', context_type: 'user', context_key: 'g', value: { int_value: 1 } }] }, sdkKey(full.rawKey)), grpc.status.FAILED_PRECONDITION);
    const [{ n: stored } = { n: -1 }] = await it.db.sql<{ n: number }[]>`SELECT count(*)::int8 AS n FROM events WHERE environment_id = ${full.environmentId}`;
    assert.equal(stored, 25, 'nothing refused was stored');

    expectStatus(await sendEvents(neighbour, 5), 202, 'another environment is not affected');
  });

  test('rows stored elsewhere count once the maintenance run has counted them', async () => {
    const tenant = await seedTenant(client, admin.token, 'quota-counted');
    await defineMetric(client, tenant, 'clicks', 'int');
    // Rows this instance did not store (another instance's, say): unknown to it until counted.
    for (let i = 0; i < QUOTA; i += 1) await insertEvent(tenant.environmentId, tenant.orgId, Date.now(), `elsewhere-${i}`);
    expectStatus(await sendEvents(tenant, 1), 202, 'not counted yet');

    assert.ok(await it.server.pruner.runOnce());
    await it.server.rowQuota.refresh();
    assert.equal(it.server.rowQuota.held(tenant.environmentId), QUOTA + 1, 'the count of the rows in its partitions');
    expectError(await sendEvents(tenant, 1), 409, 'FAILED_PRECONDITION');
  });

  test('partitions past retention are dropped, but not those a running experiment iteration needs; once it ends they go too', async () => {
    const tenant = await seedTenant(client, admin.token, 'retention');
    await prepareEnvironment(client, tenant);
    const experiment = await createExperiment(client, tenant, { variant_keys: ['control', 'treatment'], metric_keys: ['purchase'] });
    const now = Date.now();
    const relabeled = (await partitionsOf('events')).find((p) => p.bound.includes('MINVALUE'))!;
    // Seen from 200 days on, every partition is past the 90-day retention. An iteration that started
    // four days after today is still running: its data, and the day before it, must stay.
    const later = now + 200 * DAY;
    const iterationStart = dayStart(now) + 4 * DAY + 3_600_000;
    await it.db.sql`
      INSERT INTO experiment_iterations (experiment_id, iteration_number, started_at_ms, ended_at_ms)
      VALUES (${experiment.id}, 99, ${iterationStart}, 0)`;
    const warnings: string[] = [];
    const retention = new IngestRetention(new PgIngestStorage(it.db.sql), { retentionMs: 90 * DAY, log: (level, message) => (level === 'warn' ? warnings.push(message) : undefined) });

    const report = await retention.run(later);
    const names = (await partitionsOf('events')).map((p) => p.name);
    const gone = [relabeled.name, dayPartition('events', dayStart(now) + 2 * DAY)];
    for (const name of gone) assert.ok(!names.includes(name), `${name} ended before the day before the iteration started: dropped`);
    for (let day = dayStart(now) + 3 * DAY; day <= dayStart(now) + 7 * DAY; day += DAY) {
      assert.ok(names.includes(dayPartition('events', day)), `${dayPartition('events', day)} holds the running iteration's data (or its day before): kept`);
    }
    assert.ok(report.dropped.includes(relabeled.name));
    const [{ n: counted } = { n: -1 }] = await it.db.sql<{ n: number }[]>`SELECT count(*)::int8 AS n FROM ingest_row_counts WHERE partition_name = ${relabeled.name}`;
    assert.equal(counted, 0, 'the counts of a dropped partition go with it');
    assert.ok(names.includes(dayPartition('events', later)), 'partitions ahead of that day are created');

    await it.db.sql`UPDATE experiment_iterations SET ended_at_ms = ${now} WHERE experiment_id = ${experiment.id} AND iteration_number = 99`;
    await retention.run(later);
    const afterEnd = (await partitionsOf('events')).map((p) => p.name);
    for (let day = dayStart(now) + 3 * DAY; day <= dayStart(now) + 7 * DAY; day += DAY) {
      assert.ok(!afterEnd.includes(dayPartition('events', day)), `${dayPartition('events', day)}: the iteration ended, so it is dropped`);
    }
    const [{ n: left } = { n: -1 }] = await it.db.sql<{ n: number }[]>`SELECT count(*)::int8 AS n FROM events WHERE received_at_ms < ${later - 90 * DAY}`;
    assert.equal(left, 0, 'no row older than the retention is left');
    assert.deepEqual(warnings, [], 'no step failed');
  });
});
