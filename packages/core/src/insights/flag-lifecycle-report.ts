import type { FlagLifetime, Prerequisite, Rule } from '../model/definitions.ts';
import type { ProjectScope } from '../ports/scopes.ts';
import type { Repositories } from '../ports/repositories.ts';
import { lifecycleStages, type FlagLifecycleInput, type FlagLifecycleStage, type LifecycleEnvironment, type LifecycleThresholds } from './flag-lifecycle.ts';
import { flagStatus, oneVariantServed, type FlagStatus } from './flag-status.ts';

export const LIFECYCLE_STAGES: readonly FlagLifecycleStage[] = ['live', 'ready_for_code_removal', 'ready_to_archive', 'archived'];
/** The stages the daily job announces when a flag enters them (docs/insights.md "The daily job"). */
export const CLEANUP_STAGES: readonly FlagLifecycleStage[] = ['ready_for_code_removal', 'ready_to_archive'];

/** What one project's lifecycle is computed from: one read per table (FlagLifecycleRepository.snapshot). */
export interface LifecycleSnapshot {
  /** Every environment of the project, in creation order. */
  environments: Array<{ id: string; name: string; critical: boolean }>;
  /** The project's flags by key, at most the read's cap. */
  flags: Array<{ id: string; key: string; lifetime: FlagLifetime; archived: boolean; createdAtMs: number; updatedAtMs: number }>;
  /** The written per-environment states of those flags (absent: never written, off without an off variant). */
  states: Array<{ flagId: string; environmentId: string; enabled: boolean; offVariantKey: string | null; rules: Rule[]; prerequisites: Prerequisite[]; updatedAtMs: number }>;
  /** flag_evaluation_last rows of those flags. */
  lastEvaluated: Array<{ flagId: string; environmentId: string; atMs: number }>;
  /** Environments where any flag of the project was evaluated at or after the read's `sinceMs` (the status window's start). */
  reportingEnvironmentIds: string[];
  /** Flag keys under an ACTIVE experiment, in any environment of the project. */
  runningExperimentFlagKeys: string[];
  /** More flags than the cap: the ones after it (by key) are left out. */
  truncated: boolean;
}

/** One flag's lifecycle, as the route answers it. */
export interface FlagLifecycleEntry {
  id: string;
  key: string;
  lifetime: FlagLifetime;
  archived: boolean;
  stage: FlagLifecycleStage;
  environments: Record<string, { status: FlagStatus; lastEvaluatedAtMs: number | null }>;
}

export interface ProjectLifecycle {
  environments: Array<{ id: string; name: string; critical: boolean; counted: boolean; reportsEvaluations: boolean }>;
  flags: FlagLifecycleEntry[];
  truncated: boolean;
}

/**
 * The stages of a project's flags and their status per environment (docs/insights.md): the
 * environments that count are the critical ones, or all of them when none is critical; an
 * environment "reports evaluations" when any flag of the project was evaluated there in the status
 * window (else the configuration decides, statusForLifecycle); a flag's configuration changed at
 * the later of its definition's and its environment state's `updated_at`.
 */
export function projectLifecycle(snapshot: LifecycleSnapshot, nowMs: number, thresholds: LifecycleThresholds): ProjectLifecycle {
  const anyCritical = snapshot.environments.some((environment) => environment.critical);
  const reporting = new Set(snapshot.reportingEnvironmentIds);
  const environments = snapshot.environments.map((environment) => ({
    ...environment,
    counted: !anyCritical || environment.critical,
    reportsEvaluations: reporting.has(environment.id),
  }));
  const states = new Map(snapshot.states.map((state) => [`${state.flagId}\u0000${state.environmentId}`, state]));
  const last = new Map(snapshot.lastEvaluated.map((row) => [`${row.flagId}\u0000${row.environmentId}`, row.atMs]));
  const running = new Set(snapshot.runningExperimentFlagKeys);
  const inputs = new Map<string, FlagLifecycleInput>();
  const perEnvironment = new Map<string, FlagLifecycleEntry['environments']>();
  for (const flag of snapshot.flags) {
    const counted: LifecycleEnvironment[] = [];
    const prerequisiteKeys: string[] = [];
    const shown: FlagLifecycleEntry['environments'] = {};
    for (const environment of environments) {
      const state = states.get(`${flag.id}\u0000${environment.id}`);
      const activity = {
        createdAtMs: flag.createdAtMs,
        changedAtMs: Math.max(flag.updatedAtMs, state?.updatedAtMs ?? 0),
        lastEvaluatedAtMs: last.get(`${flag.id}\u0000${environment.id}`) ?? null,
        oneVariant: oneVariantServed({
          enabled: state?.enabled ?? false,
          off_variant_key: state?.offVariantKey ?? null,
          rules: state?.rules ?? [],
          prerequisites: state?.prerequisites ?? [],
        }),
      };
      shown[environment.id] = { status: flagStatus(activity, nowMs, thresholds.statusWindowDays), lastEvaluatedAtMs: activity.lastEvaluatedAtMs };
      if (!environment.counted) continue;
      counted.push({ ...activity, reportsEvaluations: environment.reportsEvaluations });
      for (const prerequisite of state?.prerequisites ?? []) prerequisiteKeys.push(prerequisite.flag_key);
    }
    perEnvironment.set(flag.key, shown);
    inputs.set(flag.key, {
      archived: flag.archived,
      lifetime: flag.lifetime,
      createdAtMs: flag.createdAtMs,
      environments: counted,
      prerequisiteKeys,
      underRunningExperiment: running.has(flag.key),
    });
  }
  const stages = lifecycleStages(inputs, nowMs, thresholds);
  return {
    environments,
    flags: snapshot.flags.map((flag) => ({
      id: flag.id,
      key: flag.key,
      lifetime: flag.lifetime,
      archived: flag.archived,
      stage: stages.get(flag.key) ?? 'live',
      environments: perEnvironment.get(flag.key) ?? {},
    })),
    truncated: snapshot.truncated,
  };
}

/** Where the lifecycle reads its inputs and the daily job remembers the stages it saw (migration 0029). */
export interface FlagLifecycleRepository {
  /** One project's inputs, at most `maxFlags` flags (by key); `sinceMs`: the status window's start. */
  snapshot(scope: ProjectScope, sinceMs: number, maxFlags: number): Promise<LifecycleSnapshot>;
  /** Projects in id order after `afterId` (null: from the start), at most `limit`: the daily job's pages. */
  projects(afterId: string | null, limit: number): Promise<Array<ProjectScope & { thresholds: LifecycleThresholds }>>;
  /** The stage the job last saw per flag id. */
  recordedStages(scope: ProjectScope): Promise<Map<string, FlagLifecycleStage>>;
  /**
   * Records `stage` for the flag in one transaction, when it differs from the one recorded (the
   * row locked): `then` runs in that transaction with its repositories and the previous stage
   * (null: none recorded), so what it writes commits with the stage. False: already recorded.
   */
  moveStage(scope: ProjectScope, flagId: string, stage: FlagLifecycleStage, then: (repos: Repositories, previous: FlagLifecycleStage | null) => Promise<void>): Promise<boolean>;
}
