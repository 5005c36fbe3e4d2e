import { BINDING_ROLES, CONTEXT_SIGNING_MODES, DomainError, ORG_ROLES, type BindingRole, type ContextSigning, type OrgRole, type Principal, type RoleBinding, type UserPrincipal } from '@switchyard/core';

/** svc.common.v1.RbacContext as loaded by packages/transport/src/grpc/proto.ts (enums as their names). */
export interface RbacContextMessage {
  tenant_id: string;
  environment_id: string;
  roles: string[];
  permissions: string[];
  subject: string;
  is_system: boolean;
  project_id: string;
  session_id: string;
  kind: 'PRINCIPAL_KIND_UNSPECIFIED' | 'PRINCIPAL_KIND_USER' | 'PRINCIPAL_KIND_SDK_KEY' | 'PRINCIPAL_KIND_CLIENT_KEY' | 'PRINCIPAL_KIND_API_TOKEN';
  client_key?: {
    name: string;
    allowed_origins: string[];
    allow_missing_origin: boolean;
    context_signing: string;
    include_disabled: boolean;
    /** int64, loaded as a number (longs: Number). */
    expires_at_ms: string | number;
  } | null;
  has_bindings?: boolean;
  bindings?: Array<{ role: string; project_id: string; environment_id: string }>;
  api_token?: {
    name: string;
    role: string;
    has_project_ids: boolean;
    project_ids: string[];
    has_environment_ids: boolean;
    environment_ids: string[];
    expires_at_ms: string | number;
  } | null;
}

const isContextSigning = (mode: string): mode is ContextSigning => (CONTEXT_SIGNING_MODES as readonly string[]).includes(mode);

const isOrgRole = (role: string | undefined): role is OrgRole => (ORG_ROLES as readonly string[]).includes(role ?? '');

const isBindingRole = (role: string | undefined): role is BindingRole => (BINDING_ROLES as readonly string[]).includes(role ?? '');

/** The bindings of a user context, or null when one of them cannot be read in full. */
function bindingsFrom(context: RbacContextMessage): RoleBinding[] | null {
  const bindings: RoleBinding[] = [];
  for (const binding of context.bindings ?? []) {
    if (!isBindingRole(binding.role)) return null;
    // An environment binding always names its project (docs/access.md "Bindings").
    if (binding.environment_id && !binding.project_id) return null;
    bindings.push({
      role: binding.role,
      ...(binding.project_id ? { projectId: binding.project_id } : {}),
      ...(binding.environment_id ? { environmentId: binding.environment_id } : {}),
    });
  }
  return bindings;
}

/**
 * The principal the services act for, rebuilt field for field from their ValidateCredential answer
 * (the inverse of `rbacContext` in packages/transport/src/domains/auth/grpc.ts). An answer it cannot read in
 * full — a services process older than the `kind` field, an unknown role, a missing id — is
 * INTERNAL: guessing would authorize with a principal the services never gave.
 */
export function principalFromRbacContext(context: RbacContextMessage): Principal {
  if (context.kind === 'PRINCIPAL_KIND_SDK_KEY') {
    const { subject, tenant_id, project_id, environment_id } = context;
    if (subject && tenant_id && project_id && environment_id) {
      return { kind: 'sdk_key', sdkKeyId: subject, orgId: tenant_id, projectId: project_id, environmentId: environment_id };
    }
  } else if (context.kind === 'PRINCIPAL_KIND_CLIENT_KEY') {
    const { subject, tenant_id, project_id, environment_id, client_key: settings } = context;
    if (subject && tenant_id && project_id && environment_id && settings && isContextSigning(settings.context_signing)) {
      const expiresAtMs = Number(settings.expires_at_ms);
      return {
        kind: 'client_key',
        sdkKeyId: subject,
        orgId: tenant_id,
        projectId: project_id,
        environmentId: environment_id,
        client: {
          name: settings.name,
          allowedOrigins: [...settings.allowed_origins],
          allowMissingOrigin: settings.allow_missing_origin,
          contextSigning: settings.context_signing,
          includeDisabled: settings.include_disabled,
          expiresAtMs: expiresAtMs > 0 ? expiresAtMs : null,
        },
      };
    }
  } else if (context.kind === 'PRINCIPAL_KIND_USER') {
    const role = context.roles[0];
    if (context.subject && context.tenant_id && isOrgRole(role)) {
      const principal: UserPrincipal = { kind: 'user', userId: context.subject, orgId: context.tenant_id, role, isSystem: context.is_system };
      // Absent rather than undefined when there is none, as the services' own principal has it.
      if (context.session_id) principal.sessionId = context.session_id;
      const bindings = context.has_bindings ? bindingsFrom(context) : undefined;
      if (bindings !== null) {
        if (bindings !== undefined) principal.bindings = bindings;
        return principal;
      }
    }
  } else if (context.kind === 'PRINCIPAL_KIND_API_TOKEN') {
    const { subject, tenant_id, api_token: grant } = context;
    if (subject && tenant_id && grant && isBindingRole(grant.role)) {
      const expiresAtMs = Number(grant.expires_at_ms);
      return {
        kind: 'api_token',
        tokenId: subject,
        name: grant.name,
        orgId: tenant_id,
        role: grant.role,
        scope: {
          ...(grant.has_project_ids ? { projectIds: [...grant.project_ids] } : {}),
          ...(grant.has_environment_ids ? { environmentIds: [...grant.environment_ids] } : {}),
        },
        expiresAtMs: expiresAtMs > 0 ? expiresAtMs : null,
      };
    }
  }
  throw new DomainError('INTERNAL', 'internal error');
}
