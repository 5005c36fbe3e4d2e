import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import {
  UUID_PATTERN,
  authClient,
  bearer,
  managementClient,
  metadataWith,
  rejectsWithStatus,
  type AuthClient,
  type CreatedSdkKey,
  type ManagementClient,
} from './support/grpc-clients.ts';
import { TEST_ADMIN, startTestServer, type TestServer } from './support/test-server.ts';

const ADMIN_A = { email: 'admin-a@example.com', password: 'admin-a-password' };
const MEMBER_A = { email: 'member-a@example.com', password: 'member-a-password' };
const ADMIN_B = { email: 'admin-b@example.com', password: 'admin-b-password' };

let it: TestServer;
let auth: AuthClient;
let management: ManagementClient;
let systemToken: string;
let orgA: string;
let orgB: string;
let adminA: grpc.Metadata;
let memberA: grpc.Metadata;
let adminB: grpc.Metadata;
let projectA: string;
let environmentA: string;
let keyA: CreatedSdkKey;
let projectB: string;
let environmentB: string;
let keyB: CreatedSdkKey;
const secretsSeen: string[] = [];

const token = async (user: { email: string; password: string }) =>
  (await auth.loginWithPassword({ email: user.email, password: user.password })).access_token;

before(async () => {
  it = await startTestServer();
  auth = authClient(it.server.grpcPort);
  management = managementClient(it.server.grpcPort);
  systemToken = await token(TEST_ADMIN);
  secretsSeen.push(TEST_ADMIN.password, ADMIN_A.password, MEMBER_A.password, ADMIN_B.password);
});

after(async () => {
  auth.close();
  management.close();
  await it.stop();
});

