import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import type { Org, User } from '../../model/entities.ts';
import type { Repositories } from '../../ports/repositories.ts';
import type { AuthProvider, AuthProviderInput, PendingSsoLogin } from '../../ports/sso-ports.ts';
import { assertRecentMs, MALFORMED_ID, rejectsWithCode, unique, UNKNOWN_ID, useRepositories } from './tenancy-contract-support.ts';

/** The ports the SSO contracts exercise; orgs, users and sessions exist as the records' parents and neighbours. */
export type SsoRepositories = Pick<Repositories, 'orgs' | 'users' | 'sessions' | 'authProviders' | 'ssoLogins' | 'ssoIdentities'>;

/** Builds the repositories a suite runs against (a fresh in-memory state, a fresh database). */
export type MakeSsoRepositories = () => Promise<{ repos: SsoRepositories; close(): Promise<void> }>;

const HOUR_MS = 3_600_000;
/** Plenty for the tests' own creates: the cap is tested with its own small value. */
const MAX_PER_ORG = 100;
const MAX_LIVE = 1_000;

/** A state or code hash as the service would store it (the value itself is never stored). */
const randomHash = (): string => createHash('sha256').update(randomBytes(32)).digest('hex');

/** An OIDC provider's settings, all of them distinct so a mixed-up column shows. */
function oidcInput(overrides: Partial<AuthProviderInput> = {}): AuthProviderInput {
  return {
    id: randomUUID(),
    type: 'oidc',
    displayName: unique('Okta'),
    enabled: true,
    defaultRole: 'org_member',
    redirectUris: ['https://app.example.com/sso/done', 'http://localhost:5173/callback'],
    oidc: { issuerUrl: 'https://idp.example.com/realms/acme', clientId: unique('client'), scopes: ['openid', 'email', 'profile'] },
    saml: null,
    clientSecretCiphertext: `v1.${randomBytes(12).toString('base64url')}.${randomBytes(32).toString('base64url')}`,
    linkExistingAccounts: true,
    enableRequestedBy: null,
    updatedBy: null,
    ...overrides,
  };
}

/** A SAML provider's settings (inline metadata, no client secret). */
function samlInput(overrides: Partial<AuthProviderInput> = {}): AuthProviderInput {
  return {
    id: randomUUID(),
    type: 'saml',
    displayName: unique('ADFS'),
    enabled: false,
    defaultRole: 'org_admin',
    redirectUris: [],
    oidc: null,
    saml: {
      idpMetadataUrl: null,
      idpMetadataXml: '<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://adfs.example.com/"/>',
      nameIdFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
      spEntityId: 'https://switchyard.example.com/sso/saml',
      groupsAttribute: 'memberOf',
    },
    // Group mapping round-trips (ids are not checked here: the services check them against the org).
    groupBindings: [
      { group: 'cn=devs', bindings: [{ role: 'editor', projectId: randomUUID() }] },
      { group: '*', bindings: [{ role: 'viewer' }, { role: 'admin', projectId: 'p', environmentId: 'e' }] },
    ],
    clientSecretCiphertext: null,
    linkExistingAccounts: false,
    enableRequestedBy: null,
    updatedBy: null,
    ...overrides,
  };
}

const newOrg = (repos: SsoRepositories): Promise<Org> => repos.orgs.create({ name: unique('org') });

const newUser = (repos: SsoRepositories): Promise<User> =>
  repos.users.create({ email: `${unique('user')}@example.com`, displayName: 'SSO User', passwordHash: 'not-a-real-hash' });

/** A new org with one OIDC provider in it. */
async function orgWithProvider(repos: SsoRepositories): Promise<{ org: Org; provider: AuthProvider }> {
  const org = await newOrg(repos);
  return { org, provider: await repos.authProviders.create({ orgId: org.id }, oidcInput(), MAX_PER_ORG) };
}

/** A pending login of the provider, expiring in an hour unless told. */
function pendingInput(provider: AuthProvider, overrides: Partial<Omit<PendingSsoLogin, 'createdAtMs'>> = {}): Omit<PendingSsoLogin, 'createdAtMs'> {
  return {
    stateHash: randomHash(),
    providerId: provider.id,
    orgId: provider.orgId,
    redirectUri: 'https://switchyard.example.com/sso/oidc/callback',
    returnUri: 'https://app.example.com/sso/done',
    appState: 'app-state-123',
    nonce: randomBytes(16).toString('base64url'),
    codeVerifier: randomBytes(32).toString('base64url'),
    samlRequestId: null,
    expiresAtMs: Date.now() + HOUR_MS,
    ...overrides,
  };
}

const byId = (a: { id: string }, b: { id: string }): number => a.id.localeCompare(b.id);

