import type { LoginThrottleRepository } from '../ports/session-ports.ts';
import type { InMemoryState } from './in-memory-state.ts';

/** LoginThrottleRepository over the shared in-memory tables: one row per failure, as in `login_failures`. */
export class InMemoryLoginThrottleRepository implements LoginThrottleRepository {
  constructor(private readonly state: InMemoryState) {}

  async recordFailure(subjects: string[], nowMs: number): Promise<void> {
    for (const subject of new Set(subjects)) this.state.loginFailures.push({ subject, atMs: nowMs });
  }

  async failuresSince(subjects: string[], sinceMs: number): Promise<Array<{ subject: string; count: number; oldestAtMs: number }>> {
    return [...new Set(subjects)].map((subject) => {
      const times = this.state.loginFailures.filter((f) => f.subject === subject && f.atMs >= sinceMs).map((f) => f.atMs);
      // No failures: oldestAtMs = sinceMs, so a Retry-After derived from it is 0 (see the port).
      return { subject, count: times.length, oldestAtMs: times.length === 0 ? sinceMs : Math.min(...times) };
    });
  }

  async newestFailures(subject: string, sinceMs: number, limit: number): Promise<number[]> {
    return this.state.loginFailures
      .filter((f) => f.subject === subject && f.atMs >= sinceMs)
      .map((f) => f.atMs)
      .sort((a, b) => b - a)
      .slice(0, Math.max(0, limit));
  }

  async forgetOne(subjects: string[], atMs: number): Promise<void> {
    for (const subject of new Set(subjects)) {
      const index = this.state.loginFailures.findIndex((f) => f.subject === subject && f.atMs === atMs);
      if (index >= 0) this.state.loginFailures.splice(index, 1);
    }
  }

  async pruneOlderThan(beforeMs: number, limit: number): Promise<number> {
    const old = this.state.loginFailures
      .filter((failure) => failure.atMs < beforeMs)
      .sort((a, b) => a.atMs - b.atMs)
      .slice(0, Math.max(0, limit));
    const gone = new Set(old);
    const kept = this.state.loginFailures.filter((failure) => !gone.has(failure));
    this.state.loginFailures.splice(0, this.state.loginFailures.length, ...kept);
    return old.length;
  }

  async clear(subject: string, beforeMs: number): Promise<void> {
    const kept = this.state.loginFailures.filter((f) => f.subject !== subject && f.atMs >= beforeMs);
    this.state.loginFailures.splice(0, this.state.loginFailures.length, ...kept);
  }
}
