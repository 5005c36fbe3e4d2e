import { lifecycleRecord, type LifecycleThresholdsRecord } from '../client/project-settings-input.ts';
import type { RoleBindingRecord } from '../role-bindings/role-binding-records.ts';
import type { ContextSigning, Environment, Membership, Org, Project, SdkKey, SdkKeyKind, User } from '@switchyard/core';

/**
 * The wire records of docs/contract.md "Records", shared by REST and gRPC. A user record never carries a
 * password or hash; an SDK key record carries `raw_key` only in the create response.
 */
export interface OrgRecord {
  org_id: string;
  org_name: string;
  created_at: string;
}
export interface ProjectRecord {
  project_id: string;
  project_name: string;
  org_id: string;
  /** New flags' `client_visible` when their create does not say (docs/client-side.md "What a client sees"). */
  client_visible_default: boolean;
  /** Thresholds of the flags' statuses and lifecycle stages, in days (docs/insights.md "Thresholds"). */
  lifecycle: LifecycleThresholdsRecord;
}
export interface EnvironmentRecord {
  environment_id: string;
  environment_name: string;
  project_id: string;
  /** A person's write here needs X-Confirm-Environment (docs/access.md "Critical environments"). */
  critical: boolean;
  /** Every write here needs X-Change-Comment. */
  require_comment: boolean;
}
export interface UserRecord {
  user_id: string;
  email: string;
  display_name: string;
  org_id: string;
  org_role: Membership['role'];
}
/** A record of the members list: the user record and the member's stored role bindings (null: the org role's default). */
export interface MemberRecord extends UserRecord {
  bindings: RoleBindingRecord[] | null;
}
export interface SdkKeyRecord {
  sdk_key_id: string;
  environment_id: string;
  key_prefix: string;
  created_at: string;
  raw_key?: string;
  /** `server` or `client` (docs/client-side.md "Keys"); the fields below matter for client keys only. */
  kind: SdkKeyKind;
  name: string;
  allowed_origins: string[];
  allow_missing_origin: boolean;
  context_signing: ContextSigning;
  include_disabled: boolean;
  /** Epoch ms, or null: no expiry. */
  expires_at_ms: number | null;
  /** Epoch ms of the key's last sync stream or evaluation (written at most once a minute), or null: never. */
  last_used_at_ms: number | null;
}

const iso = (ms: number): string => new Date(ms).toISOString();

export const orgRecord = (org: Org): OrgRecord => ({ org_id: org.id, org_name: org.name, created_at: iso(org.createdAtMs) });

export const projectRecord = (project: Project): ProjectRecord => ({
  project_id: project.id,
  project_name: project.name,
  org_id: project.orgId,
  client_visible_default: project.clientVisibleDefault,
  lifecycle: lifecycleRecord(project.lifecycle),
});

export const environmentRecord = (environment: Environment): EnvironmentRecord => ({
  environment_id: environment.id,
  environment_name: environment.name,
  project_id: environment.projectId,
  critical: environment.critical,
  require_comment: environment.requireComment,
});

export const userRecord = (user: User, membership: Membership): UserRecord => ({
  user_id: user.id,
  email: user.email,
  display_name: user.displayName,
  org_id: membership.orgId,
  org_role: membership.role,
});

export const sdkKeyRecord = (key: SdkKey, rawKey?: string): SdkKeyRecord => ({
  sdk_key_id: key.id,
  environment_id: key.environmentId,
  key_prefix: key.keyPrefix,
  created_at: iso(key.createdAtMs),
  ...(rawKey === undefined ? {} : { raw_key: rawKey }),
  kind: key.kind,
  name: key.settings.name,
  allowed_origins: [...key.settings.allowedOrigins],
  allow_missing_origin: key.settings.allowMissingOrigin,
  context_signing: key.settings.contextSigning,
  include_disabled: key.settings.includeDisabled,
  expires_at_ms: key.settings.expiresAtMs,
  last_used_at_ms: key.lastUsedAtMs,
});
