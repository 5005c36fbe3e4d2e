import type { ExclusiveLock } from '../ports/maintenance-ports.ts';

/**
 * ExclusiveLock in one process: locks sharing a `held` set exclude each other, as instances do on
 * one PostgreSQL advisory lock. Behaves as PgAdvisoryLock does; both run the same contract suite.
 */
export class InMemoryExclusiveLock implements ExclusiveLock {
  constructor(
    private readonly name: string,
    private readonly held: Set<string> = new Set(),
  ) {}

  async tryRun<T>(body: () => Promise<T>): Promise<{ ran: true; value: T } | { ran: false }> {
    if (this.held.has(this.name)) return { ran: false };
    this.held.add(this.name);
    try {
      return { ran: true, value: await body() };
    } finally {
      this.held.delete(this.name);
    }
  }
}
