import { notFound } from '../errors/domain-error.ts';
import type { AuditDraft, AuditEntry } from '../model/entities.ts';
import {
  decodeAuditCursor,
  encodeAuditCursor,
  type AuditCapScan,
  type AuditPosition,
  type AuditQuery,
  type AuditRepository,
} from '../ports/audit-ports.ts';
import type { OrgScope, Page } from '../ports/scopes.ts';
import type { InMemoryState } from './in-memory-state.ts';

// audit_log.org_id is a uuid column without a foreign key: any well-formed id is accepted, a
// malformed one can never be stored.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const copy = (entry: AuditEntry): AuditEntry => structuredClone(entry);

interface Placed {
  entry: AuditEntry;
  seq: number;
}

/** The log's order, newest first: by time, equal times in reverse append order (as PostgreSQL's index). */
const newestFirst = (a: Placed, b: Placed): number => b.entry.atMs - a.entry.atMs || b.seq - a.seq;

/** True when `placed` comes after `position` in newest-first order. */
const olderThan = (placed: Placed, position: AuditPosition): boolean =>
  placed.entry.atMs < position.atMs || (placed.entry.atMs === position.atMs && placed.seq < position.seq);

/**
 * AuditRepository over the shared in-memory tables. `state.audit` holds the entries in append
 * order and `state.auditSeq` each one's `seq`, which pruning leaves as it was; a rolled back unit
 * of work puts both back.
 */
export class InMemoryAuditRepository implements AuditRepository {
  constructor(private readonly state: InMemoryState) {}

  async append(entry: AuditDraft): Promise<AuditEntry> {
    if (!UUID.test(entry.orgId)) throw notFound('organisation', entry.orgId);
    const stored = copy({ ...entry, comment: entry.comment ?? null, id: this.state.newId() });
    this.state.auditSeqCounter += 1;
    this.state.auditSeq.set(stored.id, this.state.auditSeqCounter);
    this.state.audit.push(stored);
    return copy(stored);
  }

  async get(scope: OrgScope, id: string): Promise<AuditEntry | null> {
    const entry = this.state.audit.find((e) => e.id === id && e.orgId === scope.orgId);
    return entry ? copy(entry) : null;
  }

  async list(scope: OrgScope, query: AuditQuery): Promise<Page<AuditEntry>> {
    const after = query.cursor ? decodeAuditCursor(query.cursor) : null;
    const limit = Math.max(0, Math.floor(query.limit));
    const matching = this.placed()
      .filter((placed) => placed.entry.orgId === scope.orgId && matches(placed.entry, query) && (!after || olderThan(placed, after)))
      .sort(newestFirst);
    const page = matching.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map(({ entry }) => copy(entry)),
      nextCursor: matching.length > limit && last ? encodeAuditCursor({ atMs: last.entry.atMs, seq: last.seq }) : null,
    };
  }

  async pruneOlderThan(beforeMs: number, limit: number): Promise<number> {
    const doomed = this.placed()
      .filter(({ entry }) => entry.atMs < beforeMs)
      .sort((a, b) => -newestFirst(a, b))
      .slice(0, Math.max(0, limit));
    return this.remove(doomed);
  }

  async findOverCap(maxEntries: number, afterOrgId: string | null, orgLimit: number): Promise<AuditCapScan> {
    // PostgreSQL orders uuids by their bytes, which is the order of their lower-case text.
    const orgIds = [...new Set(this.state.audit.map((entry) => entry.orgId.toLowerCase()))]
      .filter((orgId) => afterOrgId === null || orgId > afterOrgId.toLowerCase())
      .sort()
      .slice(0, Math.max(0, orgLimit));
    const overCap: AuditCapScan['overCap'] = [];
    for (const orgId of orgIds) {
      const newestExcess = this.placed()
        .filter(({ entry }) => entry.orgId.toLowerCase() === orgId)
        .sort((a, b) => b.seq - a.seq)[maxEntries];
      if (newestExcess) overCap.push({ orgId, newestExcessSeq: newestExcess.seq });
    }
    return { overCap, nextAfterOrgId: orgIds.length === orgLimit && orgIds.length > 0 ? orgIds[orgIds.length - 1]! : null };
  }

  async pruneThrough(orgId: string, throughSeq: number, limit: number): Promise<number> {
    // state.audit is in append order already.
    const doomed = this.placed()
      .filter((placed) => placed.entry.orgId.toLowerCase() === orgId.toLowerCase() && placed.seq <= throughSeq)
      .slice(0, Math.max(0, limit));
    return this.remove(doomed);
  }

  private placed(): Placed[] {
    return this.state.audit.map((entry) => ({ entry, seq: this.state.auditSeq.get(entry.id) ?? 0 }));
  }

  /** Deletes these entries from the table in place (the fakes share the array); returns how many. */
  private remove(doomed: Placed[]): number {
    const ids = new Set(doomed.map(({ entry }) => entry.id));
    const kept = this.state.audit.filter((entry) => !ids.has(entry.id));
    this.state.audit.length = 0;
    for (const entry of kept) this.state.audit.push(entry);
    for (const id of ids) this.state.auditSeq.delete(id);
    return ids.size;
  }
}

function matches(entry: AuditEntry, query: AuditQuery): boolean {
  if (query.resourceType !== undefined && entry.resourceType !== query.resourceType) return false;
  if (query.resourceId !== undefined && entry.resourceId !== query.resourceId) return false;
  if (query.excludeResourceTypes?.includes(entry.resourceType)) return false;
  if (query.projectId !== undefined && entry.projectId !== query.projectId) return false;
  if (query.environmentId !== undefined) {
    const ownEnvironment = entry.environmentId === query.environmentId;
    if (!ownEnvironment && !(query.includeProjectLevel && entry.environmentId === null)) return false;
  }
  return true;
}
