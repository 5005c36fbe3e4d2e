import { notFound, type Invitation, type InvitationRepository } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid, translateErrors } from './pg-errors.ts';
import { transaction } from './transaction.pg.ts';

interface InvitationRow {
  id: string;
  org_id: string;
  email: string;
  role: Invitation['role'];
  created_at_ms: number;
  expires_at_ms: number;
  accepted_at_ms: number | null;
  created_by_user_id: string | null;
  created_by_email: string | null;
  proves_address: boolean;
}

const COLUMNS = 'id, org_id, email, role, created_at_ms, expires_at_ms, accepted_at_ms, created_by_user_id, created_by_email, proves_address';

const toInvitation = (row: InvitationRow): Invitation => ({
  id: row.id,
  orgId: row.org_id,
  email: row.email,
  role: row.role,
  createdBy: row.created_by_user_id === null ? null : { userId: row.created_by_user_id, email: row.created_by_email },
  provesAddress: row.proves_address,
  createdAtMs: row.created_at_ms,
  expiresAtMs: row.expires_at_ms,
  acceptedAtMs: row.accepted_at_ms,
});

/**
 * Invitations in `invitations` (token hashes only). Org-scoped, except the lookups by token hash:
 * a presented token is how an invitee finds its invitation in the first place.
 */
export class PgInvitationRepository implements InvitationRepository {
  constructor(private readonly sql: Sql) {}

  async create(
    scope: { orgId: string },
    input: { email: string; role: Invitation['role']; tokenHash: string; expiresAtMs: number; createdBy?: Invitation['createdBy']; provesAddress?: boolean },
  ): Promise<Invitation> {
    if (!isUuid(scope.orgId)) throw notFound('organisation', scope.orgId);
    const [row] = await translateErrors(
      () => this.sql<InvitationRow[]>`
        INSERT INTO invitations (org_id, email, role, token_hash, created_at_ms, expires_at_ms, created_by_user_id, created_by_email, proves_address)
        VALUES (${scope.orgId}, ${input.email}, ${input.role}, ${input.tokenHash},
                floor(extract(epoch FROM clock_timestamp()) * 1000)::int8, ${input.expiresAtMs}::int8,
                ${input.createdBy?.userId ?? null}, ${input.createdBy?.email ?? null}, ${input.provesAddress === true})
        RETURNING ${this.sql.unsafe(COLUMNS)}`,
      { resource: 'invitation', name: 'token', parent: 'organisation' },
    );
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toInvitation(row);
  }

  async listPending(scope: { orgId: string }, nowMs: number): Promise<Invitation[]> {
    if (!isUuid(scope.orgId)) return [];
    const rows = await this.sql<InvitationRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)} FROM invitations
      WHERE org_id = ${scope.orgId} AND accepted_at_ms IS NULL AND expires_at_ms > ${nowMs}::int8
      ORDER BY created_at_ms DESC, id`;
    return rows.map(toInvitation);
  }

  async delete(scope: { orgId: string }, invitationId: string): Promise<void> {
    if (!isUuid(scope.orgId) || !isUuid(invitationId)) throw notFound('invitation', invitationId);
    const result = await this.sql`
      DELETE FROM invitations WHERE org_id = ${scope.orgId} AND id = ${invitationId} AND accepted_at_ms IS NULL`;
    if (result.count === 0) throw notFound('invitation', invitationId);
  }

  async withdrawCreatedBy(scope: { orgId: string }, userId: string): Promise<Invitation[]> {
    if (!isUuid(scope.orgId) || !isUuid(userId)) return [];
    const rows = await this.sql<InvitationRow[]>`
      DELETE FROM invitations WHERE org_id = ${scope.orgId} AND created_by_user_id = ${userId} AND accepted_at_ms IS NULL
      RETURNING ${this.sql.unsafe(COLUMNS)}`;
    return rows.map(toInvitation);
  }

  async findActive(tokenHash: string, nowMs: number): Promise<Invitation | null> {
    const [row] = await this.sql<InvitationRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)} FROM invitations
      WHERE token_hash = ${tokenHash} AND accepted_at_ms IS NULL AND expires_at_ms > ${nowMs}::int8`;
    return row ? toInvitation(row) : null;
  }

  async accept(tokenHash: string, nowMs: number): Promise<Invitation | null> {
    return transaction(this.sql, async (tx) => {
      // The org first (the key-share lock the new membership's foreign key takes anyway), then the
      // invitation: the order a removal takes them (the org, then its creator's invitations), so
      // an acceptance and the removal of the invitation's creator cannot deadlock.
      await tx`SELECT id FROM orgs WHERE id = (SELECT org_id FROM invitations WHERE token_hash = ${tokenHash}) FOR KEY SHARE`;
      // Check and mark in one statement: of concurrent accepts, one updates the row.
      const [row] = await tx<InvitationRow[]>`
        UPDATE invitations SET accepted_at_ms = ${nowMs}::int8
        WHERE token_hash = ${tokenHash} AND accepted_at_ms IS NULL AND expires_at_ms > ${nowMs}::int8
        RETURNING ${tx.unsafe(COLUMNS)}`;
      return row ? toInvitation(row) : null;
    });
  }

  async pruneExpired(nowMs: number, limit: number): Promise<number> {
    if (limit < 1) return 0;
    const result = await this.sql`
      DELETE FROM invitations
      WHERE id IN (SELECT id FROM invitations WHERE expires_at_ms <= ${nowMs}::int8 LIMIT ${limit})`;
    return result.count;
  }
}
