import type postgres from 'postgres';
import {
  checkPrerequisiteGraph,
  failedPrecondition,
  notFound,
  refuseRemovingPrerequisiteVariants,
  refuseWhilePrerequisite,
  variantUses,
  versionConflict,
} from '@switchyard/core';
import type {
  EnvironmentScope,
  Flag,
  Prerequisite,
  PrerequisiteHolder,
  PrerequisiteNode,
  FlagDefinitionInput,
  FlagEnvironmentStateInput,
  FlagRepository,
  ProjectScope,
} from '@switchyard/core';
import type { Sql, TransactionSql } from './connect.ts';
import { transaction } from './transaction.pg.ts';
import { isUuid, translateErrors } from './pg-errors.ts';
import {
  definitionFromRow,
  mergedFromJoinedRow,
  mergedFromRows,
  unwrittenRules,
  type FlagDefinitionRow,
  type FlagStateRow,
  type MergedFlagRow,
} from './flag-rows.pg.ts';

/** Ids that are not UUIDs can never match a row; checking first keeps driver errors out. */
const validProject = (scope: ProjectScope): boolean => isUuid(scope.orgId) && isUuid(scope.projectId);
const validEnvironment = (scope: EnvironmentScope): boolean => validProject(scope) && isUuid(scope.environmentId);

/**
 * FlagRepository on PostgreSQL: the definition in `flags`, each environment's state in
 * `flag_environment_states` (a row appears on the environment's first write). Every statement
 * names the org and project (and environment) in its WHERE clause.
 *
 * Optimistic locking: definition writes check the expected version in the UPDATE/DELETE's own
 * WHERE clause, so of two writers holding the same version exactly one matches. State writes
 * lock the flag row first (the state row may not exist yet, so there is nothing else to lock).
 */
export class PgFlagRepository implements FlagRepository {
  constructor(private readonly sql: Sql) {}

  async createDefinition(scope: ProjectScope, input: FlagDefinitionInput): Promise<Flag> {
    if (!validProject(scope)) throw notFound('project', scope.projectId);
    // INSERT ... SELECT from the scoped project: a project of another org inserts nothing. One
    // clock reading for both timestamps, so a new flag's updated_at equals its created_at.
    const [row] = await translateErrors(
      () => this.sql<FlagDefinitionRow[]>`
        INSERT INTO flags (org_id, project_id, key, description, value_type, variants, client_visible, tags, lifetime, maintainer, bucket_by, created_at, updated_at)
        SELECT p.org_id, p.id, ${input.key}, ${input.description}, ${input.value_type}, ${this.json(input.variants)},
               COALESCE(${input.client_visible ?? null}::boolean, p.client_visible_default),
               ${this.json(input.tags ?? [])}, ${input.lifetime ?? 'permanent'}, ${input.maintainer ?? null}, ${input.bucket_by ?? 'environment'},
               t.now, t.now
        FROM projects p CROSS JOIN (SELECT clock_timestamp() AS now) t
        WHERE p.id = ${scope.projectId} AND p.org_id = ${scope.orgId}
        RETURNING *`,
      { resource: 'flag', name: input.key, parent: 'project' },
    );
    if (!row) throw notFound('project', scope.projectId);
    return definitionFromRow(row);
  }

  async getDefinition(scope: ProjectScope, key: string): Promise<Flag | null> {
    if (!validProject(scope)) return null;
    const [row] = await this.sql<FlagDefinitionRow[]>`
      SELECT * FROM flags WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND key = ${key}`;
    return row ? definitionFromRow(row) : null;
  }

  async listDefinitions(scope: ProjectScope): Promise<Flag[]> {
    if (!validProject(scope)) return [];
    // COLLATE "C": code-point order whatever the database locale (the fakes sort the same way).
    const rows = await this.sql<FlagDefinitionRow[]>`
      SELECT * FROM flags WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId}
      ORDER BY key COLLATE "C"`;
    return rows.map(definitionFromRow);
  }

