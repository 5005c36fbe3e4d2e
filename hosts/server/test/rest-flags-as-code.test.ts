import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { api, expectError, expectStatus, loginAdmin, seedTenant, seedUser, unique, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Flags as code (issue 37, docs/flags-as-code.md): export and import of a project's document in
// both topologies. The expected answers are written by hand from the document rules: a field
// left out is left as it is, an import is one transaction (a refusal or a dry run writes nothing),
// the answer names exactly what changed, and the changes go through the same checks and change
// history as a person's writes.

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;

const FORMAT = 'switchyard.flags/v1';
const exportPath = (tenant: Tenant, query = '') => `/v1/projects/${tenant.projectId}/export${query}`;
const importPath = (tenant: Tenant, query = '') => `/v1/projects/${tenant.projectId}/import${query}`;
const importAs = (tenant: Tenant, body: unknown, query = '', token = tenant.admin.token) => client.post(importPath(tenant, query), { token, body });
const summary = (outcome: Json) => ({
  created: outcome.created.map((c: Json) => `${c.kind}:${c.environment ?? ''}:${c.key}`).sort(),
  changed: outcome.changed.map((c: Json) => `${c.kind}:${c.environment ?? ''}:${c.key}`).sort(),
  deleted: outcome.deleted.map((c: Json) => `${c.kind}:${c.environment ?? ''}:${c.key}`).sort(),
  refused: outcome.refused.map((c: Json) => `${c.kind}:${c.environment ?? ''}:${c.key}`).sort(),
});

const checkout = {
  key: 'new-checkout',
  description: 'The new checkout',
  value_type: 'bool',
  variants: [
    { key: 'on', value: true },
    { key: 'off', value: false },
  ],
};
const banner = { key: 'banner', value_type: 'string', variants: [{ key: 'blue', value: 'blue' }, { key: 'red', value: 'red' }] };

const documentV1 = {
  format: FORMAT,
  flags: [checkout, banner],
  environments: {
    production: {
      flags: {
        'new-checkout': {
          enabled: true,
          off_variant_key: 'off',
          rules: [
            { id: 'beta', segment_keys: ['beta-users'], conditions: [], variant_key: 'on' },
            { id: 'rest', conditions: [], variant_key: 'off' },
          ],
        },
        banner: { enabled: true, off_variant_key: 'blue', prerequisites: [{ flag_key: 'new-checkout', variant_keys: ['on'] }], rules: [{ id: 'all', conditions: [], variant_key: 'red' }] },
      },
      segments: [{ key: 'beta-users', kind: 'list', context_type: 'user', included_keys: ['u1', 'u2'] }],
      event_definitions: [{ key: 'purchase', value_type: 'double', description: 'Order total' }],
    },
  },
};

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'fac-a');
  b = await seedTenant(client, root.token, 'fac-b');
});
after(() => ts.stop());

