import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { flagHistoryPath, readAll } from './support/audit-log.ts';
import { createFlag, createSegment, envFlags, evaluate, inChunks, patch, put, segmentsOf } from './support/flag-client.ts';
import { api, expectError, expectRefused, expectStatus, loginAdmin, seedTenant, seedUser, unique, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { createClientKey } from './support/client-fixtures.ts';
import { ACTIVE, createExperiment, defineMetric, moveThrough, splitFlag } from './support/experiment-fixtures.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Environment compare and copy over real HTTP and PostgreSQL, in both topologies (docs/contract.md
 * "Environment compare and copy"): what the comparison reports, what a copy writes (one unit of
 * work, history entries, version checks, prerequisites checked in the target, segments with
 * their members, protected targets), and each defence: other orgs, readers, other projects, the
 * list-segment and flag-key bounds, unknown keys, callers without a bearer token.
 */

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;
/** a's project: production (a.environmentId, the usual target) and staging (the usual source). */
let staging: string;
/** Another project of a's org, with one environment. */
let otherProjectEnv: string;

const compare = (target: string, from: string, token = a.admin.token) =>
  client.get(`/v1/environments/${target}/compare?from_environment_id=${encodeURIComponent(from)}`, { token });
const copy = (target: string, body: unknown, token = a.admin.token, headers: Record<string, string> = {}) =>
  client.post(`/v1/environments/${target}/copy`, { token, body, headers });
const flagIn = async (environmentId: string, key: string): Promise<Json> =>
  expectStatus(await client.get(`${envFlags(environmentId)}/${key}`, { token: a.admin.token }), 200, `read ${key}`);

const VARIANTS = [
  { key: 'on', value: 'ON' },
  { key: 'off', value: 'OFF' },
];

/** A string flag created through staging's route (production never written: version 0 there). */
async function stagingFlag(label: string, state: Record<string, unknown> = {}, environmentId = staging): Promise<string> {
  const key = `${label}-${unique()}`;
  await createFlag(client, a.admin.token, environmentId, { flag: { key, value_type: 'string', variants: VARIANTS, off_variant_key: 'off', rules: [], ...state }, enabled: true });
  return key;
}

async function newEnvironment(projectId: string, name: string): Promise<string> {
  return expectStatus(await client.post(`/v1/management/projects/${projectId}/environments`, { token: a.admin.token, body: { name } }), 201, 'create environment')
    .environment_id as string;
}

async function members(environmentId: string, key: string, list: 'included' | 'excluded'): Promise<string[]> {
  return expectStatus(await client.get(`${segmentsOf(environmentId)}/${key}/members?list=${list}`, { token: a.admin.token }), 200, 'members').keys;
}

/** Polls an evaluation until `accept` holds (snapshots refresh on the change announcement), at most 10 s. */
async function evaluatedUntil(key: string, contextKey: string, accept: (answer: Json) => boolean): Promise<Json> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const answer = expectStatus(await evaluate(client, a.rawKey, a.environmentId, contextKey, { flag_key: key }), 200, 'evaluate');
    if (accept(answer) || Date.now() > deadline) return answer;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'copy-a');
  b = await seedTenant(client, root.token, 'copy-b');
  staging = await newEnvironment(a.projectId, 'staging');
  const otherProject = expectStatus(await client.post(`/v1/management/orgs/${a.orgId}/projects`, { token: a.admin.token, body: { name: 'other' } }), 201, 'project');
  otherProjectEnv = await newEnvironment(otherProject.project_id, 'elsewhere');
});
after(() => ts.stop());

