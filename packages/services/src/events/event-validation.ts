import type { Exposure, MetricEvent, MetricValueType } from '@switchyard/core';
import { isProblem, Rejections, textProblem, type IngestAnswer, type Problem } from './ingest-rejections.ts';

export * from './ingest-rejections.ts';

/** Most events (or exposures) in one request (docs/contract.md "Events, exposures and idempotency"); beyond: RESOURCE_EXHAUSTED (HTTP 413). */
export const MAX_EVENTS_PER_REQUEST = 10_000;
/** Longest context type and context key stored; longer ones reject the event. */
export const MAX_CONTEXT_TYPE_LENGTH = 64;
export const MAX_CONTEXT_KEY_LENGTH = 512;
/** Rule ids are keys of at most 128 characters (validate-flag.ts checkKey). */
export const MAX_RULE_ID_LENGTH = 128;

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
  /** The rule whose allocation served the variant, '' when none did; absent from older SDKs. */
  rule_id?: unknown;
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

/** A client timestamp: absent, null or (gRPC's unset) 0 → the receipt time; otherwise a non-negative safe integer. */
export function receiptTimestamp(value: unknown, receivedAtMs: number): number | null {
  if (value === undefined || value === null || value === 0) return receivedAtMs;
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : null;
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

/** How one credential's events are judged: which definitions it may send, and how its timestamps are read. */
export interface EventRules {
  /** The value type of a metric key this credential may send, or undefined (rejected as unknown_metric). */
  typeOf(metricKey: string): MetricValueType | undefined;
  /** The stored timestamp, or null when the value is not a valid one. */
  timestamp(value: unknown, receivedAtMs: number): number | null;
}

/**
 * One event's row, or the first of its problems in this order (docs/contract.md "Why an entry is
 * rejected"): metric_key, then value, context_type, context_key, timestamp_ms.
 */
export function checkEvent(event: IncomingEvent, rules: EventRules, receivedAtMs: number): EventRow | Problem {
  const keyProblem = textProblem(event.metric_key, 'metric_key');
  if (keyProblem !== null) return keyProblem;
  const metricKey = event.metric_key as string;
  const valueType = rules.typeOf(metricKey);
  if (valueType === undefined) return { reason: 'unknown_metric' };
  const value = storedValue(valueType, event.value);
  if (value === null) return event.value === undefined || event.value === null ? { reason: 'missing_field', field: 'value' } : { reason: 'wrong_value_type' };
  const fieldProblem = textProblem(event.context_type, 'context_type', MAX_CONTEXT_TYPE_LENGTH) ?? textProblem(event.context_key, 'context_key', MAX_CONTEXT_KEY_LENGTH);
  if (fieldProblem !== null) return fieldProblem;
  const timestampMs = rules.timestamp(event.timestamp_ms, receivedAtMs);
  if (timestampMs === null) return { reason: 'invalid_field', field: 'timestamp_ms' };
  return { metricKey, contextType: event.context_type as string, contextKey: event.context_key as string, value, timestampMs };
}

/**
 * Checks each event on its own against the environment's definitions (checkEvent). A rejected
 * event goes to `rejected` (index, key, reason) and its metric key to `rejected_keys`, once per
 * key. The others become rows; a key may be both accepted (some events) and rejected (others).
 */
export function validateEvents(
  events: readonly IncomingEvent[],
  definitions: ReadonlyMap<string, MetricValueType>,
  receivedAtMs: number,
): { rows: EventRow[]; answer: IngestAnswer } {
  const rules: EventRules = { typeOf: (key) => definitions.get(key), timestamp: receiptTimestamp };
  const rows: EventRow[] = [];
  const rejected = new Rejections();
  events.forEach((event, index) => {
    const checked = checkEvent(event, rules, receivedAtMs);
    if (isProblem(checked)) rejected.add(index, event.metric_key, checked);
    else rows.push(checked);
  });
  return { rows, answer: rejected.answer(rows.length) };
}

/**
 * One exposure's row, or the first of its problems in this order: flag_key (missing, not a
 * string, not an active flag), variant_key (missing, not one of the flag's variants),
 * context_type, context_key, timestamp_ms.
 */
function checkExposure(exposure: IncomingExposure, flags: FlagVariants, receivedAtMs: number): ExposureRow | Problem {
  const keyProblem = textProblem(exposure.flag_key, 'flag_key');
  if (keyProblem !== null) return keyProblem;
  const flagKey = exposure.flag_key as string;
  const variants = flags.get(flagKey);
  if (variants === undefined) return { reason: 'unknown_flag' };
  const variantProblem = textProblem(exposure.variant_key, 'variant_key');
  if (variantProblem !== null) return variantProblem;
  const variantKey = exposure.variant_key as string;
  if (!variants.has(variantKey)) return { reason: 'unknown_variant' };
  const fieldProblem = textProblem(exposure.context_type, 'context_type', MAX_CONTEXT_TYPE_LENGTH) ?? textProblem(exposure.context_key, 'context_key', MAX_CONTEXT_KEY_LENGTH);
  if (fieldProblem !== null) return fieldProblem;
  const timestampMs = receiptTimestamp(exposure.timestamp_ms, receivedAtMs);
  if (timestampMs === null) return { reason: 'invalid_field', field: 'timestamp_ms' };
  const ruleId = exposureRuleId(exposure.rule_id);
  if (ruleId !== null && typeof ruleId === 'object') return ruleId;
  return { flagKey, variantKey, contextType: exposure.context_type as string, contextKey: exposure.context_key as string, timestampMs, ruleId };
}

/**
 * An exposure's `rule_id`: a string of at most MAX_RULE_ID_LENGTH ('' allowed: no allocation
 * served it), or null when absent. It is stored as sent, not checked against the flag's rules:
 * rules change, and an exposure names the rule of its own moment.
 */
export function exposureRuleId(value: unknown): string | null | Problem {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') return { reason: 'invalid_field', field: 'rule_id' };
  if (value.length > MAX_RULE_ID_LENGTH) return { reason: 'field_too_long', field: 'rule_id' };
  return value;
}

/** Whether `value` is an acceptable exposure `rule_id` (exposureRuleId's rule), absent included. */
export function isAcceptableRuleId(value: unknown): boolean {
  const checked = exposureRuleId(value);
  return checked === null || typeof checked === 'string';
}

/**
 * Checks each exposure on its own (checkExposure); a rejected one goes to `rejected` and its flag
 * key (or "") to `rejected_keys` once: exposures feed experiment results, where a participant in a
 * variant that does not exist would only skew them.
 */
export function validateExposures(
  exposures: readonly IncomingExposure[],
  flags: FlagVariants,
  receivedAtMs: number,
): { rows: ExposureRow[]; answer: IngestAnswer } {
  const rows: ExposureRow[] = [];
  const rejected = new Rejections();
  exposures.forEach((exposure, index) => {
    const checked = checkExposure(exposure, flags, receivedAtMs);
    if (isProblem(checked)) rejected.add(index, exposure.flag_key, checked);
    else rows.push(checked);
  });
  return { rows, answer: rejected.answer(rows.length) };
}
