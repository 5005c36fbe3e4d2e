import {
  DomainError,
  invalidArgument,
  type EnvironmentScope,
  type IdempotentRows,
  type Principal,
  type Repositories,
} from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import type { ScopeResolver } from '../scopes.ts';
import { BatchingWriter, type BatchingWriterOptions } from './batching-writer.ts';
import { NO_METRICS, type ServiceMetrics } from '../metrics.ts';
import { IngestRateLimiter } from '../limits/ingest-rate-limiter.ts';
import type { RowQuota } from '../limits/row-quota.ts';
import type { EventDefinitionCache } from './event-definition-cache.ts';
import type { ClientIngestGuard } from '../client/client-ingest-guard.ts';
import {
  MAX_EVENTS_PER_REQUEST,
  isAcceptableRuleId,
  firstWithoutMetricKey,
  validateEvents,
  validateExposures,
  type EventRow,
  type ExposureRow,
  type FlagVariants,
  type IncomingEvent,
  type IncomingExposure,
  type IngestAnswer,
} from './event-validation.ts';

/** How long an Idempotency-Key answer is kept (docs/contract.md "Events, exposures and idempotency": a repeat within 24 h is accepted once). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** Idempotency-Key: 1-255 visible ASCII characters (a UUID is typical). */
const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface IngestOptions {
  /** The client's Idempotency-Key, if any. */
  idempotencyKey?: string | undefined;
  /**
   * The request carried one event on its own (REST `POST .../events`), not a list: an error then
   * names `metric_key` rather than `events[0].metric_key`.
   */
  single?: boolean;
  /**
   * A client key's signed context token (`Authorization: Bearer` beside the key): required when
   * the key's `context_signing` is not `off` (docs/client-side.md "4. Signed contexts").
   */
  contextToken?: string | undefined;
}

export interface IngestServiceDeps {
  repos: Pick<Repositories, 'events' | 'exposures' | 'idempotency'>;
  scopes: ScopeResolver;
  definitions: EventDefinitionCache;
  /** The active flags of an environment and their variant keys (from the evaluation snapshots). */
  flagVariants: (scope: EnvironmentScope) => Promise<FlagVariants>;
  writer?: BatchingWriterOptions;
  now?: () => number;
  /** Told the accepted and rejected entries of every stored request. */
  metrics?: Pick<ServiceMetrics, 'ingested'>;
  /** Rate limits per credential and environment (default: DEFAULT_INGEST_RATE_LIMITS). */
  limiter?: IngestRateLimiter;
  /** The row quota per environment; absent: none (in-memory fakes, unit tests). */
  quota?: RowQuota;
  /** What client keys may write (docs/client-side.md "5. Exposures and events"); absent: client keys write nothing. */
  client?: ClientIngestGuard;
}

/** A request's key for the idempotency table: per environment (the table) and per kind (this prefix). */
/**
 * The stored Idempotency-Key. A client key's are its own (`client:<key id>:`): its key is public, so
 * sharing the environment's would let anyone read another credential's answer (its rejected keys
 * can name hidden flags) or pre-empt a server key's batch with the same Idempotency-Key.
 */
const storedKey = (kind: 'events' | 'exposures', key: string, principal: Principal): string =>
  principal.kind === 'client_key' ? `client:${principal.sdkKeyId}:${kind}:${key}` : `${kind}:${key}`;

/**
 * Metric event and exposure ingestion (svc.events.v1 EventService.Ingest, REST events, events/batch
 * and exposures). Each entry is validated on its own; the valid ones are stored and the answer
 * `{accepted_count, rejected_keys}` is returned only once they are committed.
 *
 * Storage takes one of two paths:
 * - without an Idempotency-Key, rows go through a BatchingWriter per table (group commit: the
 *   rows of concurrent requests share one write per environment);
 * - with one, the rows and the answer are written together by one atomic write that first claims
 *   the key (IdempotencyRepository.storeOnce), so a repeat — even a concurrent one, even on
 *   another instance — stores nothing and gets the first answer.
 */
export class IngestService {
  /** Group commit of metric events (its stats count the transactions). */
  readonly eventWriter: BatchingWriter<EventRow>;
  /** Group commit of exposures. */
  readonly exposureWriter: BatchingWriter<ExposureRow>;
  private readonly now: () => number;
  private readonly metrics: Pick<ServiceMetrics, 'ingested'>;
  private readonly limiter: IngestRateLimiter;

