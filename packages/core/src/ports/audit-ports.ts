import { invalidArgument } from '../errors/domain-error.ts';
import type { AuditDraft, AuditEntry } from '../model/entities.ts';
import type { Repositories } from './repositories.ts';
import type { OrgScope, Page } from './scopes.ts';

/** Which entries of an org a reader wants (docs/contract.md "Change history"). */
export interface AuditQuery {
  resourceType?: string;
  resourceId?: string;
  projectId?: string;
  environmentId?: string;
  /**
   * With `environmentId`: entries of that environment plus those of no environment (the
   * project-level changes a flag's history includes).
   */
  includeProjectLevel?: boolean;
  /**
   * Entries of these resource types are left out, before the page is cut: what a reader may not
   * read (an identity provider, an invitation) is neither shown nor leaves a page short.
   */
  excludeResourceTypes?: string[];
  /** `nextCursor` of the previous page; null or absent for the first. */
  cursor?: string | null;
  limit: number;
}

/**
 * The audit log: append-only for writers, read per org, newest first (by `atMs`, then by append
 * order). `append` is called inside `UnitOfWork.run`, with the write it describes. Only the pruner
 * deletes, and only from the old end of the log (docs/contract.md "Change history": retention and
 * the per-org cap), so what remains of an org's log is always its newest part.
 */
export interface AuditRepository {
  /** @throws NOT_FOUND for a malformed org id. */
  append(entry: AuditDraft): Promise<AuditEntry>;
  /** One entry of the org by id; null when the org has none such (or the id is malformed). */
  get(scope: OrgScope, id: string): Promise<AuditEntry | null>;
  /** @throws INVALID_ARGUMENT for a cursor this store did not hand out. */
  list(scope: OrgScope, query: AuditQuery): Promise<Page<AuditEntry>>;
  /** Deletes at most `limit` entries of any org older than `beforeMs`, oldest first; returns how many. */
  pruneOlderThan(beforeMs: number, limit: number): Promise<number>;
  /**
   * Looks at up to `orgLimit` orgs that hold entries, in id order after `afterOrgId` (null: from
   * the first), and reports those holding more than `maxEntries`. The work per org is bounded by
   * `maxEntries`, however many entries it holds.
   */
  findOverCap(maxEntries: number, afterOrgId: string | null, orgLimit: number): Promise<AuditCapScan>;
  /**
   * Deletes at most `limit` of the org's entries appended at or before `throughSeq` (its excess, see
   * AuditOverCap), first appended first; returns how many. Other orgs' entries are never touched.
   */
  pruneThrough(orgId: string, throughSeq: number, limit: number): Promise<number>;
}

/**
 * An org holding more entries than the cap, and where its excess ends. The cap keeps an org's
 * most recently appended entries: append order (`seq`) is the store's own, so neither a writer's
 * clock nor the time an entry claims decides what is kept.
 */
export interface AuditOverCap {
  orgId: string;
  /**
   * The append position of the org's newest entry beyond the cap (the cap+1-th most recently
   * appended): it and every entry of the org appended before it are the excess. Entries appended
   * later come after it, so they are never part of it.
   */
  newestExcessSeq: number;
}

/** One page of the search for orgs over the cap. */
export interface AuditCapScan {
  overCap: AuditOverCap[];
  /** The last org this page looked at, where the next page starts; null when none is left. */
  nextAfterOrgId: string | null;
}

/**
 * Writes that commit together or not at all (docs/decisions.md "Change history"). `work` gets
 * repositories bound to one transaction: everything it writes through them, its audit entry
 * included, is committed when it resolves and undone when it throws. Announcements to other
 * instances belong after `run` returns, when the change is visible to them.
 */
export interface UnitOfWork {
  run<T>(work: (repos: Repositories) => Promise<T>): Promise<T>;
}

/** Where a page of the log ends: the last entry's time and its place in the append order. */
export interface AuditPosition {
  atMs: number;
  seq: number;
}

/** The opaque cursor of a position (base64url of `atMs.seq`); stores share the format. */
export const encodeAuditCursor = (position: AuditPosition): string =>
  base64url(`${position.atMs}.${position.seq}`);

/** The position of a cursor. @throws INVALID_ARGUMENT for anything `encodeAuditCursor` did not make. */
export function decodeAuditCursor(cursor: string): AuditPosition {
  const match = /^(\d{1,16})\.(\d{1,16})$/.exec(fromBase64url(cursor));
  if (!match) throw invalidArgument('cursor is not a next_cursor of this listing', 'cursor');
  return { atMs: Number(match[1]), seq: Number(match[2]) };
}

// btoa/atob keep core free of Node's Buffer; the text is ASCII digits and a dot.
const base64url = (text: string): string => btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
function fromBase64url(value: string): string {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(value)) return '';
  try {
    return atob(value.replace(/-/g, '+').replace(/_/g, '/'));
  } catch {
    return '';
  }
}
