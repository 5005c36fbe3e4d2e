import { invalidArgument, type AuditEntry, type AuditQuery, type EnvironmentScope, type Principal, type Repositories } from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import type { ScopeResolver } from '../scopes.ts';
import { hiddenResourceTypes, redactForReader } from './audit-visibility.ts';

/** Entries per page when the caller names no limit, and the most one page holds. */
export const DEFAULT_AUDIT_PAGE = 50;
export const MAX_AUDIT_PAGE = 200;

/** An audit entry as REST and gRPC answer it (docs/contract.md "Change history"); absent parts are left out. */
export interface AuditEntryRecord {
  id: string;
  at_ms: number;
  /** `name`: an API token's name. */
  actor: { type: 'user' | 'sdk_key' | 'system' | 'api_token'; id: string; email?: string; name?: string };
  action: string;
  resource_type: string;
  resource_id: string;
  project_id?: string;
  environment_id?: string;
  before?: unknown;
  after?: unknown;
  details?: Record<string, unknown>;
  /** The comment the write gave (docs/access.md "Critical environments"). */
  comment?: string;
}

export interface AuditPageRecord {
  entries: AuditEntryRecord[];
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  next_cursor: string | null;
}

/** Which entries, and which page of them. */
export interface AuditLogRequest {
  resourceType?: string | null;
  resourceId?: string | null;
  environmentId?: string | null;
  cursor?: string | null;
  limit?: number | null;
}

export const auditEntryRecord = (entry: AuditEntry): AuditEntryRecord => ({
  id: entry.id,
  at_ms: entry.atMs,
  actor: { ...entry.actor },
  action: entry.action,
  resource_type: entry.resourceType,
  resource_id: entry.resourceId,
  ...(entry.projectId === null ? {} : { project_id: entry.projectId }),
  ...(entry.environmentId === null ? {} : { environment_id: entry.environmentId }),
  ...(entry.before === null ? {} : { before: entry.before }),
  ...(entry.after === null ? {} : { after: entry.after }),
  ...(Object.keys(entry.details).length === 0 ? {} : { details: entry.details }),
  ...(entry.comment === null || entry.comment === undefined ? {} : { comment: entry.comment }),
});

const given = (value: string | null | undefined): string | undefined => (value === null || value === undefined || value === '' ? undefined : value);

function pageSize(limit: number | null | undefined): number {
  if (limit === null || limit === undefined) return DEFAULT_AUDIT_PAGE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_AUDIT_PAGE) throw invalidArgument(`limit must be from 1 to ${MAX_AUDIT_PAGE}`, 'limit');
  return limit;
}

/**
 * Reading the change history (docs/contract.md "Change history"): an org's log, for any member of
 * the org (another org's: NOT_FOUND), and one flag's history in an environment, for whoever may
 * read the flag there. Both newest first, a page at a time, showing each reader only what it may
 * read (audit-visibility.ts): entries on resources it may not read are left out in the query, so
 * pages stay full and the cursor continues past them.
 */
export class AuditLogService {
  constructor(
    private readonly repos: Pick<Repositories, 'audit' | 'orgs' | 'users'>,
    private readonly scopes: ScopeResolver,
  ) {}

  /** The scope of an environment id from a URL (another org's: NOT_FOUND). */
  scope(principal: Principal, environmentId: string): Promise<EnvironmentScope> {
    return this.scopes.environment(principal, environmentId);
  }

  async list(principal: Principal, orgId: string, request: AuditLogRequest): Promise<AuditPageRecord> {
    requireAllowed(principal, 'org.read', { orgId });
    const query: AuditQuery = { cursor: given(request.cursor) ?? null, limit: pageSize(request.limit) };
    const resourceType = given(request.resourceType);
    const resourceId = given(request.resourceId);
    const environmentId = given(request.environmentId);
    if (resourceType !== undefined) query.resourceType = resourceType;
    if (resourceId !== undefined) query.resourceId = resourceId;
    if (environmentId !== undefined) query.environmentId = environmentId;
    return this.page(principal, orgId, query);
  }

  /**
   * The flag's entries in this environment plus the changes of its definition (which every
   * environment of the project sees), by key: a flag deleted and created again keeps one history.
   */
  async flagHistory(principal: Principal, scope: EnvironmentScope, flagKey: string, request: Pick<AuditLogRequest, 'cursor' | 'limit'>): Promise<AuditPageRecord> {
    requireAllowed(principal, 'flag.read', { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId });
    return this.page(principal, scope.orgId, {
      resourceType: 'flag',
      resourceId: flagKey,
      projectId: scope.projectId,
      environmentId: scope.environmentId,
      includeProjectLevel: true,
      cursor: given(request.cursor) ?? null,
      limit: pageSize(request.limit),
    });
  }

  private async page(principal: Principal, orgId: string, query: AuditQuery): Promise<AuditPageRecord> {
    const hidden = hiddenResourceTypes(principal, orgId);
    const page = await this.repos.audit.list({ orgId }, hidden.length === 0 ? query : { ...query, excludeResourceTypes: hidden });
    const shown = await redactForReader(this.repos, principal, orgId, page.items);
    return { entries: shown.map(auditEntryRecord), next_cursor: page.nextCursor };
  }
}
