/**
 * How long calls in flight (gRPC calls, REST requests) get to finish when a server stops, before
 * what is left is cancelled and its connections closed.
 */
export const SHUTDOWN_GRACE_MS = 5_000;

/**
 * The order in which a server's parts stop, written once as a list (`order`), whatever order they
 * were started in. A part that never started (startup failed before it) is skipped; a part whose
 * stop fails is reported and the rest still stop; each part stops at most once.
 */
export class ShutdownSequence<Step extends string> {
  private readonly stops = new Map<Step, () => Promise<void>>();

  constructor(private readonly order: readonly Step[]) {}

  /** Registers how `step` stops; called once the part has started. */
  add(step: Step, stop: () => Promise<void>): void {
    this.stops.set(step, stop);
  }

  /** Stops every registered part in the order of the list, one after the other. */
  async run(onError: (step: Step, error: unknown) => void): Promise<void> {
    for (const step of this.order) {
      const stop = this.stops.get(step);
      if (!stop) continue;
      this.stops.delete(step);
      try {
        await stop();
      } catch (error) {
        onError(step, error);
      }
    }
  }
}
