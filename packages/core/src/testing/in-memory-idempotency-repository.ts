import type { IdempotencyRepository } from '../ports/event-ports.ts';
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
}
