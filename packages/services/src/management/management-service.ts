import {
  alreadyExists,
  invalidArgument,
  notFound,
  permissionDenied,
  type ChangeNotifier,
  type EnvironmentScope,
  type OrgRole,
  type PasswordHasher,
  type Principal,
  type Repositories,
} from '@switchyard/core';
import { requireAllowed, requireAllowedSomewhere } from '../authorization.ts';
import { recordChange, type Change } from '../audit/audit-trail.ts';
import { SDK_KEY_REVOKED_CHANNEL } from '../auth/credential-verifier.ts';
import { announceSessionChanges } from '../auth/session-registry.ts';
import { authProviderRecord } from '../sso/provider-records.ts';
import { AdminGrantWithdrawal } from './admin-grant-withdrawal.ts';
import { storedBindingsRecord } from '../role-bindings/role-binding-records.ts';
import { generateSdkKey } from '../auth/secrets.ts';
import { parseCreateSdkKey, parseUpdateClientKey } from '../client/client-key-input.ts';
import { parseProjectSettings } from '../client/project-settings-input.ts';
import { parseEnvironmentSettings } from './environment-settings-input.ts';
import { queueAddressVerification } from '../accounts/address-verification.ts';
import type { MailSettings } from '../mail/mail-settings.ts';
import { optionalRole, requireEmail, requireName, requirePassword } from './input-checks.ts';
import {
  environmentRecord,
  orgRecord,
  projectRecord,
  sdkKeyRecord,
  userRecord,
  type EnvironmentRecord,
  type MemberRecord,
  type OrgRecord,
  type ProjectRecord,
  type SdkKeyRecord,
  type UserRecord,
} from './records.ts';

export interface NewUserInput {
  email: string | undefined;
  displayName: string | undefined;
  password: string | undefined;
  orgRole?: string | null | undefined;
}

/**
 * ManagementService (svc.management.v1) plus the admin calls: organisations, users, projects,
 * environments and SDK keys. Every call authorizes with core's `authorize` first (403 for a role
 * that may not, 404 for another org), then reads and writes only inside the caller's org.
 */
export class ManagementService {
  constructor(
    private readonly repos: Pick<Repositories, 'orgs' | 'users' | 'sessions' | 'projects' | 'environments' | 'sdkKeys' | 'unitOfWork'>,
    private readonly hasher: PasswordHasher,
    private readonly notifier: ChangeNotifier,
    private readonly onSdkKeyRevoked: (sdkKeyId: string) => void = () => {},
    private readonly now: () => number = Date.now,
    /** What a removed or demoted admin leaves behind; the host passes its public URL for the audit records. */
    private readonly grants: AdminGrantWithdrawal = new AdminGrantWithdrawal((provider) => authProviderRecord(provider, 'http://localhost')),
    /** How mail leaves (docs/security.md "Email delivery"): a new account's address is told; null: not (unit tests). */
    private readonly mail: MailSettings | null = null,
  ) {}

  // --- platform administration (system-org users) ---

  async createOrg(principal: Principal, input: { name: string | undefined }): Promise<OrgRecord> {
    requireAllowed(principal, 'admin.manage', { orgId: principal.orgId });
    const name = requireName(input.name);
    return this.repos.unitOfWork.run(async (tx) => {
      const record = orgRecord(await tx.orgs.create({ name }));
      await this.record(tx, principal, { orgId: record.org_id, action: 'org.create', resourceType: 'org', resourceId: record.org_id, after: record });
      return record;
    });
  }

  async listOrgs(principal: Principal): Promise<OrgRecord[]> {
    requireAllowed(principal, 'admin.manage', { orgId: principal.orgId });
    return (await this.repos.orgs.list()).map(orgRecord);
  }

  /** A user in any org (the system org when `orgId` is omitted). Admin routes only. */
  async seedUser(principal: Principal, orgId: string | undefined, input: NewUserInput): Promise<UserRecord> {
    requireAllowed(principal, 'admin.manage', { orgId: principal.orgId });
    const org = orgId ? await this.repos.orgs.get(orgId) : await this.repos.orgs.findSystemOrg();
    if (!org) throw notFound('organisation', orgId);
    return this.addUser(principal, org.id, input, 'org_admin');
  }

