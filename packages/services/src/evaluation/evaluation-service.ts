import {
  DEFAULT_EVALUATION_BUDGET_MS,
  MAX_ATTRIBUTE_STRING_LENGTH,
  keptFlagForm,
  documentOfCompiled,
  exposureRuleOf,
  evaluateAll,
  evaluateCompiled,
  invalidArgument,
  newOutcomes,
  notFound,
  unknownEvaluationFeatures,
  type CompiledFlag,
  type EnvironmentScope,
  type EvaluationContext,
  type EvaluationCounter,
  type EvaluationResult,
  type Exposure,
  type Flag,
  type Outcomes,
  type ParameterValue,
  type Principal,
  type Repositories,
} from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import { clientBulkFlags, clientFlags, isClientVisible } from '../client/client-visibility.ts';
import { NO_METRICS, type ServiceMetrics } from '../metrics.ts';
import type { DefinitionSnapshots, EnvironmentSnapshot } from './definition-snapshots.ts';

/** The evaluate request (docs/contract.md "Evaluation"): one context (key + type + attributes), optionally one flag. */
export interface EvaluateRequest {
  contexts: EvaluationContext[];
  flagKey?: string | undefined;
}

/**
 * One evaluation: the definitions it read (the snapshot's flag objects, which stay the same object
 * until the flag changes), their results in the same order, and which outcome of its flag each
 * result is (where a transport keeps what it derives from it, core's outcomes.ts).
 */
export interface Evaluation {
  /** The snapshot evaluated against (replaced as a whole by any change of the environment's definitions). */
  snapshot: EnvironmentSnapshot;
  flags: readonly Flag[];
  results: EvaluationResult[];
  outcomes: Outcomes;
}

const MAX_CONTEXTS = 10;

/**
 * The scopes clientScopeFor() handed out, with what of the key's settings changes its answers. An
 * evaluation in such a scope is a client evaluation whichever method is called: only
 * client-visible flags, never an exposure (docs/client-side.md "What a client sees").
 */
const clientScopes = new WeakMap<EnvironmentScope, { includeDisabled: boolean }>();

export interface EvaluationServiceOptions {
  /**
   * Milliseconds one evaluation request may run before the flags still to evaluate answer ERROR
   * (EVALUATION_BUDGET_MS; default core's DEFAULT_EVALUATION_BUDGET_MS; docs/security.md
   * "Evaluation budget per request").
   */
  budgetMs?: number;
  /**
   * Counts every evaluation answered, per (environment, flag, variant, reason) (docs/insights.md
   * "Counting"); absent for an evaluation that answers nobody (the ingest guard's recheck).
   */
  counter?: Pick<EvaluationCounter, 'count'>;
}
const MAX_ATTRIBUTES = 100;

/**
 * Checks SDK-supplied contexts: scalar attributes only, bounded sizes. Runs on every evaluation,
 * so it allocates nothing (plain loops, no entries arrays, no Set for a single context). Every
 * evaluation entry point (REST evaluate, OFREP) goes through here, so the string attribute cap
 * (MAX_ATTRIBUTE_STRING_LENGTH; docs/security.md) holds for all of them.
 */
export function checkContexts(contexts: EvaluationContext[]): EvaluationContext[] {
  if (contexts.length === 0 || contexts.length > MAX_CONTEXTS) throw invalidArgument(`between 1 and ${MAX_CONTEXTS} contexts are required`, 'contexts');
  for (let i = 0; i < contexts.length; i++) {
    const context = contexts[i]!;
    if (typeof context.key !== 'string' || context.key === '' || context.key.length > 1024) throw invalidArgument('context_key must be a non-empty string', i === 0 ? 'context_key' : `contexts[${i}].key`);
    if (typeof context.context_type !== 'string' || context.context_type === '') throw invalidArgument('context_type must be a non-empty string', i === 0 ? 'context_type' : `contexts[${i}].context_type`);
    for (let j = 0; j < i; j++) {
      if (contexts[j]!.context_type === context.context_type) throw invalidArgument(`two contexts of type '${context.context_type}'`, 'contexts');
    }
    let count = 0;
    for (const name in context.parameters) {
      if (!Object.hasOwn(context.parameters, name)) continue;
      if (++count > MAX_ATTRIBUTES) throw invalidArgument(`at most ${MAX_ATTRIBUTES} attributes per context`, 'attributes');
      const value = context.parameters[name];
      const type = typeof value;
      if (type !== 'string' && type !== 'number' && type !== 'boolean') throw invalidArgument(`attributes.${name} must be a string, number or boolean`, `attributes.${name}`);
      if (type === 'string' && (value as string).length > MAX_ATTRIBUTE_STRING_LENGTH) {
        // Named as in the REST body: the first context's attributes, then `contexts[]` for the others.
        const field = i === 0 ? `attributes.${name}` : `contexts[${i - 1}].attributes.${name}`;
        throw invalidArgument(`${field} is ${(value as string).length} characters long (at most ${MAX_ATTRIBUTE_STRING_LENGTH})`, field);
      }
    }
  }
  return contexts;
}

