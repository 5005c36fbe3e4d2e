import type { OrgRole } from '../model/entities.ts';

/** A role a binding or an API token gives (docs/access.md "Roles and bindings (decision rules)"). */
export const BINDING_ROLES = ['viewer', 'editor', 'admin'] as const;
export type BindingRole = (typeof BINDING_ROLES)[number];

/**
 * A role where it applies: no ids, the whole org; `projectId`, that project and its environments;
 * `environmentId` (always with its `projectId`), that environment only.
 */
export interface RoleBinding {
  role: BindingRole;
  projectId?: string;
  environmentId?: string;
}

/** Which projects and environments an API token reaches; both lists apply; none: the whole org. */
export interface ApiTokenScope {
  projectIds?: string[];
  environmentIds?: string[];
}

/**
 * Who is calling, as established by a validated credential (svc.auth.v1.RbacContext).
 * A user token acts in one org at a time; an SDK key acts in exactly one environment.
 */
export type Principal =
  /**
   * `sessionId` names the login session the bearer token belongs to (logout ends it). `bindings`:
   * the person's roles per project and environment; absent: those of `role` (effectiveBindings).
   */
  | { kind: 'user'; userId: string; orgId: string; role: OrgRole; isSystem: boolean; sessionId?: string; bindings?: RoleBinding[] }
  | { kind: 'sdk_key'; sdkKeyId: string; orgId: string; projectId: string; environmentId: string }
  /** A client key (`ck_`): ships inside browser pages and app binaries (docs/client-side.md). */
  | { kind: 'client_key'; sdkKeyId: string; orgId: string; projectId: string; environmentId: string; client: ClientKeySettings }
  /** An API token (automation): not a person, no session; its role applies inside its scope only. */
  | { kind: 'api_token'; tokenId: string; name: string; orgId: string; role: BindingRole; scope: ApiTokenScope; expiresAtMs: number | null };

export type UserPrincipal = Extract<Principal, { kind: 'user' }>;
export type ApiTokenPrincipal = Extract<Principal, { kind: 'api_token' }>;

/** How a client key may be used (docs/client-side.md "Keys"). */
export interface ClientKeySettings {
  name: string;
  /** Exact `scheme://host[:port]` origins, or leading-wildcard subdomains `https://*.example.com`. */
  allowedOrigins: string[];
  /** Whether a request without an `Origin` header (a native app) is allowed. */
  allowMissingOrigin: boolean;
  /** `key`: the targeting key must be the signed token's `sub`; `context`: its vouched attributes too. */
  contextSigning: ContextSigning;
  /** Whether bulk answers include disabled flags (by default they are left out: the app's default applies). */
  includeDisabled: boolean;
  /** After this instant the key authenticates nothing; null: no expiry. */
  expiresAtMs: number | null;
}

/** What a server key carries in a key record's settings: nothing applies to it. */
export const SERVER_KEY_SETTINGS: Readonly<ClientKeySettings> = Object.freeze({
  name: '',
  allowedOrigins: [],
  allowMissingOrigin: false,
  contextSigning: 'off',
  includeDisabled: false,
  expiresAtMs: null,
});

export const CONTEXT_SIGNING_MODES = ['off', 'key', 'context'] as const;
export type ContextSigning = (typeof CONTEXT_SIGNING_MODES)[number];

/** The key principals: both name one environment. */
export type KeyPrincipal = Extract<Principal, { kind: 'sdk_key' | 'client_key' }>;
export const isKeyPrincipal = (principal: Principal): principal is KeyPrincipal => principal.kind === 'sdk_key' || principal.kind === 'client_key';

/** Everything a caller can ask to do. Names are `resource.verb`. */
export const ACTIONS = [
  // platform administration: system-org users only
  'admin.manage',
  // organisation management
  'org.read',
  'project.create',
  // project settings (client_visible_default)
  'project.update',
  'environment.create',
  // an environment's protection (critical, require_comment)
  'environment.update',
  'sdk_key.create',
  'sdk_key.delete',
  'user.create',
  // members' roles and removal, invitations
  'user.manage',
  // the org's identity providers (single sign-on)
  'auth_provider.manage',
  // the org's API tokens (create, list, revoke)
  'api_token.manage',
  // the org's webhook endpoints, their secrets and delivery logs (docs/workflow.md "Webhooks")
  'webhook.manage',
  // environment content
  'flag.read',
  'flag.write',
  'segment.read',
  'segment.write',
  'event_definition.read',
  'event_definition.write',
  'experiment.read',
  'experiment.write',
  'stats.recompute',
  'stats.read',
  // SDK traffic
  'flag.evaluate',
  'flag.sync',
  'event.ingest',
  'exposure.ingest',
  'segment.check',
  // client-key traffic: OFREP for client-visible flags and the browser stream
  'flag.client_evaluate',
  // change requests (docs/workflow.md "Change requests and approvals"): approving (or rejecting) someone's request, and
  // writing directly into an environment whose approval policy requires a request
  'change_request.approve',
  'change_request.bypass',
] as const;
export type Action = (typeof ACTIONS)[number];