  // --- inside an organisation ---

  async createUser(principal: Principal, orgId: string | undefined, input: NewUserInput): Promise<UserRecord> {
    const targetOrg = orgId || principal.orgId;
    requireAllowed(principal, 'user.create', { orgId: targetOrg });
    return this.addUser(principal, targetOrg, input, 'org_member');
  }

  /**
   * Changes a member's role; tokens already issued carry the new role from their next request on
   * every instance. The last org_admin cannot be demoted (FAILED_PRECONDITION). A demoted admin's
   * pending invitations are withdrawn and the providers it created or changed are disabled.
   */
  async setMemberRole(principal: Principal, orgId: string, userId: string, input: { orgRole: string | null | undefined }): Promise<UserRecord> {
    requireAllowed(principal, 'user.manage', { orgId });
    if (input.orgRole === undefined || input.orgRole === null || input.orgRole === '') throw invalidArgument('org_role is required', 'org_role');
    const role = optionalRole(input.orgRole, 'org_member');
    const { record, endedFor } = await this.repos.unitOfWork.run(async (tx) => {
      const previous = await tx.users.getMembership(orgId, userId);
      const membership = await tx.users.setMembershipRole({ orgId }, userId, role);
      const user = await tx.users.getById(userId);
      if (!user) throw notFound('member', userId);
      const after = userRecord(user, membership);
      await this.record(tx, principal, { orgId, action: 'user.role_change', resourceType: 'user', resourceId: userId, before: previous && userRecord(user, previous), after });
      const demoted = previous?.role === 'org_admin' && membership.role !== 'org_admin';
      const ended = demoted ? await this.grants.withdraw(tx, principal, orgId, userId, 'member_demoted', this.now()) : [];
      return { record: after, endedFor: ended };
    });
    await announceSessionChanges(this.notifier, [userId, ...endedFor]);
    return record;
  }

  /**
   * Removes a member from the org and ends the user's sessions in it on every instance. The last
   * org_admin cannot be removed (FAILED_PRECONDITION); the account itself stays. Its pending
   * invitations are withdrawn and the providers it created or changed are disabled.
   */
  async removeMember(principal: Principal, orgId: string, userId: string): Promise<void> {
    requireAllowed(principal, 'user.manage', { orgId });
    const endedFor = await this.repos.unitOfWork.run(async (tx) => {
      const membership = await tx.users.getMembership(orgId, userId);
      const user = await tx.users.getById(userId);
      await tx.users.removeMembership({ orgId }, userId);
      await tx.sessions.end({ userId, orgId }, this.now());
      await this.record(tx, principal, { orgId, action: 'user.remove', resourceType: 'user', resourceId: userId, before: membership && user && userRecord(user, membership) });
      return this.grants.withdraw(tx, principal, orgId, userId, 'member_removed', this.now());
    });
    await announceSessionChanges(this.notifier, [userId, ...endedFor]);
  }

  /** The org's members, each with its stored role bindings (null: the org role's default). */
  async listUsers(principal: Principal, orgId: string): Promise<MemberRecord[]> {
    requireAllowedSomewhere(principal, 'org.read', orgId);
    const members = await this.repos.users.listOrgUsers({ orgId });
    return members.map(({ user, membership }) => ({ ...userRecord(user, membership), bindings: storedBindingsRecord(membership) }));
  }

  async createProject(principal: Principal, orgId: string | undefined, input: { name: string | undefined }): Promise<ProjectRecord> {
    const targetOrg = orgId || principal.orgId;
    requireAllowed(principal, 'project.create', { orgId: targetOrg });
    const name = requireName(input.name);
    return this.repos.unitOfWork.run(async (tx) => {
      const record = projectRecord(await tx.projects.create({ orgId: targetOrg }, { name }));
      await this.record(tx, principal, { orgId: targetOrg, action: 'project.create', resourceType: 'project', resourceId: record.project_id, projectId: record.project_id, after: record });
      return record;
    });
  }

