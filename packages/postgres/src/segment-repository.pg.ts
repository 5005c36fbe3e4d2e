import type postgres from 'postgres';
import { failedPrecondition, invalidArgument, notFound, versionConflict } from '@switchyard/core';
import type {
  Condition,
  EnvironmentScope,
  MemberChanges,
  MemberList,
  MemberLists,
  Page,
  Segment,
  SegmentInput,
  SegmentKind,
  SegmentRepository,
} from '@switchyard/core';
import type { Sql, TransactionSql } from './connect.ts';
import { transaction } from './transaction.pg.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

/** A `segments` row as `RETURNING *` gives it. */
interface SegmentRow {
  id: string;
  key: string;
  context_type: string;
  kind: SegmentKind;
  description: string;
  conditions: Condition[];
  included_count: number;
  excluded_count: number;
  version: number;
  created_at: Date;
  updated_at: Date;
}

const fromRow = (row: SegmentRow): Segment => ({
  id: row.id,
  key: row.key,
  context_type: row.context_type,
  kind: row.kind,
  description: row.description,
  conditions: row.conditions,
  included_count: row.included_count,
  excluded_count: row.excluded_count,
  version: row.version,
  created_at_ms: row.created_at.getTime(),
  updated_at_ms: row.updated_at.getTime(),
});

/** Ids that are not UUIDs can never match a row; checking first keeps driver errors out. */
const validScope = (scope: EnvironmentScope): boolean =>
  isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId);

/** Distinct keys: one membership row per key, and smaller arrays on the wire. */
const distinct = (keys: string[] | undefined): string[] => [...new Set(keys ?? [])];

/**
 * SegmentRepository on PostgreSQL. Records live in `segments`; list members in `segment_members`,
 * one row per (segment, key, list), so a membership check is one primary-key probe and a page of
 * members one range scan of the paging index — whatever the size of the list. The record keeps
 * exact counts, maintained from the row counts of each member write under a lock on the segment.
 */
export class PgSegmentRepository implements SegmentRepository {
  constructor(private readonly sql: Sql) {}

  async create(scope: EnvironmentScope, input: SegmentInput): Promise<Segment> {
    if (!validScope(scope)) throw notFound('environment', scope.environmentId);
    // Conditions only mean something for rule segments; a list segment is its members.
    const conditions = input.kind === 'rule' ? (input.conditions ?? []) : [];
    // INSERT ... SELECT from the scoped environment: an environment outside the scope inserts
    // nothing. One clock reading for both timestamps, so updated_at starts equal to created_at.
    const [row] = await translateErrors(
      () => this.sql<SegmentRow[]>`
        INSERT INTO segments
          (org_id, project_id, environment_id, key, context_type, kind, description, conditions, created_at, updated_at)
        SELECT e.org_id, e.project_id, e.id, ${input.key}, ${input.context_type}, ${input.kind},
               ${input.description ?? ''}, ${this.json(conditions)}, t.now, t.now
        FROM environments e CROSS JOIN (SELECT clock_timestamp() AS now) t
        WHERE e.id = ${scope.environmentId} AND e.project_id = ${scope.projectId} AND e.org_id = ${scope.orgId}
        RETURNING *`,
      { resource: 'segment', name: input.key, parent: 'environment' },
    );
    if (!row) throw notFound('environment', scope.environmentId);
    return fromRow(row);
  }

  async get(scope: EnvironmentScope, key: string): Promise<Segment | null> {
    if (!validScope(scope)) return null;
    const [row] = await this.sql<SegmentRow[]>`
      SELECT * FROM segments
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
        AND key = ${key}`;
    return row ? fromRow(row) : null;
  }

  async list(scope: EnvironmentScope): Promise<Segment[]> {
    if (!validScope(scope)) return [];
    // COLLATE "C": code-point order whatever the database locale (the fakes sort the same way).
    const rows = await this.sql<SegmentRow[]>`
      SELECT * FROM segments
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
      ORDER BY key COLLATE "C"`;
    return rows.map(fromRow);
  }

