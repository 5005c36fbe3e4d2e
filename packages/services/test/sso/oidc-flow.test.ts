import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isDomainError, type ErrorCode } from '@switchyard/core';
import { createGuardedFetch } from '../../src/sso/network-guard.ts';
import { OidcFlows, type OidcAuthorization, type OidcProviderSettings } from '../../src/sso/oidc-flow.ts';
import { signInThroughBrowser, startTestOidcProvider, type TestOidcProvider } from '../support/oidc-identity-provider.ts';

const CLIENT_ID = 'switchyard-rp';
const CLIENT_SECRET = 'rp-secret-0123456789abcdef';
const OTHER_CLIENT_ID = 'another-rp';
// Nothing listens here: the flow never reaches the relying party, the browser stops at the redirect.
const REDIRECT_URI = 'http://127.0.0.1:9/sso/oidc/callback';
const ALICE = { sub: 'alice-subject-1', email: 'alice@example.com', email_verified: true, name: 'Alice Liddell' };
const BOB = { sub: 'bob-subject-2', email: 'bob@example.com' }; // no email_verified claim

async function rejectsWith(promise: Promise<unknown>, code: ErrorCode, message: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(isDomainError(error), `a DomainError, got ${error instanceof Error ? error.stack : String(error)}`);
    assert.equal(error.code, code, error.message);
    if (process.env.SHOW_SSO_ERRORS) console.log(`${code}: ${error.message}`);
    assert.match(error.message, message);
    return true;
  });
}

