import type { LifecycleThresholds } from '../insights/flag-lifecycle.ts';
import type { ApiToken, Environment, Membership, Org, OrgRole, Project, SdkKey, SdkKeyKind, SdkKeyUse, User } from '../model/entities.ts';
import type { ApiTokenScope, BindingRole, ClientKeySettings, RoleBinding } from '../rbac/authorize.ts';
import type { EnvironmentScope, OrgScope, ProjectScope } from './scopes.ts';

/** Organisations. Names are unique. */
export interface OrgRepository {
  /** @throws ALREADY_EXISTS when the name is taken. */
  create(input: { name: string; isSystem?: boolean }): Promise<Org>;
  get(orgId: string): Promise<Org | null>;
  findSystemOrg(): Promise<Org | null>;
  list(): Promise<Org[]>;
}

/** Users are global (one login across orgs); membership ties them to orgs with a role. */
export interface UserRepository {
  /** @throws ALREADY_EXISTS when the email (case-insensitive) is taken. */
  create(input: { email: string; displayName: string; passwordHash: string; emailVerifiedAtMs?: number | null }): Promise<User>;
  getById(userId: string): Promise<User | null>;
  /** Case-insensitive. */
  getByEmail(email: string): Promise<User | null>;
  /** @throws ALREADY_EXISTS when the user is already a member of the org. */
  addMembership(input: { orgId: string; userId: string; role: OrgRole }): Promise<Membership>;
  getMembership(orgId: string, userId: string): Promise<Membership | null>;
  /**
   * The membership, with the org's membership changes locked until the unit of work it runs in
   * ends: a removal or role change in the org waits for that work to commit, and one that
   * committed first is seen. What an admin leaves behind is then either withdrawn by its removal or never written
   * (docs/security.md "Removed and demoted admins"). Outside a unit of work, as getMembership.
   */
  lockMembership(orgId: string, userId: string): Promise<Membership | null>;
  /** The user's memberships, oldest first (the first is the default org at login). */
  listMemberships(userId: string): Promise<Membership[]>;
  /** Members of one org, with their user records, oldest first. */
  listOrgUsers(scope: OrgScope): Promise<Array<{ user: User; membership: Membership }>>;
  setPasswordHash(userId: string, passwordHash: string): Promise<void>;
  /** Records that the holder proved control of the address (kept when already set). */
  markEmailVerified(userId: string, nowMs: number): Promise<void>;
  /**
   * Removes every membership of the user except in `keepOrgIds`, without the last-org_admin check
   * (the real holder of an address claimed the account: orgs it did not accept lose it).
   * Returns the memberships removed.
   */
  releaseMemberships(userId: string, keepOrgIds: readonly string[]): Promise<Membership[]>;
  /** Deletes the account when it belongs to no org (its sessions, tokens and identities go with it). Returns whether it did. */
  deleteIfOrgless(userId: string): Promise<boolean>;
  /**
   * Changes a member's role. Atomic with the check that the org keeps an org_admin.
   * @throws NOT_FOUND when not a member; FAILED_PRECONDITION when it would demote the last org_admin.
   */
  setMembershipRole(scope: OrgScope, userId: string, role: OrgRole): Promise<Membership>;
  /**
   * Removes a member. Atomic with the check that the org keeps an org_admin.
   * @throws NOT_FOUND when not a member; FAILED_PRECONDITION when it is the last org_admin.
   */
  removeMembership(scope: OrgScope, userId: string): Promise<void>;
  /**
   * Replaces an org_member's role bindings (null: back to the org role's default).
   * @throws NOT_FOUND when not a member; FAILED_PRECONDITION for an org_admin (admin everywhere).
   */
  setBindings(scope: OrgScope, userId: string, bindings: RoleBinding[] | null): Promise<Membership>;
}