  async updateDefinition(
    scope: ProjectScope,
    key: string,
    patch: Partial<Omit<FlagDefinitionInput, 'key'>>,
    expectedVersion?: number,
  ): Promise<Flag> {
    if (!validProject(scope)) throw notFound('flag', key);
    if (patch.variants === undefined) return this.writeDefinition(this.sql, scope, key, patch, expectedVersion);
    // Variants may go only when no environment serves them (docs/contract.md "Flags"): checked
    // under the flag's lock, which every state writer takes first, so a rule saved meanwhile is seen.
    const kept = new Set(patch.variants.map((variant) => variant.key));
    return transaction(this.sql, async (tx) => {
      const [locked] = await tx<FlagDefinitionRow[]>`
        SELECT * FROM flags WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND key = ${key} FOR UPDATE`;
      const removed = (locked?.variants ?? []).map((variant) => variant.key).filter((variantKey) => !kept.has(variantKey));
      if (locked && removed.length > 0) {
        const states = await tx<Array<Pick<FlagStateRow, 'rules' | 'off_variant_key'>>>`
          SELECT rules, off_variant_key FROM flag_environment_states WHERE flag_id = ${locked.id}`;
        const served = removed.filter((variantKey) => states.some((state) => variantUses(state, variantKey).length > 0));
        if (served.length > 0) throw failedPrecondition(`a variant that is served cannot be removed: ${served.map((v) => `'${v}'`).join(', ')}`);
        // A dependent's prerequisite listing it: a writer adding one holds this row FOR SHARE to its commit.
        refuseRemovingPrerequisiteVariants(key, removed, await this.prerequisiteHolders(tx, scope, key));
      }
      return this.writeDefinition(tx, scope, key, patch, expectedVersion);
    });
  }

  private async writeDefinition(
    sql: Sql | TransactionSql,
    scope: ProjectScope,
    key: string,
    patch: Partial<Omit<FlagDefinitionInput, 'key'>>,
    expectedVersion?: number,
  ): Promise<Flag> {
    const variants = patch.variants === undefined ? null : this.json(patch.variants);
    const [row] = await sql<FlagDefinitionRow[]>`
      UPDATE flags SET
        description = COALESCE(${patch.description ?? null}::text, description),
        value_type = COALESCE(${patch.value_type ?? null}::text, value_type),
        variants = COALESCE(${variants}::jsonb, variants),
        client_visible = COALESCE(${patch.client_visible ?? null}::boolean, client_visible),
        tags = COALESCE(${patch.tags === undefined ? null : this.json(patch.tags)}::jsonb, tags),
        lifetime = COALESCE(${patch.lifetime ?? null}::text, lifetime),
        -- null is a value here (no maintainer): only an absent field keeps the current one.
        maintainer = CASE WHEN ${patch.maintainer !== undefined} THEN ${patch.maintainer ?? null}::text ELSE maintainer END,
        bucket_by = COALESCE(${patch.bucket_by ?? null}::text, bucket_by),
        version = version + 1,
        updated_at = clock_timestamp()
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND key = ${key}
        AND (${expectedVersion ?? null}::bigint IS NULL OR version = ${expectedVersion ?? null}::bigint)
      RETURNING *`;
    if (!row) return this.explainMiss(scope, key, expectedVersion, sql);
    return definitionFromRow(row);
  }

  async deleteDefinition(scope: ProjectScope, key: string, expectedVersion?: number): Promise<void> {
    if (!validProject(scope)) throw notFound('flag', key);
    await transaction(this.sql, async (tx) => {
      // The flag's lock first: a writer naming it as a prerequisite holds it FOR SHARE to its
      // commit, so the dependents read next include every such write (or that writer, coming
      // later, finds the flag gone).
      await tx`SELECT 1 FROM flags WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND key = ${key} FOR UPDATE`;
      refuseWhilePrerequisite(key, await this.prerequisiteHolders(tx, scope, key), 'deleted');
      // Environment states go by ON DELETE CASCADE, in the same statement.
      const [row] = await tx<{ id: string }[]>`
        DELETE FROM flags
        WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND key = ${key}
          AND (${expectedVersion ?? null}::bigint IS NULL OR version = ${expectedVersion ?? null}::bigint)
        RETURNING id`;
      if (!row) await this.explainMiss(scope, key, expectedVersion, tx);
    });
  }

  async setArchived(scope: ProjectScope, key: string, archived: boolean, expectedVersion?: number): Promise<Flag> {
    if (!validProject(scope)) throw notFound('flag', key);
    return transaction(this.sql, async (tx) => {
      if (archived) {
        // As deleteDefinition: under the flag's lock, so a prerequisite written meanwhile is seen.
        await tx`SELECT 1 FROM flags WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND key = ${key} FOR UPDATE`;
        refuseWhilePrerequisite(key, await this.prerequisiteHolders(tx, scope, key), 'archived');
      }
      const [row] = await tx<FlagDefinitionRow[]>`
        UPDATE flags SET archived = ${archived}, version = version + 1, updated_at = clock_timestamp()
        WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND key = ${key}
          AND (${expectedVersion ?? null}::bigint IS NULL OR version = ${expectedVersion ?? null}::bigint)
        RETURNING *`;
      if (!row) return this.explainMiss(scope, key, expectedVersion, tx);
      return definitionFromRow(row);
    });
  }

