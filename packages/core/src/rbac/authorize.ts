import type { OrgRole } from '../model/entities.ts';

/**
 * Who is calling, as established by a validated credential (svc.auth.v1.RbacContext).
 * A user token acts in one org at a time; an SDK key acts in exactly one environment.
 */
export type Principal =
  /** `sessionId` names the login session the bearer token belongs to (logout ends it). */
  | { kind: 'user'; userId: string; orgId: string; role: OrgRole; isSystem: boolean; sessionId?: string }
  | { kind: 'sdk_key'; sdkKeyId: string; orgId: string; projectId: string; environmentId: string };

/** Everything a caller can ask to do. Names are `resource.verb`. */
export const ACTIONS = [
  // platform administration: system-org users only
  'admin.manage',
  // organisation management
  'org.read',
  'project.create',
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
 * The single RBAC decision every transport calls (docs/contract.md "Roles (RBAC)"):
 * 1. system-org users may use admin actions and nothing else;
 * 2. other users may not use admin actions, and act only inside their own org
 *    (another org's resource is NOT_FOUND);
 * 3. org_member may do everything but the ADMIN_ONLY actions; org_admin everything in its org;
 * 4. an SDK key may do SDK_KEY_ACTIONS in its own environment only (another environment: 403).
 */
export function authorize(principal: Principal, action: Action, resource: ResourceRef): Decision {
  if (principal.kind === 'sdk_key') {
    if (!SDK_KEY_ACTIONS.has(action)) return deny('an SDK key cannot perform this action');
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