  /**
   * Changes a project's settings (`{client_visible_default?, lifecycle?}`, those present); an org_admin's
   * call (it decides what new flags show to browsers and when flags are flagged for cleanup),
   * audited with before and after.
   */
  async updateProject(principal: Principal, projectId: string, body: unknown): Promise<ProjectRecord> {
    requireAllowedSomewhere(principal, 'project.update', principal.orgId);
    const settings = parseProjectSettings(body);
    return this.repos.unitOfWork.run(async (tx) => {
      const before = await tx.projects.get({ orgId: principal.orgId }, projectId);
      if (!before) throw notFound('project', projectId);
      requireAllowed(principal, 'project.update', { orgId: before.orgId, projectId: before.id });
      const record = projectRecord(
        await tx.projects.updateSettings({ orgId: before.orgId }, before.id, {
          ...(settings.clientVisibleDefault === undefined ? {} : { clientVisibleDefault: settings.clientVisibleDefault }),
          ...(settings.lifecycle === undefined ? {} : { lifecycle: { ...before.lifecycle, ...settings.lifecycle } }),
        }),
      );
      await this.record(tx, principal, {
        orgId: before.orgId,
        action: 'project.update',
        resourceType: 'project',
        resourceId: before.id,
        projectId: before.id,
        before: projectRecord(before),
        after: record,
      });
      return record;
    });
  }

  async listProjects(principal: Principal, orgId: string): Promise<ProjectRecord[]> {
    requireAllowedSomewhere(principal, 'org.read', orgId);
    return (await this.repos.projects.list({ orgId })).map(projectRecord);
  }

  async createEnvironment(principal: Principal, projectId: string, input: { name: string | undefined }): Promise<EnvironmentRecord> {
    requireAllowedSomewhere(principal, 'environment.create', principal.orgId);
    const project = await this.repos.projects.get({ orgId: principal.orgId }, projectId);
    if (!project) throw notFound('project', projectId);
    requireAllowed(principal, 'environment.create', { orgId: project.orgId, projectId: project.id });
    const name = requireName(input.name);
    return this.repos.unitOfWork.run(async (tx) => {
      const record = environmentRecord(await tx.environments.create({ orgId: project.orgId, projectId: project.id }, { name }));
      await this.record(tx, principal, {
        orgId: project.orgId,
        action: 'environment.create',
        resourceType: 'environment',
        resourceId: record.environment_id,
        projectId: project.id,
        environmentId: record.environment_id,
        after: record,
      });
      return record;
    });
  }

  async listEnvironments(principal: Principal, projectId: string): Promise<EnvironmentRecord[]> {
    requireAllowedSomewhere(principal, 'org.read', principal.orgId);
    const project = await this.repos.projects.get({ orgId: principal.orgId }, projectId);
    if (!project) throw notFound('project', projectId);
    requireAllowed(principal, 'org.read', { orgId: project.orgId, projectId: project.id });
    return (await this.repos.environments.list({ orgId: project.orgId, projectId: project.id })).map(environmentRecord);
  }

  /**
   * Changes an environment's protection (`{critical?, require_comment?}`, docs/access.md "Critical
   * environments"): an admin of the environment, audited with before and after. The change is
   * recorded before it is written, so it is checked against the protection in force until now:
   * lifting a critical environment's protection needs its confirmation, setting it does not.
   */
  async updateEnvironment(principal: Principal, environmentId: string, body: unknown): Promise<EnvironmentRecord> {
    requireAllowedSomewhere(principal, 'environment.update', principal.orgId);
    const change = parseEnvironmentSettings(body);
    return this.repos.unitOfWork.run(async (tx) => {
      const before = await tx.environments.get({ orgId: principal.orgId }, environmentId);
      if (!before) throw notFound('environment', environmentId);
      requireAllowed(principal, 'environment.update', { orgId: before.orgId, projectId: before.projectId, environmentId: before.id });
      const settings = { critical: change.critical ?? before.critical, requireComment: change.requireComment ?? before.requireComment };
      const after = { ...environmentRecord(before), critical: settings.critical, require_comment: settings.requireComment };
      await this.record(tx, principal, {
        orgId: before.orgId,
        action: 'environment.update',
        resourceType: 'environment',
        resourceId: before.id,
        projectId: before.projectId,
        environmentId: before.id,
        before: environmentRecord(before),
        after,
      });
      return environmentRecord(await tx.environments.updateProtection({ orgId: before.orgId }, before.id, settings));
    });
  }

