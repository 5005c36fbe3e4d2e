import {
  notFound,
  type EnvironmentScope,
  type EventDefinition,
  type EventDefinitionRepository,
  type MetricValueType,
} from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

interface EventDefinitionRow {
  environment_id: string;
  key: string;
  description: string;
  value_type: MetricValueType;
  client_allowed: boolean;
  created_at_ms: number;
  updated_at_ms: number;
}

const toEventDefinition = (row: EventDefinitionRow): EventDefinition => ({
  environmentId: row.environment_id,
  key: row.key,
  description: row.description,
  valueType: row.value_type,
  clientAllowed: row.client_allowed,
  createdAtMs: row.created_at_ms,
  updatedAtMs: row.updated_at_ms,
});

const validScope = (scope: EnvironmentScope): boolean =>
  isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId);

/** Event definitions in `event_definitions`, every statement scoped by org, project and environment. */
export class PgEventDefinitionRepository implements EventDefinitionRepository {
  constructor(private readonly sql: Sql) {}

  private columns() {
    return this.sql`environment_id, key, description, value_type, client_allowed,
      floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms,
      floor(extract(epoch FROM updated_at) * 1000)::int8 AS updated_at_ms`;
  }

  async create(
    scope: EnvironmentScope,
    input: { key: string; description: string; valueType: MetricValueType; clientAllowed?: boolean },
  ): Promise<EventDefinition> {
    if (!validScope(scope)) throw notFound('environment', scope.environmentId);
    // now() for both stamps: a new record's updatedAtMs equals its createdAtMs, as in the fake.
    // The composite foreign key turns an environment outside the scope into NOT_FOUND.
    const [row] = await translateErrors(
      () => this.sql<EventDefinitionRow[]>`
        INSERT INTO event_definitions (org_id, project_id, environment_id, key, description, value_type, client_allowed, created_at, updated_at)
        VALUES (${scope.orgId}, ${scope.projectId}, ${scope.environmentId}, ${input.key}, ${input.description},
                ${input.valueType}, ${input.clientAllowed ?? false}, now(), now())
        RETURNING ${this.columns()}`,
      { resource: 'event definition', name: input.key, parent: 'environment' },
    );
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toEventDefinition(row);
  }

  async get(scope: EnvironmentScope, key: string): Promise<EventDefinition | null> {
    if (!validScope(scope)) return null;
    const [row] = await this.sql<EventDefinitionRow[]>`
      SELECT ${this.columns()} FROM event_definitions
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
        AND key = ${key}`;
    return row ? toEventDefinition(row) : null;
  }

  async list(scope: EnvironmentScope): Promise<EventDefinition[]> {
    if (!validScope(scope)) return [];
    // COLLATE "C": code-point order whatever the database locale, the order the fake lists in.
    const rows = await this.sql<EventDefinitionRow[]>`
      SELECT ${this.columns()} FROM event_definitions
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
      ORDER BY key COLLATE "C"`;
    return rows.map(toEventDefinition);
  }

  async update(
    scope: EnvironmentScope,
    key: string,
    patch: { description?: string; valueType?: MetricValueType; clientAllowed?: boolean },
  ): Promise<EventDefinition> {
    if (!validScope(scope)) throw notFound('event definition', key);
    // updated_at moves at least one millisecond so that a client comparing updatedAtMs sees the change.
    const [row] = await this.sql<EventDefinitionRow[]>`
      UPDATE event_definitions SET
        description = ${patch.description === undefined ? this.sql`description` : this.sql`${patch.description}`},
        value_type = ${patch.valueType === undefined ? this.sql`value_type` : this.sql`${patch.valueType}`},
        client_allowed = ${patch.clientAllowed === undefined ? this.sql`client_allowed` : this.sql`${patch.clientAllowed}`},
        updated_at = greatest(clock_timestamp(), updated_at + interval '1 millisecond')
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
        AND key = ${key}
      RETURNING ${this.columns()}`;
    if (!row) throw notFound('event definition', key);
    return toEventDefinition(row);
  }

  async delete(scope: EnvironmentScope, key: string): Promise<void> {
    if (!validScope(scope)) throw notFound('event definition', key);
    const deleted = await this.sql`
      DELETE FROM event_definitions
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
        AND key = ${key}`;
    if (deleted.count === 0) throw notFound('event definition', key);
  }
}
