import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { signInThroughBrowser, startTestOidcProvider, type TestOidcProvider } from '../../../packages/services/test/support/oidc-identity-provider.ts';
import { createTestSamlIdp } from '../../../packages/services/test/support/saml-identity-provider.ts';
import { auditLogPath, readAll } from './support/audit-log.ts';
import { bearer, rejectsWithStatus, ssoClients, type SsoClients } from './support/grpc-clients.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, seedUser, unique, type ApiClient, type Json, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { CookieJar, browserGet, startSsoTestServer } from './support/sso.ts';
import type { TestServer } from './support/test-server.ts';

// Group mapping (docs/sso.md "Group mapping", docs/access.md "Group mapping"): an identity
// provider maps its groups to role bindings, set at each sign-in of an org_member. Against a real
// OpenID Provider (oidc-provider) and signed SAML assertions, as the other SSO tests.

const APP = 'http://127.0.0.1:9/app/signed-in';
const CLIENT_SECRET = `op-client-secret-${unique()}`;

let ts: TestServer & { publicUrl: string };
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;
let op: TestOidcProvider;
let grpcSso: SsoClients;
/** A second project of org A, with an environment: for bindings that must stay in their project. */
let other: { projectId: string; environmentId: string };
const idp = createTestSamlIdp();

const providersOf = (orgId: string) => `/v1/management/orgs/${orgId}/auth-providers`;
const callbackUrl = () => `${ts.publicUrl}/v1/auth/oidc/callback`;

type Binding = { role: string; project_id?: string; environment_id?: string };

/** An OIDC provider body for the test OP asking for the `groups` scope. */
const oidcBody = (groupBindings: unknown, oidc: Record<string, unknown> = {}) => ({
  provider_type: 'oidc',
  display_name: `Groups IdP ${unique()}`,
  redirect_uris: [APP],
  oidc: { issuer_url: op.issuer, client_id: 'switchyard-groups', client_secret: CLIENT_SECRET, scopes: ['openid', 'email', 'profile', 'groups'], ...oidc },
  ...(groupBindings === undefined ? {} : { group_bindings: groupBindings }),
});

async function createProvider(body: Record<string, unknown>): Promise<Json> {
  return expectStatus(await client.post(providersOf(a.orgId), { token: a.admin.token, body }), 201, 'create provider');
}

/** A person at the OP with these groups; `set` changes what the OP asserts at the next sign-in. */
function person(claims: { groups?: string[] | string; teams?: string[] | string; email?: string } = {}) {
  const id = unique();
  const login = `grp-${id}`;
  const sub = `sub-grp-${id}`;
  const email = claims.email ?? `${login}@corp.example`;
  const set = (next: { groups?: string[] | string; teams?: string[] | string }) =>
    op.addAccount(login, { sub, email, email_verified: true, name: `Person ${id}`, ...next });
  set(claims);
  return { login, email, set };
}

/** A whole browser sign-in through the provider; returns the session (login response). */
async function signIn(providerId: string, login: string): Promise<Json> {
  const browser = new CookieJar();
  const start = await browserGet(`${ts.base}/v1/auth/sso/${providerId}/start?redirect_uri=${encodeURIComponent(APP)}&state=s`, browser);
  assert.equal(start.status, 302, start.text);
  const callback = await signInThroughBrowser(start.location!.href, login, callbackUrl());
  const back = await browserGet(callback, browser);
  assert.equal(back.status, 302, back.text);
  const code = back.location!.searchParams.get('code');
  assert.ok(code, `signed in: ${back.location}`);
  return expectStatus(await client.post('/v1/auth/sso/exchange', { body: { code } }), 200, 'exchange');
}

/** The member's stored bindings (null: the org role's default), as the repository keeps them. */
async function storedBindings(orgId: string, userId: string): Promise<Binding[] | null> {
  const [row] = await ts.db.sql<Array<{ bindings: Binding[] | null }>>`SELECT bindings FROM memberships WHERE org_id = ${orgId} AND user_id = ${userId}`;
  assert.ok(row, 'a membership');
  return row.bindings;
}

const key = (binding: Binding) => `${binding.role}|${binding.project_id ?? ''}|${binding.environment_id ?? ''}`;
const sorted = (bindings: Binding[] | null) => (bindings === null ? null : [...bindings].sort((x, y) => key(x).localeCompare(key(y))));

