import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { isDomainError, unauthenticated, type ApiTokenRepository, type Principal, type Repositories } from '@switchyard/core';
import { createInMemoryRepositories, InMemoryChangeNotifier } from '@switchyard/core/testing';
import {
  ApiTokenService,
  ApiTokenThrottle,
  ApiTokenUseRecorder,
  CredentialVerifier,
  MAX_ACTIVE_API_TOKENS,
  SDK_KEY_REVOKED_CHANNEL,
  TokenService,
  sha256Hex,
} from '../src/index.ts';

const rejectsWith = (code: string, pattern?: RegExp) => (error: unknown) => isDomainError(error) && error.code === code && (pattern === undefined || pattern.test(error.message));

const tokens = new TokenService({ secret: 'unit-test-secret-of-at-least-32-bytes!!', ttlSeconds: 600 });
const sessions = { currentAccess: async () => { throw unauthenticated('no sessions here'); } };

let repos: Repositories;
let lookups: number;
let uses: string[][];
let notifier: InMemoryChangeNotifier;
let clock: { nowMs: number };
let verifier: CredentialVerifier;
let service: ApiTokenService;
let orgId: string;
let otherOrgId: string;
let projectId: string;
let environmentId: string;
let otherEnvironmentId: string;
let admin: Principal;

beforeEach(async () => {
  repos = createInMemoryRepositories();
  clock = { nowMs: Date.now() };
  const org = await repos.orgs.create({ name: 'Acme' });
  const other = await repos.orgs.create({ name: 'Globex' });
  orgId = org.id;
  otherOrgId = other.id;
  projectId = (await repos.projects.create({ orgId }, { name: 'Web' })).id;
  environmentId = (await repos.environments.create({ orgId, projectId }, { name: 'production' })).id;
  const otherProject = (await repos.projects.create({ orgId: otherOrgId }, { name: 'B' })).id;
  otherEnvironmentId = (await repos.environments.create({ orgId: otherOrgId, projectId: otherProject }, { name: 'production' })).id;
  const user = await repos.users.create({ email: 'admin@acme.test', displayName: 'Admin', passwordHash: 'x' });
  await repos.users.addMembership({ orgId, userId: user.id, role: 'org_admin' });
  admin = { kind: 'user', userId: user.id, orgId, role: 'org_admin', isSystem: false, sessionId: 's' };
  lookups = 0;
  uses = [];
  const counted: Pick<ApiTokenRepository, 'findActiveByHash' | 'recordUses'> = {
    findActiveByHash: (hash) => {
      lookups++;
      return repos.apiTokens.findActiveByHash(hash);
    },
    recordUses: (ids, interval) => {
      uses.push([...ids]);
      return repos.apiTokens.recordUses(ids, interval);
    },
  };
  notifier = new InMemoryChangeNotifier();
  const now = () => clock.nowMs;
  verifier = new CredentialVerifier(tokens, repos.sdkKeys, notifier, sessions, {
    now,
    apiTokens: { repository: counted, throttle: new ApiTokenThrottle(repos.loginThrottle, { maxFailuresPerAddress: 3, maxFailuresPerSite: 10, windowMs: 60_000 }, now), uses: new ApiTokenUseRecorder(counted, now) },
  });
  await verifier.start();
  service = new ApiTokenService(repos, notifier, (id) => verifier.evict(id), now);
});

describe('ApiTokenService', () => {
  test('create answers the token once and stores its hash; list never shows it; the history records both', async () => {
    const created = await service.create(admin, orgId, { name: ' deploy ', role: 'editor', scope: { environment_ids: [environmentId] } });
    assert.match(created.token!, /^swy_[A-Za-z0-9_-]{43}$/);
    assert.equal(created.name, 'deploy');
    assert.deepEqual(created.created_by, { user_id: (admin as { userId: string }).userId, email: 'admin@acme.test' });
    assert.notEqual(await repos.apiTokens.findActiveByHash(sha256Hex(created.token!)), null);
    const listed = await service.list(admin, orgId);
    assert.equal(listed.length, 1);
    assert.equal('token' in listed[0]!, false);
    await service.revoke(admin, orgId, created.id);
    const history = await repos.audit.list({ orgId }, { limit: 10 });
    assert.deepEqual(history.items.map((entry) => entry.action).sort(), ['api_token.create', 'api_token.revoke']);
    assert.ok(!JSON.stringify(history).includes(created.token!), 'the history never holds the token');
  });

  test('scope ids must be the org\'s, environments in the listed projects', async () => {
    await assert.rejects(service.create(admin, orgId, { name: 'x', role: 'viewer', scope: { environment_ids: [otherEnvironmentId] } }), rejectsWith('INVALID_ARGUMENT', /scope\.environment_ids/));
    const second = (await repos.projects.create({ orgId }, { name: 'Second' })).id;
    await assert.rejects(
      service.create(admin, orgId, { name: 'x', role: 'viewer', scope: { project_ids: [second], environment_ids: [environmentId] } }),
      rejectsWith('INVALID_ARGUMENT', /not in a project/),
    );
    await service.create(admin, orgId, { name: 'x', role: 'viewer', scope: { project_ids: [projectId], environment_ids: [environmentId] } });
  });

  test(`at most ${MAX_ACTIVE_API_TOKENS} active tokens`, async () => {
    for (let i = 0; i < MAX_ACTIVE_API_TOKENS; i++) await service.create(admin, orgId, { name: `t${i}`, role: 'viewer' });
    await assert.rejects(service.create(admin, orgId, { name: 'one more', role: 'viewer' }), rejectsWith('FAILED_PRECONDITION', /100/));
  });

  test('a token, another org and a demoted admin are refused', async () => {
    const created = await service.create(admin, orgId, { name: 'x', role: 'admin' });
    const token = await verifier.verifyBearer(created.token!);
    await assert.rejects(service.create(token, orgId, { name: 'y', role: 'admin' }), rejectsWith('PERMISSION_DENIED'));
    await assert.rejects(service.list(admin, otherOrgId), rejectsWith('NOT_FOUND'));
    await assert.rejects(service.revoke(admin, otherOrgId, created.id), rejectsWith('NOT_FOUND'));
    // A second admin exists, so the first can be demoted.
    const second = await repos.users.create({ email: 'second@acme.test', displayName: 'Second', passwordHash: 'x' });
    await repos.users.addMembership({ orgId, userId: second.id, role: 'org_admin' });
    await repos.users.setMembershipRole({ orgId }, (admin as { userId: string }).userId, 'org_member');
    // The principal still says org_admin (a stale session); the write checks the membership again.
    await assert.rejects(service.create(admin, orgId, { name: 'late', role: 'admin' }), rejectsWith('PERMISSION_DENIED'));
  });
});

