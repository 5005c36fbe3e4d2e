import { CONTEXT_SIGNING_MODES, DomainError, ORG_ROLES, type ContextSigning, type OrgRole, type Principal } from '@switchyard/core';

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
  kind: 'PRINCIPAL_KIND_UNSPECIFIED' | 'PRINCIPAL_KIND_USER' | 'PRINCIPAL_KIND_SDK_KEY' | 'PRINCIPAL_KIND_CLIENT_KEY';
  client_key?: {
    name: string;
    allowed_origins: string[];
    allow_missing_origin: boolean;
    context_signing: string;
    include_disabled: boolean;
    /** int64, loaded as a number (longs: Number). */
    expires_at_ms: string | number;
  } | null;
}

const isContextSigning = (mode: string): mode is ContextSigning => (CONTEXT_SIGNING_MODES as readonly string[]).includes(mode);

const isOrgRole = (role: string | undefined): role is OrgRole => (ORG_ROLES as readonly string[]).includes(role ?? '');

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
      const principal: Principal = { kind: 'user', userId: context.subject, orgId: context.tenant_id, role, isSystem: context.is_system };
      // Absent rather than undefined when there is none, as the services' own principal has it.
      if (context.session_id) principal.sessionId = context.session_id;
      return principal;
    }
  }
  throw new DomainError('INTERNAL', 'internal error');
}
