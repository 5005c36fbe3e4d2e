import type { ChangeNotifier, EnvironmentScope, EventDefinitionRepository, MetricValueType } from '@switchyard/core';

/** The channel on which every instance hears that an environment's event definitions changed (payload: its id). */
export const EVENT_DEFINITIONS_CHANGED_CHANNEL = 'switchyard_event_definitions_changed';

interface Entry {
  scope: EnvironmentScope;
  types: Promise<ReadonlyMap<string, MetricValueType>>;
}

const sameScope = (a: EnvironmentScope, b: EnvironmentScope): boolean =>
  a.orgId === b.orgId && a.projectId === b.projectId && a.environmentId === b.environmentId;

/**
 * The value type of every event definition, per environment, kept in memory: ingest is the hot
 * path and would otherwise read the definitions once per request. A change made through this
 * instance drops the entry synchronously (the next request after an acknowledged change reloads);
 * other instances drop theirs when the change's NOTIFY arrives; a lost listening connection drops
 * everything. One load at a time per environment.
 */
export class EventDefinitionCache {
  private readonly entries = new Map<string, Entry>();
  private subscription: { unsubscribe(): Promise<void> } | null = null;

  constructor(
    private readonly repo: EventDefinitionRepository,
    private readonly notifier: ChangeNotifier,
  ) {}

  async start(): Promise<void> {
    this.subscription = await this.notifier.subscribe(
      EVENT_DEFINITIONS_CHANGED_CHANNEL,
      (environmentId) => this.entries.delete(environmentId),
      () => this.entries.clear(),
    );
  }

  async stop(): Promise<void> {
    await this.subscription?.unsubscribe();
    this.subscription = null;
    this.entries.clear();
  }

  /** Definition key → value type of the environment. */
  types(scope: EnvironmentScope): Promise<ReadonlyMap<string, MetricValueType>> {
    const entry = this.entries.get(scope.environmentId);
    if (entry && sameScope(entry.scope, scope)) return entry.types;
    const types = this.load(scope);
    // A scope that disagrees with the cached one (never legitimately) is served uncached.
    if (entry) return types;
    this.entries.set(scope.environmentId, { scope, types });
    // A failed load must not stick: the next request tries again.
    types.catch(() => {
      if (this.entries.get(scope.environmentId)?.types === types) this.entries.delete(scope.environmentId);
    });
    return types;
  }

  /** Drops this instance's entry at once and tells every other instance. */
  async changed(scope: EnvironmentScope): Promise<void> {
    this.entries.delete(scope.environmentId);
    await this.notifier.publish(EVENT_DEFINITIONS_CHANGED_CHANNEL, scope.environmentId);
  }

  private async load(scope: EnvironmentScope): Promise<ReadonlyMap<string, MetricValueType>> {
    const definitions = await this.repo.list(scope);
    return new Map(definitions.map((definition) => [definition.key, definition.valueType]));
  }
}