describe('compare and copy', () => {
  test('compare lists the differing fields and missing segments; copy writes them, the segments with their members; compare is then empty for the flag', async () => {
    const list = `beta-${unique()}`;
    const rule = `nz-${unique()}`;
    await createSegment(client, a.admin.token, staging, { key: list, context_type: 'user', kind: 'list', included_keys: ['u1', 'u2'], excluded_keys: ['x1'] });
    const conditions = [{ attribute: 'country', op: 'in', values: ['NZ'] }];
    await createSegment(client, a.admin.token, staging, { key: rule, context_type: 'user', kind: 'rule', conditions });
    const rules = [
      { id: 'beta', conditions: [], segment_keys: [list], variant_key: 'on' },
      { id: 'nz', conditions: [], segment_keys: [rule], variant_key: 'on' },
    ];
    const key = await stagingFlag('cmp', { rules });
    const production = await flagIn(a.environmentId, key);
    assert.equal(production.version, 0, 'production never wrote the flag');

    const compared = expectStatus(await compare(a.environmentId, staging), 200, 'compare');
    assert.equal(compared.target_environment_id, a.environmentId);
    assert.equal(compared.from_environment_id, staging);
    const entry = compared.flags.find((flag: Json) => flag.flag_key === key);
    assert.equal(entry.written, 'from_only');
    assert.equal(entry.from_version, 1);
    assert.equal(entry.target_version, 0);
    const byField = Object.fromEntries(entry.fields.map((field: Json) => [field.field, field]));
    assert.deepEqual(byField.enabled, { field: 'enabled', before: false, after: true });
    assert.deepEqual(byField.rules.after, rules);
    assert.deepEqual(byField.rules.before, production.rules);
    assert.deepEqual(entry.segments, [
      { segment_key: list, status: 'missing', kind: 'list', fields: [], members_compared: true },
      { segment_key: rule, status: 'missing', kind: 'rule', fields: [], members_compared: true },
    ]);

    // Before the copy production serves the flag's off variant (never written: disabled).
    assert.equal((await evaluatedUntil(key, 'u1', () => true)).reason, 'DISABLED');

    const copied = expectStatus(await copy(a.environmentId, { from_environment_id: staging, flag_keys: [key, key], include: ['rules', 'enabled', 'segments'] }), 200, 'copy');
    assert.deepEqual(copied.include, ['rules', 'enabled', 'segments']);
    assert.equal(copied.flags.length, 1, 'a repeated key is copied once');
    assert.equal(copied.flags[0].flag_key, key);
    assert.equal(copied.flags[0].before_version, 0);
    assert.equal(copied.flags[0].after_version, 1);
    assert.ok(copied.flags[0].fields.includes('rules') && copied.flags[0].fields.includes('enabled'));
    assert.deepEqual(
      copied.segments.map((s: Json) => [s.segment_key, s.kind, s.action, s.before_version, s.members_copied]),
      [
        [list, 'list', 'created', 0, 3],
        [rule, 'rule', 'created', 0, 0],
      ],
    );

    const written = await flagIn(a.environmentId, key);
    assert.equal(written.enabled, true);
    assert.deepEqual(written.rules, rules);
    assert.deepEqual((await members(a.environmentId, list, 'included')).sort(), ['u1', 'u2']);
    assert.deepEqual(await members(a.environmentId, list, 'excluded'), ['x1']);
    const ruleSegment = expectStatus(await client.get(`${segmentsOf(a.environmentId)}/${rule}`, { token: a.admin.token }), 200);
    assert.deepEqual(ruleSegment.conditions, conditions);

    // Announced: production's evaluation serves the copied rule to a member of the list.
    const answer = await evaluatedUntil(key, 'u1', (found) => found.variant_key === 'on');
    assert.equal(answer.variant_key, 'on');
    assert.equal((await evaluatedUntil(key, 'x1', () => true)).variant_key, 'off', 'excluded wins');

    // The flag's history in production names the copy and its source.
    const history = await readAll(client, a.admin.token, (query) => flagHistoryPath(a.environmentId, key, query));
    const entryOfCopy = history.find((item: Json) => item.action === 'flag.copy');
    assert.ok(entryOfCopy, 'a flag.copy entry');
    assert.equal(entryOfCopy.environment_id, a.environmentId);
    assert.equal(entryOfCopy.details.copied_from_environment_id, staging);
    assert.equal(entryOfCopy.details.copied_from_environment_name, 'staging');
    assert.equal(entryOfCopy.before.version, 0);
    assert.equal(entryOfCopy.after.version, 1);

    const again = expectStatus(await compare(a.environmentId, staging), 200, 'compare again');
    assert.equal(again.flags.find((flag: Json) => flag.flag_key === key), undefined, 'no difference left');
    // A second copy writes nothing: versions stay.
    const idle = expectStatus(await copy(a.environmentId, { from_environment_id: staging, flag_keys: [key], include: ['rules', 'enabled', 'segments'] }), 200, 'copy again');
    assert.deepEqual(idle.flags, [{ flag_key: key, before_version: 1, after_version: 1, fields: [] }]);
    assert.deepEqual(idle.segments, []);
  });

  test('segments that differ in the target are updated: list members replaced, rule conditions rewritten', async () => {
    const list = `upd-list-${unique()}`;
    const rule = `upd-rule-${unique()}`;
    await createSegment(client, a.admin.token, staging, { key: list, context_type: 'user', kind: 'list', included_keys: ['s1', 's2'] });
    await createSegment(client, a.admin.token, staging, { key: rule, context_type: 'user', kind: 'rule', conditions: [{ attribute: 'plan', op: 'in', values: ['pro'] }] });
    // Production has both already, differently.
    await createSegment(client, a.admin.token, a.environmentId, { key: list, context_type: 'user', kind: 'list', included_keys: ['p1'], excluded_keys: ['s2'] });
    await createSegment(client, a.admin.token, a.environmentId, { key: rule, context_type: 'user', kind: 'rule', conditions: [{ attribute: 'plan', op: 'in', values: ['free'] }] });
    const key = await stagingFlag('upd', { rules: [{ id: 'seg', conditions: [], segment_keys: [list, rule], variant_key: 'on' }] });

    const compared = expectStatus(await compare(a.environmentId, staging), 200, 'compare');
    assert.deepEqual(compared.flags.find((flag: Json) => flag.flag_key === key).segments, [
      { segment_key: list, status: 'differs', kind: 'list', fields: ['included', 'excluded'], members_compared: true },
      { segment_key: rule, status: 'differs', kind: 'rule', fields: ['conditions'], members_compared: true },
    ]);
    const copied = expectStatus(await copy(a.environmentId, { from_environment_id: staging, flag_keys: [key], include: ['rules', 'segments'] }), 200, 'copy');
    assert.deepEqual(
      copied.segments.map((s: Json) => [s.segment_key, s.action, s.members_copied]),
      [
        [list, 'updated', 2],
        [rule, 'updated', 0],
      ],
    );
    assert.deepEqual((await members(a.environmentId, list, 'included')).sort(), ['s1', 's2']);
    assert.deepEqual(await members(a.environmentId, list, 'excluded'), []);
    const ruleSegment = expectStatus(await client.get(`${segmentsOf(a.environmentId)}/${rule}`, { token: a.admin.token }), 200);
    assert.deepEqual(ruleSegment.conditions, [{ attribute: 'plan', op: 'in', values: ['pro'] }]);
    // The segments' history names the copy.
    const entries = expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/audit-log?resource_type=segment&resource_id=${list}`, { token: a.admin.token }), 200).entries;
    assert.equal(entries[0].action, 'segment.copy');
    assert.equal(entries[0].details.copied_from_environment_id, staging);
    assert.equal(entries[0].details.members_copied, 2);
  });

  test('include chooses the fields: enabled alone leaves rules; rules alone leaves enabled', async () => {
    const key = await stagingFlag('parts', { rules: [{ id: 'all', conditions: [], variant_key: 'on' }] });
    expectStatus(await copy(a.environmentId, { from_environment_id: staging, flag_keys: [key], include: ['enabled'] }), 200, 'enabled only');
    const onlyEnabled = await flagIn(a.environmentId, key);
    assert.equal(onlyEnabled.enabled, true);
    assert.notDeepEqual(onlyEnabled.rules, [{ id: 'all', conditions: [], variant_key: 'on' }]);
    expectStatus(await put(client, `${envFlags(staging)}/${key}`, { token: a.admin.token, body: { enabled: false } }), 200, 'staging off');
    const copied = expectStatus(await copy(a.environmentId, { from_environment_id: staging, flag_keys: [key], include: ['rules'] }), 200, 'rules only');
    // The flag was made with off variant 'off' in staging; production, written by the enabled-only
    // copy, has none: `rules` carries the off variant too.
    assert.deepEqual(copied.flags[0].fields, ['off_variant_key', 'rules']);
    const onlyRules = await flagIn(a.environmentId, key);
    assert.equal(onlyRules.enabled, true, 'enabled was not copied');
    assert.deepEqual(onlyRules.rules, [{ id: 'all', conditions: [], variant_key: 'on' }]);
  });

  test("a target that never wrote the flag gets the source's rules even when only its off variant differs", async () => {
    // Variants a, b. Production never writes the flag: off variant none, and its default rule serves
    // the first variant that is not the off variant: a. Staging: off variant a, and that same rule.
    const key = `derived-${unique()}`;
    await createFlag(client, a.admin.token, staging, { flag: { key, value_type: 'string', variants: [{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }], off_variant_key: 'a', rules: [] }, enabled: false });
    const shown = await flagIn(a.environmentId, key);
    assert.equal(shown.version, 0);
    assert.equal(shown.off_variant_key, null);
    assert.equal(shown.rules.length, 1);
    assert.equal(shown.rules[0].variant_key, 'a');
    expectStatus(await put(client, `${envFlags(staging)}/${key}/rules`, { token: a.admin.token, body: { rules: shown.rules } }), 202, 'staging rules');
    const copied = expectStatus(await copy(a.environmentId, { from_environment_id: staging, flag_keys: [key], include: ['rules'] }), 200, 'copy');
    assert.deepEqual(copied.flags[0].fields, ['off_variant_key']);
    // Written as copied: a first write without rules would derive them from off variant a, serving b.
    const written = await flagIn(a.environmentId, key);
    assert.equal(written.off_variant_key, 'a');
    assert.deepEqual(written.rules, shown.rules);
  });

  test('a stale version is 409 naming the flag, and nothing of the copy is written', async () => {
    const first = await stagingFlag('ver-a');
    const second = await stagingFlag('ver-b');
    expectError(
      await copy(a.environmentId, { from_environment_id: staging, flag_keys: [first, second], include: ['enabled'], versions: { [first]: 0, [second]: 3 } }),
      409,
      'ABORTED',
      new RegExp(`flag '${second}'.*expected 3, stored 0`),
    );
    assert.equal((await flagIn(a.environmentId, first)).version, 0, 'the other flag was not written either');
    const done = expectStatus(await copy(a.environmentId, { from_environment_id: staging, flag_keys: [first, second], include: ['enabled'], versions: { [first]: 0, [second]: 0 } }), 200);
    assert.deepEqual(done.flags.map((f: Json) => [f.flag_key, f.before_version, f.after_version]), [[first, 0, 1], [second, 0, 1]]);
  });

  test('all or nothing: a flag whose rules name a segment the target lacks (segments not included) refuses the whole copy', async () => {
    const segment = `only-staging-${unique()}`;
    await createSegment(client, a.admin.token, staging, { key: segment, context_type: 'user', kind: 'list', included_keys: ['u1'] });
    const plain = await stagingFlag('aon-plain');
    const named = await stagingFlag('aon-named', { rules: [{ id: 'seg', conditions: [], segment_keys: [segment], variant_key: 'on' }] });
    expectError(
      await copy(a.environmentId, { from_environment_id: staging, flag_keys: [plain, named], include: ['rules', 'enabled'] }),
      400,
      'INVALID_ARGUMENT',
      new RegExp(`flag '${named}': rules reference segments that do not exist in this environment: ${segment}`),
    );
    assert.equal((await flagIn(a.environmentId, plain)).version, 0, 'the first flag was rolled back');
  });

  test('prerequisites are checked in the target: a copy that would close a cycle there is refused; copying both ends of it is not', async () => {
    const parent = await stagingFlag('pre-parent');
    const child = await stagingFlag('pre-child', { prerequisites: [{ flag_key: parent, variant_keys: ['on'] }] });
    // In production the edge goes the other way: parent → child.
    expectStatus(await put(client, `${envFlags(a.environmentId)}/${parent}`, { token: a.admin.token, body: { flag: { prerequisites: [{ flag_key: child, variant_keys: ['on'] }] } } }), 200);
    expectError(await copy(a.environmentId, { from_environment_id: staging, flag_keys: [child], include: ['prerequisites'] }), 400, 'INVALID_ARGUMENT', /cycle/);
    assert.deepEqual((await flagIn(a.environmentId, child)).prerequisites, []);
    // Both: the child first in the request. Written one by one, child → parent would meet parent → child;
    // the copy clears the changing lists first, so only the result's graph is checked.
    const both = expectStatus(await copy(a.environmentId, { from_environment_id: staging, flag_keys: [child, parent], include: ['prerequisites'] }), 200, 'both');
    assert.deepEqual(both.flags.map((f: Json) => [f.flag_key, f.fields]), [[child, ['prerequisites']], [parent, ['prerequisites']]]);
    assert.deepEqual((await flagIn(a.environmentId, child)).prerequisites, [{ flag_key: parent, variant_keys: ['on'] }]);
    assert.deepEqual((await flagIn(a.environmentId, parent)).prerequisites, []);
  });

  test("rules that would take an ACTIVE experiment's studied rule away in the target are refused (409 naming the flag), as for a person's write", async () => {
    const key = `exp-${unique()}`;
    await createFlag(client, a.admin.token, a.environmentId, splitFlag(key));
    await defineMetric(client, a, 'purchase', 'bool');
    const experiment = await createExperiment(client, a, { flag_key: key, metric_keys: ['purchase'] });
    await moveThrough(client, a, experiment.id, [ACTIVE]);
    // Staging serves the flag's control to everyone: no split rule.
    expectStatus(await put(client, `${envFlags(staging)}/${key}/rules`, { token: a.admin.token, body: { rules: [{ id: 'all', conditions: [], variant_key: 'control' }] } }), 202, 'staging rules');
    const before = (await flagIn(a.environmentId, key)).version;
    expectError(
      await copy(a.environmentId, { from_environment_id: staging, flag_keys: [key], include: ['rules'] }),
      409,
      'FAILED_PRECONDITION',
      new RegExp(`flag '${key}': the rules of an ACTIVE experiment's flag must keep its studied rule`),
    );
    assert.equal((await flagIn(a.environmentId, key)).version, before);
    // On/off alone does not touch the rules: allowed.
    expectStatus(await copy(a.environmentId, { from_environment_id: staging, flag_keys: [key], include: ['enabled'] }), 200, 'enabled only');
  });

  test('a critical target needs the confirmation a person\'s write needs; with it the copy goes through', async () => {
    const critical = await newEnvironment(a.projectId, 'critical');
    expectStatus(await patch(client, `/v1/management/environments/${critical}`, { token: a.admin.token, body: { critical: true } }), 200, 'make critical');
    const key = await stagingFlag('crit');
    expectError(await copy(critical, { from_environment_id: staging, flag_keys: [key], include: ['enabled'] }), 409, 'FAILED_PRECONDITION', /X-Confirm-Environment/);
    assert.equal((await flagIn(critical, key)).version, 0);
    const done = expectStatus(
      await copy(critical, { from_environment_id: staging, flag_keys: [key], include: ['enabled'] }, a.admin.token, { 'x-confirm-environment': critical, 'x-change-comment': 'promote crit' }),
      200,
      'confirmed',
    );
    assert.equal(done.flags[0].after_version, 1);
    const history = await readAll(client, a.admin.token, (query) => flagHistoryPath(critical, key, query));
    assert.equal(history.find((item: Json) => item.action === 'flag.copy')?.comment, 'promote crit');
  });
});

