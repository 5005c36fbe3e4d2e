import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { signInThroughBrowser, startTestOidcProvider, type TestOidcProvider } from '../../../packages/services/test/support/oidc-identity-provider.ts';
import { bearer, rejectsWithStatus, ssoClients, type SsoClients } from './support/grpc-clients.ts';
import {
  api,
  expectError,
  expectStatus,
  joinOrgByInvitation,
  login,
  loginAdmin,
  seedTenant,
  seedUser,
  unique,
  type ApiClient,
  type Json,
  type LoggedInUser,
  type Tenant,
} from './support/rest-client.ts';
import { CookieJar, browserGet, eventuallyStatus, startSsoTestServer } from './support/sso.ts';
import type { TestServer } from './support/test-server.ts';

// Single sign-on with OpenID Connect (docs/sso.md) against a real OpenID Provider started here
// (oidc-provider on 127.0.0.1): the browser part is driven over HTTP as a user agent would, the
// provider's login form included.

const APP = 'http://127.0.0.1:9/app/signed-in';
const GRPC_APP_CALLBACK = 'http://127.0.0.1:9/bff/oidc-callback';
const CLIENT_SECRET = `op-client-secret-${unique()}-do-not-log`;

let ts: TestServer & { publicUrl: string };
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;
let op: TestOidcProvider;
let provider: Json;
let grpcSso: SsoClients;

const providersOf = (orgId: string) => `/v1/management/orgs/${orgId}/auth-providers`;
const callbackUrl = () => `${ts.publicUrl}/v1/auth/oidc/callback`;

/** A provider body for the test OP (client `clientId`), returning to APP. */
const oidcBody = (clientId: string, extra: Record<string, unknown> = {}) => ({
  provider_type: 'oidc',
  display_name: `Corp IdP ${unique()}`,
  redirect_uris: [APP, GRPC_APP_CALLBACK],
  oidc: { issuer_url: op.issuer, client_id: clientId, client_secret: CLIENT_SECRET },
  ...extra,
});

/** A person at the identity provider: a login name for its form, and the claims it asserts. */
function person(claims: { email?: string; email_verified?: boolean; name?: string } = {}): { login: string; sub: string; email: string } {
  const id = unique();
  const login = `user-${id}`;
  const email = claims.email ?? `${login}@corp.example`;
  op.addAccount(login, { sub: `sub-${id}`, email, email_verified: claims.email_verified ?? true, name: claims.name ?? `Person ${id}` });
  return { login, sub: `sub-${id}`, email };
}

/** Start → the provider's login form → our callback; returns where the callback sends the browser. */
async function signIn(
  providerId: string,
  login: string,
  appState = `app-${unique()}`,
): Promise<{ returned: URL; callback: URL; appState: string; cookiesAtCallback: CookieJar }> {
  const browser = new CookieJar();
  const start = await browserGet(`${ts.base}/v1/auth/sso/${providerId}/start?redirect_uri=${encodeURIComponent(APP)}&state=${appState}`, browser);
  assert.equal(start.status, 302, start.text);
  assert.equal(start.location?.origin, new URL(op.issuer).origin, 'start sends the browser to the identity provider');
  const callback = await signInThroughBrowser(start.location!.href, login, callbackUrl());
  const cookiesAtCallback = browser.copy();
  const back = await browserGet(callback, browser);
  assert.equal(back.status, 302, `the callback redirects: ${back.text}`);
  assert.equal(`${back.location!.origin}${back.location!.pathname}`, APP, 'the callback returns to the registered address');
  assert.equal(back.location!.searchParams.get('state'), appState, "the app's state comes back");
  assert.deepEqual(browser.names(), [], 'the callback ends the login cookie');
  return { returned: back.location!, callback, appState, cookiesAtCallback };
}

/** A successful sign-in's session (the login response), via the one-time code. */
async function signInSession(providerId: string, login: string): Promise<Json> {
  const { returned } = await signIn(providerId, login);
  const code = returned.searchParams.get('code');
  assert.ok(code, `a code comes back, not an error: ${returned.href}`);
  return expectStatus(await client.post('/v1/auth/sso/exchange', { body: { code } }), 200, 'exchange');
}

/** A refused sign-in: the error the app is sent back with, and no code. */
async function signInRefused(providerId: string, login: string): Promise<{ error: string; description: string }> {
  const { returned } = await signIn(providerId, login);
  assert.equal(returned.searchParams.get('code'), null, `no code for a refused sign-in: ${returned.href}`);
  return { error: returned.searchParams.get('error') ?? '', description: returned.searchParams.get('error_description') ?? '' };
}

