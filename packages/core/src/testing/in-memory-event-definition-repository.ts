import { alreadyExists, notFound } from '../errors/domain-error.ts';
import type { EventDefinition, MetricValueType } from '../model/entities.ts';
import type { EventDefinitionRepository } from '../ports/event-ports.ts';
import type { EnvironmentScope } from '../ports/scopes.ts';
import { compareKeys } from './compare-keys.ts';
import type { InMemoryState } from './in-memory-state.ts';

const storageKey = (environmentId: string, key: string): string => `${environmentId}/${key}`;

/**
 * Event definitions in memory. Reads of an environment outside the scope answer empty; writes to it
 * are NOT_FOUND, as the composite foreign key makes them in PostgreSQL.
 */
export class InMemoryEventDefinitionRepository implements EventDefinitionRepository {
  private readonly state: InMemoryState;

  constructor(state: InMemoryState) {
    this.state = state;
  }

  async create(
    scope: EnvironmentScope,
    input: { key: string; description: string; valueType: MetricValueType; clientAllowed?: boolean },
  ): Promise<EventDefinition> {
    this.state.requireEnvironment(scope);
    const id = storageKey(scope.environmentId, input.key);
    if (this.state.eventDefinitions.has(id)) throw alreadyExists('event definition', input.key);
    const nowMs = this.state.now();
    const definition: EventDefinition = {
      environmentId: scope.environmentId,
      key: input.key,
      description: input.description,
      valueType: input.valueType,
      clientAllowed: input.clientAllowed ?? false,
      createdAtMs: nowMs,
      updatedAtMs: nowMs,
    };
    this.state.eventDefinitions.set(id, definition);
    return { ...definition };
  }

  async get(scope: EnvironmentScope, key: string): Promise<EventDefinition | null> {
    if (!this.state.hasEnvironment(scope)) return null;
    const definition = this.state.eventDefinitions.get(storageKey(scope.environmentId, key));
    return definition ? { ...definition } : null;
  }

  async list(scope: EnvironmentScope): Promise<EventDefinition[]> {
    if (!this.state.hasEnvironment(scope)) return [];
    return [...this.state.eventDefinitions.values()]
      .filter((definition) => definition.environmentId === scope.environmentId)
      // Code-point order, as the adapter's ORDER BY key COLLATE "C": listings do not depend on locale.
      .sort((a, b) => compareKeys(a.key, b.key))
      .map((definition) => ({ ...definition }));
  }

  async update(
    scope: EnvironmentScope,
    key: string,
    patch: { description?: string; valueType?: MetricValueType; clientAllowed?: boolean },
  ): Promise<EventDefinition> {
    const id = storageKey(scope.environmentId, key);
    const current = this.state.hasEnvironment(scope) ? this.state.eventDefinitions.get(id) : undefined;
    if (!current) throw notFound('event definition', key);
    const updated: EventDefinition = {
      ...current,
      description: patch.description ?? current.description,
      valueType: patch.valueType ?? current.valueType,
      clientAllowed: patch.clientAllowed ?? current.clientAllowed,
      updatedAtMs: this.state.now(),
    };
    this.state.eventDefinitions.set(id, updated);
    return { ...updated };
  }

  async delete(scope: EnvironmentScope, key: string): Promise<void> {
    const id = storageKey(scope.environmentId, key);
    if (!this.state.hasEnvironment(scope) || !this.state.eventDefinitions.delete(id)) {
      throw notFound('event definition', key);
    }
  }
}
