import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { auditLogPath, flagHistoryPath, only, readAll, type AuditQuery } from './support/audit-log.ts';
import {
  api,
  expectError,
  expectStatus,
  joinOrgByInvitation,
  loginAdmin,
  seedTenant,
  seedUser,
  unique,
  type ApiClient,
  type Json,
  type LoggedInUser,
  type Tenant,
} from './support/rest-client.ts';
import type * as grpc from '@grpc/grpc-js';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';
import { bearer, promisified, type Unary } from './support/grpc-clients.ts';
import { startSsoTestServer } from './support/sso.ts';
import type { TestServer } from './support/test-server.ts';

/**
 * The org's change history over real HTTP and PostgreSQL (docs/contract.md "Change history"): what
 * each kind of write records, that no secret is recorded, filters and pages, who may read, and
 * that a write and its entry commit together.
 */

const CLIENT_SECRET = `audit-client-secret-${unique()}`;

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;

before(async () => {
  // The SSO server: provider client secrets can be stored (sealed), so the test can look for them.
  ts = await startSsoTestServer();
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'audit-a');
  b = await seedTenant(client, root.token, 'audit-b');
});
after(() => ts.stop());

const logOf = (tenant: Tenant, query: AuditQuery = {}, token = tenant.admin.token) => readAll(client, token, (q) => auditLogPath(tenant.orgId, q), query);

const byUser = (user: LoggedInUser) => ({ type: 'user', id: user.userId, email: user.email });

describe('what the org setup records', () => {
  test('org, users, project, environment and SDK key: actor, resource, where, after', async () => {
    const entries = await logOf(a);
    const org = only(entries, 'org.create');
    assert.deepEqual(org.actor, byUser(root));
    assert.equal(org.resource_type, 'org');
    assert.equal(org.resource_id, a.orgId);
    assert.equal(org.before, undefined);
    assert.equal(org.after.org_name, a.orgName);

    const admin = only(entries, 'user.create', a.admin.userId);
    assert.deepEqual(admin.actor, byUser(root));
    assert.deepEqual({ email: admin.after.email, org_role: admin.after.org_role }, { email: a.admin.email, org_role: 'org_admin' });

    const project = only(entries, 'project.create', a.projectId);
    assert.deepEqual(project.actor, byUser(a.admin));
    assert.equal(project.project_id, a.projectId);
    assert.equal(project.environment_id, undefined);

    const environment = only(entries, 'environment.create', a.environmentId);
    assert.deepEqual([environment.project_id, environment.environment_id], [a.projectId, a.environmentId]);
    assert.equal(environment.after.environment_name, 'production');

    const key = only(entries, 'sdk_key.create', a.sdkKeyId);
    assert.equal(key.environment_id, a.environmentId);
    assert.equal(key.after.key_prefix, a.rawKey.slice(0, 12));
    assert.equal(key.after.raw_key, undefined);
  });
});

