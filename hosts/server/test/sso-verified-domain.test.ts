import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { signInThroughBrowser, startTestOidcProvider, type TestOidcProvider } from '../../../packages/services/test/support/oidc-identity-provider.ts';
import { api, expectError, expectStatus, login, loginAdmin, seedTenant, unique, type ApiClient, type Json, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestDnsServer, type TestDnsServer } from './support/dns-server.ts';
import { CookieJar, browserGet, eventuallyStatus, startSsoTestServer } from './support/sso.ts';
import type { TestServer } from './support/test-server.ts';

// An org proves a domain with a DNS TXT record (a DNS server started here, DNS_SERVERS pointed at
// it); its identity provider's assertions about addresses of that domain then count as proof, so
// an account another org made for such an address is claimed at the owner's single sign-on
// instead of refused (docs/security.md "Domains an org proved").

const APP = 'http://127.0.0.1:9/app/signed-in';
const CLIENT_SECRET = `op-secret-${unique()}`;

let dns: TestDnsServer;
let ts: TestServer & { publicUrl: string };
let client: ApiClient;
let op: TestOidcProvider;
let root: LoggedInUser;
let owner: Tenant;
let squatter: Tenant;
let provider: Json;
const DOMAIN = `victim-${unique()}.example`;

const domainsOf = (orgId: string) => `/v1/management/orgs/${orgId}/domains`;

before(async () => {
  dns = await startTestDnsServer();
  [ts, op] = await Promise.all([startSsoTestServer({ DNS_SERVERS: dns.address }), startTestOidcProvider()]);
  client = api(ts.base);
  root = await loginAdmin(client);
  owner = await seedTenant(client, root.token, 'domain-owner');
  squatter = await seedTenant(client, root.token, 'domain-squatter');
  op.addClient({ clientId: 'owner-idp', clientSecret: CLIENT_SECRET, redirectUris: [`${ts.publicUrl}/v1/auth/oidc/callback`] });
  provider = expectStatus(
    await client.post(`/v1/management/orgs/${owner.orgId}/auth-providers`, {
      token: owner.admin.token,
      body: { provider_type: 'oidc', display_name: 'Owner IdP', redirect_uris: [APP], oidc: { issuer_url: op.issuer, client_id: 'owner-idp', client_secret: CLIENT_SECRET } },
    }),
    201,
  );
});
after(async () => {
  await op?.close();
  await ts?.stop();
  await dns?.close();
});

/** A person at the owner's identity provider with this address; signs in and returns the app's answer. */
async function signInAs(email: string): Promise<URL> {
  const id = unique();
  op.addAccount(`user-${id}`, { sub: `sub-${id}`, email, email_verified: true, name: 'Real CEO' });
  // One browser throughout: the callback needs the login cookie the start set.
  const browser = new CookieJar();
  const start = await browserGet(`${ts.base}/v1/auth/sso/${provider.id}/start?redirect_uri=${encodeURIComponent(APP)}`, browser);
  assert.equal(start.status, 302, start.text);
  const back = await browserGet(await signInThroughBrowser(start.location!.href, `user-${id}`, `${ts.publicUrl}/v1/auth/oidc/callback`), browser);
  assert.equal(back.status, 302, back.text);
  return back.location!;
}

