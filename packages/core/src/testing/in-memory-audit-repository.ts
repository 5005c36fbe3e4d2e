import { notFound } from '../errors/domain-error.ts';
import type { AuditDraft, AuditEntry } from '../model/entities.ts';
import { decodeAuditCursor, encodeAuditCursor, type AuditQuery, type AuditRepository } from '../ports/audit-ports.ts';
import type { OrgScope, Page } from '../ports/scopes.ts';
import type { InMemoryState } from './in-memory-state.ts';

// audit_log.org_id is a uuid column without a foreign key: any well-formed id is accepted, a
// malformed one can never be stored.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const copy = (entry: AuditEntry): AuditEntry => structuredClone(entry);

/**
 * AuditRepository over the shared in-memory tables. An entry's place in `state.audit` is its
 * append order (PostgreSQL's `seq`): the log is append-only, and a rolled back unit of work
 * truncates it to where it was.
 */
export class InMemoryAuditRepository implements AuditRepository {
  constructor(private readonly state: InMemoryState) {}

  async append(entry: AuditDraft): Promise<AuditEntry> {
    if (!UUID.test(entry.orgId)) throw notFound('organisation', entry.orgId);
    const stored = copy({ ...entry, id: this.state.newId() });
    this.state.audit.push(stored);
    return copy(stored);
  }

  async list(scope: OrgScope, query: AuditQuery): Promise<Page<AuditEntry>> {
    const after = query.cursor ? decodeAuditCursor(query.cursor) : null;
    const limit = Math.max(0, Math.floor(query.limit));
    // Newest first; equal times in reverse append order, exactly as the PostgreSQL adapter orders them.
    const matching = this.state.audit
      .map((entry, seq) => ({ entry, seq }))
      .filter(({ entry, seq }) => entry.orgId === scope.orgId && matches(entry, query) && (!after || entry.atMs < after.atMs || (entry.atMs === after.atMs && seq < after.seq)))
      .sort((a, b) => b.entry.atMs - a.entry.atMs || b.seq - a.seq);
    const page = matching.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map(({ entry }) => copy(entry)),
      nextCursor: matching.length > limit && last ? encodeAuditCursor({ atMs: last.entry.atMs, seq: last.seq }) : null,
    };
  }
}

function matches(entry: AuditEntry, query: AuditQuery): boolean {
  if (query.resourceType !== undefined && entry.resourceType !== query.resourceType) return false;
  if (query.resourceId !== undefined && entry.resourceId !== query.resourceId) return false;
  if (query.projectId !== undefined && entry.projectId !== query.projectId) return false;
  if (query.environmentId !== undefined) {
    const ownEnvironment = entry.environmentId === query.environmentId;
    if (!ownEnvironment && !(query.includeProjectLevel && entry.environmentId === null)) return false;
  }
  return true;
}