describe('ManagementService over gRPC: the happy path', () => {
  test('the system admin creates and lists orgs', async () => {
    const created = await management.createOrg({ name: 'Acme' }, bearer(systemToken));
    assert.match(created.org_id, UUID_PATTERN);
    assert.equal(created.org_name, 'Acme');
    orgA = created.org_id;
    orgB = (await management.createOrg({ name: 'Globex' }, bearer(systemToken))).org_id;

    const { orgs } = await management.listOrgs({}, bearer(systemToken));
    assert.deepEqual(orgs.map((org) => org.org_name).sort(), ['Acme', 'Globex', 'system']);
    const acme = orgs.find((org) => org.org_id === orgA);
    assert.ok(acme && !Number.isNaN(Date.parse(acme.created_at)), 'created_at is a timestamp');
  });

  test('the system admin creates an org_admin in each org, who can log in there', async () => {
    const user = await management.createUser(
      { org_id: orgA, email: ADMIN_A.email, display_name: 'Admin A', password: ADMIN_A.password, org_role: 'org_admin' },
      bearer(systemToken),
    );
    assert.match(user.user_id, UUID_PATTERN);
    assert.equal(user.email, ADMIN_A.email);
    assert.equal(user.display_name, 'Admin A');
    assert.ok(!('password' in user) && !('password_hash' in user));
    await management.createUser(
      { org_id: orgB, email: ADMIN_B.email, display_name: 'Admin B', password: ADMIN_B.password, org_role: 'org_admin' },
      bearer(systemToken),
    );
    const adminAToken = await token(ADMIN_A);
    assert.equal((await auth.validateCredential({ bearer_token: adminAToken })).tenant_id, orgA);
    adminA = bearer(adminAToken);
    adminB = bearer(await token(ADMIN_B));
  });

  test('an org_admin creates projects in its own org (org_id empty or its own) and lists them', async () => {
    const project = await management.createProject({ org_id: '', name: 'Web' }, adminA);
    assert.match(project.project_id, UUID_PATTERN);
    assert.equal(project.project_name, 'Web');
    projectA = project.project_id;
    const explicit = await management.createProject({ org_id: orgA, name: 'Mobile' }, adminA);
    projectB = (await management.createProject({ name: 'B-Web' }, adminB)).project_id;

    const { projects } = await management.listProjects({ org_id: '' }, adminA);
    assert.deepEqual(projects, [
      { project_id: projectA, project_name: 'Web', org_id: orgA, client_visible_default: false, lifecycle: { status_window_days: 7, code_removal_min_age_days: 30, archive_after_days: 30, unchanged_fallback_days: 14 } },
      { project_id: explicit.project_id, project_name: 'Mobile', org_id: orgA, client_visible_default: false, lifecycle: { status_window_days: 7, code_removal_min_age_days: 30, archive_after_days: 30, unchanged_fallback_days: 14 } },
    ]);
    assert.deepEqual((await management.listProjects({ org_id: orgA }, adminA)).projects, projects);
  });

  test('an org_admin creates and lists environments', async () => {
    const environment = await management.createEnvironment({ project_id: projectA, name: 'production' }, adminA);
    assert.match(environment.environment_id, UUID_PATTERN);
    assert.equal(environment.environment_name, 'production');
    environmentA = environment.environment_id;
    environmentB = (await management.createEnvironment({ project_id: projectB, name: 'production' }, adminB)).environment_id;

    const { environments } = await management.listEnvironments({ project_id: projectA }, adminA);
    assert.deepEqual(environments, [{ environment_id: environmentA, environment_name: 'production', project_id: projectA, critical: false, require_comment: false }]);
  });

  test('an org_admin creates an SDK key (raw key once) and lists keys without it', async () => {
    keyA = await management.createSdkKey({ environment_id: environmentA }, adminA);
    assert.match(keyA.sdk_key_id, UUID_PATTERN);
    assert.match(keyA.raw_key, /^sdk_[A-Za-z0-9_-]{40,}$/);
    assert.equal(keyA.environment_id, environmentA);
    assert.equal(keyA.key_prefix, keyA.raw_key.slice(0, keyA.key_prefix.length));
    assert.ok(keyA.key_prefix.length < keyA.raw_key.length / 2, 'the prefix does not give the key away');
    keyB = await management.createSdkKey({ environment_id: environmentB }, adminB);
    secretsSeen.push(keyA.raw_key, keyB.raw_key);

    const { sdk_keys } = await management.listSdkKeys({ environment_id: environmentA }, adminA);
    assert.equal(sdk_keys.length, 1);
    const [listed] = sdk_keys;
    assert.deepEqual(Object.keys(listed ?? {}).sort(), ['created_at', 'environment_id', 'key_prefix', 'kind', 'last_used_at_ms', 'sdk_key_id', 'settings']);
    assert.equal(listed?.last_used_at_ms, 0, 'never used: 0');
    assert.equal(listed?.kind, 'server');
    assert.equal(listed?.sdk_key_id, keyA.sdk_key_id);
    assert.equal(listed?.key_prefix, keyA.key_prefix);
    assert.ok(!JSON.stringify(sdk_keys).includes(keyA.raw_key));
  });

  test('an org_admin creates a client key with its settings, changes them, and revokes it', async () => {
    const client = await management.createSdkKey(
      { environment_id: environmentA, kind: 'client', settings: { name: 'web', allowed_origins: ['https://app.example.com'], context_signing: 'key' } },
      adminA,
    );
    secretsSeen.push(client.raw_key);
    assert.match(client.raw_key, /^ck_[A-Za-z0-9_-]{40,}$/);
    assert.equal(client.kind, 'client');
    assert.deepEqual(client.settings.allowed_origins, ['https://app.example.com']);
    assert.equal(client.settings.context_signing, 'key');
    const updated = await management.updateSdkKey(
      { environment_id: environmentA, sdk_key_id: client.sdk_key_id, settings: { allow_missing_origin: true, allowed_origins: [], set_allowed_origins: true } },
      adminA,
    );
    assert.deepEqual(updated.settings.allowed_origins, []);
    assert.equal(updated.settings.allow_missing_origin, true);
    assert.equal(updated.settings.name, 'web', 'fields left unset stay');
    await assert.rejects(
      management.updateSdkKey({ environment_id: environmentA, sdk_key_id: client.sdk_key_id, settings: { allowed_origins: ['https://x.example.com/path'] } }, adminA),
      (error: { code?: number }) => error.code === grpc.status.INVALID_ARGUMENT,
    );
    await assert.rejects(
      management.updateSdkKey({ environment_id: environmentA, sdk_key_id: keyA.sdk_key_id, settings: { name: 'x' } }, adminA),
      (error: { code?: number }) => error.code === grpc.status.NOT_FOUND,
      'a server key has no client settings',
    );
    await management.deleteSdkKey({ environment_id: environmentA, sdk_key_id: client.sdk_key_id }, adminA);
  });
  test('context signing secrets: an org_admin creates (the secret once), lists (never the secret) and deletes', async () => {
    const created = await management.createContextSigningSecret({ environment_id: environmentA }, adminA);
    secretsSeen.push(created.secret);
    assert.match(created.kid, new RegExp(`^${environmentA}\\.`));
    assert.match(created.secret, /^cs_[A-Za-z0-9_-]{43}$/);
    const listed = await management.listContextSigningSecrets({ environment_id: environmentA }, adminA);
    assert.ok(listed.secrets.some((entry) => entry.kid === created.kid));
    assert.ok(!JSON.stringify(listed).includes(created.secret));
    assert.deepEqual(await management.deleteContextSigningSecret({ environment_id: environmentA, kid: created.kid }, adminA), { kid: created.kid });
    await rejectsWithStatus(management.deleteContextSigningSecret({ environment_id: environmentA, kid: created.kid }, adminA), grpc.status.NOT_FOUND);
  });

  test('an org_admin adds an org_member (default role) and lists the org\'s users', async () => {
    const member = await management.createUser(
      { org_id: '', email: MEMBER_A.email, display_name: 'Member A', password: MEMBER_A.password },
      adminA,
    );
    memberA = bearer(await token(MEMBER_A));
    const { users } = await management.listUsers({ org_id: '' }, adminA);
    assert.deepEqual(
      users.map(({ email, org_id, org_role }) => ({ email, org_id, org_role })),
      [
        { email: ADMIN_A.email, org_id: orgA, org_role: 'org_admin' },
        { email: MEMBER_A.email, org_id: orgA, org_role: 'org_member' },
      ],
    );
    assert.equal(users[1]?.user_id, member.user_id);
    assert.ok(!JSON.stringify(users).includes('password'));
  });

  test('an org_member reads everything in its org', async () => {
    assert.equal((await management.listProjects({}, memberA)).projects.length, 2);
    assert.equal((await management.listEnvironments({ project_id: projectA }, memberA)).environments.length, 1);
    assert.equal((await management.listSdkKeys({ environment_id: environmentA }, memberA)).sdk_keys.length, 1);
    assert.equal((await management.listUsers({}, memberA)).users.length, 2);
  });
});