/** The behaviour every AuthProviderRepository must show: org-scoped providers, capped per org, deleted with what hangs off them. */
export function authProviderRepositoryContract(name: string, makeRepos: MakeSsoRepositories): void {
  describe(`AuthProviderRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    test('create returns every field with the given id in the scope\'s org; get, findById and list give it back', async () => {
      const org = await newOrg(repos());
      for (const input of [oidcInput(), samlInput()]) {
        const provider = await repos().authProviders.create({ orgId: org.id }, input, MAX_PER_ORG);
        assert.deepEqual(
          { ...provider, createdAtMs: 0, updatedAtMs: 0 },
          { ...input, groupBindings: input.groupBindings ?? [], orgId: org.id, createdBy: null, writtenByUserIds: [], lastUsedAtMs: null, createdAtMs: 0, updatedAtMs: 0 },
          `${input.type}: settings, redirect URIs, group mapping (none given: none) and secret ciphertext round-trip`,
        );
        assertRecentMs(provider.createdAtMs);
        assert.equal(provider.updatedAtMs, provider.createdAtMs, 'a new provider was last updated when created');
        assert.deepEqual(await repos().authProviders.get({ orgId: org.id }, input.id), provider);
        assert.deepEqual(await repos().authProviders.findById(input.id), provider);
      }
      assert.equal((await repos().authProviders.list({ orgId: org.id })).length, 2);
    });

    test('list and get are scoped by org; another org\'s provider is NOT_FOUND for get, update and delete, and stays as it was', async () => {
      const mine = await orgWithProvider(repos());
      const second = await repos().authProviders.create({ orgId: mine.org.id }, samlInput(), MAX_PER_ORG);
      const theirs = await orgWithProvider(repos());
      assert.deepEqual((await repos().authProviders.list({ orgId: mine.org.id })).sort(byId), [mine.provider, second].sort(byId));
      assert.deepEqual(await repos().authProviders.list({ orgId: theirs.org.id }), [theirs.provider]);
      const scope = { orgId: mine.org.id };
      await rejectsWithCode(repos().authProviders.get(scope, theirs.provider.id), 'NOT_FOUND');
      await rejectsWithCode(repos().authProviders.update(scope, { ...oidcInput(), id: theirs.provider.id }), 'NOT_FOUND');
      await rejectsWithCode(repos().authProviders.delete(scope, theirs.provider.id), 'NOT_FOUND');
      assert.deepEqual(await repos().authProviders.get({ orgId: theirs.org.id }, theirs.provider.id), theirs.provider, 'untouched');
      assert.deepEqual(await repos().authProviders.findById(theirs.provider.id), theirs.provider, 'findById is unscoped');
    });

    test('unknown and malformed ids get NOT_FOUND or null, never a driver error', async () => {
      const { org, provider } = await orgWithProvider(repos());
      for (const id of [UNKNOWN_ID, MALFORMED_ID, '']) {
        await rejectsWithCode(repos().authProviders.get({ orgId: org.id }, id), 'NOT_FOUND');
        await rejectsWithCode(repos().authProviders.update({ orgId: org.id }, { ...oidcInput(), id }), 'NOT_FOUND');
        await rejectsWithCode(repos().authProviders.delete({ orgId: org.id }, id), 'NOT_FOUND');
        assert.equal(await repos().authProviders.findById(id), null, `findById(${JSON.stringify(id)})`);
      }
      for (const orgId of [UNKNOWN_ID, MALFORMED_ID]) {
        assert.deepEqual(await repos().authProviders.list({ orgId }), []);
        await rejectsWithCode(repos().authProviders.get({ orgId }, provider.id), 'NOT_FOUND');
        await rejectsWithCode(repos().authProviders.update({ orgId }, { ...oidcInput(), id: provider.id }), 'NOT_FOUND');
        await rejectsWithCode(repos().authProviders.delete({ orgId }, provider.id), 'NOT_FOUND');
      }
      assert.deepEqual(await repos().authProviders.findById(provider.id), provider);
    });

    test('create for an unknown or malformed org is NOT_FOUND and stores nothing', async () => {
      for (const orgId of [UNKNOWN_ID, MALFORMED_ID]) {
        const input = oidcInput();
        await rejectsWithCode(repos().authProviders.create({ orgId }, input, MAX_PER_ORG), 'NOT_FOUND');
        assert.equal(await repos().authProviders.findById(input.id), null);
      }
    });

    test('create refuses an org\'s provider beyond maxPerOrg with FAILED_PRECONDITION and stores nothing; other orgs are not counted', async () => {
      const org = await newOrg(repos());
      const other = await newOrg(repos());
      await repos().authProviders.create({ orgId: other.id }, oidcInput(), 3);
      const kept = [
        await repos().authProviders.create({ orgId: org.id }, oidcInput(), 2),
        await repos().authProviders.create({ orgId: org.id }, samlInput(), 2),
      ];
      const refused = oidcInput();
      await rejectsWithCode(repos().authProviders.create({ orgId: org.id }, refused, 2), 'FAILED_PRECONDITION');
      assert.equal(await repos().authProviders.findById(refused.id), null);
      assert.deepEqual((await repos().authProviders.list({ orgId: org.id })).sort(byId), kept.sort(byId));
      await rejectsWithCode(repos().authProviders.create({ orgId: other.id }, oidcInput(), 1), 'FAILED_PRECONDITION');
      assert.equal((await repos().authProviders.create({ orgId: other.id }, refused, 2)).id, refused.id, 'the other org has room for one more');
    });

    test('create with an id already taken is ALREADY_EXISTS and leaves the first provider as it was', async () => {
      const { provider } = await orgWithProvider(repos());
      const other = await newOrg(repos());
      await rejectsWithCode(repos().authProviders.create({ orgId: other.id }, samlInput({ id: provider.id }), MAX_PER_ORG), 'ALREADY_EXISTS');
      assert.deepEqual(await repos().authProviders.findById(provider.id), provider);
      assert.deepEqual(await repos().authProviders.list({ orgId: other.id }), []);
    });

    test('update replaces everything but id, org and creation time, and moves updatedAtMs strictly forward', async () => {
      const { org, provider } = await orgWithProvider(repos());
      const replacement = samlInput({ id: provider.id });
      const updated = await repos().authProviders.update({ orgId: org.id }, replacement);
      assert.deepEqual(
        { ...updated, updatedAtMs: 0 },
        { ...replacement, groupBindings: replacement.groupBindings ?? [], orgId: org.id, createdBy: null, writtenByUserIds: [], lastUsedAtMs: null, createdAtMs: provider.createdAtMs, updatedAtMs: 0 },
        'OIDC settings and secret gone, SAML settings and group mapping in',
      );
      assert.ok(updated.updatedAtMs > provider.updatedAtMs, `updatedAtMs ${updated.updatedAtMs} > ${provider.updatedAtMs}`);
      assertRecentMs(updated.updatedAtMs);
      assert.deepEqual(await repos().authProviders.get({ orgId: org.id }, provider.id), updated);
      const again = await repos().authProviders.update({ orgId: org.id }, oidcInput({ id: provider.id, redirectUris: ['https://b.example.com/'] }));
      assert.ok(again.updatedAtMs > updated.updatedAtMs, 'each update moves it on, even within one millisecond');
      assert.deepEqual(again.redirectUris, ['https://b.example.com/']);
      assert.deepEqual(again.groupBindings, [], 'an input without a group mapping stores none');
      assert.deepEqual(await repos().authProviders.findById(provider.id), again);
    });

    test('authors: the creator is kept; each update names its writer; everyone who wrote is listed once', async () => {
      const org = await newOrg(repos());
      const [ada, bob] = [{ userId: randomUUID(), email: 'ada@example.com' }, { userId: randomUUID(), email: null }];
      const created = await repos().authProviders.create({ orgId: org.id }, oidcInput({ updatedBy: ada }), MAX_PER_ORG);
      assert.deepEqual([created.createdBy, created.updatedBy, created.writtenByUserIds], [ada, ada, [ada.userId]]);
      const byBob = await repos().authProviders.update({ orgId: org.id }, oidcInput({ id: created.id, updatedBy: bob }));
      assert.deepEqual([byBob.createdBy, byBob.updatedBy, byBob.writtenByUserIds], [ada, bob, [ada.userId, bob.userId]]);
      const byAdaAgain = await repos().authProviders.update({ orgId: org.id }, oidcInput({ id: created.id, updatedBy: ada }));
      assert.deepEqual([byAdaAgain.updatedBy, byAdaAgain.writtenByUserIds], [ada, [ada.userId, bob.userId]]);
      assert.equal(byAdaAgain.lastUsedAtMs, null, 'never used');
    });

    test('disableWrittenBy disables the org\'s enabled or waiting providers the user wrote and answers them as they were', async () => {
      const org = await newOrg(repos());
      const other = await newOrg(repos());
      const ada = { userId: randomUUID(), email: 'ada@example.com' };
      const bob = { userId: randomUUID(), email: 'bob@example.com' };
      const scope = { orgId: org.id };
      const live = await repos().authProviders.create(scope, oidcInput({ updatedBy: ada }), MAX_PER_ORG);
      const waiting = await repos().authProviders.create(scope, oidcInput({ updatedBy: bob, enabled: false, enableRequestedBy: bob }), MAX_PER_ORG);
      await repos().authProviders.update(scope, oidcInput({ id: waiting.id, updatedBy: ada, enabled: false, enableRequestedBy: bob }));
      const off = await repos().authProviders.create(scope, oidcInput({ updatedBy: ada, enabled: false }), MAX_PER_ORG);
      const bobs = await repos().authProviders.create(scope, oidcInput({ updatedBy: bob }), MAX_PER_ORG);
      const elsewhere = await repos().authProviders.create({ orgId: other.id }, oidcInput({ updatedBy: ada }), MAX_PER_ORG);
      const before = await repos().authProviders.disableWrittenBy(scope, ada.userId);
      assert.deepEqual(before.map((p) => p.id).sort(), [live.id, waiting.id].sort());
      assert.equal(before.find((p) => p.id === live.id)?.enabled, true, 'answered as it was');
      assert.deepEqual(before.find((p) => p.id === waiting.id)?.enableRequestedBy, bob);
      for (const id of [live.id, waiting.id]) {
        const now = await repos().authProviders.get(scope, id);
        assert.deepEqual([now.enabled, now.enableRequestedBy], [false, null], 'disabled, no longer waiting');
      }
      assert.deepEqual(await repos().authProviders.get(scope, off.id), off, 'already disabled: untouched');
      assert.equal((await repos().authProviders.get(scope, bobs.id)).enabled, true, "another admin's provider stays");
      assert.equal((await repos().authProviders.get({ orgId: other.id }, elsewhere.id)).enabled, true, "another org's provider stays");
      assert.deepEqual(await repos().authProviders.disableWrittenBy(scope, ada.userId), [], 'nothing left to disable');
      assert.deepEqual(await repos().authProviders.disableWrittenBy(scope, MALFORMED_ID), []);
    });

    test('confirmEnable enables a waiting provider only for the same request and revision', async () => {
      const org = await newOrg(repos());
      const scope = { orgId: org.id };
      const ada = { userId: randomUUID(), email: 'ada@example.com' };
      const waiting = await repos().authProviders.create(scope, oidcInput({ updatedBy: ada, enabled: false, enableRequestedBy: ada }), MAX_PER_ORG);
      assert.equal(await repos().authProviders.confirmEnable(scope, waiting.id, { requestedByUserId: randomUUID(), updatedAtMs: waiting.updatedAtMs }), null);
      assert.equal(await repos().authProviders.confirmEnable(scope, waiting.id, { requestedByUserId: ada.userId, updatedAtMs: waiting.updatedAtMs - 1 }), null);
      assert.equal(await repos().authProviders.confirmEnable({ orgId: (await newOrg(repos())).id }, waiting.id, { requestedByUserId: ada.userId, updatedAtMs: waiting.updatedAtMs }), null);
      assert.deepEqual(await repos().authProviders.get(scope, waiting.id), waiting, 'refused confirmations change nothing');
      const confirmed = await repos().authProviders.confirmEnable(scope, waiting.id, { requestedByUserId: ada.userId, updatedAtMs: waiting.updatedAtMs });
      assert.deepEqual([confirmed?.enabled, confirmed?.enableRequestedBy], [true, null]);
      assert.ok((confirmed?.updatedAtMs ?? 0) > waiting.updatedAtMs);
      assert.equal(await repos().authProviders.confirmEnable(scope, waiting.id, { requestedByUserId: ada.userId, updatedAtMs: confirmed!.updatedAtMs }), null, 'once');
    });

    test('delete removes the provider with its pending logins, codes and identities; another provider\'s stay', async () => {
      const { org, provider } = await orgWithProvider(repos());
      const sibling = await repos().authProviders.create({ orgId: org.id }, oidcInput(), MAX_PER_ORG);
      const user = await newUser(repos());
      const nowMs = Date.now();
      const expiresAtMs = nowMs + HOUR_MS;
      const rows = new Map<string, { state: string; code: string; subject: string }>();
      for (const p of [provider, sibling]) {
        const row = { state: randomHash(), code: randomHash(), subject: unique('subject') };
        assert.equal(await repos().ssoLogins.createPending(pendingInput(p, { stateHash: row.state }), nowMs, MAX_LIVE), true);
        await repos().ssoLogins.createCode({ codeHash: row.code, providerId: p.id, userId: user.id, orgId: org.id, expiresAtMs });
        await repos().ssoIdentities.bind({ providerId: p.id, subject: row.subject, userId: user.id });
        rows.set(p.id, row);
      }
      await repos().authProviders.delete({ orgId: org.id }, provider.id);
      assert.equal(await repos().authProviders.findById(provider.id), null);
      await rejectsWithCode(repos().authProviders.get({ orgId: org.id }, provider.id), 'NOT_FOUND');
      await rejectsWithCode(repos().authProviders.delete({ orgId: org.id }, provider.id), 'NOT_FOUND');
      assert.deepEqual(await repos().authProviders.list({ orgId: org.id }), [sibling]);
      const gone = rows.get(provider.id)!;
      assert.equal(await repos().ssoLogins.consumePending(gone.state, nowMs), null, 'its pending login went with it');
      assert.equal(await repos().ssoLogins.consumeCode(gone.code, nowMs), null, 'its code went with it');
      assert.equal(await repos().ssoIdentities.findUser(provider.id, gone.subject), null, 'its identity went with it');
      const kept = rows.get(sibling.id)!;
      assert.equal(await repos().ssoIdentities.findUser(sibling.id, kept.subject), user.id);
      assert.equal((await repos().ssoLogins.consumePending(kept.state, nowMs))?.providerId, sibling.id);
      assert.deepEqual(await repos().ssoLogins.consumeCode(kept.code, nowMs), { providerId: sibling.id, userId: user.id, orgId: org.id });
      assert.ok(await repos().users.getByEmail(user.email), 'the account itself stays');
    });
  });
}

/** What SessionRecord.providerId must do in every SessionRepository. */
export function ssoSessionContract(name: string, makeRepos: MakeSsoRepositories): void {
  describe(`SessionRepository providerId contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    test('a session opened by a provider names it in get and listLive; one opened without names none', async () => {
      const { org, provider } = await orgWithProvider(repos());
      const user = await newUser(repos());
      const expiresAtMs = Date.now() + HOUR_MS;
      const bySso = await repos().sessions.create({ userId: user.id, orgId: org.id, expiresAtMs, providerId: provider.id });
      assert.equal(bySso.providerId, provider.id);
      assert.deepEqual(await repos().sessions.get(bySso.id), bySso);
      const byPassword = await repos().sessions.create({ userId: user.id, orgId: org.id, expiresAtMs });
      const explicitNull = await repos().sessions.create({ userId: user.id, orgId: org.id, expiresAtMs, providerId: null });
      for (const session of [byPassword, explicitNull]) {
        assert.equal(session.providerId, null);
        assert.equal((await repos().sessions.get(session.id))?.providerId, null);
      }
      const live = await repos().sessions.listLive(user.id, Date.now());
      assert.deepEqual(
        live.map((s) => [s.id, s.providerId]).sort(),
        [[bySso.id, provider.id], [byPassword.id, null], [explicitNull.id, null]].sort(),
      );
    });
  });
}

