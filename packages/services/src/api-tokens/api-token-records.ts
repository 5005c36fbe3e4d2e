import type { ApiToken, ApiTokenScope, BindingRole } from '@switchyard/core';

/** An API token as the API shows it (docs/access.md "API tokens"); `token` only in the create answer. */
export interface ApiTokenRecord {
  id: string;
  token?: string;
  name: string;
  role: BindingRole;
  scope: { project_ids?: string[]; environment_ids?: string[] };
  token_prefix: string;
  created_by: { user_id: string; email: string } | null;
  created_at_ms: number;
  expires_at_ms: number | null;
  last_used_at_ms: number | null;
}

export const scopeRecord = (scope: ApiTokenScope): ApiTokenRecord['scope'] => ({
  ...(scope.projectIds === undefined ? {} : { project_ids: [...scope.projectIds] }),
  ...(scope.environmentIds === undefined ? {} : { environment_ids: [...scope.environmentIds] }),
});

export function apiTokenRecord(token: ApiToken, creator: { user_id: string; email: string } | null, plaintext?: string): ApiTokenRecord {
  return {
    id: token.id,
    ...(plaintext === undefined ? {} : { token: plaintext }),
    name: token.name,
    role: token.role,
    scope: scopeRecord(token.scope),
    token_prefix: token.tokenPrefix,
    created_by: creator,
    created_at_ms: token.createdAtMs,
    expires_at_ms: token.expiresAtMs,
    last_used_at_ms: token.lastUsedAtMs,
  };
}
