import type { Access, Binding, Caller, Expected, Role, Target } from './types.ts';

/**
 * The expected answer of a row, from docs/access.md written out by hand (independent of
 * packages/core/src/rbac/authorize.ts, which this table checks):
 * - role levels viewer < editor < admin; a caller's role on a resource is the highest its bindings
 *   (or its token's role within the token's scope) give there;
 * - refused inside the org: 403; another org's resource: 404; no, expired or revoked credential: 401;
 * - a token never manages members, identity providers or tokens, never uses /v1/admin or SDK
 *   traffic (403), and is not a session (TOKEN_ON_SESSION_ROUTE).
 */

const RANK: Record<Role, number> = { viewer: 1, editor: 2, admin: 3 };

/** What a session route answers an API token (docs/access.md "API tokens": not a person's session). */
export const TOKEN_ON_SESSION_ROUTE = 403;

/** The tested org's environments and their projects. */
export const PROJECT_OF = { staging: 'P', production: 'P', qa: 'Q' } as const;

type Level = Extract<Access, { kind: 'role' }>['level'];

/** The role one binding gives on the target at `level` (0: none). */
function rankOf(binding: Binding, level: Level, target: Target): number {
  const rank = RANK[binding.role];
  if (level === 'anywhere') return rank;
  if (binding.project === undefined && binding.environment === undefined) return rank; // org-level
  if (level === 'org' || target.org !== 'tested') return 0;
  if (binding.environment === undefined) return binding.project === target.project ? rank : 0;
  if (level === 'environment') return binding.environment === target.environment ? rank : 0;
  // Project-level resources: an environment binding reads those of its project.
  return binding.readsProject && PROJECT_OF[binding.environment] === target.project ? RANK.viewer : 0;
}

/** A token's role over its scope, as bindings (docs/access.md "API tokens"). */
function tokenBindings(caller: Extract<Caller, { kind: 'token' }>): Binding[] {
  const { projects, environments } = caller.scope;
  if (environments !== undefined) {
    return environments
      .filter((environment) => projects === undefined || projects.includes(PROJECT_OF[environment]))
      .map((environment) => ({ role: caller.role, environment, project: PROJECT_OF[environment], readsProject: projects !== undefined }));
  }
  if (projects !== undefined) return projects.map((project) => ({ role: caller.role, project }));
  return [{ role: caller.role }];
}

export function expected(access: Access, caller: Caller, target: Target): Expected {
  if (access.kind === 'public') return access.tokens !== undefined && caller.kind === 'token' ? { allowed: false, status: access.tokens } : { allowed: true };
  if (caller.kind === 'anonymous') return { allowed: false, status: 401 };
  if (caller.kind === 'token' && caller.state !== 'valid') return { allowed: false, status: 401 };
  if (access.kind === 'key_only') return { allowed: false, status: caller.kind === 'token' ? (access.tokens ?? access.bearer) : access.bearer };
  if (access.kind === 'credential') return { allowed: true };
  if (access.kind === 'session') return caller.kind === 'token' ? { allowed: false, status: TOKEN_ON_SESSION_ROUTE } : { allowed: true };
  if (access.kind === 'system') return caller.kind === 'system' ? { allowed: true } : { allowed: false, status: 403 };
  // A system-org user may use /v1/admin and nothing else, but invite into any org.
  if (caller.kind === 'system') return access.systemAdmin === 'allowed' ? { allowed: true } : { allowed: false, status: 403 };
  if (caller.kind === 'token' && access.tokens === 'never') return { allowed: false, status: 403 };
  if (caller.kind === 'other_org') return target.org === 'own_org' ? { allowed: true } : { allowed: false, status: 404 };
  const bindings = caller.kind === 'token' ? tokenBindings(caller) : caller.bindings;
  const rank = Math.max(0, ...bindings.map((binding) => rankOf(binding, access.level, target)));
  return rank >= RANK[access.role] ? { allowed: true } : { allowed: false, status: 403 };
}