/** What a provider's sessions must do in every SessionRepository: opened only while it is enabled, ended with it. */
export function providerSessionContract(name: string, makeRepos: MakeSsoRepositories): void {
  describe(`SessionRepository provider sessions contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    test('a session opened by a provider stamps its last use; a disabled, waiting or other org\'s provider opens none', async () => {
      const { org, provider } = await orgWithProvider(repos());
      const user = await newUser(repos());
      const expiresAtMs = Date.now() + HOUR_MS;
      await repos().sessions.create({ userId: user.id, orgId: org.id, expiresAtMs, providerId: provider.id });
      assertRecentMs((await repos().authProviders.get({ orgId: org.id }, provider.id)).lastUsedAtMs ?? 0);
      const off = await repos().authProviders.create({ orgId: org.id }, oidcInput({ enabled: false }), MAX_PER_ORG);
      const waiting = await repos().authProviders.create({ orgId: org.id }, oidcInput({ enabled: false, enableRequestedBy: { userId: user.id, email: null } }), MAX_PER_ORG);
      const other = await repos().orgs.create({ name: unique('org') });
      for (const providerId of [off.id, waiting.id, UNKNOWN_ID, MALFORMED_ID]) {
        await rejectsWithCode(repos().sessions.create({ userId: user.id, orgId: org.id, expiresAtMs, providerId }), 'FAILED_PRECONDITION');
      }
      await rejectsWithCode(repos().sessions.create({ userId: user.id, orgId: other.id, expiresAtMs, providerId: provider.id }), 'FAILED_PRECONDITION');
      assert.equal((await repos().authProviders.get({ orgId: org.id }, off.id)).lastUsedAtMs, null);
      assert.equal((await repos().sessions.listLive(user.id, Date.now())).length, 1, 'only the enabled provider opened one');
    });

    test('endOpenedBy ends the live sessions the providers opened and names their users once; others stay', async () => {
      const { org, provider } = await orgWithProvider(repos());
      const sibling = await repos().authProviders.create({ orgId: org.id }, oidcInput(), MAX_PER_ORG);
      const [ada, bob, cy] = [await newUser(repos()), await newUser(repos()), await newUser(repos())];
      const expiresAtMs = Date.now() + HOUR_MS;
      const open = (userId: string, providerId: string | null) => repos().sessions.create({ userId, orgId: org.id, expiresAtMs, providerId });
      await open(ada.id, provider.id);
      await open(ada.id, provider.id);
      await open(bob.id, provider.id);
      const adaPassword = await open(ada.id, null);
      const cySibling = await open(cy.id, sibling.id);
      const nowMs = Date.now();
      assert.deepEqual((await repos().sessions.endOpenedBy([provider.id], nowMs)).sort(), [ada.id, bob.id].sort());
      assert.deepEqual((await repos().sessions.listLive(ada.id, nowMs)).map((s) => s.id), [adaPassword.id], "ada's password session stays");
      assert.deepEqual(await repos().sessions.listLive(bob.id, nowMs), []);
      assert.deepEqual((await repos().sessions.listLive(cy.id, nowMs)).map((s) => s.id), [cySibling.id], "another provider's session stays");
      assert.deepEqual(await repos().sessions.endOpenedBy([provider.id], nowMs), [], 'already ended');
      assert.deepEqual(await repos().sessions.endOpenedBy([MALFORMED_ID, UNKNOWN_ID], nowMs), []);
      assert.deepEqual(await repos().sessions.endOpenedBy([], nowMs), []);
    });
  });
}

/** The behaviour every SsoLoginRepository must show: pending logins and codes found by hash and spent once. */
export function ssoLoginRepositoryContract(name: string, makeRepos: MakeSsoRepositories): void {
  describe(`SsoLoginRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    test('createPending stores it; consumePending returns every field once, then null', async () => {
      const { provider } = await orgWithProvider(repos());
      const nowMs = Date.now();
      for (const input of [
        pendingInput(provider),
        pendingInput(provider, { returnUri: null, nonce: null, codeVerifier: null, samlRequestId: `_${randomUUID()}` }),
      ]) {
        assert.equal(await repos().ssoLogins.createPending(input, nowMs, MAX_LIVE), true);
        assert.deepEqual(await repos().ssoLogins.consumePending(input.stateHash, nowMs + 1), { ...input, createdAtMs: nowMs });
        assert.equal(await repos().ssoLogins.consumePending(input.stateHash, nowMs + 1), null, 'single use');
      }
      assert.equal(await repos().ssoLogins.consumePending(randomHash(), nowMs), null, 'unknown hash');
      assert.equal(await repos().ssoLogins.consumePending('', nowMs), null);
    });

    test('an expired pending login is not returned, and is spent all the same', async () => {
      const { provider } = await orgWithProvider(repos());
      const nowMs = Date.now();
      const input = pendingInput(provider, { expiresAtMs: nowMs + 1_000 });
      assert.equal(await repos().ssoLogins.createPending(input, nowMs, MAX_LIVE), true);
      assert.equal(await repos().ssoLogins.consumePending(input.stateHash, input.expiresAtMs), null, 'expiresAtMs == nowMs is expired');
      assert.equal(await repos().ssoLogins.consumePending(input.stateHash, nowMs), null, 'gone: not even an earlier clock finds it');
    });

    test('createPending with a state hash already stored is ALREADY_EXISTS and keeps the first', async () => {
      const { provider } = await orgWithProvider(repos());
      const nowMs = Date.now();
      const first = pendingInput(provider);
      assert.equal(await repos().ssoLogins.createPending(first, nowMs, MAX_LIVE), true);
      await rejectsWithCode(repos().ssoLogins.createPending(pendingInput(provider, { stateHash: first.stateHash }), nowMs, MAX_LIVE), 'ALREADY_EXISTS');
      assert.deepEqual(await repos().ssoLogins.consumePending(first.stateHash, nowMs), { ...first, createdAtMs: nowMs });
    });

    test('createPending keeps at most maxLivePerProvider unexpired logins per provider, dropping its oldest; other providers keep theirs', async () => {
      const { org, provider } = await orgWithProvider(repos());
      const other = await repos().authProviders.create({ orgId: org.id }, oidcInput(), MAX_PER_ORG);
      const t = Date.now();
      // Two logins that are live when stored but expired at t (expiresAtMs == t): they do not count.
      const expired = [pendingInput(provider, { expiresAtMs: t }), pendingInput(provider, { expiresAtMs: t })];
      for (const input of expired) assert.equal(await repos().ssoLogins.createPending(input, t - 100, MAX_LIVE), true);
      const others = pendingInput(other);
      assert.equal(await repos().ssoLogins.createPending(others, t, 2), true, 'another provider\'s login');
      // Stored a millisecond apart, so "oldest" is well defined.
      const logins = [pendingInput(provider), pendingInput(provider), pendingInput(provider), pendingInput(provider)];
      for (const [i, input] of logins.entries()) assert.equal(await repos().ssoLogins.createPending(input, t + i, 2), true, `login ${i} is stored`);
      const left = [];
      for (const input of logins) left.push((await repos().ssoLogins.consumePending(input.stateHash, t + 10)) !== null);
      assert.deepEqual(left, [false, false, true, true], 'the two newest are kept, the oldest made room');
      assert.equal((await repos().ssoLogins.consumePending(others.stateHash, t + 10))?.stateHash, others.stateHash, 'the other provider\'s login stays');
      const none = pendingInput(provider);
      assert.equal(await repos().ssoLogins.createPending(none, t, 0), false, 'a cap of 0 stores nothing');
      assert.equal(await repos().ssoLogins.consumePending(none.stateHash, t), null);
    });

    test('concurrent createPending at the cap all succeed (never a deadlock), and the cap still bounds the provider', async () => {
      const { provider } = await orgWithProvider(repos());
      const cap = 3;
      for (let round = 0; round < 5; round += 1) {
        const nowMs = Date.now();
        const inputs = Array.from({ length: 40 }, () => pendingInput(provider));
        const outcomes = await Promise.all(inputs.map((input) => repos().ssoLogins.createPending(input, nowMs, cap)));
        assert.deepEqual(new Set(outcomes), new Set([true]), `round ${round}: every start is stored`);
      }
      // Overshoot under concurrency is allowed (it bounds the table, it is not a quota); a quiet start trims back.
      const last = pendingInput(provider);
      assert.equal(await repos().ssoLogins.createPending(last, Date.now(), cap), true);
      assert.ok((await repos().ssoLogins.consumePending(last.stateHash, Date.now())) !== null);
    });

    test('createPending for an unknown or malformed provider or org, or an org not the provider\'s, returns false and stores nothing', async () => {
      const { provider } = await orgWithProvider(repos());
      const otherOrg = await newOrg(repos());
      const nowMs = Date.now();
      for (const ids of [
        { providerId: UNKNOWN_ID },
        { providerId: MALFORMED_ID },
        { orgId: UNKNOWN_ID },
        { orgId: MALFORMED_ID },
        { orgId: otherOrg.id },
      ]) {
        const input = pendingInput(provider, ids);
        assert.equal(await repos().ssoLogins.createPending(input, nowMs, MAX_LIVE), false, JSON.stringify(ids));
        assert.equal(await repos().ssoLogins.consumePending(input.stateHash, nowMs), null, `${JSON.stringify(ids)}: not stored`);
      }
    });

    test('concurrent consumePending of one state: exactly one wins', async () => {
      const { provider } = await orgWithProvider(repos());
      for (let round = 0; round < 5; round += 1) {
        const nowMs = Date.now();
        const input = pendingInput(provider);
        assert.equal(await repos().ssoLogins.createPending(input, nowMs, MAX_LIVE), true);
        const outcomes = await Promise.all(Array.from({ length: 5 }, () => repos().ssoLogins.consumePending(input.stateHash, nowMs)));
        const winners = outcomes.filter((outcome) => outcome !== null);
        assert.equal(winners.length, 1, `round ${round}: exactly one consume succeeds`);
        assert.deepEqual(winners[0], { ...input, createdAtMs: nowMs });
      }
    });

    test('createCode then consumeCode returns the grant once; an expired code is null and spent', async () => {
      const { org, provider } = await orgWithProvider(repos());
      const user = await newUser(repos());
      const nowMs = Date.now();
      const grant = { providerId: provider.id, userId: user.id, orgId: org.id };
      const code = randomHash();
      await repos().ssoLogins.createCode({ ...grant, codeHash: code, expiresAtMs: nowMs + 60_000 });
      assert.deepEqual(await repos().ssoLogins.consumeCode(code, nowMs), grant);
      assert.equal(await repos().ssoLogins.consumeCode(code, nowMs), null, 'single use');
      assert.equal(await repos().ssoLogins.consumeCode(randomHash(), nowMs), null, 'unknown hash');
      assert.equal(await repos().ssoLogins.consumeCode('', nowMs), null);
      const expiring = randomHash();
      await repos().ssoLogins.createCode({ ...grant, codeHash: expiring, expiresAtMs: nowMs + 60_000 });
      assert.equal(await repos().ssoLogins.consumeCode(expiring, nowMs + 60_000), null, 'expiresAtMs == nowMs is expired');
      assert.equal(await repos().ssoLogins.consumeCode(expiring, nowMs), null, 'gone: not even an earlier clock finds it');
    });

    test('createCode with a hash already stored is ALREADY_EXISTS; for an unknown or malformed provider, user or org NOT_FOUND', async () => {
      const { org, provider } = await orgWithProvider(repos());
      const user = await newUser(repos());
      const nowMs = Date.now();
      const grant = { providerId: provider.id, userId: user.id, orgId: org.id };
      const code = randomHash();
      await repos().ssoLogins.createCode({ ...grant, codeHash: code, expiresAtMs: nowMs + 60_000 });
      const other = await newUser(repos());
      await rejectsWithCode(repos().ssoLogins.createCode({ ...grant, userId: other.id, codeHash: code, expiresAtMs: nowMs + 60_000 }), 'ALREADY_EXISTS');
      assert.deepEqual(await repos().ssoLogins.consumeCode(code, nowMs), grant, 'the first grant stays');
      for (const ids of [
        { providerId: UNKNOWN_ID },
        { providerId: MALFORMED_ID },
        { userId: UNKNOWN_ID },
        { userId: MALFORMED_ID },
        { orgId: UNKNOWN_ID },
        { orgId: MALFORMED_ID },
      ]) {
        const codeHash = randomHash();
        await rejectsWithCode(repos().ssoLogins.createCode({ ...grant, ...ids, codeHash, expiresAtMs: nowMs + 60_000 }), 'NOT_FOUND');
        assert.equal(await repos().ssoLogins.consumeCode(codeHash, nowMs), null, `${JSON.stringify(ids)}: not stored`);
      }
    });

    test('concurrent consumeCode of one code: exactly one wins', async () => {
      const { org, provider } = await orgWithProvider(repos());
      const user = await newUser(repos());
      const grant = { providerId: provider.id, userId: user.id, orgId: org.id };
      for (let round = 0; round < 5; round += 1) {
        const nowMs = Date.now();
        const codeHash = randomHash();
        await repos().ssoLogins.createCode({ ...grant, codeHash, expiresAtMs: nowMs + 60_000 });
        const outcomes = await Promise.all(Array.from({ length: 5 }, () => repos().ssoLogins.consumeCode(codeHash, nowMs)));
        const winners = outcomes.filter((outcome) => outcome !== null);
        assert.equal(winners.length, 1, `round ${round}: exactly one consume succeeds`);
        assert.deepEqual(winners[0], grant);
      }
    });

    test('spendState is true once per state hash, also under concurrent calls; other hashes are independent', async () => {
      const expiresAtMs = Date.now() + 600_000;
      for (let round = 0; round < 5; round += 1) {
        const stateHash = randomHash();
        assert.equal(await repos().ssoLogins.isStateSpent(stateHash), false, 'not spent before');
        const outcomes = await Promise.all(Array.from({ length: 5 }, () => repos().ssoLogins.spendState(stateHash, expiresAtMs)));
        assert.equal(outcomes.filter(Boolean).length, 1, `round ${round}: exactly one spend succeeds`);
        assert.equal(await repos().ssoLogins.spendState(stateHash, expiresAtMs), false, 'spent stays spent');
        assert.equal(await repos().ssoLogins.isStateSpent(stateHash), true);
      }
    });

    test('pruneExpired deletes expired spent states, at most limit per call; a live one stays spent', async () => {
      const cutoff = 10_000;
      while ((await repos().ssoLogins.pruneExpired(cutoff, 1_000)) > 0);
      const expired = [randomHash(), randomHash()];
      for (const [i, stateHash] of expired.entries()) assert.equal(await repos().ssoLogins.spendState(stateHash, 1_000 + i), true);
      const live = randomHash();
      assert.equal(await repos().ssoLogins.spendState(live, cutoff + 1), true);
      assert.equal(await repos().ssoLogins.pruneExpired(cutoff, 1), 1, 'the batch limit holds');
      assert.equal(await repos().ssoLogins.pruneExpired(cutoff, 5), 1);
      assert.equal(await repos().ssoLogins.pruneExpired(cutoff, 5), 0);
      assert.equal(await repos().ssoLogins.spendState(live, cutoff + 1), false, 'a live spent state is kept');
      // Pruned: its sealed login has expired too, so spending the hash again opens nothing.
      assert.equal(await repos().ssoLogins.spendState(expired[0]!, 1_000), true);
    });

    test('pruneExpired deletes expired pending logins and codes, at most limit per call; live ones stay', async () => {
      const { org, provider } = await orgWithProvider(repos());
      const user = await newUser(repos());
      const cutoff = 10_000;
      // Earlier tests may have left logins expired by 1970 + 10 s: clear them so the counts are exact.
      while ((await repos().ssoLogins.pruneExpired(cutoff, 1_000)) > 0);
      // Expiries in 1970: no other test's row is that old.
      const expiredStates = [pendingInput(provider, { expiresAtMs: 1_000 }), pendingInput(provider, { expiresAtMs: cutoff })];
      for (const input of expiredStates) assert.equal(await repos().ssoLogins.createPending(input, 500, MAX_LIVE), true);
      const grant = { providerId: provider.id, userId: user.id, orgId: org.id };
      const expiredCodes = [randomHash(), randomHash()];
      for (const [i, codeHash] of expiredCodes.entries()) await repos().ssoLogins.createCode({ ...grant, codeHash, expiresAtMs: 2_000 + i });
      const liveState = pendingInput(provider, { expiresAtMs: cutoff + 1 });
      assert.equal(await repos().ssoLogins.createPending(liveState, 500, MAX_LIVE), true);
      const liveCode = randomHash();
      await repos().ssoLogins.createCode({ ...grant, codeHash: liveCode, expiresAtMs: cutoff + 1 });

      assert.equal(await repos().ssoLogins.pruneExpired(cutoff, 0), 0, 'a limit of 0 deletes nothing');
      assert.equal(await repos().ssoLogins.pruneExpired(cutoff, 3), 3, 'the batch limit holds');
      assert.equal(await repos().ssoLogins.pruneExpired(cutoff, 3), 1);
      assert.equal(await repos().ssoLogins.pruneExpired(cutoff, 3), 0);
      for (const input of expiredStates) assert.equal(await repos().ssoLogins.consumePending(input.stateHash, 500), null, 'pruned');
      for (const codeHash of expiredCodes) assert.equal(await repos().ssoLogins.consumeCode(codeHash, 500), null, 'pruned');
      assert.equal((await repos().ssoLogins.consumePending(liveState.stateHash, cutoff))?.stateHash, liveState.stateHash, 'a live login stays');
      assert.deepEqual(await repos().ssoLogins.consumeCode(liveCode, cutoff), grant, 'a live code stays');
    });
  });
}