describe('defences', () => {
  test("another org's member can neither compare nor copy, from or into a's environments (404)", async () => {
    const key = await stagingFlag('tenant');
    expectError(await compare(a.environmentId, staging, b.admin.token), 404, 'NOT_FOUND');
    expectError(await copy(a.environmentId, { from_environment_id: staging, flag_keys: [key], include: ['enabled'] }, b.admin.token), 404, 'NOT_FOUND');
    // Into b's own environment, from a's: the source is not found for b.
    expectError(await compare(b.environmentId, staging, b.admin.token), 404, 'NOT_FOUND');
    expectError(await copy(b.environmentId, { from_environment_id: staging, flag_keys: [key], include: ['enabled'] }, b.admin.token), 404, 'NOT_FOUND');
    // And a cannot pull from b.
    expectError(await copy(a.environmentId, { from_environment_id: b.environmentId, flag_keys: [key], include: ['enabled'] }), 404, 'NOT_FOUND');
    assert.equal((await flagIn(a.environmentId, key)).version, 0);
  });

  test('a viewer compares but cannot copy; an editor of the source only cannot copy into the target', async () => {
    const root = await loginAdmin(client);
    const viewer = await seedUser(client, root.token, a.orgId, 'org_member', `viewer-${unique()}`);
    const bindings = (userId: string) => `/v1/management/orgs/${a.orgId}/members/${userId}/role-bindings`;
    expectStatus(await put(client, bindings(viewer.userId), { token: a.admin.token, body: { bindings: [{ role: 'viewer' }] } }), 200, 'viewer');
    const key = await stagingFlag('reader');
    expectStatus(await compare(a.environmentId, staging, viewer.token), 200, 'a viewer compares');
    expectError(await copy(a.environmentId, { from_environment_id: staging, flag_keys: [key], include: ['enabled'] }, viewer.token), 403, 'PERMISSION_DENIED');

    const sourceEditor = await seedUser(client, root.token, a.orgId, 'org_member', `src-editor-${unique()}`);
    expectStatus(
      await put(client, bindings(sourceEditor.userId), { token: a.admin.token, body: { bindings: [{ role: 'viewer' }, { role: 'editor', environment_id: staging }] } }),
      200,
      'editor of staging',
    );
    expectError(await copy(a.environmentId, { from_environment_id: staging, flag_keys: [key], include: ['enabled'] }, sourceEditor.token), 403, 'PERMISSION_DENIED');
    // The other way round it may: staging is writable for it, production readable.
    expectStatus(await copy(staging, { from_environment_id: a.environmentId, flag_keys: [key], include: ['enabled'] }, sourceEditor.token), 200, 'into staging');
    assert.equal((await flagIn(a.environmentId, key)).version, 0);
  });

  test('no bearer token: anonymous and SDK-key callers are refused', async () => {
    const key = await stagingFlag('anon');
    const body = { from_environment_id: staging, flag_keys: [key], include: ['enabled'] };
    expectRefused(await client.post(`/v1/environments/${a.environmentId}/copy`, { body }), [401], 'anonymous copy');
    expectRefused(await client.get(`/v1/environments/${a.environmentId}/compare?from_environment_id=${staging}`), [401], 'anonymous compare');
    expectRefused(await client.post(`/v1/environments/${a.environmentId}/copy`, { sdkKey: a.rawKey, body }), [401, 403], 'SDK key copy');
    expectRefused(await client.get(`/v1/environments/${a.environmentId}/compare?from_environment_id=${staging}`, { sdkKey: a.rawKey }), [401, 403], 'SDK key compare');
    assert.equal((await flagIn(a.environmentId, key)).version, 0);
  });

  test('a client key is refused; an API token needs both environments in its scope (the source readable, the target writable)', async () => {
    const key = await stagingFlag('token');
    const body = { from_environment_id: staging, flag_keys: [key], include: ['enabled'] };
    const clientKey = await createClientKey(client, a);
    expectRefused(await client.post(`/v1/environments/${a.environmentId}/copy`, { sdkKey: clientKey.raw, body }), [401, 403], 'client key copy');
    expectRefused(await client.post(`/v1/environments/${a.environmentId}/copy`, { token: clientKey.raw, body }), [401, 403], 'client key as bearer');
    const tokenFor = async (environmentIds: string[]): Promise<string> =>
      expectStatus(await client.post(`/v1/management/orgs/${a.orgId}/api-tokens`, { token: a.admin.token, body: { name: `copy-${unique()}`, role: 'editor', scope: { environment_ids: environmentIds } } }), 201, 'token')
        .token as string;
    const productionOnly = await tokenFor([a.environmentId]);
    expectRefused(await copy(a.environmentId, body, productionOnly), [403, 404], 'source outside the token scope');
    expectRefused(await compare(a.environmentId, staging, productionOnly), [403, 404], 'compare with the source outside the scope');
    const stagingOnly = await tokenFor([staging]);
    expectRefused(await copy(a.environmentId, body, stagingOnly), [403, 404], 'target outside the token scope');
    assert.equal((await flagIn(a.environmentId, key)).version, 0);
    const both = await tokenFor([staging, a.environmentId]);
    const done = expectStatus(await copy(a.environmentId, body, both), 200, 'a token scoped to both');
    assert.equal(done.flags[0].after_version, 1);
  });

  test('a source in another project, or the target itself, is 400', async () => {
    const key = await stagingFlag('project');
    expectError(await compare(a.environmentId, otherProjectEnv), 400, 'INVALID_ARGUMENT', /another project/);
    expectError(await copy(a.environmentId, { from_environment_id: otherProjectEnv, flag_keys: [key], include: ['enabled'] }), 400, 'INVALID_ARGUMENT', /another project/);
    expectError(await copy(a.environmentId, { from_environment_id: a.environmentId, flag_keys: [key], include: ['enabled'] }), 400, 'INVALID_ARGUMENT', /same environment/);
  });

  test('bad bodies are 400 {error, code}; an unknown flag key is 404 naming it', async () => {
    const key = await stagingFlag('input');
    const base = { from_environment_id: staging, flag_keys: [key], include: ['enabled'] };
    const cases: Array<[unknown, RegExp]> = [
      [{ ...base, include: ['nope'] }, /include/],
      [{ ...base, include: [] }, /include/],
      [{ ...base, include: ['segments'] }, /include rules too/],
      [{ ...base, include: ['enabled', 'enabled'] }, /include/],
      [{ ...base, flag_keys: [] }, /flag_keys/],
      [{ ...base, flag_keys: ['not a key'] }, /flag_keys/],
      [{ ...base, versions: { other: 1 } }, /versions/],
      [{ ...base, versions: { [key]: -1 } }, /versions/],
      [{ ...base, surprise: 1 }, /surprise|additional/],
      [{ flag_keys: [key], include: ['enabled'] }, /from_environment_id/],
      ['text', /./],
    ];
    for (const [body, message] of cases) expectError(await copy(a.environmentId, body), 400, 'INVALID_ARGUMENT', message);
    expectError(await compare(a.environmentId, ''), 400, 'INVALID_ARGUMENT');
    const missing = `missing-${unique()}`;
    expectError(await copy(a.environmentId, { ...base, flag_keys: [key, missing] }), 404, 'NOT_FOUND', new RegExp(missing));
    assert.equal((await flagIn(a.environmentId, key)).version, 0);
  });

  test('flag_keys: at most 500 distinct keys (repeats count once)', async () => {
    const key = await stagingFlag('bound');
    const many = Array.from({ length: 501 }, (_, i) => `k-${i}`);
    expectError(await copy(a.environmentId, { from_environment_id: staging, flag_keys: many, include: ['enabled'] }), 400, 'INVALID_ARGUMENT', /at most 500/);
    const repeated = Array.from({ length: 600 }, () => key);
    const done = expectStatus(await copy(a.environmentId, { from_environment_id: staging, flag_keys: repeated, include: ['enabled'] }), 200, 'repeats');
    assert.equal(done.flags.length, 1);
  });

  test('at most 200 segments per copy: rules naming 201 are refused with segments, nothing written', async () => {
    const label = unique();
    const keys = Array.from({ length: 201 }, (_, i) => `many-${label}-${i}`);
    await inChunks(keys, 20, (key) => createSegment(client, a.admin.token, staging, { key, context_type: 'user', kind: 'rule', conditions: [] }));
    // 50 segments per rule at most: five rules (the last names one).
    const rules = Array.from({ length: 5 }, (_, r) => ({ id: `r${r}`, conditions: [], segment_keys: keys.slice(r * 50, r * 50 + 50), variant_key: 'on' }));
    const key = await stagingFlag('many', { rules });
    expectError(
      await copy(a.environmentId, { from_environment_id: staging, flag_keys: [key], include: ['rules', 'segments'] }),
      400,
      'INVALID_ARGUMENT',
      /name 201 segments; a copy with segments writes at most 200/,
    );
    assert.equal((await client.get(`${segmentsOf(a.environmentId)}/${keys[0]}`, { token: a.admin.token })).status, 404);
    assert.equal((await flagIn(a.environmentId, key)).version, 0);
  });

  test('a list segment over the copy bound (10,000 members) is refused with a clear error, nothing written', async () => {
    const big = `big-${unique()}`;
    const keys = Array.from({ length: 10_000 }, (_, i) => `member-${i}`);
    await createSegment(client, a.admin.token, staging, { key: big, context_type: 'user', kind: 'list', included_keys: keys });
    expectStatus(await patch(client, `${segmentsOf(staging)}/${big}/members`, { token: a.admin.token, body: { add_excluded: ['one-more'] } }), 200, 'one more');
    const key = await stagingFlag('big', { rules: [{ id: 'big', conditions: [], segment_keys: [big], variant_key: 'on' }] });
    expectError(
      await copy(a.environmentId, { from_environment_id: staging, flag_keys: [key], include: ['rules', 'segments'] }),
      400,
      'INVALID_ARGUMENT',
      new RegExp(`list segment '${big}' has 10001 members.*at most 10000`),
    );
    assert.equal((await client.get(`${segmentsOf(a.environmentId)}/${big}`, { token: a.admin.token })).status, 404);
    assert.equal((await flagIn(a.environmentId, key)).version, 0);
  });
});
