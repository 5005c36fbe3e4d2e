import { CLEANUP_STAGES, DAY_MS, projectLifecycle, type AuditActor, type ExclusiveLock, type FlagLifecycleRepository } from '@switchyard/core';
import { recordChange } from '../audit/audit-trail.ts';
import { PeriodicRuns } from '../maintenance/periodic-runs.ts';
import { MAX_LIFECYCLE_FLAGS } from './insights-service.ts';

/** The change-history action of a flag entering a cleanup stage (docs/insights.md "The daily job"). */
export const LIFECYCLE_STAGE_CHANGED_ACTION = 'flag.lifecycle_stage_changed';
export const LIFECYCLE_ACTOR: AuditActor = Object.freeze({ type: 'system', id: 'lifecycle' }) as AuditActor;
export const DEFAULT_LIFECYCLE_INTERVAL_MS = DAY_MS;
const PROJECTS_PER_PAGE = 100;

export interface FlagLifecycleJobOptions {
  /** Pause between runs (default a day; INSIGHTS_LIFECYCLE_INTERVAL_MS). */
  intervalMs?: number;
  /** Delay of the first run after start (default: one minute, or the interval when shorter). */
  firstRunAfterMs?: number;
  log?: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
  now?: () => number;
}

/** What one run did. */
export interface LifecycleRunReport {
  projects: number;
  /** Flags whose recorded stage changed (any stage). */
  moved: number;
  /** flag.lifecycle_stage_changed entries recorded (entries into a cleanup stage). */
  announced: number;
}

/**
 * The daily lifecycle job (docs/insights.md "The daily job"): one instance at a time (an
 * ExclusiveLock, a PostgreSQL advisory lock, as the pruner); every project in pages of 100, its
 * stages computed as the lifecycle route does, compared with the stage recorded per flag
 * (flag_lifecycle_stages). A flag whose stage differs gets the new one recorded; when it enters
 * `ready_for_code_removal` or `ready_to_archive`, the same transaction records a change-history
 * entry `flag.lifecycle_stage_changed` (details {stage, previous_stage}; previous_stage null the
 * first time the flag is seen) by the system actor `lifecycle`, and with it its webhook
 * deliveries. A flag staying in its stage records nothing, so each entry is made once.
 */
export class FlagLifecycleJob {
  readonly intervalMs: number;
  private readonly log: NonNullable<FlagLifecycleJobOptions['log']>;
  private readonly now: () => number;
  private readonly runs: PeriodicRuns<LifecycleRunReport | null>;

  constructor(
    private readonly repository: FlagLifecycleRepository,
    private readonly lock: ExclusiveLock,
    options: FlagLifecycleJobOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? DEFAULT_LIFECYCLE_INTERVAL_MS;
    this.log = options.log ?? (() => {});
    this.now = options.now ?? Date.now;
    if (!(this.intervalMs > 0)) throw new RangeError('intervalMs must be positive');
    this.runs = new PeriodicRuns(() => this.run(), {
      intervalMs: this.intervalMs,
      firstRunAfterMs: options.firstRunAfterMs ?? Math.min(this.intervalMs, 60_000),
      onError: (error) => this.log('warn', 'flag lifecycle: run failed; next run at the next interval', { err: { message: (error as Error).message } }),
    });
  }

  start(): void {
    this.runs.start();
  }

  /** No more scheduled runs; runOnce still runs (tests drive it). */
  unschedule(): void {
    this.runs.unschedule();
  }

  stop(): Promise<void> {
    return this.runs.stop();
  }

  /** One run, now; null when another instance holds the lock. */
  runOnce(): Promise<LifecycleRunReport | null> {
    return this.runs.runOnce();
  }

  private get stopping(): boolean {
    return this.runs.stopping;
  }

  private async run(): Promise<LifecycleRunReport | null> {
    const outcome = await this.lock.tryRun(async () => {
      const report: LifecycleRunReport = { projects: 0, moved: 0, announced: 0 };
      let afterId: string | null = null;
      while (!this.stopping) {
        const page = await this.repository.projects(afterId, PROJECTS_PER_PAGE);
        for (const project of page) {
          if (this.stopping) break;
          const scope = { orgId: project.orgId, projectId: project.projectId };
          const nowMs = this.now();
          const [snapshot, recorded] = await Promise.all([
            this.repository.snapshot(scope, nowMs - project.thresholds.statusWindowDays * DAY_MS, MAX_LIFECYCLE_FLAGS),
            this.repository.recordedStages(scope),
          ]);
          const lifecycle = projectLifecycle(snapshot, nowMs, project.thresholds);
          report.projects++;
          for (const flag of lifecycle.flags) {
            if (recorded.get(flag.id) === flag.stage) continue;
            const moved = await this.repository.moveStage(scope, flag.id, flag.stage, async (tx, previous) => {
              if (!CLEANUP_STAGES.includes(flag.stage)) return;
              await recordChange(
                tx,
                LIFECYCLE_ACTOR,
                { orgId: scope.orgId, action: LIFECYCLE_STAGE_CHANGED_ACTION, resourceType: 'flag', resourceId: flag.key, projectId: scope.projectId, details: { stage: flag.stage, previous_stage: previous } },
                nowMs,
              );
              report.announced++;
            });
            if (moved) report.moved++;
          }
        }
        if (page.length < PROJECTS_PER_PAGE) break;
        afterId = page[page.length - 1]!.projectId;
      }
      return report;
    });
    if (!outcome.ran) {
      this.log('info', 'flag lifecycle: another instance holds the lock; skipped');
      return null;
    }
    if (outcome.value.announced > 0) this.log('info', 'flag lifecycle: flags entered a cleanup stage', { ...outcome.value });
    return outcome.value;
  }
}
