import {
  applyContextBinding,
  exposureRuleOf,
  invalidArgument,
  type EnvironmentScope,
  type ParameterValue,
  type Principal,
  type Repositories,
} from '@switchyard/core';
import type { DefinitionSnapshots, EnvironmentSnapshot } from '../evaluation/definition-snapshots.ts';
import { isClientVisible } from './client-visibility.ts';
import type { EvaluationService } from '../evaluation/evaluation-service.ts';
import type { EventDefinitionCache } from '../events/event-definition-cache.ts';
import {
  MAX_CONTEXT_KEY_LENGTH,
  MAX_CONTEXT_TYPE_LENGTH,
  Rejections,
  checkEvent,
  isProblem,
  textProblem,
  type EventRow,
  type ExposureRow,
  type IncomingEvent,
  type IncomingExposure,
  type IngestAnswer,
  type Problem,
} from '../events/event-validation.ts';
import type { ContextBinding, ContextTokenVerifier } from './context-token-verifier.ts';

/** Most exposures (or events) a client key sends in one request (docs/client-side.md "5. Exposures and events"). */
export const MAX_CLIENT_ENTRIES = 100;
/** A client's timestamp is clamped into receipt time ± this (a browser's clock is the client's). */
export const CLIENT_CLOCK_WINDOW_MS = 5 * 60_000;
/** Exposures remembered for deduplication on one instance (cleared when full). */
const MAX_REMEMBERED_EXPOSURES = 200_000;

/** A client exposure entry: the body of docs/contract.md, plus the context's attributes as evaluated. */
export interface ClientExposure extends IncomingExposure {
  attributes?: unknown;
}

export interface ClientIngestGuardDeps {
  tokens: ContextTokenVerifier;
  snapshots: Pick<DefinitionSnapshots, 'get'>;
  /** Evaluation that records nothing (no exposure recorder): the server's own answer for a context. */
  recheck: Pick<EvaluationService, 'evaluate'>;
  definitions: Pick<EventDefinitionCache, 'clientAllowed' | 'types'>;
  repos: Pick<Repositories, 'experiments'>;
}

/** Receipt time for none; else the client's time, clamped into receipt ± CLIENT_CLOCK_WINDOW_MS. */
function clampedTimestamp(value: unknown, receivedAtMs: number): number | null {
  if (value === undefined || value === null || value === 0) return receivedAtMs;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) return null;
  return Math.min(receivedAtMs + CLIENT_CLOCK_WINDOW_MS, Math.max(receivedAtMs - CLIENT_CLOCK_WINDOW_MS, value));
}

function scalarAttributes(value: unknown): Record<string, ParameterValue> | null {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) return null;
  const attributes: Record<string, ParameterValue> = {};
  for (const [name, attribute] of Object.entries(value)) {
    if (typeof attribute === 'string' || typeof attribute === 'number' || typeof attribute === 'boolean') attributes[name] = attribute;
  }
  return attributes;
}

/**
 * What a client key (a browser, an app) may write (docs/client-side.md "5. Exposures and events"):
 * its key is public, so nothing it sends is trusted beyond what the server can check itself.
 *
 * Exposures: at most MAX_CLIENT_ENTRIES; each only for a client-visible flag under an ACTIVE
 * experiment, for the signed context when the key requires signing, and for the variant the
 * server's own evaluation of that context gives under the current definitions (a client cannot
 * pick its arm); timestamps clamped to receipt ± 5 min; one exposure per (context, flag, variant,
 * iteration) per instance. Events: only client_allowed definitions, same binding, clamp and cap.
 */
export class ClientIngestGuard {
  /** Exposures accepted lately: `env \0 type \0 key \0 flag \0 variant \0 iteration`. */
  private readonly seen = new Set<string>();
  /** Per snapshot: the running iteration of each flag under an ACTIVE experiment. */
  private readonly iterations = new WeakMap<EnvironmentSnapshot, Promise<ReadonlyMap<string, string>>>();