/** What the action is applied to: environment-level actions name the environment and its project, project-level ones the project. */
export interface ResourceRef {
  orgId: string;
  /** The project the resource belongs to; absent: an org-level resource (only org-wide rights cover it). */
  projectId?: string;
  environmentId?: string;
}

export type Decision =
  | { allowed: true }
  | { allowed: false; code: 'PERMISSION_DENIED' | 'NOT_FOUND'; reason: string };

const ALLOW: Decision = { allowed: true };
const deny = (reason: string): Decision => ({ allowed: false, code: 'PERMISSION_DENIED', reason });
/** Another org's resource is answered as absent so its existence is not revealed (docs/contract.md "Roles (RBAC)"). */
const hidden: Decision = { allowed: false, code: 'NOT_FOUND', reason: 'not found' };

/** What an SDK key may do, and only in its own environment. */
const SDK_KEY_ACTIONS: ReadonlySet<Action> = new Set<Action>([
  'flag.evaluate',
  'flag.sync',
  'event.ingest',
  'exposure.ingest',
  'segment.check',
]);

/**
 * What a client key may do, and only in its own environment: deny by default. Its exposures and
 * events are further restricted by the services (docs/client-side.md "Exposures and events").
 */
const CLIENT_KEY_ACTIONS: ReadonlySet<Action> = new Set<Action>(['flag.client_evaluate', 'event.ingest', 'exposure.ingest']);

const LEVEL: Readonly<Record<BindingRole, number>> = { viewer: 1, editor: 2, admin: 3 };

/**
 * The role each action needs (docs/access.md "Roles and bindings (decision rules)"), and where:
 * `org` actions need the role from an org-level binding (an org-wide token), `resource` actions
 * from a binding that covers the resource. `admin.manage` is not grantable by a role (system users).
 */
export const ACTION_REQUIREMENTS: Readonly<Record<Exclude<Action, 'admin.manage'>, { role: BindingRole; at: 'org' | 'resource' }>> = {
  'org.read': { role: 'viewer', at: 'resource' },
  'project.create': { role: 'admin', at: 'org' },
  'project.update': { role: 'admin', at: 'resource' },
  'environment.create': { role: 'admin', at: 'resource' },
  'environment.update': { role: 'admin', at: 'resource' },
  'sdk_key.create': { role: 'admin', at: 'resource' },
  'sdk_key.delete': { role: 'admin', at: 'resource' },
  'user.create': { role: 'admin', at: 'org' },
  'user.manage': { role: 'admin', at: 'org' },
  'auth_provider.manage': { role: 'admin', at: 'org' },
  'api_token.manage': { role: 'admin', at: 'org' },
  'webhook.manage': { role: 'admin', at: 'org' },
  'flag.read': { role: 'viewer', at: 'resource' },
  'flag.write': { role: 'editor', at: 'resource' },
  'segment.read': { role: 'viewer', at: 'resource' },
  'segment.write': { role: 'editor', at: 'resource' },
  'event_definition.read': { role: 'viewer', at: 'resource' },
  'event_definition.write': { role: 'editor', at: 'resource' },
  'experiment.read': { role: 'viewer', at: 'resource' },
  'experiment.write': { role: 'editor', at: 'resource' },
  'stats.recompute': { role: 'editor', at: 'resource' },
  'stats.read': { role: 'viewer', at: 'resource' },
  // SDK traffic with a person's token (today's org_member may): evaluating is reading, ingesting is writing data.
  'flag.evaluate': { role: 'viewer', at: 'resource' },
  'flag.sync': { role: 'viewer', at: 'resource' },
  'event.ingest': { role: 'editor', at: 'resource' },
  'exposure.ingest': { role: 'editor', at: 'resource' },
  'segment.check': { role: 'viewer', at: 'resource' },
  'flag.client_evaluate': { role: 'viewer', at: 'resource' },
  'change_request.approve': { role: 'editor', at: 'resource' },
  'change_request.bypass': { role: 'admin', at: 'resource' },
};

