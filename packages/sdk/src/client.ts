import { EventEmitter } from 'node:events';
import { documentOfCompiled, evaluate, evaluateCompiled, exposureRuleOf, prerequisiteKeysOf, type EvaluationContext, type EvaluationEnvironment, type EvaluationResult, type Flag, type FlagValue, type JsonValue } from '@switchyard/core';
import { ClientClosedError, ReadyTimeoutError, SdkKeyRefusedError } from './errors.ts';
import { expectedTypeOf, hasType, toCoreContexts, type ExpectedType } from './evaluation/context.ts';
import { ofrepBootstrapOf, type OfrepBootstrap, type OfrepBootstrapOptions } from './evaluation/ofrep-bootstrap.ts';
import { EventDelivery, type EventDeliveryStats } from './events/event-delivery.ts';
import { EvaluationSummaries, type EvaluationSummaryCounter, type EvaluationSummaryStats } from './events/evaluation-summaries.ts';
import { resolveOptions, type ResolvedOptions, type SwitchyardOptions } from './options.ts';
import { ListChecker, type MembershipQuery } from './segments/list-checker.ts';
import { MembershipCache } from './segments/membership-cache.ts';
import { DefinitionStore, type AppliedChange, type StoreSnapshot } from './store/definition-store.ts';
import { FileCache } from './store/file-cache.ts';
import type { DefinitionUpdate } from './sync/decode-sync-message.ts';
import { SyncConnection } from './sync/sync-connection.ts';
import type { ClientEvents, ClientState, EvaluationDetail, SdkContextInput, SdkErrorCode } from './types.ts';

/** Default of waitForReady's timeout. */
const DEFAULT_READY_TIMEOUT_MS = 10_000;

type Membership = (segmentKey: string, contextKey: string) => boolean;

/** The caller's fallback, with why. */
function failure(fallback: FlagValue, code: SdkErrorCode, message: string): EvaluationDetail {
  return { value: fallback, variant_key: '', reason: 'ERROR', error_code: code, error_message: message };
}

/**
 * The Switchyard SDK client (docs/sdk.md): keeps the environment's definitions in memory from the
 * sync stream and evaluates flags locally with core's evaluate(), with no network call per
 * evaluation. Evaluation methods never throw; the constructor throws on invalid options only.
 */
export class SwitchyardClient {
  private readonly options: ResolvedOptions;
  private readonly store: DefinitionStore;
  private readonly emitter = new EventEmitter();
  private currentState: ClientState = 'initializing';
  private refusal: SdkKeyRefusedError | undefined;
  private readonly connection: SyncConnection | undefined;
  private readonly listChecker: ListChecker | undefined;
  private readonly membershipCache: MembershipCache;
  private readonly fileCache: FileCache | undefined;
  private readonly delivery: EventDelivery | undefined;
  /** Evaluation counts for flag insights (docs/sdk.md "Evaluation counts"); undefined: off. */
  private readonly summaries: EvaluationSummaries | undefined;
  /** summaries.counter, read once per evaluation. */
  private readonly counter: EvaluationSummaryCounter | undefined;
  private cachedSnapshot: Promise<StoreSnapshot | undefined> | undefined;
  private cacheFallbackTimer: NodeJS.Timeout | undefined;
  private streamDelivered = false;
  private unsubscribeTestData: (() => void) | undefined;
  private warnedNoProject = false;
  /** The unknown features last logged (logged once per set the server names). */
  private loggedUnknownFeatures = '';
  /** See cachedEnvironment. */
  private syncEnvironment: EvaluationEnvironment | undefined;
  /** The store's generation syncEnvironment was made for. */
  private syncEnvironmentGeneration = -1;