  async update(
    scope: EnvironmentScope,
    key: string,
    patch: { context_type?: string; description?: string; conditions?: Condition[] },
    expectedVersion?: number,
  ): Promise<Segment> {
    if (!validScope(scope)) throw notFound('segment', key);
    const conditions = patch.conditions === undefined ? null : this.json(patch.conditions);
    // The expected version is checked in the UPDATE's own WHERE: of two writers holding the same
    // version, the second re-reads the row after the first commits and matches nothing.
    const [row] = await this.sql<SegmentRow[]>`
      UPDATE segments SET
        context_type = COALESCE(${patch.context_type ?? null}::text, context_type),
        description = COALESCE(${patch.description ?? null}::text, description),
        conditions = CASE WHEN kind = 'rule' THEN COALESCE(${conditions}::jsonb, conditions) ELSE conditions END,
        version = version + 1,
        updated_at = clock_timestamp()
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
        AND key = ${key}
        AND (${expectedVersion ?? null}::bigint IS NULL OR version = ${expectedVersion ?? null}::bigint)
      RETURNING *`;
    if (!row) return this.explainMiss(scope, key, expectedVersion);
    return fromRow(row);
  }

  async delete(scope: EnvironmentScope, key: string, expectedVersion?: number): Promise<void> {
    if (!validScope(scope)) throw notFound('segment', key);
    // Members go by ON DELETE CASCADE, in the same statement.
    const [row] = await this.sql<{ id: string }[]>`
      DELETE FROM segments
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
        AND key = ${key}
        AND (${expectedVersion ?? null}::bigint IS NULL OR version = ${expectedVersion ?? null}::bigint)
      RETURNING id`;
    if (!row) await this.explainMiss(scope, key, expectedVersion);
  }

  async changeMembers(scope: EnvironmentScope, key: string, changes: MemberChanges): Promise<Segment> {
    if (!validScope(scope)) throw notFound('segment', key);
    return transaction(this.sql, async (tx) => {
      // 1. Lock the segment: member writers of one segment queue here, so the counts and the
      //    version move by whole changes, one call after another, and the segment cannot be
      //    deleted half-way through.
      const segment = await lockListSegment(tx, scope, key);

      // 2. Removals first, then additions: a key both removed and added in one call ends up a member.
      const scoped = { ...scope, segmentId: segment.id };
      let included = -(await removeMembers(tx, scoped, 'included', distinct(changes.remove_included)));
      let excluded = -(await removeMembers(tx, scoped, 'excluded', distinct(changes.remove_excluded)));
      included += await addMembers(tx, scoped, 'included', distinct(changes.add_included));
      excluded += await addMembers(tx, scoped, 'excluded', distinct(changes.add_excluded));
      const [row] = await tx<SegmentRow[]>`
        UPDATE segments SET
          included_count = included_count + ${included},
          excluded_count = excluded_count + ${excluded},
          version = version + 1,
          updated_at = clock_timestamp()
        WHERE id = ${segment.id} AND org_id = ${scope.orgId} AND project_id = ${scope.projectId}
          AND environment_id = ${scope.environmentId}
        RETURNING *`;
      if (!row) throw new Error('segment row vanished under its own lock');
      return fromRow(row);
    });
  }

  async replaceMembers(scope: EnvironmentScope, key: string, lists: MemberLists): Promise<Segment> {
    if (!validScope(scope)) throw notFound('segment', key);
    return transaction(this.sql, async (tx) => {
      // 1. Lock the segment, as changeMembers does: member writers of one segment queue here.
      const segment = await lockListSegment(tx, scope, key);
      // 2. Per given list: delete the members not in the new list, then insert the new keys
      //    (present ones skipped). Nothing is read back: the database compares the stored rows
      //    with the new list itself, so the cost in this process is the new list only.
      const scoped = { ...scope, segmentId: segment.id };
      const included = lists.included ? distinct(lists.included) : null;
      const excluded = lists.excluded ? distinct(lists.excluded) : null;
      if (included) await replaceList(tx, scoped, 'included', included);
      if (excluded) await replaceList(tx, scoped, 'excluded', excluded);
      // 3. After a replace the list is exactly its distinct new keys: that is its count.
      const [row] = await tx<SegmentRow[]>`
        UPDATE segments SET
          included_count = COALESCE(${included?.length ?? null}::int8, included_count),
          excluded_count = COALESCE(${excluded?.length ?? null}::int8, excluded_count),
          version = version + 1,
          updated_at = clock_timestamp()
        WHERE id = ${segment.id} AND org_id = ${scope.orgId} AND project_id = ${scope.projectId}
          AND environment_id = ${scope.environmentId}
        RETURNING *`;
      if (!row) throw new Error('segment row vanished under its own lock');
      return fromRow(row);
    });
  }

