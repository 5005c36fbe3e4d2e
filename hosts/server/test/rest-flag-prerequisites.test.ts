import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createFlag, envFlags, projectFlags, put } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Prerequisites on the write side (docs/contract.md "Prerequisites"): `flag.prerequisites` of the
 * environment flag routes is stored with the environment's state and read back everywhere; every
 * refusal is an {error, code} answer; a flag another flag names cannot be deleted or archived,
 * nor lose a variant the dependent lists (409 naming the dependents).
 */

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;
let staging: string;

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'prereq-a');
  b = await seedTenant(client, root.token, 'prereq-b');
  staging = expectStatus(
    await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: 'staging' } }),
    201,
    'create environment',
  ).environment_id;
});
after(() => ts.stop());

const VARIANTS = [
  { key: 'on', value: 'ON' },
  { key: 'off', value: 'OFF' },
  { key: 'extra', value: 'EXTRA' },
];

/** A string flag with variants on/off/extra in tenant A's production, optionally with prerequisites. */
async function flag(label: string, prerequisites?: unknown[]): Promise<string> {
  const key = `${label}-${unique()}`;
  const body: Record<string, unknown> = { key, value_type: 'string', variants: VARIANTS, off_variant_key: 'off', rules: [] };
  if (prerequisites !== undefined) body.prerequisites = prerequisites;
  await createFlag(client, a.admin.token, a.environmentId, { flag: body, enabled: true });
  return key;
}

const path = (key: string, environment = a.environmentId): string => `${envFlags(environment)}/${key}`;
const get = async (key: string, environment = a.environmentId) => expectStatus(await client.get(path(key, environment), { token: a.admin.token }), 200, `get ${key}`);
const setPrerequisites = (key: string, prerequisites: unknown, environment = a.environmentId) =>
  put(client, path(key, environment), { token: a.admin.token, body: { flag: { prerequisites } } });
const on = (flagKey: string, variantKeys = ['on']) => ({ flag_key: flagKey, variant_keys: variantKeys });

describe('round trip', () => {
  test('created with prerequisites, read back on the environment routes (one and list); other reads show []', async () => {
    const parent = await flag('parent');
    const child = await flag('child', [on(parent, ['on', 'extra'])]);
    assert.deepEqual((await get(child)).prerequisites, [{ flag_key: parent, variant_keys: ['on', 'extra'] }]);
    assert.deepEqual((await get(parent)).prerequisites, []);
    const list = expectStatus(await client.get(envFlags(a.environmentId), { token: a.admin.token }), 200);
    const listed = (list.flags ?? list).find((f: { key: string }) => f.key === child);
    assert.deepEqual(listed.prerequisites, [{ flag_key: parent, variant_keys: ['on', 'extra'] }]);
    // Per environment: staging (never written) and the project's definition show none.
    assert.deepEqual((await get(child, staging)).prerequisites, []);
    assert.deepEqual(expectStatus(await client.get(`${projectFlags(a.projectId)}/${child}`, { token: a.admin.token }), 200).prerequisites, []);
  });

  test('an update without prerequisites keeps them; [] removes them; a project-route write refuses them', async () => {
    const parent = await flag('keep-parent');
    const child = await flag('keep-child', [on(parent)]);
    expectStatus(await put(client, path(child), { token: a.admin.token, body: { enabled: false } }), 200, 'toggle');
    assert.deepEqual((await get(child)).prerequisites, [on(parent)]);
    expectStatus(await setPrerequisites(child, [on(parent, ['off'])]), 200, 'replace');
    assert.deepEqual((await get(child)).prerequisites, [on(parent, ['off'])]);
    expectStatus(await setPrerequisites(child, []), 200, 'clear');
    assert.deepEqual((await get(child)).prerequisites, []);
    expectError(
      await put(client, `${projectFlags(a.projectId)}/${child}`, { token: a.admin.token, body: { flag: { prerequisites: [on(parent)] } } }),
      400,
      'INVALID_ARGUMENT',
      /prerequisites/,
    );
  });

  test('a flag without prerequisites is created with []', async () => {
    const key = await flag('plain');
    assert.deepEqual((await get(key)).prerequisites, []);
  });
});