describe('what each kind of write records', () => {
  test('SDK keys: created and deleted, the secret never in an entry', async () => {
    const created = expectStatus(await client.post(`/v1/management/environments/${a.environmentId}/sdk-keys`, { token: a.admin.token }), 201);
    expectStatus(await client.delete(`/v1/management/environments/${a.environmentId}/sdk-keys/${created.sdk_key_id}`, { token: a.admin.token }), 204);
    const entries = await logOf(a, { resource_type: 'sdk_key' });
    const deleted = only(entries, 'sdk_key.delete', created.sdk_key_id);
    assert.equal(deleted.before.sdk_key_id, created.sdk_key_id);
    assert.equal(deleted.after, undefined);
    assert.deepEqual(entries.slice(0, 2).map((entry) => entry.action), ['sdk_key.delete', 'sdk_key.create'], 'newest first');
    const everything = JSON.stringify(await logOf(a));
    for (const raw of [a.rawKey, created.raw_key]) assert.ok(!everything.includes(raw), 'no raw SDK key in any entry');
    const [stored] = await ts.db.sql<{ key_hash: string }[]>`SELECT key_hash FROM sdk_keys WHERE id = ${created.sdk_key_id}`;
    assert.ok(stored && !everything.includes(stored.key_hash), 'no key hash in any entry');
  });

  test('roles, removal and invitations', async () => {
    const member = await seedUser(client, root.token, a.orgId, 'org_member', 'audit-role');
    expectStatus(await client.request('PATCH', `/v1/management/orgs/${a.orgId}/users/${member.userId}`, { token: a.admin.token, body: { org_role: 'org_admin' } }), 200);
    expectStatus(await client.delete(`/v1/management/orgs/${a.orgId}/users/${member.userId}`, { token: a.admin.token }), 204);
    const outsider = await seedUser(client, root.token, b.orgId, 'org_member', 'audit-invitee');
    await joinOrgByInvitation(client, a.admin.token, a.orgId, 'org_member', outsider);
    const withdrawn = expectStatus(await client.post(`/v1/management/orgs/${a.orgId}/invitations`, { token: a.admin.token, body: { email: `gone-${unique()}@example.com` } }), 201);
    expectStatus(await client.delete(`/v1/management/orgs/${a.orgId}/invitations/${withdrawn.invitation_id}`, { token: a.admin.token }), 204);

    const entries = await logOf(a);
    const role = only(entries, 'user.role_change', member.userId);
    assert.deepEqual([role.before.org_role, role.after.org_role], ['org_member', 'org_admin']);
    assert.deepEqual(role.actor, byUser(a.admin));
    const removal = only(entries, 'user.remove', member.userId);
    assert.equal(removal.before.org_role, 'org_admin');
    assert.equal(removal.after, undefined);
    const accepted = entries.find((entry) => entry.action === 'invitation.accept' && entry.details.user_id === outsider.userId);
    assert.ok(accepted, 'the acceptance is recorded');
    assert.deepEqual(accepted.actor, byUser(outsider), 'the invitee accepted');
    assert.equal(only(entries, 'invitation.create', accepted.resource_id).after.email, outsider.email);
    assert.equal(only(entries, 'invitation.delete', withdrawn.invitation_id).before.email, withdrawn.email);
    const everything = JSON.stringify(entries);
    assert.ok(!everything.includes(withdrawn.token), 'no invitation token in any entry');
    assert.ok(!everything.includes(outsider.password) && !everything.includes(member.password), 'no password');
    assert.ok(!/\$2[aby]\$/.test(everything), 'no password hash');
  });

  test('SSO providers: created, changed and deleted; the client secret never in an entry', async () => {
    const body = {
      provider_type: 'oidc',
      display_name: `Corp ${unique()}`,
      redirect_uris: ['http://127.0.0.1:9/app'],
      oidc: { issuer_url: 'http://127.0.0.1:9/issuer', client_id: 'switchyard', client_secret: CLIENT_SECRET },
    };
    const providers = `/v1/management/orgs/${a.orgId}/auth-providers`;
    const created = expectStatus(await client.post(providers, { token: a.admin.token, body }), 201);
    expectStatus(await client.request('PUT', `${providers}/${created.id}`, { token: a.admin.token, body: { ...body, display_name: 'Renamed', oidc: { ...body.oidc, client_secret: `${CLIENT_SECRET}-2` } } }), 200);
    expectStatus(await client.delete(`${providers}/${created.id}`, { token: a.admin.token }), 204);
    const entries = await logOf(a, { resource_type: 'auth_provider', resource_id: created.id });
    assert.deepEqual(entries.map((entry) => entry.action), ['auth_provider.delete', 'auth_provider.update', 'auth_provider.create']);
    const update = only(entries, 'auth_provider.update');
    assert.deepEqual([update.before.display_name, update.after.display_name], [body.display_name, 'Renamed']);
    assert.equal(update.after.oidc.client_secret_set, true);
    const everything = JSON.stringify(await logOf(a));
    assert.ok(!everything.includes(CLIENT_SECRET), 'no client secret in any entry');
    const [row] = await ts.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM audit_log WHERE org_id = ${a.orgId} AND (before::text LIKE ${`%${CLIENT_SECRET}%`} OR after::text LIKE ${`%${CLIENT_SECRET}%`} OR details::text LIKE ${`%${CLIENT_SECRET}%`})`;
    assert.equal(row?.n, 0, 'nor in the table');
  });

  test('segments and their members, event definitions', async () => {
    const env = a.environmentId;
    const segment = `beta-${unique()}`;
    const segments = `/v1/environments/${env}/segments`;
    expectStatus(await client.post(segments, { token: a.admin.token, body: { key: segment, kind: 'list', context_type: 'user', included_keys: ['u1'] } }), 201);
    expectStatus(await client.request('PATCH', `${segments}/${segment}/members`, { token: a.member.token, body: { add_included: ['u2', 'u3'] } }), 200);
    expectStatus(await client.request('PUT', `${segments}/${segment}`, { token: a.admin.token, body: { description: 'Beta testers' } }), 200);
    expectStatus(await client.delete(`${segments}/${segment}`, { token: a.admin.token }), 204);
    const segmentEntries = await logOf(a, { resource_type: 'segment', resource_id: segment });
    assert.deepEqual(segmentEntries.map((entry) => entry.action), ['segment.delete', 'segment.update', 'segment.members', 'segment.create']);
    const members = only(segmentEntries, 'segment.members');
    assert.deepEqual(members.actor, byUser(a.member));
    assert.deepEqual(members.details.add_included, ['u2', 'u3']);
    assert.deepEqual([members.before.included_count, members.after.included_count], [1, 3]);
    assert.deepEqual([only(segmentEntries, 'segment.update').before.description, only(segmentEntries, 'segment.update').after.description], ['', 'Beta testers']);
    for (const entry of segmentEntries) assert.deepEqual([entry.project_id, entry.environment_id], [a.projectId, env]);

    const metric = `clicks_${unique()}`;
    const definitions = `/v1/environments/${env}/event-definitions`;
    expectStatus(await client.post(definitions, { token: a.admin.token, body: { key: metric, value_type: 'int', description: 'Clicks' } }), 202);
    expectStatus(await client.request('PUT', `${definitions}/${metric}`, { token: a.admin.token, body: { value_type: 'double' } }), 202);
    expectStatus(await client.delete(`${definitions}/${metric}`, { token: a.admin.token }), 204);
    const definitionEntries = await logOf(a, { resource_type: 'event_definition', resource_id: metric });
    assert.deepEqual(definitionEntries.map((entry) => entry.action), ['event_definition.delete', 'event_definition.update', 'event_definition.create']);
    const update = only(definitionEntries, 'event_definition.update');
    assert.deepEqual([update.before.value_type, update.after.value_type], ['int', 'double']);
  });

  test('experiments and their transitions, with the reason', async () => {
    const env = a.environmentId;
    const flag = `exp-flag-${unique()}`;
    expectStatus(
      await client.post(`/v1/environments/${env}/flags`, {
        token: a.admin.token,
        // Starting an experiment needs a rule splitting traffic between its arms.
        body: {
          flag: {
            key: flag, value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], enabled: true,
            rules: [{ id: 'split', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'on', weight_milli: 500 }, { variant_key: 'off', weight_milli: 500 }] } }],
          },
        },
      }),
      201,
    );
    const experiment = expectStatus(await client.post(`/v1/environments/${env}/experiments`, { token: a.admin.token, body: { flag_key: flag, name: 'First' } }), 201);
    const path = `/v1/environments/${env}/experiments/${experiment.id}`;
    expectStatus(await client.request('PATCH', path, { token: a.admin.token, body: { name: 'Second' } }), 200);
    expectStatus(await client.post(`${path}/transitions`, { token: a.admin.token, body: { new_status: 'active', reason: 'launch day' } }), 200);
    const entries = await logOf(a, { resource_type: 'experiment', resource_id: experiment.id });
    assert.deepEqual(entries.map((entry) => entry.action), ['experiment.transition', 'experiment.update', 'experiment.create']);
    const transition = only(entries, 'experiment.transition');
    assert.deepEqual([transition.before.status, transition.after.status], ['EXPERIMENT_STATUS_DRAFT', 'EXPERIMENT_STATUS_ACTIVE']);
    assert.equal(transition.details.reason, 'launch day');
    const update = only(entries, 'experiment.update');
    assert.deepEqual([update.before.name, update.after.name], ['First', 'Second']);
  });
});

describe('reading the log', () => {
  test('filters by resource type, resource and environment; pages of any size give the same entries', async () => {
    const whole = await logOf(a);
    assert.ok(whole.length > 20, `enough entries to page through (${whole.length})`);
    assert.deepEqual(await logOf(a, { limit: 3 }), whole, 'pages of 3 = one listing');
    assert.deepEqual(await logOf(a, { limit: 1 }), whole, 'pages of 1 = one listing');
    const firstPage = expectStatus(await client.get(auditLogPath(a.orgId), { token: a.admin.token }), 200);
    assert.equal(firstPage.entries.length, Math.min(50, whole.length), 'the default page holds 50');

    for (const entry of await logOf(a, { resource_type: 'segment' })) assert.equal(entry.resource_type, 'segment');
    for (const entry of await logOf(a, { environment_id: a.environmentId })) assert.equal(entry.environment_id, a.environmentId);
    const inEnvironment = whole.filter((entry: Json) => entry.environment_id === a.environmentId);
    assert.deepEqual(await logOf(a, { environment_id: a.environmentId, limit: 2 }), inEnvironment);
    assert.deepEqual(await logOf(a, { resource_id: a.projectId }), whole.filter((entry: Json) => entry.resource_id === a.projectId));
  });

  test('limit and cursor are checked', async () => {
    for (const limit of ['0', '201', 'ten']) {
      expectError(await client.get(`${auditLogPath(a.orgId)}?limit=${limit}`, { token: a.admin.token }), 400, 'INVALID_ARGUMENT');
    }
    expectError(await client.get(auditLogPath(a.orgId, { cursor: 'not-a-cursor' }), { token: a.admin.token }), 400, 'INVALID_ARGUMENT');
  });

  test('any member of the org reads it; another org, a system user, an SDK key or nobody cannot', async () => {
    const asMember = expectStatus(await client.get(auditLogPath(a.orgId), { token: a.member.token }), 200);
    assert.ok(asMember.entries.length > 0);
    expectError(await client.get(auditLogPath(a.orgId), { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.get(auditLogPath(a.orgId), { token: root.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(auditLogPath(a.orgId), { sdkKey: a.rawKey }), 401, 'UNAUTHENTICATED');
    expectError(await client.get(auditLogPath(a.orgId)), 401, 'UNAUTHENTICATED');
    expectError(await client.get(flagHistoryPath(a.environmentId, 'any'), { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.get(flagHistoryPath(a.environmentId, 'any'), { sdkKey: a.rawKey }), 401, 'UNAUTHENTICATED');
    const theirs = JSON.stringify(await logOf(b));
    for (const id of [a.orgId, a.projectId, a.environmentId]) assert.ok(!theirs.includes(id), "another org's log names nothing of this one");
  });
});

describe('what each reader sees', () => {
  // An org whose log holds what a plain member may not read directly: an identity provider's
  // settings (GET .../auth-providers is org_admin only), a pending invitation with the invited
  // email (GET .../invitations is org_admin only) and the platform administrator's email (the org
  // was created and its users seeded by `root`, who is no member of it).
  let c: Tenant;
  let provider: Json;
  let invitedEmail: string;
  const issuerUrl = `http://127.0.0.1:9/issuer-${unique()}`;
  before(async () => {
    c = await seedTenant(client, root.token, 'audit-c');
    const body = { provider_type: 'oidc', display_name: `Hidden Corp ${unique()}`, redirect_uris: ['http://127.0.0.1:9/app'], oidc: { issuer_url: issuerUrl, client_id: 'switchyard-c', client_secret: CLIENT_SECRET } };
    provider = expectStatus(await client.post(`/v1/management/orgs/${c.orgId}/auth-providers`, { token: c.admin.token, body }), 201);
    invitedEmail = `pending-${unique()}@example.com`;
    expectStatus(await client.post(`/v1/management/orgs/${c.orgId}/invitations`, { token: c.admin.token, body: { email: invitedEmail } }), 201);
    // More entries a member may read than the page sizes below, so that paging is exercised.
    for (let i = 0; i < 3; i++) expectStatus(await client.post(`/v1/management/environments/${c.environmentId}/sdk-keys`, { token: c.admin.token }), 201);
  });

  /** What must not appear anywhere in what a member reads. */
  function assertNothingHidden(entries: Json[], text: string): void {
    assert.ok(!entries.some((entry) => entry.resource_type === 'auth_provider' || entry.resource_type === 'invitation'), 'no provider or invitation entry');
    for (const secret of [root.email, invitedEmail, issuerUrl, provider.display_name, provider.id]) {
      assert.ok(!text.includes(secret), `${secret} is not shown to a member`);
    }
  }

  test('an org_admin sees the provider, the invitation and the platform administrator\'s email', async () => {
    const entries = await logOf(c);
    assert.equal(only(entries, 'auth_provider.create', provider.id).after.oidc.issuer_url, issuerUrl);
    assert.equal(only(entries, 'invitation.create').after.email, invitedEmail);
    assert.deepEqual(only(entries, 'org.create').actor, byUser(root));
  });

  test('a plain member sees neither provider nor invitation entries, nor the platform administrator\'s email', async () => {
    const entries = await logOf(c, {}, c.member.token);
    assertNothingHidden(entries, JSON.stringify(entries));
    // The entries themselves stay, naming the administrator by id only.
    assert.deepEqual(only(entries, 'org.create').actor, { type: 'user', id: root.userId });
    assert.deepEqual(only(entries, 'user.create', c.member.userId).actor, { type: 'user', id: root.userId });
    assert.deepEqual(only(entries, 'project.create', c.projectId).actor, byUser(c.admin), 'a member\'s email is still shown');
    assert.deepEqual(
      await logOf(c, { resource_type: 'auth_provider' }, c.member.token),
      [],
      'asking for the type explicitly shows nothing either',
    );
  });

  test('a member\'s pages are full and the cursor goes on past what is left out', async () => {
    const whole = await logOf(c, {}, c.member.token);
    assert.ok(whole.length >= 7, `enough entries to page through (${whole.length})`);
    for (const limit of [1, 2, 3]) {
      let cursor: string | null = null;
      const seen: Json[] = [];
      do {
        const page: Json = expectStatus(await client.get(auditLogPath(c.orgId, cursor === null ? { limit } : { limit, cursor }), { token: c.member.token }), 200);
        seen.push(...page.entries);
        cursor = page.next_cursor;
        if (cursor !== null) assert.equal(page.entries.length, limit, 'every page but the last is full');
      } while (cursor !== null);
      assert.deepEqual(seen, whole, `pages of ${limit} = one listing`);
    }
  });

  test('over the internal gRPC AuditLogService: the same for a member, not for an admin', async () => {
    const Service = lookup<grpc.ServiceClientConstructor>(loadProto('svc/management/v1/audit.proto'), 'svc.management.v1.AuditLogService');
    const audit = promisified<{ listAuditLog: Unary<object, Json> }>(Service, ts.server.grpcPort);
    try {
      const asMember = await audit.listAuditLog({ org_id: c.orgId, limit: 200 }, bearer(c.member.token));
      assertNothingHidden(asMember.entries, JSON.stringify(asMember.entries));
      assert.deepEqual(asMember.entries.find((entry: Json) => entry.action === 'org.create')?.actor, { type: 'user', id: root.userId, email: '' });
      const asAdmin = await audit.listAuditLog({ org_id: c.orgId, limit: 200 }, bearer(c.admin.token));
      assert.ok(asAdmin.entries.some((entry: Json) => entry.resource_type === 'auth_provider'));
      assert.ok(asAdmin.entries.some((entry: Json) => entry.resource_type === 'invitation'));
      assert.equal(asAdmin.entries.find((entry: Json) => entry.action === 'org.create')?.actor.email, root.email);
    } finally {
      audit.client.close();
    }
  });
});

describe('the OpenAPI document', () => {
  test('describes both routes, their query parameters and the entry', async () => {
    const document = expectStatus(await client.get('/v1/openapi.json'), 200);
    const log = document.paths['/v1/management/orgs/{org_id}/audit-log']?.get;
    const history = document.paths['/v1/environments/{env_id}/flags/{flag_id}/history']?.get;
    assert.ok(log && history, 'both paths are documented');
    assert.deepEqual(log.parameters.filter((p: Json) => p.in === 'query').map((p: Json) => p.name).sort(), ['cursor', 'environment_id', 'limit', 'resource_id', 'resource_type']);
    assert.deepEqual(history.parameters.filter((p: Json) => p.in === 'query').map((p: Json) => p.name).sort(), ['cursor', 'limit']);
    const page = log.responses['200'].content['application/json'].schema;
    assert.deepEqual(page.required, ['entries', 'next_cursor']);
    assert.deepEqual(Object.keys(page.properties.entries.items.properties).sort(), [
      'action', 'actor', 'after', 'before', 'comment', 'details', 'environment_id', 'id', 'project_id', 'resource_id', 'resource_type', 'at_ms',
    ].sort());
  });
});

describe('a write and its entry commit together', () => {
  test('a refused write leaves no entry', async () => {
    const before = (await logOf(a)).length;
    expectError(await client.post(`/v1/management/orgs/${a.orgId}/projects`, { token: a.member.token, body: { name: 'nope' } }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(`/v1/management/orgs/${a.orgId}/projects`, { token: a.admin.token, body: { name: 'audit-a-project' } }), 409, 'ALREADY_EXISTS');
    assert.equal((await logOf(a)).length, before);
  });

  test('when the entry cannot be written, the write is undone', async () => {
    // The database refuses this one entry; the project insert before it in the same transaction must go too.
    const name = `doomed-${unique()}`;
    await ts.db.sql.unsafe(`
      CREATE FUNCTION refuse_doomed_entry() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.after->>'project_name' = '${name}' THEN RAISE EXCEPTION 'audit insert refused by the test'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_doomed_entry BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_doomed_entry();`);
    try {
      const response = await client.post(`/v1/management/orgs/${a.orgId}/projects`, { token: a.admin.token, body: { name } });
      assert.equal(response.status, 500, response.text);
      const projects = expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/projects`, { token: a.admin.token }), 200);
      assert.ok(!projects.some((project: Json) => project.project_name === name), 'the project was not kept');
      // The trigger is what refused: the same write with another name goes through, with its entry.
      const other = expectStatus(await client.post(`/v1/management/orgs/${a.orgId}/projects`, { token: a.admin.token, body: { name: `${name}-kept` } }), 201);
      only(await logOf(a), 'project.create', other.project_id);
    } finally {
      await ts.db.sql.unsafe('DROP TRIGGER refuse_doomed_entry ON audit_log; DROP FUNCTION refuse_doomed_entry();');
    }
  });
});
