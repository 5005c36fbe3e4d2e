import { setTimeout as sleep } from 'node:timers/promises';
import { expectStatus, login, loginAdmin, seedTenant, seedUser, unique, type ApiClient, type LoggedInUser, type Tenant } from '../rest-client.ts';
import type { Binding, Caller, EnvironmentName, PrincipalName } from './types.ts';

/**
 * The tested world: one org with project P (environments staging and production) and project Q
 * (environment qa), every principal of the access table, and another org whose admin must find
 * nothing of the first. Principals whose routes are not on this branch yet are kept with the reason.
 */

export interface Principal {
  name: PrincipalName;
  caller: Caller;
  /** The bearer it presents (none for anonymous). */
  bearer?: string;
  /** A person's password login, for operations that end the session they run on. */
  person?: LoggedInUser;
  /** Why the principal could not be made here (its rows are skipped with this reason). */
  unavailable?: string;
}

export interface World {
  client: ApiClient;
  systemToken: string;
  tenant: Tenant;
  /** A second org_admin of the tested org: confirms what the org admin asked (four eyes). */
  secondAdmin: LoggedInUser;
  other: Tenant;
  orgId: string;
  projects: { P: string; Q: string };
  environments: Record<EnvironmentName, string>;
  principals: Principal[];
}

const NO_ROUTE = (response: { status: number; body: any }) => response.status === 404 && String(response.body?.error ?? '').startsWith('no route');