describe('validation refusals (400 INVALID_ARGUMENT, nothing written)', () => {
  test('unknown key, a key of another project, archived, self, unknown variant, empty or repeated variants, duplicate, too many', async () => {
    const parent = await flag('v-parent');
    const archived = await flag('v-archived');
    expectStatus(await client.post(`${path(archived)}/archive`, { token: a.admin.token, body: {} }), 200, 'archive');
    const otherProject = `other-${unique()}`;
    await createFlag(client, b.admin.token, b.environmentId, { flag: { key: otherProject, value_type: 'string', variants: VARIANTS, rules: [] } });
    const child = await flag('v-child');
    const cases: Array<[unknown, RegExp]> = [
      [[on(`missing-${unique()}`)], /no flag 'missing-/],
      [[on(otherProject)], new RegExp(`no flag '${otherProject}' in this project`)],
      [[on(archived)], /is archived/],
      [[on(child)], /its own prerequisite/],
      [[on(parent, ['nope'])], /has no variant 'nope'/],
      [[on(parent, [])], /variant_keys must be a non-empty array/],
      [[on(parent, ['on', 'on'])], /'on' is named twice/],
      [[on(parent), on(parent, ['off'])], new RegExp(`'${parent}' is named twice`)],
      [Array.from({ length: 51 }, (_, i) => on(`f${i}`)), /at most 50 prerequisites/],
      [[{ flag_key: parent }], /./],
      ['not-a-list', /./],
    ];
    for (const [prerequisites, message] of cases) {
      const response = await setPrerequisites(child, prerequisites);
      expectError(response, 400, 'INVALID_ARGUMENT', message);
    }
    assert.deepEqual((await get(child)).prerequisites, []);
    assert.equal((await get(child)).version, 1, 'no refused write changed the flag');
    // On create too: nothing is created.
    const refusedKey = `refused-${unique()}`;
    expectError(
      await client.post(envFlags(a.environmentId), { token: a.admin.token, body: { flag: { key: refusedKey, value_type: 'string', variants: VARIANTS, prerequisites: [on(archived)] } } }),
      400,
      'INVALID_ARGUMENT',
      /is archived/,
    );
    assert.equal((await client.get(path(refusedKey), { token: a.admin.token })).status, 404);
  });

  test('cycles: A→B→A and A→B→C→A are refused; a shared prerequisite (diamond) is not a cycle', async () => {
    const fa = await flag('cyc-a');
    const fb = await flag('cyc-b', [on(fa)]);
    expectError(await setPrerequisites(fa, [on(fb)]), 400, 'INVALID_ARGUMENT', /cycle/);
    const fc = await flag('cyc-c', [on(fb)]);
    expectError(await setPrerequisites(fa, [on(fc)]), 400, 'INVALID_ARGUMENT', new RegExp(`cycle \\(${fa} → ${fc} → ${fb} → ${fa}\\)`));
    assert.deepEqual((await get(fa)).prerequisites, []);
    // The same keys in another environment are another graph: staging has no edges yet.
    expectStatus(await setPrerequisites(fa, [on(fc)], staging), 200, 'staging has no cycle');

    // Diamond: top → left, right; left → bottom; right → bottom.
    const bottom = await flag('dia-bottom');
    const left = await flag('dia-left', [on(bottom)]);
    const right = await flag('dia-right', [on(bottom)]);
    const top = await flag('dia-top', [on(left), on(right), on(bottom)]);
    assert.equal((await get(top)).prerequisites.length, 3);
  });

  test('a chain of 16 flags is accepted, 17 is refused, from either end', async () => {
    const chain: string[] = [await flag('depth-0')];
    for (let i = 1; i < 16; i++) chain.push(await flag(`depth-${i}`, [on(chain[i - 1]!)]));
    // chain[15] → ... → chain[0]: 16 flags.
    const extraBelow = await flag('depth-below');
    expectError(await setPrerequisites(chain[0]!, [on(extraBelow)]), 400, 'INVALID_ARGUMENT', /17 flags \(at most 16/);
    const key = `depth-top-${unique()}`;
    expectError(
      await client.post(envFlags(a.environmentId), {
        token: a.admin.token,
        body: { flag: { key, value_type: 'string', variants: VARIANTS, prerequisites: [on(chain[15]!)] } },
      }),
      400,
      'INVALID_ARGUMENT',
      /17 flags/,
    );
  });

  test('two concurrent writes closing a cycle: at most one succeeds', async () => {
    for (let round = 0; round < 5; round++) {
      const x = await flag('race-x');
      const y = await flag('race-y');
      const [first, second] = await Promise.all([setPrerequisites(x, [on(y)]), setPrerequisites(y, [on(x)])]);
      const ok = [first, second].filter((r) => r.status === 200).length;
      assert.equal(ok, 1, `round ${round}: ${first.status} ${JSON.stringify(first.body)} / ${second.status} ${JSON.stringify(second.body)}`);
      const refused = first.status === 200 ? second : first;
      expectError(refused, 400, 'INVALID_ARGUMENT', /cycle/);
    }
  });
});

describe('a flag other flags name', () => {
  test('delete and archive are refused with 409 naming the dependents and environments; allowed once no flag names it', async () => {
    const parent = await flag('named');
    const child = await flag('named-child', [on(parent)]);
    const other = await flag('named-other');
    expectStatus(await setPrerequisites(other, [on(parent)], staging), 200, 'staging dependent');
    const archivePath = `${path(parent)}/archive`;
    for (const response of [await client.delete(path(parent), { token: a.admin.token }), await client.delete(`${projectFlags(a.projectId)}/${parent}`, { token: a.admin.token })]) {
      expectError(response, 409, 'FAILED_PRECONDITION', new RegExp(`'${child}' \\(in production\\), '${other}' \\(in staging\\)`));
    }
    expectError(await client.post(archivePath, { token: a.admin.token, body: {} }), 409, 'FAILED_PRECONDITION', new RegExp(`'${child}' \\(in production\\)`));
    assert.equal((await get(parent)).archived, false);
    expectStatus(await setPrerequisites(child, []), 200);
    expectStatus(await setPrerequisites(other, [], staging), 200);
    expectStatus(await client.post(archivePath, { token: a.admin.token, body: {} }), 200, 'archive once free');
    expectStatus(await client.delete(path(parent), { token: a.admin.token }), 204, 'delete once free');
  });

  test('archiving a flag while another write names it: never both', async () => {
    for (let round = 0; round < 5; round++) {
      const parent = await flag('race-parent');
      const child = await flag('race-child');
      const [archive, write] = await Promise.all([client.post(`${path(parent)}/archive`, { token: a.admin.token, body: {} }), setPrerequisites(child, [on(parent)])]);
      const detail = `round ${round}: archive ${archive.status} ${JSON.stringify(archive.body)} / write ${write.status} ${JSON.stringify(write.body)}`;
      if (archive.status === 200) expectError(write, 400, 'INVALID_ARGUMENT', /archived/);
      else {
        expectError(archive, 409, 'FAILED_PRECONDITION', new RegExp(child));
        assert.equal(write.status, 200, detail);
      }
      const stored = await get(child);
      assert.equal((await get(parent)).archived && stored.prerequisites.length > 0, false, detail);
    }
  });

  test('removing a variant a dependent lists is refused with 409 naming it; other variants may go', async () => {
    const parent = await flag('variant-parent');
    const child = await flag('variant-child', [on(parent, ['on', 'extra'])]);
    const project = `${projectFlags(a.projectId)}/${parent}`;
    expectError(
      await put(client, project, { token: a.admin.token, body: { flag: { variants: VARIANTS.filter((v) => v.key !== 'extra') } } }),
      409,
      'FAILED_PRECONDITION',
      new RegExp(`'extra' is a prerequisite variant of '${child}' \\(in production\\)`),
    );
    assert.equal((await get(parent)).variants.length, 3);
    // The parent's own off variant is 'off'; drop it from the off variant, then 'off' may go… it is
    // served by nothing else and no dependent lists it.
    expectStatus(await put(client, path(parent), { token: a.admin.token, body: { flag: { off_variant_key: 'on' } } }), 200);
    expectStatus(await put(client, project, { token: a.admin.token, body: { flag: { variants: VARIANTS.filter((v) => v.key !== 'off') } } }), 200, 'unlisted variant removed');
  });
});

describe('access', () => {
  test("another org's admin and an anonymous client can neither read nor write a flag's prerequisites", async () => {
    const parent = await flag('rbac-parent');
    const child = await flag('rbac-child', [on(parent)]);
    const read = await client.get(path(child), { token: b.admin.token });
    assert.equal(read.status, 404, JSON.stringify(read.body));
    assert.equal(JSON.stringify(read.body).includes(parent), false);
    expectError(await put(client, path(child), { token: b.admin.token, body: { flag: { prerequisites: [] } } }), 404, 'NOT_FOUND');
    assert.equal((await client.get(path(child))).status, 401);
    assert.equal((await put(client, path(child), { body: { flag: { prerequisites: [] } } })).status, 401);
    // Tenant B naming tenant A's flag from its own project: that key does not exist there.
    const own = `rbac-own-${unique()}`;
    await createFlag(client, b.admin.token, b.environmentId, { flag: { key: own, value_type: 'string', variants: VARIANTS, rules: [] } });
    expectError(
      await put(client, `${envFlags(b.environmentId)}/${own}`, { token: b.admin.token, body: { flag: { prerequisites: [on(parent)] } } }),
      400,
      'INVALID_ARGUMENT',
      /no flag/,
    );
    assert.deepEqual((await get(child)).prerequisites, [on(parent)]);
  });

  test('a viewer (role binding) reads prerequisites but cannot write them', async () => {
    const parent = await flag('viewer-parent');
    const child = await flag('viewer-child', [on(parent)]);
    expectStatus(
      await put(client, `/v1/management/orgs/${a.orgId}/members/${a.member.userId}/role-bindings`, { token: a.admin.token, body: { bindings: [{ role: 'viewer' }] } }),
      200,
      'viewer binding',
    );
    assert.deepEqual(expectStatus(await client.get(path(child), { token: a.member.token }), 200).prerequisites, [on(parent)]);
    expectError(await put(client, path(child), { token: a.member.token, body: { flag: { prerequisites: [] } } }), 403, 'PERMISSION_DENIED');
    assert.deepEqual((await get(child)).prerequisites, [on(parent)]);
  });
});
