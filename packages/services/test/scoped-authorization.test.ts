import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { isDomainError, type ErrorCode, type Principal, type RoleBinding } from '@switchyard/core';
import { InMemoryChangeNotifier, InMemoryState, createInMemoryRepositories } from '@switchyard/core/testing';
import { BcryptPasswordHasher, FlagService, ManagementService, ScopeResolver, SegmentService } from '../src/index.ts';

// The services name each resource's project and environment when they ask core's authorize
// (docs/access.md "Roles and bindings (decision rules)"): principals with bindings, built here by
// hand (bindings are not stored yet), reach exactly what their bindings cover. Expected answers are
// derived by hand from those rules.

const NOW = Date.UTC(2030, 0, 1);
const state = new InMemoryState();
const repos = createInMemoryRepositories(state);
const notifier = new InMemoryChangeNotifier();
const scopes = new ScopeResolver(repos);
const flags = new FlagService(repos, scopes, notifier);
const segments = new SegmentService(repos, scopes, notifier);
const management = new ManagementService(repos, new BcryptPasswordHasher(4), notifier, () => {}, () => NOW);

let org: string;
let p1: string;
let p2: string;
let e1a: string;
let e1b: string;
let admin: Principal;
const UNKNOWN_ENVIRONMENT = '00000000-0000-4000-8000-000000000000';

const bound = (...bindings: RoleBinding[]): Principal => ({ kind: 'user', userId: 'u-bound', orgId: org, role: 'org_member', isSystem: false, bindings });

