import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import {
  createTestSamlIdp,
  testKeyPair,
  type TestSamlIdp,
  type TestSamlResponseParams,
} from '../../../packages/services/test/support/saml-identity-provider.ts';
import { UUID_PATTERN, bearer, rejectsWithStatus, ssoClients, type SsoClients } from './support/grpc-clients.ts';
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
  type ApiResponse,
  type Json,
  type LoggedInUser,
  type Tenant,
} from './support/rest-client.ts';
import { CookieJar, eventuallyStatus, startSsoTestServer } from './support/sso.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// SAML single sign-on through the real server (docs/sso.md), in both topologies: provider
// management, the browser flow (start → IdP → ACS → app → exchange), the SP metadata, the gRPC
// SamlLoginService and AuthProviderService, and the rules that keep one org's IdP inside its org.
// The IdP is createTestSamlIdp: no HTTP server, the test reads the AuthnRequest from the redirect
// and posts the Response to the ACS as a browser would.

/** The app a browser login returns to (loopback http is allowed; nothing listens there). */
const APP = 'http://127.0.0.1:9/app/done';

let ts: TestServer & { publicUrl: string };
let base: string;
let acsUrl: string;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;
const idp: TestSamlIdp = createTestSamlIdp();
/** The browser of these sign-ins: the start's login cookie goes with the ACS post. */
const browser = new CookieJar();
/** Every relay state and one-time code handed out: none may appear in a log line. */
const oneTimeSecrets: string[] = [];

before(async () => {
  ts = await startSsoTestServer();
  base = ts.publicUrl;
  acsUrl = `${base}/v1/auth/saml/acs`;
  assert.equal(ts.base, base, 'the REST address is the public URL');
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'saml-a');
  b = await seedTenant(client, root.token, 'saml-b');
});
after(() => ts.stop());

const usersOf = (orgId: string) => `/v1/management/orgs/${orgId}/users`;
const providersOf = (orgId: string) => `/v1/management/orgs/${orgId}/auth-providers`;
const newEmail = (label: string) => `${label}-${unique()}@saml.example.com`;

interface ProviderRecord {
  id: string;
  org_id: string;
  default_role: string;
  acs_url: string;
  saml: { sp_entity_id: string; acs_url: string; sp_metadata_url: string; idp_metadata_url: string | null; idp_metadata_xml: string | null };
}

/** A SAML provider of `tenant`'s org, made by its org admin, returning to APP. */
async function createSamlProvider(
  tenant: Tenant,
  options: { defaultRole?: 'org_admin' | 'org_member'; saml?: Record<string, unknown> } = {},
): Promise<ProviderRecord> {
  const body = {
    provider_type: 'saml',
    display_name: `Test IdP ${unique()}`,
    redirect_uris: [APP],
    saml: options.saml ?? { idp_metadata_xml: idp.metadataXml },
    ...(options.defaultRole ? { default_role: options.defaultRole } : {}),
  };
  const record = expectStatus(await client.post(providersOf(tenant.orgId), { token: tenant.admin.token, body }), 201, 'create the SAML provider') as ProviderRecord;
  assert.match(record.id, UUID_PATTERN);
  assert.equal(record.org_id, tenant.orgId);
  assert.equal(record.acs_url, acsUrl);
  assert.equal(record.saml.acs_url, acsUrl);
  const spEntityId = options.saml?.sp_entity_id ?? `${base}/v1/auth/saml/${record.id}/metadata`;
  assert.equal(record.saml.sp_entity_id, spEntityId, 'the given entity id, or this server\'s metadata address');
  return record;
}

interface StartedLogin {
  relayState: string;
  requestId: string;
}

/** Browser flow, step 1: the start route's redirect to the IdP, read as the IdP reads it. */
async function startLogin(provider: ProviderRecord, appState: string, jar = browser): Promise<StartedLogin> {
  const query = new URLSearchParams({ redirect_uri: APP, state: appState });
  const cookie = jar.header();
  const response = await fetch(`${base}/v1/auth/sso/${provider.id}/start?${query}`, { redirect: 'manual', headers: cookie ? { cookie } : {} });
  jar.store(response);
  for (const line of response.headers.getSetCookie()) oneTimeSecrets.push(line.split(';')[0]!.split('=').slice(1).join('='));
  assert.equal(response.status, 302, `start: ${response.status} ${await response.text()}`);
  const location = response.headers.get('location') ?? '';
  assert.ok(location.startsWith(`${idp.ssoUrl}?`), `start redirects to the IdP: ${location}`);
  const request = idp.readAuthnRequest(location);
  assert.equal(request.issuer, provider.saml.sp_entity_id, 'the AuthnRequest is issued by our entity id');
  assert.equal(request.acsUrl, acsUrl, 'the AuthnRequest asks for our ACS');
  assert.ok(request.relayState, 'the redirect carries a RelayState');
  assert.ok(request.id, 'the AuthnRequest has an ID');
  oneTimeSecrets.push(request.relayState);
  return { relayState: request.relayState, requestId: request.id };
}

