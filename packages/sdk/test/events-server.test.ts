import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { ACTIVE, createExperiment, experimentPath, moveThrough, prepareEnvironment } from '../../../hosts/server/test/support/experiment-fixtures.ts';
import { eventually } from '../../../hosts/server/test/support/flag-fixtures.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from '../../../hosts/server/test/support/rest-client.ts';
import { startTestServer, type TestServer } from '../../../hosts/server/test/support/test-server.ts';
import { EventDelivery } from '../src/events/event-delivery.ts';
import type { SdkLogger } from '../src/logger.ts';

/**
 * EventDelivery against the real server: what it sends is stored, once, even when the answer to a
 * stored batch is lost and the batch is sent again; and the stored exposures and events make the
 * experiment's participants and metric values.
 */

let ts: TestServer;
let client: ApiClient;
let tenant: Tenant;
let proxy: Server;
let proxyBase: string;
/** Requests seen by the proxy: path, Idempotency-Key and the status the SDK was given. */
const forwarded: { path: string; key: string | undefined; status: number }[] = [];
/** The answer to the first events batch is replaced by a 503 after the server stored it. */
let loseFirstEventsAnswer = true;

before(async () => {
  ts = await startTestServer({ STATS_POLL_MS: '25', STATS_INTERVAL_MS: '60000' }, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  tenant = await seedTenant(client, root.token, 'sdk-events');
  await prepareEnvironment(client, tenant);

  const target = new URL(ts.base);
  proxy = createServer((req, res) => {
    const upstream = httpRequest({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('end', () => {
        let status = answer.statusCode ?? 502;
        let body = Buffer.concat(chunks);
        if (loseFirstEventsAnswer && req.url?.endsWith('/events/batch') && status === 202) {
          loseFirstEventsAnswer = false;
          status = 503;
          body = Buffer.from(JSON.stringify({ error: 'answer lost on the way back', code: 'UNAVAILABLE' }));
        }
        forwarded.push({ path: req.url ?? '', key: req.headers['idempotency-key'] as string | undefined, status });
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(body);
      });
    });
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyBase = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

after(async () => {
  proxy.closeAllConnections();
  await new Promise((resolve) => proxy.close(resolve));
  await ts.stop();
});

async function count(table: 'events' | 'exposures'): Promise<number> {
  const sql = ts.server.database.sql;
  const [row] =
    table === 'events'
      ? await sql<{ n: string }[]>`SELECT count(*) AS n FROM events WHERE org_id = ${tenant.orgId} AND environment_id = ${tenant.environmentId}`
      : await sql<{ n: string }[]>`SELECT count(*) AS n FROM exposures WHERE org_id = ${tenant.orgId} AND environment_id = ${tenant.environmentId}`;
  return Number(row?.n ?? 0);
}

test('events and exposures sent through EventDelivery are stored once each and make the experiment results', async () => {
  const experiment = await createExperiment(client, tenant, { metric_keys: ['purchase', 'revenue'] });
  await moveThrough(client, tenant, experiment.id, [ACTIVE]);
  const [iteration] = expectStatus(await client.get(`${experimentPath(tenant.environmentId, experiment.id)}/iterations`, { token: tenant.admin.token }), 200);
  const t = (iteration.started_at_ms as number) + 1;

  const lines: string[] = [];
  const logger: SdkLogger = {
    debug: (message, fields) => void lines.push(`debug ${message} ${JSON.stringify(fields ?? {})}`),
    info: (message, fields) => void lines.push(`info ${message} ${JSON.stringify(fields ?? {})}`),
    warn: (message, fields) => void lines.push(`warn ${message} ${JSON.stringify(fields ?? {})}`),
    error: (message, fields) => void lines.push(`error ${message} ${JSON.stringify(fields ?? {})}`),
  };
  const delivery = new EventDelivery({
    baseUrl: proxyBase,
    sdkKey: tenant.rawKey,
    environmentId: () => tenant.environmentId,
    maxBatchSize: 10,
    logger,
    retry: { baseDelayMs: 20, maxAttempts: 4 },
  });

  // 4 control and 6 treatment participants, each exposed over and over (one stored per context).
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 10; i++) {
      delivery.recordExposure({ flag_key: 'checkout', variant_key: i < 4 ? 'control' : 'treatment', context_type: 'user', context_key: `p-${i}`, timestamp_ms: t + round });
    }
  }
  // Control: p-0 buys. Treatment: p-4, p-5, p-6 buy, p-4 twice (revenue 10 + 5).
  const purchases: [string, number][] = [['p-0', 8], ['p-4', 10], ['p-4', 5], ['p-5', 3], ['p-6', 6]];
  for (const [key, revenue] of purchases) {
    delivery.track({ metric_key: 'purchase', context_type: 'user', context_key: key, timestamp_ms: t + 10 });
    delivery.track({ metric_key: 'revenue', context_type: 'user', context_key: key, value: revenue, timestamp_ms: t + 10 });
  }
  delivery.track({ metric_key: 'not-defined', context_type: 'user', context_key: 'p-1', value: 1, timestamp_ms: t + 10 });
  await delivery.close();

  // 11 events in batches of 10: the first batch's answer was lost, its retry carried the same key.
  const eventRequests = forwarded.filter((request) => request.path.endsWith('/events/batch'));
  assert.deepEqual(eventRequests.map((request) => request.status), [503, 202, 202]);
  assert.equal(eventRequests[0]!.key, eventRequests[1]!.key);
  assert.notEqual(eventRequests[1]!.key, eventRequests[2]!.key);
  assert.equal(await count('events'), 10, 'the batch sent twice is stored once; the undefined metric is rejected');
  assert.equal(await count('exposures'), 10, 'one exposure per context');
  assert.deepEqual(delivery.stats(), { queuedEvents: 0, queuedExposures: 0, droppedEvents: 1, droppedExposures: 0, sentEvents: 10, sentExposures: 10, failedAttempts: 1 });
  assert.ok(lines.some((line) => line.startsWith('warn') && line.includes('not-defined')), 'the rejected key is logged');
  const logged = lines.join('\n');
  assert.ok(!logged.includes(tenant.rawKey), 'the SDK key is never logged');

  const queued = expectStatus(await client.post(`/v1/experiments/${experiment.id}/recompute`, { token: tenant.member.token }), 202);
  let job: Json;
  await eventually('the recompute to finish', async () => {
    job = expectStatus(await client.get(`/v1/jobs/${queued.job_id}`, { token: tenant.member.token }), 200);
    return job.status === 'completed' || job.status === 'failed';
  }, 15_000);
  assert.equal(job.status, 'completed', job.error);
  const results = expectStatus(await client.get(`${experimentPath(tenant.environmentId, experiment.id)}/results`, { token: tenant.member.token }), 200);
  const [control, treatment] = results.variant_results;
  assert.deepEqual([control.variant_key, control.participant_count, treatment.variant_key, treatment.participant_count], ['control', 4, 'treatment', 6]);
  assert.equal(control.metric_values.purchase, 1 / 4);
  assert.equal(treatment.metric_values.purchase, 3 / 6);
  assert.equal(control.metric_values.revenue, 8 / 4);
  assert.equal(treatment.metric_values.revenue, (10 + 5 + 3 + 6) / 6);
});
