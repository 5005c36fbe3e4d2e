import { notFound, type Membership, type SsoIdentityRepository, type SsoProvisionInput, type User } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { transaction } from './transaction.pg.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

/** Provider subjects bound to accounts (`sso_identities`). */
export class PgSsoIdentityRepository implements SsoIdentityRepository {
  constructor(private readonly sql: Sql) {}

  async findUser(providerId: string, subject: string): Promise<string | null> {
    if (!isUuid(providerId)) return null;
    const [row] = await this.sql<Array<{ user_id: string }>>`
      SELECT user_id FROM sso_identities WHERE provider_id = ${providerId} AND subject = ${subject}`;
    return row?.user_id ?? null;
  }

  async bind(input: { providerId: string; subject: string; userId: string }): Promise<void> {
    if (!isUuid(input.providerId) || !isUuid(input.userId)) throw notFound('auth provider or user');
    await translateErrors(
      () => this.sql`
        INSERT INTO sso_identities (provider_id, subject, user_id, created_at_ms)
        VALUES (${input.providerId}, ${input.subject}, ${input.userId}, floor(extract(epoch FROM clock_timestamp()) * 1000)::int8)`,
      { resource: 'identity', name: input.subject, parent: 'auth provider or user' },
    );
  }

  async provision(input: SsoProvisionInput): Promise<{ user: User; membership: Membership }> {
    if (!isUuid(input.providerId) || !isUuid(input.orgId)) throw notFound('auth provider or organisation');
    // All three rows or none: a half-made account (no membership, or no binding) would be stuck.
    return translateErrors(
      () =>
        transaction(this.sql, async (tx) => {
          const [user] = await tx<Array<{ id: string; email: string; display_name: string; password_hash: string; created_at_ms: number }>>`
            INSERT INTO users (email, display_name, password_hash)
            VALUES (${input.email}, ${input.displayName}, ${input.passwordHash})
            RETURNING id, email, display_name, password_hash, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms`;
          if (!user) throw new Error('INSERT ... RETURNING gave no row');
          const [membership] = await tx<Array<{ created_at_ms: number }>>`
            INSERT INTO memberships (org_id, user_id, role) VALUES (${input.orgId}, ${user.id}, ${input.role})
            RETURNING floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms`;
          await tx`
            INSERT INTO sso_identities (provider_id, subject, user_id, created_at_ms)
            VALUES (${input.providerId}, ${input.subject}, ${user.id}, floor(extract(epoch FROM clock_timestamp()) * 1000)::int8)`;
          return {
            user: { id: user.id, email: user.email, displayName: user.display_name, passwordHash: user.password_hash, createdAtMs: user.created_at_ms, emailVerifiedAtMs: null },
            membership: { orgId: input.orgId, userId: user.id, role: input.role, createdAtMs: membership?.created_at_ms ?? 0, bindings: null },
          };
        }),
      { resource: 'account', name: input.email, parent: 'auth provider or organisation' },
    );
  }
}