  /**
   * A new key; its plaintext is in this response only. No body: a server key; `{kind: "client", ...}`
   * a client key (docs/client-side.md "Keys"), announced so every instance's CORS origins include it.
   */
  async createSdkKey(principal: Principal, environmentId: string, body?: unknown): Promise<SdkKeyRecord> {
    requireAllowedSomewhere(principal, 'sdk_key.create', principal.orgId);
    const { kind, settings } = parseCreateSdkKey(body, this.now());
    const scope = await this.environmentScope(principal, environmentId);
    requireAllowed(principal, 'sdk_key.create', scope);
    const material = generateSdkKey(kind);
    const key = await this.repos.unitOfWork.run(async (tx) => {
      const created = await tx.sdkKeys.create(scope, { keyPrefix: material.keyPrefix, keyHash: material.keyHash, kind, settings });
      // The record without raw_key: the secret is in the create response only, never in the log.
      await this.record(tx, principal, this.sdkKeyChange(scope, 'sdk_key.create', created.id, { after: sdkKeyRecord(created) }));
      return created;
    });
    if (kind === 'client') await this.notifier.publish(SDK_KEY_REVOKED_CHANNEL, key.id);
    return sdkKeyRecord(key, material.rawKey);
  }

  /**
   * Changes a client key's settings. Announced like a revocation: every instance forgets what it
   * cached of the key and ends its open browser streams, which reconnect under the new settings.
   */
  async updateSdkKey(principal: Principal, environmentId: string, sdkKeyId: string, body: unknown): Promise<SdkKeyRecord> {
    requireAllowedSomewhere(principal, 'sdk_key.create', principal.orgId);
    const scope = await this.environmentScope(principal, environmentId);
    requireAllowed(principal, 'sdk_key.create', scope);
    const key = await this.repos.unitOfWork.run(async (tx) => {
      const before = (await tx.sdkKeys.list(scope)).find((candidate) => candidate.id === sdkKeyId && candidate.kind === 'client');
      if (!before) throw notFound('client key', sdkKeyId);
      const settings = parseUpdateClientKey(body, before.settings, this.now());
      const updated = await tx.sdkKeys.updateClientSettings(scope, sdkKeyId, settings);
      await this.record(tx, principal, this.sdkKeyChange(scope, 'sdk_key.update', updated.id, { before: sdkKeyRecord(before), after: sdkKeyRecord(updated) }));
      return updated;
    });
    this.onSdkKeyRevoked(key.id);
    await this.notifier.publish(SDK_KEY_REVOKED_CHANNEL, key.id);
    return sdkKeyRecord(key);
  }

  async listSdkKeys(principal: Principal, environmentId: string): Promise<SdkKeyRecord[]> {
    requireAllowedSomewhere(principal, 'org.read', principal.orgId);
    const scope = await this.environmentScope(principal, environmentId);
    requireAllowed(principal, 'org.read', scope);
    return (await this.repos.sdkKeys.list(scope)).map((key) => sdkKeyRecord(key));
  }

