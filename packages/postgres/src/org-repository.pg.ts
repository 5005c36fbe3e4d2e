import type { Org, OrgRepository } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

interface OrgRow {
  id: string;
  name: string;
  is_system: boolean;
  created_at_ms: number;
}

const toOrg = (row: OrgRow): Org => ({ id: row.id, name: row.name, isSystem: row.is_system, createdAtMs: row.created_at_ms });

/**
 * Organisations in `orgs`. Orgs are the tenancy root, so these statements have no wider scope to
 * carry: each one names the org by id, or reads the org list that only the system org may see.
 */
export class PgOrgRepository implements OrgRepository {
  constructor(private readonly sql: Sql) {}

  async create(input: { name: string; isSystem?: boolean }): Promise<Org> {
    // A taken name and a second system org (the partial unique index orgs_one_system) are both
    // unique violations, hence ALREADY_EXISTS.
    const [row] = await translateErrors(
      () => this.sql<OrgRow[]>`
        INSERT INTO orgs (name, is_system) VALUES (${input.name}, ${input.isSystem ?? false})
        RETURNING id, name, is_system, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms`,
      { resource: 'organisation', name: input.name },
    );
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toOrg(row);
  }

  async get(orgId: string): Promise<Org | null> {
    if (!isUuid(orgId)) return null;
    const [row] = await this.sql<OrgRow[]>`
      SELECT id, name, is_system, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms
      FROM orgs WHERE id = ${orgId}`;
    return row ? toOrg(row) : null;
  }

  async findSystemOrg(): Promise<Org | null> {
    const [row] = await this.sql<OrgRow[]>`
      SELECT id, name, is_system, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms
      FROM orgs WHERE is_system`;
    return row ? toOrg(row) : null;
  }

  async list(): Promise<Org[]> {
    const rows = await this.sql<OrgRow[]>`
      SELECT id, name, is_system, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms
      FROM orgs ORDER BY created_at, id`;
    return rows.map(toOrg);
  }
}
