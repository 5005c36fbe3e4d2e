import type { ContextAttribute, ContextAttributeRepository, EnvironmentScope, SeenContextAttribute } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { transaction } from './transaction.pg.ts';
import { isUuid } from './pg-errors.ts';

const validScope = (scope: { orgId: string; projectId: string; environmentId: string }): boolean =>
  isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId);

/** JavaScript's string order (code units), as the in-memory fake sorts: PostgreSQL's "C" collation. */
const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Attribute names per environment in `context_attributes`, every statement scoped by org, project and environment. */
export class PgContextAttributeRepository implements ContextAttributeRepository {
  constructor(private readonly sql: Sql) {}

  async record(attributes: readonly SeenContextAttribute[], maxPerEnvironment: number): Promise<number> {
    // One row per pair (an upsert may not touch a row twice), in one order so concurrent writers
    // lock rows alike; malformed ids match nothing.
    const unique = new Map<string, SeenContextAttribute>();
    for (const seen of attributes) if (validScope(seen)) unique.set(`${seen.environmentId}\u0000${seen.contextType}\u0000${seen.name}`, seen);
    const rows = [...unique.entries()].sort(([a], [b]) => byCodeUnits(a, b)).map(([, seen]) => seen);
    if (rows.length === 0) return 0;
    const column = (pick: (seen: SeenContextAttribute) => string) => this.sql.array(rows.map(pick));
    return transaction(this.sql, async (tx) => {
      // Only into an environment of the scope each row names (another tenant's scope joins nothing).
      const written = await tx`
        INSERT INTO context_attributes (org_id, project_id, environment_id, context_type, name, last_seen_at)
        SELECT e.org_id, e.project_id, e.id, u.context_type, u.name, now()
        FROM unnest(${column((s) => s.orgId)}::uuid[], ${column((s) => s.projectId)}::uuid[], ${column((s) => s.environmentId)}::uuid[],
                    ${column((s) => s.contextType)}::text[], ${column((s) => s.name)}::text[])
             AS u (org_id, project_id, environment_id, context_type, name)
        JOIN environments e ON e.id = u.environment_id AND e.project_id = u.project_id AND e.org_id = u.org_id
        ON CONFLICT (environment_id, context_type, name) DO UPDATE SET last_seen_at = excluded.last_seen_at`;
      // The cap: each touched environment keeps its maxPerEnvironment most recently seen.
      const touched = [...new Set(rows.map((seen) => seen.environmentId))];
      await tx`
        DELETE FROM context_attributes c
        USING (
          SELECT environment_id, context_type, name,
                 row_number() OVER (PARTITION BY environment_id ORDER BY last_seen_at DESC, context_type COLLATE "C", name COLLATE "C") AS rank
          FROM context_attributes WHERE environment_id = ANY(${this.sql.array(touched)}::uuid[])
        ) r
        WHERE r.rank > ${maxPerEnvironment} AND c.environment_id = r.environment_id AND c.context_type = r.context_type AND c.name = r.name`;
      return written.count;
    });
  }

  async list(scope: EnvironmentScope, limit: number): Promise<ContextAttribute[]> {
    if (!validScope(scope)) return [];
    const rows = await this.sql<{ context_type: string; name: string; last_seen_at_ms: number }[]>`
      SELECT context_type, name, floor(extract(epoch FROM last_seen_at) * 1000)::int8 AS last_seen_at_ms
      FROM context_attributes
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
      ORDER BY last_seen_at DESC, context_type COLLATE "C", name COLLATE "C"
      LIMIT ${limit}`;
    return rows.map((row) => ({ contextType: row.context_type, name: row.name, lastSeenAtMs: row.last_seen_at_ms }));
  }
}