/** The behaviour every SsoIdentityRepository must show: one account per (provider, subject), provisioned all or nothing. */
export function ssoIdentityRepositoryContract(name: string, makeRepos: MakeSsoRepositories): void {
  describe(`SsoIdentityRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    const provisionInput = (org: Org, provider: AuthProvider) => ({
      providerId: provider.id,
      subject: unique('subject'),
      orgId: org.id,
      role: 'org_member' as const,
      email: `${unique('sso')}@example.com`,
      displayName: 'Provisioned User',
      passwordHash: 'unusable-password-hash',
    });

    test('bind then findUser gives the account; unknown, malformed and other-provider lookups give null', async () => {
      const { provider } = await orgWithProvider(repos());
      const user = await newUser(repos());
      const subject = unique('subject');
      assert.equal(await repos().ssoIdentities.findUser(provider.id, subject), null);
      await repos().ssoIdentities.bind({ providerId: provider.id, subject, userId: user.id });
      assert.equal(await repos().ssoIdentities.findUser(provider.id, subject), user.id);
      assert.equal(await repos().ssoIdentities.findUser(provider.id, subject.toUpperCase()), null, 'subjects are exact');
      assert.equal(await repos().ssoIdentities.findUser(provider.id, unique('subject')), null);
      assert.equal(await repos().ssoIdentities.findUser(UNKNOWN_ID, subject), null);
      assert.equal(await repos().ssoIdentities.findUser(MALFORMED_ID, subject), null);
    });

    test('binding a (provider, subject) twice is ALREADY_EXISTS and keeps the first account', async () => {
      const { provider } = await orgWithProvider(repos());
      const first = await newUser(repos());
      const second = await newUser(repos());
      const subject = unique('subject');
      await repos().ssoIdentities.bind({ providerId: provider.id, subject, userId: first.id });
      await rejectsWithCode(repos().ssoIdentities.bind({ providerId: provider.id, subject, userId: second.id }), 'ALREADY_EXISTS');
      await rejectsWithCode(repos().ssoIdentities.bind({ providerId: provider.id, subject, userId: first.id }), 'ALREADY_EXISTS');
      assert.equal(await repos().ssoIdentities.findUser(provider.id, subject), first.id);
    });

    test('the same subject under another provider is a different identity', async () => {
      const { org, provider } = await orgWithProvider(repos());
      const other = await repos().authProviders.create({ orgId: org.id }, samlInput(), MAX_PER_ORG);
      const first = await newUser(repos());
      const second = await newUser(repos());
      const subject = unique('subject');
      await repos().ssoIdentities.bind({ providerId: provider.id, subject, userId: first.id });
      assert.equal(await repos().ssoIdentities.findUser(other.id, subject), null);
      await repos().ssoIdentities.bind({ providerId: other.id, subject, userId: second.id });
      assert.equal(await repos().ssoIdentities.findUser(provider.id, subject), first.id);
      assert.equal(await repos().ssoIdentities.findUser(other.id, subject), second.id);
    });

    test('bind for an unknown or malformed provider or user is NOT_FOUND and binds nothing', async () => {
      const { provider } = await orgWithProvider(repos());
      const user = await newUser(repos());
      for (const ids of [{ providerId: UNKNOWN_ID }, { providerId: MALFORMED_ID }, { userId: UNKNOWN_ID }, { userId: MALFORMED_ID }]) {
        const input = { providerId: provider.id, subject: unique('subject'), userId: user.id, ...ids };
        await rejectsWithCode(repos().ssoIdentities.bind(input), 'NOT_FOUND');
        assert.equal(await repos().ssoIdentities.findUser(provider.id, input.subject), null, JSON.stringify(ids));
      }
    });

    test('provision creates the account, its membership with the role and the binding', async () => {
      const { org, provider } = await orgWithProvider(repos());
      for (const role of ['org_member', 'org_admin'] as const) {
        const input = { ...provisionInput(org, provider), role };
        const { user, membership } = await repos().ssoIdentities.provision(input);
        assert.deepEqual(
          { ...user, id: '', createdAtMs: 0 },
          { id: '', email: input.email, displayName: input.displayName, passwordHash: input.passwordHash, createdAtMs: 0, emailVerifiedAtMs: null },
        );
        assertRecentMs(user.createdAtMs);
        assert.deepEqual({ ...membership, createdAtMs: 0 }, { orgId: org.id, userId: user.id, role, createdAtMs: 0, bindings: null });
        assertRecentMs(membership.createdAtMs);
        assert.deepEqual(await repos().users.getByEmail(input.email), user);
        assert.deepEqual(await repos().users.getMembership(org.id, user.id), membership);
        assert.equal(await repos().ssoIdentities.findUser(provider.id, input.subject), user.id);
      }
    });

    test('provision for an email that has an account (any case) is ALREADY_EXISTS and creates no account, membership or binding', async () => {
      const { org, provider } = await orgWithProvider(repos());
      const existing = await newUser(repos());
      const membersBefore = await repos().users.listOrgUsers({ orgId: org.id });
      const input = { ...provisionInput(org, provider), email: existing.email.toUpperCase() };
      await rejectsWithCode(repos().ssoIdentities.provision(input), 'ALREADY_EXISTS');
      assert.deepEqual(await repos().users.getByEmail(input.email), existing, 'still the one account, unchanged');
      assert.deepEqual(await repos().users.listMemberships(existing.id), [], 'the existing account was not made a member');
      assert.deepEqual(await repos().users.listOrgUsers({ orgId: org.id }), membersBefore, 'no membership was created');
      assert.equal(await repos().ssoIdentities.findUser(provider.id, input.subject), null, 'no binding was created');
    });

    test('provision for a subject already bound is ALREADY_EXISTS and creates no account or membership', async () => {
      const { org, provider } = await orgWithProvider(repos());
      const first = provisionInput(org, provider);
      const firstResult = await repos().ssoIdentities.provision(first);
      const membersBefore = await repos().users.listOrgUsers({ orgId: org.id });
      const second = { ...provisionInput(org, provider), subject: first.subject };
      await rejectsWithCode(repos().ssoIdentities.provision(second), 'ALREADY_EXISTS');
      assert.equal(await repos().users.getByEmail(second.email), null, 'no account with the new email');
      assert.deepEqual(await repos().users.listOrgUsers({ orgId: org.id }), membersBefore, 'no membership was created');
      assert.equal(await repos().ssoIdentities.findUser(provider.id, first.subject), firstResult.user.id, 'the binding is unchanged');
    });

    test('provision for an unknown or malformed provider or org is NOT_FOUND and creates nothing', async () => {
      const { org, provider } = await orgWithProvider(repos());
      for (const ids of [{ providerId: UNKNOWN_ID }, { providerId: MALFORMED_ID }, { orgId: UNKNOWN_ID }, { orgId: MALFORMED_ID }]) {
        const input = { ...provisionInput(org, provider), ...ids };
        await rejectsWithCode(repos().ssoIdentities.provision(input), 'NOT_FOUND');
        assert.equal(await repos().users.getByEmail(input.email), null, `${JSON.stringify(ids)}: no account`);
        assert.equal(await repos().ssoIdentities.findUser(provider.id, input.subject), null, `${JSON.stringify(ids)}: no binding`);
      }
    });
  });
}

/** Every SSO-related repository contract. */
export function ssoRepositoriesContract(name: string, makeRepos: MakeSsoRepositories): void {
  authProviderRepositoryContract(name, makeRepos);
  ssoSessionContract(name, makeRepos);
  providerSessionContract(name, makeRepos);
  ssoLoginRepositoryContract(name, makeRepos);
  ssoIdentityRepositoryContract(name, makeRepos);
}
