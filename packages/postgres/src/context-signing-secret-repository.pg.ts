import { failedPrecondition, notFound, type ContextSigningSecret, type ContextSigningSecretRepository, type EnvironmentScope } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { transaction } from './transaction.pg.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

interface SecretRow {
  kid: string;
  org_id: string;
  project_id: string;
  environment_id: string;
  sealed_secret: string;
  created_at_ms: number;
}

const COLUMNS = `kid, org_id, project_id, environment_id, sealed_secret, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms`;

const toSecret = (row: SecretRow): ContextSigningSecret => ({
  kid: row.kid,
  orgId: row.org_id,
  projectId: row.project_id,
  environmentId: row.environment_id,
  sealedSecret: row.sealed_secret,
  createdAtMs: row.created_at_ms,
});

const validScope = (scope: EnvironmentScope): boolean => isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId);

/** Context signing secrets in `context_signing_secrets` (sealed), every statement scoped by org, project and environment. */
export class PgContextSigningSecretRepository implements ContextSigningSecretRepository {
  constructor(private readonly sql: Sql) {}

  async create(scope: EnvironmentScope, input: { kid: string; sealedSecret: string }, maxPerEnvironment: number): Promise<ContextSigningSecret> {
    if (!validScope(scope)) throw notFound('environment', scope.environmentId);
    return transaction(this.sql, async (tx) => {
      // The environment's row locked: two concurrent creates cannot both pass the cap.
      const [environment] = await tx<{ id: string }[]>`
        SELECT id FROM environments WHERE id = ${scope.environmentId} AND project_id = ${scope.projectId} AND org_id = ${scope.orgId} FOR UPDATE`;
      if (!environment) throw notFound('environment', scope.environmentId);
      const [{ count } = { count: 0 }] = await tx<{ count: number }[]>`
        SELECT count(*)::int AS count FROM context_signing_secrets
        WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}`;
      if (count >= maxPerEnvironment) throw failedPrecondition(`an environment holds at most ${maxPerEnvironment} context signing secrets; delete one first`);
      const [row] = await translateErrors(
        () => tx<SecretRow[]>`
          INSERT INTO context_signing_secrets (kid, org_id, project_id, environment_id, sealed_secret)
          VALUES (${input.kid}, ${scope.orgId}, ${scope.projectId}, ${scope.environmentId}, ${input.sealedSecret})
          RETURNING ${tx.unsafe(COLUMNS)}`,
        { resource: 'context signing secret', name: input.kid, parent: 'environment' },
      );
      if (!row) throw new Error('INSERT ... RETURNING gave no row');
      return toSecret(row);
    });
  }

  async list(scope: EnvironmentScope): Promise<ContextSigningSecret[]> {
    if (!validScope(scope)) return [];
    const rows = await this.sql<SecretRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)} FROM context_signing_secrets
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
      ORDER BY created_at, kid`;
    return rows.map(toSecret);
  }

  async delete(scope: EnvironmentScope, kid: string): Promise<ContextSigningSecret> {
    if (!validScope(scope)) throw notFound('context signing secret', kid);
    const [row] = await this.sql<SecretRow[]>`
      DELETE FROM context_signing_secrets
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId} AND kid = ${kid}
      RETURNING ${this.sql.unsafe(COLUMNS)}`;
    if (!row) throw notFound('context signing secret', kid);
    return toSecret(row);
  }
}