describe('ManagementService over gRPC: SDK key deletion', () => {
  test('the last active key of an environment cannot be deleted', async () => {
    await rejectsWithStatus(
      management.deleteSdkKey({ environment_id: environmentA, sdk_key_id: keyA.sdk_key_id }, adminA),
      grpc.status.FAILED_PRECONDITION,
    );
    assert.equal((await auth.validateCredential({ sdk_key: keyA.raw_key })).subject, keyA.sdk_key_id);
  });

  test('deleting one of two keys succeeds and the deleted key is refused at once', async () => {
    const second = await management.createSdkKey({ environment_id: environmentA }, adminA);
    secretsSeen.push(second.raw_key);
    // Both known (and cached) before the delete.
    assert.equal((await auth.validateCredential({ sdk_key: keyA.raw_key })).subject, keyA.sdk_key_id);
    assert.equal((await auth.validateCredential({ sdk_key: second.raw_key })).subject, second.sdk_key_id);

    const deleted = await management.deleteSdkKey({ environment_id: environmentA, sdk_key_id: keyA.sdk_key_id }, adminA);
    assert.deepEqual(deleted, { sdk_key_id: keyA.sdk_key_id });
    await rejectsWithStatus(auth.validateCredential({ sdk_key: keyA.raw_key }), grpc.status.UNAUTHENTICATED);
    assert.equal((await auth.validateCredential({ sdk_key: second.raw_key })).subject, second.sdk_key_id);

    const { sdk_keys } = await management.listSdkKeys({ environment_id: environmentA }, adminA);
    assert.deepEqual(sdk_keys.map((key) => key.sdk_key_id), [second.sdk_key_id]);
    // Already deleted: not found; and now `second` is the last one again.
    await rejectsWithStatus(
      management.deleteSdkKey({ environment_id: environmentA, sdk_key_id: keyA.sdk_key_id }, adminA),
      grpc.status.NOT_FOUND,
    );
    await rejectsWithStatus(
      management.deleteSdkKey({ environment_id: environmentA, sdk_key_id: second.sdk_key_id }, adminA),
      grpc.status.FAILED_PRECONDITION,
    );
  });
});

