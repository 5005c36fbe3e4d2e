import { alreadyExists, notFound } from '../errors/domain-error.ts';
import type { Invitation, InvitationRepository } from '../ports/session-ports.ts';
import type { InMemoryState } from './in-memory-state.ts';

type StoredInvitation = Invitation & { tokenHash: string };

const toInvitation = ({ tokenHash: _hash, ...invitation }: StoredInvitation): Invitation => ({
  ...invitation,
  createdBy: invitation.createdBy ? { ...invitation.createdBy } : null,
});

/** InvitationRepository over the shared in-memory tables; only token hashes are stored. */
export class InMemoryInvitationRepository implements InvitationRepository {
  constructor(private readonly state: InMemoryState) {}

  async create(
    scope: { orgId: string },
    input: { email: string; role: Invitation['role']; tokenHash: string; expiresAtMs: number; createdBy?: Invitation['createdBy']; provesAddress?: boolean },
  ): Promise<Invitation> {
    this.state.requireOrg(scope);
    // As the unique token_hash of `invitations` would.
    if (this.findByHash(input.tokenHash)) throw alreadyExists('invitation', 'token');
    const invitation: StoredInvitation = {
      id: this.state.newId(),
      orgId: scope.orgId,
      email: input.email,
      role: input.role,
      createdBy: input.createdBy ? { ...input.createdBy } : null,
      provesAddress: input.provesAddress === true,
      createdAtMs: this.state.now(),
      expiresAtMs: input.expiresAtMs,
      acceptedAtMs: null,
      tokenHash: input.tokenHash,
    };
    this.state.invitations.set(invitation.id, invitation);
    return toInvitation(invitation);
  }

  async listPending(scope: { orgId: string }, nowMs: number): Promise<Invitation[]> {
    return [...this.state.invitations.values()]
      .filter((i) => i.orgId === scope.orgId && i.acceptedAtMs === null && i.expiresAtMs > nowMs)
      .sort((a, b) => b.createdAtMs - a.createdAtMs)
      .map(toInvitation);
  }

  async delete(scope: { orgId: string }, invitationId: string): Promise<void> {
    const invitation = this.state.invitations.get(invitationId);
    if (!invitation || invitation.orgId !== scope.orgId || invitation.acceptedAtMs !== null) throw notFound('invitation', invitationId);
    this.state.invitations.delete(invitationId);
  }

  async withdrawCreatedBy(scope: { orgId: string }, userId: string): Promise<Invitation[]> {
    const withdrawn = [...this.state.invitations.values()].filter(
      (i) => i.orgId === scope.orgId && i.acceptedAtMs === null && i.createdBy?.userId === userId,
    );
    for (const invitation of withdrawn) this.state.invitations.delete(invitation.id);
    return withdrawn.map(toInvitation);
  }

  async findActive(tokenHash: string, nowMs: number): Promise<Invitation | null> {
    const invitation = this.findByHash(tokenHash);
    return invitation && invitation.acceptedAtMs === null && invitation.expiresAtMs > nowMs ? toInvitation(invitation) : null;
  }

  async accept(tokenHash: string, nowMs: number): Promise<Invitation | null> {
    // No await between check and write: as atomic as the adapter's single UPDATE.
    const invitation = this.findByHash(tokenHash);
    if (!invitation || invitation.acceptedAtMs !== null || invitation.expiresAtMs <= nowMs) return null;
    invitation.acceptedAtMs = nowMs;
    return toInvitation(invitation);
  }

  async pruneExpired(nowMs: number, limit: number): Promise<number> {
    const gone = [...this.state.invitations.values()].filter((i) => i.expiresAtMs <= nowMs).slice(0, Math.max(0, limit));
    for (const invitation of gone) this.state.invitations.delete(invitation.id);
    return gone.length;
  }

  private findByHash(tokenHash: string): StoredInvitation | undefined {
    for (const invitation of this.state.invitations.values()) if (invitation.tokenHash === tokenHash) return invitation;
    return undefined;
  }
}