  /** The written states of the project (any environment) whose prerequisites name `key`. */
  private async prerequisiteHolders(sql: Sql | TransactionSql, scope: ProjectScope, key: string): Promise<PrerequisiteHolder[]> {
    return sql<PrerequisiteHolder[]>`
      SELECT f.key AS flag_key, e.name AS environment, s.prerequisites
      FROM flag_environment_states s
      JOIN flags f ON f.id = s.flag_id
      JOIN environments e ON e.id = s.environment_id
      WHERE s.org_id = ${scope.orgId} AND s.project_id = ${scope.projectId}
        AND s.prerequisites @> ${this.json([{ flag_key: key }])}
      ORDER BY f.key COLLATE "C", e.name`;
  }

  async get(scope: EnvironmentScope, key: string): Promise<Flag | null> {
    if (!validEnvironment(scope)) return null;
    const [row] = await this.sql<MergedFlagRow[]>`
      SELECT f.*, s.enabled AS state_enabled, s.off_variant_key AS state_off_variant_key, s.rules AS state_rules, s.prerequisites AS state_prerequisites,
             s.hashing AS state_hashing, s.version AS state_version, s.updated_at AS state_updated_at
      FROM flags f
      JOIN environments e ON e.project_id = f.project_id AND e.org_id = f.org_id
      LEFT JOIN flag_environment_states s ON s.environment_id = e.id AND s.flag_id = f.id
      WHERE f.org_id = ${scope.orgId} AND f.project_id = ${scope.projectId} AND e.id = ${scope.environmentId}
        AND f.key = ${key}`;
    return row ? mergedFromJoinedRow(row) : null;
  }

  async list(scope: EnvironmentScope): Promise<Flag[]> {
    if (!validEnvironment(scope)) return [];
    const rows = await this.sql<MergedFlagRow[]>`
      SELECT f.*, s.enabled AS state_enabled, s.off_variant_key AS state_off_variant_key, s.rules AS state_rules, s.prerequisites AS state_prerequisites,
             s.hashing AS state_hashing, s.version AS state_version, s.updated_at AS state_updated_at
      FROM flags f
      JOIN environments e ON e.project_id = f.project_id AND e.org_id = f.org_id
      LEFT JOIN flag_environment_states s ON s.environment_id = e.id AND s.flag_id = f.id
      WHERE f.org_id = ${scope.orgId} AND f.project_id = ${scope.projectId} AND e.id = ${scope.environmentId}
      ORDER BY f.key COLLATE "C"`;
    return rows.map(mergedFromJoinedRow);
  }

  async updateState(
    scope: EnvironmentScope,
    key: string,
    patch: FlagEnvironmentStateInput,
    expectedVersion?: number,
  ): Promise<Flag> {
    if (!validEnvironment(scope)) throw notFound('flag', key);
    const prerequisites = patch.prerequisites;
    const checkGraph = prerequisites !== undefined && prerequisites.length > 0;
    return transaction(this.sql, async (tx) => {
      // 0. Writes that add prerequisites queue per environment, before any row lock: of two that
      //    would close a cycle between them, the second sees the first's committed list.
      if (checkGraph) await tx`SELECT pg_advisory_xact_lock(${PREREQUISITE_LOCK_CLASS}::int4, hashtext(${scope.environmentId}))`;

      // 1. Lock the flag (found only when the environment belongs to the scope's project and org):
      //    concurrent state writers of this flag queue here, so the version read next is current.
      //    NO KEY UPDATE, not UPDATE: it does not block inserts of rows referencing the flag.
      const [flag] = await tx<FlagDefinitionRow[]>`
        SELECT f.* FROM flags f
        JOIN environments e ON e.project_id = f.project_id AND e.org_id = f.org_id
        WHERE f.org_id = ${scope.orgId} AND f.project_id = ${scope.projectId} AND e.id = ${scope.environmentId}
          AND f.key = ${key}
        FOR NO KEY UPDATE OF f`;
      if (!flag) throw notFound('flag', key);

      // 2. Check the expected version against the stored state (absent: version 0).
      const [current] = await tx<FlagStateRow[]>`
        SELECT * FROM flag_environment_states
        WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId}
          AND environment_id = ${scope.environmentId} AND flag_id = ${flag.id}`;
      const currentVersion = current?.version ?? 0;
      if (expectedVersion !== undefined && expectedVersion !== currentVersion) {
        throw versionConflict('flag state', expectedVersion, currentVersion);
      }

      // 2b. Prerequisites: the flags they name are held FOR SHARE to the commit (a delete, archive
      //     or variant removal of one waits, then sees this list), then the environment's graph is read.
      if (checkGraph) await this.checkPrerequisites(tx, scope, key, prerequisites);

      // 3. Write the merged state with the next version. An environment's first write that leaves
      //    rules out stores its default rule (unwrittenRules), not [].
      // null is a value here (no off variant); only an absent field keeps the current one.
      const offVariantKey = patch.off_variant_key === undefined ? (current?.off_variant_key ?? null) : patch.off_variant_key;
      const next = {
        enabled: patch.enabled ?? current?.enabled ?? false,
        offVariantKey,
        rules: this.json(patch.rules ?? current?.rules ?? unwrittenRules(flag.variants, offVariantKey)),
        prerequisites: this.json(prerequisites ?? current?.prerequisites ?? []),
        hashing: this.json(patch.hashing ?? current?.hashing ?? []),
      };
      const written = current ? await this.updateStateRow(tx, scope, flag.id, next) : await this.insertStateRow(tx, scope, flag.id, next);
      return mergedFromRows(flag, written);
    });
  }