  constructor(private readonly deps: ClientIngestGuardDeps) {}

  /**
   * The checks of a client request that come before its Idempotency-Key is looked up: a repeat
   * answers the first answer without judging the entries, so the cap and the token must not wait
   * for that judgement (a replay without the token would otherwise be answered).
   * @throws INVALID_ARGUMENT above MAX_CLIENT_ENTRIES; UNAUTHENTICATED/PERMISSION_DENIED for the token.
   */
  async admitRepeat(principal: Principal, count: number, what: string, contextToken: string | undefined): Promise<void> {
    checkClientCount(count, what);
    await this.deps.tokens.bind(principal, contextToken);
  }

  /** @throws INVALID_ARGUMENT above MAX_CLIENT_ENTRIES; UNAUTHENTICATED/PERMISSION_DENIED for the token. */
  async exposures(
    principal: Principal,
    scope: EnvironmentScope,
    exposures: readonly ClientExposure[],
    receivedAtMs: number,
    contextToken: string | undefined,
  ): Promise<{ rows: ExposureRow[]; answer: IngestAnswer }> {
    checkClientCount(exposures.length, 'exposures');
    const binding = await this.deps.tokens.bind(principal, contextToken);
    const snapshot = await this.deps.snapshots.get(scope);
    const iterations = await this.iterationsOf(scope, snapshot);
    const rows: ExposureRow[] = [];
    const rejected = new Rejections();
    const keys: string[] = [];
    for (const [index, exposure] of exposures.entries()) {
      const row = await this.checkExposure(scope, snapshot, iterations, binding, exposure, receivedAtMs);
      if (isProblem(row)) {
        rejected.add(index, exposure.flag_key, row);
        continue;
      }
      const key = [scope.environmentId, row.contextType, row.contextKey, row.flagKey, row.variantKey, iterations.get(row.flagKey)].join('\u0000');
      if (this.seen.has(key) || keys.includes(key)) continue; // counted once: accepted, not stored again
      keys.push(key);
      rows.push(row);
    }
    if (this.seen.size + keys.length > MAX_REMEMBERED_EXPOSURES) this.seen.clear();
    for (const key of keys) this.seen.add(key);
    return { rows, answer: rejected.answer(rows.length) };
  }

  /** @throws INVALID_ARGUMENT above MAX_CLIENT_ENTRIES; UNAUTHENTICATED/PERMISSION_DENIED for the token. */
  async events(
    principal: Principal,
    scope: EnvironmentScope,
    events: readonly IncomingEvent[],
    receivedAtMs: number,
    contextToken: string | undefined,
  ): Promise<{ rows: EventRow[]; answer: IngestAnswer }> {
    checkClientCount(events.length, 'events');
    const binding = await this.deps.tokens.bind(principal, contextToken);
    const [types, allowed] = await Promise.all([this.deps.definitions.types(scope), this.deps.definitions.clientAllowed(scope)]);
    // A definition not marked client_allowed is as unknown as a missing one (a public key learns nothing of the others).
    const rules = { typeOf: (key: string) => (allowed.has(key) ? types.get(key) : undefined), timestamp: clampedTimestamp };
    const rows: EventRow[] = [];
    const rejected = new Rejections();
    events.forEach((event, index) => {
      const checked = checkEvent(event, rules, receivedAtMs);
      if (isProblem(checked)) return rejected.add(index, event.metric_key, checked);
      if (binding !== null && checked.contextKey !== binding.claims.targetingKey) return rejected.add(index, event.metric_key, { reason: 'context_mismatch' });
      rows.push(checked);
    });
    return { rows, answer: rejected.answer(rows.length) };
  }