/** The IdP's answer to `requestId` for `nameId`, correct unless `overrides` say otherwise. */
function samlAnswer(provider: ProviderRecord, requestId: string, nameId: string, overrides: Partial<TestSamlResponseParams> = {}): string {
  return idp.response({ inResponseTo: requestId, acsUrl, audience: provider.saml.sp_entity_id, nameId, sign: 'both', ...overrides });
}

interface AcsAnswer {
  status: number;
  location: URL | null;
  response: ApiResponse;
}

/** The browser posting the IdP's form to the ACS (HTTP-POST binding), not following the redirect. */
async function postAcs(samlResponse: string, relayState: string, jar = browser): Promise<AcsAnswer> {
  const cookie = jar.header();
  const response = await fetch(acsUrl, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams({ SAMLResponse: samlResponse, RelayState: relayState }).toString(),
  });
  jar.store(response);
  const text = await response.text();
  const location = response.headers.get('location');
  let body: Json;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, location: location === null ? null : new URL(location), response: { status: response.status, headers: response.headers, body, text } };
}

/** The ACS's redirect back to the app: `state` echoed, and either a code or an error. */
function returnedToApp(answer: AcsAnswer, appState: string): { code: string | null; error: string | null; description: string | null } {
  assert.equal(answer.status, 302, `the ACS redirects: ${answer.status} ${answer.response.text}`);
  assert.ok(answer.location, 'a Location');
  assert.equal(`${answer.location.origin}${answer.location.pathname}`, APP, `back to the app: ${answer.location}`);
  assert.equal(answer.location.searchParams.get('state'), appState, 'the app state is echoed');
  const code = answer.location.searchParams.get('code');
  const error = answer.location.searchParams.get('error');
  assert.ok((code === null) !== (error === null), `exactly one of code and error: ${answer.location}`);
  if (code !== null) oneTimeSecrets.push(code);
  return { code, error, description: answer.location.searchParams.get('error_description') };
}

/** A refusal that goes back to the app as OAuth does: error=access_denied, no code. */
function expectAccessDenied(answer: AcsAnswer, appState: string, description?: RegExp): void {
  const back = returnedToApp(answer, appState);
  assert.equal(back.error, 'access_denied', `refused: ${answer.location}`);
  assert.equal(back.code, null);
  assert.ok(back.description, 'an error_description');
  if (description) assert.match(back.description, description);
}

/** Exchanges the one-time code for the login response. */
async function exchange(code: string): Promise<Json> {
  const session = expectStatus(await client.post('/v1/auth/sso/exchange', { body: { code } }), 200, 'exchange the code');
  for (const field of ['token', 'refresh_token', 'user_id', 'org_id', 'expires_at', 'expires_in']) assert.ok(session[field], `the login response has ${field}`);
  return session;
}

/** A whole browser sign-in as `nameId` through `provider`; returns the login response. */
async function signIn(provider: ProviderRecord, nameId: string): Promise<Json> {
  const appState = `app-${unique()}`;
  const started = await startLogin(provider, appState);
  const back = returnedToApp(await postAcs(samlAnswer(provider, started.requestId, nameId), started.relayState), appState);
  assert.equal(back.error, null, `signed in: ${back.description}`);
  assert.ok(back.code !== null && back.code.startsWith('sso_'), `a one-time code: ${back.code}`);
  return exchange(back.code);
}

type Member = { user_id: string; email: string; org_role: string };
const membersOf = async (tenant: Tenant): Promise<Member[]> =>
  expectStatus(await client.get(usersOf(tenant.orgId), { token: tenant.admin.token }), 200, 'list the org members') as Member[];

