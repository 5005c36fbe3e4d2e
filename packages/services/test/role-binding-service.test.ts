import assert from 'node:assert/strict';
import { test } from 'node:test';
import { authorize, isDomainError, type ChangeNotifier, type Principal } from '@switchyard/core';
import { InMemoryChangeNotifier, createInMemoryRepositories } from '@switchyard/core/testing';
import { CredentialVerifier, RoleBindingService, SESSION_CHANGED_CHANNEL, SessionRegistry, TokenService } from '../src/index.ts';

// RoleBindingService over the in-memory store: what is stored, what is announced and when, and
// that an issued token's principal carries the bindings (docs/access.md "Managing bindings").

async function setup() {
  const repos = createInMemoryRepositories();
  const org = await repos.orgs.create({ name: 'Acme' });
  const other = await repos.orgs.create({ name: 'Other' });
  const project = await repos.projects.create({ orgId: org.id }, { name: 'P' });
  const staging = await repos.environments.create({ orgId: org.id, projectId: project.id }, { name: 'staging' });
  const foreign = await repos.projects.create({ orgId: other.id }, { name: 'F' });
  const person = async (email: string, role: 'org_admin' | 'org_member') => {
    const user = await repos.users.create({ email, displayName: email, passwordHash: 'x' });
    await repos.users.addMembership({ orgId: org.id, userId: user.id, role });
    return user.id;
  };
  const adminId = await person('admin@example.com', 'org_admin');
  const memberId = await person('member@example.com', 'org_member');
  const announced: string[] = [];
  const notifier: ChangeNotifier = {
    publish: async (channel: string, payload: string) => {
      if (channel === SESSION_CHANGED_CHANNEL) announced.push(payload);
    },
    subscribe: async () => ({ unsubscribe: async () => {} }),
  } as unknown as ChangeNotifier;
  const admin: Principal = { kind: 'user', userId: adminId, orgId: org.id, role: 'org_admin', isSystem: false, sessionId: 's' };
  return { repos, org, project, staging, foreign, adminId, memberId, admin, announced, notifier, service: new RoleBindingService(repos, notifier) };
}

const codeOf = async (promise: Promise<unknown>): Promise<string> => {
  try {
    await promise;
  } catch (error) {
    assert.ok(isDomainError(error), String(error));
    return error.code;
  }
  return 'OK';
};

test('set stores resolved bindings, audits, and announces the member after the commit; a refusal announces nothing', async () => {
  const { repos, org, project, staging, foreign, adminId, memberId, admin, announced, service } = await setup();
  const record = await service.set(admin, org.id, memberId, { bindings: [{ role: 'editor', environment_id: staging.id }] });
  assert.deepEqual(record.bindings, [{ role: 'editor', project_id: project.id, environment_id: staging.id }]);
  assert.deepEqual((await repos.users.getMembership(org.id, memberId))!.bindings, [{ role: 'editor', projectId: project.id, environmentId: staging.id }]);
  assert.deepEqual(announced, [memberId]);
  const { items } = await repos.audit.list({ orgId: org.id }, { resourceType: 'user', resourceId: memberId, limit: 10 });
  assert.deepEqual(items.map((entry) => [entry.action, entry.actor.id]), [['user.bindings_change', adminId]]);

  assert.equal(await codeOf(service.set(admin, org.id, memberId, { bindings: [{ role: 'viewer', project_id: foreign.id }] })), 'INVALID_ARGUMENT');
  assert.equal(await codeOf(service.set(admin, org.id, adminId, { bindings: [] })), 'FAILED_PRECONDITION');
  assert.equal(await codeOf(service.reset(admin, org.id, adminId)), 'FAILED_PRECONDITION');
  assert.deepEqual(announced, [memberId], 'nothing announced for refused changes');
  assert.equal((await repos.users.getMembership(org.id, memberId))!.bindings!.length, 1, 'nothing stored by a refusal');

  // An API token never manages members, whatever its role (docs/access.md "API tokens").
  const token: Principal = { kind: 'api_token', tokenId: 't', name: 'ci', orgId: org.id, role: 'admin', scope: {}, expiresAtMs: null };
  assert.equal(await codeOf(service.set(token, org.id, memberId, { bindings: [] })), 'PERMISSION_DENIED');
  assert.equal(await codeOf(service.reset(token, org.id, memberId)), 'PERMISSION_DENIED');
  assert.equal(await codeOf(service.get(token, org.id, memberId)), 'PERMISSION_DENIED');
  await service.reset(admin, org.id, memberId);
  assert.equal((await repos.users.getMembership(org.id, memberId))!.bindings, null);
  assert.deepEqual(announced, [memberId, memberId]);
});

