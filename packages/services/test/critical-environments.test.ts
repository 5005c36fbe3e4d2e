import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { isDomainError, type ApiTokenPrincipal, type AuditEntry, type Principal } from '@switchyard/core';
import { InMemoryChangeNotifier, InMemoryState, createInMemoryRepositories } from '@switchyard/core/testing';
import { BcryptPasswordHasher, ManagementService, changeIntentOf, parseChangeIntent, withChangeIntent } from '../src/index.ts';

/**
 * The protection of critical environments at the services level (docs/access.md "Critical
 * environments"), where it is enforced: recordChange inside the write's unit of work. API tokens
 * are built by another part of issue 34; their principal is constructed here.
 */

const NOW = Date.UTC(2030, 0, 1);
let state: InMemoryState;
let repos: ReturnType<typeof createInMemoryRepositories>;
let management: ManagementService;
let orgId: string;
let environmentId: string;
let admin: Principal;
let token: ApiTokenPrincipal;

beforeEach(async () => {
  state = new InMemoryState();
  repos = createInMemoryRepositories(state);
  management = new ManagementService(repos, new BcryptPasswordHasher(4), new InMemoryChangeNotifier(), () => {}, () => NOW);
  const org = await repos.orgs.create({ name: 'acme' });
  orgId = org.id;
  const user = await repos.users.create({ email: 'admin@example.com', displayName: 'admin', passwordHash: 'x' });
  admin = { kind: 'user', userId: user.id, orgId, role: 'org_admin', isSystem: false };
  const project = await repos.projects.create({ orgId }, { name: 'web' });
  environmentId = (await repos.environments.create({ orgId, projectId: project.id }, { name: 'production' })).id;
  token = { kind: 'api_token', tokenId: 'token-1', name: 'ci', orgId, role: 'admin', scope: {}, expiresAtMs: null };
});

const keyEntries = async (): Promise<AuditEntry[]> =>
  (await repos.audit.list({ orgId }, { limit: 100 })).items.filter((entry: AuditEntry) => entry.action === 'sdk_key.create');

async function refused(call: Promise<unknown>, header: RegExp): Promise<void> {
  await assert.rejects(call, (error: unknown) => {
    assert.ok(isDomainError(error), String(error));
    assert.equal(error.code, 'FAILED_PRECONDITION', error.message);
    assert.match(error.message, header);
    return true;
  });
}

describe('an API token in a protected environment', () => {
  test('critical only: a token needs no confirmation (it is not a person)', async () => {
    await repos.environments.updateProtection({ orgId }, environmentId, { critical: true, requireComment: false });
    await management.createSdkKey(token, environmentId);
    assert.equal((await keyEntries()).length, 1);
  });

  test('require_comment: refused without a comment, nothing written; with one, the entry keeps it', async () => {
    await repos.environments.updateProtection({ orgId }, environmentId, { critical: true, requireComment: true });
    await refused(management.createSdkKey(token, environmentId), /X-Change-Comment/);
    const environment = (await repos.environments.get({ orgId }, environmentId))!;
    assert.equal((await repos.sdkKeys.list({ orgId, projectId: environment.projectId, environmentId })).length, 0);
    assert.equal((await keyEntries()).length, 0);
    await management.createSdkKey(withChangeIntent(token, { comment: 'rotate for the release' }), environmentId);
    const entries = await keyEntries();
    assert.equal(entries.length, 1);
    assert.equal(entries[0]!.comment, 'rotate for the release');
    assert.deepEqual(entries[0]!.actor, { type: 'api_token', id: 'token-1', name: 'ci' });
  });
});

