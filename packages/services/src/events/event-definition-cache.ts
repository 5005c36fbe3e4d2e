import type { ChangeNotifier, EnvironmentScope, EventDefinitionRepository, MetricValueType } from '@switchyard/core';

/** The channel on which every instance hears that an environment's event definitions changed (payload: its id). */
export const EVENT_DEFINITIONS_CHANGED_CHANNEL = 'switchyard_event_definitions_changed';

interface Loaded {
  types: ReadonlyMap<string, MetricValueType>;
  /** The keys client keys may send (docs/client-side.md "5. Exposures and events"). */
  clientAllowed: ReadonlySet<string>;
}

interface Entry {
  scope: EnvironmentScope;
  loaded: Promise<Loaded>;
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
    return this.entry(scope).types;
  }

  /** The keys of the environment's definitions marked `client_allowed`. */
  async clientAllowed(scope: EnvironmentScope): Promise<ReadonlySet<string>> {
    return (await this.entry(scope).loaded).clientAllowed;
  }

  private entry(scope: EnvironmentScope): Entry {
    const entry = this.entries.get(scope.environmentId);
    if (entry && sameScope(entry.scope, scope)) return entry;
    const loaded = this.load(scope);
    const fresh: Entry = { scope, loaded, types: loaded.then((result) => result.types) };
    // A failed load must not stick: the next request tries again.
    fresh.types.catch(() => {
      if (this.entries.get(scope.environmentId) === fresh) this.entries.delete(scope.environmentId);
    });
    // A scope that disagrees with the cached one (never legitimately) is served uncached.
    if (!entry) this.entries.set(scope.environmentId, fresh);
    return fresh;
  }

  /** Drops this instance's entry at once and tells every other instance. */
  async changed(scope: EnvironmentScope): Promise<void> {
    this.entries.delete(scope.environmentId);
    await this.notifier.publish(EVENT_DEFINITIONS_CHANGED_CHANNEL, scope.environmentId);
  }

  private async load(scope: EnvironmentScope): Promise<Loaded> {
    const definitions = await this.repo.list(scope);
    return {
      types: new Map(definitions.map((definition) => [definition.key, definition.valueType])),
      clientAllowed: new Set(definitions.filter((definition) => definition.clientAllowed).map((definition) => definition.key)),
    };
  }
}
