import { notFound, type OrgDomain, type OrgDomainRepository, type OrgScope } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

interface DomainRow {
  org_id: string;
  domain: string;
  challenge: string;
  created_at_ms: number;
  verified_at_ms: number | null;
}

const toDomain = (row: DomainRow): OrgDomain => ({
  orgId: row.org_id,
  domain: row.domain,
  challenge: row.challenge,
  createdAtMs: Number(row.created_at_ms),
  verifiedAtMs: row.verified_at_ms === null ? null : Number(row.verified_at_ms),
});

/** Org domains in `org_domains`; every statement is scoped by org_id. */
export class PgOrgDomainRepository implements OrgDomainRepository {
  constructor(private readonly sql: Sql) {}

  async add(scope: OrgScope, input: { domain: string; challenge: string }, nowMs: number): Promise<OrgDomain> {
    if (!isUuid(scope.orgId)) throw notFound('organisation', scope.orgId);
    const [row] = await translateErrors(
      () => this.sql<DomainRow[]>`
        INSERT INTO org_domains (org_id, domain, challenge, created_at_ms) VALUES (${scope.orgId}, ${input.domain}, ${input.challenge}, ${nowMs})
        RETURNING org_id, domain, challenge, created_at_ms, verified_at_ms`,
      { resource: 'domain', name: input.domain, parent: 'organisation' },
    );
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toDomain(row);
  }

  async list(scope: OrgScope): Promise<OrgDomain[]> {
    if (!isUuid(scope.orgId)) return [];
    const rows = await this.sql<DomainRow[]>`
      SELECT org_id, domain, challenge, created_at_ms, verified_at_ms FROM org_domains WHERE org_id = ${scope.orgId} ORDER BY domain`;
    return rows.map(toDomain);
  }

  async get(scope: OrgScope, domain: string): Promise<OrgDomain | null> {
    if (!isUuid(scope.orgId)) return null;
    const [row] = await this.sql<DomainRow[]>`
      SELECT org_id, domain, challenge, created_at_ms, verified_at_ms FROM org_domains WHERE org_id = ${scope.orgId} AND domain = ${domain}`;
    return row ? toDomain(row) : null;
  }

  async markVerified(scope: OrgScope, domain: string, nowMs: number): Promise<OrgDomain> {
    if (!isUuid(scope.orgId)) throw notFound('domain', domain);
    // The partial unique index refuses a domain verified by another org: ALREADY_EXISTS.
    const [row] = await translateErrors(
      () => this.sql<DomainRow[]>`
        UPDATE org_domains SET verified_at_ms = coalesce(verified_at_ms, ${nowMs}::int8)
        WHERE org_id = ${scope.orgId} AND domain = ${domain}
        RETURNING org_id, domain, challenge, created_at_ms, verified_at_ms`,
      { resource: 'verified domain', name: domain },
    );
    if (!row) throw notFound('domain', domain);
    return toDomain(row);
  }

  async remove(scope: OrgScope, domain: string): Promise<void> {
    if (!isUuid(scope.orgId)) throw notFound('domain', domain);
    const result = await this.sql`DELETE FROM org_domains WHERE org_id = ${scope.orgId} AND domain = ${domain}`;
    if (result.count === 0) throw notFound('domain', domain);
  }

  async isVerified(scope: OrgScope, domain: string): Promise<boolean> {
    if (!isUuid(scope.orgId)) return false;
    const [row] = await this.sql<{ found: boolean }[]>`
      SELECT true AS found FROM org_domains WHERE org_id = ${scope.orgId} AND domain = ${domain} AND verified_at_ms IS NOT NULL`;
    return row !== undefined;
  }
}
