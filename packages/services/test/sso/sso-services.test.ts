import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { isDomainError, type AuthProvider, type Principal } from '@switchyard/core';
import { createInMemoryRepositories, InMemoryChangeNotifier } from '@switchyard/core/testing';
import { AuthProviderService, MAX_PROVIDERS_PER_ORG } from '../../src/sso/auth-provider-service.ts';
import { SecretBox } from '../../src/sso/secret-box.ts';
import { IdpMetadataSource } from '../../src/sso/idp-metadata-source.ts';
import type { OidcFlows } from '../../src/sso/oidc-flow.ts';
import { SamlFlows } from '../../src/sso/saml-flow.ts';
import { SsoAccounts } from '../../src/sso/sso-accounts.ts';
import { SsoLoginService } from '../../src/sso/sso-login-service.ts';
import type { SsoOptions } from '../../src/sso/sso-options.ts';
import { createTestSamlIdp } from '../support/saml-identity-provider.ts';

// The single sign-on services over the in-memory fakes: what happens before any identity
// provider is contacted (provider rules, the private-network rule, sealing secrets) and which
// account an identity becomes. The flows against real identity providers are tested in
// hosts/server/test/sso-*.test.ts.

const KEY = 'unit-test-sso-secrets-key-0123456789abcdef';
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

async function rejectsWith(promise: Promise<unknown> | (() => unknown), code: string, message?: RegExp): Promise<void> {
  await assert.rejects(
    async () => (typeof promise === 'function' ? promise() : promise),
    (error: unknown) => {
      assert.ok(isDomainError(error), `a DomainError, got ${String(error)}`);
      assert.equal(error.code, code, error.message);
      if (message) assert.match(error.message, message);
      return true;
    },
  );
}

async function setup(options: Partial<SsoOptions> = {}) {
  const repos = createInMemoryRepositories();
  const org = await repos.orgs.create({ name: 'acme' });
  // A member: a provider's write checks its author still is an org_admin.
  const adminUser = await repos.users.create({ email: 'admin@acme.example', displayName: 'admin', passwordHash: 'x' });
  await repos.users.addMembership({ orgId: org.id, userId: adminUser.id, role: 'org_admin' });
  const admin: Principal = { kind: 'user', userId: adminUser.id, orgId: org.id, role: 'org_admin', isSystem: false };
  const service = new AuthProviderService(repos, {
    publicUrl: 'https://flags.example.com',
    allowPrivateNetworks: false,
    secrets: new SecretBox(KEY),
    ...options,
  }, new InMemoryChangeNotifier());
  return { repos, org, admin, service };
}

const oidcBody = (issuer: string) => ({
  provider_type: 'oidc',
  display_name: 'Corp',
  redirect_uris: ['https://app.example.com/signed-in'],
  oidc: { issuer_url: issuer, client_id: 'client', client_secret: 'the-client-secret' },
});

describe('SecretBox', () => {
  test('opens what it sealed, only for the same provider and key, and refuses tampering', () => {
    const box = new SecretBox(KEY);
    const sealed = box.seal('s3cret', 'provider-1');
    assert.match(sealed, /^v1\.[A-Za-z0-9_-]+$/);
    assert.ok(!sealed.includes('s3cret'));
    assert.equal(box.open(sealed, 'provider-1'), 's3cret');
    assert.notEqual(box.seal('s3cret', 'provider-1'), sealed, 'a fresh IV each time');
    assert.throws(() => box.open(sealed, 'provider-2'), /cannot be decrypted/, 'bound to its provider');
    assert.throws(() => new SecretBox(`${KEY}-other`).open(sealed, 'provider-1'), /cannot be decrypted/, 'another key');
    // The second-to-last character (a whole 6 bits of ciphertext or tag) replaced by a different one:
    // chosen from that character itself, so the sealed text always changes.
    const at = sealed.length - 2;
    const flipped = `${sealed.slice(0, at)}${sealed[at] === 'A' ? 'B' : 'A'}${sealed.slice(at + 1)}`;
    assert.notEqual(flipped, sealed);
    assert.throws(() => box.open(flipped, 'provider-1'), /cannot be decrypted/, 'tampered');
    assert.throws(() => box.open('v2.abc', 'provider-1'), /cannot be decrypted/);
    assert.throws(() => new SecretBox('too-short'), RangeError);
  });
});