export async function buildWorld(client: ApiClient): Promise<World> {
  const system = await loginAdmin(client);
  const [tenant, other] = await Promise.all([seedTenant(client, system.token, 'access'), seedTenant(client, system.token, 'elsewhere')]);
  const admin = tenant.admin.token;
  const secondAdmin = await seedUser(client, system.token, tenant.orgId, 'org_admin', 'access-admin2');
  const staging = expectStatus(await client.post(`/v1/management/projects/${tenant.projectId}/environments`, { token: admin, body: { name: 'staging' } }), 201, 'staging');
  const q = expectStatus(await client.post(`/v1/management/orgs/${tenant.orgId}/projects`, { token: admin, body: { name: 'project-q' } }), 201, 'project Q');
  const qa = expectStatus(await client.post(`/v1/management/projects/${q.project_id}/environments`, { token: admin, body: { name: 'qa' } }), 201, 'qa');
  const projects = { P: tenant.projectId, Q: q.project_id as string };
  const environments: Record<EnvironmentName, string> = { staging: staging.environment_id, production: tenant.environmentId, qa: qa.environment_id };

  const principals: Principal[] = [
    { name: 'anonymous', caller: { kind: 'anonymous' } },
    { name: 'system_admin', caller: { kind: 'system' }, bearer: system.token, person: system },
    { name: 'org_admin', caller: { kind: 'person', bindings: [{ role: 'admin' }] }, bearer: admin, person: tenant.admin },
    // No explicit bindings: the org role's default, editor at org level.
    { name: 'org_member', caller: { kind: 'person', bindings: [{ role: 'editor' }] }, bearer: tenant.member.token, person: tenant.member },
    { name: 'other_org_admin', caller: { kind: 'other_org' }, bearer: other.admin.token, person: other.admin },
  ];

  // People with explicit bindings (PUT .../role-bindings, branch h/bindings).
  const bound: Array<[PrincipalName, Binding]> = [
    ['viewer', { role: 'viewer', project: 'P' }],
    ['editor', { role: 'editor', project: 'P' }],
    ['admin', { role: 'admin', project: 'P' }],
    ['staging_editor', { role: 'editor', environment: 'staging', project: 'P', readsProject: true }],
  ];
  const people = await Promise.all(bound.map(([name]) => seedUser(client, system.token, tenant.orgId, 'org_member', `access-${name}`)));
  for (const [index, [name, binding]] of bound.entries()) {
    const person = people[index]!;
    const wire = {
      role: binding.role,
      ...(binding.project ? { project_id: projects[binding.project] } : {}),
      ...(binding.environment ? { environment_id: environments[binding.environment] } : {}),
    };
    const response = await client.request('PUT', `/v1/management/orgs/${tenant.orgId}/members/${person.userId}/role-bindings`, { token: admin, body: { bindings: [wire] } });
    if (NO_ROUTE(response)) {
      principals.push({ name, caller: { kind: 'person', bindings: [binding] }, unavailable: 'role bindings route (branch h/bindings) not merged' });
      continue;
    }
    expectStatus(response, 200, `bindings of ${name}`);
    // The bindings apply to tokens already issued; a fresh login shows them too.
    principals.push({ name, caller: { kind: 'person', bindings: [binding] }, bearer: person.token, person });
  }

  // API tokens (POST .../api-tokens, branch h/tokens).
  const makeToken = (body: Record<string, unknown>) => client.post(`/v1/management/orgs/${tenant.orgId}/api-tokens`, { token: admin, body: { name: `access-${unique()}`, role: 'editor', ...body } });
  const probe = await makeToken({ scope: { project_ids: [projects.P], environment_ids: [environments.staging] } });
  if (NO_ROUTE(probe)) {
    const reason = 'API token routes (branch h/tokens) not merged';
    for (const name of ['token_in_scope', 'token_out_of_scope', 'token_expired', 'token_revoked'] as const) {
      principals.push({ name, caller: { kind: 'token', state: 'valid', role: 'editor', scope: {} }, unavailable: reason });
    }
  } else {
    const inScope = expectStatus(probe, 201, 'token in scope');
    const outOfScope = expectStatus(await makeToken({ scope: { project_ids: [projects.Q] } }), 201, 'token out of scope');
    const expiresAtMs = Date.now() + 1500;
    const expiring = expectStatus(await makeToken({ expires_at_ms: expiresAtMs }), 201, 'expiring token');
    const revoked = expectStatus(await makeToken({}), 201, 'token to revoke');
    expectStatus(await client.delete(`/v1/management/orgs/${tenant.orgId}/api-tokens/${revoked.id}`, { token: admin }), 204, 'revoke token');
    principals.push(
      { name: 'token_in_scope', caller: { kind: 'token', state: 'valid', role: 'editor', scope: { projects: ['P'], environments: ['staging'] } }, bearer: inScope.token },
      { name: 'token_out_of_scope', caller: { kind: 'token', state: 'valid', role: 'editor', scope: { projects: ['Q'] } }, bearer: outOfScope.token },
      { name: 'token_expired', caller: { kind: 'token', state: 'expired', role: 'editor', scope: {} }, bearer: expiring.token },
      { name: 'token_revoked', caller: { kind: 'token', state: 'revoked', role: 'editor', scope: {} }, bearer: revoked.token },
    );
    await sleep(Math.max(0, expiresAtMs + 50 - Date.now()));
  }
  return { client, systemToken: system.token, tenant, secondAdmin, other, orgId: tenant.orgId, projects, environments, principals };
}

/**
 * A new session of the principal's person, for operations that end or change the session they run
 * on: a switch to the org it is in opens one (docs/contract.md "Authentication and sessions"),
 * without the cost of a password check. Other principals use their own bearer.
 */
export async function freshSession(world: World, principal: Principal): Promise<string | undefined> {
  if (!principal.person || principal.caller.kind === 'token' || principal.bearer === undefined) return principal.bearer;
  const current = await world.client.get('/v1/auth/me', { token: principal.bearer });
  if (current.status === 401) {
    // Its session was ended by an earlier row (revoke-others): sign in again.
    const orgId = principal.caller.kind === 'system' ? undefined : principal.caller.kind === 'other_org' ? world.other.orgId : world.orgId;
    principal.bearer = (await login(world.client, principal.person.email, principal.person.password, orgId)).token;
    return freshSession(world, principal);
  }
  const me = expectStatus(current, 200, `me of ${principal.name}`);
  const switched = expectStatus(await world.client.post('/v1/auth/switch-org', { token: principal.bearer, body: { org_id: me.org_id } }), 200, `fresh session of ${principal.name}`);
  return switched.token as string;
}