describe('CredentialVerifier: API tokens', () => {
  test('looked up once, then from memory; its last use written once a minute', async () => {
    const created = await service.create(admin, orgId, { name: 'ci', role: 'editor', scope: { environment_ids: [environmentId] }, expires_at_ms: clock.nowMs + 120_000 });
    const expected = { kind: 'api_token', tokenId: created.id, name: 'ci', orgId, role: 'editor', scope: { environmentIds: [environmentId] }, expiresAtMs: clock.nowMs + 120_000 };
    for (let i = 0; i < 3; i++) assert.deepEqual(await verifier.verifyBearer(created.token!, '10.0.0.1'), expected);
    assert.equal(lookups, 1);
    assert.deepEqual(uses, [[created.id]]);
    clock.nowMs += 61_000;
    await verifier.verifyBearer(created.token!);
    assert.deepEqual(uses, [[created.id], [created.id]]);
  });

  test('an expired token is refused at once, cached or not', async () => {
    const created = await service.create(admin, orgId, { name: 'short', role: 'viewer', expires_at_ms: clock.nowMs + 1_000 });
    await verifier.verifyBearer(created.token!);
    clock.nowMs += 1_000;
    await assert.rejects(verifier.verifyBearer(created.token!), rejectsWith('UNAUTHENTICATED', /expired/));
  });

  test('a revocation announced by another instance evicts the cached token', async () => {
    const created = await service.create(admin, orgId, { name: 'x', role: 'viewer' });
    await verifier.verifyBearer(created.token!);
    await repos.apiTokens.revoke({ orgId }, created.id, clock.nowMs);
    // Still cached: nothing announced yet.
    await verifier.verifyBearer(created.token!);
    await notifier.publish(SDK_KEY_REVOKED_CHANNEL, created.id);
    await assert.rejects(verifier.verifyBearer(created.token!), rejectsWith('UNAUTHENTICATED'));
  });

  test('unknown tokens: remembered briefly, counted per known address, 429 past the limit', async () => {
    const guess = `swy_${'x'.repeat(43)}`;
    await assert.rejects(verifier.verifyBearer(guess, '10.0.0.2'), rejectsWith('UNAUTHENTICATED'));
    await assert.rejects(verifier.verifyBearer(guess, '10.0.0.2'), rejectsWith('UNAUTHENTICATED'));
    assert.equal(lookups, 1, 'the second presentation was answered from memory');
    for (let i = 0; i < 2; i++) await assert.rejects(verifier.verifyBearer(`swy_${i}${'y'.repeat(42)}`, '10.0.0.2'), rejectsWith('UNAUTHENTICATED'));
    await assert.rejects(verifier.verifyBearer(`swy_${'z'.repeat(43)}`, '10.0.0.2'), rejectsWith('RESOURCE_EXHAUSTED'));
    // Another address, and presentations without one (forwarded by a gateway), are not limited by it.
    await assert.rejects(verifier.verifyBearer(`swy_${'z'.repeat(43)}`, '10.0.0.3'), rejectsWith('UNAUTHENTICATED'));
    await assert.rejects(verifier.verifyBearer(`swy_${'w'.repeat(43)}`), rejectsWith('UNAUTHENTICATED'));
    // A token not yet cached is refused there too until the window has passed, then accepted.
    const created = await service.create(admin, orgId, { name: 'x', role: 'viewer' });
    await assert.rejects(verifier.verifyBearer(created.token!, '10.0.0.2'), rejectsWith('RESOURCE_EXHAUSTED'));
    clock.nowMs += 61_000;
    await verifier.verifyBearer(created.token!, '10.0.0.2');
  });
});
