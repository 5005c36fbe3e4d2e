import { invalidArgument, metricEventKeys, type EnvironmentScope, type ExperimentMetric, type MetricValueType, type Repositories } from '@switchyard/core';

/**
 * The environment's event definitions by key, as the value type each metric reads them with. A
 * Map, not an object: a key such as `constructor` must not be found on an object's prototype.
 */
export async function eventValueTypes(repos: Pick<Repositories, 'eventDefinitions'>, scope: EnvironmentScope): Promise<Map<string, MetricValueType>> {
  return new Map((await repos.eventDefinitions.list(scope)).map((definition) => [definition.key, definition.valueType]));
}

/**
 * Every event key the metrics read is a registered event definition, else INVALID_ARGUMENT naming
 * the first unknown one's field (`{fieldOf(i)}.event_key` or `.ratio.numerator|denominator.event_key`).
 */
export function requireRegisteredEventKeys(metrics: ExperimentMetric[], valueTypes: ReadonlyMap<string, MetricValueType>, fieldOf: (index: number) => string): void {
  metrics.forEach((metric, i) => {
    const unknown = metricEventKeys(metric).find((key) => !valueTypes.has(key));
    if (unknown === undefined) return;
    const field = metric.kind === 'event' ? `${fieldOf(i)}.event_key` : `${fieldOf(i)}.ratio.${metric.numerator.eventKey === unknown ? 'numerator' : 'denominator'}.event_key`;
    throw invalidArgument(`${field}: '${unknown}' is not registered as an event definition of this environment`, field);
  });
}