  async listMembers(
    scope: EnvironmentScope,
    key: string,
    list: MemberList,
    page: { cursor?: string | null; limit: number },
  ): Promise<Page<string>> {
    if (!Number.isInteger(page.limit) || page.limit < 1) throw invalidArgument('limit must be a positive integer', 'limit');
    const segmentId = await this.requireId(scope, key);
    const cursor = page.cursor ?? null;
    // One row more than the page tells whether another page follows. Two statements rather than
    // `cursor IS NULL OR ...`, which a generic plan could not turn into an index range.
    const rows =
      cursor === null
        ? await this.sql<{ context_key: string }[]>`
            SELECT m.context_key FROM segment_members m JOIN segments s ON s.id = m.segment_id
            WHERE s.id = ${segmentId} AND s.org_id = ${scope.orgId} AND s.project_id = ${scope.projectId}
              AND s.environment_id = ${scope.environmentId} AND m.list = ${list}
            ORDER BY m.context_key LIMIT ${page.limit + 1}`
        : await this.sql<{ context_key: string }[]>`
            SELECT m.context_key FROM segment_members m JOIN segments s ON s.id = m.segment_id
            WHERE s.id = ${segmentId} AND s.org_id = ${scope.orgId} AND s.project_id = ${scope.projectId}
              AND s.environment_id = ${scope.environmentId} AND m.list = ${list} AND m.context_key > ${cursor}
            ORDER BY m.context_key LIMIT ${page.limit + 1}`;
    const items = rows.slice(0, page.limit).map((row) => row.context_key);
    const hasMore = rows.length > page.limit;
    return { items, nextCursor: hasMore ? (items[items.length - 1] ?? null) : null };
  }

  async checkMembers(
    scope: EnvironmentScope,
    pairs: Array<{ segmentKey: string; contextKey: string }>,
  ): Promise<Array<boolean | null>> {
    if (pairs.length === 0) return [];
    if (!validScope(scope)) return pairs.map(() => null);
    // One statement for any number of pairs: the pairs are unnested in order (WITH ORDINALITY),
    // each resolved against the scope's segments, and each membership answered by two probes of
    // the primary key (segment_id, context_key, list). Excluded wins over included.
    const segmentKeys = pairs.map((pair) => pair.segmentKey);
    const contextKeys = pairs.map((pair) => pair.contextKey);
    const rows = await this.sql<{ is_member: boolean | null }[]>`
      WITH scoped AS (
        SELECT id, key FROM segments
        WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
          AND key = ANY(${distinct(segmentKeys)}::text[])
      )
      SELECT CASE WHEN s.id IS NULL THEN NULL ELSE
               EXISTS (SELECT 1 FROM segment_members m
                       WHERE m.segment_id = s.id AND m.context_key = p.context_key AND m.list = 'included')
               AND NOT EXISTS (SELECT 1 FROM segment_members m
                       WHERE m.segment_id = s.id AND m.context_key = p.context_key AND m.list = 'excluded')
             END AS is_member
      FROM unnest(${segmentKeys}::text[], ${contextKeys}::text[]) WITH ORDINALITY AS p(segment_key, context_key, ord)
      LEFT JOIN scoped s ON s.key = p.segment_key
      ORDER BY p.ord`;
    return rows.map((row) => row.is_member);
  }

  private async requireId(scope: EnvironmentScope, key: string): Promise<string> {
    if (!validScope(scope)) throw notFound('segment', key);
    const [row] = await this.sql<{ id: string }[]>`
      SELECT id FROM segments
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
        AND key = ${key}`;
    if (!row) throw notFound('segment', key);
    return row.id;
  }