async function membersOf(tenant: Tenant): Promise<Json[]> {
  return expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/users`, { token: tenant.admin.token }), 200, 'list users');
}

before(async () => {
  [ts, op] = await Promise.all([startSsoTestServer(), startTestOidcProvider()]);
  client = api(ts.base);
  root = await loginAdmin(client);
  [a, b] = await Promise.all([seedTenant(client, root.token, 'sso-a'), seedTenant(client, root.token, 'sso-b')]);
  op.addClient({ clientId: 'switchyard-a', clientSecret: CLIENT_SECRET, redirectUris: [callbackUrl(), GRPC_APP_CALLBACK] });
  provider = expectStatus(await client.post(providersOf(a.orgId), { token: a.admin.token, body: oidcBody('switchyard-a') }), 201, 'create provider');
  grpcSso = ssoClients(ts.server.grpcPort);
});
after(async () => {
  grpcSso?.close();
  await op?.close();
  await ts?.stop();
});

describe('OIDC providers: management', () => {
  test('the record has the addresses to register and never the client secret (REST, database, logs)', async () => {
    assert.equal(provider.provider_type, 'oidc');
    assert.equal(provider.org_id, a.orgId);
    assert.equal(provider.enabled, true);
    assert.equal(provider.default_role, 'org_member');
    assert.deepEqual(provider.redirect_uris, [APP, GRPC_APP_CALLBACK]);
    assert.deepEqual(provider.oidc, {
      issuer_url: op.issuer,
      client_id: 'switchyard-a',
      scopes: ['openid', 'email', 'profile'],
      client_secret_set: true,
      callback_url: callbackUrl(),
      groups_claim: 'groups',
    });
    assert.deepEqual(provider.group_bindings, [], 'no group mapping unless given');
    assert.equal(provider.start_url, `${ts.publicUrl}/v1/auth/sso/${provider.id}/start`);
    const listed = expectStatus(await client.get(providersOf(a.orgId), { token: a.admin.token }), 200, 'list');
    assert.deepEqual(listed, [provider]);
    assert.deepEqual(expectStatus(await client.get(`${providersOf(a.orgId)}/${provider.id}`, { token: a.admin.token }), 200, 'get'), provider);

    const [row] = await ts.db.sql<Array<{ client_secret_ciphertext: string; settings: unknown }>>`
      SELECT client_secret_ciphertext, settings FROM auth_providers WHERE id = ${provider.id as string}`;
    assert.ok(row);
    assert.match(row.client_secret_ciphertext, /^v1\./, 'sealed');
    assert.ok(!row.client_secret_ciphertext.includes(CLIENT_SECRET) && !JSON.stringify(row.settings).includes(CLIENT_SECRET));
    for (const exchange of client.exchanges) assert.ok(!exchange.text.includes(CLIENT_SECRET), `${exchange.method} ${exchange.path} answered the secret`);
    for (const line of ts.logs) assert.ok(!line.includes(CLIENT_SECRET), `a log line holds the client secret: ${line}`);
  });

  test('an update without a secret keeps the stored one; the provider type cannot change', async () => {
    const body = oidcBody('switchyard-a');
    const created = expectStatus(await client.post(providersOf(a.orgId), { token: a.admin.token, body }), 201, 'create');
    const { client_secret: _secret, ...withoutSecret } = body.oidc;
    const updated = expectStatus(
      await client.request('PUT', `${providersOf(a.orgId)}/${created.id}`, { token: a.admin.token, body: { ...body, display_name: 'Renamed', oidc: withoutSecret } }),
      200,
      'update',
    );
    assert.equal(updated.display_name, 'Renamed');
    assert.equal(updated.oidc.client_secret_set, true);
    assert.ok(Date.parse(updated.updated_at) > Date.parse(created.updated_at));
    // The kept secret still works at the token endpoint.
    const session = await signInSession(created.id, person().login);
    assert.equal(session.org_id, a.orgId);
    expectError(
      await client.request('PUT', `${providersOf(a.orgId)}/${created.id}`, { token: a.admin.token, body: { ...body, provider_type: 'saml' } }),
      400,
      'INVALID_ARGUMENT',
      /provider_type cannot change/,
    );
    expectStatus(await client.delete(`${providersOf(a.orgId)}/${created.id}`, { token: a.admin.token }), 204, 'delete');
    expectError(await client.get(`${providersOf(a.orgId)}/${created.id}`, { token: a.admin.token }), 404, 'NOT_FOUND');
    const start = await browserGet(`${ts.base}/v1/auth/sso/${created.id}/start?redirect_uri=${encodeURIComponent(APP)}`);
    assert.equal(start.status, 404, 'a deleted provider starts no sign-in');
  });

  test('only an org_admin of the org: members 403, other orgs 404, system admins 403, no bearer 401', async () => {
    const path = `${providersOf(a.orgId)}/${provider.id}`;
    expectError(await client.get(providersOf(a.orgId), { token: a.member.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(providersOf(a.orgId), { token: a.member.token, body: oidcBody('switchyard-a') }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(providersOf(a.orgId), { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.get(path, { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.request('PUT', path, { token: b.admin.token, body: oidcBody('switchyard-a') }), 404, 'NOT_FOUND');
    expectError(await client.delete(path, { token: b.admin.token }), 404, 'NOT_FOUND');
    // Org B's admin naming A's provider under B's own org: still absent.
    expectError(await client.get(`${providersOf(b.orgId)}/${provider.id}`, { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.delete(`${providersOf(b.orgId)}/${provider.id}`, { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.get(providersOf(a.orgId), { token: root.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(providersOf(a.orgId)), 401, 'UNAUTHENTICATED');
    expectError(await client.get(providersOf(a.orgId), { sdkKey: a.rawKey }), 401, 'UNAUTHENTICATED');
    expectStatus(await client.get(path, { token: a.admin.token }), 200, 'the provider is untouched');
  });

  test('bad provider bodies are 400 naming the field, and nothing is stored', async () => {
    const before = expectStatus(await client.get(providersOf(a.orgId), { token: a.admin.token }), 200, 'list').length;
    const refused: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...oidcBody('c'), oidc: undefined }, /oidc settings are required/],
      [{ ...oidcBody('c'), redirect_uris: [] }, /redirect_uris/],
      [{ ...oidcBody('c'), redirect_uris: ['http://app.example.com/done'] }, /https/],
      [{ ...oidcBody('c'), redirect_uris: ['https://app.example.com/done#x'] }, /fragment/],
      [{ ...oidcBody('c'), redirect_uris: ['/relative'] }, /absolute URL/],
      [{ ...oidcBody('c'), oidc: { issuer_url: op.issuer, client_id: 'c' } }, /client_secret is required/],
      [{ ...oidcBody('c'), oidc: { issuer_url: 'ftp://idp.example.com', client_id: 'c', client_secret: 's' } }, /issuer_url/],
      [{ ...oidcBody('c'), oidc: { issuer_url: op.issuer, client_id: 'c', client_secret: 's', scopes: ['openid', 'bad scope'] } }, /scope/],
      [{ ...oidcBody('c'), saml: { idp_metadata_url: 'https://idp.example.com/metadata' } }, /not saml/],
      [{ ...oidcBody('c'), provider_type: 'ldap' }, /provider_type/],
    ];
    for (const [body, message] of refused) {
      expectError(await client.post(providersOf(a.orgId), { token: a.admin.token, body }), 400, 'INVALID_ARGUMENT', message);
    }
    assert.equal(expectStatus(await client.get(providersOf(a.orgId), { token: a.admin.token }), 200, 'list').length, before);
  });
});

describe("OIDC: the authorization endpoint must be on the issuer's origin (no open redirect from ours)", () => {
  /** An issuer whose discovery document names `authorizationEndpoint` (a function of its own origin). */
  async function discoveryServer(authorizationEndpoint: (origin: string) => string): Promise<{ issuer: string; set(next: (origin: string) => string): void; close(): Promise<void> }> {
    let endpoint = authorizationEndpoint;
    const server = createServer((request, response) => {
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      if (request.url !== '/.well-known/openid-configuration') return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          issuer: origin,
          authorization_endpoint: endpoint(origin),
          token_endpoint: `${origin}/token`,
          jwks_uri: `${origin}/jwks`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      issuer: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      set: (next) => (endpoint = next),
      close: () => new Promise((resolve) => server.close(() => resolve())),
    };
  }

  test('refused when saved (400 naming oidc.issuer_url), and at sign-in when the document changes later (409, no redirect)', async () => {
    const idp = await discoveryServer(() => 'https://evil.example/authorize');
    try {
      const body = { ...oidcBody('c'), oidc: { issuer_url: idp.issuer, client_id: 'c', client_secret: 's' } };
      expectError(
        await client.post(providersOf(a.orgId), { token: a.admin.token, body }),
        400,
        'INVALID_ARGUMENT',
        /^oidc\.issuer_url: the identity provider's authorization_endpoint must be on the issuer's origin \(http:\/\/127\.0\.0\.1:\d+\), not https:\/\/evil\.example$/,
      );
      idp.set((origin) => `${origin}/authorize`);
      const saved = expectStatus(await client.post(providersOf(a.orgId), { token: a.admin.token, body }), 201, 'same origin: saved');
      idp.set(() => 'https://evil.example/authorize');
      const start = await browserGet(`${ts.base}/v1/auth/sso/${saved.id}/start?redirect_uri=${encodeURIComponent(APP)}`);
      assert.equal(start.status, 409, start.text);
      assert.equal(start.location, null, 'no redirect to the foreign endpoint');
      assert.match(JSON.parse(start.text).error, /authorization_endpoint must be on the issuer's origin/);
      expectStatus(await client.delete(`${providersOf(a.orgId)}/${saved.id}`, { token: a.admin.token }), 204, 'delete');
    } finally {
      await idp.close();
    }
  });
});

describe('OIDC sign-in in the browser', () => {
  test('the first sign-in creates the account in the org with the default role; the next one finds it', async () => {
    const alice = person({ name: 'Alice Example' });
    const first = await signInSession(provider.id, alice.login);
    assert.equal(first.org_id, a.orgId);
    const member = (await membersOf(a)).find((user) => user.email === alice.email);
    assert.deepEqual(member, { user_id: first.user_id, email: alice.email, display_name: 'Alice Example', org_id: a.orgId, org_role: 'org_member', bindings: null });
    const second = await signInSession(provider.id, alice.login);
    assert.equal(second.user_id, first.user_id, 'the same account');
    assert.notEqual(second.token, first.token);
    // The token is a session like a password login's: it works, and logout ends it.
    expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/projects`, { token: second.token }), 200, 'the SSO token works');
    expectStatus(await client.post('/v1/auth/logout', { token: second.token }), 204, 'logout');
    await eventuallyStatus(() => client.get(`/v1/management/orgs/${a.orgId}/projects`, { token: second.token }), 401, 'the logged-out token');
    expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/projects`, { token: first.token }), 200, 'the other session goes on');
  });

  test('the one-time code works once; the callback cannot be replayed, not even with the login cookie kept', async () => {
    const { returned, callback, cookiesAtCallback } = await signIn(provider.id, person().login);
    const code = returned.searchParams.get('code');
    expectStatus(await client.post('/v1/auth/sso/exchange', { body: { code } }), 200, 'first exchange');
    expectError(await client.post('/v1/auth/sso/exchange', { body: { code } }), 401, 'UNAUTHENTICATED', /unknown, expired or already used/);
    expectError(await client.post('/v1/auth/sso/exchange', { body: { code: 'sso_made-up' } }), 401, 'UNAUTHENTICATED');
    const replay = await browserGet(callback);
    assert.equal(replay.status, 401, `a replayed callback is refused: ${replay.text}`);
    assert.equal(replay.location, null);
    assert.equal(JSON.parse(replay.text).code, 'UNAUTHENTICATED');
    // Whoever copied the cookie before the callback cleared it: the state was spent all the same.
    const copied = await browserGet(callback, cookiesAtCallback);
    assert.equal(copied.status, 401, `a replay with the cookie is refused: ${copied.text}`);
    assert.equal(copied.location, null);
    assert.match(JSON.parse(copied.text).error, /already used/);
  });

  test('the login lives in a __Host- cookie of the browser that started it: a callback from another browser is refused', async () => {
    const browser = new CookieJar();
    const start = await browserGet(`${ts.base}/v1/auth/sso/${provider.id}/start?redirect_uri=${encodeURIComponent(APP)}&state=mine`, browser);
    assert.equal(start.status, 302, start.text);
    assert.equal(browser.received.length, 1);
    assert.match(
      browser.received[0]!,
      /^__Host-switchyard-sso-[0-9a-f]{16}=v1\.[A-Za-z0-9_-]+; Max-Age=600; Path=\/; Secure; HttpOnly; SameSite=Lax$/,
      'sealed, for this origin only, out of scripts\' reach, sent on the provider\'s top-level redirect back',
    );
    const callback = await signInThroughBrowser(start.location!.href, person().login, callbackUrl());

    // The link handed to someone else (login CSRF), or a browser that started another login.
    const elsewhere = await browserGet(callback);
    assert.equal(elsewhere.status, 401, elsewhere.text);
    assert.equal(elsewhere.location, null, 'nowhere to send it: the return address is in the cookie it lacks');
    assert.deepEqual(JSON.parse(elsewhere.text), {
      error: 'this sign-in was not started in this browser (its sign-in cookie is missing or expired); start signing in again in this browser',
      code: 'UNAUTHENTICATED',
    });
    const another = new CookieJar();
    await browserGet(`${ts.base}/v1/auth/sso/${provider.id}/start?redirect_uri=${encodeURIComponent(APP)}`, another);
    const [otherName] = another.names();
    const [ownName] = browser.names();
    assert.ok(otherName && ownName && otherName !== ownName, 'one cookie per login');
    assert.equal((await browserGet(callback, another)).status, 401, "another login's cookie is not this one");
    // A cookie of the right name that is not the sealed login (forged, or sealed for another state).
    const forged = new CookieJar();
    const planted = new Response(null, { headers: { 'set-cookie': `${ownName}=${another.header()!.split('=').slice(1).join('=')}; Path=/` } });
    forged.store(planted);
    const mismatched = await browserGet(callback, forged);
    assert.equal(mismatched.status, 401, mismatched.text);
    assert.match(JSON.parse(mismatched.text).error, /does not match this browser's sign-in cookie/);

    // None of that spent the login: the browser that started it completes.
    const back = await browserGet(callback, browser);
    assert.equal(back.status, 302, back.text);
    assert.equal(back.location!.searchParams.get('state'), 'mine');
    assert.ok(back.location!.searchParams.get('code'), back.location!.href);
  });

  test('only a verified answer spends the state: a made-up code with the right cookie is refused back to the app and stores nothing', async () => {
    const browser = new CookieJar();
    const start = await browserGet(`${ts.base}/v1/auth/sso/${provider.id}/start?redirect_uri=${encodeURIComponent(APP)}&state=made-up`, browser);
    const state = start.location!.searchParams.get('state')!;
    const answer = await browserGet(`${callbackUrl()}?${new URLSearchParams({ state, code: 'made-up-code' })}`, browser);
    assert.equal(answer.status, 302, answer.text);
    assert.equal(answer.location!.searchParams.get('error'), 'access_denied', answer.location!.href);
    const stateHash = createHash('sha256').update(state).digest('hex');
    const rows = await ts.db.sql`SELECT 1 FROM sso_spent_states WHERE state_hash = ${stateHash}`;
    assert.equal(rows.length, 0, 'an outsider cannot fill the table with made-up answers');
  });

  test("the largest app state still fits the browser's 4 KiB cookie", async () => {
    const browser = new CookieJar();
    // 512 characters of three UTF-8 bytes each: the most a state may weigh.
    const start = await browserGet(`${ts.base}/v1/auth/sso/${provider.id}/start?${new URLSearchParams({ redirect_uri: APP, state: '€'.repeat(512) })}`, browser);
    assert.equal(start.status, 302, start.text);
    const [pair = ''] = browser.received[0]!.split(';');
    assert.ok(pair.length <= 4096, `name and value take ${pair.length} bytes`);
  });

  test('a tampered state is refused without redirecting anywhere', async () => {
    const browser = new CookieJar();
    const start = await browserGet(`${ts.base}/v1/auth/sso/${provider.id}/start?redirect_uri=${encodeURIComponent(APP)}`, browser);
    const callback = await signInThroughBrowser(start.location!.href, person().login, callbackUrl());
    const tampered = new URL(callback);
    tampered.searchParams.set('state', `${callback.searchParams.get('state')}x`);
    const answer = await browserGet(tampered, browser);
    assert.equal(answer.status, 401, answer.text);
    assert.equal(answer.location, null);
    assert.match(JSON.parse(answer.text).error, /not started in this browser/);
    const missing = new URL(callback);
    missing.searchParams.delete('state');
    assert.equal((await browserGet(missing)).status, 400, 'no state at all is a bad request');
  });

  test('an unregistered redirect_uri is refused at the start: no open redirect', async () => {
    for (const target of ['https://evil.example/steal', `${APP}/../../elsewhere`, `${APP}?extra=1`, 'http://127.0.0.1:9/app/SIGNED-IN']) {
      const answer = await browserGet(`${ts.base}/v1/auth/sso/${provider.id}/start?redirect_uri=${encodeURIComponent(target)}`);
      assert.equal(answer.status, 400, `${target}: ${answer.text}`);
      assert.equal(answer.location, null);
      assert.match(JSON.parse(answer.text).error, /redirect_uri is not registered/);
    }
    const unknown = await browserGet(`${ts.base}/v1/auth/sso/00000000-0000-4000-8000-000000000000/start?redirect_uri=${encodeURIComponent(APP)}`);
    assert.equal(unknown.status, 404);
  });

  test('ID tokens with a wrong nonce, a wrong audience or an expiry in the past are refused', async () => {
    const cases: Array<[string, (claims: Record<string, unknown>) => Record<string, unknown>, RegExp]> = [
      ['nonce', (claims) => ({ ...claims, nonce: 'not-the-nonce-we-sent' }), /nonce/],
      ['audience', (claims) => ({ ...claims, aud: 'another-client' }), /aud/],
      ['expired', (claims) => ({ ...claims, iat: Math.floor(Date.now() / 1000) - 7200, exp: Math.floor(Date.now() / 1000) - 3600 }), /exp/],
    ];
    for (const [what, tamper, reason] of cases) {
      const someone = person();
      op.tamperIdToken(tamper);
      try {
        const refused = await signInRefused(provider.id, someone.login);
        assert.equal(refused.error, 'access_denied', what);
        assert.match(refused.description, reason, what);
      } finally {
        op.tamperIdToken(null);
      }
      assert.ok(!(await membersOf(a)).some((user) => user.email === someone.email), `${what}: no account was created`);
    }
  });

  test("an org's provider never reaches an account of another org", async () => {
    // Someone of org B only; org A's identity provider asserts the same (verified) email.
    const outsider = await seedUser(client, root.token, b.orgId, 'org_member', 'outsider');
    const impostor = person({ email: outsider.email, email_verified: true });
    const refused = await signInRefused(provider.id, impostor.login);
    assert.equal(refused.error, 'access_denied');
    assert.match(refused.description, /exists outside this organisation/);
    assert.ok(!(await membersOf(a)).some((user) => user.user_id === outsider.userId), 'not added to org A');
    const orgs = expectStatus(await client.get('/v1/auth/orgs', { token: outsider.token }), 200, 'orgs');
    assert.deepEqual(orgs.orgs.map((org: Json) => org.org_id), [b.orgId]);
  });

  test('an existing member is linked by a verified email only', async () => {
    const unverified = await seedUser(client, root.token, a.orgId, 'org_member', 'unverified');
    const refused = await signInRefused(provider.id, person({ email: unverified.email, email_verified: false }).login);
    assert.match(refused.description, /not verified/);
    const verified = await seedUser(client, root.token, a.orgId, 'org_member', 'verified');
    const session = await signInSession(provider.id, person({ email: verified.email.toUpperCase(), email_verified: true }).login);
    assert.equal(session.user_id, verified.userId, 'linked to the existing account (email compared case-insensitively)');
  });

  test('a session opened by SSO stays in its org; a password session of the same account does not', async () => {
    const both = await seedUser(client, root.token, a.orgId, 'org_member', 'both-orgs');
    await joinOrgByInvitation(client, b.admin.token, b.orgId, 'org_member', both);
    const session = await signInSession(provider.id, person({ email: both.email }).login);
    assert.equal(session.user_id, both.userId);
    const orgs = expectStatus(await client.get('/v1/auth/orgs', { token: session.token }), 200, 'orgs');
    assert.deepEqual(orgs.orgs.map((org: Json) => org.org_id), [a.orgId]);
    expectError(await client.post('/v1/auth/switch-org', { token: session.token, body: { org_id: b.orgId } }), 403, 'PERMISSION_DENIED', /single sign-on/);
    const password = await login(client, both.email, both.password, a.orgId);
    expectStatus(await client.post('/v1/auth/switch-org', { token: password.token, body: { org_id: b.orgId } }), 200, 'password session switches');
  });

  test('a removed member is not re-added by signing in again', async () => {
    const alice = person();
    const first = await signInSession(provider.id, alice.login);
    expectStatus(await client.delete(`/v1/management/orgs/${a.orgId}/users/${first.user_id}`, { token: a.admin.token }), 204, 'remove');
    const refused = await signInRefused(provider.id, alice.login);
    assert.match(refused.description, /no longer a member/);
  });

  test('a disabled provider starts no sign-in', async () => {
    const disabled = expectStatus(
      await client.post(providersOf(a.orgId), { token: a.admin.token, body: oidcBody('switchyard-a', { enabled: false }) }),
      201,
      'create disabled',
    );
    assert.equal(disabled.enabled, false);
    const start = await browserGet(`${ts.base}/v1/auth/sso/${disabled.id}/start?redirect_uri=${encodeURIComponent(APP)}`);
    assert.equal(start.status, 409, start.text);
    assert.equal(JSON.parse(start.text).code, 'FAILED_PRECONDITION');
  });
});

describe('GET /v1/auth/sso/options: what a sign-in page may offer', () => {
  const options = async (orgId: string, redirectUri: string) =>
    expectStatus(await client.get(`/v1/auth/sso/options?${new URLSearchParams({ org_id: orgId, redirect_uri: redirectUri })}`), 200, 'options');

  test('lists the org\'s enabled providers returning to that address, by id, name and type only, to anyone', async () => {
    const answer = await options(a.orgId, APP);
    const mine = answer.providers.find((p: { provider_id: string }) => p.provider_id === provider.id);
    assert.deepEqual(mine, { provider_id: provider.id, display_name: provider.display_name, provider_type: 'oidc' });
    for (const listed of answer.providers) assert.deepEqual(Object.keys(listed).sort(), ['display_name', 'provider_id', 'provider_type']);
    assert.ok(!JSON.stringify(answer).includes(CLIENT_SECRET));
  });

  test('leaves out disabled providers and those that do not return to the address; another org, an unknown org: none', async () => {
    const disabled = expectStatus(await client.post(providersOf(a.orgId), { token: a.admin.token, body: oidcBody('switchyard-a', { enabled: false }) }), 201, 'create disabled');
    const ids = (await options(a.orgId, APP)).providers.map((p: { provider_id: string }) => p.provider_id);
    assert.ok(ids.includes(provider.id) && !ids.includes(disabled.id));
    assert.deepEqual((await options(a.orgId, 'http://127.0.0.1:9/elsewhere')).providers, []);
    assert.deepEqual((await options(b.orgId, APP)).providers, [], 'org b has no provider');
    assert.deepEqual((await options('00000000-0000-4000-8000-000000000000', APP)).providers, [], 'an unknown org answers like an org without providers');
    expectError(await client.get(`/v1/auth/sso/options?org_id=not-a-uuid&redirect_uri=${encodeURIComponent(APP)}`), 400, 'INVALID_ARGUMENT');
    expectError(await client.get(`/v1/auth/sso/options?org_id=${a.orgId}`), 400, 'INVALID_ARGUMENT');
    expectStatus(await client.delete(`${providersOf(a.orgId)}/${disabled.id}`, { token: a.admin.token }), 204, 'delete');
  });
});

describe('GET /v1/auth/sso/{provider_id}/option: what a provider link shows before the click', () => {
  const option = (providerId: string, redirectUri: string) => client.get(`/v1/auth/sso/${providerId}/option?${new URLSearchParams({ redirect_uri: redirectUri })}`);

  test("answers the provider's name and type and its org's, to anyone; a provider not offered there is 404 alike", async () => {
    const answer = expectStatus(await option(provider.id, APP), 200, 'option');
    assert.deepEqual(answer, { provider_id: provider.id, display_name: provider.display_name, provider_type: 'oidc', org_id: a.orgId, org_name: a.orgName });
    const disabled = expectStatus(await client.post(providersOf(a.orgId), { token: a.admin.token, body: oidcBody('switchyard-a', { enabled: false }) }), 201, 'create disabled');
    // Disabled; not returning to that address; unknown.
    for (const [providerId, redirectUri] of [
      [disabled.id, APP],
      [provider.id, 'http://127.0.0.1:9/elsewhere'],
      ['00000000-0000-4000-8000-000000000000', APP],
    ]) {
      expectError(await option(providerId!, redirectUri!), 404, 'NOT_FOUND');
    }
    expectError(await option('not-a-uuid', APP), 400, 'INVALID_ARGUMENT');
    expectError(await client.get(`/v1/auth/sso/${provider.id}/option`), 400, 'INVALID_ARGUMENT');
    expectStatus(await client.delete(`${providersOf(a.orgId)}/${disabled.id}`, { token: a.admin.token }), 204, 'delete');
  });
});

describe('OIDC over gRPC (svc.auth.v1)', () => {
  test('OidcAuthorize then OidcCallback answers a login; the state works once', async () => {
    const someone = person();
    await rejectsWithStatus(
      grpcSso.oidc.oidcAuthorize({ provider_id: provider.id, org_id: a.orgId, redirect_uri: 'https://evil.example/cb' }),
      grpc.status.INVALID_ARGUMENT,
    );
    await rejectsWithStatus(grpcSso.oidc.oidcAuthorize({ provider_id: provider.id, org_id: b.orgId, redirect_uri: GRPC_APP_CALLBACK }), grpc.status.NOT_FOUND);
    const { redirect_url } = await grpcSso.oidc.oidcAuthorize({ provider_id: provider.id, org_id: a.orgId, redirect_uri: GRPC_APP_CALLBACK });
    const callback = await signInThroughBrowser(redirect_url, someone.login, GRPC_APP_CALLBACK);
    const answer = {
      provider_id: provider.id,
      code: callback.searchParams.get('code') ?? '',
      state: callback.searchParams.get('state') ?? '',
      iss: callback.searchParams.get('iss') ?? '',
      redirect_uri: GRPC_APP_CALLBACK,
    };
    const session = await grpcSso.oidc.oidcCallback(answer);
    assert.equal(session.org_id, a.orgId);
    assert.ok(session.access_token && session.refresh_token);
    assert.ok((await membersOf(a)).some((user) => user.user_id === session.user_id && user.email === someone.email));
    await rejectsWithStatus(grpcSso.oidc.oidcCallback(answer), grpc.status.UNAUTHENTICATED);
  });

  test('a state from the browser flow is not accepted by OidcCallback', async () => {
    const start = await browserGet(`${ts.base}/v1/auth/sso/${provider.id}/start?redirect_uri=${encodeURIComponent(APP)}`);
    const callback = await signInThroughBrowser(start.location!.href, person().login, callbackUrl());
    await rejectsWithStatus(
      grpcSso.oidc.oidcCallback({
        provider_id: provider.id,
        code: callback.searchParams.get('code') ?? '',
        state: callback.searchParams.get('state') ?? '',
        iss: callback.searchParams.get('iss') ?? '',
        redirect_uri: callbackUrl(),
      }),
      grpc.status.UNAUTHENTICATED,
    );
  });

  test('AuthProviderService: the org admin manages providers; the secret is write-only; other orgs get NOT_FOUND', async () => {
    const created = await grpcSso.providers.createAuthProvider(
      {
        org_id: a.orgId,
        provider: {
          provider_type: 'oidc',
          display_name: 'over gRPC',
          redirect_uris: [APP],
          oidc: { issuer_url: op.issuer, client_id: 'switchyard-a', client_secret: CLIENT_SECRET },
        },
      },
      bearer(a.admin.token),
    );
    assert.equal(created.display_name, 'over gRPC');
    assert.equal(created.enabled, true);
    assert.equal(created.oidc.client_secret, '', 'never answered');
    assert.equal(created.oidc.client_secret_set, true);
    assert.ok(!JSON.stringify(created).includes(CLIENT_SECRET));
    const got = await grpcSso.providers.getAuthProvider({ org_id: a.orgId, provider_id: created.id }, bearer(a.admin.token));
    assert.deepEqual(got, created);
    const listed = await grpcSso.providers.listAuthProviders({ org_id: a.orgId }, bearer(a.admin.token));
    assert.ok(listed.providers.some((p) => p.id === created.id));
    await rejectsWithStatus(grpcSso.providers.getAuthProvider({ org_id: a.orgId, provider_id: created.id }, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(grpcSso.providers.listAuthProviders({ org_id: a.orgId }, bearer(a.member.token)), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(grpcSso.providers.listAuthProviders({ org_id: a.orgId }), grpc.status.UNAUTHENTICATED);
    const disabled = await grpcSso.providers.updateAuthProvider(
      { org_id: a.orgId, provider_id: created.id, provider: { display_name: 'off', disabled: true, redirect_uris: [APP], oidc: { issuer_url: op.issuer, client_id: 'switchyard-a' } } },
      bearer(a.admin.token),
    );
    assert.equal(disabled.enabled, false);
    assert.equal(disabled.oidc.client_secret_set, true, 'kept');
    assert.deepEqual(await grpcSso.providers.deleteAuthProvider({ org_id: a.orgId, provider_id: created.id }, bearer(a.admin.token)), { provider_id: created.id });
    for (const line of ts.logs) assert.ok(!line.includes(CLIENT_SECRET), 'no log line holds the client secret');
  });
});