/**
 * Attributes as sent by SDKs (`{name: scalar}`), dropping nulls. The SDK's object itself when it
 * holds no null (the usual case): it is parsed per request and nobody else holds it.
 */
export function toParameters(attributes: Record<string, unknown> | null | undefined): Record<string, ParameterValue> {
  if (attributes === null || attributes === undefined) return {};
  let hasNull = false;
  for (const name in attributes) {
    if (Object.hasOwn(attributes, name) && (attributes[name] === null || attributes[name] === undefined)) {
      hasNull = true;
      break;
    }
  }
  if (!hasNull) return attributes as Record<string, ParameterValue>;
  const parameters: Record<string, ParameterValue> = {};
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined) continue;
    parameters[name] = value as ParameterValue;
  }
  return parameters;
}

/**
 * Remote evaluation for SDKs: flags from the environment's in-memory snapshot, list-segment
 * membership from one batched query (only when a flag's rules reference list segments), then
 * core's evaluate(). No other database work per request.
 */
export class EvaluationService {
  constructor(
    // Only what evaluation reads, so that a gateway can hand in its remote snapshots and list
    // membership (packages/transport/src/remote/) in place of the database-backed ones.
    private readonly repos: { segments: Pick<Repositories['segments'], 'checkMembers'> },
    private readonly snapshots: Pick<DefinitionSnapshots, 'get' | 'current'>,
    /**
     * Stores exposures (the server passes the ingest service's group-commit writer). Evaluations of
     * flags under an ACTIVE experiment are answered only after their exposures are committed.
     */
    private readonly recordExposures?: (scope: EnvironmentScope, exposures: Array<Omit<Exposure, 'environmentId'>>) => Promise<unknown>,
    private readonly now: () => number = Date.now,
    /** Told the results of every evaluation (counted by reason in the host's metrics). */
    private readonly metrics: Pick<ServiceMetrics, 'evaluated'> = NO_METRICS,
    options: EvaluationServiceOptions = {},
  ) {
    this.budgetMs = options.budgetMs ?? DEFAULT_EVALUATION_BUDGET_MS;
    this.counter = options.counter;
  }

  private readonly budgetMs: number;
  private readonly counter: Pick<EvaluationCounter, 'count'> | undefined;

  /** The environment a server SDK key may evaluate in (REST evaluate, OFREP); another environment's id → 403. */
  scopeFor(principal: Principal, environmentId: string): EnvironmentScope {
    requireAllowed(principal, 'flag.evaluate', { orgId: principal.orgId, environmentId });
    if (principal.kind !== 'sdk_key') throw invalidArgument('evaluation needs an SDK key');
    return { orgId: principal.orgId, projectId: principal.projectId, environmentId: principal.environmentId };
  }

  /** The environment a client key may evaluate in through OFREP and the browser stream (docs/client-side.md). */
  clientScopeFor(principal: Principal, environmentId: string): EnvironmentScope {
    requireAllowed(principal, 'flag.client_evaluate', { orgId: principal.orgId, environmentId });
    if (principal.kind !== 'client_key') throw invalidArgument('client evaluation needs a client key');
    const scope = { orgId: principal.orgId, projectId: principal.projectId, environmentId: principal.environmentId };
    clientScopes.set(scope, { includeDisabled: principal.client.includeDisabled });
    return scope;
  }