/**
 * What an API token never does, whatever its role and scope:
 * - `admin.manage`: platform administration belongs to system-org people;
 * - `user.create`, `user.manage`, `auth_provider.manage`, `api_token.manage`: who belongs to the
 *   org, how people sign in and which tokens exist are decisions a person answers for; a leaked CI
 *   secret must not add members, promote anyone, point sign-in at another identity provider or
 *   mint another token (and so outlive its own revocation);
 * - SDK-key traffic (`flag.evaluate`, `flag.sync`, `event.ingest`, `exposure.ingest`,
 *   `segment.check`, `flag.client_evaluate`): applications use SDK and client keys, which are
 *   limited to one environment, rate-limited and counted as key traffic; a management token there
 *   would be a second, broader key that bypasses those limits.
 */
export const API_TOKEN_REFUSED_ACTIONS: ReadonlySet<Action> = new Set<Action>([
  'admin.manage',
  'user.create',
  'user.manage',
  'auth_provider.manage',
  'api_token.manage',
  'flag.evaluate',
  'flag.sync',
  'event.ingest',
  'exposure.ingest',
  'segment.check',
  'flag.client_evaluate',
  'change_request.approve',
  'change_request.bypass',
]);

/** A person's bindings; without explicit ones, those of the org role (exactly the rights org roles gave before bindings). */
export function effectiveBindings(principal: UserPrincipal): readonly RoleBinding[] {
  if (principal.bindings) return principal.bindings;
  return [{ role: principal.role === 'org_admin' ? 'admin' : 'editor' }];
}

const isRead = (role: BindingRole): boolean => role === 'viewer';

/**
 * The role one binding gives on the resource (0: none):
 * - an org-level binding covers every project and environment of the org, and the org itself;
 * - a project binding covers its project and that project's environments;
 * - an environment binding covers its environment, and for reads the project-level resources of its
 *   project (flags, segments and definitions are read through environments, and the environment
 *   list of its project), never another environment nor a project-level write.
 */
function bindingLevel(binding: RoleBinding, resource: ResourceRef, needed: BindingRole): number {
  if (binding.projectId === undefined && binding.environmentId === undefined) return LEVEL[binding.role];
  if (binding.environmentId !== undefined) {
    if (resource.environmentId !== undefined) return resource.environmentId === binding.environmentId ? LEVEL[binding.role] : 0;
    if (isRead(needed) && resource.projectId !== undefined && resource.projectId === binding.projectId) return LEVEL.viewer;
    return 0;
  }
  return resource.projectId !== undefined && resource.projectId === binding.projectId ? LEVEL[binding.role] : 0;
}

/**
 * The role an API token has on the resource (0: none). Its scope is a filter, both lists applying:
 * no lists: the whole org; `projectIds`: those projects and their environments; `environmentIds`:
 * those environments only (of the listed projects when both are given). A token limited to
 * environments reads the project-level resources of a listed project (as an environment binding
 * does); without `projectIds` it does not know its environments' projects, so it reaches them only
 * through environment routes. An empty list covers nothing.
 */
function tokenLevel(token: ApiTokenPrincipal, resource: ResourceRef, needed: BindingRole): number {
  const { projectIds, environmentIds } = token.scope;
  if (projectIds !== undefined && (resource.projectId === undefined || !projectIds.includes(resource.projectId))) return 0;
  if (environmentIds === undefined) return LEVEL[token.role];
  if (resource.environmentId !== undefined) return environmentIds.includes(resource.environmentId) ? LEVEL[token.role] : 0;
  return projectIds !== undefined && isRead(needed) && environmentIds.length > 0 ? LEVEL.viewer : 0;
}

/** Whether the token's scope is the whole org (the only scope that reaches `at: 'org'` actions). */
const tokenIsOrgWide = (token: ApiTokenPrincipal): boolean => token.scope.projectIds === undefined && token.scope.environmentIds === undefined;
const tokenCoversSomething = (token: ApiTokenPrincipal): boolean => token.scope.projectIds?.length !== 0 && token.scope.environmentIds?.length !== 0;

function refuseKeyAction(principal: KeyPrincipal, action: Action): Decision | null {
  const allowed = principal.kind === 'sdk_key' ? SDK_KEY_ACTIONS : CLIENT_KEY_ACTIONS;
  if (allowed.has(action)) return null;
  return deny(principal.kind === 'sdk_key' ? 'an SDK key cannot perform this action' : 'a client key cannot perform this action');
}

/**
 * What only an `org_admin` does, never a role binding, even an org-level `admin` one: who belongs to
 * the org, with which role and bindings, how people sign in and which tokens exist. A binding
 * (set by hand or from an identity provider's groups) gives rights over projects and environments;
 * it must not let its holder promote itself, rebind others or mint credentials.
 */
export const ORG_ADMIN_ROLE_ACTIONS: ReadonlySet<Action> = new Set<Action>(['user.create', 'user.manage', 'auth_provider.manage', 'api_token.manage']);

