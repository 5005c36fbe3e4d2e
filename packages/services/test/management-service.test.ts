import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { isDomainError, type DomainError, type ErrorCode, type Principal } from '@switchyard/core';
import { InMemoryChangeNotifier, InMemoryState, createInMemoryRepositories } from '@switchyard/core/testing';
import { BcryptPasswordHasher, ManagementService, SDK_KEY_REVOKED_CHANNEL, SESSION_CHANGED_CHANNEL, type SdkKeyRecord } from '../src/index.ts';

const hasher = new BcryptPasswordHasher(4);
const NOW = Date.UTC(2030, 0, 1);

let state: InMemoryState;
let notifier: InMemoryChangeNotifier;
let revokedHere: string[];
let management: ManagementService;
let root: Principal;
let adminA: Principal;
let memberA: Principal;
let adminB: Principal;
let orgA: string;
let orgB: string;
let projectA: string;
let environmentA: string;
let projectB: string;
let environmentB: string;
let keyB: SdkKeyRecord;
let sessionChanges: string[];

async function rejectsWith(call: Promise<unknown>, code: ErrorCode): Promise<DomainError> {
  let caught: unknown;
  await assert.rejects(call, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(isDomainError(caught), `a DomainError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  return caught;
}

const userPrincipal = (user: { user_id: string; org_id: string; org_role: 'org_admin' | 'org_member' }, isSystem = false): Principal => ({
  kind: 'user',
  userId: user.user_id,
  orgId: user.org_id,
  role: user.org_role,
  isSystem,
});

const newUser = (email: string, extra: { orgRole?: string; password?: string } = {}) => ({
  email,
  displayName: email.split('@')[0],
  password: extra.password ?? `${email}-password`,
  orgRole: extra.orgRole,
});

beforeEach(async () => {
  state = new InMemoryState();
  const repos = createInMemoryRepositories(state);
  notifier = new InMemoryChangeNotifier();
  revokedHere = [];
  management = new ManagementService(repos, hasher, notifier, (id) => revokedHere.push(id), () => NOW);
  sessionChanges = [];
  await notifier.subscribe(SESSION_CHANGED_CHANNEL, (userId) => sessionChanges.push(userId));

  const systemOrg = await repos.orgs.create({ name: 'system', isSystem: true });
  const rootUser = await repos.users.create({ email: 'root@example.com', displayName: 'Root', passwordHash: await hasher.hash('root-password') });
  await repos.users.addMembership({ orgId: systemOrg.id, userId: rootUser.id, role: 'org_admin' });
  root = { kind: 'user', userId: rootUser.id, orgId: systemOrg.id, role: 'org_admin', isSystem: true };

  orgA = (await management.createOrg(root, { name: 'Acme' })).org_id;
  orgB = (await management.createOrg(root, { name: 'Globex' })).org_id;
  adminA = userPrincipal(await management.seedUser(root, orgA, newUser('admin-a@example.com')));
  adminB = userPrincipal(await management.seedUser(root, orgB, newUser('admin-b@example.com')));
  memberA = userPrincipal(await management.createUser(adminA, undefined, newUser('member-a@example.com')));

  projectA = (await management.createProject(adminA, undefined, { name: 'Web' })).project_id;
  environmentA = (await management.createEnvironment(adminA, projectA, { name: 'production' })).environment_id;
  projectB = (await management.createProject(adminB, undefined, { name: 'Web' })).project_id;
  environmentB = (await management.createEnvironment(adminB, projectB, { name: 'production' })).environment_id;
  keyB = await management.createSdkKey(adminB, environmentB);
});

describe('ManagementService: what each role may do', () => {
  test('seeded users default to org_admin, users created in an org to org_member', async () => {
    assert.equal(adminA.kind === 'user' && adminA.role, 'org_admin');
    assert.equal(memberA.kind === 'user' && memberA.role, 'org_member');
    assert.equal(memberA.orgId, orgA);
    const explicit = await management.createUser(adminA, orgA, newUser('second-admin@example.com', { orgRole: 'org_admin' }));
    assert.equal(explicit.org_role, 'org_admin');
    const inSystem = await management.seedUser(root, undefined, newUser('root2@example.com'));
    assert.equal(inSystem.org_id, root.orgId, 'no org: the system org');
  });

  test('system-org users run the platform calls and nothing inside an org', async () => {
    assert.deepEqual((await management.listOrgs(root)).map((org) => org.org_name), ['system', 'Acme', 'Globex']);
    await rejectsWith(management.createProject(root, orgA, { name: 'Sneaky' }), 'PERMISSION_DENIED');
    await rejectsWith(management.createProject(root, undefined, { name: 'Sneaky' }), 'PERMISSION_DENIED');
    await rejectsWith(management.createEnvironment(root, projectA, { name: 'x' }), 'PERMISSION_DENIED');
    await rejectsWith(management.createSdkKey(root, environmentA), 'PERMISSION_DENIED');
    await rejectsWith(management.listProjects(root, orgA), 'PERMISSION_DENIED');
    await rejectsWith(management.createUser(root, orgA, newUser('x@example.com')), 'PERMISSION_DENIED');
  });

  test('org users may not run the platform calls', async () => {
    for (const principal of [adminA, memberA]) {
      await rejectsWith(management.createOrg(principal, { name: 'Mine' }), 'PERMISSION_DENIED');
      await rejectsWith(management.listOrgs(principal), 'PERMISSION_DENIED');
      await rejectsWith(management.seedUser(principal, principal.orgId, newUser('x@example.com')), 'PERMISSION_DENIED');
    }
  });

  test('an org_member reads but may not create projects, environments, SDK keys or users, nor delete keys', async () => {
    assert.equal((await management.listProjects(memberA, orgA)).length, 1);
    assert.equal((await management.listEnvironments(memberA, projectA)).length, 1);
    assert.equal((await management.listUsers(memberA, orgA)).length, 2);
    await rejectsWith(management.createProject(memberA, undefined, { name: 'Nope' }), 'PERMISSION_DENIED');
    await rejectsWith(management.createEnvironment(memberA, projectA, { name: 'nope' }), 'PERMISSION_DENIED');
    await rejectsWith(management.createSdkKey(memberA, environmentA), 'PERMISSION_DENIED');
    await rejectsWith(management.createUser(memberA, undefined, newUser('friend@example.com')), 'PERMISSION_DENIED');
    const key = await management.createSdkKey(adminA, environmentA);
    await management.createSdkKey(adminA, environmentA);
    await rejectsWith(management.deleteSdkKey(memberA, environmentA, key.sdk_key_id), 'PERMISSION_DENIED');
    assert.equal(state.projects.size, 2);
    assert.equal(state.users.size, 4);
  });

  test('an SDK key is not a management credential', async () => {
    const sdkKey: Principal = { kind: 'sdk_key', sdkKeyId: keyB.sdk_key_id, orgId: orgB, projectId: projectB, environmentId: environmentB };
    await rejectsWith(management.listProjects(sdkKey, orgB), 'PERMISSION_DENIED');
    await rejectsWith(management.listSdkKeys(sdkKey, environmentB), 'PERMISSION_DENIED');
    await rejectsWith(management.createSdkKey(sdkKey, environmentB), 'PERMISSION_DENIED');
  });
});

describe('ManagementService: tenancy', () => {
  test('another org\'s org, project, environment and key ids are NOT_FOUND', async () => {
    await rejectsWith(management.createProject(adminA, orgB, { name: 'Into B' }), 'NOT_FOUND');
    await rejectsWith(management.listProjects(adminA, orgB), 'NOT_FOUND');
    await rejectsWith(management.createEnvironment(adminA, projectB, { name: 'into-b' }), 'NOT_FOUND');
    await rejectsWith(management.listEnvironments(adminA, projectB), 'NOT_FOUND');
    await rejectsWith(management.createSdkKey(adminA, environmentB), 'NOT_FOUND');
    await rejectsWith(management.listSdkKeys(adminA, environmentB), 'NOT_FOUND');
    await rejectsWith(management.deleteSdkKey(adminA, environmentB, keyB.sdk_key_id), 'NOT_FOUND');
    await rejectsWith(management.createUser(adminA, orgB, newUser('spy@example.com')), 'NOT_FOUND');
    await rejectsWith(management.listUsers(adminA, orgB), 'NOT_FOUND');
    // The member's reads too; the answer does not depend on the role.
    await rejectsWith(management.listProjects(memberA, orgB), 'NOT_FOUND');
    await rejectsWith(management.createEnvironment(memberA, projectB, { name: 'x' }), 'PERMISSION_DENIED');
    // Org B is untouched.
    assert.equal((await management.listEnvironments(adminB, projectB)).length, 1);
    assert.equal((await management.listSdkKeys(adminB, environmentB)).length, 1);
    assert.deepEqual((await management.listUsers(adminB, orgB)).map((user) => user.email), ['admin-b@example.com']);
  });

  test('a key of another environment in the caller\'s own org is NOT_FOUND in this environment', async () => {
    const staging = (await management.createEnvironment(adminA, projectA, { name: 'staging' })).environment_id;
    const stagingKey = await management.createSdkKey(adminA, staging);
    await management.createSdkKey(adminA, staging);
    await management.createSdkKey(adminA, environmentA);
    await management.createSdkKey(adminA, environmentA);
    await rejectsWith(management.deleteSdkKey(adminA, environmentA, stagingKey.sdk_key_id), 'NOT_FOUND');
  });

  test('unknown org for seedUser is NOT_FOUND', async () => {
    await rejectsWith(management.seedUser(root, '00000000-0000-4000-8000-000000000000', newUser('x@example.com')), 'NOT_FOUND');
  });
});

describe('ManagementService: users', () => {
  test('an org admin cannot enrol an existing account (which may belong to another org): ALREADY_EXISTS, nothing revealed', async () => {
    const error = await management.createUser(adminB, undefined, newUser('Admin-A@Example.com')).then(
      () => assert.fail('expected ALREADY_EXISTS'),
      (e: unknown) => e as Error & { code: string },
    );
    assert.equal(error.code, 'ALREADY_EXISTS');
    assert.doesNotMatch(error.message, /Admin A|admin-a@example\.com-password/);
  });

  test('pre-registration takeover: a system admin seeding an email that has an account gets ALREADY_EXISTS and changes nothing', async () => {
    // An admin of org A creates ceo@b.example with a password it knows...
    await management.createUser(adminA, undefined, newUser('ceo@b.example', { password: 'known-to-a-1' }));
    const membershipsBefore = state.memberships.length;
    // ...later a system admin seeds that email into org B (and into the system org): both refused.
    await rejectsWith(management.seedUser(root, orgB, { ...newUser('CEO@b.example', { password: 'b-chosen-password' }), orgRole: 'org_admin' }), 'ALREADY_EXISTS');
    await rejectsWith(management.seedUser(root, undefined, newUser('ceo@b.example')), 'ALREADY_EXISTS');
    assert.equal(state.memberships.length, membershipsBefore, 'no membership was added');
    const account = [...state.users.values()].find((u) => u.email === 'ceo@b.example');
    assert.equal(await hasher.verify('known-to-a-1', account?.passwordHash ?? ''), true, 'the password is unchanged');
    assert.ok(!state.memberships.some((m) => m.userId === account?.id && m.orgId === orgB), 'A\'s password does not open B');
  });

  test('adding a member twice to the same org is ALREADY_EXISTS', async () => {
    await rejectsWith(management.createUser(adminA, undefined, newUser('member-a@example.com')), 'ALREADY_EXISTS');
  });

  test('user records never carry a password or hash', async () => {
    const record = await management.createUser(adminA, undefined, newUser('new@example.com'));
    assert.deepEqual(Object.keys(record).sort(), ['display_name', 'email', 'org_id', 'org_role', 'user_id']);
    for (const user of await management.listUsers(adminA, orgA)) assert.ok(!JSON.stringify(user).includes('$2'));
  });

  test('bad input is INVALID_ARGUMENT naming the field', async () => {
    const cases: Array<[Partial<ReturnType<typeof newUser>>, string]> = [
      [{ email: '' }, 'email'],
      [{ email: 'no-at-sign' }, 'email'],
      [{ displayName: '  ' }, 'display_name'],
      [{ password: 'short' }, 'password'],
      [{ password: 'x'.repeat(73) }, 'password'],
      [{ orgRole: 'owner' }, 'org_role'],
    ];
    for (const [change, field] of cases) {
      const error = await rejectsWith(management.createUser(adminA, undefined, { ...newUser('ok@example.com'), ...change }), 'INVALID_ARGUMENT');
      assert.equal(error.field, field);
    }
  });
});

describe('ManagementService: projects, environments, names', () => {
  test('names are required, trimmed, at most 200 characters, unique per parent', async () => {
    await rejectsWith(management.createProject(adminA, undefined, { name: '' }), 'INVALID_ARGUMENT');
    await rejectsWith(management.createProject(adminA, undefined, { name: undefined }), 'INVALID_ARGUMENT');
    await rejectsWith(management.createProject(adminA, undefined, { name: 'x'.repeat(201) }), 'INVALID_ARGUMENT');
    await rejectsWith(management.createEnvironment(adminA, projectA, { name: ' ' }), 'INVALID_ARGUMENT');
    await rejectsWith(management.createOrg(root, { name: '' }), 'INVALID_ARGUMENT');
    assert.equal((await management.createProject(adminA, undefined, { name: '  Mobile  ' })).project_name, 'Mobile');
    await rejectsWith(management.createProject(adminA, undefined, { name: 'Web' }), 'ALREADY_EXISTS');
    await rejectsWith(management.createEnvironment(adminA, projectA, { name: 'production' }), 'ALREADY_EXISTS');
    await rejectsWith(management.createOrg(root, { name: 'Acme' }), 'ALREADY_EXISTS');
  });
});

describe('ManagementService: SDK keys', () => {
  test('the raw key is in the create answer only; the store holds its hash', async () => {
    const key = await management.createSdkKey(adminA, environmentA);
    assert.match(key.raw_key ?? '', /^sdk_/);
    assert.equal(key.key_prefix, key.raw_key?.slice(0, key.key_prefix.length));
    const listed = await management.listSdkKeys(adminA, environmentA);
    assert.equal(listed.length, 1);
    assert.ok(!('raw_key' in (listed[0] ?? {})));
    assert.ok(!JSON.stringify([...state.sdkKeys.values()]).includes(key.raw_key ?? '-'));
  });

  test('the last key cannot be deleted; deleting one of two evicts here and notifies every instance', async () => {
    const first = await management.createSdkKey(adminA, environmentA);
    await rejectsWith(management.deleteSdkKey(adminA, environmentA, first.sdk_key_id), 'FAILED_PRECONDITION');
    assert.deepEqual(revokedHere, []);
    const second = await management.createSdkKey(adminA, environmentA);

    const heard: string[] = [];
    await notifier.subscribe(SDK_KEY_REVOKED_CHANNEL, (id) => heard.push(id));
    await management.deleteSdkKey(adminA, environmentA, first.sdk_key_id);
    assert.deepEqual(revokedHere, [first.sdk_key_id], 'evicted on this instance before returning');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(heard, [first.sdk_key_id]);
    assert.deepEqual((await management.listSdkKeys(adminA, environmentA)).map((key) => key.sdk_key_id), [second.sdk_key_id]);
    await rejectsWith(management.deleteSdkKey(adminA, environmentA, first.sdk_key_id), 'NOT_FOUND');
  });
});

describe('ManagementService: audit log', () => {
  test('every change is recorded with its actor, org, action and resource; no secret in the details', async () => {
    const key = await management.createSdkKey(adminA, environmentA);
    await management.createSdkKey(adminA, environmentA);
    await management.deleteSdkKey(adminA, environmentA, key.sdk_key_id);
    const actorA = adminA.kind === 'user' ? adminA.userId : '';
    const entriesA = state.audit.filter((entry) => entry.orgId === orgA).map(({ actor, action, resourceType, atMs }) => ({ actor: actor.id, action, resourceType, atMs }));
    assert.deepEqual(entriesA, [
      { actor: root.kind === 'user' ? root.userId : '', action: 'org.create', resourceType: 'org', atMs: NOW },
      { actor: root.kind === 'user' ? root.userId : '', action: 'user.create', resourceType: 'user', atMs: NOW },
      { actor: actorA, action: 'user.create', resourceType: 'user', atMs: NOW },
      { actor: actorA, action: 'project.create', resourceType: 'project', atMs: NOW },
      { actor: actorA, action: 'environment.create', resourceType: 'environment', atMs: NOW },
      { actor: actorA, action: 'sdk_key.create', resourceType: 'sdk_key', atMs: NOW },
      { actor: actorA, action: 'sdk_key.create', resourceType: 'sdk_key', atMs: NOW },
      { actor: actorA, action: 'sdk_key.delete', resourceType: 'sdk_key', atMs: NOW },
    ]);
    const deletion = state.audit.find((entry) => entry.action === 'sdk_key.delete');
    assert.equal(deletion?.resourceId, key.sdk_key_id);
    assert.equal((deletion?.before as { key_prefix: string }).key_prefix, key.key_prefix);
    assert.equal(deletion?.after, null);
    assert.equal(deletion?.environmentId, environmentA);

    const everything = JSON.stringify(state.audit);
    assert.ok(!everything.includes(key.raw_key ?? '-'), 'no raw SDK key');
    assert.ok(!everything.includes('-password'), 'no password');
    assert.ok(!everything.includes('$2'), 'no password hash');
    for (const hash of [...state.sdkKeys.values()].map((k) => k.keyHash)) assert.ok(!everything.includes(hash), 'no key hash');
  });

  test('refused calls leave no audit entry', async () => {
    const count = state.audit.length;
    await rejectsWith(management.createProject(memberA, undefined, { name: 'Nope' }), 'PERMISSION_DENIED');
    await rejectsWith(management.createProject(adminA, orgB, { name: 'Nope' }), 'NOT_FOUND');
    await rejectsWith(management.createProject(adminA, undefined, { name: 'Web' }), 'ALREADY_EXISTS');
    assert.equal(state.audit.length, count);
  });
});

describe('ManagementService: member removal and role changes', () => {
  const idOf = (principal: Principal): string => (principal.kind === 'user' ? principal.userId : '');

  test('a role change answers the user record and is announced to every instance', async () => {
    const updated = await management.setMemberRole(adminA, orgA, idOf(memberA), { orgRole: 'org_admin' });
    assert.equal(updated.org_role, 'org_admin');
    assert.equal(updated.user_id, idOf(memberA));
    assert.deepEqual(sessionChanges, [idOf(memberA)]);
    await rejectsWith(management.setMemberRole(adminA, orgA, idOf(memberA), { orgRole: 'owner' }), 'INVALID_ARGUMENT');
    await rejectsWith(management.setMemberRole(adminA, orgA, idOf(memberA), { orgRole: undefined }), 'INVALID_ARGUMENT');
  });

  test('the last org_admin can be neither demoted nor removed (FAILED_PRECONDITION); with a second admin it can', async () => {
    await rejectsWith(management.setMemberRole(adminA, orgA, idOf(adminA), { orgRole: 'org_member' }), 'FAILED_PRECONDITION');
    await rejectsWith(management.removeMember(adminA, orgA, idOf(adminA)), 'FAILED_PRECONDITION');
    await management.setMemberRole(adminA, orgA, idOf(memberA), { orgRole: 'org_admin' });
    await management.removeMember(adminA, orgA, idOf(adminA));
    assert.ok(!state.memberships.some((m) => m.orgId === orgA && m.userId === idOf(adminA)));
  });

  test('removing a member ends its sessions in that org and announces it; the account stays', async () => {
    const member = idOf(memberA);
    const sessions = createInMemoryRepositories(state).sessions;
    const inA = await sessions.create({ userId: member, orgId: orgA, expiresAtMs: NOW + 3_600_000 });
    await management.removeMember(adminA, orgA, member);
    assert.notEqual(state.sessions.get(inA.id)?.endedAtMs, null, 'its session in the org ended');
    assert.deepEqual(sessionChanges, [member]);
    assert.ok(state.users.has(member), 'the account is not deleted');
    await rejectsWith(management.removeMember(adminA, orgA, member), 'NOT_FOUND');
  });

  test('only an org_admin of that org may change roles or remove members', async () => {
    await rejectsWith(management.setMemberRole(memberA, orgA, idOf(adminA), { orgRole: 'org_member' }), 'PERMISSION_DENIED');
    await rejectsWith(management.removeMember(memberA, orgA, idOf(adminA)), 'PERMISSION_DENIED');
    // Another org's admin: the org is answered as absent.
    await rejectsWith(management.removeMember(adminB, orgA, idOf(memberA)), 'NOT_FOUND');
    await rejectsWith(management.setMemberRole(adminB, orgA, idOf(memberA), { orgRole: 'org_admin' }), 'NOT_FOUND');
    // An org admin naming a user of another org in its own org: not a member there.
    await rejectsWith(management.removeMember(adminA, orgA, idOf(adminB)), 'NOT_FOUND');
    assert.deepEqual(sessionChanges, []);
  });
});

describe('ManagementService: a removed or demoted admin leaves nothing that keeps working', () => {
  const HOUR = 3_600_000;
  const providerBy = (author: Principal & { kind: 'user' }, email: string) => ({
    id: crypto.randomUUID(),
    type: 'oidc' as const,
    displayName: `by ${email}`,
    enabled: true,
    defaultRole: 'org_admin' as const,
    redirectUris: ['https://app.example.com/done'],
    oidc: { issuerUrl: 'https://idp.example.com', clientId: 'c', scopes: ['openid'] },
    saml: null,
    clientSecretCiphertext: 'v1.sealed',
    linkExistingAccounts: true,
    enableRequestedBy: null,
    updatedBy: { userId: author.userId, email },
  });

  test("demotion withdraws the admin's invitations and disables its providers, ending their sessions; another admin's stay", async () => {
    const repos = createInMemoryRepositories(state);
    const second = userPrincipal(await management.createUser(adminA, undefined, newUser('second@example.com', { orgRole: 'org_admin' })));
    if (second.kind !== 'user' || adminA.kind !== 'user' || memberA.kind !== 'user') throw new Error('user principals');
    const invite = (hash: string, author: Principal & { kind: 'user' }) =>
      repos.invitations.create({ orgId: orgA }, { email: `${hash}@example.com`, role: 'org_admin', tokenHash: hash, expiresAtMs: NOW + HOUR, createdBy: { userId: author.userId, email: null } });
    const planted = await invite('planted', second);
    const kept = await invite('kept', adminA);
    const theirs = await repos.authProviders.create({ orgId: orgA }, providerBy(second, 'second@example.com'), 20);
    const ours = await repos.authProviders.create({ orgId: orgA }, providerBy(adminA, 'admin-a@example.com'), 20);
    await repos.sessions.create({ userId: memberA.userId, orgId: orgA, expiresAtMs: NOW + HOUR, providerId: theirs.id });
    const viaOurs = await repos.sessions.create({ userId: adminA.userId, orgId: orgA, expiresAtMs: NOW + HOUR, providerId: ours.id });
    sessionChanges.length = 0;

    await management.setMemberRole(adminA, orgA, second.userId, { orgRole: 'org_member' });
    assert.deepEqual((await repos.invitations.listPending({ orgId: orgA }, NOW)).map((i) => i.id), [kept.id]);
    assert.notEqual(planted.id, kept.id);
    assert.equal((await repos.authProviders.get({ orgId: orgA }, theirs.id)).enabled, false);
    assert.equal((await repos.authProviders.get({ orgId: orgA }, ours.id)).enabled, true);
    assert.deepEqual(await repos.sessions.listLive(memberA.userId, NOW), [], "the session its provider opened ended");
    assert.deepEqual((await repos.sessions.listLive(adminA.userId, NOW)).map((s) => s.id), [viaOurs.id]);
    assert.deepEqual(new Set(sessionChanges), new Set([second.userId, memberA.userId]), 'every instance is told');

    // Promoting it again does not bring anything back: another admin must enable the provider.
    await management.setMemberRole(adminA, orgA, second.userId, { orgRole: 'org_admin' });
    assert.equal((await repos.authProviders.get({ orgId: orgA }, theirs.id)).enabled, false);
  });

  test('a promotion withdraws nothing', async () => {
    const repos = createInMemoryRepositories(state);
    if (memberA.kind !== 'user') throw new Error('user principal');
    const provider = await repos.authProviders.create({ orgId: orgA }, providerBy(memberA, 'member-a@example.com'), 20);
    await management.setMemberRole(adminA, orgA, memberA.userId, { orgRole: 'org_admin' });
    assert.equal((await repos.authProviders.get({ orgId: orgA }, provider.id)).enabled, true);
  });
});
