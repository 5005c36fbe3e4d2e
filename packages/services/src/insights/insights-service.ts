import {
  DAY_MS,
  DEFAULT_LIFECYCLE_THRESHOLDS,
  LIFECYCLE_STAGES,
  flagStatus,
  oneVariantServed,
  projectLifecycle,
  type Flag,
  type FlagLifecycleRepository,
  type FlagLifecycleStage,
  type FlagStatus,
  type LifecycleThresholds,
  HOUR_MS,
  insightsRange,
  invalidArgument,
  notFound,
  type DrainedCounts,
  type EnvironmentScope,
  type InsightsPoint,
  type IdempotencyRepository,
  type InsightsRepository,
  type Principal,
  type Repositories,
  type SummaryCounts,
  DomainError,
  isKeyPrincipal,
} from '@switchyard/core';
import type { IngestRateLimiter } from '../limits/ingest-rate-limiter.ts';
import { requireAllowed } from '../authorization.ts';
import type { ScopeResolver } from '../scopes.ts';

/** At most this many counts in one report a gateway sends (its flusher splits a larger drain). */
export const MAX_COUNTS_PER_REPORT = 5_000;
/** A report's hours may be at most this far from the services' clock (a gateway flushes every minute). */
const MAX_REPORT_SKEW_MS = 2 * DAY_MS;
/**
 * How long a report id is remembered: a report is accepted only while its hours are within
 * MAX_REPORT_SKEW_MS of the services' clock, and its hours were within that of the clock when it
 * was first written, so a retry the services would still accept comes at most twice that later
 * and still finds its id.
 */
const REPORT_ID_TTL_MS = 2 * MAX_REPORT_SKEW_MS;
/** A report id: a random UUID the gateway made for the report (docs/insights.md "Exactness"). */
const REPORT_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A flag's series and its last evaluation (GET /v1/environments/{env_id}/flags/{key}/insights). */
export interface FlagInsights {
  series: InsightsPoint[];
  /** Null: never evaluated (or not since the counts began). */
  lastEvaluatedAtMs: number | null;
  /** Its status in the environment over the project's status window (docs/insights.md "Statuses"). */
  status: FlagStatus;
}

/** A flag's evaluation summary in one environment (flag lists' `include=insights`). */
export interface FlagActivity {
  lastEvaluatedAtMs: number | null;
  status: FlagStatus;
}

/**
 * At most this many flags of a project are read by the lifecycle (by key; the answer says
 * `truncated` beyond): what one request or one job turn reads stays bounded.
 */
export const MAX_LIFECYCLE_FLAGS = 10_000;

/** GET /v1/projects/{project_id}/flag-lifecycle (docs/insights.md "Lifecycle stages"). */
export interface FlagLifecycleAnswer {
  thresholds: { status_window_days: number; code_removal_min_age_days: number; archive_after_days: number; unchanged_fallback_days: number };
  environments: Array<{ id: string; name: string; critical: boolean; counted: boolean; reports_evaluations: boolean }>;
  flags: Array<{
    key: string;
    lifetime: string;
    archived: boolean;
    stage: FlagLifecycleStage;
    environments: Record<string, { status: FlagStatus; last_evaluated_at_ms: number | null }>;
  }>;
  truncated: boolean;
}

/** A flag's status from its merged view in one environment (createdAt, updatedAt = the later of definition and state). */
export const statusOf = (flag: Flag, lastEvaluatedAtMs: number | null, nowMs: number, windowDays: number): FlagStatus =>
  flagStatus({ createdAtMs: flag.created_at_ms, changedAtMs: flag.updated_at_ms, lastEvaluatedAtMs, oneVariant: oneVariantServed(flag) }, nowMs, windowDays);

export const thresholdsRecord = (thresholds: LifecycleThresholds): FlagLifecycleAnswer['thresholds'] => ({
  status_window_days: thresholds.statusWindowDays,
  code_removal_min_age_days: thresholds.codeRemovalMinAgeDays,
  archive_after_days: thresholds.archiveAfterDays,
  unchanged_fallback_days: thresholds.unchangedFallbackDays,
});

const isText = (value: unknown, max: number, min = 0): value is string => typeof value === 'string' && value.length >= min && value.length <= max;
const isId = (value: unknown): value is string => isText(value, 64, 1);
const isCount = (value: unknown): boolean =>
  isId((value as Record<string, unknown>).orgId) &&
  isId((value as Record<string, unknown>).projectId) &&
  isId((value as Record<string, unknown>).environmentId) &&
  isText((value as Record<string, unknown>).flagKey, 256, 1) &&
  isText((value as Record<string, unknown>).variantKey, 256) &&
  isText((value as Record<string, unknown>).reason, 32, 1) &&
  Number.isSafeInteger((value as Record<string, unknown>).hourMs) &&
  ((value as Record<string, unknown>).hourMs as number) % HOUR_MS === 0 &&
  Number.isSafeInteger((value as Record<string, unknown>).count) &&
  ((value as Record<string, unknown>).count as number) > 0;