describe('ManagementService over gRPC: RBAC as on REST', () => {
  test('no, malformed or non-bearer credentials are UNAUTHENTICATED', async () => {
    await rejectsWithStatus(management.listOrgs({}), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(management.createProject({ name: 'x' }), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(management.listProjects({}), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(management.createOrg({ name: 'x' }, metadataWith('authorization', `Basic ${systemToken}`)), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(management.createOrg({ name: 'x' }, bearer('not-a-jwt')), grpc.status.UNAUTHENTICATED);
    // An SDK key is not a management credential, in either carrier.
    await rejectsWithStatus(management.listProjects({}, metadataWith('x-sdk-key', keyB.raw_key)), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(management.listProjects({}, bearer(keyB.raw_key)), grpc.status.UNAUTHENTICATED);
  });

  test('the system admin may not act inside an org', async () => {
    const system = bearer(systemToken);
    await rejectsWithStatus(management.createProject({ org_id: orgA, name: 'Sneaky' }, system), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(management.createProject({ name: 'Sneaky' }, system), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(management.createEnvironment({ project_id: projectA, name: 'x' }, system), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(management.createSdkKey({ environment_id: environmentA }, system), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(management.listProjects({ org_id: orgA }, system), grpc.status.PERMISSION_DENIED);
  });

  test('an org_admin may not use the system calls', async () => {
    await rejectsWithStatus(management.createOrg({ name: 'Mine' }, adminA), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(management.listOrgs({}, adminA), grpc.status.PERMISSION_DENIED);
  });

  test('an org_member may not create projects, environments, SDK keys or users, nor delete keys', async () => {
    await rejectsWithStatus(management.createProject({ name: 'By member' }, memberA), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(management.createEnvironment({ project_id: projectA, name: 'by-member' }, memberA), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(management.createSdkKey({ environment_id: environmentA }, memberA), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(
      management.createUser({ email: 'friend@example.com', display_name: 'Friend', password: 'friend-password' }, memberA),
      grpc.status.PERMISSION_DENIED,
    );
    const [onlyKey] = (await management.listSdkKeys({ environment_id: environmentA }, memberA)).sdk_keys;
    await rejectsWithStatus(
      management.deleteSdkKey({ environment_id: environmentA, sdk_key_id: onlyKey?.sdk_key_id ?? '' }, memberA),
      grpc.status.PERMISSION_DENIED,
    );
    // Nothing was created.
    assert.equal((await management.listProjects({}, adminA)).projects.length, 2);
    assert.equal((await management.listEnvironments({ project_id: projectA }, adminA)).environments.length, 1);
    assert.equal((await management.listSdkKeys({ environment_id: environmentA }, adminA)).sdk_keys.length, 1);
    assert.equal((await management.listUsers({}, adminA)).users.length, 2);
  });

  test('another org\'s ids are NOT_FOUND, never OK', async () => {
    const notFound = grpc.status.NOT_FOUND;
    await rejectsWithStatus(management.createProject({ org_id: orgB, name: 'Into B' }, adminA), notFound);
    await rejectsWithStatus(management.listProjects({ org_id: orgB }, adminA), notFound);
    await rejectsWithStatus(management.createEnvironment({ project_id: projectB, name: 'into-b' }, adminA), notFound);
    await rejectsWithStatus(management.listEnvironments({ project_id: projectB }, adminA), notFound);
    await rejectsWithStatus(management.createSdkKey({ environment_id: environmentB }, adminA), notFound);
    await rejectsWithStatus(management.listSdkKeys({ environment_id: environmentB }, adminA), notFound);
    await rejectsWithStatus(management.deleteSdkKey({ environment_id: environmentB, sdk_key_id: keyB.sdk_key_id }, adminA), notFound);
    await rejectsWithStatus(
      management.createUser({ org_id: orgB, email: 'spy@example.com', display_name: 'Spy', password: 'spy-password' }, adminA),
      notFound,
    );
    await rejectsWithStatus(management.listUsers({ org_id: orgB }, adminA), notFound);
    // A member of A gets the same answers for B's reads.
    await rejectsWithStatus(management.listEnvironments({ project_id: projectB }, memberA), notFound);
    await rejectsWithStatus(management.listSdkKeys({ environment_id: environmentB }, memberA), notFound);

    // Org B is untouched.
    assert.equal((await management.listProjects({}, adminB)).projects.length, 1);
    assert.equal((await management.listEnvironments({ project_id: projectB }, adminB)).environments.length, 1);
    assert.equal((await management.listSdkKeys({ environment_id: environmentB }, adminB)).sdk_keys.length, 1);
    assert.deepEqual((await management.listUsers({}, adminB)).users.map((user) => user.email), [ADMIN_B.email]);
    assert.equal((await auth.validateCredential({ sdk_key: keyB.raw_key })).subject, keyB.sdk_key_id);
  });

  test('ids that are not UUIDs are NOT_FOUND, not an internal error', async () => {
    await rejectsWithStatus(management.createEnvironment({ project_id: 'not-a-uuid', name: 'x' }, adminA), grpc.status.NOT_FOUND);
    await rejectsWithStatus(management.listSdkKeys({ environment_id: 'not-a-uuid' }, adminA), grpc.status.NOT_FOUND);
    await rejectsWithStatus(
      management.deleteSdkKey({ environment_id: environmentA, sdk_key_id: 'not-a-uuid' }, adminA),
      grpc.status.NOT_FOUND,
    );
  });
});

describe('ManagementService over gRPC: input errors', () => {
  test('duplicate names are ALREADY_EXISTS', async () => {
    await rejectsWithStatus(management.createProject({ name: 'Web' }, adminA), grpc.status.ALREADY_EXISTS);
    await rejectsWithStatus(management.createEnvironment({ project_id: projectA, name: 'production' }, adminA), grpc.status.ALREADY_EXISTS);
    await rejectsWithStatus(management.createOrg({ name: 'Acme' }, bearer(systemToken)), grpc.status.ALREADY_EXISTS);
    // The same project name in another org is fine.
    await management.createProject({ name: 'Web' }, adminB);
  });

  test('empty or blank names are INVALID_ARGUMENT', async () => {
    await rejectsWithStatus(management.createOrg({ name: '' }, bearer(systemToken)), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(management.createProject({ name: '' }, adminA), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(management.createProject({ name: '   ' }, adminA), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(management.createEnvironment({ project_id: projectA, name: '' }, adminA), grpc.status.INVALID_ARGUMENT);
  });

  test('bad user input is INVALID_ARGUMENT naming the problem', async () => {
    const valid = { email: 'new@example.com', display_name: 'New', password: 'new-password-1' };
    const cases: Array<[Partial<typeof valid> & { org_role?: string }, RegExp]> = [
      [{ email: '' }, /email/],
      [{ email: 'not-an-email' }, /email/],
      [{ display_name: '' }, /display_name/],
      [{ password: 'short' }, /password/],
      [{ org_role: 'owner' }, /org_role/],
    ];
    for (const [change, message] of cases) {
      const error = await rejectsWithStatus(management.createUser({ ...valid, ...change }, adminA), grpc.status.INVALID_ARGUMENT);
      assert.match(error.details, message);
    }
    assert.equal((await management.listUsers({}, adminA)).users.length, 2, 'nobody was added');
  });

  test('no secret reached a log line', () => {
    const logs = it.logs.join('\n');
    for (const secret of secretsSeen) assert.ok(!logs.includes(secret), 'a password or raw key was logged');
  });
});

describe('ManagementService over gRPC: CreateUser role default', () => {
  // management.proto: "org_role: org_admin or org_member; empty: org_member". The handler sends a
  // system-org caller to ManagementService.seedUser, whose default is org_admin.
  test('an empty org_role creates an org_member, whoever the caller', async () => {
    const orgC = (await management.createOrg({ name: 'Initech' }, bearer(systemToken))).org_id;
    const seeded = { email: 'seeded-c@example.com', password: 'seeded-c-password' };
    await management.createUser({ org_id: orgC, email: seeded.email, display_name: 'Seeded', password: seeded.password }, bearer(systemToken));
    const session = await auth.loginWithPassword({ email: seeded.email, password: seeded.password });
    assert.equal(session.org_id, orgC);
    assert.deepEqual((await auth.validateCredential({ bearer_token: session.access_token })).roles, ['org_member']);
  });
});
