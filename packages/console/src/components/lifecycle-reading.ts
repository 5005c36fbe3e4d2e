import type { LifecycleFlag, LifecycleStage, LifecycleThresholds } from '../records.ts';

/**
 * Pure readings of a project's flag lifecycle (docs/insights.md "Lifecycle stages") for the
 * Cleanup page: the flags grouped by stage, their last evaluation where it counts, and the
 * thresholds form (what to send, and which field a refusal names).
 */

/** The stages in the order the Cleanup page lists them: the two cleanup stages first. */
export const STAGE_ORDER: LifecycleStage[] = ['ready_for_code_removal', 'ready_to_archive', 'live', 'archived'];

export const STAGE_WORDS: Record<LifecycleStage, { word: string; meaning: string }> = {
  ready_for_code_removal: { word: 'Ready for code removal', meaning: 'Temporary, old enough, and launched or not evaluated in every environment that counts: its code paths can go' },
  ready_to_archive: { word: 'Ready to archive', meaning: 'Not evaluated for long enough in every environment that counts: the code is gone, the flag can be archived' },
  live: { word: 'Live', meaning: 'In use, permanent, or not known to be unused' },
  archived: { word: 'Archived', meaning: 'Archived' },
};

/** The filter the Cleanup page offers: both cleanup stages (the default), or one stage. */
export type StageFilter = 'cleanup' | LifecycleStage;

/**
 * The flags in groups by stage, in STAGE_ORDER, keeping the answer's order (by key) within each;
 * only the stages the filter keeps, and each kept stage even when empty (the page says "none").
 */
export function groupByStage(flags: LifecycleFlag[], filter: StageFilter): Array<{ stage: LifecycleStage; flags: LifecycleFlag[] }> {
  const kept = filter === 'cleanup' ? STAGE_ORDER.slice(0, 2) : [filter];
  return kept.map((stage) => ({ stage, flags: flags.filter((flag) => flag.stage === stage) }));
}

/** How many flags are in each stage. */
export function stageCounts(flags: LifecycleFlag[]): Record<LifecycleStage, number> {
  const counts: Record<LifecycleStage, number> = { ready_for_code_removal: 0, ready_to_archive: 0, live: 0, archived: 0 };
  for (const flag of flags) counts[flag.stage] += 1;
  return counts;
}

/** The latest evaluation of the flag in any of `environmentIds` (null: never in any of them). */
export function lastEvaluatedIn(flag: LifecycleFlag, environmentIds: string[]): number | null {
  let latest: number | null = null;
  for (const id of environmentIds) {
    const at = flag.environments[id]?.last_evaluated_at_ms ?? null;
    if (at !== null && (latest === null || at > latest)) latest = at;
  }
  return latest;
}

export type ThresholdName = keyof LifecycleThresholds;

export const THRESHOLD_FIELDS: Array<{ name: ThresholdName; label: string; help: string }> = [
  { name: 'status_window_days', label: 'Status window (days)', help: 'A flag not evaluated for this long is inactive; one evaluated, serving one variant and unchanged this long is launched.' },
  { name: 'code_removal_min_age_days', label: 'Code removal: minimum age (days)', help: 'A temporary flag younger than this is never ready for code removal.' },
  { name: 'archive_after_days', label: 'Archive after (days without evaluations)', help: 'Unevaluated this long (and at least this old) in every environment that counts: ready to archive.' },
  { name: 'unchanged_fallback_days', label: 'Fallback: unchanged for (days)', help: 'Where an environment reports no evaluations, a flag serving one variant and unchanged this long counts as launched.' },
];

/** The form's text for each threshold. */
export type ThresholdDraft = Record<ThresholdName, string>;

export const thresholdDraft = (thresholds: LifecycleThresholds): ThresholdDraft => ({
  status_window_days: String(thresholds.status_window_days),
  code_removal_min_age_days: String(thresholds.code_removal_min_age_days),
  archive_after_days: String(thresholds.archive_after_days),
  unchanged_fallback_days: String(thresholds.unchanged_fallback_days),
});

/**
 * What "Save thresholds" sends: `{lifecycle}` with the thresholds that differ from the saved ones,
 * as numbers; `nothing` when none differs; `errors` for a field left empty or not a number (the
 * range and whole days are the API's to check: its refusal is shown at the field it names).
 */
export function thresholdsBody(draft: ThresholdDraft, saved: LifecycleThresholds): { body?: { lifecycle: Partial<LifecycleThresholds> }; errors: Partial<Record<ThresholdName, string>>; nothing: boolean } {
  const errors: Partial<Record<ThresholdName, string>> = {};
  const changed: Partial<LifecycleThresholds> = {};
  for (const { name } of THRESHOLD_FIELDS) {
    const text = draft[name].trim();
    const value = Number(text);
    if (text === '' || !Number.isFinite(value)) {
      errors[name] = 'Enter a number of days.';
      continue;
    }
    if (value !== saved[name]) changed[name] = value;
  }
  if (Object.keys(errors).length > 0) return { errors, nothing: false };
  if (Object.keys(changed).length === 0) return { errors, nothing: true };
  return { body: { lifecycle: changed }, errors, nothing: false };
}

/** The threshold a refusal's message names (`lifecycle.archive_after_days must be …`), if any. */
export function thresholdNamedBy(message: string): ThresholdName | undefined {
  const match = /\blifecycle\.(status_window_days|code_removal_min_age_days|archive_after_days|unchanged_fallback_days)\b/.exec(message);
  return match ? (match[1] as ThresholdName) : undefined;
}
