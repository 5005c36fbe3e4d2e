import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { authClient, rejectsWithStatus } from './support/grpc-clients.ts';
import { checkHealth } from './support/grpc-health-client.ts';
import { ACTIVE, createExperiment, moveThrough, prepareEnvironment } from './support/experiment-fixtures.ts';
import { eventually } from './support/flag-fixtures.ts';
import { evaluate, inChunks } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { openSync, sdkKeyMetadata } from './support/sync-client.ts';
import { TEST_DB_POOL_SIZE } from './support/server-process.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let tenant: Tenant;
const UNKNOWN = '00000000-0000-4000-8000-000000000000';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments skipped). */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(match, `not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

async function scrape(base = ts.base): Promise<Sample[]> {
  const response = await fetch(`${base}/metrics`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parse(await response.text());
}

/** Samples named `name` whose labels include `labels`. */
const find = (samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

/** The one sample named `name` with exactly these labels (0 when absent). */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const matching = samples.filter((s) => s.name === name && Object.keys(s.labels).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  assert.ok(matching.length <= 1, `${name} ${JSON.stringify(labels)}: ${matching.length} series`);
  return matching[0]?.value ?? 0;
}

before(async () => {
  // The server's own stats worker looks once at startup and then hourly: the test runs it.
  // One instance's registry; a gateway's own metrics are checked in gateway-metrics.test.ts.
  // The production bcrypt cost: the duration test below times a password check, which at the
  // test servers' cost 4 takes about a millisecond, too little to tell from a fast answer.
  ts = await startTestServer({ STATS_POLL_MS: '3600000', PASSWORD_HASH_COST: '10' }, { topology: 'single' });
  client = api(ts.base);
  root = await loginAdmin(client);
  tenant = await seedTenant(client, root.token, 'metrics');
  await prepareEnvironment(client, tenant);
});
after(() => ts.stop());

describe('GET /metrics', () => {
  test('process metrics and every switchyard metric family are described', async () => {
    const text = await (await fetch(`${ts.base}/metrics`)).text();
    for (const family of [
      'process_cpu_user_seconds_total',
      'nodejs_eventloop_lag_seconds',
      'switchyard_http_requests_total',
      'switchyard_http_request_duration_seconds',
      'switchyard_grpc_calls_total',
      'switchyard_grpc_call_duration_seconds',
      'switchyard_evaluations_total',
      'switchyard_sync_streams',
      'switchyard_sync_messages_total',
      'switchyard_ingest_events_total',
      'switchyard_ingest_exposures_total',
      'switchyard_stats_jobs_total',
      'switchyard_stats_job_duration_seconds',
      'switchyard_db_pool_connections',
      'switchyard_db_pool_max_connections',
    ]) {
      assert.match(text, new RegExp(`^# TYPE ${family} `, 'm'), family);
    }
  });

  test('REST requests by method, route pattern and status, with a duration histogram', async () => {
    const before = await scrape();
    const jobRoute = { method: 'GET', route: '/v1/jobs/:job_id' };
    const recomputeRoute = { method: 'POST', route: '/v1/experiments/:experiment_id/recompute' };
    expectError(await client.get(`/v1/jobs/${UNKNOWN}`, { token: tenant.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.get(`/v1/jobs/${UNKNOWN}`, { token: tenant.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.post('/v1/experiments/not-a-uuid/recompute', { token: tenant.admin.token }), 400, 'INVALID_ARGUMENT');
    expectStatus(await client.get('/healthz'), 200);
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) => value(after, name, labels) - value(before, name, labels);
    assert.equal(delta('switchyard_http_requests_total', { ...jobRoute, status: '404' }), 2);
    assert.equal(delta('switchyard_http_requests_total', { ...recomputeRoute, status: '400' }), 1);
    assert.equal(delta('switchyard_http_requests_total', { method: 'GET', route: '/healthz', status: '200' }), 1);
    assert.equal(delta('switchyard_http_request_duration_seconds_count', jobRoute), 2);
    assert.equal(delta('switchyard_http_request_duration_seconds_bucket', { ...jobRoute, le: '+Inf' }), 2);
    assert.ok(value(after, 'switchyard_http_request_duration_seconds_sum', jobRoute) > 0);
    // Never the URL itself: no label value holds the job id.
    assert.equal(after.filter((s) => Object.values(s.labels).some((v) => v.includes(UNKNOWN) || v.includes('not-a-uuid'))).length, 0);
  });

  test('requests refused before their handler count under their route: bad JSON, a wrong content type, an oversized body', async () => {
    const before = await scrape();
    const route = { method: 'POST', route: '/v1/auth/login' };
    const post = (headers: Record<string, string>, body: string) => fetch(`${ts.base}/v1/auth/login`, { method: 'POST', headers, body });
    assert.equal((await post({ 'content-type': 'application/json' }, '{"email":')).status, 400);
    assert.equal((await post({ 'content-type': 'application/x-www-form-urlencoded' }, 'email=x')).status, 415);
    assert.equal((await post({ 'content-type': 'application/json' }, `{"email":"${'a'.repeat(1024 * 1024)}"}`)).status, 413);
    const after = await scrape();
    const delta = (status: string) => value(after, 'switchyard_http_requests_total', { ...route, status }) - value(before, 'switchyard_http_requests_total', { ...route, status });
    assert.deepEqual([delta('400'), delta('415'), delta('413')], [1, 1, 1]);
  });

  test("a duration runs from the request's start to its answer: a password check (bcrypt) is timed, within what the client saw", async () => {
    const route = { method: 'POST', route: '/v1/auth/login' };
    const before = await scrape();
    const started = performance.now();
    expectError(await client.post('/v1/auth/login', { body: { email: root.email, password: 'not-the-password-1' } }), 401, 'UNAUTHENTICATED');
    const clientSeconds = (performance.now() - started) / 1000;
    const after = await scrape();
    const serverSeconds = value(after, 'switchyard_http_request_duration_seconds_sum', route) - value(before, 'switchyard_http_request_duration_seconds_sum', route);
    // bcrypt at cost 10 takes tens of milliseconds (more on a busy machine, never less); the
    // server cannot have taken longer than the client waited.
    assert.ok(serverSeconds >= 0.01, `server timed ${serverSeconds} s`);
    assert.ok(serverSeconds <= clientSeconds, `server ${serverSeconds} s, client ${clientSeconds} s`);
    const fastBucket = { ...route, le: '0.001' };
    assert.equal(value(after, 'switchyard_http_request_duration_seconds_bucket', fastBucket), value(before, 'switchyard_http_request_duration_seconds_bucket', fastBucket));
  });

  test('unknown URLs share one route="unmatched" series: 1,000 distinct paths stay bounded', async () => {
    const before = await scrape();
    const paths = Array.from({ length: 1000 }, (_, i) => `/no/such/route/${i}?q=${i}`);
    await inChunks(paths, 50, async (path) => expectStatus(await client.get(path), 404));
    const after = await scrape();
    const unmatched = find(after, 'switchyard_http_requests_total', { route: 'unmatched' });
    assert.deepEqual(unmatched.map((s) => s.labels), [{ method: 'GET', route: 'unmatched', status: '404' }]);
    assert.equal(unmatched[0]!.value - value(before, 'switchyard_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }), 1000);
    assert.equal(find(after, 'switchyard_http_request_duration_seconds_count', { route: 'unmatched' }).length, 1);
    assert.equal(after.filter((s) => Object.values(s.labels).some((v) => v.includes('/no/such'))).length, 0);
    // Every series of the histogram: (buckets + sum + count) per method and route, nothing per URL.
    const routes = new Set(find(after, 'switchyard_http_request_duration_seconds_count').map((s) => `${s.labels.method} ${s.labels.route}`));
    assert.ok(routes.size < 30, `${routes.size} method/route pairs`);
  });

  test('made-up HTTP methods add no series: the method label stays within the methods node:http knows', async () => {
    const before = await scrape();
    const invented = Array.from({ length: 50 }, (_, i) => `INVENTED${i}`);
    for (const method of invented) {
      // node:http's parser refuses a method it does not know before any route or hook runs (400).
      const status = await fetch(`${ts.base}/v1/jobs/${UNKNOWN}`, { method }).then((response) => response.status, () => 0);
      assert.ok(status === 400 || status === 0, `${method} answered ${status}`);
    }
    const after = await scrape();
    assert.equal(after.filter((s) => Object.values(s.labels).some((v) => v.startsWith('INVENTED'))).length, 0);
    // The scrapes themselves are counted (GET /metrics); nothing else may have appeared.
    const series = (samples: typeof before) => find(samples, 'switchyard_http_requests_total').filter((s) => s.labels.route !== '/metrics').length;
    assert.equal(series(after), series(before));
  });

  test('gRPC calls by service, method and code on both ports', async () => {
    const before = await scrape();
    assert.equal(await checkHealth(ts.server.grpcPort), 'SERVING');
    assert.equal(await checkHealth(ts.server.syncGrpcPort), 'SERVING');
    const auth = authClient(ts.server.grpcPort);
    try {
      await rejectsWithStatus(auth.loginWithPassword({ email: 'nobody@example.com', password: 'wrong-password' }), grpc.status.UNAUTHENTICATED);
    } finally {
      auth.close();
    }
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) => value(after, name, labels) - value(before, name, labels);
    assert.equal(delta('switchyard_grpc_calls_total', { service: 'grpc.health.v1.Health', method: 'Check', code: 'OK' }), 2);
    assert.equal(delta('switchyard_grpc_calls_total', { service: 'svc.auth.v1.AuthService', method: 'LoginWithPassword', code: 'UNAUTHENTICATED' }), 1);
    assert.equal(delta('switchyard_grpc_call_duration_seconds_count', { service: 'svc.auth.v1.AuthService', method: 'LoginWithPassword' }), 1);
  });

  test('evaluations by reason: one per flag evaluated', async () => {
    const before = await scrape();
    expectStatus(await evaluate(client, tenant.rawKey, tenant.environmentId, 'user-1', { flag_key: 'checkout' }), 200);
    const all = expectStatus(await evaluate(client, tenant.rawKey, tenant.environmentId, 'user-2'), 200);
    assert.equal(all.flags.length, 1);
    const after = await scrape();
    assert.equal(value(after, 'switchyard_evaluations_total', { reason: 'SPLIT' }) - value(before, 'switchyard_evaluations_total', { reason: 'SPLIT' }), 2);
    assert.equal(
      value(after, 'switchyard_http_requests_total', { method: 'POST', route: '/v1/environments/:env_id/evaluate', status: '200' }) -
        value(before, 'switchyard_http_requests_total', { method: 'POST', route: '/v1/environments/:env_id/evaluate', status: '200' }),
      2,
    );
  });

  test('ingest: accepted and rejected events of a batch', async () => {
    const before = await scrape();
    const body = {
      events: [
        { metric_key: 'purchase', context_type: 'user', context_key: 'u1' },
        { metric_key: 'purchase', context_type: 'user', context_key: 'u2' },
        { metric_key: 'never-defined', context_type: 'user', context_key: 'u3' },
        { metric_key: 'never-defined', context_type: 'user', context_key: 'u4' },
      ],
    };
    const answer = expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/events/batch`, { sdkKey: tenant.rawKey, body }), 202);
    assert.equal(answer.accepted_count, 2);
    const after = await scrape();
    const delta = (outcome: string) => value(after, 'switchyard_ingest_events_total', { outcome }) - value(before, 'switchyard_ingest_events_total', { outcome });
    assert.equal(delta('accepted'), 2);
    assert.equal(delta('rejected'), 2);
    assert.ok(find(after, 'switchyard_ingest_exposures_total', { outcome: 'accepted' }).length === 1);
  });

  test('sync streams: the open-stream gauge, messages sent, and the stream counted by its end code', async () => {
    const before = await scrape();
    const stream = openSync(ts.server.syncGrpcPort, { environment_id: tenant.environmentId }, sdkKeyMetadata(tenant.rawKey));
    await stream.next();
    const open = await scrape();
    assert.equal(value(open, 'switchyard_sync_streams'), value(before, 'switchyard_sync_streams') + 1);
    assert.ok(value(open, 'switchyard_sync_messages_total') >= value(before, 'switchyard_sync_messages_total') + 1);
    stream.cancel();
    await stream.ended;
    const calls = { service: 'svc.flags.v1.FlagSyncService', method: 'SyncDefinitions', code: 'CANCELLED' };
    await eventually('the stream to be counted as ended', async () => {
      const now = await scrape();
      return value(now, 'switchyard_sync_streams') === value(before, 'switchyard_sync_streams') && value(now, 'switchyard_grpc_calls_total', calls) === value(before, 'switchyard_grpc_calls_total', calls) + 1;
    });
  });

  test('stats jobs by status with their duration', async () => {
    const experiment = await createExperiment(client, tenant, { metric_keys: ['purchase'] });
    await moveThrough(client, tenant, experiment.id, [ACTIVE]);
    const before = await scrape();
    expectStatus(await client.post(`/v1/experiments/${experiment.id}/recompute`, { token: tenant.admin.token }), 202);
    const finished = await ts.server.statsWorker.runPending();
    assert.ok(finished.length >= 1);
    const after = await scrape();
    assert.equal(value(after, 'switchyard_stats_jobs_total', { status: 'completed' }) - value(before, 'switchyard_stats_jobs_total', { status: 'completed' }), finished.length);
    assert.equal(value(after, 'switchyard_stats_jobs_total', { status: 'failed' }), 0);
    assert.equal(value(after, 'switchyard_stats_job_duration_seconds_count') - value(before, 'switchyard_stats_job_duration_seconds_count'), finished.length);
  });

  test('database pool: connections by state from pg_stat_activity, and the pool size', async () => {
    const samples = await scrape();
    // The test server's DB_POOL_SIZE (support/server-process.ts), not production's default of 10.
    assert.equal(value(samples, 'switchyard_db_pool_max_connections'), Number(TEST_DB_POOL_SIZE));
    // At least the scrape's own query is active.
    assert.ok(value(samples, 'switchyard_db_pool_connections', { state: 'active' }) >= 1);
    for (const sample of find(samples, 'switchyard_db_pool_connections')) assert.match(sample.labels.state!, /^[a-z_()]+$/);
  });

  test('health and readiness stay as they were', async () => {
    expectStatus(await client.get('/healthz'), 200);
    expectStatus(await client.get('/readyz'), 200);
  });
});

describe('two server instances in one process', () => {
  test('each has its own registry: no clash, separate counts, process metrics in both', async () => {
    const other = await ts.startAnotherInstance();
    const otherBase = `http://127.0.0.1:${other.httpPort}`;
    const first = await scrape();
    for (let i = 0; i < 3; i++) expectStatus(await api(otherBase).get('/readyz'), 200);
    const second = await scrape(otherBase);
    const readyz = { method: 'GET', route: '/readyz', status: '200' };
    assert.equal(value(second, 'switchyard_http_requests_total', readyz), 3);
    assert.equal(value(await scrape(), 'switchyard_http_requests_total', readyz), value(first, 'switchyard_http_requests_total', readyz));
    assert.equal(find(second, 'switchyard_http_requests_total', { route: 'unmatched' }).length, 0);
    assert.ok(value(second, 'process_cpu_user_seconds_total') > 0);
    assert.ok(value(first, 'process_cpu_user_seconds_total') > 0);
  });
});