  /** After a write matched no row: NOT_FOUND when the segment is absent, else the version was stale. */
  private async explainMiss(scope: EnvironmentScope, key: string, expectedVersion: number | undefined): Promise<never> {
    const [row] = await this.sql<{ version: number }[]>`
      SELECT version FROM segments
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
        AND key = ${key}`;
    if (!row || expectedVersion === undefined) throw notFound('segment', key);
    throw versionConflict('segment', expectedVersion, row.version);
  }

  /** jsonb parameters: conditions are plain JSON by construction (core model types). */
  private json(value: unknown): postgres.Parameter {
    return this.sql.json(value as postgres.JSONValue);
  }
}

type SegmentInScope = EnvironmentScope & { segmentId: string };

/**
 * Locks a list segment's row for a member write (FOR NO KEY UPDATE: member writers of one segment
 * queue here, and the segment cannot be deleted half-way through).
 * @throws NOT_FOUND, FAILED_PRECONDITION for a rule segment.
 */
async function lockListSegment(tx: TransactionSql, scope: EnvironmentScope, key: string): Promise<{ id: string }> {
  const [segment] = await tx<{ id: string; kind: SegmentKind }[]>`
    SELECT id, kind FROM segments
    WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
      AND key = ${key}
    FOR NO KEY UPDATE`;
  if (!segment) throw notFound('segment', key);
  if (segment.kind !== 'list') throw failedPrecondition(`segment '${key}' is a rule segment and has no member lists`);
  return segment;
}

/**
 * Makes one list exactly `keys` (distinct) in two statements, whatever the size of the stored
 * list. `NOT IN (SELECT ... unnest)` is planned as a hashed sub-plan: the new keys are hashed once
 * and each stored member probes it (an anti-join against an unnest the planner under-estimates
 * could become a nested loop over both lists). Keys are never NULL, so NOT IN means what it says.
 */
async function replaceList(tx: TransactionSql, scope: SegmentInScope, list: MemberList, keys: string[]): Promise<void> {
  await tx`
    DELETE FROM segment_members m USING segments s
    WHERE s.id = ${scope.segmentId} AND s.org_id = ${scope.orgId} AND s.project_id = ${scope.projectId}
      AND s.environment_id = ${scope.environmentId}
      AND m.segment_id = s.id AND m.list = ${list}
      AND m.context_key NOT IN (SELECT k.context_key FROM unnest(${keys}::text[]) AS k(context_key))`;
  await addMembers(tx, scope, list, keys);
}

/**
 * Adds keys to one list in a single statement whatever their number; keys already present are
 * skipped by ON CONFLICT, so the affected-row count is exactly the number of new members.
 */
async function addMembers(tx: TransactionSql, scope: SegmentInScope, list: MemberList, keys: string[]): Promise<number> {
  if (keys.length === 0) return 0;
  const result = await tx`
    INSERT INTO segment_members (segment_id, context_key, list)
    SELECT s.id, k.context_key, ${list}::text
    FROM segments s CROSS JOIN unnest(${keys}::text[]) AS k(context_key)
    WHERE s.id = ${scope.segmentId} AND s.org_id = ${scope.orgId} AND s.project_id = ${scope.projectId}
      AND s.environment_id = ${scope.environmentId}
    ON CONFLICT DO NOTHING`;
  return result.count;
}

/** Removes keys from one list; keys that are not members simply match no row. */
async function removeMembers(tx: TransactionSql, scope: SegmentInScope, list: MemberList, keys: string[]): Promise<number> {
  if (keys.length === 0) return 0;
  const result = await tx`
    DELETE FROM segment_members m USING segments s
    WHERE s.id = ${scope.segmentId} AND s.org_id = ${scope.orgId} AND s.project_id = ${scope.projectId}
      AND s.environment_id = ${scope.environmentId}
      AND m.segment_id = s.id AND m.list = ${list} AND m.context_key = ANY(${keys}::text[])`;
  return result.count;
}
