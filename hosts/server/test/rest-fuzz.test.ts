import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { createExperiment, defineMetric, splitFlag } from './support/experiment-fixtures.ts';
import { createFlag, createSegment } from './support/flag-client.ts';
import { FUZZ_RUNS, FUZZ_SEED, FUZZ_SHRINK, LEAK_PATTERN, replayHint, seedFor } from './support/fuzz-values.ts';
import { operationsOf, requestsFor, type FuzzRequest, type Operation } from './support/rest-fuzz-requests.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from './support/rest-client.ts';
import type { Schema, SchemaValues } from './support/schema-arbitraries.ts';
import { TEST_ADMIN, startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Schema-guided fuzzing of every operation in /v1/openapi.json (docs/security.md "Input rules"):
 * with the right kind of credential (a session for management routes, an SDK key for SDK
 * routes), requests whose path and query parameters and bodies are valid or mutated — wrong
 * types, nulls, huge and odd Unicode strings (U+0000, lone surrogates), random ids, deep nesting,
 * unknown fields, bodies that are not JSON. No answer may be a 5xx, take longer than
 * REQUEST_TIMEOUT_MS, or show a stack trace or SQL; afterwards the server still serves, and no
 * request was logged as an unhandled error. The seed is fixed (support/fuzz-values.ts): a
 * failure prints how to replay it.
 */

/** Generous: a busy 2-core machine runs other suites meanwhile. A hang is what this catches. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Operations fuzzed at once (each runs its cases one after another). */
const CONCURRENCY = 4;
/** Where this test logs in itself, so the fuzzed logins' failures (throttled per address) never lock it out. */
const OWN_ADDRESS = '127.0.0.2';

// topologies: single — the gateway serves REST with the same app, edge checks and error mapping
// (packages/transport/src/http/); the services' side of the hop is fuzzed directly by
// grpc-fuzz.test.ts and tested in both topologies by gateway-hop-arguments.test.ts. A second pass
// would double the suite's longest file for little.

let ts: TestServer;
let client: ApiClient;
let tenant: Tenant;
let systemToken: string;
let doc: any;
let known: Record<string, string[]>;

async function loginFrom(email: string, password: string, orgId?: string): Promise<string> {
  const body = orgId === undefined ? { email, password } : { email, password, org_id: orgId };
  return expectStatus(await client.post('/v1/auth/login', { body, localAddress: OWN_ADDRESS }), 200, `login ${email}`).token;
}

/** The fixtures every path parameter and body field can point at: real rows, so handlers go past "not found". */
async function seedFixtures(): Promise<void> {
  const token = tenant.admin.token;
  await createFlag(client, token, tenant.environmentId, splitFlag('fuzz-flag'));
  await defineMetric(client, tenant, 'purchase', 'bool');
  await createSegment(client, token, tenant.environmentId, { key: 'fuzz-list', context_type: 'user', kind: 'list', included_keys: ['u1', 'u2'] });
  await createSegment(client, token, tenant.environmentId, { key: 'fuzz-rule', context_type: 'user', kind: 'rule', conditions: [{ attribute: 'country', op: 'eq', values: ['NL'] }] });
  const experiment = await createExperiment(client, tenant, { flag_key: 'fuzz-flag', metric_keys: ['purchase'] });
  const job = expectStatus(await client.post(`/v1/experiments/${experiment.id}/recompute`, { token }), 202, 'recompute');
  const invitation = expectStatus(await client.post(`/v1/management/orgs/${tenant.orgId}/invitations`, { token, body: { email: 'fuzz-invitee@example.com', org_role: 'org_member' } }), 201, 'invite');
  // A second key for DELETE .../sdk-keys/{sdk_key_id}: the fuzzer may revoke it, never the key it uses.
  const spare = expectStatus(await client.post(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, { token }), 201, 'spare key');
  const changeRequest = expectStatus(
    await client.post(`/v1/environments/${tenant.environmentId}/change-requests`, { token, body: { title: 'fuzz', changes: [{ flag_key: 'fuzz-flag', operations: [{ op: 'set_enabled', enabled: true }] }], submit: true } }),
    201,
    'change request',
  );
  // A scheduled change a year ahead (the fuzzer may edit or cancel it), and a flag entry to revert to.
  const executeAtMs = Date.now() + 365 * 24 * 60 * 60_000;
  const scheduled = expectStatus(
    await client.post(`/v1/environments/${tenant.environmentId}/flags/fuzz-flag/scheduled-changes`, { token, body: { execute_at_ms: executeAtMs, operations: [{ op: 'set_enabled', enabled: false }] } }),
    201,
    'scheduled change',
  );
  const history = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/fuzz-flag/history`, { token }), 200, 'history');
  known = {
    // Change requests (docs/workflow.md "Change requests and approvals"): the request id, and the fields of its bodies.
    id: [changeRequest.id],
    verdict: ['approve', 'reject', 'comment'],
    content_hash: [changeRequest.content_hash],
    change_id: [scheduled.id],
    audit_entry_id: (history.entries as Array<{ id: string }>).map((entry) => entry.id),
    org_id: [tenant.orgId],
    project_id: [tenant.projectId],
    env_id: [tenant.environmentId],
    environment_id: [tenant.environmentId],
    flag_id: ['fuzz-flag'],
    flag_key: ['fuzz-flag'],
    key: ['fuzz-flag', 'purchase', 'fuzz-list'],
    variant_key: ['control', 'treatment'],
    off_variant_key: ['control'],
    segment_id: ['fuzz-list', 'fuzz-rule'],
    segment_key: ['fuzz-list', 'fuzz-rule'],
    segment_keys: ['fuzz-list', 'fuzz-rule'],
    def_id: ['purchase'],
    metric_key: ['purchase'],
    metric_keys: ['purchase'],
    experiment_id: [experiment.id],
    job_id: [job.job_id],
    user_id: [tenant.member.userId, tenant.admin.userId],
    invitation_id: [invitation.invitation_id ?? invitation.id].filter(Boolean),
    sdk_key_id: [spare.sdk_key_id],
    context_type: ['user'],
    context_key: ['u1'],
    org_role: ['org_admin', 'org_member'],
    email: [TEST_ADMIN.email, tenant.member.email],
    from_environment_id: [tenant.environmentId],
    flag_keys: ['fuzz-flag'],
    include: ['rules', 'enabled', 'prerequisites', 'segments'],
  };
}

/** The fuzzer may log a session out or revoke what it holds: before each operation, whatever it needs is valid again. */
async function ensureCredentials(): Promise<void> {
  const alive = async (token: string) => (await client.get('/v1/auth/orgs', { token })).status === 200;
  if (!(await alive(systemToken))) systemToken = await loginFrom(TEST_ADMIN.email, TEST_ADMIN.password);
  if (!(await alive(tenant.admin.token))) tenant.admin.token = await loginFrom(tenant.admin.email, tenant.admin.password, tenant.orgId);
  const evaluate = await client.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: tenant.rawKey, body: { context_key: 'u1', context_type: 'user' } });
  if (evaluate.status === 401) {
    tenant.rawKey = expectStatus(await client.post(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, { token: tenant.admin.token }), 201, 'new sdk key').raw_key;
  }
}

function headersFor(operation: Operation, request: FuzzRequest & { garbage: string }): Record<string, string> {
  const headers: Record<string, string> = {};
  if (request.contentType !== undefined) headers['content-type'] = request.contentType;
  if (request.credential === 'none') return headers;
  if (request.credential === 'garbage') {
    headers.authorization = `Bearer ${request.garbage}`;
    headers['x-sdk-key'] = request.garbage;
    return headers;
  }
  switch (operation.credential) {
    case 'system_admin':
      headers.authorization = `Bearer ${systemToken}`;
      break;
    case 'org_admin':
      headers.authorization = `Bearer ${tenant.admin.token}`;
      break;
    case 'sdk_key':
      headers['x-sdk-key'] = tenant.rawKey;
      break;
    case 'sdk_key_bearer':
      headers.authorization = `Bearer ${tenant.rawKey}`;
      break;
    case 'none':
      break;
  }
  return headers;
}

/** Sends one request; throws (failing the property) on a 5xx, a hang, a leak or an error body without `{error, code}`. */
async function check(operation: Operation, request: FuzzRequest & { garbage: string }, statuses: Map<number, number>): Promise<void> {
  const body = operation.method === 'GET' ? undefined : request.body;
  const shown = `${operation.method} ${request.url.slice(0, 300)}${body === undefined ? '' : ` body ${body.slice(0, 300)}`}`;
  let response: Response;
  let text: string;
  try {
    response = await fetch(ts.base + request.url, {
      method: operation.method,
      headers: headersFor(operation, request),
      ...(body === undefined ? {} : { body }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    text = await response.text();
  } catch (error) {
    throw new Error(`${shown}: no answer (${(error as Error).name}: ${(error as Error).message})`);
  }
  statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
  if (response.status >= 500) throw new Error(`${shown}: answered ${response.status} ${text.slice(0, 300)}`);
  if (response.status >= 400) {
    assert.doesNotMatch(text, LEAK_PATTERN, `${shown}: the answer leaks internals: ${text.slice(0, 500)}`);
    // OFREP answers in its own error format (docs/contract.md); every other route with {error, code}.
    if (!operation.path.startsWith('/ofrep/')) {
      const parsed = JSON.parse(text) as { error?: unknown; code?: unknown };
      assert.ok(typeof parsed.error === 'string' && typeof parsed.code === 'string', `${shown}: error body ${text.slice(0, 300)}`);
    }
  }
}

before(async () => {
  ts = await startTestServer({}, { topology: 'single' });
  client = api(ts.base);
  systemToken = (await loginAdmin(client)).token;
  tenant = await seedTenant(client, systemToken, 'fuzz');
  await seedFixtures();
  doc = expectStatus(await client.get('/v1/openapi.json'), 200, 'openapi');
});
after(() => ts.stop());

describe('REST fuzzing from /v1/openapi.json', () => {
  test(`every operation, ${FUZZ_RUNS} requests each (seed ${FUZZ_SEED}): no 5xx, no hang, no leak`, async (t) => {
    const operations = operationsOf(doc);
    assert.ok(operations.length >= 80, `the document lists ${operations.length} operations`);
    const components = (doc.components?.schemas ?? {}) as Record<string, Schema>;
    const values: SchemaValues = {
      known,
      resolve: (schema) => (typeof schema.$ref === 'string' ? (components[schema.$ref.replace(/^#\/components\/schemas\//, '').replace(/#$/, '')] ?? {}) : schema),
    };
    const failures: string[] = [];
    let sent = 0;
    const statuses = new Map<number, number>();
    const started = performance.now();
    const queue = [...operations];
    const worker = async () => {
      for (let operation = queue.shift(); operation !== undefined; operation = queue.shift()) {
        const name = `${operation.method} ${operation.path}`;
        await ensureCredentials();
        const property = fc.asyncProperty(requestsFor(operation, values), async (request) => {
          sent++;
          await check(operation, request, statuses);
        });
        const details = await fc.check(property, { seed: seedFor(name), numRuns: FUZZ_RUNS, endOnFailure: !FUZZ_SHRINK });
        if (details.failed) {
          const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
          failures.push(`${name}: ${cause}\n  ${replayHint(name)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    t.diagnostic(`${operations.length} operations, ${sent} requests in ${((performance.now() - started) / 1000).toFixed(1)} s (seed ${FUZZ_SEED})`);
    t.diagnostic(`answers by status: ${[...statuses].sort(([a], [b]) => a - b).map(([status, count]) => `${status}×${count}`).join(' ')}`);
    assert.deepEqual(failures, [], `fuzzing found ${failures.length} failing operations:\n${failures.join('\n')}`);
  });

  test('the server is healthy afterwards and logged no unhandled error', async () => {
    assert.equal((await fetch(`${ts.base}/readyz`)).status, 200);
    const token = await loginFrom(tenant.admin.email, tenant.admin.password, tenant.orgId);
    // The fuzzer may have required approvals in the environment (docs/workflow.md "Change requests and approvals"): off again.
    expectStatus(await client.request('PUT', `/v1/management/environments/${tenant.environmentId}/approval-policy`, { token, body: { required: false } }), 200, 'policy');
    // The fuzzer may have deleted the seeded flag: a new one is created and read back.
    const key = `after-fuzz-${Date.now()}`;
    expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token, body: splitFlag(key) }), 201, 'create a flag');
    expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/${key}`, { token }), 200, 'read it back');
    await ensureCredentials();
    const evaluated = expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: tenant.rawKey, body: { context_key: 'u1', context_type: 'user' } }), 200, 'evaluate');
    assert.ok(evaluated !== undefined);
    const unhandled = ts.logs.filter((line) => line.includes('unhandled error'));
    assert.deepEqual(unhandled.map((line) => line.slice(0, 500)), [], 'no request ended in an unhandled error');
  });
});
