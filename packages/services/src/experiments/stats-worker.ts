import { isDomainError, type Repositories, type StatsJob } from '@switchyard/core';
import { NO_METRICS, type ServiceMetrics, type StatsJobOutcome } from '../metrics.ts';
import { DEFAULT_STATS_INTERVAL_MS, type ResultsComputation } from './results-computer.ts';

/** Timing of a StatsWorker; every field has a production default. */
export interface StatsWorkerOptions {
  /** Pause between looks for claimable jobs when there are none (default 1 s). */
  pollMs?: number;
  /** ACTIVE experiments are recomputed this long after their last results (default 5 min). */
  intervalMs?: number;
  /**
   * A claimed job is the claimer's for this long, renewed every third of it while the computation
   * runs. A worker that crashes stops renewing and another claims the job once it expires.
   */
  leaseMs?: number;
  /** How often the schedule is checked (default: the interval, at most 15 s, at least pollMs). */
  scheduleEveryMs?: number;
  /** Finished jobs are deleted this long after they finished (default 7 days). */
  keepFinishedMs?: number;
  /** A job claimed this many times (each claim after a lost lease) is failed instead of run again. */
  maxAttempts?: number;
  /**
   * Errors after which the job is left to its lease instead of failed (e.g. the database is
   * unreachable): it is claimed again once the lease expires, up to maxAttempts.
   */
  isTransient?: (error: unknown) => boolean;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  now?: () => number;
  /** Told how every claimed job ended and how long it took. */
  metrics?: Pick<ServiceMetrics, 'statsJob'>;
}

const DEFAULTS = {
  pollMs: 1_000,
  leaseMs: 60_000,
  keepFinishedMs: 7 * 24 * 60 * 60_000,
  maxAttempts: 3,
};
const PRUNE_EVERY_MS = 60 * 60_000;

/** The error text a failed job shows: domain messages as they are, anything else generic (no SQL). */
function failureText(error: unknown): string {
  if (isDomainError(error)) return error.message;
  return 'internal error while computing the results (see the server log)';
}

/**
 * Runs stats jobs: claims one at a time (FOR UPDATE SKIP LOCKED, so any number of workers on any
 * number of instances share the queue and never run the same job), computes, then marks the job
 * completed, or failed with a text. Statuses: pending → running → completed | failed.
 *
 * It also keeps the schedule: every `scheduleEveryMs` it enqueues a job for each ACTIVE experiment
 * whose results are older than the interval (StatsScheduleRepository.enqueueDue), and prunes old
 * finished jobs hourly.
 *
 * A crash leaves no job stuck: the lease is renewed only by a live computation, and a running job
 * whose lease passed is claimable again (attempts + 1). After `maxAttempts` claims the job is failed.
 */
export class StatsWorker {
  readonly pollMs: number;
  readonly intervalMs: number;
  readonly leaseMs: number;
  readonly scheduleEveryMs: number;
  private readonly keepFinishedMs: number;
  private readonly maxAttempts: number;
  private readonly isTransient: (error: unknown) => boolean;
  private readonly log: NonNullable<StatsWorkerOptions['log']>;
  private readonly now: () => number;
  private readonly metrics: Pick<ServiceMetrics, 'statsJob'>;
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<void> | null = null;
  private stopping = false;
  private nextScheduleAtMs = 0;
  private nextPruneAtMs = 0;

  constructor(
    private readonly repos: Pick<Repositories, 'statsJobs' | 'statsSchedule'>,
    private readonly computer: ResultsComputation,
    options: StatsWorkerOptions = {},
  ) {
    this.pollMs = options.pollMs ?? DEFAULTS.pollMs;
    this.intervalMs = options.intervalMs ?? DEFAULT_STATS_INTERVAL_MS;
    this.leaseMs = options.leaseMs ?? DEFAULTS.leaseMs;
    this.scheduleEveryMs = options.scheduleEveryMs ?? Math.max(this.pollMs, Math.min(this.intervalMs, 15_000));
    this.keepFinishedMs = options.keepFinishedMs ?? DEFAULTS.keepFinishedMs;
    this.maxAttempts = options.maxAttempts ?? DEFAULTS.maxAttempts;
    this.isTransient = options.isTransient ?? (() => false);
    this.log = options.log ?? (() => {});
    this.now = options.now ?? Date.now;
    this.metrics = options.metrics ?? NO_METRICS;
  }

