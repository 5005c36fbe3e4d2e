import { isDomainError, type ChangeNotifier, type Repositories, type ScheduledChange } from '@switchyard/core';
import { recordChange } from '../audit/audit-trail.ts';
import { DEFINITIONS_CHANGED_CHANNEL, encodeChange } from '../flags/definition-events.ts';
import { writeFlagOperations } from '../flags/flag-operations-write.ts';
import { NO_METRICS, type ServiceMetrics } from '../metrics.ts';
import { runDueChangeRequest, type ScheduledRequestOutcome } from '../workflow/scheduled-request-runner.ts';
import { SCHEDULER_ACTOR, schedulerMayStillWrite, toScheduledChangeRecord } from './scheduled-change-service.ts';

export interface ScheduledChangeWorkerOptions {
  /** Pause between looks for due schedules (SCHEDULES_POLL_MS, default 5 s). */
  pollMs?: number;
  /** Schedules applied in one pass at most before the next pause (a bound on one pass's work). */
  maxPerPass?: number;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  now?: () => number;
  /** Applications by outcome and their lateness (switchyard_scheduler_* in hosts/server). */
  metrics?: Pick<ServiceMetrics, 'scheduledApplication'>;
}

/** How one due schedule ended. */
export interface ScheduledChangeOutcome {
  change: ScheduledChange;
  applied: boolean;
}

const DEFAULTS = { pollMs: 5_000, maxPerPass: 100 };

/**
 * Applies due scheduled changes (docs/workflow.md "Scheduled changes"). Each schedule is
 * claimed (FOR UPDATE SKIP LOCKED) in the unit of work that applies it and ends it, so any number
 * of workers in any number of services processes share the queue and never apply one twice, and a
 * crash in the middle leaves it pending (nothing committed) for the next look.
 *
 * Inside that unit of work, in a savepoint: the party who scheduled it must still be allowed to
 * write there, then writeFlagOperations applies the operations exactly as a person's write
 * (actor `{type: 'system', id: 'scheduler'}`, details naming who scheduled it and the schedule).
 * A refusal (a conflict, a rule gone, a state the flag routes refuse, the scheduler's rights gone)
 * undoes the savepoint, so nothing of the change is written, and marks the schedule failed with the
 * reason and a `scheduled_change.fail` entry. A concurrent write to the flag (ABORTED) or an error
 * that is not the domain's (the database away) undoes everything: the schedule stays pending and
 * is tried again. Applied changes are announced after commit so evaluation and sync streams update.
 *
 * The same loop applies change requests scheduled for a time (runDueRequests, after the due
 * schedules of each pass): see runDueChangeRequest.
 */
export class ScheduledChangeWorker {
  readonly pollMs: number;
  private readonly maxPerPass: number;
  private readonly log: NonNullable<ScheduledChangeWorkerOptions['log']>;
  private readonly now: () => number;
  private readonly metrics: Pick<ServiceMetrics, 'scheduledApplication'>;
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<unknown> | null = null;
  private stopping = false;

  constructor(
    private readonly repos: Repositories,
    private readonly notifier: ChangeNotifier,
    options: ScheduledChangeWorkerOptions = {},
  ) {
    this.pollMs = options.pollMs ?? DEFAULTS.pollMs;
    this.maxPerPass = options.maxPerPass ?? DEFAULTS.maxPerPass;
    this.log = options.log ?? (() => {});
    this.now = options.now ?? Date.now;
    this.metrics = options.metrics ?? NO_METRICS;
  }

  start(): void {
    if (this.stopping || this.timer !== null || this.current !== null) return;
    this.loop(0);
  }

  /** Stops polling and waits for the pass in progress. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.current;
  }

  private loop(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.timer = null;
      this.current = this.runDue()
        .then(() => this.runDueRequests())
        .catch((error: unknown) => this.log('error', 'schedules: pass failed', { error: (error as Error).message }))
        .finally(() => {
          this.current = null;
          if (!this.stopping) this.loop(this.pollMs);
        });
    }, delayMs);
    this.timer.unref();
  }

  /** Applies due schedules until none is left (or maxPerPass); returns how each ended. */
  runDue(): Promise<ScheduledChangeOutcome[]> {
    return this.drain(() => this.runNext());
  }

  /** Applies (or marks conflicted) due scheduled change requests until none is left (or maxPerPass). */
  runDueRequests(): Promise<ScheduledRequestOutcome[]> {
    return this.drain(() => this.runNextRequest());
  }

