import {
  DAY_MS,
  HOUR_MS,
  insightsRange,
  invalidArgument,
  notFound,
  type DrainedCounts,
  type EnvironmentScope,
  type InsightsPoint,
  type InsightsRepository,
  type Principal,
  type Repositories,
} from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import type { ScopeResolver } from '../scopes.ts';

/** At most this many counts in one report a gateway sends (its flusher splits a larger drain). */
export const MAX_COUNTS_PER_REPORT = 5_000;
/** A report's hours may be at most this far from the services' clock (a gateway flushes every minute). */
const MAX_REPORT_SKEW_MS = 2 * DAY_MS;

/** A flag's series and its last evaluation (GET /v1/environments/{env_id}/flags/{key}/insights). */
export interface FlagInsights {
  series: InsightsPoint[];
  /** Null: never evaluated (or not since the counts began). */
  lastEvaluatedAtMs: number | null;
}

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

/**
 * Evaluation counts per flag and environment (docs/insights.md): written by this process's
 * EvaluationCountFlusher, and by gateways' over the hop (InsightsGatewayService.RecordCounts);
 * read by whoever may read the environment's flags.
 */
export class InsightsService {
  constructor(
    private readonly repos: Pick<Repositories, 'flags'> & { insights: InsightsRepository },
    private readonly scopes: ScopeResolver,
    private readonly now: () => number = Date.now,
  ) {}

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
    if (typeof flagKey !== 'string' || (await this.repos.flags.getDefinition(scope, flagKey)) === null) throw notFound('flag', String(flagKey));
    const [series, last] = await Promise.all([
      this.repos.insights.series(scope, flagKey, range.granularity, range.fromMs, range.toMs),
      this.repos.insights.lastEvaluated(scope, [flagKey]),
    ]);
    return { series, lastEvaluatedAtMs: last.get(flagKey) ?? null };
  }

  /** When each flag (by key) was last evaluated in the environment (the flag lists' `include=insights`). */
  async lastEvaluated(principal: Principal, scope: EnvironmentScope, flagKeys: string[]): Promise<Record<string, number>> {
    requireAllowed(principal, 'flag.read', { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId });
    if (!Array.isArray(flagKeys) || flagKeys.length > 10_000 || !flagKeys.every((key) => isText(key, 256, 1))) throw invalidArgument('flagKeys must be a list of flag keys', 'flagKeys');
    return Object.fromEntries(await this.repos.insights.lastEvaluated(scope, flagKeys));
  }

  /**
   * Writes a drained counter's counts (this process's flusher, or a gateway's report: no caller,
   * as KeyUsageService.recordUses). Each count is written only into an environment of the scope it
   * names and a flag of that project (the statement resolves both), so a report can only add
   * evaluations of flags that exist.
   * @throws INVALID_ARGUMENT for a report that is not at most 5,000 well-formed counts and
   * last-evaluation times within two days of now.
   */
  async recordCounts(report: unknown): Promise<number> {
    if (!isObject(report)) throw invalidArgument('a report is {counts, lastEvaluated}', 'report');
    const { counts, lastEvaluated } = report as Record<string, unknown>;
    const nowMs = this.now();
    const recent = (ms: number) => Math.abs(ms - nowMs) <= MAX_REPORT_SKEW_MS;
    if (!Array.isArray(counts) || counts.length > MAX_COUNTS_PER_REPORT || !counts.every((c) => isObject(c) && isCount(c) && recent(c.hourMs))) {
      throw invalidArgument(`counts must be a list of at most ${MAX_COUNTS_PER_REPORT} {orgId, projectId, environmentId, flagKey, variantKey, reason, hourMs, count} of the last two days`, 'counts');
    }
    if (!Array.isArray(lastEvaluated) || lastEvaluated.length > MAX_COUNTS_PER_REPORT || !lastEvaluated.every((l) => isObject(l) && isLast(l) && recent(l.atMs))) {
      throw invalidArgument(`lastEvaluated must be a list of at most ${MAX_COUNTS_PER_REPORT} {orgId, projectId, environmentId, flagKey, atMs} of the last two days`, 'lastEvaluated');
    }
    return this.write({ counts: counts as DrainedCounts['counts'], lastEvaluated: lastEvaluated as DrainedCounts['lastEvaluated'] });
  }

  /** This process's own drains: one statement, however many counts. */
  async write(drained: Pick<DrainedCounts, 'counts' | 'lastEvaluated'>): Promise<number> {
    const counts = drained.counts.map(({ orgId, projectId, environmentId, flagKey, variantKey, reason, hourMs, count }) => ({ orgId, projectId, environmentId, flagKey, variantKey, reason, hourMs, count }));
    const lastEvaluated = drained.lastEvaluated.map(({ orgId, projectId, environmentId, flagKey, atMs }) => ({ orgId, projectId, environmentId, flagKey, atMs }));
    return this.repos.insights.addCounts({ counts, lastEvaluated });
  }
}

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
