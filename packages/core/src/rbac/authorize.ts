import type { OrgRole } from '../model/entities.ts';

/**
 * Who is calling, as established by a validated credential (svc.auth.v1.RbacContext).
 * A user token acts in one org at a time; an SDK key acts in exactly one environment.
 */
export type Principal =
  /** `sessionId` names the login session the bearer token belongs to (logout ends it). */
  | { kind: 'user'; userId: string; orgId: string; role: OrgRole; isSystem: boolean; sessionId?: string }
  | { kind: 'sdk_key'; sdkKeyId: string; orgId: string; projectId: string; environmentId: string }
  /** A client key (`ck_`): ships inside browser pages and app binaries (docs/client-side.md). */
  | { kind: 'client_key'; sdkKeyId: string; orgId: string; projectId: string; environmentId: string; client: ClientKeySettings };

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
export const isKeyPrincipal = (principal: Principal): principal is KeyPrincipal => principal.kind !== 'user';

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
  'sdk_key.create',
  'sdk_key.delete',
  'user.create',
  // members' roles and removal, invitations
  'user.manage',
  // the org's identity providers (single sign-on)
  'auth_provider.manage',
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
] as const;
export type Action = (typeof ACTIONS)[number];

/** What the action is applied to; environment-level actions name the environment. */
export interface ResourceRef {
  orgId: string;
  environmentId?: string;
}

export type Decision =
  | { allowed: true }
  | { allowed: false; code: 'PERMISSION_DENIED' | 'NOT_FOUND'; reason: string };

const ALLOW: Decision = { allowed: true };
const deny = (reason: string): Decision => ({ allowed: false, code: 'PERMISSION_DENIED', reason });
/** Another org's resource is answered as absent so its existence is not revealed (docs/contract.md "Roles (RBAC)"). */
const hidden: Decision = { allowed: false, code: 'NOT_FOUND', reason: 'not found' };

/** Actions only an org_admin may take inside its org. */
const ADMIN_ONLY: ReadonlySet<Action> = new Set<Action>([
  'project.create',
  'project.update',
  'environment.create',
  'sdk_key.create',
  'sdk_key.delete',
  'user.create',
  'user.manage',
  'auth_provider.manage',
]);

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

/**
 * The single RBAC decision every transport calls (docs/contract.md "Roles (RBAC)"):
 * 1. system-org users may use admin actions and nothing else;
 * 2. other users may not use admin actions, and act only inside their own org
 *    (another org's resource is NOT_FOUND);
 * 3. org_member may do everything but the ADMIN_ONLY actions; org_admin everything in its org;
 * 4. a server SDK key may do SDK_KEY_ACTIONS, a client key CLIENT_KEY_ACTIONS, each in its own
 *    environment only (another environment: 403).
 */
export function authorize(principal: Principal, action: Action, resource: ResourceRef): Decision {
  if (principal.kind === 'sdk_key' || principal.kind === 'client_key') {
    const allowed = principal.kind === 'sdk_key' ? SDK_KEY_ACTIONS : CLIENT_KEY_ACTIONS;
    if (!allowed.has(action)) {
      return deny(principal.kind === 'sdk_key' ? 'an SDK key cannot perform this action' : 'a client key cannot perform this action');
    }
    if (resource.orgId !== principal.orgId || resource.environmentId !== principal.environmentId) {
      return deny('the SDK key does not grant access to this environment');
    }
    return ALLOW;
  }

  if (principal.isSystem) {
    return action === 'admin.manage' ? ALLOW : deny('system-org users may only use /v1/admin routes');
  }
  if (action === 'admin.manage') return deny('admin routes require a system-org user');
  if (resource.orgId !== principal.orgId) return hidden;
  if (ADMIN_ONLY.has(action) && principal.role !== 'org_admin') {
    return deny(`insufficient permissions: ${action} requires org_admin`);
  }
  return ALLOW;
}