async function refused(call: Promise<unknown>, code: ErrorCode): Promise<void> {
  await assert.rejects(call, (error: unknown) => {
    assert.ok(isDomainError(error), `a DomainError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return true;
  });
}

before(async () => {
  org = (await repos.orgs.create({ name: 'acme' })).id;
  p1 = (await repos.projects.create({ orgId: org }, { name: 'web' })).id;
  p2 = (await repos.projects.create({ orgId: org }, { name: 'mobile' })).id;
  e1a = (await repos.environments.create({ orgId: org, projectId: p1 }, { name: 'staging' })).id;
  e1b = (await repos.environments.create({ orgId: org, projectId: p1 }, { name: 'production' })).id;
  await repos.environments.create({ orgId: org, projectId: p2 }, { name: 'production' });
  admin = { kind: 'user', userId: 'u-admin', orgId: org, role: 'org_admin', isSystem: false };
  await flags.create(admin, await flags.target(admin, p1, 'project'), { flag: { key: 'checkout', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }] } });
});

describe('flags: environment writes need the environment, definition writes the project', () => {
  test('editor on staging turns the flag on in staging, not in production', async () => {
    const editor = bound({ role: 'editor', projectId: p1, environmentId: e1a });
    const staging = await flags.target(editor, e1a, 'environment');
    const flag = await flags.update(editor, staging, 'checkout', { flag: { enabled: true } });
    assert.equal(flag.enabled, true);
    await refused(flags.update(editor, await flags.target(editor, e1b, 'environment'), 'checkout', { flag: { enabled: true } }), 'PERMISSION_DENIED');
  });

  test('editor on staging reads the project-level definitions, but writes no definition, not even through its environment', async () => {
    const editor = bound({ role: 'editor', projectId: p1, environmentId: e1a });
    const project = await flags.target(editor, p1, 'project');
    assert.deepEqual((await flags.list(editor, project)).map((f) => f.key), ['checkout']);
    await refused(flags.list(editor, await flags.target(editor, p2, 'project')), 'PERMISSION_DENIED');
    const staging = await flags.target(editor, e1a, 'environment');
    await refused(flags.create(editor, staging, { flag: { key: 'new-one', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }] } }), 'PERMISSION_DENIED');
    await refused(flags.update(editor, staging, 'checkout', { flag: { description: 'changed' } }), 'PERMISSION_DENIED');
    await refused(flags.upsertVariants(editor, staging, 'checkout', [{ key: 'maybe', value: true }]), 'PERMISSION_DENIED');
    await refused(flags.archive(editor, staging, 'checkout', true), 'PERMISSION_DENIED');
    await refused(flags.remove(editor, staging, 'checkout'), 'PERMISSION_DENIED');
    await refused(flags.update(editor, project, 'checkout', { flag: { description: 'changed' } }), 'PERMISSION_DENIED');
  });

  test('tags, lifetime, maintainer and bucket_by are the definition: an environment editor changes none of them, a project editor does', async () => {
    const envEditor = bound({ role: 'editor', projectId: p1, environmentId: e1a });
    const staging = await flags.target(envEditor, e1a, 'environment');
    for (const flag of [{ tags: ['web'] }, { lifetime: 'temporary' }, { maintainer: 'ana@example.com' }, { bucket_by: 'project' }]) {
      await refused(flags.update(envEditor, staging, 'checkout', { flag }), 'PERMISSION_DENIED');
    }
    const viewer = bound({ role: 'viewer', projectId: p1 });
    await refused(flags.update(viewer, await flags.target(viewer, p1, 'project'), 'checkout', { flag: { tags: ['web'] } }), 'PERMISSION_DENIED');
    // Sending the values the flag already has is no definition change: the environment editor may.
    const same = await flags.update(envEditor, staging, 'checkout', { flag: { enabled: true, tags: [], lifetime: 'permanent', maintainer: null, bucket_by: 'environment' } });
    assert.equal(same.enabled, true);
    const projectEditor = bound({ role: 'editor', projectId: p1 });
    const changed = await flags.update(projectEditor, await flags.target(projectEditor, e1a, 'environment'), 'checkout', {
      flag: { tags: ['web', 'checkout', 'web'], lifetime: 'temporary', maintainer: 'team payments', bucket_by: 'project' },
    });
    assert.deepEqual([changed.tags, changed.lifetime, changed.maintainer, changed.bucket_by], [['checkout', 'web'], 'temporary', 'team payments', 'project']);
    // Project-level: production shows them too. Put back for the other tests.
    const production = await flags.get(projectEditor, await flags.target(projectEditor, e1b, 'environment'), 'checkout');
    assert.deepEqual([production.tags, production.bucket_by], [['checkout', 'web'], 'project']);
    await flags.update(projectEditor, await flags.target(projectEditor, p1, 'project'), 'checkout', { flag: { tags: [], lifetime: 'permanent', maintainer: null, bucket_by: 'environment' } });
  });

  test('editor on the project writes its definitions and every environment of it, not another project', async () => {
    const editor = bound({ role: 'editor', projectId: p1 });
    const project = await flags.target(editor, p1, 'project');
    const updated = await flags.update(editor, project, 'checkout', { flag: { description: 'the checkout flow' } });
    assert.equal(updated.description, 'the checkout flow');
    const production = await flags.target(editor, e1b, 'environment');
    assert.equal((await flags.update(editor, production, 'checkout', { flag: { enabled: true } })).enabled, true);
    await refused(flags.create(editor, await flags.target(editor, p2, 'project'), { flag: { key: 'elsewhere', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }] } }), 'PERMISSION_DENIED');
  });

  test('viewer on the project reads and writes nothing', async () => {
    const viewer = bound({ role: 'viewer', projectId: p1 });
    const production = await flags.target(viewer, e1b, 'environment');
    assert.equal((await flags.get(viewer, production, 'checkout')).key, 'checkout');
    await refused(flags.update(viewer, production, 'checkout', { flag: { enabled: false } }), 'PERMISSION_DENIED');
  });
});

describe('segments are environment content', () => {
  test('editor on staging writes staging segments only; reads production ones nowhere', async () => {
    const editor = bound({ role: 'editor', projectId: p1, environmentId: e1a });
    const created = await segments.create(editor, await segments.scope(editor, e1a), { key: 'beta', context_type: 'user', kind: 'list' });
    assert.equal(created.key, 'beta');
    const production = await segments.scope(editor, e1b);
    await refused(segments.create(editor, production, { key: 'beta', context_type: 'user', kind: 'list' }), 'PERMISSION_DENIED');
    await refused(segments.list(editor, production), 'PERMISSION_DENIED');
  });
});

describe('management: the project and the environment decide, org-level actions need org-level admin', () => {
  test('admin on staging manages staging keys only; no environments, projects or members', async () => {
    const envAdmin = bound({ role: 'admin', projectId: p1, environmentId: e1a });
    const key = await management.createSdkKey(envAdmin, e1a);
    assert.ok(key.raw_key);
    assert.deepEqual((await management.listSdkKeys(envAdmin, e1a)).map((k) => k.sdk_key_id), [key.sdk_key_id]);
    await refused(management.createSdkKey(envAdmin, e1b), 'PERMISSION_DENIED');
    await refused(management.listSdkKeys(envAdmin, e1b), 'PERMISSION_DENIED');
    await refused(management.createEnvironment(envAdmin, p1, { name: 'qa' }), 'PERMISSION_DENIED');
    await refused(management.updateProject(envAdmin, p1, { client_visible_default: true }), 'PERMISSION_DENIED');
    await refused(management.createProject(envAdmin, undefined, { name: 'other' }), 'PERMISSION_DENIED');
    await refused(management.listEnvironments(envAdmin, p2), 'PERMISSION_DENIED');
    assert.deepEqual((await management.listEnvironments(envAdmin, p1)).map((e) => e.environment_id).sort(), [e1a, e1b].sort());
    // It may create keys somewhere, so an unknown id is looked up: 404 as for today's admins.
    await refused(management.createSdkKey(envAdmin, UNKNOWN_ENVIRONMENT), 'NOT_FOUND');
  });

  test('a viewer is refused key creation before the id is looked up (403, not 404)', async () => {
    const viewer = bound({ role: 'viewer', projectId: p1, environmentId: e1a });
    await refused(management.createSdkKey(viewer, UNKNOWN_ENVIRONMENT), 'PERMISSION_DENIED');
    assert.deepEqual((await management.listProjects(viewer, org)).map((p) => p.project_id).sort(), [p1, p2].sort(), 'a role anywhere lists the projects');
  });

  test('admin on the project creates its environments and changes its settings, not another project\'s; no projects or members', async () => {
    const projectAdmin = bound({ role: 'admin', projectId: p1 });
    const qa = await management.createEnvironment(projectAdmin, p1, { name: 'qa' });
    assert.equal(qa.project_id, p1);
    assert.equal((await management.updateProject(projectAdmin, p1, { client_visible_default: true })).client_visible_default, true);
    await refused(management.createEnvironment(projectAdmin, p2, { name: 'qa' }), 'PERMISSION_DENIED');
    await refused(management.updateProject(projectAdmin, p2, { client_visible_default: true }), 'PERMISSION_DENIED');
    await refused(management.createProject(projectAdmin, undefined, { name: 'other' }), 'PERMISSION_DENIED');
    await refused(management.createUser(projectAdmin, undefined, { email: 'x@example.com', displayName: 'x', password: 'x-password-long' }), 'PERMISSION_DENIED');
  });

  test('an API token: its role inside its scope; never members', async () => {
    const token = { kind: 'api_token' as const, tokenId: 't1', name: 'ci', orgId: org, role: 'admin' as const, scope: {}, expiresAtMs: null };
    await refused(management.createUser(token, undefined, { email: 'y@example.com', displayName: 'y', password: 'y-password-long' }), 'PERMISSION_DENIED');
    await refused(management.listSdkKeys({ ...token, scope: { projectIds: [p2] } }, e1a), 'PERMISSION_DENIED');
    const reader: Principal = { ...token, role: 'viewer', scope: { projectIds: [p1], environmentIds: [e1a] } };
    assert.equal((await flags.get(reader, await flags.target(reader, e1a, 'environment'), 'checkout')).key, 'checkout');
    await refused(flags.get(reader, await flags.target(reader, e1b, 'environment'), 'checkout'), 'PERMISSION_DENIED');
  });
});