describe('a person in a protected environment', () => {
  test('critical: the confirmation must name this environment', async () => {
    await repos.environments.updateProtection({ orgId }, environmentId, { critical: true, requireComment: false });
    await refused(management.createSdkKey(admin, environmentId), new RegExp(`X-Confirm-Environment: ${environmentId}`));
    await refused(management.createSdkKey(withChangeIntent(admin, { confirmEnvironmentId: 'another-environment' }), environmentId), /X-Confirm-Environment/);
    assert.equal((await keyEntries()).length, 0);
    await management.createSdkKey(withChangeIntent(admin, { confirmEnvironmentId: environmentId }), environmentId);
    assert.equal((await keyEntries()).length, 1);
  });

  test('both: one refusal names both headers', async () => {
    await repos.environments.updateProtection({ orgId }, environmentId, { critical: true, requireComment: true });
    await refused(management.createSdkKey(admin, environmentId), /X-Confirm-Environment: .* and X-Change-Comment/);
    await refused(management.createSdkKey(withChangeIntent(admin, { confirmEnvironmentId: environmentId }), environmentId), /X-Change-Comment/);
  });

  test('lifting the protection needs it; setting it does not', async () => {
    const on = await management.updateEnvironment(admin, environmentId, { critical: true });
    assert.deepEqual([on.critical, on.require_comment], [true, false]);
    await refused(management.updateEnvironment(admin, environmentId, { critical: false }), /X-Confirm-Environment/);
    assert.equal((await repos.environments.get({ orgId }, environmentId))!.critical, true);
    const off = await management.updateEnvironment(withChangeIntent(admin, { confirmEnvironmentId: environmentId }), environmentId, { critical: false });
    assert.equal(off.critical, false);
  });

  test('an unprotected environment keeps a comment that was sent', async () => {
    await management.createSdkKey(withChangeIntent(admin, { comment: 'why not' }), environmentId);
    assert.equal((await keyEntries())[0]!.comment, 'why not');
    await management.createSdkKey(admin, environmentId);
    assert.deepEqual((await keyEntries()).map((entry) => entry.comment).sort(), ['why not', null].sort());
  });
});

describe('the change intent', () => {
  test('is linked to a copy: the shared principal never carries it', () => {
    const copy = withChangeIntent(admin, { confirmEnvironmentId: environmentId, comment: 'c' });
    assert.notEqual(copy, admin);
    assert.deepEqual(copy, admin);
    assert.deepEqual(changeIntentOf(admin), {});
    assert.deepEqual(changeIntentOf(copy), { confirmEnvironmentId: environmentId, comment: 'c' });
  });

  test('header values: trimmed, encoded UTF-8 decoded, bad ones refused naming the header', () => {
    assert.deepEqual(parseChangeIntent({ confirmEnvironment: ' env-1 ', changeComment: '  ship it ' }), { confirmEnvironmentId: 'env-1', comment: 'ship it' });
    assert.deepEqual(parseChangeIntent({ changeComment: "utf-8''Gr%C3%BC%C3%9Fe %F0%9F%9A%80" }), { comment: 'Grüße 🚀' });
    assert.deepEqual(parseChangeIntent({ changeCommentBytes: [Buffer.from('Grüße', 'utf8')] }), { comment: 'Grüße' });
    assert.deepEqual(parseChangeIntent({ changeComment: 'x'.repeat(1000) }).comment?.length, 1000);
    const bad: Array<[Parameters<typeof parseChangeIntent>[0], string]> = [
      [{ changeComment: '' }, 'x-change-comment'],
      [{ changeComment: '   ' }, 'x-change-comment'],
      [{ changeComment: 'x'.repeat(1001) }, 'x-change-comment'],
      [{ changeComment: 'caf\u00e9' }, 'x-change-comment'],
      [{ changeComment: "utf-8''line%0Abreak" }, 'x-change-comment'],
      [{ changeComment: "utf-8''%ED%A0%80" }, 'x-change-comment'],
      [{ changeComment: ['a', 'b'] }, 'x-change-comment'],
      [{ changeCommentBytes: [Buffer.from([0xff, 0xfe])] }, 'x-change-comment'],
      [{ changeCommentBytes: [Buffer.alloc(4001, 0x61)] }, 'x-change-comment'],
      [{ changeComment: 'a', changeCommentBytes: [Buffer.from('b')] }, 'x-change-comment'],
      [{ confirmEnvironment: '' }, 'x-confirm-environment'],
      [{ confirmEnvironment: 'two words' }, 'x-confirm-environment'],
      [{ confirmEnvironment: 'e'.repeat(201) }, 'x-confirm-environment'],
      [{ confirmEnvironment: ['a', 'b'] }, 'x-confirm-environment'],
    ];
    for (const [values, field] of bad) {
      assert.throws(() => parseChangeIntent(values), (error: unknown) => isDomainError(error) && error.code === 'INVALID_ARGUMENT' && error.field === field, JSON.stringify(values));
    }
  });
});
