import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { SignJWT } from 'jose';
import {
  UUID_PATTERN,
  authClient,
  bearer,
  managementClient,
  rejectsWithStatus,
  type AuthClient,
  type ManagementClient,
} from './support/grpc-clients.ts';
import { api, joinOrgByInvitation, login as loginRest } from './support/rest-client.ts';
import { TEST_ADMIN, TEST_JWT_SECRET, startTestServer, type TestServer } from './support/test-server.ts';

const ALICE = { email: 'alice@example.com', password: 'alice-password-1' };
const SDK_ACTIONS = ['event.ingest', 'exposure.ingest', 'flag.evaluate', 'flag.sync', 'segment.check'];

let it: TestServer;
let auth: AuthClient;
let management: ManagementClient;
let adminToken: string;
let systemOrgId: string;
let orgA: string;
let orgB: string;
let orgC: string;
let aliceId: string;
/** A live session of Alice in org A: crafted tokens name it so that only what they vary matters. */
let aliceSessionInA: string;
/** Failed logins from this client's address so far: the address is throttled after 30 (see the last test). */
let failedLoginsFromHere = 0;

async function failedLogin(email: string, password: string, org_id = ''): Promise<grpc.ServiceError> {
  const error = await rejectsWithStatus(auth.loginWithPassword({ email, password, org_id }), grpc.status.UNAUTHENTICATED);
  failedLoginsFromHere += 1;
  return error;
}

async function login(email: string, password: string, org_id = '') {
  return auth.loginWithPassword({ email, password, org_id });
}

/** A token signed with our secret and our iss/aud, with arbitrary times and claims. */
async function craftToken(options: { secret?: string; expiresAtS: number; issuedAtS: number }): Promise<string> {
  return new SignJWT({ org: orgA, role: 'org_admin', sys: false, sid: aliceSessionInA })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(aliceId)
    .setIssuer('switchyard')
    .setAudience('switchyard-api')
    .setIssuedAt(options.issuedAtS)
    .setExpirationTime(options.expiresAtS)
    .sign(new TextEncoder().encode(options.secret ?? TEST_JWT_SECRET));
}

