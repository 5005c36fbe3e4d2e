/**
 * The schedule of a background job that runs now and then (the pruner, the lifecycle job): the
 * first run after `firstRunAfterMs`, then each run `intervalMs` after the previous one ENDED (runs
 * never overlap on one instance); a failed run is logged and the next one comes at the next
 * interval. Its timers never keep the process alive.
 */
export class PeriodicRuns<T> {
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<T> | null = null;
  private scheduling = true;
  /** Set by stop(): a run in progress reads it to end after its current step. */
  stopping = false;

  constructor(
    private readonly run: () => Promise<T>,
    private readonly options: { intervalMs: number; firstRunAfterMs: number; onError: (error: unknown) => void },
  ) {}

  start(): void {
    if (this.stopping || this.timer !== null) return;
    this.schedule(this.options.firstRunAfterMs);
  }

  /** No more runs on the schedule; runOnce still runs (tests drive it without racing a scheduled run). */
  unschedule(): void {
    this.scheduling = false;
    this.clearTimer();
  }

  /** Stops scheduling, lets `interrupt` wake a run that waits, and waits for a run in progress. */
  async stop(interrupt?: () => void): Promise<void> {
    this.stopping = true;
    this.clearTimer();
    interrupt?.();
    await this.current?.catch(() => {});
  }

  /** One run, now (remembered, so stop() waits for it). */
  runOnce(): Promise<T> {
    const run = this.run();
    this.current = run;
    return run.finally(() => {
      if (this.current === run) this.current = null;
    });
  }

  private clearTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(delayMs: number): void {
    if (!this.scheduling) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.runOnce()
        .catch(this.options.onError)
        .finally(() => {
          if (!this.stopping && this.scheduling) this.schedule(this.options.intervalMs);
        });
    }, delayMs);
    this.timer.unref();
  }
}