describe('POST /v1/projects/{id}/import and GET .../export', () => {
  test('a dry run answers the exact difference and writes nothing; the import then writes it in one go', async () => {
    const dry = expectStatus(await importAs(a, documentV1, '?dry_run=true'), 200, 'dry run');
    assert.equal(dry.dry_run, true);
    assert.equal(dry.applied, false);
    const expected = {
      created: [
        'event_definition:production:purchase',
        'flag::banner',
        'flag::new-checkout',
        'segment:production:beta-users',
      ],
      // A flag created on the project route exists in every environment (version 0); its configuration there then changes.
      changed: ['flag_environment:production:banner', 'flag_environment:production:new-checkout'],
      deleted: [],
      refused: [],
    };
    assert.deepEqual(summary(dry), expected);
    assert.equal(expectStatus(await client.get(`/v1/environments/${a.environmentId}/flags`, { token: a.admin.token }), 200).length, 0, 'the dry run wrote nothing');

    const applied = expectStatus(await importAs(a, documentV1), 200, 'import');
    assert.equal(applied.applied, true);
    assert.deepEqual(summary(applied), expected, 'the import did what the dry run said');
    const config = applied.changed.find((c: Json) => c.key === 'banner');
    assert.deepEqual(config.after.prerequisites, [{ flag_key: 'new-checkout', variant_keys: ['on'] }]);
    assert.equal(config.after.enabled, true);

    const flag = expectStatus(await client.get(`/v1/environments/${a.environmentId}/flags/new-checkout`, { token: a.admin.token }), 200);
    assert.equal(flag.enabled, true);
    assert.equal(flag.rules[0].segment_keys[0], 'beta-users');
    const segment = expectStatus(await client.get(`/v1/environments/${a.environmentId}/segments/beta-users`, { token: a.admin.token }), 200);
    assert.equal(segment.included_count, 2);

    // The same document again changes nothing, and writes no history.
    const again = expectStatus(await importAs(a, documentV1), 200, 'import again');
    assert.deepEqual(summary(again), { created: [], changed: [], deleted: [], refused: [] });
  });

  test('the export reads back what was imported, and imports into another project unchanged', async () => {
    const exported = expectStatus(await client.get(exportPath(a), { token: a.member.token }), 200, 'export');
    assert.equal(exported.format, FORMAT);
    assert.deepEqual(exported.flags.map((f: Json) => f.key).sort(), ['banner', 'new-checkout']);
    const production = exported.environments.production;
    assert.deepEqual(production.segments, [{ key: 'beta-users', kind: 'list', context_type: 'user', description: '', included_keys: ['u1', 'u2'], excluded_keys: [] }]);
    assert.deepEqual(production.event_definitions, [{ key: 'purchase', value_type: 'double', description: 'Order total', client_allowed: false }]);
    assert.equal(production.flags.banner.prerequisites[0].flag_key, 'new-checkout');
    assert.equal(exported.flags[0].version, undefined, 'versions only when asked');

    const copied = expectStatus(await importAs(b, exported), 200, 'import into b');
    assert.equal(copied.applied, true);
    const round = expectStatus(await client.get(exportPath(b), { token: b.admin.token }), 200);
    assert.deepEqual(round, exported, "b's export equals a's");
  });

  test('a refusal writes nothing: 409 with every reason, and the rest of the answer', async () => {
    const bad = {
      format: FORMAT,
      flags: [{ key: 'fresh', value_type: 'bool', variants: [{ key: 'on', value: true }] }, { key: 'broken', value_type: 'bool', variants: [{ key: 'x', value: 'not a bool' }] }],
      environments: {
        production: { flags: { 'new-checkout': { rules: [{ id: 'r', conditions: [], segment_keys: ['no-such-segment'], variant_key: 'on' }] } } },
        staging: { flags: {} },
      },
    };
    const response = await importAs(a, bad);
    assert.equal(response.status, 409);
    const body = response.body as Json;
    assert.equal(body.code, 'FAILED_PRECONDITION');
    assert.equal(body.applied, false);
    assert.deepEqual(summary(body).refused, ['environment::staging', 'flag::broken', 'flag_environment:production:new-checkout']);
    assert.match(body.refused.find((r: Json) => r.key === 'new-checkout').error, /no-such-segment/);
    assert.deepEqual(summary(body).created, ['flag::fresh'], 'what would have been created is still shown');
    const flags = expectStatus(await client.get(`/v1/projects/${a.projectId}/flags`, { token: a.admin.token }), 200);
    assert.ok(!flags.some((f: Json) => f.key === 'fresh'), 'nothing was written');
  });

  test('versions: an entry whose stored version moved on is refused', async () => {
    const exported = expectStatus(await client.get(exportPath(a, '?include_versions=true'), { token: a.admin.token }), 200, 'export with versions');
    const version = exported.environments.production.flags['new-checkout'].version;
    assert.ok(Number.isInteger(version) && version > 0);
    // Someone changes the flag after the export.
    expectStatus(await client.request('PUT', `/v1/environments/${a.environmentId}/flags/new-checkout`, { token: a.admin.token, body: { enabled: false } }), 200, 'edit');
    const response = await importAs(a, exported);
    assert.equal(response.status, 409);
    const refusal = (response.body as Json).refused.find((r: Json) => r.key === 'new-checkout');
    assert.equal(refusal.code, 'ABORTED');
    assert.equal(refusal.environment, 'production');
  });

  test('prune deletes what the document leaves out; without prune it stays', async () => {
    const tenant = await seedTenant(client, (await loginAdmin(client)).token, 'fac-prune');
    expectStatus(await importAs(tenant, documentV1), 200, 'seed');
    const smaller = { format: FORMAT, flags: [checkout], environments: { production: { flags: { 'new-checkout': { rules: [{ id: 'rest', conditions: [], variant_key: 'off' }] } }, segments: [], event_definitions: [] } } };
    // banner names new-checkout as a prerequisite and is deleted; beta-users loses its last user.
    const kept = expectStatus(await importAs(tenant, smaller, '?dry_run=true'), 200);
    assert.deepEqual(summary(kept).deleted, []);
    const pruned = expectStatus(await importAs(tenant, smaller, '?prune=true'), 200, 'prune');
    assert.deepEqual(summary(pruned).deleted, ['event_definition:production:purchase', 'flag::banner', 'segment:production:beta-users']);
    assert.deepEqual(pruned.deleted.find((d: Json) => d.key === 'banner').before.value_type, 'string');
  });

  test('the change history names each change, made by the importer', async () => {
    const tenant = await seedTenant(client, (await loginAdmin(client)).token, 'fac-history');
    expectStatus(await importAs(tenant, documentV1), 200, 'import');
    const history = expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/audit-log?limit=100`, { token: tenant.admin.token }), 200, 'history');
    const actions = (history.entries as Json[]).map((entry) => `${entry.action}:${entry.resource_id}`).sort();
    for (const expected of ['event_definition.create:purchase', 'flag.create:banner', 'flag.create:new-checkout', 'flag.update:banner', 'flag.update:new-checkout', 'segment.create:beta-users']) {
      assert.ok(actions.includes(expected), `${expected} in ${actions.join(', ')}`);
    }
  });
});

describe('flags as code: flag metadata', () => {
  test('tags, lifetime, maintainer and bucket_by are imported, exported, and changed like any field', async () => {
    const tenant = await seedTenant(client, (await loginAdmin(client)).token, 'fac-meta');
    const flag = { ...checkout, tags: ['q3', 'checkout'], lifetime: 'temporary', maintainer: 'payments-team', bucket_by: 'project' };
    expectStatus(await importAs(tenant, { format: FORMAT, flags: [flag] }), 200, 'import');
    const exported = expectStatus(await client.get(exportPath(tenant), { token: tenant.admin.token }), 200);
    const written = exported.flags.find((f: Json) => f.key === 'new-checkout');
    // Tags are kept sorted (docs/contract.md "Flag metadata").
    assert.deepEqual([written.tags, written.lifetime, written.maintainer, written.bucket_by], [['checkout', 'q3'], 'temporary', 'payments-team', 'project']);
    const changed = expectStatus(await importAs(tenant, { format: FORMAT, flags: [{ key: 'new-checkout', tags: ['checkout'], lifetime: 'permanent' }] }), 200, 'change');
    assert.deepEqual(changed.changed, [{ kind: 'flag', key: 'new-checkout', before: { tags: ['checkout', 'q3'], lifetime: 'temporary' }, after: { tags: ['checkout'], lifetime: 'permanent' } }]);
    const refused = await importAs(tenant, { format: FORMAT, flags: [{ key: 'new-checkout', tags: ['not a tag!'] }] });
    assert.equal(refused.status, 409);
    assert.match((refused.body as Json).refused[0].error, /tag/);
  });
});

describe('flags as code: changes that need an order', () => {
  test('a document that reverses a prerequisite, drops a served variant and replaces list members applies in one go', async () => {
    const tenant = await seedTenant(client, (await loginAdmin(client)).token, 'fac-order');
    const twoFlags = (first: string[], second: string[], variants: Array<{ key: string; value: boolean }>) => ({
      format: FORMAT,
      flags: [
        { key: 'first', value_type: 'bool', variants },
        { key: 'second', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }] },
      ],
      environments: {
        production: {
          flags: {
            first: { enabled: true, off_variant_key: variants[variants.length - 1]!.key, prerequisites: first.map((key) => ({ flag_key: key, variant_keys: ['on'] })), rules: [{ id: 'all', conditions: [], variant_key: variants[0]!.key }] },
            second: { enabled: true, off_variant_key: 'off', prerequisites: second.map((key) => ({ flag_key: key, variant_keys: [variants[0]!.key] })), rules: [{ id: 'all', conditions: [], variant_key: 'on' }] },
          },
          segments: [{ key: 'beta', kind: 'list', context_type: 'user', included_keys: ['u1', 'u2', 'u3'] }],
        },
      },
    });
    // first depends on second; first serves on/off.
    const onOff = [{ key: 'on', value: true }, { key: 'off', value: false }];
    expectStatus(await importAs(tenant, twoFlags(['second'], [], onOff)), 200, 'seed');
    // Now second depends on first (a cycle if written in the document's order), and first's
    // variants become yes/no (on and off are served by its configuration until it is rewritten).
    const yesNo = [{ key: 'yes', value: true }, { key: 'no', value: false }];
    const reversed = twoFlags([], ['first'], yesNo);
    reversed.environments.production.segments[0]!.included_keys = ['u2', 'u3', 'u4', 'u5'];
    const outcome = expectStatus(await importAs(tenant, reversed), 200, 'reverse');
    assert.deepEqual(summary(outcome).refused, []);
    const definition = outcome.changed.find((c: Json) => c.kind === 'flag' && c.key === 'first');
    assert.deepEqual(definition.before.variants, onOff);
    assert.deepEqual(definition.after.variants, yesNo, 'one change from the first state to the last');
    const segment = outcome.changed.find((c: Json) => c.kind === 'segment');
    // Hand count: {u1,u2,u3} -> {u2,u3,u4,u5}: u4 and u5 added, u1 removed.
    assert.deepEqual(segment.before.included_keys, { count: 3 });
    assert.deepEqual(segment.after.included_keys, { count: 4, added: 2, removed: 1 });
    const second = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/second`, { token: tenant.admin.token }), 200);
    assert.deepEqual(second.prerequisites, [{ flag_key: 'first', variant_keys: ['yes'] }]);
  });

  test('a cycle the document itself makes is refused, and nothing is written', async () => {
    const tenant = await seedTenant(client, (await loginAdmin(client)).token, 'fac-cycle');
    const flag = (key: string) => ({ key, value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }] });
    const config = (needs: string) => ({ enabled: true, off_variant_key: 'off', prerequisites: [{ flag_key: needs, variant_keys: ['on'] }] });
    const response = await importAs(tenant, { format: FORMAT, flags: [flag('x'), flag('y')], environments: { production: { flags: { x: config('y'), y: config('x') } } } });
    assert.equal(response.status, 409);
    const refused = (response.body as Json).refused;
    assert.equal(refused.length, 1);
    assert.equal(refused[0].kind, 'flag_environment');
    assert.match(refused[0].error, /cycle/);
    assert.equal(expectStatus(await client.get(`/v1/projects/${tenant.projectId}/flags`, { token: tenant.admin.token }), 200).length, 0);
  });

  test('a critical environment: a person confirms it (X-Confirm-Environment); the refusal says how', async () => {
    const tenant = await seedTenant(client, (await loginAdmin(client)).token, 'fac-critical');
    expectStatus(await client.request('PATCH', `/v1/management/environments/${tenant.environmentId}`, { token: tenant.admin.token, body: { critical: true } }), 200, 'critical');
    const unconfirmed = await importAs(tenant, documentV1);
    assert.equal(unconfirmed.status, 409);
    // Each write into production is refused for want of the confirmation (and a rule naming a segment
    // that could not be created, for want of that segment).
    const reasons = (unconfirmed.body as Json).refused as Json[];
    assert.ok(reasons.filter((r) => /X-Confirm-Environment/.test(r.error)).length >= 3, JSON.stringify(reasons));
    assert.ok(reasons.every((r) => r.environment === 'production'));
    const confirmed = await client.post(importPath(tenant), { token: tenant.admin.token, body: documentV1, headers: { 'x-confirm-environment': tenant.environmentId } });
    assert.equal(expectStatus(confirmed, 200, 'confirmed').applied, true);
  });

  test('a list longer than the document holds is exported as members_omitted, and such a segment imports with its members untouched', async () => {
    const tenant = await seedTenant(client, (await loginAdmin(client)).token, 'fac-big');
    const segmentsPath = `/v1/environments/${tenant.environmentId}/segments`;
    expectStatus(await client.post(segmentsPath, { token: tenant.admin.token, body: { key: 'big', context_type: 'user', kind: 'list' } }), 201, 'segment');
    // 10,001 keys: one past a document list's 10,000 (two PATCHes, each within the request bound).
    for (const [from, count] of [[0, 5_001], [5_001, 5_000]] as const) {
      const keys = Array.from({ length: count }, (_, i) => `user-${from + i}`);
      expectStatus(await client.request('PATCH', `${segmentsPath}/big/members`, { token: tenant.admin.token, body: { add_included: keys } }), 200, 'members');
    }
    const exported = expectStatus(await client.get(exportPath(tenant), { token: tenant.admin.token }), 200, 'export');
    assert.deepEqual(exported.environments.production.segments, [{ key: 'big', kind: 'list', context_type: 'user', description: '', members_omitted: true }]);
    const again = expectStatus(await importAs(tenant, exported), 200, 'import');
    assert.deepEqual(summary(again), { created: [], changed: [], deleted: [], refused: [] });
    assert.equal(expectStatus(await client.get(`${segmentsPath}/big`, { token: tenant.admin.token }), 200).included_count, 10_001);
  });

  test('someone who reads one environment exports that one only', async () => {
    const tenant = await seedTenant(client, (await loginAdmin(client)).token, 'fac-partial');
    expectStatus(await client.post(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token, body: { name: 'staging' } }), 201);
    const staging = (expectStatus(await client.get(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token }), 200) as Json[]).find((e) => e.name === 'staging' || e.environment_name === 'staging');
    const stagingId = staging.environment_id ?? staging.id;
    const person = await seedUser(client, (await loginAdmin(client)).token, tenant.orgId, 'org_member', `fac-staging-${unique()}`);
    expectStatus(
      await client.request('PUT', `/v1/management/orgs/${tenant.orgId}/members/${person.userId}/role-bindings`, { token: tenant.admin.token, body: { bindings: [{ role: 'editor', environment_id: stagingId }] } }),
      200,
    );
    const exported = expectStatus(await client.get(exportPath(tenant), { token: person.token }), 200, 'export');
    assert.deepEqual(Object.keys(exported.environments), ['staging']);
    expectError(await client.get(exportPath(tenant, `?environment_ids=${tenant.environmentId}`), { token: person.token }), 403, 'PERMISSION_DENIED');
  });
});