describe('a valid SAML sign-in, end to end', () => {
  test('the first sign-in provisions an org_member in the provider\'s org; the session works there only; the second is the same account', async () => {
    const provider = await createSamlProvider(a);
    assert.equal(provider.default_role, 'org_member');
    const email = newEmail('new-member');
    assert.ok(!(await membersOf(a)).some((m) => m.email === email), 'no such account before');

    const session = await signIn(provider, email);
    assert.equal(session.org_id, a.orgId);
    const members = (await membersOf(a)).filter((m) => m.email === email);
    assert.deepEqual(members.map((m) => ({ user_id: m.user_id, org_role: m.org_role })), [{ user_id: session.user_id, org_role: 'org_member' }]);
    assert.ok(!(await membersOf(b)).some((m) => m.email === email), 'not a member of another org');

    const orgs = expectStatus(await client.get('/v1/auth/orgs', { token: session.token }), 200, 'the SSO token works');
    assert.deepEqual(orgs, { orgs: [{ org_id: a.orgId, org_name: a.orgName, role: 'org_member' }] });
    expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/projects`, { token: session.token }), 200, 'the member reads its org');
    expectError(await client.get(`/v1/management/orgs/${b.orgId}/projects`, { token: session.token }), 404, 'NOT_FOUND');

    const again = await signIn(provider, email);
    assert.equal(again.user_id, session.user_id, 'the same NameID is the same account');
    assert.notEqual(again.token, session.token, 'a new session');
    assert.equal((await membersOf(a)).filter((m) => m.email === email).length, 1, 'still one account');
  });

  test('default_role org_admin: the provisioned account is an org_admin', async () => {
    // An org of its own: the new admin would make org a one of two admins, where enabling a
    // provider takes a second admin's confirmation (sso-admin-grants.test.ts tests that).
    const solo = await seedTenant(client, root.token, 'saml-admin-role');
    const provider = await createSamlProvider(solo, { defaultRole: 'org_admin' });
    assert.equal(provider.default_role, 'org_admin');
    const email = newEmail('new-admin');
    const session = await signIn(provider, email);
    const member = (await membersOf(solo)).find((m) => m.email === email);
    assert.deepEqual(member && { user_id: member.user_id, org_role: member.org_role }, { user_id: session.user_id, org_role: 'org_admin' });
    const orgs = expectStatus(await client.get('/v1/auth/orgs', { token: session.token }), 200);
    assert.deepEqual(orgs, { orgs: [{ org_id: solo.orgId, org_name: solo.orgName, role: 'org_admin' }] });
  });

  test('the one-time code is single use', async () => {
    const provider = await createSamlProvider(a);
    const appState = `app-${unique()}`;
    const started = await startLogin(provider, appState);
    const back = returnedToApp(await postAcs(samlAnswer(provider, started.requestId, newEmail('code-once')), started.relayState), appState);
    assert.ok(back.code);
    await exchange(back.code);
    expectError(await client.post('/v1/auth/sso/exchange', { body: { code: back.code } }), 401, 'UNAUTHENTICATED');
    expectError(await client.post('/v1/auth/sso/exchange', { body: { code: `sso_${randomBytes(32).toString('base64url')}` } }), 401, 'UNAUTHENTICATED');
  });
});

describe('the SP metadata route', () => {
  test('names the provider\'s entity id and the ACS; an unknown provider is 404', async () => {
    const provider = await createSamlProvider(a);
    const response = await fetch(provider.saml.sp_metadata_url);
    const xml = await response.text();
    assert.equal(response.status, 200, xml);
    assert.equal(provider.saml.sp_metadata_url, `${base}/v1/auth/saml/${provider.id}/metadata`);
    assert.match(response.headers.get('content-type') ?? '', /^application\/samlmetadata\+xml/);
    const entityId = /<(?:\w+:)?EntityDescriptor\b[^>]*\bentityID="([^"]*)"/.exec(xml)?.[1];
    assert.equal(entityId, provider.saml.sp_entity_id, xml);
    const acs = /<(?:\w+:)?AssertionConsumerService\b[^>]*>/.exec(xml)?.[0] ?? '';
    assert.match(acs, /Binding="urn:oasis:names:tc:SAML:2\.0:bindings:HTTP-POST"/, xml);
    assert.equal(/\bLocation="([^"]*)"/.exec(acs)?.[1], acsUrl, xml);

    // A provider saved with its own entity id answers that one.
    const custom = await createSamlProvider(a, { saml: { idp_metadata_xml: idp.metadataXml, sp_entity_id: 'urn:switchyard:test-sp' } });
    assert.equal(custom.saml.sp_entity_id, 'urn:switchyard:test-sp');
    const customXml = await (await fetch(`${base}/v1/auth/saml/${custom.id}/metadata`)).text();
    assert.equal(/<(?:\w+:)?EntityDescriptor\b[^>]*\bentityID="([^"]*)"/.exec(customXml)?.[1], 'urn:switchyard:test-sp');

    expectError(await client.get(`/v1/auth/saml/${randomUUID()}/metadata`), 404, 'NOT_FOUND');
    expectError(await client.get('/v1/auth/saml/not-a-uuid/metadata'), 404, 'NOT_FOUND');
  });
});

describe('the ACS refuses what it must', () => {
  let provider: ProviderRecord;
  before(async () => {
    provider = await createSamlProvider(a);
  });

  test('a replayed POST (same SAMLResponse and RelayState) is 401: the relay state was spent', async () => {
    const appState = `app-${unique()}`;
    const started = await startLogin(provider, appState);
    const samlResponse = samlAnswer(provider, started.requestId, newEmail('replay'));
    const kept = browser.copy();
    const first = returnedToApp(await postAcs(samlResponse, started.relayState), appState);
    assert.ok(first.code, 'the first post signs in');
    const replay = await postAcs(samlResponse, started.relayState);
    assert.equal(replay.location, null, 'no redirect for a replay');
    expectError(replay.response, 401, 'UNAUTHENTICATED');
    // With the login cookie copied before the ACS cleared it: the relay state was spent all the same.
    const withCookie = await postAcs(samlResponse, started.relayState, kept);
    assert.equal(withCookie.location, null);
    expectError(withCookie.response, 401, 'UNAUTHENTICATED', /already used/);
  });

  test('the login lives in a SameSite=None __Host- cookie (the IdP posts cross-site); a post from another browser is 401 and spends nothing', async () => {
    const own = new CookieJar();
    const appState = `app-${unique()}`;
    const started = await startLogin(provider, appState, own);
    assert.match(own.received[0]!, /^__Host-switchyard-sso-[0-9a-f]{16}=v1\.[A-Za-z0-9_-]+; Max-Age=600; Path=\/; Secure; HttpOnly; SameSite=None$/);
    const samlResponse = samlAnswer(provider, started.requestId, newEmail('other-browser'));
    // Someone else's browser handed the IdP's form (login CSRF with the attacker's own sign-in).
    const elsewhere = await postAcs(samlResponse, started.relayState, new CookieJar());
    assert.equal(elsewhere.location, null);
    expectError(elsewhere.response, 401, 'UNAUTHENTICATED', /not started in this browser/);
    const back = returnedToApp(await postAcs(samlResponse, started.relayState, own), appState);
    assert.ok(back.code, `the browser that started it signs in: ${back.description}`);
    assert.deepEqual(own.names(), [], 'the ACS ends the login cookie');
  });

  test('a response signed by another key is access_denied, and no account is created', async () => {
    const email = newEmail('forged');
    const appState = `app-${unique()}`;
    const started = await startLogin(provider, appState);
    const forged = samlAnswer(provider, started.requestId, email, { signWith: testKeyPair('switchyard-test-attacker') });
    expectAccessDenied(await postAcs(forged, started.relayState), appState, /signature/);
    assert.ok(!(await membersOf(a)).some((m) => m.email === email), 'no account was created');
  });

  test('an unsigned response is access_denied, and no account is created', async () => {
    const email = newEmail('unsigned');
    const appState = `app-${unique()}`;
    const started = await startLogin(provider, appState);
    expectAccessDenied(await postAcs(samlAnswer(provider, started.requestId, email, { sign: 'none' }), started.relayState), appState);
    assert.ok(!(await membersOf(a)).some((m) => m.email === email), 'no account was created');
  });

  test('a response for another audience is access_denied', async () => {
    const email = newEmail('audience');
    const appState = `app-${unique()}`;
    const started = await startLogin(provider, appState);
    const answer = samlAnswer(provider, started.requestId, email, { audience: 'https://other-sp.example.test/metadata' });
    expectAccessDenied(await postAcs(answer, started.relayState), appState, /Audience/);
    assert.ok(!(await membersOf(a)).some((m) => m.email === email), 'no account was created');
  });

  test('a response to another login\'s request (InResponseTo) is access_denied; that login still completes with its own', async () => {
    const email = newEmail('in-response-to');
    const state1 = `app1-${unique()}`;
    const state2 = `app2-${unique()}`;
    const login1 = await startLogin(provider, state1);
    const login2 = await startLogin(provider, state2);
    assert.notEqual(login1.requestId, login2.requestId);
    expectAccessDenied(await postAcs(samlAnswer(provider, login2.requestId, email), login1.relayState), state1, /InResponseTo/);
    assert.ok(!(await membersOf(a)).some((m) => m.email === email), 'no account was created');
    // The same kind of answer, to the login it was issued for, is accepted.
    const back = returnedToApp(await postAcs(samlAnswer(provider, login2.requestId, email), login2.relayState), state2);
    assert.ok(back.code, `login 2 completes: ${back.description}`);
  });

  test('a response with a DOCTYPE (XXE) or that is not base64 is refused back to the app, with no code and no account', async () => {
    const email = newEmail('doctype');
    const signed = Buffer.from(samlAnswer(provider, 'unused', email), 'base64').toString('utf8');
    const appState = `app-${unique()}`;
    let started = await startLogin(provider, appState);
    const withDoctype = Buffer.from(
      signed.replace(/^/, '<?xml version="1.0"?>\n<!DOCTYPE samlp:Response [<!ENTITY who SYSTEM "file:///etc/passwd">]>\n').replace(email, '&who;'),
      'utf8',
    ).toString('base64');
    let back = returnedToApp(await postAcs(withDoctype, started.relayState), appState);
    assert.equal(back.code, null);
    assert.equal(back.error, 'invalid_request', 'a malformed answer, not a server fault');
    assert.match(back.description ?? '', /DOCTYPE/);
    started = await startLogin(provider, appState);
    back = returnedToApp(await postAcs('%%% not base64 %%%', started.relayState), appState);
    assert.equal(back.code, null);
    assert.equal(back.error, 'invalid_request');
    assert.ok(!(await membersOf(a)).some((m) => m.email === email), 'no account was created');
  });

  test('an unknown or tampered RelayState is 401, and does not spend the real one', async () => {
    const email = newEmail('relay');
    const appState = `app-${unique()}`;
    const started = await startLogin(provider, appState);
    const samlResponse = samlAnswer(provider, started.requestId, email);

    const unknown = await postAcs(samlResponse, randomBytes(32).toString('base64url'));
    assert.equal(unknown.location, null);
    expectError(unknown.response, 401, 'UNAUTHENTICATED');

    const first = started.relayState[0] === 'A' ? 'B' : 'A';
    const tampered = await postAcs(samlResponse, `${first}${started.relayState.slice(1)}`);
    assert.equal(tampered.location, null);
    expectError(tampered.response, 401, 'UNAUTHENTICATED');
    const truncated = await postAcs(samlResponse, started.relayState.slice(0, -1));
    expectError(truncated.response, 401, 'UNAUTHENTICATED');

    const back = returnedToApp(await postAcs(samlResponse, started.relayState), appState);
    assert.ok(back.code, `the real relay state still works: ${back.description}`);
  });
});

describe('an org\'s SAML provider stays inside its org', () => {
  test('an account that exists only in org B is refused by org A\'s provider and does not join A', async () => {
    const provider = await createSamlProvider(a);
    const outsider = await seedUser(client, root.token, b.orgId, 'org_member', 'b-only');
    const membersBefore = await membersOf(a);
    const appState = `app-${unique()}`;
    const started = await startLogin(provider, appState);
    expectAccessDenied(await postAcs(samlAnswer(provider, started.requestId, outsider.email), started.relayState), appState, /outside this organisation/);

    assert.deepEqual(await membersOf(a), membersBefore, 'org A\'s members are unchanged');
    const orgs = expectStatus(await client.get('/v1/auth/orgs', { token: outsider.token }), 200);
    assert.deepEqual(orgs, { orgs: [{ org_id: b.orgId, org_name: b.orgName, role: 'org_member' }] }, 'the account is still in B only');
    // Its password still works: the failed sign-in changed nothing about it.
    await login(client, outsider.email, outsider.password);

    // The email in another case is the same account (emails are unique regardless of case).
    const shouted = outsider.email.toUpperCase();
    assert.notEqual(shouted, outsider.email);
    const again = await startLogin(provider, appState);
    expectAccessDenied(await postAcs(samlAnswer(provider, again.requestId, shouted), again.relayState), appState, /outside this organisation/);
    assert.deepEqual(await membersOf(a), membersBefore, 'org A\'s members are still unchanged');
  });

  test('an account of orgs A and B signed in by A\'s provider stays in A: orgs lists A only, switch-org to B is refused, also after refresh', async () => {
    const provider = await createSamlProvider(a);
    const both = await seedUser(client, root.token, a.orgId, 'org_member', 'a-and-b');
    await joinOrgByInvitation(client, b.admin.token, b.orgId, 'org_admin', both);
    const byPassword = await login(client, both.email, both.password);
    const everywhere = expectStatus(await client.get('/v1/auth/orgs', { token: byPassword.token }), 200) as { orgs: Array<{ org_id: string }> };
    assert.deepEqual(everywhere.orgs.map((o) => o.org_id).sort(), [a.orgId, b.orgId].sort(), 'the control: the account is in both orgs');

    const session = await signIn(provider, both.email);
    assert.equal(session.user_id, both.userId);
    assert.equal(session.org_id, a.orgId);
    assert.deepEqual(expectStatus(await client.get('/v1/auth/orgs', { token: session.token }), 200), {
      orgs: [{ org_id: a.orgId, org_name: a.orgName, role: 'org_member' }],
    });
    expectError(await client.post('/v1/auth/switch-org', { token: session.token, body: { org_id: b.orgId } }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(`/v1/management/orgs/${b.orgId}/projects`, { token: session.token }), 404, 'NOT_FOUND');
    const refreshed = expectStatus(await client.post('/v1/auth/refresh', { body: { refresh_token: session.refresh_token } }), 200, 'refresh');
    assert.equal(refreshed.org_id, a.orgId);
    expectError(await client.post('/v1/auth/switch-org', { token: refreshed.token, body: { org_id: b.orgId } }), 403, 'PERMISSION_DENIED');
    // The password session may switch: the refusal is the SSO session's.
    expectStatus(await client.post('/v1/auth/switch-org', { token: byPassword.token, body: { org_id: b.orgId } }), 200, 'the control: switch by password session');
  });

  test('a member removed from org A cannot sign in again through A\'s provider (and is not re-provisioned)', async () => {
    const provider = await createSamlProvider(a);
    const email = newEmail('removed');
    const session = await signIn(provider, email);
    expectStatus(await client.delete(`${usersOf(a.orgId)}/${session.user_id}`, { token: a.admin.token }), 204, 'remove the member');
    const appState = `app-${unique()}`;
    const started = await startLogin(provider, appState);
    expectAccessDenied(await postAcs(samlAnswer(provider, started.requestId, email), started.relayState), appState, /no longer a member/);
    assert.ok(!(await membersOf(a)).some((m) => m.email.toLowerCase() === email.toLowerCase()), 'not a member again');
  });

  test('an existing member of org A with the asserted email is linked, not duplicated', async () => {
    const provider = await createSamlProvider(a);
    const member = await seedUser(client, root.token, a.orgId, 'org_member', 'a-linked');
    const membersBefore = await membersOf(a);

    const session = await signIn(provider, member.email);
    assert.equal(session.user_id, member.userId, 'the existing account');
    assert.equal(session.org_id, a.orgId);
    assert.deepEqual(await membersOf(a), membersBefore, 'no new account, no role change');
    const again = await signIn(provider, member.email);
    assert.equal(again.user_id, member.userId);
    await login(client, member.email, member.password);
  });
});

describe('IdP metadata by URL', () => {
  test('metadata served over http on loopback: the provider is saved and sign-in works', async () => {
    let fetched = 0;
    const metadataServer: Server = createServer((request, response) => {
      fetched += 1;
      if (request.url !== '/idp/metadata') {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/samlmetadata+xml' }).end(idp.metadataXml);
    });
    await new Promise<void>((resolve) => metadataServer.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(metadataServer.address() as AddressInfo).port}/idp/metadata`;
      const provider = await createSamlProvider(a, { saml: { idp_metadata_url: url } });
      assert.equal(provider.saml.idp_metadata_url, url);
      assert.equal(provider.saml.idp_metadata_xml, null);
      const email = newEmail('by-url');
      const session = await signIn(provider, email);
      assert.equal(session.org_id, a.orgId);
      assert.ok(fetched > 0, 'the server fetched the metadata');
      assert.ok((await membersOf(a)).some((m) => m.email === email && m.user_id === session.user_id));
    } finally {
      await new Promise<void>((resolve) => metadataServer.close(() => resolve()));
    }
  });

  test('without SSO_ALLOW_PRIVATE_NETWORKS a metadata URL on 127.0.0.1 (saml.idp_metadata_url) and an http IdP sign-in address (saml.idp_metadata_xml) are refused with 400', async () => {
    const strict = await startTestServer();
    try {
      const strictClient = api(strict.base);
      const strictRoot = await loginAdmin(strictClient);
      const org = expectStatus(await strictClient.post('/v1/admin/orgs', { token: strictRoot.token, body: { name: `strict-${unique()}` } }), 201);
      const admin = await seedUser(strictClient, strictRoot.token, org.org_id, 'org_admin', 'strict-admin');
      const create = (metadataUrl: string) =>
        strictClient.post(providersOf(org.org_id), {
          token: admin.token,
          body: { provider_type: 'saml', display_name: 'Loopback IdP', redirect_uris: [APP], saml: { idp_metadata_url: metadataUrl } },
        });
      expectError(await create('https://127.0.0.1:8443/idp/metadata'), 400, 'INVALID_ARGUMENT', /saml\.idp_metadata_url.*private or loopback/);
      expectError(await create('http://127.0.0.1:8080/idp/metadata'), 400, 'INVALID_ARGUMENT', /saml\.idp_metadata_url/);
      // The IdP's sign-in address, where the start sends browsers: https only here.
      const withSsoUrl = (ssoUrl: string) =>
        strictClient.post(providersOf(org.org_id), {
          token: admin.token,
          body: { provider_type: 'saml', display_name: 'Pasted IdP', redirect_uris: [APP], saml: { idp_metadata_xml: createTestSamlIdp({ ssoUrl }).metadataXml } },
        });
      expectError(await withSsoUrl('http://idp.example.test/sso'), 400, 'INVALID_ARGUMENT', /^saml\.idp_metadata_xml: .*SingleSignOnService Location that is not https/);
      assert.deepEqual(expectStatus(await strictClient.get(providersOf(org.org_id), { token: admin.token }), 200), [], 'nothing was saved');
      const saved = expectStatus(await withSsoUrl('https://idp.example.test/sso'), 201, 'https is saved');
      assert.equal(saved.saml.idp_sso_url, 'https://idp.example.test/sso', 'the record shows where browsers will be sent');
    } finally {
      await strict.stop();
    }
  });
});