/** API tokens (docs/access.md "API tokens"). */
export interface ApiTokenRepository {
  create(scope: OrgScope, input: { name: string; role: BindingRole; scope: ApiTokenScope; tokenPrefix: string; tokenHash: string; createdByUserId: string | null; expiresAtMs: number | null }): Promise<ApiToken>;
  /** The token with this hash that is not revoked (expired ones too: the caller checks expiry), in any org. */
  findActiveByHash(tokenHash: string): Promise<ApiToken | null>;
  /** The org's tokens that are not revoked, oldest first (expired ones included, marked by expiresAtMs). */
  list(scope: OrgScope): Promise<ApiToken[]>;
  get(scope: OrgScope, tokenId: string): Promise<ApiToken | null>;
  /** @throws NOT_FOUND unknown, another org's, or already revoked. */
  revoke(scope: OrgScope, tokenId: string, nowMs: number): Promise<ApiToken>;
  /** Sets lastUsedAtMs to now on each token whose last use is unknown or at least `minIntervalMs` old. Returns how many changed. */
  recordUses(tokenIds: readonly string[], minIntervalMs: number): Promise<number>;
  /**
   * Deletes up to `limit` tokens revoked or expired before `beforeMs` (they authenticate nothing
   * and are listed nowhere; the change history keeps their creation and revocation). Returns how many.
   */
  pruneEnded(beforeMs: number, limit: number): Promise<number>;
}

export interface ProjectRepository {
  /** @throws ALREADY_EXISTS when the org already has a project of that name; NOT_FOUND for an unknown org. */
  create(scope: OrgScope, input: { name: string }): Promise<Project>;
  get(scope: OrgScope, projectId: string): Promise<Project | null>;
  list(scope: OrgScope): Promise<Project[]>;
  /** Replaces the project's settings. @throws NOT_FOUND for a project outside the org. */
  updateSettings(scope: OrgScope, projectId: string, settings: { clientVisibleDefault?: boolean; lifecycle?: LifecycleThresholds }): Promise<Project>;
}

export interface EnvironmentRepository {
  /** @throws ALREADY_EXISTS for a duplicate name in the project; NOT_FOUND for a project outside the org. */
  create(scope: ProjectScope, input: { name: string }): Promise<Environment>;
  get(scope: OrgScope, environmentId: string): Promise<Environment | null>;
  list(scope: ProjectScope): Promise<Environment[]>;
  /** Replaces the environment's protection settings. @throws NOT_FOUND for an environment outside the org. */
  updateProtection(scope: OrgScope, environmentId: string, settings: { critical: boolean; requireComment: boolean }): Promise<Environment>;
}

export interface SdkKeyRepository {
  /** @throws NOT_FOUND when the environment is not in the scope. */
  create(scope: EnvironmentScope, input: { keyPrefix: string; keyHash: string; kind?: SdkKeyKind; settings?: ClientKeySettings }): Promise<SdkKey>;
  /** The active (not revoked) key with this hash, in any org: this is how a key finds its tenant. */
  findActiveByHash(keyHash: string): Promise<SdkKey | null>;
  /** Active keys of the environment, oldest first. */
  list(scope: EnvironmentScope): Promise<SdkKey[]>;
  /**
   * Revokes a key at once. Atomic with the check that another active server key remains (client
   * keys may all be revoked).
   * @throws NOT_FOUND unknown or already revoked; FAILED_PRECONDITION when it is the last active server key.
   */
  revoke(scope: EnvironmentScope, sdkKeyId: string): Promise<SdkKey>;
  /**
   * Replaces an active client key's settings.
   * @throws NOT_FOUND unknown, revoked or a server key.
   */
  updateClientSettings(scope: EnvironmentScope, sdkKeyId: string, settings: ClientKeySettings): Promise<SdkKey>;
  /**
   * Sets `lastUsedAtMs` to now on each active key of `uses` (matched by its id *and* scope: a use
   * naming another tenant's scope changes nothing) whose last use is unknown or at least
   * `minIntervalMs` old. Returns how many keys changed.
   */
  recordUses(uses: readonly SdkKeyUse[], minIntervalMs: number): Promise<number>;
  /** Every active client key of every org whose origins allow some origin: CORS preflights are answered from them. */
  listActiveClientOrigins(): Promise<Array<{ sdkKeyId: string; allowedOrigins: string[] }>>;
}
