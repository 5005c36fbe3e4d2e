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
  /** `nextCursor` of the previous page; null or absent for the first. */
  cursor?: string | null;
  limit: number;
}

/**
 * The audit log: append-only, read per org, newest first (by `atMs`, then by append order).
 * `append` is called inside `UnitOfWork.run`, with the write it describes.
 */
export interface AuditRepository {
  /** @throws NOT_FOUND for a malformed org id. */
  append(entry: AuditDraft): Promise<AuditEntry>;
  /** @throws INVALID_ARGUMENT for a cursor this store did not hand out. */
  list(scope: OrgScope, query: AuditQuery): Promise<Page<AuditEntry>>;
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