  private async checkPrerequisites(tx: TransactionSql, scope: EnvironmentScope, key: string, prerequisites: Prerequisite[]): Promise<void> {
    const keys = prerequisites.map((p) => p.flag_key);
    await tx`
      SELECT 1 FROM flags WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND key = ANY(${keys}::text[])
      ORDER BY key COLLATE "C" FOR SHARE`;
    const rows = await tx<Array<{ key: string; variants: FlagDefinitionRow['variants']; archived: boolean; prerequisites: Prerequisite[] | null }>>`
      SELECT f.key, f.variants, f.archived, s.prerequisites
      FROM flags f
      LEFT JOIN flag_environment_states s ON s.flag_id = f.id AND s.environment_id = ${scope.environmentId}
      WHERE f.org_id = ${scope.orgId} AND f.project_id = ${scope.projectId}`;
    const nodes = new Map<string, PrerequisiteNode>(rows.map((row) => [row.key, { variants: row.variants, archived: row.archived, prerequisites: row.prerequisites ?? [] }]));
    checkPrerequisiteGraph(key, prerequisites, nodes);
  }

  private async updateStateRow(tx: TransactionSql, scope: EnvironmentScope, flagId: string, next: NextState): Promise<FlagStateRow> {
    const [row] = await tx<FlagStateRow[]>`
      UPDATE flag_environment_states SET
        enabled = ${next.enabled}, off_variant_key = ${next.offVariantKey}, rules = ${next.rules}, prerequisites = ${next.prerequisites}, hashing = ${next.hashing},
        version = version + 1, updated_at = clock_timestamp()
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId}
        AND environment_id = ${scope.environmentId} AND flag_id = ${flagId}
      RETURNING *`;
    if (!row) throw new Error('flag state row vanished under the flag lock');
    return row;
  }

  private async insertStateRow(tx: TransactionSql, scope: EnvironmentScope, flagId: string, next: NextState): Promise<FlagStateRow> {
    // The first write of this environment: the row starts at version 1.
    const [row] = await tx<FlagStateRow[]>`
      INSERT INTO flag_environment_states
        (flag_id, org_id, project_id, environment_id, enabled, off_variant_key, rules, prerequisites, hashing, version)
      SELECT f.id, f.org_id, f.project_id, ${scope.environmentId}, ${next.enabled}, ${next.offVariantKey},
             ${next.rules}, ${next.prerequisites}, ${next.hashing}, 1
      FROM flags f
      WHERE f.id = ${flagId} AND f.org_id = ${scope.orgId} AND f.project_id = ${scope.projectId}
      RETURNING *`;
    if (!row) throw new Error('flag row vanished under its own lock');
    return row;
  }

  /** After a write matched no row: NOT_FOUND when the flag is absent, else the version was stale. */
  private async explainMiss(scope: ProjectScope, key: string, expectedVersion: number | undefined, sql: Sql | TransactionSql = this.sql): Promise<never> {
    const [row] = await sql<{ version: number }[]>`
      SELECT version FROM flags WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND key = ${key}`;
    if (!row || expectedVersion === undefined) throw notFound('flag', key);
    throw versionConflict('flag', expectedVersion, row.version);
  }

  /** jsonb parameters: the documents are plain JSON by construction (core model types). */
  private json(value: unknown): postgres.Parameter {
    return this.sql.json(value as postgres.JSONValue);
  }
}

interface NextState {
  enabled: boolean;
  offVariantKey: string | null;
  rules: postgres.Parameter;
  prerequisites: postgres.Parameter;
  hashing: postgres.Parameter;
}

/**
 * First key of the transaction-level advisory lock that serializes, per environment, the state
 * writes that set prerequisites (the second key hashes the environment id). Distinct from
 * advisory-lock.pg.ts' class.
 */
const PREREQUISITE_LOCK_CLASS = 7244;