  /** Whether the scope is a client key's (clientScopeFor's). */
  isClientScope(scope: EnvironmentScope): boolean {
    return clientScopes.has(scope);
  }

  async snapshot(scope: EnvironmentScope): Promise<EnvironmentSnapshot> {
    return this.snapshots.get(scope);
  }

  /** The environment's loaded snapshot, if one is loaded (no await, no load). */
  currentSnapshot(scope: EnvironmentScope): EnvironmentSnapshot | undefined {
    return this.snapshots.current(scope.environmentId);
  }

  /** One flag (404 when unknown or archived) or every flag of the environment. */
  async evaluate(scope: EnvironmentScope, request: EvaluateRequest): Promise<EvaluationResult[]> {
    return (await this.evaluateFlags(scope, request)).results;
  }

  /**
   * As evaluate(), with the flag definitions the results came from and each result's outcome: a
   * transport keeps what it derives from a result (its JSON text) with the outcome, in the flag's
   * compiled form, which a change of the flag replaces.
   */
  async evaluateFlags(scope: EnvironmentScope, request: EvaluateRequest): Promise<Evaluation> {
    if (clientScopes.has(scope)) return this.evaluateForClient(scope, request);
    const contexts = checkContexts(request.contexts);
    const snapshot = this.snapshots.current(scope.environmentId) ?? (await this.snapshots.get(scope));
    const kept = keptFor(snapshot, request.flagKey);
    const flags = flagsAskedFor(snapshot, request.flagKey, kept);
    const pairs = membershipPairs(snapshot, flags, contexts);
    const isListMember = pairs.length === 0 ? undefined : await this.membership(scope, pairs);
    const evaluation = this.evaluateIn(scope, snapshot, flags, kept, contexts, isListMember);
    if (snapshot.experimentFlagKeys.size > 0) await this.expose(scope, snapshot, evaluation.results, contexts);
    return this.answered(scope, evaluation);
  }

  /**
   * evaluateFlags() answered at once, when the answer needs nothing awaited: the environment's
   * snapshot is loaded, no flag asked for tests a list segment (one query) and none runs in an
   * ACTIVE experiment (its exposures are committed before the answer). Undefined otherwise, having
   * evaluated nothing: the caller then calls evaluateFlags(). The evaluate route's hot path, which
   * this spares a promise and its turns of the microtask queue.
   */
  evaluateNow(scope: EnvironmentScope, request: EvaluateRequest): Evaluation | undefined {
    if (clientScopes.has(scope)) return this.evaluateForClientNow(scope, request);
    const contexts = checkContexts(request.contexts);
    const snapshot = this.snapshots.current(scope.environmentId);
    if (snapshot === undefined) return undefined;
    const flagKey = request.flagKey;
    const experiments = snapshot.experimentFlagKeys;
    if (experiments.size > 0 && (flagKey === undefined || experiments.has(flagKey))) return undefined;
    const kept = keptFor(snapshot, flagKey);
    const flags = flagsAskedFor(snapshot, flagKey, kept);
    if (membershipPairs(snapshot, flags, contexts).length > 0) return undefined;
    const evaluation = this.evaluateIn(scope, snapshot, flags, kept, contexts, undefined);
    return this.answered(scope, evaluation);
  }

  /**
   * A client key's evaluation (docs/client-side.md "What a client sees"): one client-visible flag
   * (a hidden or archived one is NOT_FOUND, as a missing one), or every client-visible flag —
   * enabled ones only unless the key includes disabled ones. Records no exposure, whatever
   * experiment runs: the client reports what it shows (docs/client-side.md "Exposures and events").
   */
  async evaluateForClient(scope: EnvironmentScope, request: EvaluateRequest): Promise<Evaluation> {
    const client = clientScopes.get(scope);
    if (client === undefined) throw invalidArgument('client evaluation needs a client key');
    const contexts = checkContexts(request.contexts);
    const snapshot = this.snapshots.current(scope.environmentId) ?? (await this.snapshots.get(scope));
    const { flags, kept } = clientFlagsAskedFor(snapshot, request.flagKey, client.includeDisabled);
    const pairs = membershipPairs(snapshot, flags, contexts);
    const isListMember = pairs.length === 0 ? undefined : await this.membership(scope, pairs);
    const evaluation = this.evaluateIn(scope, snapshot, flags, kept, contexts, isListMember);
    return this.answered(scope, evaluation);
  }

