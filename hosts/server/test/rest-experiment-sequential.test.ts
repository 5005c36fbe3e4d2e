import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually } from './support/flag-fixtures.ts';
import { ACTIVE, createExperiment, experimentPath, moveThrough, prepareEnvironment } from './support/experiment-fixtures.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Issue 39 through the product: an experiment with sequential testing and a guardrail, recomputed
 * by the server's worker at two looks. The running always-valid values are checked against the
 * closed forms of docs/statistics.md §2 and §9 worked out below (not the engine's code), and the
 * start of a guardrail's failing is one change-history entry per iteration and metric.
 */

let ts: TestServer;
let client: ApiClient;
let a: Tenant;

before(async () => {
  ts = await startTestServer({ STATS_POLL_MS: '25', STATS_INTERVAL_MS: '3600000' }, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'sequential');
  await prepareEnvironment(client, a);
});
after(() => ts.stop());

async function post(path: string, body: unknown): Promise<void> {
  const answer = expectStatus(await client.post(`/v1/environments/${a.environmentId}/${path}`, { sdkKey: a.rawKey, body }), 202, path);
  assert.deepEqual(answer.rejected_keys, [], `${path}: nothing rejected`);
}

async function recomputeAndWait(experimentId: string): Promise<Json> {
  const queued = expectStatus(await client.post(`/v1/experiments/${experimentId}/recompute`, { token: a.member.token }), 202);
  let finished: Json = {};
  await eventually('the job to finish', async () => {
    finished = expectStatus(await client.get(`/v1/jobs/${queued.job_id}`, { token: a.member.token }), 200);
    return finished.status === 'completed' || finished.status === 'failed';
  }, 15_000);
  assert.equal(finished.status, 'completed', finished.error);
  return expectStatus(await client.get(`${experimentPath(a.environmentId, experimentId)}/results`, { token: a.member.token }), 200);
}

/** Conversion of k of n: mean k/n, sample variance with the n − 1 denominator (docs/statistics.md). */
const conversion = (k: number, n: number): [number, number, number] => [n, k / n, ((k / n) * (1 - k / n) * n) / (n - 1)];
/** §2: r = (ȳT − ȳC)/|ȳC|, V = s²T/(nT ȳC²) + ȳT² s²C/(nC ȳC⁴). */
function relative([nC, mC, sC]: [number, number, number], [nT, mT, sT]: [number, number, number]) {
  return { r: (mT - mC) / Math.abs(mC), v: sT / (nT * mC * mC) + (mT * mT * sC) / (nC * mC ** 4) };
}
/** §9 two-sided normal mixture at α, N*: p = min(1, 1/e), interval r ± b√V. */
function twoSided(r: number, v: number, n: number, alpha: number, tuningN: number) {
  const l = -2 * Math.log(alpha);
  const mix = (n * (l + Math.log(l + 1))) / tuningN;
  const z = r / Math.sqrt(v);
  const p = Math.min(1, Math.exp(-((mix * z * z) / (2 * (1 + mix)) - 0.5 * Math.log(1 + mix))));
  const b = Math.sqrt(((1 + mix) / mix) * (Math.log(1 + mix) - 2 * Math.log(alpha)));
  return { p, low: r - b * Math.sqrt(v), high: r + b * Math.sqrt(v) };
}
const close = (actual: unknown, expected: number, what: string) =>
  assert.ok(typeof actual === 'number' && Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected)), `${what}: ${String(actual)} vs ${expected}`);