  constructor(private readonly deps: IngestServiceDeps) {
    this.now = deps.now ?? Date.now;
    this.metrics = deps.metrics ?? NO_METRICS;
    this.limiter = deps.limiter ?? new IngestRateLimiter(undefined, this.now);
    // Two writes per environment: while PostgreSQL inserts one group, the next is serialised, sent
    // and started on a second connection instead of waiting for the first to commit (bench/ingest,
    // one busy environment on 2 CPUs: ~85,000 -> ~128,000 committed events/s, p99 lower too).
    const writerOptions: BatchingWriterOptions = { maxConcurrentWrites: 2, ...deps.writer };
    this.eventWriter = new BatchingWriter<EventRow>((scope, rows) => deps.repos.events.insert(scope, rows), writerOptions);
    this.exposureWriter = new BatchingWriter<ExposureRow>((scope, rows) => deps.repos.exposures.insert(scope, rows), writerOptions);
  }

  scope(principal: Principal, environmentId: string): Promise<EnvironmentScope> {
    return this.deps.scopes.environment(principal, environmentId);
  }

  /**
   * Validates and stores metric events (see validateEvents for what rejects one).
   * @throws RESOURCE_EXHAUSTED beyond MAX_EVENTS_PER_REQUEST, or (RateLimitedError) beyond the
   *   rate limits; FAILED_PRECONDITION once the environment holds its row quota; INVALID_ARGUMENT
   *   for a malformed Idempotency-Key or an entry without a metric_key (firstWithoutMetricKey).
   */
  async ingestEvents(principal: Principal, scope: EnvironmentScope, events: readonly IncomingEvent[], options: IngestOptions = {}): Promise<IngestAnswer> {
    requireAllowed(principal, 'event.ingest', { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId });
    checkCount(events.length, 'events');
    checkMetricKeys(events, options.single === true);
    const idempotencyKey = checkIdempotencyKey(options.idempotencyKey);
    this.admit(principal, scope, events.length);
    const receivedAtMs = this.now();
    if (idempotencyKey !== undefined) {
      if (principal.kind === 'client_key') await this.clientGuard().admitRepeat(principal, events.length, 'events', options.contextToken);
      const earlier = await this.earlierAnswer(scope, storedKey('events', idempotencyKey, principal), receivedAtMs);
      if (earlier) return earlier;
    }
    const { rows, answer } =
      principal.kind === 'client_key'
        ? await this.clientGuard().events(principal, scope, events, receivedAtMs, options.contextToken)
        : validateEvents(events, await this.deps.definitions.types(scope), receivedAtMs);
    if (idempotencyKey !== undefined) return this.storeOnce('events', events.length, scope, storedKey('events', idempotencyKey, principal), { events: rows }, answer, receivedAtMs);
    await this.eventWriter.write(scope, rows);
    this.deps.quota?.added(scope, rows.length);
    this.metrics.ingested('events', answer.accepted_count, events.length - answer.accepted_count);
    return answer;
  }

  /**
   * Validates and stores exposures (see validateExposures for what rejects one).
   * @throws RESOURCE_EXHAUSTED beyond MAX_EVENTS_PER_REQUEST or the rate limits; FAILED_PRECONDITION
   *   at the row quota; INVALID_ARGUMENT for a malformed Idempotency-Key.
   */
  async ingestExposures(
    principal: Principal,
    scope: EnvironmentScope,
    exposures: readonly IncomingExposure[],
    options: IngestOptions = {},
  ): Promise<IngestAnswer> {
    requireAllowed(principal, 'exposure.ingest', { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId });
    checkCount(exposures.length, 'exposures');
    const idempotencyKey = checkIdempotencyKey(options.idempotencyKey);
    this.admit(principal, scope, exposures.length);
    const receivedAtMs = this.now();
    if (idempotencyKey !== undefined) {
      if (principal.kind === 'client_key') await this.clientGuard().admitRepeat(principal, exposures.length, 'exposures', options.contextToken);
      const earlier = await this.earlierAnswer(scope, storedKey('exposures', idempotencyKey, principal), receivedAtMs);
      if (earlier) return earlier;
    }
    const { rows, answer } =
      principal.kind === 'client_key'
        ? await this.clientGuard().exposures(principal, scope, exposures, receivedAtMs, options.contextToken)
        : validateExposures(exposures, await this.deps.flagVariants(scope), receivedAtMs);
    if (idempotencyKey !== undefined) {
      return this.storeOnce('exposures', exposures.length, scope, storedKey('exposures', idempotencyKey, principal), { exposures: rows }, answer, receivedAtMs);
    }
    await this.exposureWriter.write(scope, rows);
    this.deps.quota?.added(scope, rows.length);
    this.metrics.ingested('exposures', answer.accepted_count, exposures.length - answer.accepted_count);
    return answer;
  }