  /** evaluateForClient() at once when nothing needs awaiting (the snapshot is loaded, no list segment is read); else undefined. */
  evaluateForClientNow(scope: EnvironmentScope, request: EvaluateRequest): Evaluation | undefined {
    const client = clientScopes.get(scope);
    if (client === undefined) throw invalidArgument('client evaluation needs a client key');
    const contexts = checkContexts(request.contexts);
    const snapshot = this.snapshots.current(scope.environmentId);
    if (snapshot === undefined) return undefined;
    if (request.flagKey === undefined ? clientFlags(snapshot).readsListSegments : snapshot.listSegmentKeysByFlag.has(request.flagKey)) return undefined;
    const { flags, kept } = clientFlagsAskedFor(snapshot, request.flagKey, client.includeDisabled);
    const evaluation = this.evaluateIn(scope, snapshot, flags, kept, contexts, undefined);
    return this.answered(scope, evaluation);
  }

  /** Evaluates `flags` (flagsAskedFor's): one flag asked for by key from its kept compiled form, when it has one. */
  /** An evaluation answered to a caller: in the Prometheus counters and the flag insights' counts (docs/insights.md). */
  private answered<T extends { results: EvaluationResult[] }>(scope: EnvironmentScope, evaluation: T): T {
    this.metrics.evaluated(evaluation.results);
    this.counter?.count(scope, evaluation.results);
    return evaluation;
  }

  private evaluateIn(
    scope: EnvironmentScope,
    snapshot: EnvironmentSnapshot,
    flags: readonly Flag[],
    kept: CompiledFlag | null | undefined,
    contexts: EvaluationContext[],
    isListMember: ((segmentKey: string, contextKey: string) => boolean) | undefined,
  ): Evaluation {
    // Every flag of the environment, client-visible or not: prerequisites are looked up there (a
    // client-visible flag's prerequisite may be server-only; its result is used, never returned).
    const environment = { projectId: scope.projectId, environmentId: scope.environmentId, segments: snapshot.segments, flags: snapshot.flags, isListMember, budgetMs: this.budgetMs };
    const outcomes = newOutcomes(flags.length);
    if (snapshot.features.length > 0) {
      // A gateway older than its services may be handed definitions using a feature it does not
      // know: it refuses to evaluate rather than ignore it (docs/contract.md "Sync stream").
      const unknown = unknownEvaluationFeatures(snapshot.features);
      if (unknown.length > 0) return { snapshot, flags, results: flags.map((flag) => refusedResult(flag, unknown)), outcomes };
    }
    const results = kept ? [evaluateCompiled(kept, contexts, environment, outcomes)] : evaluateAll(flags, contexts, environment, outcomes);
    return { snapshot, flags, results, outcomes };
  }

  /**
   * docs/decisions.md "Exposures recorded by evaluate": evaluating a flag under an ACTIVE experiment records who saw which variant. The
   * exposure is of the first context of the request (the SDK's primary context) and of the variant
   * served, whatever the reason, with the rule whose allocation served it (exposureRuleOf); the
   * results computation ignores variants outside the experiment and other rules' exposures.
   */
  private async expose(scope: EnvironmentScope, snapshot: EnvironmentSnapshot, results: EvaluationResult[], contexts: EvaluationContext[]): Promise<void> {
    const context = contexts[0];
    if (!this.recordExposures || !context) return;
    const timestampMs = this.now();
    const exposures = results
      .filter((result) => snapshot.experimentFlagKeys.has(result.flag_key) && result.is_enabled && result.variant_key !== '')
      .map((result) => ({ flagKey: result.flag_key, variantKey: result.variant_key, contextType: context.context_type, contextKey: context.key, timestampMs, ruleId: exposureRuleOf(result) }));
    if (exposures.length > 0) await this.recordExposures(scope, exposures);
  }

