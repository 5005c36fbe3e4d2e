import {
  METRIC_VALUE_TYPES,
  checkKey,
  invalidArgument,
  notFound,
  type EnvironmentScope,
  type EventDefinition,
  type MetricValueType,
  type Principal,
  type Repositories,
} from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import { recordChange } from '../audit/audit-trail.ts';
import type { ScopeResolver } from '../scopes.ts';
import type { EventDefinitionCache } from './event-definition-cache.ts';

/** Longest description kept. */
export const MAX_EVENT_DEFINITION_DESCRIPTION = 2_000;

/** The event definition body of docs/contract.md "Events, exposures and idempotency" (create; on update every field is optional). */
export interface EventDefinitionBody {
  key?: string;
  description?: string | null;
  value_type?: string;
  /** Whether client keys may send it (default false). */
  client_allowed?: boolean;
}

/** The REST/gRPC record of docs/contract.md "Events, exposures and idempotency". */
export interface EventDefinitionRecord {
  key: string;
  description: string;
  value_type: MetricValueType;
  client_allowed: boolean;
  environment_id: string;
  created_at_ms: number;
}

export const eventDefinitionRecord = (definition: EventDefinition): EventDefinitionRecord => ({
  key: definition.key,
  description: definition.description,
  value_type: definition.valueType,
  client_allowed: definition.clientAllowed,
  environment_id: definition.environmentId,
  created_at_ms: definition.createdAtMs,
});

function checkValueType(value: unknown): MetricValueType {
  if (typeof value !== 'string' || !(METRIC_VALUE_TYPES as readonly string[]).includes(value)) {
    throw invalidArgument(`value_type must be one of ${METRIC_VALUE_TYPES.join(', ')}`, 'value_type');
  }
  return value as MetricValueType;
}

function checkClientAllowed(value: unknown): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw invalidArgument('client_allowed must be a boolean', 'client_allowed');
  return value;
}

function checkDescription(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string' || value.length > MAX_EVENT_DEFINITION_DESCRIPTION) {
    throw invalidArgument(`description must be a string of at most ${MAX_EVENT_DEFINITION_DESCRIPTION} characters`, 'description');
  }
  return value;
}

/**
 * Event definitions (svc.events.v1 EventService definition calls): the metric keys an environment
 * accepts and the value type of each (docs/contract.md "Events, exposures and idempotency"). Every change drops the ingest cache of
 * the environment on every instance.
 */
export class EventDefinitionService {
  constructor(
    private readonly repos: Pick<Repositories, 'eventDefinitions' | 'unitOfWork'>,
    private readonly scopes: ScopeResolver,
    /** Told after each commit (an import defers it to its own commit: FlagsAsCodeService). */
    private readonly cache: Pick<EventDefinitionCache, 'changed'>,
    private readonly now: () => number = Date.now,
  ) {}

  scope(principal: Principal, environmentId: string): Promise<EnvironmentScope> {
    return this.scopes.environment(principal, environmentId);
  }

  async list(principal: Principal, scope: EnvironmentScope): Promise<EventDefinition[]> {
    this.authorize(principal, 'event_definition.read', scope);
    return this.repos.eventDefinitions.list(scope);
  }

  async get(principal: Principal, scope: EnvironmentScope, key: string): Promise<EventDefinition> {
    this.authorize(principal, 'event_definition.read', scope);
    const definition = await this.repos.eventDefinitions.get(scope, key);
    if (!definition) throw notFound('event definition', key);
    return definition;
  }

  /** @throws ALREADY_EXISTS when the key is taken in the environment. */
  async create(principal: Principal, scope: EnvironmentScope, body: EventDefinitionBody): Promise<EventDefinition> {
    this.authorize(principal, 'event_definition.write', scope);
    const key = checkKey(body.key, 'key');
    const valueType = checkValueType(body.value_type);
    const description = checkDescription(body.description);
    const clientAllowed = checkClientAllowed(body.client_allowed) ?? false;
    const definition = await this.repos.unitOfWork.run(async (tx) => {
      const created = await tx.eventDefinitions.create(scope, { key, description, valueType, clientAllowed });
      await this.record(tx, principal, scope, 'event_definition.create', key, null, created);
      return created;
    });
    await this.changed(scope);
    return definition;
  }

  /**
   * Changes the description and/or the value type. Stored events keep their numbers: a type
   * change applies to events received from then on.
   */
  async update(principal: Principal, scope: EnvironmentScope, key: string, body: EventDefinitionBody): Promise<EventDefinition> {
    this.authorize(principal, 'event_definition.write', scope);
    if (body.key !== undefined && body.key !== key) throw invalidArgument('key cannot change', 'key');
    const patch: { description?: string; valueType?: MetricValueType; clientAllowed?: boolean } = {};
    if (body.description !== undefined && body.description !== null) patch.description = checkDescription(body.description);
    if (body.value_type !== undefined) patch.valueType = checkValueType(body.value_type);
    const clientAllowed = checkClientAllowed(body.client_allowed);
    if (clientAllowed !== undefined) patch.clientAllowed = clientAllowed;
    const definition = await this.repos.unitOfWork.run(async (tx) => {
      const before = await tx.eventDefinitions.get(scope, key);
      const updated = await tx.eventDefinitions.update(scope, key, patch);
      await this.record(tx, principal, scope, 'event_definition.update', key, before, updated);
      return updated;
    });
    await this.changed(scope);
    return definition;
  }

  /** Stored events of the key are kept (results may still use them); new ones are rejected. */
  async remove(principal: Principal, scope: EnvironmentScope, key: string): Promise<void> {
    this.authorize(principal, 'event_definition.write', scope);
    await this.repos.unitOfWork.run(async (tx) => {
      const before = await tx.eventDefinitions.get(scope, key);
      await tx.eventDefinitions.delete(scope, key);
      await this.record(tx, principal, scope, 'event_definition.delete', key, before, null);
    });
    await this.changed(scope);
  }

  private authorize(principal: Principal, action: 'event_definition.read' | 'event_definition.write', scope: EnvironmentScope): void {
    requireAllowed(principal, action, { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId });
  }

  /** After the commit: once the caller hears "done", this instance already ingests by the new definition. */
  private async changed(scope: EnvironmentScope): Promise<void> {
    await this.cache.changed(scope);
  }

  private async record(tx: Repositories, principal: Principal, scope: EnvironmentScope, action: string, key: string, before: EventDefinition | null, after: EventDefinition | null): Promise<void> {
    await recordChange(tx, principal, {
      orgId: scope.orgId,
      action,
      resourceType: 'event_definition',
      resourceId: key,
      projectId: scope.projectId,
      environmentId: scope.environmentId,
      before: before && eventDefinitionRecord(before),
      after: after && eventDefinitionRecord(after),
    }, this.now());
  }
}