before(async () => {
  it = await startTestServer();
  auth = authClient(it.server.grpcPort);
  management = managementClient(it.server.grpcPort);
  const admin = await login(TEST_ADMIN.email, TEST_ADMIN.password);
  adminToken = admin.access_token;
  systemOrgId = admin.org_id;
  orgA = (await management.createOrg({ name: 'Org A' }, bearer(adminToken))).org_id;
  orgB = (await management.createOrg({ name: 'Org B' }, bearer(adminToken))).org_id;
  orgC = (await management.createOrg({ name: 'Org C' }, bearer(adminToken))).org_id;
  const seed = { email: ALICE.email, display_name: 'Alice', password: ALICE.password };
  aliceId = (await management.createUser({ ...seed, org_id: orgA, org_role: 'org_admin' }, bearer(adminToken))).user_id;
  // The same email in a second org is refused: an existing account joins only by invitation.
  await rejectsWithStatus(
    management.createUser({ ...seed, org_id: orgB, org_role: 'org_member', password: 'other-password-2' }, bearer(adminToken)),
    grpc.status.ALREADY_EXISTS,
  );
  const client = api(it.base);
  const alice = await loginRest(client, ALICE.email, ALICE.password);
  await joinOrgByInvitation(client, adminToken, orgB, 'org_member', alice);
  const claims = JSON.parse(Buffer.from(alice.token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sid: string };
  aliceSessionInA = claims.sid;
});

after(async () => {
  auth.close();
  management.close();
  await it.stop();
});

describe('AuthService.LoginWithPassword over gRPC', () => {
  test('returns access and refresh tokens, expires_in of the default TTL, the user and its first org', async () => {
    const session = await login(ALICE.email, ALICE.password);
    assert.equal(typeof session.access_token, 'string');
    assert.equal(session.access_token.split('.').length, 3, 'a JWT');
    assert.match(session.refresh_token, /^rt_/);
    assert.notEqual(session.refresh_token, session.access_token);
    assert.equal(session.expires_in, 86400);
    assert.equal(session.user_id, aliceId);
    assert.equal(session.org_id, orgA, 'the first org the user joined');
  });

  test('the system admin logs into the system org', async () => {
    assert.match(systemOrgId, UUID_PATTERN);
    const { orgs } = await management.listOrgs({}, bearer(adminToken));
    assert.equal(orgs.find((org) => org.org_id === systemOrgId)?.org_name, 'system');
  });

  test('org_id picks one of the user\'s orgs; an org the user is not in is refused like a bad password', async () => {
    const inB = await login(ALICE.email, ALICE.password, orgB);
    assert.equal(inB.org_id, orgB);
    const wrongPassword = await failedLogin(ALICE.email, 'not-her-password');
    const notMember = await rejectsWithStatus(login(ALICE.email, ALICE.password, orgC), grpc.status.UNAUTHENTICATED);
    failedLoginsFromHere += 1; // refused like a bad password, and counted like one
    assert.equal(notMember.details, wrongPassword.details);
  });

  test('the second org\'s password did not replace the user\'s password', async () => {
    await failedLogin(ALICE.email, 'other-password-2');
  });

  test('wrong password and unknown email are both UNAUTHENTICATED with the same details', async () => {
    const wrongPassword = await failedLogin(ALICE.email, 'wrong-password-9');
    const unknownEmail = await failedLogin('nobody@example.com', 'wrong-password-9');
    assert.equal(wrongPassword.details, unknownEmail.details);
    assert.doesNotMatch(wrongPassword.details, /alice|nobody|unknown|not found/i);
  });

  test('an empty email or password is INVALID_ARGUMENT', async () => {
    await rejectsWithStatus(login('', ALICE.password), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(login(ALICE.email, ''), grpc.status.INVALID_ARGUMENT);
  });
});

describe('AuthService.ValidateCredential over gRPC', () => {
  test('a user bearer token answers its RbacContext', async () => {
    const session = await login(ALICE.email, ALICE.password);
    const context = await auth.validateCredential({ bearer_token: session.access_token });
    assert.equal(context.tenant_id, orgA);
    assert.equal(context.environment_id, '');
    assert.deepEqual(context.roles, ['org_admin']);
    assert.equal(context.subject, aliceId);
    assert.equal(context.is_system, false);
    for (const action of ['project.create', 'environment.create', 'sdk_key.create', 'user.create', 'flag.write']) {
      assert.ok(context.permissions.includes(action), `org_admin may ${action}`);
    }
    assert.ok(!context.permissions.includes('admin.manage'));
  });

  test('an org_member token lacks the admin-only permissions', async () => {
    const session = await login(ALICE.email, ALICE.password, orgB);
    const context = await auth.validateCredential({ bearer_token: session.access_token });
    assert.equal(context.tenant_id, orgB);
    assert.deepEqual(context.roles, ['org_member']);
    assert.ok(context.permissions.includes('flag.write'));
    assert.ok(!context.permissions.includes('project.create'));
    assert.ok(!context.permissions.includes('sdk_key.create'));
  });

  test('a system admin token is is_system with admin permissions only', async () => {
    const context = await auth.validateCredential({ bearer_token: adminToken });
    assert.equal(context.tenant_id, systemOrgId);
    assert.equal(context.is_system, true);
    assert.deepEqual(context.roles, ['org_admin']);
    assert.deepEqual(context.permissions, ['admin.manage']);
  });

  test('an SDK key answers its environment, role sdk_key, its id as subject and SDK permissions only', async () => {
    const alice = await login(ALICE.email, ALICE.password);
    const project = await management.createProject({ name: 'Validate' }, bearer(alice.access_token));
    const environment = await management.createEnvironment({ project_id: project.project_id, name: 'production' }, bearer(alice.access_token));
    const key = await management.createSdkKey({ environment_id: environment.environment_id }, bearer(alice.access_token));

    const context = await auth.validateCredential({ sdk_key: key.raw_key });
    assert.equal(context.tenant_id, orgA);
    assert.equal(context.environment_id, environment.environment_id);
    assert.deepEqual(context.roles, ['sdk_key']);
    assert.equal(context.subject, key.sdk_key_id);
    assert.equal(context.is_system, false);
    assert.deepEqual([...context.permissions].sort(), SDK_ACTIONS);
    // Asked twice (the second answer comes from the cache): the same context.
    assert.deepEqual(await auth.validateCredential({ sdk_key: key.raw_key }), context);
  });

  test('garbage, foreign-signed, expired or missing credentials are UNAUTHENTICATED', async () => {
    const nowS = Math.floor(Date.now() / 1000);
    const expired = await craftToken({ issuedAtS: nowS - 7200, expiresAtS: nowS - 3600 });
    const foreign = await craftToken({ secret: 'some-other-secret-of-at-least-32-bytes!', issuedAtS: nowS, expiresAtS: nowS + 600 });
    const cases: Array<[string, () => Promise<unknown>]> = [
      ['garbage bearer', () => auth.validateCredential({ bearer_token: 'not-a-jwt' })],
      ['empty bearer', () => auth.validateCredential({ bearer_token: '' })],
      ['garbage sdk key', () => auth.validateCredential({ sdk_key: 'sdk_not-a-real-key' })],
      ['empty sdk key', () => auth.validateCredential({ sdk_key: '' })],
      ['no credential', () => auth.validateCredential({})],
      ['expired token', () => auth.validateCredential({ bearer_token: expired })],
      ['another secret', () => auth.validateCredential({ bearer_token: foreign })],
    ];
    for (const [name, call] of cases) {
      await assert.doesNotReject(rejectsWithStatus(call(), grpc.status.UNAUTHENTICATED), name);
    }
  });

  test('a well-formed token of ours that has not expired is accepted (the crafted-token cases test only what they say)', async () => {
    const nowS = Math.floor(Date.now() / 1000);
    const context = await auth.validateCredential({ bearer_token: await craftToken({ issuedAtS: nowS, expiresAtS: nowS + 600 }) });
    assert.equal(context.subject, aliceId);
  });
});

describe('AuthService.RefreshSession over gRPC', () => {
  test('a refresh token is exchanged once for a new session in the same org', async () => {
    const first = await login(ALICE.email, ALICE.password, orgB);
    const second = await auth.refreshSession({ refresh_token: first.refresh_token });
    assert.equal(second.user_id, aliceId);
    assert.equal(second.org_id, orgB);
    assert.equal(second.expires_in, 86400);
    assert.notEqual(second.refresh_token, first.refresh_token);
    const context = await auth.validateCredential({ bearer_token: second.access_token });
    assert.equal(context.tenant_id, orgB);

    // The replacement is itself good for exactly one use, and rotates again.
    const third = await auth.refreshSession({ refresh_token: second.refresh_token });
    assert.equal((await auth.validateCredential({ bearer_token: third.access_token })).tenant_id, orgB);
    // Replaying a spent token (someone else holds it) ends the whole session: every token of it.
    await rejectsWithStatus(auth.refreshSession({ refresh_token: first.refresh_token }), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(auth.refreshSession({ refresh_token: third.refresh_token }), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(auth.validateCredential({ bearer_token: third.access_token }), grpc.status.UNAUTHENTICATED);
  });

  test('an unknown refresh token is UNAUTHENTICATED, an access token is not a refresh token, an empty one is INVALID_ARGUMENT', async () => {
    const session = await login(ALICE.email, ALICE.password);
    await rejectsWithStatus(auth.refreshSession({ refresh_token: 'rt_made-up' }), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(auth.refreshSession({ refresh_token: session.access_token }), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(auth.refreshSession({ refresh_token: '' }), grpc.status.INVALID_ARGUMENT);
  });
});

describe('AuthService.SwitchOrg over gRPC', () => {
  test('a member gets a new session for the target org, with its role there', async () => {
    const inA = await login(ALICE.email, ALICE.password);
    const switched = await auth.switchOrg({ current_token: inA.access_token, target_org_id: orgB });
    assert.equal(switched.org_id, orgB);
    assert.equal(switched.expires_in, 86400);
    assert.match(switched.refresh_token, /^rt_/);
    const context = await auth.validateCredential({ bearer_token: switched.access_token });
    assert.equal(context.tenant_id, orgB);
    assert.deepEqual(context.roles, ['org_member']);
    assert.equal(context.subject, aliceId);
    const refreshed = await auth.refreshSession({ refresh_token: switched.refresh_token });
    assert.equal(refreshed.org_id, orgB, 'the new refresh token belongs to the target org');
  });

  test('a non-member is PERMISSION_DENIED, whatever the target', async () => {
    const inA = await login(ALICE.email, ALICE.password);
    for (const target of [orgC, systemOrgId, randomUUID(), 'not-a-uuid']) {
      await rejectsWithStatus(auth.switchOrg({ current_token: inA.access_token, target_org_id: target }), grpc.status.PERMISSION_DENIED);
    }
  });

  test('a bad current token is UNAUTHENTICATED; a missing target is INVALID_ARGUMENT', async () => {
    await rejectsWithStatus(auth.switchOrg({ current_token: 'nope', target_org_id: orgB }), grpc.status.UNAUTHENTICATED);
    const inA = await login(ALICE.email, ALICE.password);
    await rejectsWithStatus(auth.switchOrg({ current_token: inA.access_token, target_org_id: '' }), grpc.status.INVALID_ARGUMENT);
  });
});

describe('AuthService.ListUserOrgs over gRPC', () => {
  test('lists the user\'s orgs with names and roles, oldest membership first', async () => {
    const session = await login(ALICE.email, ALICE.password);
    const { orgs } = await auth.listUserOrgs({ current_token: session.access_token });
    assert.deepEqual(orgs, [
      { org_id: orgA, org_name: 'Org A', role: 'org_admin' },
      { org_id: orgB, org_name: 'Org B', role: 'org_member' },
    ]);
  });

  test('the system org is excluded', async () => {
    assert.deepEqual((await auth.listUserOrgs({ current_token: adminToken })).orgs, []);
    // The system admin also joins org C (by invitation, accepted with its own bearer): only org C is listed.
    await joinOrgByInvitation(api(it.base), adminToken, orgC, 'org_member', { email: TEST_ADMIN.email, token: adminToken });
    assert.deepEqual((await auth.listUserOrgs({ current_token: adminToken })).orgs, [{ org_id: orgC, org_name: 'Org C', role: 'org_member' }]);
  });

  test('a bad token is UNAUTHENTICATED', async () => {
    await rejectsWithStatus(auth.listUserOrgs({ current_token: 'nope' }), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(auth.listUserOrgs({ current_token: '' }), grpc.status.UNAUTHENTICATED);
  });
});

// Last: it locks logins from this client address for 15 minutes.
describe('login throttling over gRPC', () => {
  test('after 30 failures from one address the next login is RESOURCE_EXHAUSTED with retry-after metadata', async () => {
    const remaining = 30 - failedLoginsFromHere;
    assert.ok(remaining > 0, 'earlier tests left room before the limit');
    for (let attempt = 0; attempt < remaining; attempt += 1) await failedLogin(`victim-${attempt}@example.com`, 'wrong-password-0');

    // Even the right password of another account is refused from this address now.
    const refused = await rejectsWithStatus(login(ALICE.email, ALICE.password), grpc.status.RESOURCE_EXHAUSTED);
    const retryAfter = Number(refused.metadata.get('retry-after')[0]);
    assert.ok(retryAfter > 800 && retryAfter <= 900, `retry-after ${retryAfter} s is about the 15-minute window`);
    assert.doesNotMatch(refused.details, /alice/i);
    // A token already issued keeps working: throttling concerns logins only.
    assert.equal((await auth.validateCredential({ bearer_token: adminToken })).is_system, true);
  });
});