describe('sequential testing and guardrails through the worker', () => {
  test('two looks: running minimum p and interval intersection carried; the guardrail failing is recorded once', async () => {
    const experiment = await createExperiment(client, a, {
      metrics: [
        { event_key: 'purchase', aggregation: 'conversion' },
        { key: 'revenue-guard', event_key: 'revenue', aggregation: 'conversion', guardrail: { margin: 0.05 } },
      ],
      analysis: { sequential: { tuning_n: 5000 } },
    });
    await moveThrough(client, a, experiment.id, [ACTIVE]);
    const [iteration] = expectStatus(await client.get(`${experimentPath(a.environmentId, experiment.id)}/iterations`, { token: a.admin.token }), 200);
    const t = iteration.started_at_ms as number;

    // Look 1: 1000 per arm; purchase 100 vs 200 converters; revenue 500 vs 100 participants (a harm far beyond 5 %).
    const look = async (from: number, to: number, purchase: [number, number], revenue: [number, number]) => {
      const exposures: Json[] = [];
      const events: Json[] = [];
      for (let i = from; i < to; i += 1) {
        for (const [variant, prefix, arm] of [['control', 'c', 0], ['treatment', 't', 1]] as const) {
          exposures.push({ flag_key: 'checkout', variant_key: variant, context_type: 'user', context_key: `${prefix}-${i}`, timestamp_ms: t + i });
          if (i - from < purchase[arm]) events.push({ metric_key: 'purchase', context_type: 'user', context_key: `${prefix}-${i}`, value: true, timestamp_ms: t + 10_000 });
          if (i - from < revenue[arm]) events.push({ metric_key: 'revenue', context_type: 'user', context_key: `${prefix}-${i}`, value: 10, timestamp_ms: t + 10_000 });
        }
      }
      await post('exposures', { exposures });
      for (let i = 0; i < events.length; i += 5000) await post('events/batch', { events: events.slice(i, i + 5000) });
    };
    await look(0, 1000, [100, 200], [500, 100]);
    const first = await recomputeAndWait(experiment.id);
    const treatment1 = first.variant_results.find((v: Json) => v.variant_key === 'treatment').metric_stats;
    const e1 = relative(conversion(100, 1000), conversion(200, 1000));
    const s1 = twoSided(e1.r, e1.v, 2000, 0.05, 5000);
    close(treatment1.purchase.sequential.estimate, 1, 'estimate 1 (a 100 % lift)');
    close(treatment1.purchase.sequential.p_value, s1.p, 'p 1');
    close(treatment1.purchase.sequential.ci_low, s1.low, 'low 1');
    close(treatment1.purchase.sequential.ci_high, s1.high, 'high 1');
    assert.equal(treatment1.purchase.verdict, 'better');
    assert.equal(treatment1['revenue-guard'].guardrail_status, 'failing');
    assert.equal(typeof first.sequential_srm_p_value, 'number');

    // Look 2: 1000 more per arm with no difference in purchases (totals 200/2000 vs 300/2000).
    await look(1000, 2000, [100, 100], [500, 500]);
    const second = await recomputeAndWait(experiment.id);
    const treatment2 = second.variant_results.find((v: Json) => v.variant_key === 'treatment').metric_stats;
    const e2 = relative(conversion(200, 2000), conversion(300, 2000));
    const s2 = twoSided(e2.r, e2.v, 4000, 0.05, 5000);
    close(treatment2.purchase.sequential.estimate, 0.5, 'estimate 2 (the latest look)');
    close(treatment2.purchase.sequential.p_value, Math.min(s1.p, s2.p), 'running minimum p');
    close(treatment2.purchase.sequential.ci_low, Math.max(s1.low, s2.low), 'running intersection, low');
    close(treatment2.purchase.sequential.ci_high, Math.min(s1.high, s2.high), 'running intersection, high');
    assert.ok(s2.high < s1.high, 'look 2 narrowed the interval (so the intersection is not look 1 alone)');
    assert.equal(treatment2.purchase.verdict, 'better');
    assert.equal(treatment2['revenue-guard'].guardrail_status, 'failing');
    // The internal running state is never answered.
    assert.equal('running_state' in second, false);

    // One change-history entry for the guardrail, though it failed at both looks.
    const log = expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/audit-log?resource_id=${experiment.id}`, { token: a.admin.token }), 200);
    const failing = log.entries.filter((entry: Json) => entry.action === 'experiment.guardrail_failing');
    assert.equal(failing.length, 1);
    assert.equal(failing[0].details.metric_key, 'revenue-guard');
    assert.equal(failing[0].actor.type, 'system');
    assert.deepEqual(failing[0].details.variants.map((v: Json) => v.variant_key), ['treatment']);
  });
});