/** The checks before any role (people and tokens): system users, what a token never does, admin.manage, another org. null: go on to the role. */
function precheck(principal: Principal, action: Action, orgId: string): Decision | null {
  if (principal.kind === 'user' && principal.isSystem) {
    return action === 'admin.manage' ? ALLOW : deny('system-org users may only use /v1/admin routes');
  }
  if (principal.kind === 'api_token' && API_TOKEN_REFUSED_ACTIONS.has(action)) return deny(`an API token cannot perform ${action}`);
  // Only a member without bindings can be an org_admin (bindings are refused for them).
  if (principal.kind === 'user' && principal.bindings !== undefined && ORG_ADMIN_ROLE_ACTIONS.has(action) && orgId === principal.orgId) {
    return deny(`insufficient permissions: ${action} requires org_admin`);
  }
  if (action === 'admin.manage') return deny('admin routes require a system-org user');
  if (orgId !== principal.orgId) return hidden;
  return null;
}

function refusal(principal: Principal, action: Action, role: BindingRole, at: 'org' | 'resource'): Decision {
  // A person without bindings is refused for lacking org_admin, in today's words.
  if (principal.kind === 'user' && principal.bindings === undefined) return deny(`insufficient permissions: ${action} requires org_admin`);
  return deny(`insufficient permissions: ${action} requires ${at === 'org' ? 'an org-level ' : ''}${role} role${at === 'org' ? '' : ' here'}`);
}

/**
 * The single RBAC decision every transport calls (docs/access.md "Roles and bindings (decision rules)"):
 * 1. a server SDK key may do SDK_KEY_ACTIONS, a client key CLIENT_KEY_ACTIONS, each in its own
 *    environment only (another environment: 403);
 * 2. system-org users may use admin actions and nothing else;
 * 3. an API token never takes API_TOKEN_REFUSED_ACTIONS; nobody else but system users takes admin.manage;
 * 4. another org's resource is NOT_FOUND;
 * 5. the action's role (ACTION_REQUIREMENTS) must be held on the resource: by a person through one of
 *    its bindings (without explicit ones: org_admin is admin, org_member editor, org-wide), by a
 *    token through its role inside its scope; `at: 'org'` actions only through org-wide rights.
 */
export function authorize(principal: Principal, action: Action, resource: ResourceRef): Decision {
  if (principal.kind === 'sdk_key' || principal.kind === 'client_key') {
    const refused = refuseKeyAction(principal, action);
    if (refused) return refused;
    if (resource.orgId !== principal.orgId || resource.environmentId !== principal.environmentId) {
      return deny('the SDK key does not grant access to this environment');
    }
    return ALLOW;
  }
  const early = precheck(principal, action, resource.orgId);
  if (early) return early;
  const { role, at } = ACTION_REQUIREMENTS[action as Exclude<Action, 'admin.manage'>];
  const where: ResourceRef = at === 'org' ? { orgId: resource.orgId } : resource;
  const held =
    principal.kind === 'api_token'
      ? at === 'org' && !tokenIsOrgWide(principal) ? 0 : tokenLevel(principal, where, role)
      : Math.max(0, ...effectiveBindings(principal).map((binding) => bindingLevel(binding, where, role)));
  return held >= LEVEL[role] ? ALLOW : refusal(principal, action, role, at);
}

/**
 * Whether the principal holds the action's role on at least one resource of the org: the check a
 * use case makes before it looks a resource up, so a caller without the right anywhere is refused
 * before it learns whether the id exists (today's answer order), to be followed by authorize() with
 * the resource's project and environment once found. For org-wide rights (every principal without
 * explicit bindings) and for keys it decides exactly as authorize() on `{orgId}`.
 */
export function authorizeSomewhere(principal: Principal, action: Action, orgId: string): Decision {
  // A key's rights are in its environment only: an org-level check refuses it, exactly as authorize() does.
  if (principal.kind === 'sdk_key' || principal.kind === 'client_key') return authorize(principal, action, { orgId });
  const early = precheck(principal, action, orgId);
  if (early) return early;
  const { role, at } = ACTION_REQUIREMENTS[action as Exclude<Action, 'admin.manage'>];
  let held: number;
  if (principal.kind === 'api_token') {
    held = at === 'org' ? (tokenIsOrgWide(principal) ? LEVEL[principal.role] : 0) : tokenCoversSomething(principal) ? LEVEL[principal.role] : 0;
  } else {
    const bindings = effectiveBindings(principal).filter((binding) => at === 'resource' || (binding.projectId === undefined && binding.environmentId === undefined));
    held = Math.max(0, ...bindings.map((binding) => LEVEL[binding.role]));
  }
  return held >= LEVEL[role] ? ALLOW : refusal(principal, action, role, at);
}
