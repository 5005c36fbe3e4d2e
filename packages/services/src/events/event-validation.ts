import type { Exposure, MetricEvent, MetricValueType } from '@switchyard/core';

/** Most events (or exposures) in one request (docs/contract.md "Events, exposures and idempotency"); beyond: RESOURCE_EXHAUSTED (HTTP 413). */
export const MAX_EVENTS_PER_REQUEST = 10_000;
/** Longest context type and context key stored; longer ones reject the event. */
export const MAX_CONTEXT_TYPE_LENGTH = 64;
export const MAX_CONTEXT_KEY_LENGTH = 512;

/**
 * One event as a client sent it (REST JSON or a decoded gRPC message). Nothing is trusted: every
 * field is checked here, and a bad field rejects only this event.
 */
export interface IncomingEvent {
  metric_key?: unknown;
  context_type?: unknown;
  context_key?: unknown;
  /** boolean, number, null or absent (gRPC's MetricValue arrives as the JS value of its set field). */
  value?: unknown;
  timestamp_ms?: unknown;
}

/** The exposure body entry of docs/contract.md "Events, exposures and idempotency". */
export interface IncomingExposure {
  flag_key?: unknown;
  variant_key?: unknown;
  context_type?: unknown;
  context_key?: unknown;
  timestamp_ms?: unknown;
}

/** The ingest answer of docs/contract.md "Events and exposures" (and svc.events.v1.IngestResponse). */
export interface IngestAnswer {
  accepted_count: number;
  rejected_keys: string[];
}

export type EventRow = Omit<MetricEvent, 'environmentId'>;
export type ExposureRow = Omit<Exposure, 'environmentId'>;

/** The variants of each flag of an environment (exposures are checked against it). */
export type FlagVariants = ReadonlyMap<string, ReadonlySet<string>>;

/**
 * The number stored for a value of the given type (bool as 1/0), or null when the value does not
 * fit the type (docs/contract.md "Events, exposures and idempotency"):
 * - bool takes true/false; a missing value (absent or null) counts as true;
 * - int takes integers only (the number's value decides: JSON cannot tell 3.0 from 3, and
 *   gRPC's double_value 3.0 is treated alike, so both transports accept the same events);
 * - double takes any finite number; numeric types refuse a missing value.
 */
export function storedValue(valueType: MetricValueType, value: unknown): number | null {
  switch (valueType) {
    case 'bool':
      if (value === undefined || value === null) return 1;
      return typeof value === 'boolean' ? (value ? 1 : 0) : null;
    case 'int':
      return typeof value === 'number' && Number.isSafeInteger(value) ? value : null;
    case 'double':
      return typeof value === 'number' && Number.isFinite(value) ? value : null;
  }
}

const text = (value: unknown, maxLength: number): string | null =>
  typeof value === 'string' && value !== '' && value.length <= maxLength ? value : null;

/** A client timestamp: absent, null or (gRPC's unset) 0 → the receipt time; otherwise a non-negative safe integer. */
function timestamp(value: unknown, receivedAtMs: number): number | null {
  if (value === undefined || value === null || value === 0) return receivedAtMs;
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : null;
}

/** Collects rejected keys once each, in order of first appearance. */
export class Rejections {
  private readonly keys = new Set<string>();
  add(key: unknown): void {
    this.keys.add(typeof key === 'string' ? key : '');
  }
  list(): string[] {
    return [...this.keys];
  }
}

/**
 * An entry without a metric key is not an event (nothing could ever accept it, and `""` in
 * `rejected_keys` tells the client nothing), so it refuses the whole request with INVALID_ARGUMENT
 * naming the field. Missing, null, not a string, or `""` all count as missing: gRPC cannot tell
 * an unset string field from `""` (proto3), so both transports treat them alike.
 * @returns the index of the first entry without a metric key, or -1.
 */
export function firstWithoutMetricKey(events: readonly IncomingEvent[]): number {
  return events.findIndex((event) => typeof event.metric_key !== 'string' || event.metric_key === '');
}

/**
 * Checks each event on its own against the environment's definitions. An event is rejected — its
 * metric key (or "" when it has none) goes to `rejected_keys`, once per key — when its key is not
 * a registered definition, its value does not fit the definition's type, its context type or key
 * is missing, empty or too long, or its timestamp is not a non-negative integer. The others become
 * rows; a key may be both accepted (some events) and rejected (others).
 */
export function validateEvents(
  events: readonly IncomingEvent[],
  definitions: ReadonlyMap<string, MetricValueType>,
  receivedAtMs: number,
): { rows: EventRow[]; answer: IngestAnswer } {
  const rows: EventRow[] = [];
  const rejected = new Rejections();
  for (const event of events) {
    const valueType = typeof event.metric_key === 'string' ? definitions.get(event.metric_key) : undefined;
    const contextType = text(event.context_type, MAX_CONTEXT_TYPE_LENGTH);
    const contextKey = text(event.context_key, MAX_CONTEXT_KEY_LENGTH);
    const timestampMs = timestamp(event.timestamp_ms, receivedAtMs);
    const value = valueType === undefined ? null : storedValue(valueType, event.value);
    if (valueType === undefined || value === null || contextType === null || contextKey === null || timestampMs === null) {
      rejected.add(event.metric_key);
      continue;
    }
    rows.push({ metricKey: event.metric_key as string, contextType, contextKey, value, timestampMs });
  }
  return { rows, answer: { accepted_count: rows.length, rejected_keys: rejected.list() } };
}

/**
 * Checks each exposure on its own. Rejected (its flag key, or "", into `rejected_keys` once) when a
 * field is missing or too long, the flag is not an active flag of the environment, or the variant
 * is not one of the flag's variants: exposures feed experiment results, where a participant in a
 * variant that does not exist would only skew them.
 */
export function validateExposures(
  exposures: readonly IncomingExposure[],
  flags: FlagVariants,
  receivedAtMs: number,
): { rows: ExposureRow[]; answer: IngestAnswer } {
  const rows: ExposureRow[] = [];
  const rejected = new Rejections();
  for (const exposure of exposures) {
    const variants = typeof exposure.flag_key === 'string' ? flags.get(exposure.flag_key) : undefined;
    const variantKey = typeof exposure.variant_key === 'string' && variants?.has(exposure.variant_key) ? exposure.variant_key : null;
    const contextType = text(exposure.context_type, MAX_CONTEXT_TYPE_LENGTH);
    const contextKey = text(exposure.context_key, MAX_CONTEXT_KEY_LENGTH);
    const timestampMs = timestamp(exposure.timestamp_ms, receivedAtMs);
    if (variantKey === null || contextType === null || contextKey === null || timestampMs === null) {
      rejected.add(exposure.flag_key);
      continue;
    }
    rows.push({ flagKey: exposure.flag_key as string, variantKey, contextType, contextKey, timestampMs });
  }
  return { rows, answer: { accepted_count: rows.length, rejected_keys: rejected.list() } };
}
