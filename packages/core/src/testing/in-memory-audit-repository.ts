import { notFound } from '../errors/domain-error.ts';
import type { AuditEntry } from '../model/entities.ts';
import type { AuditRepository } from '../ports/experiment-ports.ts';
import type { OrgScope } from '../ports/scopes.ts';
import type { InMemoryState } from './in-memory-state.ts';

// audit_log.org_id is a uuid column without a foreign key: any well-formed id is accepted, a
// malformed one can never be stored.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const copy = (entry: AuditEntry): AuditEntry => ({ ...entry, details: structuredClone(entry.details) });

/** AuditRepository over the shared in-memory tables. */
export class InMemoryAuditRepository implements AuditRepository {
  constructor(private readonly state: InMemoryState) {}

  async append(entry: Omit<AuditEntry, 'id'>): Promise<AuditEntry> {
    if (!UUID.test(entry.orgId)) throw notFound('organisation', entry.orgId);
    const stored = copy({ ...entry, id: this.state.newId() });
    this.state.audit.push(stored);
    return copy(stored);
  }

  async list(scope: OrgScope, options: { limit: number }): Promise<AuditEntry[]> {
    // Newest first; ties broken by id descending, exactly as the PostgreSQL adapter orders them.
    return this.state.audit
      .filter((e) => e.orgId === scope.orgId)
      .sort((a, b) => b.atMs - a.atMs || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
      .slice(0, Math.max(0, Math.floor(options.limit)))
      .map(copy);
  }
}