before(async () => {
  [ts, op] = await Promise.all([startSsoTestServer(), startTestOidcProvider()]);
  client = api(ts.base);
  root = await loginAdmin(client);
  [a, b] = await Promise.all([seedTenant(client, root.token, 'groups-a'), seedTenant(client, root.token, 'groups-b')]);
  op.addClient({ clientId: 'switchyard-groups', clientSecret: CLIENT_SECRET, redirectUris: [callbackUrl()] });
  const project = expectStatus(await client.post(`/v1/management/orgs/${a.orgId}/projects`, { token: a.admin.token, body: { name: `other-${unique()}` } }), 201, 'project');
  const environment = expectStatus(
    await client.post(`/v1/management/projects/${project.project_id}/environments`, { token: a.admin.token, body: { name: 'staging' } }),
    201,
    'environment',
  );
  other = { projectId: project.project_id, environmentId: environment.environment_id };
  grpcSso = ssoClients(ts.server.grpcPort);
});
after(async () => {
  grpcSso?.close();
  await op?.close();
  await ts?.stop();
});

describe('group mapping: provider settings', () => {
  test('stored and shown: an environment binding gets its project; groups_claim defaults to "groups"; audited', async () => {
    const created = await createProvider(
      oidcBody([
        { group: 'devs', bindings: [{ role: 'editor', project_id: a.projectId }] },
        { group: 'qa', bindings: [{ role: 'editor', environment_id: a.environmentId }, { role: 'editor', environment_id: a.environmentId }] },
      ]),
    );
    assert.deepEqual(created.group_bindings, [
      { group: 'devs', bindings: [{ role: 'editor', project_id: a.projectId }] },
      { group: 'qa', bindings: [{ role: 'editor', project_id: a.projectId, environment_id: a.environmentId }] },
    ]);
    assert.equal(created.oidc.groups_claim, 'groups');
    assert.deepEqual(expectStatus(await client.get(`${providersOf(a.orgId)}/${created.id}`, { token: a.admin.token }), 200, 'get'), created);

    const entries = await readAll(client, a.admin.token, (query) => auditLogPath(a.orgId, query), { resource_id: created.id });
    const creation = entries.find((entry) => entry.action === 'auth_provider.create');
    assert.ok(creation, `an audit entry: ${JSON.stringify(entries.map((entry) => entry.action))}`);
    assert.deepEqual(creation.after.group_bindings, created.group_bindings);

    // An update that leaves group_bindings out keeps them; [] removes them; the claim name is kept too.
    const path = `${providersOf(a.orgId)}/${created.id}`;
    const renamed = expectStatus(
      await client.request('PUT', path, { token: a.admin.token, body: { ...oidcBody(undefined, { groups_claim: 'teams' }), display_name: 'Renamed' } }),
      200,
      'update',
    );
    assert.deepEqual(renamed.group_bindings, created.group_bindings);
    assert.equal(renamed.oidc.groups_claim, 'teams');
    const kept = expectStatus(await client.request('PUT', path, { token: a.admin.token, body: oidcBody(undefined) }), 200, 'update');
    assert.equal(kept.oidc.groups_claim, 'teams', 'an update that does not name the claim keeps it');
    const cleared = expectStatus(await client.request('PUT', path, { token: a.admin.token, body: oidcBody([]) }), 200, 'clear');
    assert.deepEqual(cleared.group_bindings, []);
    const updates = await readAll(client, a.admin.token, (query) => auditLogPath(a.orgId, query), { resource_id: created.id });
    assert.ok(updates.some((entry) => entry.action === 'auth_provider.update' && entry.before.group_bindings.length === 2 && entry.after.group_bindings.length === 0));
    expectStatus(await client.delete(path, { token: a.admin.token }), 204, 'delete');
  });

  test('bad mappings are 400 naming the field (another org\'s project or environment too), and nothing is stored', async () => {
    const count = async () => expectStatus(await client.get(providersOf(a.orgId), { token: a.admin.token }), 200, 'list').length;
    const before = await count();
    const binding = (extra: Record<string, unknown>) => [{ group: 'devs', bindings: [{ role: 'editor', ...extra }] }];
    const refused: Array<[unknown, RegExp]> = [
      [binding({ project_id: b.projectId }), /group_bindings\[0\]\.bindings\[0\]\.project_id is not a project of this organisation/],
      [binding({ environment_id: b.environmentId }), /group_bindings\[0\]\.bindings\[0\]\.environment_id is not an environment of this organisation/],
      [binding({ project_id: a.projectId, environment_id: other.environmentId }), /environment_id is not an environment of project_id/],
      [binding({ project_id: '00000000-0000-4000-8000-000000000000' }), /project_id is not a project of this organisation/],
      [binding({ project_id: 'not-a-uuid' }), /project_id/],
      [[{ group: 'devs', bindings: [{ role: 'owner' }] }], /role/],
      [[{ group: '', bindings: [] }], /group/],
      [[{ group: 'g'.repeat(257), bindings: [] }], /group/],
      [[{ group: 'devs', bindings: [] }, { group: 'devs', bindings: [] }], /group_bindings\[1\]\.group names a group already mapped/],
      [Array.from({ length: 101 }, (_, i) => ({ group: `g${i}`, bindings: [] })), /group_bindings/],
      [[{ group: 'devs', bindings: Array.from({ length: 101 }, () => ({ role: 'viewer' })) }], /bindings/],
      [[{ group: 'devs', bindings: [{ role: 'viewer' }], extra: true }], /must NOT have additional properties|additional/],
    ];
    for (const [mapping, message] of refused) {
      expectError(await client.post(providersOf(a.orgId), { token: a.admin.token, body: oidcBody(mapping) }), 400, 'INVALID_ARGUMENT', message);
    }
    expectError(await client.post(providersOf(a.orgId), { token: a.admin.token, body: oidcBody([], { groups_claim: 'c'.repeat(257) }) }), 400, 'INVALID_ARGUMENT', /groups_claim/);
    assert.equal(await count(), before, 'nothing stored');
    // Org B's admin cannot map org A's project into B's provider either.
    expectError(
      await client.post(providersOf(b.orgId), { token: b.admin.token, body: oidcBody(binding({ project_id: a.projectId })) }),
      400,
      'INVALID_ARGUMENT',
      /not a project of this organisation/,
    );
  });

  test('gRPC: the mapping travels in and out; an unset GroupBindings keeps it, an empty one clears it; another org\'s project is INVALID_ARGUMENT', async () => {
    const input = (groupBindings: unknown) => ({
      provider_type: 'oidc',
      display_name: 'groups over gRPC',
      redirect_uris: [APP],
      oidc: { issuer_url: op.issuer, client_id: 'switchyard-groups', client_secret: CLIENT_SECRET, groups_claim: 'teams' },
      ...(groupBindings === undefined ? {} : { group_bindings: groupBindings }),
    });
    const created = await grpcSso.providers.createAuthProvider(
      { org_id: a.orgId, provider: input({ entries: [{ group: 'devs', bindings: [{ role: 'viewer', project_id: a.projectId, environment_id: '' }] }] }) },
      bearer(a.admin.token),
    );
    assert.equal(created.oidc.groups_claim, 'teams');
    assert.deepEqual(
      created.group_bindings.map((entry: Json) => ({ group: entry.group, bindings: entry.bindings.map((x: Json) => ({ ...x })) })),
      [{ group: 'devs', bindings: [{ role: 'viewer', project_id: a.projectId, environment_id: '' }] }],
    );
    const kept = await grpcSso.providers.updateAuthProvider({ org_id: a.orgId, provider_id: created.id, provider: input(undefined) }, bearer(a.admin.token));
    assert.equal(kept.group_bindings.length, 1, 'unset: kept');
    const cleared = await grpcSso.providers.updateAuthProvider({ org_id: a.orgId, provider_id: created.id, provider: input({ entries: [] }) }, bearer(a.admin.token));
    assert.equal(cleared.group_bindings.length, 0, 'empty: cleared');
    await rejectsWithStatus(
      grpcSso.providers.createAuthProvider({ org_id: a.orgId, provider: input({ entries: [{ group: 'x', bindings: [{ role: 'viewer', project_id: b.projectId }] }] }) }, bearer(a.admin.token)),
      3,
    );
    await grpcSso.providers.deleteAuthProvider({ org_id: a.orgId, provider_id: created.id }, bearer(a.admin.token));
  });
});