  private async checkExposure(
    scope: EnvironmentScope,
    snapshot: EnvironmentSnapshot,
    iterations: ReadonlyMap<string, string>,
    binding: ContextBinding | null,
    exposure: ClientExposure,
    receivedAtMs: number,
  ): Promise<ExposureRow | Problem> {
    // 1. a client-visible flag under an ACTIVE experiment (a hidden flag is as absent as a missing one)
    const keyProblem = textProblem(exposure.flag_key, 'flag_key');
    if (keyProblem !== null) return keyProblem;
    const flagKey = exposure.flag_key as string;
    const flag = snapshot.flags.get(flagKey);
    if (flag === undefined || !isClientVisible(flag)) return { reason: 'unknown_flag' };
    if (!iterations.has(flagKey)) return { reason: 'no_active_experiment' };
    const fieldProblem =
      textProblem(exposure.variant_key, 'variant_key') ??
      textProblem(exposure.context_type, 'context_type', MAX_CONTEXT_TYPE_LENGTH) ??
      textProblem(exposure.context_key, 'context_key', MAX_CONTEXT_KEY_LENGTH);
    if (fieldProblem !== null) return fieldProblem;
    const variantKey = exposure.variant_key as string;
    const contextType = exposure.context_type as string;
    const contextKey = exposure.context_key as string;
    const timestampMs = clampedTimestamp(exposure.timestamp_ms, receivedAtMs);
    if (timestampMs === null) return { reason: 'invalid_field', field: 'timestamp_ms' };
    const attributes = scalarAttributes(exposure.attributes);
    if (attributes === null) return { reason: 'invalid_field', field: 'attributes' };
    // 2. the signed context: its targeting key, and (context mode) its attributes over the entry's
    let context = { key: contextKey as string | undefined, parameters: attributes };
    if (binding !== null) {
      const bound = applyContextBinding(binding.mode, binding.claims, context);
      if (bound === null) return { reason: 'context_mismatch' };
      context = bound;
    }
    // 3. the variant the server itself serves that context now (never "unknown_variant": a public
    //    key learns the variant it is served, not the flag's list)
    //    and the rule whose allocation served it (a client's own rule_id is not taken on trust)
    let ruleId: string;
    try {
      const [result] = await this.deps.recheck.evaluate(scope, { contexts: [{ key: context.key!, context_type: contextType, parameters: context.parameters }], flagKey });
      if (result === undefined || !result.is_enabled || result.variant_key === '' || result.variant_key !== variantKey) return { reason: 'variant_not_served' };
      ruleId = exposureRuleOf(result);
    } catch {
      return { reason: 'invalid_context' }; // a context evaluation refuses (too long, too many attributes) exposes nothing
    }
    return { flagKey, variantKey, contextType, contextKey: context.key!, timestampMs, ruleId };
  }

  /** The running iteration (its id) of each flag under an ACTIVE experiment, read once per snapshot. */
  private iterationsOf(scope: EnvironmentScope, snapshot: EnvironmentSnapshot): Promise<ReadonlyMap<string, string>> {
    let known = this.iterations.get(snapshot);
    if (known === undefined) {
      known = (async () => {
        const active = (await this.deps.repos.experiments.list(scope)).filter((experiment) => experiment.status === 'EXPERIMENT_STATUS_ACTIVE' && snapshot.experimentFlagKeys.has(experiment.flagKey));
        const running = new Map<string, string>();
        for (const experiment of active) {
          const iterations = await this.deps.repos.experiments.listIterations(scope, experiment.id);
          const current = iterations.find((iteration) => iteration.endedAtMs === 0) ?? iterations.at(-1);
          running.set(experiment.flagKey, current?.id ?? experiment.id);
        }
        return running;
      })();
      this.iterations.set(snapshot, known);
      known.catch(() => this.iterations.delete(snapshot));
    }
    return known;
  }
}

function checkClientCount(count: number, what: string): void {
  if (count > MAX_CLIENT_ENTRIES) throw invalidArgument(`a client key sends at most ${MAX_CLIENT_ENTRIES} ${what} per request (got ${count})`, what);
}