  /** Looks up, in one query, the list-segment memberships the flags could ask about. */
  private async membership(scope: EnvironmentScope, pairs: MembershipPair[]): Promise<(segmentKey: string, contextKey: string) => boolean> {
    const answers = await this.repos.segments.checkMembers(scope, pairs);
    const members = new Set(pairs.filter((_, i) => answers[i] === true).map((p) => `${p.segmentKey}\u0000${p.contextKey}`));
    return (segmentKey, contextKey) => members.has(`${segmentKey}\u0000${contextKey}`);
  }
}

/** A flag not evaluated because the definitions use evaluation features this evaluator does not know. */
function refusedResult(flag: Flag, unknown: readonly string[]): EvaluationResult {
  const message = `not evaluated: the definitions use evaluation features this server does not know (${unknown.join(', ')})`;
  return { flag_key: flag.key, variant_key: '', value: null, is_enabled: flag.enabled === true, reason: 'ERROR', error_code: 'GENERAL', error_message: message };
}

/**
 * The flag asked for (404 when unknown or archived), or every flag of the snapshot. One flag is
 * found through its kept compiled form (keptFor's), whose document it is.
 */
function flagsAskedFor(snapshot: EnvironmentSnapshot, flagKey: string | undefined, kept: CompiledFlag | null | undefined): readonly Flag[] {
  if (flagKey === undefined) return snapshot.flagList;
  if (kept) return [documentOfCompiled(kept)];
  const flag = snapshot.flags.get(flagKey);
  if (!flag) throw notFound('flag', flagKey);
  return [flag];
}

/** A client's flags: the one asked for (NOT_FOUND unless client-visible), or the bulk answer's. */
function clientFlagsAskedFor(snapshot: EnvironmentSnapshot, flagKey: string | undefined, includeDisabled: boolean): { flags: readonly Flag[]; kept: CompiledFlag | null | undefined } {
  if (flagKey === undefined) return { flags: clientBulkFlags(snapshot, includeDisabled), kept: undefined };
  // Hidden and missing alike: the same error, raised before anything else reads the flag.
  if (!isClientVisible(snapshot.flags.get(flagKey))) throw notFound('flag', flagKey);
  const kept = keptFor(snapshot, flagKey);
  return { flags: flagsAskedFor(snapshot, flagKey, kept), kept };
}

/**
 * The snapshot's flag `key` as a compiled form kept with the snapshot (compiled and kept on its
 * first evaluation): one lookup reaches what the evaluation reads, where the flag document and
 * its compiled form are two more objects to find. Null when the flag does not compile (evaluating
 * the document answers the error), undefined when the snapshot has no such flag (nothing is kept
 * for unknown keys).
 */
function keptFor(snapshot: EnvironmentSnapshot, key: string | undefined): CompiledFlag | null | undefined {
  if (key === undefined) return undefined;
  return keptFlagForm(snapshot.compiledFlags, snapshot.flags, key);
}

interface MembershipPair {
  segmentKey: string;
  contextKey: string;
}

/**
 * Every (list segment, context key) pair the flags' evaluation could ask about, once each: their
 * rules' and their prerequisites' (transitively; listSegmentKeysByFlag has both).
 */
function membershipPairs(snapshot: EnvironmentSnapshot, flags: readonly Flag[], contexts: EvaluationContext[]): MembershipPair[] {
  const pairs: MembershipPair[] = [];
  if (snapshot.listSegmentKeysByFlag.size === 0) return pairs;
  const seen = new Set<string>();
  for (const flag of flags) {
    for (const segmentKey of snapshot.listSegmentKeysByFlag.get(flag.key) ?? []) {
      const segment = snapshot.segments.get(segmentKey);
      const context = contexts.find((c) => c.context_type === segment?.context_type);
      const id = `${segmentKey}\u0000${context?.key}`;
      if (!context || seen.has(id)) continue;
      seen.add(id);
      pairs.push({ segmentKey, contextKey: context.key });
    }
  }
  return pairs;
}