  /** Takes `next` until it finds nothing due, the worker stops, or maxPerPass is reached. */
  private async drain<T>(next: () => Promise<T | null>): Promise<T[]> {
    const outcomes: T[] = [];
    while (!this.stopping && outcomes.length < this.maxPerPass) {
      const outcome = await next();
      if (!outcome) break;
      outcomes.push(outcome);
    }
    return outcomes;
  }

  /** Claims and applies (or marks conflicted) one due scheduled change request; null when none is due and unclaimed. */
  async runNextRequest(): Promise<ScheduledRequestOutcome | null> {
    const outcome = await runDueChangeRequest(this.repos, this.now);
    if (outcome === null) return null;
    const { request } = outcome;
    const lateMs = Math.max(0, (request.updatedAtMs ?? 0) - (request.executeAtMs ?? request.updatedAtMs));
    this.metrics.scheduledApplication('change_request', outcome.applied ? 'applied' : 'conflicted', lateMs / 1000);
    if (outcome.applied) {
      this.log('info', 'schedules: change request applied', { change_request_id: request.id, late_ms: lateMs });
      await this.notifier.publish(DEFINITIONS_CHANGED_CHANNEL, encodeChange({ environmentId: request.environmentId }));
    } else {
      this.log('warn', 'schedules: change request conflicted', { change_request_id: request.id, reason: request.conflict });
    }
    return outcome;
  }

  /** Claims and applies (or fails) one due schedule; null when none is due and unclaimed. */
  async runNext(): Promise<ScheduledChangeOutcome | null> {
    const outcome = await this.repos.unitOfWork.run(async (tx): Promise<ScheduledChangeOutcome | null> => {
      const change = await tx.scheduledChanges.claimDue(this.now());
      if (!change) return null;
      const atMs = this.now();
      const environment = { orgId: change.orgId, projectId: change.projectId, environmentId: change.environmentId };
      const details = {
        scheduled_change_id: change.id,
        scheduled_by: change.createdBy,
        execute_at_ms: change.executeAtMs,
        applied_at_ms: atMs,
        late_ms: Math.max(0, atMs - change.executeAtMs),
        ...(change.comment === '' ? {} : { schedule_comment: change.comment }),
      };
      let reason: string | null = null;
      try {
        await tx.unitOfWork.run(async (inner) => {
          const refusal = await schedulerMayStillWrite(inner, change, atMs);
          if (refusal !== null) {
            reason = refusal;
            throw new Refused();
          }
          await writeFlagOperations(inner, { environment, flagKey: change.flagKey, operations: change.operations, acting: SCHEDULER_ACTOR, action: 'flag.scheduled_change', details }, atMs);
        });
      } catch (error) {
        if (error instanceof Refused) {
          // reason set above
        } else if (isDomainError(error) && error.code !== 'ABORTED' && error.code !== 'UNAVAILABLE') {
          reason = error.message;
        } else {
          throw error;
        }
      }
      if (reason === null) {
        const applied = (await tx.scheduledChanges.finish(change.id, { status: 'applied', reason: null, atMs, appliedAtMs: atMs }))!;
        return { change: applied, applied: true };
      }
      const failed = (await tx.scheduledChanges.finish(change.id, { status: 'failed', reason, atMs, appliedAtMs: atMs }))!;
      await recordChange(
        tx,
        SCHEDULER_ACTOR,
        {
          orgId: change.orgId,
          action: 'scheduled_change.fail',
          resourceType: 'scheduled_change',
          resourceId: change.id,
          projectId: change.projectId,
          environmentId: change.environmentId,
          before: toScheduledChangeRecord(change),
          after: toScheduledChangeRecord(failed),
          details: { ...details, flag_key: change.flagKey, reason },
        },
        atMs,
      );
      return { change: failed, applied: false };
    });
    if (outcome === null) return null;
    const { change } = outcome;
    this.metrics.scheduledApplication('scheduled_change', outcome.applied ? 'applied' : 'failed', Math.max(0, (change.appliedAtMs ?? change.executeAtMs) - change.executeAtMs) / 1000);
    if (outcome.applied) {
      this.log('info', 'schedules: applied', { scheduled_change_id: change.id, flag_key: change.flagKey, late_ms: (change.appliedAtMs ?? 0) - change.executeAtMs });
      await this.notifier.publish(DEFINITIONS_CHANGED_CHANNEL, encodeChange({ environmentId: change.environmentId }));
    } else {
      this.log('warn', 'schedules: failed', { scheduled_change_id: change.id, flag_key: change.flagKey, reason: change.reason });
    }
    return outcome;
  }
}

class Refused extends Error {}