describe('domain verification by DNS TXT', () => {
  test('add gives the TXT record; verify looks it up and refuses until it is there; bad input is 400; members may not', async () => {
    const added = expectStatus(await client.post(domainsOf(owner.orgId), { token: owner.admin.token, body: { domain: DOMAIN.toUpperCase() } }), 201);
    assert.equal(added.domain, DOMAIN);
    assert.equal(added.verified, false);
    assert.equal(added.txt_record_name, `_switchyard-challenge.${DOMAIN}`);
    assert.match(added.txt_record_value, /^switchyard-domain-verification=[A-Za-z0-9_-]{32}$/);

    expectError(await client.post(`${domainsOf(owner.orgId)}/${DOMAIN}/verify`, { token: owner.admin.token }), 409, 'FAILED_PRECONDITION', /no TXT record/);
    assert.ok(dns.queries.includes(`_switchyard-challenge.${DOMAIN}`), 'the configured DNS server was asked');
    dns.txt.set(`_switchyard-challenge.${DOMAIN}`, ['v=spf1 -all', 'switchyard-domain-verification=wrong']);
    expectError(await client.post(`${domainsOf(owner.orgId)}/${DOMAIN}/verify`, { token: owner.admin.token }), 409, 'FAILED_PRECONDITION');

    // Another org cannot verify with the owner's record: its challenge differs.
    const other = expectStatus(await client.post(domainsOf(squatter.orgId), { token: squatter.admin.token, body: { domain: DOMAIN } }), 201);
    assert.notEqual(other.txt_record_value, added.txt_record_value);

    dns.txt.set(`_switchyard-challenge.${DOMAIN}`, ['v=spf1 -all', added.txt_record_value]);
    const verified = expectStatus(await client.post(`${domainsOf(owner.orgId)}/${DOMAIN}/verify`, { token: owner.admin.token }), 200);
    assert.equal(verified.verified, true);
    // Even with its record published too, a second org cannot hold the domain verified.
    dns.txt.set(`_switchyard-challenge.${DOMAIN}`, [added.txt_record_value, other.txt_record_value]);
    expectError(await client.post(`${domainsOf(squatter.orgId)}/${DOMAIN}/verify`, { token: squatter.admin.token }), 409, 'ALREADY_EXISTS');

    expectError(await client.post(domainsOf(owner.orgId), { token: owner.admin.token, body: { domain: 'not a domain' } }), 400, 'INVALID_ARGUMENT');
    expectError(await client.post(domainsOf(owner.orgId), { token: owner.admin.token, body: { domain: 'localhost' } }), 400, 'INVALID_ARGUMENT');
    expectError(await client.get(domainsOf(owner.orgId), { token: owner.member.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(domainsOf(owner.orgId), { token: squatter.admin.token }), 404, 'NOT_FOUND');
    const listed = expectStatus(await client.get(domainsOf(owner.orgId), { token: owner.admin.token }), 200);
    assert.deepEqual(listed.map((d: Json) => [d.domain, d.verified]), [[DOMAIN, true]]);
  });

  test("an account another org made for an address of the verified domain is claimed at the owner's single sign-on", async () => {
    const email = `ceo-${unique()}@${DOMAIN}`;
    const squatterPassword = `squatter-${unique()}`;
    expectStatus(await client.post(`/v1/management/orgs/${squatter.orgId}/users`, { token: squatter.admin.token, body: { email, display_name: 'CEO', password: squatterPassword } }), 201);
    const squatterSession = await login(client, email, squatterPassword, squatter.orgId);

    const returned = await signInAs(email);
    const code = returned.searchParams.get('code');
    assert.ok(code, `signed in, not refused: ${returned.href}`);
    const session = expectStatus(await client.post('/v1/auth/sso/exchange', { body: { code } }), 200);
    assert.equal(session.org_id, owner.orgId);

    await eventuallyStatus(() => client.get('/v1/auth/orgs', { token: squatterSession.token }), 401, "the squatter's session");
    expectError(await client.post('/v1/auth/login', { body: { email, password: squatterPassword } }), 401, 'UNAUTHENTICATED');
    const squatterMembers = expectStatus(await client.get(`/v1/management/orgs/${squatter.orgId}/users`, { token: squatter.admin.token }), 200);
    assert.ok(!squatterMembers.some((m: Json) => m.email === email), 'the squatting org lost the account');
    const history = expectStatus(await client.get(`/v1/management/orgs/${owner.orgId}/audit-log?resource_type=user`, { token: owner.admin.token }), 200);
    assert.ok(history.entries.some((e: Json) => e.action === 'sso.account_claimed'));
  });

  test('without a verified domain the same sign-in is refused, as before', async () => {
    const email = `cfo-${unique()}@unverified-${unique()}.example`;
    expectStatus(await client.post(`/v1/management/orgs/${squatter.orgId}/users`, { token: squatter.admin.token, body: { email, display_name: 'CFO', password: `squatter-${unique()}` } }), 201);
    const returned = await signInAs(email);
    assert.equal(returned.searchParams.get('code'), null);
    assert.match(returned.searchParams.get('error_description') ?? '', /outside this organisation/);
  });
});