  /**
   * Stores the exposures of evaluations a gateway made from its own definitions (docs/decisions.md
   * "Exposures recorded by evaluate"); the single-process server writes them to exposureWriter
   * directly. The caller must be allowed to evaluate in the environment; answers once committed.
   */
  async recordEvaluationExposures(principal: Principal, scope: EnvironmentScope, exposures: readonly ExposureRow[]): Promise<void> {
    requireAllowed(principal, 'flag.evaluate', { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId });
    checkCount(exposures.length, 'exposures');
    for (const exposure of exposures) {
      const valid =
        typeof exposure === 'object' && exposure !== null &&
        typeof exposure.flagKey === 'string' && typeof exposure.variantKey === 'string' &&
        typeof exposure.contextType === 'string' && typeof exposure.contextKey === 'string' &&
        Number.isSafeInteger(exposure.timestampMs) &&
        isAcceptableRuleId(exposure.ruleId);
      if (!valid) throw invalidArgument('an evaluation exposure needs flagKey, variantKey, contextType, contextKey and timestampMs, and ruleId at most 128 characters', 'exposures');
    }
    await this.exposureWriter.write(
      scope,
      exposures.map(({ flagKey, variantKey, contextType, contextKey, timestampMs, ruleId }) => ({ flagKey, variantKey, contextType, contextKey, timestampMs, ruleId: ruleId ?? null })),
    );
    // Counted, never refused: an evaluation does not fail on the quota (docs/security.md).
    this.deps.quota?.added(scope, exposures.length);
  }

  /** Refuses new rows and writes what waits; call before the database pool closes. */
  async stop(): Promise<void> {
    await Promise.all([this.eventWriter.close(), this.exposureWriter.close()]);
  }

  /**
   * Rate limits, then the environment's row quota: both in memory, no database round trip. A
   * request counts as its entries (valid or not: each costs validation), so batching does not
   * multiply the rate.
   */
  private clientGuard(): ClientIngestGuard {
    if (this.deps.client === undefined) throw new DomainError('PERMISSION_DENIED', 'client keys cannot write here');
    return this.deps.client;
  }

  private admit(principal: Principal, scope: EnvironmentScope, entries: number): void {
    // The quota first: a refused request then costs the caller no tokens.
    this.deps.quota?.check(scope);
    this.limiter.admit('ingest', principal, scope, entries);
  }

  /** The stored answer of a repeat (the common resend costs one read and no write). */
  private async earlierAnswer(scope: EnvironmentScope, key: string, nowMs: number): Promise<IngestAnswer | null> {
    return (await this.deps.repos.idempotency.get(scope, key, nowMs)) as IngestAnswer | null;
  }

  private async storeOnce(
    kind: 'events' | 'exposures',
    entries: number,
    scope: EnvironmentScope,
    key: string,
    rows: IdempotentRows,
    answer: IngestAnswer,
    nowMs: number,
  ): Promise<IngestAnswer> {
    const outcome = await this.deps.repos.idempotency.storeOnce(scope, key, rows, answer, nowMs + IDEMPOTENCY_TTL_MS, nowMs);
    // A concurrent repeat that lost the claim stored nothing: the first request counted its rows.
    if (outcome.stored) this.deps.quota?.added(scope, answer.accepted_count);
    if (outcome.stored) this.metrics.ingested(kind, answer.accepted_count, entries - answer.accepted_count);
    return outcome.answer as IngestAnswer;
  }
}

function checkCount(count: number, what: string): void {
  if (count > MAX_EVENTS_PER_REQUEST) {
    throw new DomainError('RESOURCE_EXHAUSTED', `at most ${MAX_EVENTS_PER_REQUEST} ${what} per request (got ${count})`);
  }
}

/** See firstWithoutMetricKey: the whole request is refused, naming the first such entry. */
function checkMetricKeys(events: readonly IncomingEvent[], single: boolean): void {
  const index = firstWithoutMetricKey(events);
  if (index < 0) return;
  const field = single ? 'metric_key' : `events[${index}].metric_key`;
  throw invalidArgument(`${field} is required: an event without a metric_key is not an event`, field);
}

function checkIdempotencyKey(key: string | undefined): string | undefined {
  if (key === undefined) return undefined;
  if (!IDEMPOTENCY_KEY_PATTERN.test(key)) throw invalidArgument('Idempotency-Key must be 1-255 visible ASCII characters', 'idempotency-key');
  return key;
}