describe('OidcFlows against a real OpenID Provider', () => {
  let idp: TestOidcProvider;
  let settings: OidcProviderSettings;
  const flows = new OidcFlows({ fetch: createGuardedFetch({ allowPrivateNetworks: true, timeoutMs: 2_000 }), allowInsecureHttp: true });

  before(async () => {
    idp = await startTestOidcProvider();
    idp.addClient({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [REDIRECT_URI] });
    idp.addClient({ clientId: OTHER_CLIENT_ID, clientSecret: 'other-secret', redirectUris: [REDIRECT_URI] });
    idp.addAccount('alice', ALICE);
    idp.addAccount('bob', BOB);
    settings = { providerId: 'provider-1', issuerUrl: idp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, scopes: ['email', 'profile'], revision: '1' };
  });
  after(async () => {
    await idp.close();
  });

  /** authorize → browser sign-in → the callback's query string. */
  async function signIn(login = 'alice', flowSettings = settings): Promise<{ authorization: OidcAuthorization; query: URLSearchParams }> {
    const authorization = await flows.authorize(flowSettings, REDIRECT_URI);
    const callback = await signInThroughBrowser(authorization.url, login, REDIRECT_URI);
    return { authorization, query: callback.searchParams };
  }

  const complete = (authorization: OidcAuthorization, query: URLSearchParams, expected: Partial<OidcAuthorization> = {}, flowSettings = settings) =>
    flows.complete(flowSettings, {
      query,
      redirectUri: REDIRECT_URI,
      expected: {
        state: expected.state ?? authorization.state,
        nonce: expected.nonce ?? authorization.nonce,
        codeVerifier: expected.codeVerifier ?? authorization.codeVerifier,
      },
    });

  test('the full flow returns the account the user signed in with', async () => {
    const { authorization, query } = await signIn('alice');
    const identity = await complete(authorization, query);
    assert.deepEqual(identity, { issuer: idp.issuer, subject: ALICE.sub, email: ALICE.email, emailVerified: true, name: ALICE.name });
  });

  test('email_verified is false unless the provider says true', async () => {
    const { authorization, query } = await signIn('bob');
    const identity = await complete(authorization, query);
    assert.equal(identity.subject, BOB.sub);
    assert.equal(identity.email, BOB.email);
    assert.equal(identity.emailVerified, false);
    assert.equal(identity.name, null);
  });

  test('the authorization URL carries PKCE S256, state, nonce, the openid scope and the redirect URI', async () => {
    const authorization = await flows.authorize(settings, REDIRECT_URI);
    const url = new URL(authorization.url);
    assert.equal(url.origin, idp.issuer);
    const params = url.searchParams;
    assert.equal(params.get('code_challenge_method'), 'S256');
    assert.match(params.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.notEqual(params.get('code_challenge'), authorization.codeVerifier);
    assert.equal(params.get('state'), authorization.state);
    assert.equal(params.get('nonce'), authorization.nonce);
    assert.equal(params.get('client_id'), CLIENT_ID);
    assert.equal(params.get('redirect_uri'), REDIRECT_URI);
    assert.equal(params.get('response_type'), 'code');
    assert.deepEqual(params.get('scope')?.split(' ').sort(), ['email', 'openid', 'profile']);
    const again = await flows.authorize(settings, REDIRECT_URI);
    assert.notEqual(again.state, authorization.state);
    assert.notEqual(again.nonce, authorization.nonce);
    assert.notEqual(again.codeVerifier, authorization.codeVerifier);
  });

  test('a callback whose state differs is refused', async () => {
    const { authorization, query } = await signIn();
    const tampered = new URLSearchParams(query);
    tampered.set('state', 'attacker-state');
    await rejectsWith(complete(authorization, tampered), 'UNAUTHENTICATED', /^state does not match$/);
    await rejectsWith(complete(authorization, query, { state: 'another-login-attempt' }), 'UNAUTHENTICATED', /^state does not match$/);
  });

  test('the same code cannot be used twice', async () => {
    const { authorization, query } = await signIn();
    await complete(authorization, query);
    await rejectsWith(complete(authorization, query), 'UNAUTHENTICATED', /^the identity provider refused the authorization code: invalid_grant$/);
  });

  test('an ID token with another nonce is refused', async () => {
    const { authorization, query } = await signIn();
    await rejectsWith(complete(authorization, query, { nonce: 'nonce-of-another-attempt' }), 'UNAUTHENTICATED', /ID token was refused: .*"nonce"/);
  });

  test('an ID token for another client (aud) is refused', async () => {
    const { authorization, query } = await signIn();
    idp.tamperIdToken((claims) => ({ ...claims, aud: OTHER_CLIENT_ID, azp: OTHER_CLIENT_ID }));
    try {
      await rejectsWith(complete(authorization, query), 'UNAUTHENTICATED', /ID token was refused: .*"aud"/);
    } finally {
      idp.tamperIdToken(null);
    }
  });

  test('an expired ID token is refused', async () => {
    const { authorization, query } = await signIn();
    const past = Math.floor(Date.now() / 1000) - 3_600;
    idp.tamperIdToken((claims) => ({ ...claims, iat: past - 600, exp: past }));
    try {
      await rejectsWith(complete(authorization, query), 'UNAUTHENTICATED', /ID token was refused: .*"exp"/);
    } finally {
      idp.tamperIdToken(null);
    }
  });

  test('a wrong code_verifier is refused by the provider', async () => {
    const { authorization, query } = await signIn();
    await rejectsWith(
      complete(authorization, query, { codeVerifier: 'a'.repeat(43) }),
      'UNAUTHENTICATED',
      /^the identity provider refused the authorization code: invalid_grant$/,
    );
  });

  test("the provider's error (access_denied) is refused with its code", async () => {
    const authorization = await flows.authorize(settings, REDIRECT_URI);
    const query = new URLSearchParams({ error: 'access_denied', error_description: '<b>End-User aborted</b>', state: authorization.state, iss: idp.issuer });
    await rejectsWith(complete(authorization, query), 'UNAUTHENTICATED', /^the identity provider refused the sign-in: access_denied$/);
  });

  test('a wrong client secret is refused', async () => {
    const wrongSecret = { ...settings, clientSecret: 'not-the-secret', revision: 'wrong-secret' };
    const { authorization, query } = await signIn('alice', wrongSecret);
    await rejectsWith(complete(authorization, query, {}, wrongSecret), 'UNAUTHENTICATED', /^the identity provider refused the client credentials: invalid_client$/);
  });

  test('an unreachable issuer is UNAVAILABLE', async () => {
    const closed = await startTestOidcProvider();
    await closed.close();
    const unreachable = { ...settings, providerId: 'gone', issuerUrl: closed.issuer };
    await rejectsWith(flows.authorize(unreachable, REDIRECT_URI), 'UNAVAILABLE', /could not reach 127\.0\.0\.1/);
    await rejectsWith(flows.discover(unreachable), 'UNAVAILABLE', /could not reach/);
  });

  test('discover() succeeds for a working provider and names an issuer mismatch', async () => {
    await flows.discover(settings);
    await rejectsWith(
      flows.discover({ ...settings, providerId: 'mismatch', issuerUrl: `${idp.issuer}/other-tenant` }),
      'FAILED_PRECONDITION',
      /discovery document could not be loaded \(HTTP 404\)|names a different issuer/,
    );
  });

  test('the private-network guard applies to the provider when not allowed', async () => {
    const strict = new OidcFlows({ fetch: createGuardedFetch({ allowPrivateNetworks: false }), allowInsecureHttp: true });
    await rejectsWith(strict.discover(settings), 'FAILED_PRECONDITION', /private or loopback address/);
  });

  test('without allowInsecureHttp an http issuer is refused', async () => {
    const tlsOnly = new OidcFlows({ fetch: createGuardedFetch({ allowPrivateNetworks: true }), allowInsecureHttp: false });
    await rejectsWith(tlsOnly.discover(settings), 'FAILED_PRECONDITION', /must use https/);
  });
});

describe('OidcFlows with a provider that puts the profile claims only in UserInfo', () => {
  test('email, email_verified and name come from UserInfo', async () => {
    const idp = await startTestOidcProvider({ claimsInIdToken: false });
    try {
      idp.addClient({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [REDIRECT_URI] });
      idp.addAccount('alice', ALICE);
      const settings: OidcProviderSettings = { providerId: 'strict', issuerUrl: idp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, scopes: ['email', 'profile'], revision: '1' };
      const flows = new OidcFlows({ fetch: createGuardedFetch({ allowPrivateNetworks: true }), allowInsecureHttp: true });
      const authorization = await flows.authorize(settings, REDIRECT_URI);
      const callback = await signInThroughBrowser(authorization.url, 'alice', REDIRECT_URI);
      let idTokenClaims: Record<string, unknown> = {};
      idp.tamperIdToken((claims) => (idTokenClaims = claims)); // re-signs the same claims: only to look at them
      const identity = await flows.complete(settings, { query: callback.searchParams, redirectUri: REDIRECT_URI, expected: authorization });
      assert.equal(idTokenClaims.sub, ALICE.sub);
      assert.equal(idTokenClaims.email, undefined, 'the ID token itself carries no email');
      assert.deepEqual(identity, { issuer: idp.issuer, subject: ALICE.sub, email: ALICE.email, emailVerified: true, name: ALICE.name });
    } finally {
      await idp.close();
    }
  });
});