const isLast = (value: unknown): boolean =>
  isId((value as Record<string, unknown>).orgId) &&
  isId((value as Record<string, unknown>).projectId) &&
  isId((value as Record<string, unknown>).environmentId) &&
  isText((value as Record<string, unknown>).flagKey, 256, 1) &&
  Number.isSafeInteger((value as Record<string, unknown>).atMs);
const isObject = (value: unknown): boolean => typeof value === 'object' && value !== null && !Array.isArray(value);

/** At most this many entries in one SDK summary (docs/insights.md "SDK summaries"). */
export const MAX_SUMMARY_ENTRIES = 1_000;
/** At most this many evaluations in one entry of a summary. */
export const MAX_SUMMARY_COUNT = 1_000_000_000;
/** A summary's start may be at most this far in the past (an SDK that was offline a while). */
export const MAX_SUMMARY_AGE_MS = 2 * DAY_MS;
/** A summary's end may be at most this far ahead of the server's clock (clock skew). */
export const MAX_SUMMARY_SKEW_MS = 5 * 60_000;
/** How long a summary's Idempotency-Key is remembered (as ingest's). */
const SUMMARY_IDEMPOTENCY_TTL_MS = DAY_MS;
const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
const REASON_PATTERN = /^[A-Za-z_]{1,32}$/;

/** An SDK's summary as sent: `{start_ms, end_ms, counts: [{flag_key, variant_key, reason, count}]}`. */
export interface IncomingSummary {
  start_ms?: unknown;
  end_ms?: unknown;
  counts?: unknown;
}

/** The 202 answer to a summary: how many entries it carried (counts of unknown flags are dropped, not refused). */
export interface SummaryAnswer {
  received_count: number;
}

/**
 * Checks a summary and returns its counts (docs/insights.md "SDK summaries"); the hour they are
 * added to is the UTC hour of its end (moved back to now when a little ahead).
 * @throws INVALID_ARGUMENT naming the first bad field.
 */
export function summaryCounts(summary: unknown, nowMs: number): SummaryCounts {
  if (!isObject(summary)) throw invalidArgument('a summary is {start_ms, end_ms, counts}', 'body');
  const { start_ms: startMs, end_ms: endMs, counts } = summary as IncomingSummary;
  if (!Number.isSafeInteger(startMs) || (startMs as number) < nowMs - MAX_SUMMARY_AGE_MS) throw invalidArgument('start_ms must be epoch ms within the last two days', 'start_ms');
  if (!Number.isSafeInteger(endMs) || (endMs as number) < (startMs as number) || (endMs as number) > nowMs + MAX_SUMMARY_SKEW_MS) {
    throw invalidArgument('end_ms must be epoch ms, at least start_ms and not in the future', 'end_ms');
  }
  if (!Array.isArray(counts)) throw invalidArgument('counts must be a list', 'counts');
  if (counts.length > MAX_SUMMARY_ENTRIES) throw invalidArgument(`at most ${MAX_SUMMARY_ENTRIES} counts per summary (got ${counts.length})`, 'counts');
  const out: SummaryCounts['counts'] = [];
  for (let i = 0; i < counts.length; i++) {
    const entry = counts[i] as Record<string, unknown>;
    if (!isObject(entry)) throw invalidArgument('a count is {flag_key, variant_key, reason, count}', `counts[${i}]`);
    if (!isText(entry.flag_key, 256, 1)) throw invalidArgument('flag_key must be 1-256 characters', `counts[${i}].flag_key`);
    if (!isText(entry.variant_key, 256)) throw invalidArgument('variant_key must be at most 256 characters ("" for none)', `counts[${i}].variant_key`);
    if (typeof entry.reason !== 'string' || !REASON_PATTERN.test(entry.reason)) throw invalidArgument('reason must be 1-32 letters or underscores', `counts[${i}].reason`);
    const count = entry.count;
    if (!Number.isSafeInteger(count) || (count as number) < 1 || (count as number) > MAX_SUMMARY_COUNT) throw invalidArgument(`count must be an integer from 1 to ${MAX_SUMMARY_COUNT}`, `counts[${i}].count`);
    out.push({ flagKey: entry.flag_key, variantKey: entry.variant_key, reason: entry.reason.toUpperCase(), count: count as number });
  }
  const atMs = Math.min(endMs as number, nowMs);
  return { hourMs: atMs - (atMs % HOUR_MS), atMs, counts: out };
}