  /** Starts the loop: a first look at once, then every pollMs after the queue is empty. */
  start(): void {
    if (this.stopping || this.timer !== null || this.current !== null) return;
    this.loop(0);
  }

  /** Stops polling and waits for the job in progress (its result is stored before this resolves). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.current;
  }

  /** Enqueues the due ACTIVE experiments (and prunes old jobs when it is time); returns the new jobs. */
  async schedule(): Promise<StatsJob[]> {
    const nowMs = this.now();
    if (nowMs >= this.nextPruneAtMs) {
      this.nextPruneAtMs = nowMs + PRUNE_EVERY_MS;
      await this.repos.statsSchedule.pruneFinished(nowMs - this.keepFinishedMs);
    }
    const jobs = await this.repos.statsSchedule.enqueueDue(nowMs, this.intervalMs);
    if (jobs.length > 0) this.log('info', 'stats: scheduled recomputations', { jobs: jobs.length });
    return jobs;
  }

  /** Runs claimable jobs until none is left; returns them as they finished. */
  async runPending(): Promise<StatsJob[]> {
    const finished: StatsJob[] = [];
    for (let job = await this.runNext(); job !== null && !this.stopping; job = await this.runNext()) finished.push(job);
    return finished;
  }

  /** Claims and runs one job; null when nothing was claimable. */
  async runNext(): Promise<StatsJob | null> {
    const job = await this.repos.statsJobs.claimNext(this.now(), this.leaseMs);
    if (!job) return null;
    const startedAt = performance.now();
    const ended = (outcome: StatsJobOutcome) => this.metrics.statsJob(outcome, (performance.now() - startedAt) / 1000);
    if (job.attempts > this.maxAttempts) {
      const finished = await this.finish(job, `gave up after ${this.maxAttempts} attempts: the computation never finished (worker stopped or crashed)`);
      ended('failed');
      return finished;
    }
    let lost = false;
    const heartbeat = setInterval(() => {
      this.repos.statsSchedule.renewLease(job.id, job.attempts, this.now(), this.leaseMs).then(
        (held) => {
          lost ||= !held;
        },
        (error: unknown) => this.log('warn', 'stats: lease renewal failed', { job_id: job.id, error: (error as Error).message }),
      );
    }, Math.max(1, Math.floor(this.leaseMs / 3)));
    heartbeat.unref();
    let failure: string | null = null;
    try {
      await this.computer.compute(job.orgId, job.experimentId);
    } catch (error) {
      if (this.isTransient(error)) {
        this.log('warn', 'stats: computation interrupted; the job is retried when its lease expires', { job_id: job.id, error: (error as Error).message });
        ended('interrupted');
        return job;
      }
      failure = failureText(error);
      if (!isDomainError(error)) this.log('error', 'stats: computation failed', { job_id: job.id, error: (error as Error).message });
    } finally {
      clearInterval(heartbeat);
    }
    if (lost) {
      this.log('warn', 'stats: lease lost during the computation; the new claimer finishes the job', { job_id: job.id });
      ended('lease_lost');
      return job;
    }
    const finished = await this.finish(job, failure);
    ended(failure === null ? 'completed' : 'failed');
    return finished;
  }

  /** completed (failure null) or failed; a job re-claimed and finished by another worker meanwhile is left as it is. */
  private async finish(job: StatsJob, failure: string | null): Promise<StatsJob> {
    try {
      return failure === null ? await this.repos.statsJobs.complete(job.id, this.now()) : await this.repos.statsJobs.fail(job.id, failure, this.now());
    } catch (error) {
      if (isDomainError(error) && error.code === 'FAILED_PRECONDITION') return job;
      throw error;
    }
  }

  private loop(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.timer = null;
      this.current = this.tick().finally(() => {
        this.current = null;
        if (!this.stopping) this.loop(this.pollMs);
      });
    }, delayMs);
    // The loop alone never keeps a process alive: stop() is for orderly shutdowns.
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    try {
      if (this.now() >= this.nextScheduleAtMs) {
        this.nextScheduleAtMs = this.now() + this.scheduleEveryMs;
        await this.schedule();
      }
      await this.runPending();
    } catch (error) {
      // A lost database and the like: the next tick tries again; a job claimed meanwhile is
      // re-claimed when its lease expires.
      this.log('warn', 'stats: worker tick failed', { error: (error as Error).message });
    }
  }
}