  constructor(options: SwitchyardOptions) {
    this.options = resolveOptions(options);
    const o = this.options;
    // Listeners may throw; the SDK's own work must go on.
    this.emitter.setMaxListeners(0);
    this.store = new DefinitionStore(o.environmentId);
    this.membershipCache = new MembershipCache(o.listSegmentCache.maxEntries, o.listSegmentCache.ttlMs, o.now);

    // Assigned in every client, counting or not, so every client has the same shape (a field set
    // in some constructors only would make the evaluation path polymorphic: bench/README.md "sdk").
    this.summaries =
      o.baseUrl && o.evaluationCounts.enabled
        ? new EvaluationSummaries({
            baseUrl: o.baseUrl,
            sdkKey: o.sdkKey,
            environmentId: () => this.store.environmentId,
            intervalMs: o.evaluationCounts.intervalMs,
            fetch: o.fetch,
            logger: o.logger,
            now: o.now,
          })
        : undefined;
    this.counter = this.summaries?.counter;

    const testData = o.testData;
    if (testData) {
      this.store.load(testData.snapshot());
      this.currentState = 'ready';
      this.unsubscribeTestData = testData.subscribe(() => this.applied(this.store.load(testData.snapshot()), false));
      return;
    }

    if (o.baseUrl) {
      this.listChecker = new ListChecker({
        baseUrl: o.baseUrl,
        sdkKey: o.sdkKey,
        environmentId: () => this.store.environmentId,
        cache: this.membershipCache,
        fetch: o.fetch,
        logger: o.logger,
        now: o.now,
      });
      if (o.events.enabled) {
        this.delivery = new EventDelivery({
          baseUrl: o.baseUrl,
          sdkKey: o.sdkKey,
          environmentId: () => this.store.environmentId,
          flushIntervalMs: o.events.flushIntervalMs,
          maxBatchSize: o.events.maxBatchSize,
          maxQueueSize: o.events.maxQueueSize,
          fetch: o.fetch,
          logger: o.logger,
          now: o.now,
        });
      }
    }

    if (o.bootstrap) {
      const b = o.bootstrap;
      this.store.load({
        environmentId: b.environmentId ?? o.environmentId ?? '',
        projectId: b.projectId ?? '',
        flags: b.flags,
        segments: b.segments ?? [],
        experimentFlagKeys: b.experimentFlagKeys ?? [],
        serverTimestampMs: 0,
      });
      this.setState('stale', 'started from bootstrap definitions; waiting for the server');
    }

    if (o.cacheFile) {
      this.fileCache = new FileCache(o.cacheFile, o.cacheWriteIntervalMs, o.logger, o.now);
      this.cachedSnapshot = this.fileCache.read(o.environmentId);
      this.cacheFallbackTimer = setTimeout(() => void this.useFileCache('the server did not answer in time'), o.cacheFallbackMs);
      this.cacheFallbackTimer.unref();
    }

    const sync = o.sync!;
    this.connection = new SyncConnection(
      {
        target: sync.target,
        secure: sync.secure,
        ca: sync.ca,
        sdkKey: o.sdkKey,
        environmentId: o.environmentId,
        backoff: o.reconnect,
        logger: o.logger,
        now: o.now,
        random: o.random,
      },
      {
        update: (update) => this.onUpdate(update),
        disconnected: (reason) => this.onDisconnected(reason),
        refused: (status, reason) => this.onRefused(status, reason),
      },
    );
    this.connection.start();
  }

  // --- state and events ---

  /** initializing, ready, stale, error or closed (docs/sdk.md "States"). */
  get state(): ClientState {
    return this.currentState;
  }

  /** The environment: given as an option, or learnt from the server. */
  get environmentId(): string | undefined {
    return this.store.environmentId || undefined;
  }

  /** Counters for monitoring and tests. */
  diagnostics(): { state: ClientState; syncConnectAttempts: number; listCheckRequests: number; listCacheSize: number; flagCount: number } {
    return {
      state: this.currentState,
      syncConnectAttempts: this.connection?.connectAttempts ?? 0,
      listCheckRequests: this.listChecker?.requests ?? 0,
      listCacheSize: this.membershipCache.size,
      flagCount: this.store.flags.size,
    };
  }

