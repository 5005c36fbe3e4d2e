import type { MetricEvent } from '../model/entities.ts';
import type { EventRepository } from '../ports/event-ports.ts';
import type { EnvironmentScope } from '../ports/scopes.ts';
import type { InMemoryState } from './in-memory-state.ts';

/**
 * Append-only metric events in memory. Like the PostgreSQL adapter it stamps received_at_ms with
 * the wall clock and refuses an environment outside the scope (NOT_FOUND) before storing anything.
 */
export class InMemoryEventRepository implements EventRepository {
  private readonly state: InMemoryState;

  constructor(state: InMemoryState) {
    this.state = state;
  }

  async insert(scope: EnvironmentScope, events: Array<Omit<MetricEvent, 'environmentId'>>): Promise<number> {
    if (events.length === 0) return 0;
    this.state.requireEnvironment(scope);
    const receivedAtMs = Date.now();
    for (const event of events) {
      this.state.events.push({
        orgId: scope.orgId,
        environmentId: scope.environmentId,
        metricKey: event.metricKey,
        contextType: event.contextType,
        contextKey: event.contextKey,
        value: event.value,
        timestampMs: event.timestampMs,
        receivedAtMs,
      });
    }
    return events.length;
  }

  async count(scope: EnvironmentScope, filter: { metricKey?: string } = {}): Promise<number> {
    return this.rowsOf(scope).filter((event) => filter.metricKey === undefined || event.metricKey === filter.metricKey)
      .length;
  }

  async lastReceivedAtMs(scope: EnvironmentScope): Promise<number> {
    return this.rowsOf(scope).reduce((latest, event) => Math.max(latest, event.receivedAtMs), 0);
  }

  /** The rows carry their tenant ids, so reads filter on them exactly as the SQL WHERE does. */
  private rowsOf(scope: EnvironmentScope): InMemoryState['events'] {
    return this.state.events.filter(
      (event) => event.orgId === scope.orgId && event.environmentId === scope.environmentId,
    );
  }
}