describe('bad provider bodies are 400', () => {
  test('metadata sources, malformed metadata, redirect URIs', async () => {
    const existing = expectStatus(await client.get(providersOf(b.orgId), { token: b.admin.token }), 200) as Array<{ id: string }>;
    const create = (overrides: Record<string, unknown>) =>
      client.post(providersOf(b.orgId), {
        token: b.admin.token,
        body: { provider_type: 'saml', display_name: 'Bad IdP', redirect_uris: [APP], saml: { idp_metadata_xml: idp.metadataXml }, ...overrides },
      });
    expectError(
      await create({ saml: { idp_metadata_xml: idp.metadataXml, idp_metadata_url: 'https://idp.example.test/metadata' } }),
      400,
      'INVALID_ARGUMENT',
      /exactly one of idp_metadata_url and idp_metadata_xml/,
    );
    expectError(await create({ saml: {} }), 400, 'INVALID_ARGUMENT', /exactly one of idp_metadata_url and idp_metadata_xml/);
    expectError(await create({ saml: { idp_metadata_xml: '', idp_metadata_url: '  ' } }), 400, 'INVALID_ARGUMENT', /exactly one/);
    const withDoctype = idp.metadataXml.replace('<md:EntityDescriptor', '<!DOCTYPE md:EntityDescriptor [<!ENTITY who "idp">]>\n<md:EntityDescriptor');
    assert.notEqual(withDoctype, idp.metadataXml);
    expectError(await create({ saml: { idp_metadata_xml: withDoctype } }), 400, 'INVALID_ARGUMENT', /saml\.idp_metadata_xml.*DOCTYPE/);
    expectError(await create({ saml: { idp_metadata_xml: 'this is not XML at all' } }), 400, 'INVALID_ARGUMENT', /saml\.idp_metadata_xml.*(XML|EntityDescriptor)/);
    expectError(await create({ redirect_uris: [] }), 400, 'INVALID_ARGUMENT', /redirect_uris/);
    expectError(await create({ redirect_uris: ['https://app.example.test/done#fragment'] }), 400, 'INVALID_ARGUMENT', /redirect_uris\[0\].*fragment/);
    expectError(await create({ redirect_uris: [APP, 'https://app.example.test/done#'] }), 400, 'INVALID_ARGUMENT', /redirect_uris\[1\]/);
    // The same body with a good redirect URI is accepted: the refusals above are the fields' doing.
    const good = expectStatus(await create({ redirect_uris: ['https://app.example.test/done'] }), 201, 'the control');
    const saved = expectStatus(await client.get(providersOf(b.orgId), { token: b.admin.token }), 200) as Array<{ id: string }>;
    assert.deepEqual(saved.map((p) => p.id).sort(), [...existing.map((p) => p.id), good.id].sort(), 'only the control was saved');
  });
});