  /**
   * Event-delivery counters (docs/sdk.md "Event delivery"): entries queued, dropped, sent
   * (stored by the server) and failed requests. All zeros when the client sends no events
   * (TestData, no `baseUrl`, or `events.enabled: false`).
   */
  /** Evaluation-count summaries: evaluations sent and dropped (docs/sdk.md "Evaluation counts"). */
  evaluationCountStats(): EvaluationSummaryStats {
    return this.summaries?.stats() ?? { sentEvaluations: 0, droppedEvaluations: 0 };
  }

  stats(): EventDeliveryStats {
    return this.delivery?.stats() ?? { queuedEvents: 0, queuedExposures: 0, droppedEvents: 0, droppedExposures: 0, sentEvents: 0, sentExposures: 0, failedAttempts: 0 };
  }

  on<E extends keyof ClientEvents>(event: E, listener: (...args: ClientEvents[E]) => void): this {
    this.emitter.on(event, listener as (...args: unknown[]) => void);
    return this;
  }

  once<E extends keyof ClientEvents>(event: E, listener: (...args: ClientEvents[E]) => void): this {
    this.emitter.once(event, listener as (...args: unknown[]) => void);
    return this;
  }

  off<E extends keyof ClientEvents>(event: E, listener: (...args: ClientEvents[E]) => void): this {
    this.emitter.off(event, listener as (...args: unknown[]) => void);
    return this;
  }