describe('flags as code: who may and what is refused', () => {
  test("another org's project is not found; an SDK key and no credential are refused", async () => {
    expectError(await client.get(exportPath(a), { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await importAs(a, documentV1, '', b.admin.token), 404, 'NOT_FOUND');
    expectError(await client.get(exportPath(a)), 401, 'UNAUTHENTICATED');
    expectError(await client.post(importPath(a), { sdkKey: a.rawKey, body: documentV1 }), 401, 'UNAUTHENTICATED');
  });

  test('a viewer can export, and may not import (403)', async () => {
    const viewer = await seedUser(client, (await loginAdmin(client)).token, a.orgId, 'org_member', `fac-viewer-${unique()}`);
    expectStatus(await client.request('PUT', `/v1/management/orgs/${a.orgId}/members/${viewer.userId}/role-bindings`, { token: a.admin.token, body: { bindings: [{ role: 'viewer' }] } }), 200, 'make viewer');
    expectStatus(await client.get(exportPath(a), { token: viewer.token }), 200, 'a viewer exports');
    expectError(await importAs(a, { format: FORMAT, flags: [{ key: 'by-viewer', value_type: 'bool', variants: [{ key: 'on', value: true }] }] }, '', viewer.token), 403, 'PERMISSION_DENIED');
    expectError(await importAs(a, documentV1, '?dry_run=true', viewer.token), 403, 'PERMISSION_DENIED');
  });

  test('an editor of one environment only may not import (a document defines the project\'s flags)', async () => {
    const envEditor = await seedUser(client, (await loginAdmin(client)).token, a.orgId, 'org_member', `fac-enveditor-${unique()}`);
    expectStatus(
      await client.request('PUT', `/v1/management/orgs/${a.orgId}/members/${envEditor.userId}/role-bindings`, { token: a.admin.token, body: { bindings: [{ role: 'editor', environment_id: a.environmentId }] } }),
      200,
      'environment editor',
    );
    expectError(await importAs(a, documentV1, '', envEditor.token), 403, 'PERMISSION_DENIED');
  });

  test('bad documents: 400 naming the problem, before any work', async () => {
    expectError(await importAs(a, { format: 'switchyard.flags/v0' }), 400, 'INVALID_ARGUMENT', /format/);
    expectError(await importAs(a, { format: FORMAT, flags: [{ key: 'x', colour: 'red' }] }), 400, 'INVALID_ARGUMENT', /colour|additional/);
    expectError(await importAs(a, { format: FORMAT, flags: [{ key: 'bad key!' }] }), 400, 'INVALID_ARGUMENT');
    expectError(await importAs(a, { format: FORMAT, flags: [checkout, checkout] }), 400, 'INVALID_ARGUMENT', /twice/);
    expectError(await importAs(a, [1, 2]), 400, 'INVALID_ARGUMENT');
    expectError(await client.get(exportPath(a, '?environment_ids=not-an-environment'), { token: a.admin.token }), 400, 'INVALID_ARGUMENT', /environment_ids/);
    expectError(await client.get(exportPath(a, `?environment_ids=${b.environmentId}`), { token: a.admin.token }), 400, 'INVALID_ARGUMENT', /environment_ids/);
  });

  test('a document over the size limit is refused with 413', async () => {
    const huge = Buffer.from(JSON.stringify({ format: FORMAT, flags: [{ key: 'big', description: 'x'.repeat(4 * 1024 * 1024) }] }));
    const answer = await postRaw(`${ts.base}${importPath(a)}`, a.admin.token, huge);
    assert.equal(answer.status, 413, answer.body);
    assert.equal(JSON.parse(answer.body).code, 'RESOURCE_EXHAUSTED');
  });
});

/**
 * A POST of a body larger than the limit, as a careful client sends it: the headers first (the
 * server refuses on Content-Length alone), the body only if no answer came within a second. Sending
 * it at once races the server's early answer and close (EPIPE before the 413 is read).
 */
function postRaw(url: string, token: string, body: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': body.length } });
    const sendBody = setTimeout(() => request.end(body), 1_000);
    request.on('response', (response) => {
      clearTimeout(sendBody);
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        request.destroy();
        resolve({ status: response.statusCode ?? 0, body: text });
      });
    });
    request.on('error', (error) => {
      clearTimeout(sendBody);
      reject(error);
    });
    request.flushHeaders();
  });
}
