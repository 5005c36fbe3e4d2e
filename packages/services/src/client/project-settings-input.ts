import { invalidArgument, type LifecycleThresholds } from '@switchyard/core';

/** A project's settings as `PATCH /v1/management/projects/{project_id}` writes them (absent: unchanged). */
export interface ProjectSettings {
  clientVisibleDefault?: boolean;
  /** Some of the lifecycle thresholds (docs/insights.md "Thresholds"); the others keep their values. */
  lifecycle?: Partial<LifecycleThresholds>;
}

/** The wire names of the lifecycle thresholds, each a whole number of days in 1..365. */
export const LIFECYCLE_FIELDS = {
  status_window_days: 'statusWindowDays',
  code_removal_min_age_days: 'codeRemovalMinAgeDays',
  archive_after_days: 'archiveAfterDays',
  unchanged_fallback_days: 'unchangedFallbackDays',
} as const satisfies Record<string, keyof LifecycleThresholds>;
export const MAX_LIFECYCLE_DAYS = 365;

/** The wire shape of a project's lifecycle thresholds. */
export interface LifecycleThresholdsRecord {
  status_window_days: number;
  code_removal_min_age_days: number;
  archive_after_days: number;
  unchanged_fallback_days: number;
}

export const lifecycleRecord = (thresholds: LifecycleThresholds): LifecycleThresholdsRecord => ({
  status_window_days: thresholds.statusWindowDays,
  code_removal_min_age_days: thresholds.codeRemovalMinAgeDays,
  archive_after_days: thresholds.archiveAfterDays,
  unchanged_fallback_days: thresholds.unchangedFallbackDays,
});

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The body of `PATCH /v1/management/projects/{project_id}`: `{client_visible_default?: boolean,
 * lifecycle?: {status_window_days?, code_removal_min_age_days?, archive_after_days?,
 * unchanged_fallback_days?}}`, at least one setting (docs/client-side.md "What a client sees",
 * docs/insights.md "Thresholds"). Unknown fields are refused, so a misspelt setting is an error
 * rather than a silent no-op.
 */
export function parseProjectSettings(body: unknown): ProjectSettings {
  if (!isObject(body)) throw invalidArgument('the body must be an object {client_visible_default?, lifecycle?}', 'body');
  const unknown = Object.keys(body).filter((name) => name !== 'client_visible_default' && name !== 'lifecycle');
  if (unknown.length > 0) throw invalidArgument(`unknown project settings: ${unknown.join(', ')}`, unknown[0]!);
  if (body.client_visible_default === undefined && body.lifecycle === undefined) throw invalidArgument('name at least one setting: client_visible_default or lifecycle', 'body');
  const settings: ProjectSettings = {};
  if (body.client_visible_default !== undefined) {
    if (typeof body.client_visible_default !== 'boolean') throw invalidArgument('client_visible_default must be true or false', 'client_visible_default');
    settings.clientVisibleDefault = body.client_visible_default;
  }
  if (body.lifecycle !== undefined) {
    const lifecycle = body.lifecycle;
    if (!isObject(lifecycle)) throw invalidArgument('lifecycle must be an object of thresholds in days', 'lifecycle');
    const unknownThresholds = Object.keys(lifecycle).filter((name) => !Object.hasOwn(LIFECYCLE_FIELDS, name));
    if (unknownThresholds.length > 0) throw invalidArgument(`unknown lifecycle thresholds: ${unknownThresholds.join(', ')}`, `lifecycle.${unknownThresholds[0]!}`);
    const parsed: Partial<LifecycleThresholds> = {};
    for (const [wire, field] of Object.entries(LIFECYCLE_FIELDS)) {
      const value = lifecycle[wire];
      if (value === undefined) continue;
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_LIFECYCLE_DAYS) {
        throw invalidArgument(`lifecycle.${wire} must be a whole number of days from 1 to ${MAX_LIFECYCLE_DAYS}`, `lifecycle.${wire}`);
      }
      parsed[field] = value;
    }
    settings.lifecycle = parsed;
  }
  return settings;
}
