import type { FlagLifetime } from '../model/definitions.ts';
import { DEFAULT_STATUS_WINDOW_DAYS, flagStatus, type FlagEnvironmentActivity, type FlagStatus } from './flag-status.ts';

/**
 * Where a flag stands in its life, project-wide (docs/insights.md "Lifecycle stages"):
 * - `live`: in use, or not known to be unused;
 * - `ready_for_code_removal`: temporary, old enough, launched or inactive in every environment that
 *   counts, not a prerequisite of a live flag, not under a running experiment: its code paths can go;
 * - `ready_to_archive`: not evaluated anywhere that counts for long enough: the code is gone;
 * - `archived`.
 * Permanent flags stay `live`.
 */
export type FlagLifecycleStage = 'live' | 'ready_for_code_removal' | 'ready_to_archive' | 'archived';

/** A project's thresholds (project settings; the defaults below when unset). */
export interface LifecycleThresholds {
  /** The statuses' window. */
  statusWindowDays: number;
  /** A temporary flag younger than this is never ready for code removal. */
  codeRemovalMinAgeDays: number;
  /** Not evaluated anywhere for this long (and at least this old): ready to archive. */
  archiveAfterDays: number;
  /** Without evaluation data: unchanged for this long and serving one variant counts as launched. */
  unchangedFallbackDays: number;
}

export const DEFAULT_LIFECYCLE_THRESHOLDS: LifecycleThresholds = {
  statusWindowDays: DEFAULT_STATUS_WINDOW_DAYS,
  codeRemovalMinAgeDays: 30,
  archiveAfterDays: 30,
  unchangedFallbackDays: 14,
};

const DAY_MS = 86_400_000;

/** One environment that counts (the project's critical ones, or all of them when none is critical). */
export interface LifecycleEnvironment extends FlagEnvironmentActivity {
  /**
   * Whether evaluation counts arrive from this environment at all (any flag counted in the status
   * window). Without them, "never evaluated" means nothing: the configuration decides instead.
   */
  reportsEvaluations: boolean;
}

export interface FlagLifecycleInput {
  archived: boolean;
  lifetime: FlagLifetime;
  createdAtMs: number;
  environments: LifecycleEnvironment[];
  /** Keys of the flags it names as prerequisites, in any environment that counts. */
  prerequisiteKeys: string[];
  /** Under an ACTIVE experiment in any environment. */
  underRunningExperiment: boolean;
}

/** The status an environment contributes: its FlagStatus, or without evaluation data launched/active from the configuration. */
export function statusForLifecycle(environment: LifecycleEnvironment, nowMs: number, thresholds: LifecycleThresholds = DEFAULT_LIFECYCLE_THRESHOLDS): FlagStatus {
  if (environment.reportsEvaluations) return flagStatus(environment, nowMs, thresholds.statusWindowDays);
  const unchanged = environment.changedAtMs <= nowMs - thresholds.unchangedFallbackDays * DAY_MS;
  return unchanged && environment.oneVariant !== null ? 'launched' : 'active';
}

/**
 * Every flag's stage, for one project's flags at once: whether a flag may go depends on the flags
 * that name it as a prerequisite (a prerequisite of a live flag stays live), so the stages are
 * resolved from the dependents down. A cycle (refused at writes) resolves to live.
 */
export function lifecycleStages(flags: ReadonlyMap<string, FlagLifecycleInput>, nowMs: number, thresholds: LifecycleThresholds = DEFAULT_LIFECYCLE_THRESHOLDS): Map<string, FlagLifecycleStage> {
  const dependents = new Map<string, string[]>();
  for (const [key, flag] of flags) {
    for (const prerequisite of new Set(flag.prerequisiteKeys)) dependents.set(prerequisite, [...(dependents.get(prerequisite) ?? []), key]);
  }
  const stages = new Map<string, FlagLifecycleStage>();
  const resolving = new Set<string>();
  const stageOf = (key: string): FlagLifecycleStage => {
    const known = stages.get(key);
    if (known !== undefined) return known;
    if (resolving.has(key)) return 'live';
    resolving.add(key);
    const flag = flags.get(key)!;
    const neededByLiveFlag = (dependents.get(key) ?? []).some((dependent) => flags.has(dependent) && stageOf(dependent) === 'live');
    const stage = ownStage(flag, neededByLiveFlag, nowMs, thresholds);
    resolving.delete(key);
    stages.set(key, stage);
    return stage;
  };
  for (const key of flags.keys()) stageOf(key);
  return stages;
}

function ownStage(flag: FlagLifecycleInput, neededByLiveFlag: boolean, nowMs: number, thresholds: LifecycleThresholds): FlagLifecycleStage {
  if (flag.archived) return 'archived';
  if (flag.lifetime === 'permanent' || flag.environments.length === 0 || neededByLiveFlag || flag.underRunningExperiment) return 'live';
  const ageMs = nowMs - flag.createdAtMs;
  const quietSince = nowMs - thresholds.archiveAfterDays * DAY_MS;
  const unusedLongEnough = ageMs >= thresholds.archiveAfterDays * DAY_MS && flag.environments.every(
    (environment) => environment.reportsEvaluations && (environment.lastEvaluatedAtMs === null || environment.lastEvaluatedAtMs < quietSince),
  );
  if (unusedLongEnough) return 'ready_to_archive';
  const settled = flag.environments.every((environment) => {
    const status = statusForLifecycle(environment, nowMs, thresholds);
    return status === 'launched' || status === 'inactive';
  });
  return settled && ageMs >= thresholds.codeRemovalMinAgeDays * DAY_MS ? 'ready_for_code_removal' : 'live';
}