/**
 * Evaluation counts per flag and environment (docs/insights.md): written by this process's
 * EvaluationCountFlusher, and by gateways' over the hop (InsightsGatewayService.RecordCounts);
 * read by whoever may read the environment's flags.
 */
export class InsightsService {
  constructor(
    private readonly repos: Pick<Repositories, 'flags' | 'projects'> & { insights: InsightsRepository; lifecycle: FlagLifecycleRepository; idempotency?: IdempotencyRepository },
    private readonly scopes: ScopeResolver,
    private readonly now: () => number = Date.now,
    /** The ingest rate limits (a summary costs one entry); absent: none (unit tests). */
    private readonly limiter?: Pick<IngestRateLimiter, 'admit'>,
  ) {}

  /**
   * Adds an SDK's evaluation summary (POST /v1/environments/{env_id}/evaluation-summaries;
   * docs/insights.md "SDK summaries") to the key's environment, in one statement, and answers once
   * it is committed. With an Idempotency-Key the counts and the key commit together: a repeat
   * within 24 h adds nothing and gets the first answer. Counts of flags the environment's project
   * does not have are dropped, and, from a client key, counts of flags that are not client-visible
   * or are archived (those a client key's OFREP answers leave out).
   * @throws PERMISSION_DENIED for a caller that is not an SDK or client key of the environment;
   *   INVALID_ARGUMENT for a bad summary or Idempotency-Key; RateLimitedError over the ingest limits.
   */
  async recordSummary(principal: Principal, scope: EnvironmentScope, summary: unknown, options: { idempotencyKey?: string | undefined } = {}): Promise<SummaryAnswer> {
    if (!isKeyPrincipal(principal)) throw new DomainError('PERMISSION_DENIED', 'evaluation summaries are sent with an SDK or client key');
    requireAllowed(principal, principal.kind === 'client_key' ? 'flag.client_evaluate' : 'flag.evaluate', { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId });
    const key = options.idempotencyKey;
    if (key !== undefined && !IDEMPOTENCY_KEY_PATTERN.test(key)) throw invalidArgument('Idempotency-Key must be 1-255 visible ASCII characters', 'idempotency-key');
    const nowMs = this.now();
    // A client key counts only what its answers can name; the answer is the same either way
    // (received_count is the entries sent), so it tells nothing about which flags are hidden.
    const counts: SummaryCounts = { ...summaryCounts(summary, nowMs), clientVisibleOnly: principal.kind === 'client_key' };
    this.limiter?.admit('ingest', principal, scope, 1);
    const answer: SummaryAnswer = { received_count: counts.counts.length };
    if (counts.counts.length === 0) return answer;
    if (key !== undefined && this.repos.idempotency !== undefined) {
      // Per key (a client key's Idempotency-Keys are its own, as ingest's), in the ingest table.
      const stored = `summary:${principal.sdkKeyId}:${key}`;
      const earlier = await this.repos.idempotency.get(scope, stored, nowMs);
      if (earlier !== null) return earlier as SummaryAnswer;
      const outcome = await this.repos.idempotency.storeOnce(scope, stored, { evaluationCounts: counts }, answer, nowMs + SUMMARY_IDEMPOTENCY_TTL_MS, nowMs);
      return outcome.answer as SummaryAnswer;
    }
    await this.repos.insights.addSummary(scope, counts);
    return answer;
  }

  async scope(principal: Principal, environmentId: string): Promise<EnvironmentScope> {
    return this.scopes.environment(principal, environmentId);
  }

  /**
   * The flag's counts per variant, hourly or daily, and when it was last evaluated.
   * @throws PERMISSION_DENIED without flag.read; NOT_FOUND for an unknown flag; INVALID_ARGUMENT
   * for a bad range (insightsRange).
   */
  async flagInsights(principal: Principal, scope: EnvironmentScope, flagKey: string, query: { from?: unknown; to?: unknown; granularity?: unknown }): Promise<FlagInsights> {
    requireAllowed(principal, 'flag.read', { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId });
    const range = insightsRange(query, this.now());
    const flag = typeof flagKey === 'string' ? await this.repos.flags.get(scope, flagKey) : null;
    if (flag === null) throw notFound('flag', String(flagKey));
    const [series, last, thresholds] = await Promise.all([
      this.repos.insights.series(scope, flagKey, range.granularity, range.fromMs, range.toMs),
      this.repos.insights.lastEvaluated(scope, [flagKey]),
      this.thresholds(scope),
    ]);
    const lastEvaluatedAtMs = last.get(flagKey) ?? null;
    return { series, lastEvaluatedAtMs, status: statusOf(flag, lastEvaluatedAtMs, this.now(), thresholds.statusWindowDays) };
  }