  /**
   * Resolves once definitions are available from any source: the server's first snapshot (state
   * ready), or a cache file or bootstrap (state stale). Rejects with SdkKeyRefusedError when the
   * server refuses the key, ReadyTimeoutError after `timeoutMs` (default 10 s), or
   * ClientClosedError once closed.
   */
  waitForReady(options: { timeoutMs?: number } = {}): Promise<void> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
    if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs < 0) {
      return Promise.reject(new RangeError(`timeoutMs must be a number of 0 or more (got ${String(timeoutMs)})`));
    }
    const settled = (): Error | null | undefined => {
      if (this.currentState === 'closed') return new ClientClosedError('the client is closed');
      if (this.currentState === 'error') return this.refusal ?? new SdkKeyRefusedError('the SDK key was refused', 'UNAUTHENTICATED');
      if (this.store.hasDefinitions && (this.currentState === 'ready' || this.currentState === 'stale')) return null;
      return undefined;
    };
    const now = settled();
    if (now !== undefined) return now === null ? Promise.resolve() : Promise.reject(now);
    return new Promise((resolve, reject) => {
      const onState = (): void => {
        const outcome = settled();
        if (outcome === undefined) return;
        done();
        if (outcome === null) resolve();
        else reject(outcome);
      };
      const timer = setTimeout(() => {
        done();
        reject(new ReadyTimeoutError(`no definitions within ${timeoutMs} ms (state ${this.currentState})`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        this.emitter.off('state', onState);
      };
      this.emitter.on('state', onState);
    });
  }

  // --- evaluation (never throws) ---

  /** The flag's value for the context, or `fallback` (see variationDetail for why). */
  variation<T extends FlagValue>(flagKey: string, context: SdkContextInput, fallback: T): T {
    return this.detail(flagKey, context, fallback, expectedTypeOf(fallback), undefined).value as T;
  }

  boolVariation(flagKey: string, context: SdkContextInput, fallback: boolean): boolean {
    return this.detail(flagKey, context, fallback, 'boolean', undefined).value as boolean;
  }

  stringVariation(flagKey: string, context: SdkContextInput, fallback: string): string {
    return this.detail(flagKey, context, fallback, 'string', undefined).value as string;
  }

  numberVariation(flagKey: string, context: SdkContextInput, fallback: number): number {
    return this.detail(flagKey, context, fallback, 'number', undefined).value as number;
  }

  /** Any JSON value (no type check beyond the fallback's being an object when it is one). */
  jsonVariation<T extends JsonValue = JsonValue>(flagKey: string, context: SdkContextInput, fallback: T): T {
    return this.detail(flagKey, context, fallback, 'any', undefined).value as T;
  }

  /** The value with its variant, reason and, when the fallback was served, the error code. */
  variationDetail<T extends FlagValue>(flagKey: string, context: SdkContextInput, fallback: T): EvaluationDetail<T> {
    return this.detail(flagKey, context, fallback, expectedTypeOf(fallback), undefined) as EvaluationDetail<T>;
  }

  /**
   * As variation, but list-segment memberships the flag's rules need are first asked from the
   * server (batched, cached) instead of counting as "not a member" until the cache knows them.
   */
  async variationAsync<T extends FlagValue>(flagKey: string, context: SdkContextInput, fallback: T): Promise<T> {
    return (await this.variationDetailAsync(flagKey, context, fallback)).value;
  }

  async variationDetailAsync<T extends FlagValue>(flagKey: string, context: SdkContextInput, fallback: T): Promise<EvaluationDetail<T>> {
    let membership: Membership | undefined;
    try {
      membership = await this.resolveMemberships(flagKey, context);
    } catch (error) {
      this.options.logger.warn('list-segment lookups failed', { error: String(error) });
    }
    return this.detail(flagKey, context, fallback, expectedTypeOf(fallback), membership) as EvaluationDetail<T>;
  }

  /** Every flag's value for the context: `{[flag_key]: value}` (null where none). Records no exposures. */
  allFlags(context: SdkContextInput): Record<string, FlagValue> {
    const out: Record<string, FlagValue> = {};
    try {
      // The context is checked and converted once for all flags.
      const contexts = toCoreContexts(context);
      for (const key of this.store.flags.keys()) out[key] = this.detailFor(key, contexts, null, 'any', undefined, false).value;
    } catch (error) {
      this.options.logger.error('allFlags failed', { error: String(error) });
    }
    return out;
  }

  /**
   * The OFREP bulk answer a browser with a client key would get for this context (docs/sdk.md
   * "Server-side rendering"): client-visible, non-archived flags, disabled ones left out unless
   * `includeDisabled`, each `{key, value, variant, reason}`. Render it into the page for the
   * OFREP web provider to start from, so the page shows its flags with no flash. Records no
   * exposures; list-segment memberships are those the SDK has cached. Never throws: `{flags: []}`
   * before definitions arrive or for an invalid context (logged).
   */
  ofrepBootstrap(context: SdkContextInput, options: OfrepBootstrapOptions = {}): OfrepBootstrap {
    try {
      const contexts = toCoreContexts(context);
      if (!contexts) {
        this.options.logger.warn('ofrepBootstrap: a context is {key: non-empty string, type?: string, attributes?: {...}}');
        return { flags: [] };
      }
      if (!this.store.hasDefinitions) return { flags: [] };
      // Definitions using a feature this SDK does not know: every flag a GENERAL error (the browser's defaults).
      return ofrepBootstrapOf(this.store.flags.values(), contexts, this.cachedEnvironment(), options, this.store.unknownFeatures.length > 0);
    } catch (error) {
      this.options.logger.error('ofrepBootstrap failed', { error: String(error) });
      return { flags: [] };
    }
  }

  /** A metric event, batched and sent in the background (docs/sdk.md "Event delivery"). Never throws. */
  track(metricKey: string, context: SdkContextInput, value?: number | boolean): void {
    try {
      const contexts = toCoreContexts(context);
      if (!this.delivery || typeof metricKey !== 'string' || metricKey === '' || !contexts) {
        if (this.delivery) this.options.logger.warn('track ignored: a metric key and a valid context are needed');
        return;
      }
      const first = contexts[0]!;
      const event: Parameters<EventDelivery['track']>[0] = { metric_key: metricKey, context_type: first.context_type, context_key: first.key, timestamp_ms: this.options.now() };
      if (value !== undefined) event.value = value;
      this.delivery.track(event);
    } catch (error) {
      this.options.logger.error('track failed', { error: String(error) });
    }
  }

  /** Sends every queued event and exposure now. */
  async flush(): Promise<void> {
    await Promise.all([this.delivery?.flush(), this.summaries?.flush()]);
  }

  /** Ends the sync stream and every timer, writes the cache file, and delivers what is queued. */
  async close(): Promise<void> {
    if (this.currentState === 'closed') return;
    this.setState('closed');
    if (this.cacheFallbackTimer) clearTimeout(this.cacheFallbackTimer);
    this.unsubscribeTestData?.();
    this.connection?.stop();
    this.listChecker?.close();
    await Promise.all([this.fileCache?.close(), this.delivery?.close(), this.summaries?.close()]);
  }

  // --- internals ---

  private detail(
    flagKey: string,
    context: SdkContextInput,
    fallback: FlagValue,
    expected: ExpectedType,
    membership: Membership | undefined,
  ): EvaluationDetail {
    let contexts: EvaluationContext[] | undefined;
    try {
      contexts = toCoreContexts(context);
    } catch {
      contexts = undefined;
    }
    const detail = this.detailFor(flagKey, contexts, fallback, expected, membership, true);
    // One Map increment per evaluation (bench/sdk "evaluation counts").
    this.counter?.count(flagKey, detail.variant_key, detail.reason);
    return detail;
  }

  /** One evaluation of contexts already converted (undefined: the input was malformed). */
  private detailFor(
    flagKey: string,
    contexts: EvaluationContext[] | undefined,
    fallback: FlagValue,
    expected: ExpectedType,
    membership: Membership | undefined,
    recordExposure: boolean,
  ): EvaluationDetail {
    try {
      if (!this.store.hasDefinitions) return failure(fallback, 'CLIENT_NOT_READY', 'no flag definitions yet');
      if (!contexts) return failure(fallback, 'INVALID_CONTEXT', 'a context is {key: non-empty string, type?: string, attributes?: {name: string | number | boolean}} or a non-empty array of them');
      const compiled = this.store.compiledFlag(flagKey);
      if (compiled === undefined) return failure(fallback, 'FLAG_NOT_FOUND', `no flag "${String(flagKey)}"`);
      // Fail closed: definitions using a feature this SDK does not know would be evaluated wrongly.
      const unknown = this.store.unknownFeatures;
      if (unknown.length > 0) return failure(fallback, 'GENERAL', `the definitions use evaluation features this SDK does not know (${unknown.join(', ')}): upgrade the SDK`);
      const env = membership ? this.environment(membership) : this.cachedEnvironment();
      // A flag that does not compile: evaluating its document answers the error.
      const flag = compiled === null ? this.store.flag(flagKey)! : documentOfCompiled(compiled);
      const result = compiled === null ? evaluate(flag, contexts, env) : evaluateCompiled(compiled, contexts, env);
      if (result.reason === 'ERROR') return failure(fallback, (result.error_code as SdkErrorCode | undefined) ?? 'GENERAL', result.error_message ?? 'evaluation failed');
      if (result.value === null) {
        // A disabled flag without an off variant, or a variant key naming no variant: the fallback.
        return { value: fallback, variant_key: '', reason: result.reason };
      }
      if (!hasType(result.value, expected)) {
        return failure(fallback, 'TYPE_MISMATCH', `flag "${flagKey}" is of type ${flag.value_type}; ${expected === 'object' ? 'an object' : `a ${expected}`} was asked for`);
      }
      if (recordExposure) this.recordExposure(flag, result, contexts);
      const detail: EvaluationDetail = { value: result.value, variant_key: result.variant_key, reason: result.reason };
      if (result.prerequisite_key !== undefined) detail.prerequisite_key = result.prerequisite_key;
      if (result.error_code !== undefined) {
        detail.error_code = result.error_code as SdkErrorCode;
        if (result.error_message !== undefined) detail.error_message = result.error_message;
      }
      return detail;
    } catch (error) {
      return failure(fallback, 'GENERAL', `evaluation failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /**
   * The environment of synchronous evaluations, reused while the definitions are the same (no
   * object or closure per evaluation; one comparison with the store's generation per evaluation).
   */
  private cachedEnvironment(): EvaluationEnvironment {
    const env = this.syncEnvironment;
    if (env !== undefined && this.syncEnvironmentGeneration === this.store.generation) return env;
    this.syncEnvironment = this.environment(this.cachedMembership());
    this.syncEnvironmentGeneration = this.store.generation;
    return this.syncEnvironment;
  }

  private environment(isListMember: Membership): EvaluationEnvironment {
    if (!this.store.projectId && !this.warnedNoProject) {
      this.warnedNoProject = true;
      this.options.logger.warn('the definitions carry no project id: splits may bucket differently from the server');
    }
    return {
      projectId: this.store.projectId,
      environmentId: this.store.environmentId ?? '',
      segments: this.store.segments,
      // Where prerequisites are found (the store replaces its map on every change).
      flags: this.store.flags,
      isListMember,
      budgetMs: this.options.evaluationBudgetMs,
    };
  }

  /**
   * Synchronous membership: the cached answer; unknown counts as "not a member" and queues a
   * background lookup so a later evaluation knows (docs/sdk.md "List segments").
   */
  private cachedMembership(): Membership {
    const testData = this.options.testData;
    if (testData) return (segmentKey, contextKey) => testData.isListMember(segmentKey, contextKey);
    return (segmentKey, contextKey) => {
      const cached = this.membershipCache.get(segmentKey, contextKey);
      if (cached !== undefined) return cached;
      const query = this.membershipQuery(segmentKey, contextKey);
      if (query) this.listChecker?.prefetch(query);
      return false;
    };
  }

  /**
   * The list check for a membership evaluation asked for. Core asks only about the context of the
   * segment's own type (segmentMatches), so the segment names the context type.
   */
  private membershipQuery(segmentKey: string, contextKey: string): MembershipQuery | undefined {
    const contextType = this.store.segments.get(segmentKey)?.context_type;
    return contextType ? { segment_key: segmentKey, context_key: contextKey, context_type: contextType } : undefined;
  }

  /** Asks (batched) every list-segment membership the flag's rules, and its prerequisites' (transitively), could need for these contexts. */
  private async resolveMemberships(flagKey: string, context: SdkContextInput): Promise<Membership | undefined> {
    const flag = this.store.flag(flagKey);
    const contexts = toCoreContexts(context);
    if (!flag || !contexts || !Array.isArray(flag.rules)) return undefined;
    const testData = this.options.testData;
    if (testData) return (segmentKey, contextKey) => testData.isListMember(segmentKey, contextKey);
    const answers = new Map<string, Promise<boolean | undefined>>();
    const rules = [...flag.rules];
    for (const key of prerequisiteKeysOf(flag, this.store.flags)) {
      const prerequisite = this.store.flag(key);
      if (prerequisite && Array.isArray(prerequisite.rules)) rules.push(...prerequisite.rules);
    }
    for (const rule of rules) {
      for (const segmentKey of rule.segment_keys ?? []) {
        const segment = this.store.segments.get(segmentKey);
        if (segment?.kind !== 'list') continue;
        const target = contexts.find((c) => c.context_type === segment.context_type);
        if (!target) continue;
        const id = MembershipCache.keyOf(segmentKey, target.key);
        if (!answers.has(id) && this.listChecker) answers.set(id, this.listChecker.check({ segment_key: segmentKey, context_key: target.key, context_type: segment.context_type }));
      }
    }
    if (answers.size === 0) return undefined;
    const known = new Map<string, boolean | undefined>();
    await Promise.all([...answers].map(async ([id, answer]) => known.set(id, await answer)));
    // An answer the server could not give counts as "not a member", as in the synchronous path.
    return (segmentKey, contextKey) => known.get(MembershipCache.keyOf(segmentKey, contextKey)) ?? this.membershipCache.get(segmentKey, contextKey) ?? false;
  }

  /**
   * A flag under an ACTIVE experiment that served a variant records who saw it: the first
   * context of the evaluation, as the server's evaluate route does (docs/sdk.md "Exposures").
   */
  private recordExposure(flag: Flag, result: EvaluationResult, contexts: EvaluationContext[]): void {
    if (!this.delivery || !result.is_enabled || result.variant_key === '' || !this.store.experimentFlagKeys.has(flag.key)) return;
    const first = contexts[0]!;
    this.delivery.recordExposure({
      flag_key: flag.key,
      variant_key: result.variant_key,
      context_type: first.context_type,
      context_key: first.key,
      timestamp_ms: this.options.now(),
      rule_id: exposureRuleOf(result),
    });
  }

  private onUpdate(update: DefinitionUpdate): void {
    if (this.currentState === 'closed' || this.currentState === 'error') return;
    const hadDefinitions = this.store.hasDefinitions;
    const change = this.store.apply(update);
    this.streamDelivered = true;
    if (this.cacheFallbackTimer) clearTimeout(this.cacheFallbackTimer);
    this.fileCache?.schedule(() => this.store.snapshot());
    if (update.fullSnapshot) this.setState('ready');
    this.applied(change, !hadDefinitions);
  }

  /** After definitions changed: drop list answers that may be outdated, tell the listeners. */
  private applied(change: AppliedChange, first: boolean): void {
    const unknown = this.store.unknownFeatures.join(', ');
    if (unknown !== this.loggedUnknownFeatures) {
      this.loggedUnknownFeatures = unknown;
      if (unknown !== '') this.options.logger.error('the definitions use evaluation features this SDK does not know; every evaluation serves its default until the SDK is upgraded', { features: unknown });
    }
    if (change.allListSegments) this.listChecker?.invalidate('all');
    else if (change.changedListSegmentKeys.length > 0) this.listChecker?.invalidate(change.changedListSegmentKeys);
    if (!first && change.changedFlagKeys.length > 0) this.emit('change', { flag_keys: change.changedFlagKeys });
  }

  private onDisconnected(reason: string): void {
    if (this.currentState === 'ready') this.setState('stale', reason);
    if (!this.streamDelivered) void this.useFileCache(`the server could not be reached (${reason})`);
  }

  private onRefused(status: string, reason: string): void {
    this.refusal = new SdkKeyRefusedError(`the server refused the SDK key: ${status}${reason ? ` (${reason})` : ''}`, status);
    if (this.cacheFallbackTimer) clearTimeout(this.cacheFallbackTimer);
    this.setState('error', this.refusal.message);
    this.options.logger.error('SDK key refused; sync stopped', { status });
    if (this.emitter.listenerCount('error') > 0) this.emit('error', { reason: this.refusal.message, error: this.refusal });
  }

  /** Serves the cache file's definitions while the server has delivered nothing. */
  private async useFileCache(reason: string): Promise<void> {
    const pending = this.cachedSnapshot;
    if (!pending) return;
    this.cachedSnapshot = undefined;
    const snapshot = await pending;
    if (!snapshot || this.streamDelivered || this.currentState === 'closed' || this.currentState === 'error') return;
    const hadDefinitions = this.store.hasDefinitions;
    const change = this.store.load(snapshot);
    this.options.logger.warn('serving definitions from the cache file', { reason });
    this.setState('stale', `serving the cache file: ${reason}`);
    this.applied(change, !hadDefinitions);
  }

  private setState(to: ClientState, reason?: string): void {
    const from = this.currentState;
    if (from === to) return;
    this.currentState = to;
    const event: ClientEvents['state'][0] = reason === undefined ? { from, to } : { from, to, reason };
    this.emit('state', event);
    if (to === 'ready') this.emit('ready');
    if (to === 'stale') this.emit('stale', { reason: reason ?? 'disconnected' });
  }

  private emit<E extends keyof ClientEvents>(event: E, ...args: ClientEvents[E]): void {
    for (const listener of this.emitter.listeners(event)) {
      try {
        (listener as (...a: unknown[]) => void)(...args);
      } catch (error) {
        this.options.logger.error(`a '${event}' listener threw`, { error: String(error) });
      }
    }
  }
}
