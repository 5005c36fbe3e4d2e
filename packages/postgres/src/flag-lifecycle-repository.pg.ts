import type { FlagLifecycleRepository, FlagLifecycleStage, FlagLifetime, LifecycleSnapshot, LifecycleThresholds, Prerequisite, ProjectScope, Repositories, Rule } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid } from './pg-errors.ts';
import { createPostgresRepositories } from './repositories.ts';
import { transaction } from './transaction.pg.ts';

const validScope = (scope: ProjectScope): boolean => isUuid(scope.orgId) && isUuid(scope.projectId);
const EMPTY: LifecycleSnapshot = { environments: [], flags: [], states: [], lastEvaluated: [], reportingEnvironmentIds: [], runningExperimentFlagKeys: [], truncated: false };

/**
 * The lifecycle's reads (docs/insights.md "Lifecycle stages"): one statement per table for a whole
 * project, every one scoped by org and project; and flag_lifecycle_stages (migration 0029), the
 * stage the daily job last saw per flag.
 */
export class PgFlagLifecycleRepository implements FlagLifecycleRepository {
  constructor(private readonly sql: Sql) {}

  async snapshot(scope: ProjectScope, sinceMs: number, maxFlags: number): Promise<LifecycleSnapshot> {
    if (!validScope(scope)) return EMPTY;
    const { orgId, projectId } = scope;
    const [environments, flagRows] = await Promise.all([
      this.sql<{ id: string; name: string; critical: boolean }[]>`
        SELECT id, name, critical FROM environments WHERE org_id = ${orgId} AND project_id = ${projectId} ORDER BY created_at, id`,
      this.sql<{ id: string; key: string; lifetime: FlagLifetime; archived: boolean; created_at_ms: number; updated_at_ms: number }[]>`
        SELECT id, key, lifetime, archived, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms, floor(extract(epoch FROM updated_at) * 1000)::int8 AS updated_at_ms
        FROM flags WHERE org_id = ${orgId} AND project_id = ${projectId}
        ORDER BY key COLLATE "C" LIMIT ${maxFlags + 1}`,
    ]);
    const truncated = flagRows.length > maxFlags;
    const flags = flagRows.slice(0, maxFlags);
    const ids = this.sql.array(flags.map((flag) => flag.id));
    const since = sinceMs / 1000;
    const [states, last, reporting, running] = await Promise.all([
      this.sql<{ flag_id: string; environment_id: string; enabled: boolean; off_variant_key: string | null; rules: Rule[]; prerequisites: Prerequisite[]; updated_at_ms: number }[]>`
        SELECT flag_id, environment_id, enabled, off_variant_key, rules, prerequisites, floor(extract(epoch FROM updated_at) * 1000)::int8 AS updated_at_ms
        FROM flag_environment_states WHERE org_id = ${orgId} AND project_id = ${projectId} AND flag_id = ANY(${ids}::uuid[])`,
      this.sql<{ flag_id: string; environment_id: string; at_ms: number }[]>`
        SELECT flag_id, environment_id, floor(extract(epoch FROM last_evaluated_at) * 1000)::int8 AS at_ms
        FROM flag_evaluation_last WHERE org_id = ${orgId} AND project_id = ${projectId} AND flag_id = ANY(${ids}::uuid[])`,
      // Any flag of the project (not only the ones read), evaluated in the window.
      this.sql<{ environment_id: string }[]>`
        SELECT DISTINCT environment_id FROM flag_evaluation_last
        WHERE org_id = ${orgId} AND project_id = ${projectId} AND last_evaluated_at >= to_timestamp(${since}::float8)`,
      this.sql<{ flag_key: string }[]>`
        SELECT DISTINCT flag_key FROM experiments WHERE org_id = ${orgId} AND project_id = ${projectId} AND status = 'EXPERIMENT_STATUS_ACTIVE'`,
    ]);
    return {
      environments: environments.map((row) => ({ id: row.id, name: row.name, critical: row.critical })),
      flags: flags.map((row) => ({ id: row.id, key: row.key, lifetime: row.lifetime, archived: row.archived, createdAtMs: row.created_at_ms, updatedAtMs: row.updated_at_ms })),
      states: states.map((row) => ({
        flagId: row.flag_id,
        environmentId: row.environment_id,
        enabled: row.enabled,
        offVariantKey: row.off_variant_key,
        rules: row.rules,
        prerequisites: row.prerequisites,
        updatedAtMs: row.updated_at_ms,
      })),
      lastEvaluated: last.map((row) => ({ flagId: row.flag_id, environmentId: row.environment_id, atMs: row.at_ms })),
      reportingEnvironmentIds: reporting.map((row) => row.environment_id),
      runningExperimentFlagKeys: running.map((row) => row.flag_key),
      truncated,
    };
  }

  async projects(afterId: string | null, limit: number): Promise<Array<ProjectScope & { thresholds: LifecycleThresholds }>> {
    const rows = await this.sql<{ id: string; org_id: string; w: number; c: number; a: number; u: number }[]>`
      SELECT id, org_id, lifecycle_status_window_days AS w, lifecycle_code_removal_min_age_days AS c, lifecycle_archive_after_days AS a, lifecycle_unchanged_fallback_days AS u
      FROM projects WHERE ${afterId === null ? this.sql`true` : this.sql`id > ${afterId}::uuid`}
      ORDER BY id LIMIT ${limit}`;
    return rows.map((row) => ({ orgId: row.org_id, projectId: row.id, thresholds: { statusWindowDays: row.w, codeRemovalMinAgeDays: row.c, archiveAfterDays: row.a, unchangedFallbackDays: row.u } }));
  }

  async recordedStages(scope: ProjectScope): Promise<Map<string, FlagLifecycleStage>> {
    if (!validScope(scope)) return new Map();
    const rows = await this.sql<{ flag_id: string; stage: FlagLifecycleStage }[]>`
      SELECT flag_id, stage FROM flag_lifecycle_stages WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId}`;
    return new Map(rows.map((row) => [row.flag_id, row.stage]));
  }

  async moveStage(scope: ProjectScope, flagId: string, stage: FlagLifecycleStage, then: (repos: Repositories, previous: FlagLifecycleStage | null) => Promise<void>): Promise<boolean> {
    if (!validScope(scope) || !isUuid(flagId)) return false;
    return transaction(this.sql, async (tx) => {
      // The flag row locked first: a flag deleted meanwhile is skipped, and two movers queue.
      const [flag] = await tx<{ id: string }[]>`SELECT id FROM flags WHERE id = ${flagId} AND org_id = ${scope.orgId} AND project_id = ${scope.projectId} FOR UPDATE`;
      if (!flag) return false;
      const [recorded] = await tx<{ stage: FlagLifecycleStage }[]>`SELECT stage FROM flag_lifecycle_stages WHERE flag_id = ${flagId}`;
      const previous = recorded?.stage ?? null;
      if (previous === stage) return false;
      await tx`
        INSERT INTO flag_lifecycle_stages (flag_id, org_id, project_id, stage) VALUES (${flagId}, ${scope.orgId}, ${scope.projectId}, ${stage})
        ON CONFLICT (flag_id) DO UPDATE SET stage = excluded.stage, changed_at = clock_timestamp()`;
      await then(createPostgresRepositories(tx as unknown as Sql), previous);
      return true;
    });
  }
}