describe('group mapping: confirmation', () => {
  test('with two org admins, a mapping that gives admin waits for the second admin; one giving editor does not', async () => {
    // Org B (its providers are not used elsewhere here) gets a second admin.
    await seedUser(client, root.token, b.orgId, 'org_admin', 'groups-b-admin2');
    const body = (role: string) => ({
      ...oidcBody([{ group: 'leads', bindings: [{ role, project_id: b.projectId }] }]),
      link_existing_accounts: false,
    });
    const adminMapping = expectStatus(await client.post(providersOf(b.orgId), { token: b.admin.token, body: body('admin') }), 201, 'create');
    assert.equal(adminMapping.status, 'pending_confirmation');
    const editorMapping = expectStatus(await client.post(providersOf(b.orgId), { token: b.admin.token, body: body('editor') }), 201, 'create');
    assert.equal(editorMapping.status, 'enabled');
    // Turning the live provider's mapping into admin needs the confirmation again.
    const changed = expectStatus(
      await client.request('PUT', `${providersOf(b.orgId)}/${editorMapping.id}`, { token: b.admin.token, body: body('admin') }),
      200,
      'update',
    );
    assert.equal(changed.status, 'pending_confirmation');
  });
});

describe('group mapping: OIDC sign-in', () => {
  let mapped: Json;
  let unmappedFallback: Json;

  before(async () => {
    mapped = await createProvider(
      oidcBody([
        { group: 'devs', bindings: [{ role: 'editor', project_id: a.projectId }] },
        { group: 'qa', bindings: [{ role: 'viewer', project_id: other.projectId }, { role: 'editor', project_id: a.projectId }] },
        { group: '*', bindings: [{ role: 'viewer' }] },
      ]),
    );
    unmappedFallback = await createProvider(oidcBody([{ group: 'ops', bindings: [{ role: 'viewer', environment_id: other.environmentId }] }], { groups_claim: 'teams' }));
  });

  test('two groups: the union of their bindings, without duplicates', async () => {
    const someone = person({ groups: ['devs', 'qa', 'not-mapped'] });
    const session = await signIn(mapped.id, someone.login);
    assert.deepEqual(
      sorted(await storedBindings(a.orgId, session.user_id)),
      sorted([
        { role: 'editor', project_id: a.projectId },
        { role: 'viewer', project_id: other.projectId },
      ]),
    );
  });

  test('no group matched: the "*" entry\'s bindings', async () => {
    const someone = person({ groups: ['marketing'] });
    const session = await signIn(mapped.id, someone.login);
    assert.deepEqual(await storedBindings(a.orgId, session.user_id), [{ role: 'viewer' }]);
  });

  test('another claim name, a single string value; no match and no "*": the org role default (editor everywhere)', async () => {
    const single = person({ teams: 'ops', groups: ['devs'] });
    const session = await signIn(unmappedFallback.id, single.login);
    assert.deepEqual(await storedBindings(a.orgId, session.user_id), [{ role: 'viewer', project_id: other.projectId, environment_id: other.environmentId }]);

    const none = person({ groups: ['devs'] });
    const defaulted = await signIn(unmappedFallback.id, none.login);
    assert.equal(await storedBindings(a.orgId, defaulted.user_id), null, 'the "groups" claim is not read by a provider that reads "teams"');
    // The default: editor everywhere, as every org_member always was.
    expectStatus(await client.get(`/v1/environments/${other.environmentId}/flags`, { token: defaulted.token }), 200, 'reads');
  });

  test('groups changed at the IdP change the stored bindings at the next sign-in; an audit entry names the provider', async () => {
    const someone = person({ groups: ['devs'] });
    const first = await signIn(mapped.id, someone.login);
    assert.deepEqual(await storedBindings(a.orgId, first.user_id), [{ role: 'editor', project_id: a.projectId }]);
    someone.set({ groups: [] });
    await signIn(mapped.id, someone.login);
    assert.deepEqual(await storedBindings(a.orgId, first.user_id), [{ role: 'viewer' }]);
    const entries = await readAll(client, a.admin.token, (query) => auditLogPath(a.orgId, query), { resource_id: first.user_id });
    const applied = entries.filter((entry) => entry.action === 'sso.group_bindings_applied');
    assert.equal(applied.length, 2, `first sign-in and the change: ${JSON.stringify(entries.map((entry) => entry.action))}`);
    assert.equal(applied[0].details.provider_id, mapped.id);
    assert.deepEqual(applied[0].after.bindings, [{ role: 'viewer' }], 'newest first');
    assert.deepEqual(applied[1].details.matched_groups, ['devs']);
    // The same groups again: nothing changes, nothing is audited.
    await signIn(mapped.id, someone.login);
    const again = await readAll(client, a.admin.token, (query) => auditLogPath(a.orgId, query), { resource_id: first.user_id });
    assert.equal(again.filter((entry) => entry.action === 'sso.group_bindings_applied').length, 2);
  });

  test(
    'rights follow the groups at once, for the token issued before the change too',
    async () => {
      const someone = person({ groups: ['devs'] });
      const first = await signIn(mapped.id, someone.login);
      const flag = (flagKey: string) => ({ flag: { key: flagKey, value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], enabled: false, off_variant_key: 'off' } });
      // devs: editor on A's first project; viewer-only elsewhere is not given.
      expectStatus(await client.post(`/v1/environments/${a.environmentId}/flags`, { token: first.token, body: flag(`g-${unique()}`) }), 201, 'editor on the project');
      expectError(await client.post(`/v1/environments/${other.environmentId}/flags`, { token: first.token, body: flag(`g-${unique()}`) }), 403, 'PERMISSION_DENIED');
      someone.set({ groups: ['marketing'] });
      await signIn(mapped.id, someone.login);
      // The first session's token now has the "*" entry's viewer only.
      expectError(await client.post(`/v1/environments/${a.environmentId}/flags`, { token: first.token, body: flag(`g-${unique()}`) }), 403, 'PERMISSION_DENIED');
      expectStatus(await client.get(`/v1/environments/${a.environmentId}/flags`, { token: first.token }), 200, 'viewer reads');
    },
  );

  test('an org_admin signing in through a mapping provider is unaffected', async () => {
    const admin = person({ email: a.admin.email, groups: ['devs'] });
    const session = await signIn(mapped.id, admin.login);
    assert.equal(session.user_id, a.admin.userId, 'linked to the existing admin');
    assert.equal(await storedBindings(a.orgId, a.admin.userId), null);
    expectStatus(await client.get(providersOf(a.orgId), { token: session.token }), 200, 'still an org admin');
  });

  test('a provider without a mapping leaves the member\'s bindings alone', async () => {
    const plain = await createProvider(oidcBody(undefined));
    assert.deepEqual(plain.group_bindings, []);
    const someone = person({ groups: ['devs'] });
    const session = await signIn(mapped.id, someone.login);
    assert.deepEqual(await storedBindings(a.orgId, session.user_id), [{ role: 'editor', project_id: a.projectId }]);
    // Same person through the plain provider (another subject binding: it links the existing member by email).
    await signIn(plain.id, someone.login);
    assert.deepEqual(await storedBindings(a.orgId, session.user_id), [{ role: 'editor', project_id: a.projectId }], 'unchanged');
  });
});