describe('AuthProviderService before any network', () => {
  test('issuers and metadata on loopback, private or link-local addresses are refused unless allowed', async () => {
    const { service, admin, org } = await setup();
    for (const issuer of ['https://127.0.0.1:8443', 'https://10.1.2.3', 'https://169.254.169.254/latest', 'https://[::1]/', 'https://localhost/']) {
      await rejectsWith(service.create(admin, org.id, oidcBody(issuer)), 'INVALID_ARGUMENT', /oidc\.issuer_url/);
    }
    await rejectsWith(service.create(admin, org.id, oidcBody('http://idp.example.com')), 'INVALID_ARGUMENT', /https/);
    await rejectsWith(service.create(admin, org.id, { ...oidcBody('https://idp.example.com'), display_name: 'Corp\u0000' }), 'INVALID_ARGUMENT', /U\+0000/);
    await rejectsWith(
      service.create(admin, org.id, { provider_type: 'saml', display_name: 'IdP', redirect_uris: ['https://app.example.com/'], saml: { idp_metadata_url: 'https://192.168.1.10/metadata' } }),
      'INVALID_ARGUMENT',
      /saml\.idp_metadata_url/,
    );
    assert.deepEqual(await service.list(admin, org.id), [], 'nothing stored');
    const allowed = await setup({ allowPrivateNetworks: true });
    const created = await allowed.service.create(allowed.admin, allowed.org.id, oidcBody('http://127.0.0.1:8080'));
    assert.equal(created.oidc?.issuer_url, 'http://127.0.0.1:8080');
  });

  test('a client secret is sealed to the provider; without SSO_SECRETS_KEY it cannot be stored', async () => {
    const { service, admin, org, repos } = await setup({ allowPrivateNetworks: true });
    const created = await service.create(admin, org.id, oidcBody('http://127.0.0.1:1'));
    const stored = (await repos.authProviders.findById(created.id)) as AuthProvider;
    assert.equal(new SecretBox(KEY).open(stored.clientSecretCiphertext ?? '', created.id), 'the-client-secret');
    assert.ok(!JSON.stringify(created).includes('the-client-secret'));
    const audit = (await repos.audit.list({ orgId: org.id }, { limit: 100 })).items.filter((entry) => entry.resourceId === created.id);
    assert.equal(audit.length, 1);
    assert.ok(!JSON.stringify(audit).includes('the-client-secret'), 'the audit entry has no secret');

    const keyless = await setup({ allowPrivateNetworks: true, secrets: null });
    await rejectsWith(keyless.service.create(keyless.admin, keyless.org.id, oidcBody('http://127.0.0.1:1')), 'FAILED_PRECONDITION', /SSO_SECRETS_KEY/);
  });

  test('inline SAML metadata is parsed on save; an org holds a bounded number of providers', async () => {
    const { service, admin, org } = await setup();
    const idp = createTestSamlIdp();
    const saml = (xml: string) => ({ provider_type: 'saml', display_name: 'IdP', redirect_uris: ['https://app.example.com/'], saml: { idp_metadata_xml: xml } });
    await assert.rejects(service.create(admin, org.id, saml('<not-metadata/>')), (error: unknown) => {
      assert.ok(isDomainError(error) && error.code === 'INVALID_ARGUMENT', String(error));
      assert.equal(error.field, 'saml.idp_metadata_xml');
      assert.match(error.message, /^saml\.idp_metadata_xml: .*not a SAML 2\.0 EntityDescriptor/);
      return true;
    });
    const created = await service.create(admin, org.id, saml(idp.metadataXml));
    assert.equal(created.saml?.sp_entity_id, `https://flags.example.com/v1/auth/saml/${created.id}/metadata`);
    assert.equal(created.acs_url, 'https://flags.example.com/v1/auth/saml/acs');
    for (let i = 1; i < MAX_PROVIDERS_PER_ORG; i += 1) await service.create(admin, org.id, saml(idp.metadataXml));
    await rejectsWith(service.create(admin, org.id, saml(idp.metadataXml)), 'FAILED_PRECONDITION', /identity providers/);
  });
});

