import { DomainError, ORG_ROLES, type OrgRole, type Principal } from '@switchyard/core';

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
  kind: 'PRINCIPAL_KIND_UNSPECIFIED' | 'PRINCIPAL_KIND_USER' | 'PRINCIPAL_KIND_SDK_KEY';
}

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