describe('group mapping: SAML sign-in', () => {
  test('the groups attribute\'s values: the union of the matched groups; none matched and no "*": the default', async () => {
    const acsUrl = `${ts.publicUrl}/v1/auth/saml/acs`;
    const provider = expectStatus(
      await client.post(providersOf(a.orgId), {
        token: a.admin.token,
        body: {
          provider_type: 'saml',
          display_name: `SAML groups ${unique()}`,
          redirect_uris: [APP],
          saml: { idp_metadata_xml: idp.metadataXml, groups_attribute: 'memberOf' },
          group_bindings: [
            { group: 'cn=devs', bindings: [{ role: 'editor', project_id: a.projectId }] },
            { group: 'cn=qa', bindings: [{ role: 'viewer', environment_id: other.environmentId }] },
          ],
        },
      }),
      201,
      'create SAML provider',
    );
    assert.equal(provider.saml.groups_attribute, 'memberOf');

    const samlSignIn = async (nameId: string, attributes: Record<string, string | string[]>): Promise<Json> => {
      const jar = new CookieJar();
      const start = await fetch(`${ts.base}/v1/auth/sso/${provider.id}/start?redirect_uri=${encodeURIComponent(APP)}&state=s`, { redirect: 'manual' });
      jar.store(start);
      assert.equal(start.status, 302, await start.text());
      const request = idp.readAuthnRequest(start.headers.get('location') ?? '');
      const samlResponse = idp.response({ inResponseTo: request.id, acsUrl, audience: provider.saml.sp_entity_id, nameId, sign: 'both', attributes });
      const acs = await fetch(acsUrl, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar.header() ?? '' },
        body: new URLSearchParams({ SAMLResponse: samlResponse, RelayState: request.relayState ?? '' }).toString(),
      });
      const location = new URL(acs.headers.get('location') ?? '');
      const code = location.searchParams.get('code');
      assert.ok(code, `signed in: ${location}`);
      return expectStatus(await client.post('/v1/auth/sso/exchange', { body: { code } }), 200, 'exchange');
    };

    const both = await samlSignIn(`saml-${unique()}@corp.example`, { memberOf: ['cn=devs', 'cn=qa', 'cn=other'], groups: 'cn=ignored' });
    assert.deepEqual(
      sorted(await storedBindings(a.orgId, both.user_id)),
      sorted([
        { role: 'editor', project_id: a.projectId },
        { role: 'viewer', project_id: other.projectId, environment_id: other.environmentId },
      ]),
    );
    const nameId = `saml-${unique()}@corp.example`;
    const first = await samlSignIn(nameId, { memberOf: 'cn=devs' });
    assert.deepEqual(await storedBindings(a.orgId, first.user_id), [{ role: 'editor', project_id: a.projectId }]);
    // Left every mapped group at the IdP: back to the org role's default.
    await samlSignIn(nameId, { memberOf: ['cn=sales'] });
    assert.equal(await storedBindings(a.orgId, first.user_id), null);
  });
});