  /**
   * Each flag's (by key) last evaluation and status in the environment (the flag lists'
   * `include=insights`): the environment's flags, their last evaluations and the project's
   * window, three reads whatever the number of flags. Unknown keys are left out.
   */
  async activity(principal: Principal, scope: EnvironmentScope, flagKeys: string[]): Promise<Record<string, FlagActivity>> {
    requireAllowed(principal, 'flag.read', { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId });
    if (!Array.isArray(flagKeys) || flagKeys.length > 10_000 || !flagKeys.every((key) => isText(key, 256, 1))) throw invalidArgument('flagKeys must be a list of flag keys', 'flagKeys');
    const wanted = new Set(flagKeys);
    const [flags, last, thresholds] = await Promise.all([this.repos.flags.list(scope), this.repos.insights.lastEvaluated(scope, flagKeys), this.thresholds(scope)]);
    const nowMs = this.now();
    const answer: Record<string, FlagActivity> = {};
    for (const flag of flags) {
      if (!wanted.has(flag.key)) continue;
      const lastEvaluatedAtMs = last.get(flag.key) ?? null;
      answer[flag.key] = { lastEvaluatedAtMs, status: statusOf(flag, lastEvaluatedAtMs, nowMs, thresholds.statusWindowDays) };
    }
    return answer;
  }

  /**
   * Every flag's lifecycle stage and status per environment in a project (GET
   * /v1/projects/{project_id}/flag-lifecycle): one read per table, at most MAX_LIFECYCLE_FLAGS flags.
   * @throws NOT_FOUND for a project outside the caller's org; PERMISSION_DENIED without flag.read
   * on the project; INVALID_ARGUMENT for a stage that is none of LIFECYCLE_STAGES.
   */
  async projectLifecycle(principal: Principal, projectId: string, query: { stage?: unknown } = {}): Promise<FlagLifecycleAnswer> {
    const stage = query.stage;
    if (stage !== undefined && (typeof stage !== 'string' || !(LIFECYCLE_STAGES as readonly string[]).includes(stage))) {
      throw invalidArgument(`stage must be one of ${LIFECYCLE_STAGES.join(', ')}`, 'stage');
    }
    const scope = await this.scopes.project(principal, typeof projectId === 'string' ? projectId : '');
    requireAllowed(principal, 'flag.read', { orgId: scope.orgId, projectId: scope.projectId });
    const thresholds = await this.thresholds(scope);
    const nowMs = this.now();
    const snapshot = await this.repos.lifecycle.snapshot(scope, nowMs - thresholds.statusWindowDays * DAY_MS, MAX_LIFECYCLE_FLAGS);
    const lifecycle = projectLifecycle(snapshot, nowMs, thresholds);
    return {
      thresholds: thresholdsRecord(thresholds),
      environments: lifecycle.environments.map((e) => ({ id: e.id, name: e.name, critical: e.critical, counted: e.counted, reports_evaluations: e.reportsEvaluations })),
      flags: lifecycle.flags
        .filter((flag) => stage === undefined || flag.stage === stage)
        .map((flag) => ({
          key: flag.key,
          lifetime: flag.lifetime,
          archived: flag.archived,
          stage: flag.stage,
          environments: Object.fromEntries(Object.entries(flag.environments).map(([id, e]) => [id, { status: e.status, last_evaluated_at_ms: e.lastEvaluatedAtMs }])),
        })),
      truncated: lifecycle.truncated,
    };
  }

  private async thresholds(scope: { orgId: string; projectId: string }): Promise<LifecycleThresholds> {
    return (await this.repos.projects.get({ orgId: scope.orgId }, scope.projectId))?.lifecycle ?? DEFAULT_LIFECYCLE_THRESHOLDS;
  }

  /** When each flag (by key) was last evaluated in the environment (the flag lists' `include=insights`). */
  async lastEvaluated(principal: Principal, scope: EnvironmentScope, flagKeys: string[]): Promise<Record<string, number>> {
    requireAllowed(principal, 'flag.read', { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId });
    if (!Array.isArray(flagKeys) || flagKeys.length > 10_000 || !flagKeys.every((key) => isText(key, 256, 1))) throw invalidArgument('flagKeys must be a list of flag keys', 'flagKeys');
    return Object.fromEntries(await this.repos.insights.lastEvaluated(scope, flagKeys));
  }

