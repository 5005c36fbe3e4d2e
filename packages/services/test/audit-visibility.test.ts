import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import type { AuditEntry, Principal, Repositories } from '@switchyard/core';
import { InMemoryState, createInMemoryRepositories } from '@switchyard/core/testing';
import { hiddenResourceTypes, redactForReader } from '../src/audit/audit-visibility.ts';

// Who may read what is written out here by hand from docs/contract.md "Roles (RBAC)": providers
// and invitations are read by org_admins only; members read users, projects and flags.

let repos: Repositories;
let orgId: string;
let platformAdmin: { id: string; email: string };
let adminAlsoMember: { id: string; email: string };
let member: Principal;
let admin: Principal;

const entry = (overrides: Partial<AuditEntry>): AuditEntry => ({
  id: `e-${Math.random()}`,
  orgId,
  atMs: 1_000,
  actor: { type: 'user', id: 'someone', email: 'someone@example.com' },
  action: 'project.create',
  resourceType: 'project',
  resourceId: 'p1',
  projectId: null,
  environmentId: null,
  before: null,
  after: null,
  details: {},
  comment: null,
  ...overrides,
});

beforeEach(async () => {
  repos = createInMemoryRepositories(new InMemoryState());
  const system = await repos.orgs.create({ name: 'system', isSystem: true });
  orgId = (await repos.orgs.create({ name: 'Tenant' })).id;
  const user = async (email: string, orgs: string[]) => {
    const created = await repos.users.create({ email, displayName: email, passwordHash: 'x' });
    for (const org of orgs) await repos.users.addMembership({ orgId: org, userId: created.id, role: 'org_admin' });
    return { id: created.id, email };
  };
  platformAdmin = await user('root@example.com', [system.id]);
  adminAlsoMember = await user('both@example.com', [system.id, orgId]);
  member = { kind: 'user', userId: 'm', orgId, role: 'org_member', isSystem: false };
  admin = { kind: 'user', userId: 'a', orgId, role: 'org_admin', isSystem: false };
});

describe('hiddenResourceTypes', () => {
  test('a member may not see provider, invitation, org domain or webhook entries; an org_admin sees every type', () => {
    // Domains (with their DNS challenge values) are listed to org_admins only (docs/contract.md);
    // webhooks (an address may carry a token) to holders of webhook.manage (docs/workflow.md).
    assert.deepEqual(hiddenResourceTypes(member, orgId).sort(), ['auth_provider', 'invitation', 'org_domain', 'webhook']);
    assert.deepEqual(hiddenResourceTypes(admin, orgId), []);
  });
});

describe('redactForReader', () => {
  test('a platform administrator who is no member of the org is named by id only to a member, with email to an org_admin', async () => {
    const byRoot = entry({ actor: { type: 'user', id: platformAdmin.id, email: platformAdmin.email }, action: 'org.create' });
    const [forMember] = await redactForReader(repos, member, orgId, [byRoot]);
    assert.deepEqual(forMember?.actor, { type: 'user', id: platformAdmin.id });
    const [forAdmin] = await redactForReader(repos, admin, orgId, [byRoot]);
    assert.deepEqual(forAdmin?.actor, byRoot.actor);
  });

  test('a platform administrator who is also a member keeps the email (the member list shows it); other actors are untouched', async () => {
    const both = entry({ actor: { type: 'user', id: adminAlsoMember.id, email: adminAlsoMember.email } });
    const plain = entry({});
    const system = entry({ actor: { type: 'system', id: 'bootstrap' } });
    assert.deepEqual(await redactForReader(repos, member, orgId, [both, plain, system]), [both, plain, system]);
  });

  test('a single sign-on entry keeps its provider and subject from a member, not from an org_admin', async () => {
    const sso = entry({ action: 'sso.account_created', resourceType: 'user', details: { provider_id: 'prov-1', subject: 'idp-subject-9' } });
    const [forMember] = await redactForReader(repos, member, orgId, [sso]);
    assert.deepEqual(forMember?.details, {});
    assert.equal(forMember?.action, 'sso.account_created', 'the entry itself is shown');
    const [forAdmin] = await redactForReader(repos, admin, orgId, [sso]);
    assert.deepEqual(forAdmin?.details, sso.details);
  });
});