// --- gRPC: svc.auth.v1 AuthProviderService and SamlLoginService on the internal port ---

type Provider = Record<string, any>;

describe('gRPC AuthProviderService and SamlLoginService', () => {
  let clients: SsoClients;
  let providers: SsoClients['providers'];
  let saml: SsoClients['saml'];
  let provider: Provider;
  before(() => {
    clients = ssoClients(ts.server.grpcPort);
    ({ providers, saml } = clients);
  });
  after(() => clients.close());

  /** The gRPC record as the REST helpers take it. */
  const asRecord = (p: Provider): ProviderRecord => p as ProviderRecord;

  test('an org admin creates, gets and lists a SAML provider; another org\'s admin gets NOT_FOUND', async () => {
    provider = await providers.createAuthProvider(
      { org_id: a.orgId, provider: { provider_type: 'saml', display_name: 'gRPC IdP', redirect_uris: [APP], saml: { idp_metadata_xml: idp.metadataXml } } },
      bearer(a.admin.token),
    );
    assert.match(provider.id, UUID_PATTERN);
    assert.equal(provider.org_id, a.orgId);
    assert.equal(provider.provider_type, 'saml');
    assert.equal(provider.enabled, true);
    assert.equal(provider.default_role, 'org_member');
    assert.deepEqual(provider.redirect_uris, [APP]);
    assert.equal(provider.acs_url, acsUrl);
    assert.equal(provider.saml.sp_entity_id, `${base}/v1/auth/saml/${provider.id}/metadata`);
    assert.equal(provider.saml.idp_metadata_xml, idp.metadataXml.trim(), 'the metadata as stored (trimmed)');

    assert.deepEqual(await providers.getAuthProvider({ org_id: a.orgId, provider_id: provider.id }, bearer(a.admin.token)), provider);
    const listed = await providers.listAuthProviders({ org_id: a.orgId }, bearer(a.admin.token));
    assert.deepEqual(listed.providers.filter((p) => p.id === provider.id), [provider]);
    // REST sees the same provider.
    const rest = expectStatus(await client.get(`${providersOf(a.orgId)}/${provider.id}`, { token: a.admin.token }), 200);
    assert.equal(rest.saml.sp_entity_id, provider.saml.sp_entity_id);

    await rejectsWithStatus(providers.getAuthProvider({ org_id: a.orgId, provider_id: provider.id }, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(providers.getAuthProvider({ org_id: b.orgId, provider_id: provider.id }, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(providers.listAuthProviders({ org_id: a.orgId }, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(
      providers.createAuthProvider(
        { org_id: a.orgId, provider: { provider_type: 'saml', display_name: 'Intruder', redirect_uris: [APP], saml: { idp_metadata_xml: idp.metadataXml } } },
        bearer(b.admin.token),
      ),
      grpc.status.NOT_FOUND,
    );
    await rejectsWithStatus(providers.listAuthProviders({ org_id: a.orgId }, bearer(a.member.token)), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(providers.listAuthProviders({ org_id: a.orgId }), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(
      providers.createAuthProvider({ org_id: a.orgId, provider: { provider_type: 'saml', display_name: 'No URIs', redirect_uris: [], saml: { idp_metadata_xml: idp.metadataXml } } }, bearer(a.admin.token)),
      grpc.status.INVALID_ARGUMENT,
    );
  });

  test('SamlSsoInitiate → IdP → SamlAcsCallback signs in; the relay state is single use', async () => {
    assert.ok(provider, 'the provider of the previous test');
    const initiated = await saml.samlSsoInitiate({ provider_id: provider.id, org_id: a.orgId, acs_url: '' });
    assert.ok(initiated.redirect_url.startsWith(`${idp.ssoUrl}?`), initiated.redirect_url);
    assert.ok(initiated.relay_state);
    oneTimeSecrets.push(initiated.relay_state);
    const request = idp.readAuthnRequest(initiated.redirect_url);
    assert.equal(request.relayState, initiated.relay_state);
    assert.equal(request.acsUrl, acsUrl);
    assert.equal(request.issuer, provider.saml.sp_entity_id);

    const email = newEmail('grpc');
    const samlResponse = samlAnswer(asRecord(provider), request.id, email);
    const session = await saml.samlAcsCallback({ provider_id: provider.id, saml_response_b64: samlResponse, relay_state: initiated.relay_state });
    assert.ok(session.access_token);
    assert.ok(session.refresh_token);
    assert.ok(session.expires_in > 0);
    assert.equal(session.org_id, a.orgId);
    assert.match(session.user_id, UUID_PATTERN);
    const member = (await membersOf(a)).find((m) => m.email === email);
    assert.equal(member?.user_id, session.user_id, 'provisioned in the provider\'s org');
    const orgs = expectStatus(await client.get('/v1/auth/orgs', { token: session.access_token }), 200, 'the gRPC session works over REST');
    assert.deepEqual(orgs, { orgs: [{ org_id: a.orgId, org_name: a.orgName, role: 'org_member' }] });

    await rejectsWithStatus(
      saml.samlAcsCallback({ provider_id: provider.id, saml_response_b64: samlResponse, relay_state: initiated.relay_state }),
      grpc.status.UNAUTHENTICATED,
    );
  });

  test('SamlSsoInitiate for another org is NOT_FOUND; a foreign acs_url is INVALID_ARGUMENT', async () => {
    await rejectsWithStatus(saml.samlSsoInitiate({ provider_id: provider.id, org_id: b.orgId, acs_url: '' }), grpc.status.NOT_FOUND);
    await rejectsWithStatus(saml.samlSsoInitiate({ provider_id: randomUUID(), org_id: a.orgId, acs_url: '' }), grpc.status.NOT_FOUND);
    await rejectsWithStatus(
      saml.samlSsoInitiate({ provider_id: provider.id, org_id: a.orgId, acs_url: 'https://elsewhere.example.test/acs' }),
      grpc.status.INVALID_ARGUMENT,
    );
    const explicit = await saml.samlSsoInitiate({ provider_id: provider.id, org_id: a.orgId, acs_url: acsUrl });
    assert.ok(explicit.relay_state, 'this server\'s own ACS address is accepted');
  });

  test('a relay state of the browser flow is refused by SamlAcsCallback, and one of gRPC by the REST ACS', async () => {
    const record = asRecord(provider);
    const email = newEmail('cross-channel');
    const browser = await startLogin(record, `app-${unique()}`);
    await rejectsWithStatus(
      saml.samlAcsCallback({ provider_id: provider.id, saml_response_b64: samlAnswer(record, browser.requestId, email), relay_state: browser.relayState }),
      grpc.status.UNAUTHENTICATED,
    );

    const initiated = await saml.samlSsoInitiate({ provider_id: provider.id, org_id: a.orgId, acs_url: '' });
    const request = idp.readAuthnRequest(initiated.redirect_url);
    const viaRest = await postAcs(samlAnswer(record, request.id, email), initiated.relay_state);
    assert.equal(viaRest.location, null, 'no redirect to anywhere');
    expectError(viaRest.response, 401, 'UNAUTHENTICATED');
    assert.ok(!(await membersOf(a)).some((m) => m.email === email), 'no account was created');
  });

  test('SamlAcsCallback refuses a response signed by another key (UNAUTHENTICATED)', async () => {
    const email = newEmail('grpc-forged');
    const initiated = await saml.samlSsoInitiate({ provider_id: provider.id, org_id: a.orgId, acs_url: '' });
    const request = idp.readAuthnRequest(initiated.redirect_url);
    const forged = samlAnswer(asRecord(provider), request.id, email, { signWith: testKeyPair('switchyard-test-attacker') });
    await rejectsWithStatus(saml.samlAcsCallback({ provider_id: provider.id, saml_response_b64: forged, relay_state: initiated.relay_state }), grpc.status.UNAUTHENTICATED);
    assert.ok(!(await membersOf(a)).some((m) => m.email === email), 'no account was created');
  });
});

describe('logout of an SSO session', () => {
  test('204, then the token is refused (also by the gateway, eventually) and the refresh token too', async () => {
    const provider = await createSamlProvider(a);
    const session = await signIn(provider, newEmail('logout'));
    expectStatus(await client.get('/v1/auth/orgs', { token: session.token }), 200, 'the token works before');
    const other = await signIn(provider, newEmail('logout-other'));
    expectStatus(await client.post('/v1/auth/logout', { token: session.token }), 204, 'logout');
    await eventuallyStatus(() => client.get('/v1/auth/orgs', { token: session.token }), 401, 'the logged-out token');
    expectError(await client.get('/v1/auth/orgs', { token: session.token }), 401, 'UNAUTHENTICATED');
    expectError(await client.post('/v1/auth/refresh', { body: { refresh_token: session.refresh_token } }), 401, 'UNAUTHENTICATED');
    expectStatus(await client.get('/v1/auth/orgs', { token: other.token }), 200, 'another person\'s SSO session goes on');
  });
});

describe('logs', () => {
  test('no relay state, login cookie, one-time code or JWT of these sign-ins is in a log line', () => {
    assert.ok(oneTimeSecrets.length > 10, `the scan covers the sign-ins above (${oneTimeSecrets.length})`);
    const logs = ts.logs.join('\n');
    assert.ok(logs.length > 0, 'log lines were captured');
    for (const secret of oneTimeSecrets) assert.ok(!logs.includes(secret), `${secret.slice(0, 8)}… appears in the logs`);
    assert.doesNotMatch(logs, /eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\./, 'a JWT appears in the logs');
  });
});
