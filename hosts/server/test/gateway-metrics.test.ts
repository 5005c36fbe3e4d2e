import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createFlag, evaluate, onOffFlag } from './support/flag-client.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/** The gateway's own /metrics (docs/architecture.md "The gateway hop"): its REST traffic, its evaluations, and its calls to the services. */

let ts: TestServer;
let client: ApiClient;
let tenant: Tenant;

/** `name{labels} value` lines of a Prometheus exposition, as [name, labels text, value]. */
async function scrape(port: number): Promise<Array<[string, string, number]>> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  assert.equal(response.status, 200);
  const lines = (await response.text()).split('\n').filter((line) => line !== '' && !line.startsWith('#'));
  return lines.map((line) => {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(line);
    assert.ok(match, line);
    return [match[1]!, match[2] ?? '', Number(match[3])];
  });
}

const total = (samples: Array<[string, string, number]>, name: string, ...labelParts: string[]): number =>
  samples.filter(([n, labels]) => n === name && labelParts.every((part) => labels.includes(part))).reduce((sum, [, , value]) => sum + value, 0);

before(async () => {
  ts = await startTestServer({}, { topology: 'split' });
  client = api(ts.base);
  const root = await loginAdmin(client);
  tenant = await seedTenant(client, root.token, 'gateway-metrics');
});

after(async () => {
  await ts?.stop();
});

describe('gateway metrics', () => {
  test('calls to the services are counted and timed by service, method and code', async () => {
    const before = await scrape(ts.gateway!.httpPort);
    expectStatus(await client.get(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token }), 200);
    expectStatus(await client.get(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.member.token }), 200);
    const denied = await client.post(`/v1/management/orgs/${tenant.orgId}/projects`, { token: tenant.member.token, body: { name: 'nope' } });
    assert.equal(denied.status, 403);
    const after = await scrape(ts.gateway!.httpPort);
    const service = 'service="svc.management.v1.ManagementGatewayService"';
    const ok = (samples: Array<[string, string, number]>) => total(samples, 'switchyard_services_calls_total', service, 'method="ListEnvironments"', 'code="OK"');
    assert.equal(ok(after) - ok(before), 2);
    const deniedCount = (samples: Array<[string, string, number]>) => total(samples, 'switchyard_services_calls_total', service, 'method="CreateProject"', 'code="PERMISSION_DENIED"');
    assert.equal(deniedCount(after) - deniedCount(before), 1);
    const timed = (samples: Array<[string, string, number]>) => total(samples, 'switchyard_services_call_duration_seconds_count', service, 'method="ListEnvironments"');
    assert.equal(timed(after) - timed(before), 2);
  });

  test('evaluations are counted where they happen: on the gateway, with no call to the services per evaluation', async () => {
    await createFlag(client, tenant.admin.token, tenant.environmentId, onOffFlag('metered'));
    expectStatus(await evaluate(client, tenant.rawKey, tenant.environmentId, 'u0', { flag_key: 'metered' }), 200);
    const before = await scrape(ts.gateway!.httpPort);
    for (let i = 1; i <= 5; i++) expectStatus(await evaluate(client, tenant.rawKey, tenant.environmentId, `u${i}`, { flag_key: 'metered' }), 200);
    const after = await scrape(ts.gateway!.httpPort);
    const evaluations = (samples: Array<[string, string, number]>) => total(samples, 'switchyard_evaluations_total');
    assert.equal(evaluations(after) - evaluations(before), 5);
    const hops = (samples: Array<[string, string, number]>) => total(samples, 'switchyard_services_calls_total');
    assert.equal(hops(after) - hops(before), 0, 'an evaluation with a cached key and held definitions calls nothing');
  });
});
