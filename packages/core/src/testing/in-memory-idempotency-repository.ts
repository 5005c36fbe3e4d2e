import type { DrainedCounts } from '../insights/evaluation-counter.ts';
import type { IdempotencyRepository, IdempotentRows } from '../ports/event-ports.ts';
import type { EnvironmentScope } from '../ports/scopes.ts';
import type { InMemoryState } from './in-memory-state.ts';

/** Answers go through JSON as they do through jsonb, so the fake returns what PostgreSQL would. */
const viaJson = (value: unknown): unknown => (value === undefined ? null : JSON.parse(JSON.stringify(value)));

/** Idempotency-Key answers in memory; an answer with `expiresAtMs <= nowMs` counts as absent. */
export class InMemoryIdempotencyRepository implements IdempotencyRepository {
  private readonly state: InMemoryState;

  constructor(state: InMemoryState) {
    this.state = state;
  }

  async get(scope: EnvironmentScope, key: string, nowMs: number): Promise<unknown | null> {
    if (!this.state.hasEnvironment(scope)) return null;
    const stored = this.state.idempotency.get(`${scope.environmentId}/${key}`);
    return stored && stored.expiresAtMs > nowMs ? viaJson(stored.answer) : null;
  }

  async putIfAbsent(
    scope: EnvironmentScope,
    key: string,
    answer: unknown,
    expiresAtMs: number,
    nowMs: number = Date.now(),
  ): Promise<unknown> {
    this.state.requireEnvironment(scope);
    const id = `${scope.environmentId}/${key}`;
    const stored = this.state.idempotency.get(id);
    if (stored && stored.expiresAtMs > nowMs) return viaJson(stored.answer);
    const answerAsStored = viaJson(answer);
    this.state.idempotency.set(id, { answer: answerAsStored, expiresAtMs });
    return viaJson(answerAsStored);
  }

  /** No await between the check and the writes: one JS turn is the fake's transaction. */
  async storeOnce(
    scope: EnvironmentScope,
    key: string,
    rows: IdempotentRows,
    answer: unknown,
    expiresAtMs: number,
    nowMs: number = Date.now(),
  ): Promise<{ answer: unknown; stored: boolean }> {
    this.state.requireEnvironment(scope);
    const id = `${scope.environmentId}/${key}`;
    const stored = this.state.idempotency.get(id);
    if (stored && stored.expiresAtMs > nowMs) return { answer: viaJson(stored.answer), stored: false };
    const receivedAtMs = Date.now();
    const tenant = { orgId: scope.orgId, environmentId: scope.environmentId, receivedAtMs };
    for (const event of rows.events ?? []) this.state.events.push({ ...event, ...tenant });
    for (const exposure of rows.exposures ?? []) this.state.exposures.push({ ...exposure, ...tenant });
    const answerAsStored = viaJson(answer);
    this.state.idempotency.set(id, { answer: answerAsStored, expiresAtMs });
    return { answer: viaJson(answerAsStored), stored: true };
  }

  /**
   * The claims as PostgreSQL makes them, one per environment the report names; the fake keeps no
   * counts (there is no in-memory insights store) and answers how many of the report's counts are
   * in the environments it claimed (flag keys are not checked).
   */
  async storeCountsOnce(key: string, report: Pick<DrainedCounts, 'counts' | 'lastEvaluated'>, expiresAtMs: number, nowMs: number = Date.now()): Promise<number> {
    const claimed = new Set<string>();
    for (const row of [...report.counts, ...report.lastEvaluated]) {
      const id = `${row.environmentId}/${key}`;
      if (claimed.has(row.environmentId) || !this.state.hasEnvironment(row)) continue;
      const stored = this.state.idempotency.get(id);
      if (stored && stored.expiresAtMs > nowMs) continue;
      this.state.idempotency.set(id, { answer: true, expiresAtMs });
      claimed.add(row.environmentId);
    }
    return report.counts.filter((c) => claimed.has(c.environmentId) && c.count > 0).length;
  }

  async pruneExpired(nowMs: number, limit: number): Promise<number> {
    const expired = [...this.state.idempotency.entries()]
      .filter(([, stored]) => stored.expiresAtMs <= nowMs)
      .sort(([, a], [, b]) => a.expiresAtMs - b.expiresAtMs)
      .slice(0, Math.max(0, limit));
    for (const [id] of expired) this.state.idempotency.delete(id);
    return expired.length;
  }
}
