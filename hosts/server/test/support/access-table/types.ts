/**
 * The shapes of the generated access table (issue 34): who calls (a principal), what an operation
 * needs (its access class) and where its resource lives (its target). The expected answer of every
 * row comes from rule.ts, written from docs/access.md, never from the product's own decision code.
 */

export type Role = 'viewer' | 'editor' | 'admin';

/** A role binding as the bindings routes store it (docs/access.md "Bindings"). */
export interface Binding {
  role: Role;
  project?: 'P' | 'Q';
  environment?: EnvironmentName;
  /** An environment binding reads its project's project-level resources, except a token's without project_ids. */
  readsProject?: boolean;
}

/** The tested org's environments: staging and production in project P, qa in project Q. */
export type EnvironmentName = 'staging' | 'production' | 'qa';

export type PrincipalName =
  | 'anonymous'
  | 'system_admin'
  | 'org_admin'
  | 'org_member'
  | 'viewer'
  | 'editor'
  | 'admin'
  | 'staging_editor'
  | 'token_in_scope'
  | 'token_out_of_scope'
  | 'token_expired'
  | 'token_revoked'
  | 'other_org_admin';

/** What the rule needs to know about a caller; the credential itself lives in world.ts. */
export type Caller =
  | { kind: 'anonymous' }
  | { kind: 'system' }
  /** A person of the tested org, with the bindings in force (an org role's default included). */
  | { kind: 'person'; bindings: Binding[] }
  /** An org admin of another org: the tested org's resources do not exist for it. */
  | { kind: 'other_org' }
  | { kind: 'token'; state: 'valid' | 'expired' | 'revoked'; role: Role; scope: { projects?: Array<'P' | 'Q'>; environments?: EnvironmentName[] } };

/**
 * What an operation needs, by hand per operation:
 * - public: no credential needed; every caller gets the same answer;
 * - session: a person's own session (me, sessions, logout, password...): any signed-in person;
 * - system: `/v1/admin`, system-org people only;
 * - key_only: SDK-key (or channel-token) routes: a bearer is no key (401), or a valid one is
 *   authenticated and refused as not a key (403, OFREP);
 * - role: `role` at `level` on the target. `org` needs an org-level binding (or an org-wide token);
 *   `anywhere` a role anywhere in the org (lists of projects and members, docs/access.md).
 *   `tokens: 'never'` for what a token may never do whatever its role (members, identity
 *   providers, API tokens, SDK traffic). `systemAdmin: 'allowed'`: the one management action a
 *   system administrator also has (inviting into any org, docs/decisions.md "Invitations").
 */
export type Access =
  /** `tokens: 401`: a route that takes a person's bearer or nothing refuses a token presented. */
  | { kind: 'public'; tokens?: 401 }
  | { kind: 'session' }
  /** Any valid credential, a person's or a token's (gRPC ValidateCredential: the credential is checked, not used). */
  | { kind: 'credential' }
  | { kind: 'system' }
  /** SDK or client key (or a channel token) only: no bearer is one, so every principal gets 401. */
  /** `bearer`: what a valid bearer gets; `tokens: 401` where an API token is read as a key (OFREP's `Bearer <key>`): an unknown one. */
  | { kind: 'key_only'; bearer: 401 | 403; tokens?: 401 }
  | { kind: 'role'; role: Role; level: 'org' | 'anywhere' | 'project' | 'environment'; tokens?: 'never'; systemAdmin?: 'allowed' };

/**
 * Where the operation's resource lives. `own_org`: the caller's own org (routes without an org,
 * project or environment id, e.g. POST /v1/management/projects), so another org's admin acts in
 * its own org and is allowed like the tested org's admin.
 */
export type Target = { org: 'tested'; project?: 'P' | 'Q'; environment?: EnvironmentName } | { org: 'own_org' };

/** The expected answer of one row. */
export type Expected = { allowed: true } | { allowed: false; status: 401 | 403 | 404 };