test('each id is looked up once, however often it is named (bounded work per request)', async () => {
  const { repos, org, project, staging, memberId, admin, service } = await setup();
  let lookups = 0;
  const counted = { ...repos, projects: { ...repos.projects, get: (...args: Parameters<typeof repos.projects.get>) => (lookups++, repos.projects.get(...args)) } };
  const spied = new RoleBindingService({ ...counted, unitOfWork: { run: (work: (tx: typeof repos) => Promise<unknown>) => repos.unitOfWork.run((tx) => work({ ...tx, projects: counted.projects })) } } as never, (service as never as { notifier: ChangeNotifier }).notifier);
  const bindings = Array.from({ length: 100 }, (_, i) => ({ role: (['viewer', 'editor', 'admin'] as const)[i % 3], project_id: project.id }));
  const record = await spied.set(admin, org.id, memberId, { bindings });
  assert.equal(lookups, 1);
  assert.deepEqual(record.bindings, [{ role: 'viewer', project_id: project.id }, { role: 'editor', project_id: project.id }, { role: 'admin', project_id: project.id }]);
  assert.equal(await codeOf(service.set(admin, org.id, memberId, { bindings: [...bindings, { role: 'viewer', environment_id: staging.id }] })), 'INVALID_ARGUMENT');
});

test("a bearer token issued before the change verifies with the new bindings once the change is announced (no new token)", async () => {
  const { repos, org, staging, memberId, admin } = await setup();
  // The in-memory notifier delivers to subscribers, as PostgreSQL does between instances.
  const notifier = new InMemoryChangeNotifier();
  const sessions = new SessionRegistry(repos, notifier);
  await sessions.start();
  const tokens = new TokenService({ secret: 'a-test-secret-of-at-least-thirty-two-bytes!', ttlSeconds: 600 });
  const verifier = new CredentialVerifier(tokens, repos.sdkKeys, notifier, sessions);
  const session = await repos.sessions.create({ userId: memberId, orgId: org.id, expiresAtMs: Date.now() + 600_000 });
  const { token } = await tokens.issue({ userId: memberId, orgId: org.id, role: 'org_member', isSystem: false, sessionId: session.id });
  const before = await verifier.verifyBearer(token);
  assert.equal('bindings' in before, false, 'no bindings stored: the principal is exactly the org role\'s');
  const service = new RoleBindingService(repos, notifier);
  await service.set(admin, org.id, memberId, { bindings: [{ role: 'viewer', environment_id: staging.id }] });
  await new Promise((resolve) => setImmediate(resolve));
  const after = await verifier.verifyBearer(token);
  assert.ok(after.kind === 'user');
  assert.deepEqual(after.bindings, [{ role: 'viewer', projectId: staging.projectId, environmentId: staging.id }]);
  const here = { orgId: org.id, projectId: staging.projectId, environmentId: staging.id };
  assert.equal(authorize(after, 'flag.write', here).allowed, false, 'a viewer writes nothing');
  assert.equal(authorize(after, 'flag.read', here).allowed, true);
  await service.reset(admin, org.id, memberId);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal('bindings' in (await verifier.verifyBearer(token)), false, 'reset: the org role again');
  await sessions.stop();
});
