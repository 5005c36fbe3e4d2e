/**
 * Runs a body in at most one instance at a time (a PostgreSQL advisory lock in production). A
 * caller that finds the lock held does not wait: it skips, since another instance does the work.
 */
export interface ExclusiveLock {
  /** Runs `body` holding the lock and returns `{ran: true, value}`, or `{ran: false}` at once when it is held elsewhere. */
  tryRun<T>(body: () => Promise<T>): Promise<{ ran: true; value: T } | { ran: false }>;
}