  /**
   * The ids of an environment's active SDK keys (ids only). A gateway's sync hub asks after a
   * resync, with the credential that opened the environment's definitions, to end the streams of
   * keys revoked while it was not listening: so an SDK key may ask about its own environment.
   */
  async activeSdkKeyIds(principal: Principal, environmentId: string): Promise<string[]> {
    if (principal.kind === 'sdk_key') {
      if (principal.environmentId !== environmentId) throw permissionDenied('the SDK key does not grant access to this environment');
      const own = { orgId: principal.orgId, projectId: principal.projectId, environmentId };
      return (await this.repos.sdkKeys.list(own)).map((key) => key.id);
    }
    return (await this.listSdkKeys(principal, environmentId)).map((key) => key.sdk_key_id);
  }

  /**
   * Revokes a key at once: evicted here, announced to every instance (their caches and open sync
   * streams). The last active key of an environment cannot be deleted (FAILED_PRECONDITION).
   */
  async deleteSdkKey(principal: Principal, environmentId: string, sdkKeyId: string): Promise<void> {
    requireAllowedSomewhere(principal, 'sdk_key.delete', principal.orgId);
    const scope = await this.environmentScope(principal, environmentId);
    requireAllowed(principal, 'sdk_key.delete', scope);
    const key = await this.repos.unitOfWork.run(async (tx) => {
      const revoked = await tx.sdkKeys.revoke(scope, sdkKeyId);
      await this.record(tx, principal, this.sdkKeyChange(scope, 'sdk_key.delete', revoked.id, { before: sdkKeyRecord(revoked) }));
      return revoked;
    });
    this.onSdkKeyRevoked(key.id);
    await this.notifier.publish(SDK_KEY_REVOKED_CHANNEL, key.id);
  }

  /** The environment's full scope, found only inside the caller's org (else NOT_FOUND). */
  async environmentScope(principal: Principal, environmentId: string): Promise<EnvironmentScope> {
    const environment = await this.repos.environments.get({ orgId: principal.orgId }, environmentId);
    if (!environment) throw notFound('environment', environmentId);
    return { orgId: environment.orgId, projectId: environment.projectId, environmentId: environment.id };
  }

  /**
   * Users are global (one login, many orgs), and an account joins an org only with its holder's
   * consent (an accepted invitation). So a new email creates the user, and an email that already
   * has an account answers ALREADY_EXISTS and changes nothing, whoever asks: otherwise whoever
   * created the account first would hold a password to every org it is later added to.
   */
  private async addUser(principal: Principal, orgId: string, input: NewUserInput, defaultRole: OrgRole): Promise<UserRecord> {
    const email = requireEmail(input.email);
    const displayName = requireName(input.displayName, 'display_name');
    const password = requirePassword(input.password);
    const role = optionalRole(input.orgRole, defaultRole);
    const org = await this.repos.orgs.get(orgId);
    if (!org) throw notFound('organisation', orgId);
    if (await this.repos.users.getByEmail(email)) throw alreadyExists('user', email);
    const passwordHash = await this.hasher.hash(password);
    let mailed = false;
    const created = await this.repos.unitOfWork.run(async (tx) => {
      // A concurrent create of the same email fails here on the unique index: ALREADY_EXISTS too.
      // Never verified: the admin chose the address, its holder has not proved it.
      const user = await tx.users.create({ email, displayName, passwordHash });
      const record = userRecord(user, await tx.users.addMembership({ orgId, userId: user.id, role }));
      await this.record(tx, principal, { orgId, action: 'user.create', resourceType: 'user', resourceId: user.id, after: record });
      if (this.mail) mailed = await queueAddressVerification(tx, this.mail, { user, orgId, orgName: org.name, nowMs: this.now() });
      return record;
    });
    if (mailed) this.mail?.onQueued();
    return created;
  }

  private sdkKeyChange(scope: EnvironmentScope, action: string, sdkKeyId: string, change: Pick<Change, 'before' | 'after'>): Change {
    return { orgId: scope.orgId, action, resourceType: 'sdk_key', resourceId: sdkKeyId, projectId: scope.projectId, environmentId: scope.environmentId, ...change };
  }

  private async record(tx: Repositories, principal: Principal, change: Change): Promise<void> {
    await recordChange(tx, principal, change, this.now());
  }
}