describe('SsoAccounts', () => {
  async function accounts() {
    const { repos, org, admin, service } = await setup({ allowPrivateNetworks: true });
    const record = await service.create(admin, org.id, oidcBody('http://127.0.0.1:1'));
    const provider = (await repos.authProviders.findById(record.id)) as AuthProvider;
    const hasher = { hash: async (p: string) => `hashed:${p}`, verify: async () => false };
    return { repos, org, provider, sso: new SsoAccounts(repos, hasher, Date.now) };
  }

  test('two first sign-ins of one person at once end in one account', async () => {
    const { repos, provider, sso, org } = await accounts();
    const identity = { subject: 'sub-1', email: 'pat@corp.example', emailVerified: true, displayName: 'Pat' };
    const [first, second] = await Promise.all([sso.resolve(provider, identity), sso.resolve(provider, identity)]);
    assert.equal(first, second);
    const members = (await repos.users.listOrgUsers({ orgId: org.id })).filter((m) => m.user.email !== 'admin@acme.example');
    assert.deepEqual(members.map((m) => [m.user.email, m.membership.role]), [['pat@corp.example', 'org_member']]);
    assert.equal(await repos.ssoIdentities.findUser(provider.id, 'sub-1'), first);
  });

  test('no subject or no usable email: refused, nothing created', async () => {
    const { repos, provider, sso, org } = await accounts();
    await rejectsWith(sso.resolve(provider, { subject: '', email: 'a@b.example', emailVerified: true, displayName: null }), 'PERMISSION_DENIED', /subject/);
    await rejectsWith(sso.resolve(provider, { subject: 's', email: null, emailVerified: true, displayName: null }), 'PERMISSION_DENIED', /email/);
    await rejectsWith(sso.resolve(provider, { subject: 's', email: 'not an email', emailVerified: true, displayName: null }), 'PERMISSION_DENIED', /email/);
    assert.deepEqual((await repos.users.listOrgUsers({ orgId: org.id })).map((m) => m.user.email), ['admin@acme.example'], 'only the admin');
  });

  test('control characters (U+0000 cannot even be stored) are refused in identifiers and dropped from names', async () => {
    const { repos, provider, sso, org } = await accounts();
    await rejectsWith(sso.resolve(provider, { subject: 'sub\u0000x', email: 'a@b.example', emailVerified: true, displayName: null }), 'PERMISSION_DENIED', /subject/);
    await rejectsWith(sso.resolve(provider, { subject: 's', email: 'a\u0000@b.example', emailVerified: true, displayName: null }), 'PERMISSION_DENIED', /email/);
    const userId = await sso.resolve(provider, { subject: 's', email: 'kim@b.example', emailVerified: true, displayName: 'Kim\u0000\u0007 Lee' });
    assert.equal((await repos.users.getById(userId))?.displayName, 'Kim Lee');
    assert.equal((await repos.users.listOrgUsers({ orgId: org.id })).length, 2, 'the admin and the one account');
  });
});

describe('SsoLoginService under a flood of starts', () => {
  test('a browser login lives in its cookie: a flood of starts stores nothing, and a login started before it still completes', async () => {
    const { repos, org, admin, service } = await setup({ allowPrivateNetworks: true });
    const record = await service.create(admin, org.id, oidcBody('http://127.0.0.1:1'));
    // An OpenID provider stand-in: every authorization gets its own state, and the callback
    // names who signed in (the flows themselves are tested against a real provider elsewhere).
    let issued = 0;
    const oidc = {
      authorize: async () => {
        issued += 1;
        return { url: `https://idp.example.com/authorize?state=s${issued}`, state: `s${issued}`, nonce: `n${issued}`, codeVerifier: `v${issued}` };
      },
      complete: async () => ({ issuer: 'https://idp.example.com', subject: 'real-person', email: 'real@corp.example', emailVerified: true, name: 'Real Person' }),
    } as unknown as OidcFlows;
    const sessions: Array<{ userId: string; orgId: string }> = [];
    const sso = new SsoLoginService({
      repos,
      auth: {
        openSessionFor: async (userId: string, orgId: string) => {
          sessions.push({ userId, orgId });
          return { accessToken: 't', expiresAtMs: 0, expiresIn: 0, refreshToken: 'r', userId, orgId, sessionId: 's' };
        },
      },
      hasher: { hash: async (p: string) => `hashed:${p}`, verify: async () => false },
      oidc,
      saml: new SamlFlows(),
      idpMetadata: new IdpMetadataSource(fetch),
      options: { publicUrl: 'https://flags.example.com', allowPrivateNetworks: true, secrets: new SecretBox(KEY) },
      maxPendingLoginsPerProvider: 5,
    });
    const app = 'https://app.example.com/signed-in';
    const person = await sso.startBrowserLogin(record.id, app, null); // the person, before the flood
    for (let i = 0; i < 20; i++) await sso.startBrowserLogin(record.id, app, null); // the flood: never refused
    assert.equal(person.cookie.name, `__Host-switchyard-sso-${sha256('s1').slice(0, 16)}`);
    const back = new URL((await sso.finishOidcBrowserLogin({ state: 's1', code: 'c' }, person.cookie.value)).location);
    assert.equal(back.searchParams.get('error'), null, back.href);
    const code = back.searchParams.get('code');
    assert.ok(code);
    await sso.exchangeCode(code);
    assert.equal(sessions.length, 1);
    assert.equal(sessions[0]!.orgId, org.id);
    // Another browser (no cookie, or another login's) gets nowhere with a state; a spent one neither.
    const other = await sso.startBrowserLogin(record.id, app, null);
    await rejectsWith(sso.finishOidcBrowserLogin({ state: 's2', code: 'c' }, null), 'UNAUTHENTICATED', /not started in this browser/);
    await rejectsWith(sso.finishOidcBrowserLogin({ state: 's2', code: 'c' }, other.cookie.value), 'UNAUTHENTICATED', /does not match/);
    await rejectsWith(sso.finishOidcBrowserLogin({ state: 's1', code: 'c' }, person.cookie.value), 'UNAUTHENTICATED', /already used/);
  });
});
