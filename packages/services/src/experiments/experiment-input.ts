import { invalidArgument, type AnalysisWire, type MetricWire } from '@switchyard/core';

/**
 * Field checks of the experiment bodies (docs/contract.md "Experiments and statistics"). Each names the offending field in its
 * INVALID_ARGUMENT; references (the flag, its variants, event definitions) are checked by the
 * service against the environment.
 */

/** Create, PATCH and PUT body; every field optional (PATCH and PUT both change only what is given). */
export interface ExperimentBody {
  name?: string | null;
  description?: string | null;
  flag_key?: string | null;
  variant_keys?: string[] | null;
  /** Old style: each key means core's metricFromKey. Not with `metrics` (unless it lists exactly their keys). */
  metric_keys?: string[] | null;
  metrics?: MetricWire[] | null;
  /** Missing fields take the defaults (DEFAULT_ANALYSIS); the object replaces the stored settings. */
  analysis?: AnalysisWire | null;
  /** A rule id of the flag; null: the default rule (undefined: unchanged). DRAFT only. */
  rule_id?: string | null;
  /** One of the variant keys (default: the first). DRAFT only. */
  control_variant_key?: string | null;
  traffic_allocation?: number | null;
  /** Expected version (optimistic locking); ignored on create. */
  version?: number | null;
}

/** The transitions body: `{new_status, reason?, version?}`. */
export interface TransitionBody {
  new_status?: string | null;
  reason?: string | null;
  version?: number | null;
}

export const MAX_EXPERIMENT_NAME = 200;
export const MAX_EXPERIMENT_DESCRIPTION = 2_000;
export const MAX_TRANSITION_REASON = 1_000;
/** Metrics per experiment: each costs one pass over its events per recompute. */
export const MAX_METRIC_KEYS = 20;
export const MAX_VARIANT_KEYS = 20;

export const present = <T>(value: T | null | undefined): value is T => value !== undefined && value !== null;

export function checkText(value: unknown, field: string, max: number): string {
  if (typeof value !== 'string' || value.length > max) throw invalidArgument(`${field} must be a string of at most ${max} characters`, field);
  return value;
}

/** An optional text field: undefined when absent or null. */
export const optionalText = (value: unknown, field: string, max: number): string | undefined =>
  present(value) ? checkText(value, field, max) : undefined;

export function checkFlagKey(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > 128) {
    throw invalidArgument('flag_key is required: the key of the flag whose variants the experiment compares', 'flag_key');
  }
  return value;
}

/** Distinct non-empty strings, at most `max` of them. */
export function checkKeyList(value: unknown, field: string, max: number): string[] {
  if (!Array.isArray(value) || value.some((key) => typeof key !== 'string' || key === '' || key.length > 128)) {
    throw invalidArgument(`${field} must be an array of non-empty strings (at most 128 characters each)`, field);
  }
  const keys = value as string[];
  if (keys.length > max) throw invalidArgument(`${field} holds at most ${max} keys`, field);
  const duplicate = keys.find((key, i) => keys.indexOf(key) !== i);
  if (duplicate !== undefined) throw invalidArgument(`${field} lists '${duplicate}' twice`, field);
  return keys;
}

export function checkTrafficAllocation(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw invalidArgument('traffic_allocation must be a number from 0 to 1', 'traffic_allocation');
  }
  return value;
}

export function optionalVersion(value: unknown): number | undefined {
  if (!present(value)) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalidArgument('version must be an integer >= 0', 'version');
  return value;
}