  /**
   * Writes a gateway's report of its drained counts (no caller, as KeyUsageService.recordUses).
   * Each count is written only into an environment of the scope it names and a flag of that
   * project (the statement resolves both), so a report can only add evaluations of flags that
   * exist. The report's id is applied at most once, in the statement that adds its counts
   * (IdempotencyRepository.storeCountsOnce), so a report the gateway sends again after a lost
   * answer adds nothing (docs/insights.md "Exactness"); the answer is the count rows written.
   * @throws INVALID_ARGUMENT for a report without a UUID `reportId`, or not at most 5,000
   * well-formed counts and last-evaluation times within two days of now.
   */
  async recordCounts(report: unknown): Promise<number> {
    if (!isObject(report)) throw invalidArgument('a report is {reportId, counts, lastEvaluated}', 'report');
    const { reportId, counts, lastEvaluated } = report as Record<string, unknown>;
    if (typeof reportId !== 'string' || !REPORT_ID_PATTERN.test(reportId)) throw invalidArgument('reportId must be a lowercase UUID', 'reportId');
    const nowMs = this.now();
    const recent = (ms: number) => Math.abs(ms - nowMs) <= MAX_REPORT_SKEW_MS;
    if (!Array.isArray(counts) || counts.length > MAX_COUNTS_PER_REPORT || !counts.every((c) => isObject(c) && isCount(c) && recent(c.hourMs))) {
      throw invalidArgument(`counts must be a list of at most ${MAX_COUNTS_PER_REPORT} {orgId, projectId, environmentId, flagKey, variantKey, reason, hourMs, count} of the last two days`, 'counts');
    }
    if (!Array.isArray(lastEvaluated) || lastEvaluated.length > MAX_COUNTS_PER_REPORT || !lastEvaluated.every((l) => isObject(l) && isLast(l) && recent(l.atMs))) {
      throw invalidArgument(`lastEvaluated must be a list of at most ${MAX_COUNTS_PER_REPORT} {orgId, projectId, environmentId, flagKey, atMs} of the last two days`, 'lastEvaluated');
    }
    const drained = { counts: counts as DrainedCounts['counts'], lastEvaluated: lastEvaluated as DrainedCounts['lastEvaluated'] };
    if (this.repos.idempotency === undefined) return this.write(drained);
    return this.repos.idempotency.storeCountsOnce(`report:${reportId}`, picked(drained), nowMs + REPORT_ID_TTL_MS, nowMs);
  }

  /** This process's own drains: one statement, however many counts. */
  async write(drained: Pick<DrainedCounts, 'counts' | 'lastEvaluated'>): Promise<number> {
    return this.repos.insights.addCounts(picked(drained));
  }
}

/** Only the fields a count and a last evaluation have (a report from the hop may carry more). */
const picked = (drained: Pick<DrainedCounts, 'counts' | 'lastEvaluated'>): Pick<DrainedCounts, 'counts' | 'lastEvaluated'> => ({
  counts: drained.counts.map(({ orgId, projectId, environmentId, flagKey, variantKey, reason, hourMs, count }) => ({ orgId, projectId, environmentId, flagKey, variantKey, reason, hourMs, count })),
  lastEvaluated: drained.lastEvaluated.map(({ orgId, projectId, environmentId, flagKey, atMs }) => ({ orgId, projectId, environmentId, flagKey, atMs })),
});

/** Splits a drain into reports of at most MAX_COUNTS_PER_REPORT counts (a gateway's flusher sends each). */
export function reportsOf(drained: Pick<DrainedCounts, 'counts' | 'lastEvaluated'>): Array<Pick<DrainedCounts, 'counts' | 'lastEvaluated'>> {
  const reports: Array<Pick<DrainedCounts, 'counts' | 'lastEvaluated'>> = [];
  const chunks = Math.max(Math.ceil(drained.counts.length / MAX_COUNTS_PER_REPORT), Math.ceil(drained.lastEvaluated.length / MAX_COUNTS_PER_REPORT), 1);
  for (let i = 0; i < chunks; i++) {
    reports.push({
      counts: drained.counts.slice(i * MAX_COUNTS_PER_REPORT, (i + 1) * MAX_COUNTS_PER_REPORT),
      lastEvaluated: drained.lastEvaluated.slice(i * MAX_COUNTS_PER_REPORT, (i + 1) * MAX_COUNTS_PER_REPORT),
    });
  }
  return reports;
}
