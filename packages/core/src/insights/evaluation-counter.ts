import type { EnvironmentScope } from '../ports/scopes.ts';

/** What one evaluation answered, as far as counting needs it (an EvaluationResult is one). */
export interface CountedResult {
  readonly flag_key: string;
  readonly variant_key: string;
  readonly reason: string;
}

/** One drained count: evaluations of one flag in one environment answering one variant for one reason within one UTC hour. */
export interface EvaluationCount {
  orgId: string;
  projectId: string;
  environmentId: string;
  flagKey: string;
  variantKey: string;
  reason: string;
  /** The UTC hour the evaluations fell in (epoch ms, a multiple of 3,600,000). */
  hourMs: number;
  count: number;
}

/** What drain() hands over: the counts, when the last counted evaluation happened per flag, and how many evaluations the key bound turned away. */
export interface DrainedCounts {
  counts: EvaluationCount[];
  /** Per (environment, flag): the instant of its last counted evaluation (epoch ms). */
  lastEvaluated: Array<{ orgId: string; projectId: string; environmentId: string; flagKey: string; atMs: number }>;
  /** Evaluations not counted because `maxKeys` distinct keys were already held. */
  dropped: number;
}

export const HOUR_MS = 3_600_000;
/** Default bound on the distinct (hour, environment, flag, variant, reason) keys held between two drains. */
export const DEFAULT_MAX_COUNTER_KEYS = 50_000;

/** One key's count, incremented in place (no Map.set per evaluation). */
interface Cell {
  n: number;
}

interface FlagCounts {
  /** variant key → reason → count */
  variants: Map<string, Map<string, Cell>>;
  lastAtMs: number;
}

interface EnvironmentCounts {
  orgId: string;
  projectId: string;
  flags: Map<string, FlagCounts>;
}

/**
 * Counts evaluations in memory per (UTC hour, environment, flag, variant, reason), from the hot
 * path with no I/O and no allocation for a key already held (nested maps, no joined key strings).
 * A flusher drains it every minute (docs/insights.md "Counting"): drain() swaps the maps out in
 * one synchronous step, so an evaluation is counted in exactly one drain.
 *
 * Bounded: a caller can only reach keys through flags that exist, but an environment with many
 * flags evaluated all at once, times variants and reasons, can still be large, so at most
 * `maxKeys` distinct keys are held; an evaluation needing a new key beyond that is counted in
 * `dropped` (reported by the flusher), never in memory.
 */
export class EvaluationCounter {
  private hours = new Map<number, Map<string, EnvironmentCounts>>();
  /** The hour counted last (its start, epoch ms) and its map in `hours`; forgotten at drain(). */
  private hourStartMs = -1;
  private hourEnvironments: Map<string, EnvironmentCounts> | undefined;
  /** The environment counted last in that hour. */
  private lastEnvironmentId: string | undefined;
  private lastEnvironment: EnvironmentCounts | undefined;
  private keys = 0;
  private dropped = 0;

  constructor(
    private readonly maxKeys: number = DEFAULT_MAX_COUNTER_KEYS,
    private readonly now: () => number = Date.now,
  ) {
    if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new RangeError('maxKeys must be a positive integer');
  }

  /** Counts one evaluation request's results in the scope's environment. */
  count(scope: EnvironmentScope, results: readonly CountedResult[]): void {
    if (results.length === 0) return;
    const atMs = this.now();
    // The hour's map and the environment counted last are remembered: a request in the same hour
    // and environment as the one before skips the hour arithmetic and two Map lookups.
    let environment: EnvironmentCounts | undefined;
    if (atMs >= this.hourStartMs && atMs < this.hourStartMs + HOUR_MS && this.hourEnvironments !== undefined) {
      environment = scope.environmentId === this.lastEnvironmentId ? this.lastEnvironment : undefined;
    } else {
      const hourMs = atMs - (atMs % HOUR_MS);
      let environments = this.hours.get(hourMs);
      if (environments === undefined) {
        environments = new Map();
        this.hours.set(hourMs, environments);
      }
      this.hourStartMs = hourMs;
      this.hourEnvironments = environments;
      this.lastEnvironmentId = undefined;
      this.lastEnvironment = undefined;
    }
    if (environment === undefined) {
      const environments = this.hourEnvironments!;
      environment = environments.get(scope.environmentId);
      if (environment === undefined) {
        environment = { orgId: scope.orgId, projectId: scope.projectId, flags: new Map() };
        environments.set(scope.environmentId, environment);
      }
      this.lastEnvironmentId = scope.environmentId;
      this.lastEnvironment = environment;
    }
    const flags = environment.flags;
    for (let i = 0; i < results.length; i++) {
      const result = results[i]!;
      let flag = flags.get(result.flag_key);
      if (flag === undefined) {
        flag = { variants: new Map(), lastAtMs: atMs };
        flags.set(result.flag_key, flag);
      }
      let reasons = flag.variants.get(result.variant_key);
      if (reasons === undefined) {
        reasons = new Map();
        flag.variants.set(result.variant_key, reasons);
      }
      const held = reasons.get(result.reason);
      if (held === undefined) {
        if (this.keys >= this.maxKeys) {
          this.dropped++;
          continue;
        }
        this.keys++;
        reasons.set(result.reason, { n: 1 });
      } else {
        held.n++;
      }
      flag.lastAtMs = atMs;
    }
  }

  /** Distinct keys held now. */
  get size(): number {
    return this.keys;
  }

  /** Everything counted since the last drain, handed over whole; the counter starts again empty. */
  drain(): DrainedCounts {
    const hours = this.hours;
    const dropped = this.dropped;
    this.hours = new Map();
    this.hourStartMs = -1;
    this.hourEnvironments = undefined;
    this.lastEnvironmentId = undefined;
    this.lastEnvironment = undefined;
    this.keys = 0;
    this.dropped = 0;
    const counts: EvaluationCount[] = [];
    const last = new Map<string, DrainedCounts['lastEvaluated'][number]>();
    for (const [hourMs, environments] of hours) {
      for (const [environmentId, environment] of environments) {
        for (const [flagKey, flag] of environment.flags) {
          let counted = false;
          for (const [variantKey, reasons] of flag.variants) {
            for (const [reason, cell] of reasons) {
              counts.push({ orgId: environment.orgId, projectId: environment.projectId, environmentId, flagKey, variantKey, reason, hourMs, count: cell.n });
              counted = true;
            }
          }
          if (!counted) continue;
          const id = `${environmentId}\u0000${flagKey}`;
          const seen = last.get(id);
          if (seen === undefined) last.set(id, { orgId: environment.orgId, projectId: environment.projectId, environmentId, flagKey, atMs: flag.lastAtMs });
          else if (seen.atMs < flag.lastAtMs) seen.atMs = flag.lastAtMs;
        }
      }
    }
    return { counts, lastEvaluated: [...last.values()], dropped };
  }

  /**
   * Puts back what a failed flush could not write, so the next flush writes it (still bounded by
   * `maxKeys`: what no longer fits is counted as dropped).
   */
  restore(drained: DrainedCounts): void {
    for (const entry of drained.counts) {
      let environments = this.hours.get(entry.hourMs);
      if (environments === undefined) {
        environments = new Map();
        this.hours.set(entry.hourMs, environments);
      }
      let environment = environments.get(entry.environmentId);
      if (environment === undefined) {
        environment = { orgId: entry.orgId, projectId: entry.projectId, flags: new Map() };
        environments.set(entry.environmentId, environment);
      }
      let flag = environment.flags.get(entry.flagKey);
      if (flag === undefined) {
        flag = { variants: new Map(), lastAtMs: 0 };
        environment.flags.set(entry.flagKey, flag);
      }
      let reasons = flag.variants.get(entry.variantKey);
      if (reasons === undefined) {
        reasons = new Map();
        flag.variants.set(entry.variantKey, reasons);
      }
      const held = reasons.get(entry.reason);
      if (held === undefined) {
        if (this.keys >= this.maxKeys) {
          this.dropped += entry.count;
          continue;
        }
        this.keys++;
        reasons.set(entry.reason, { n: entry.count });
      } else {
        held.n += entry.count;
      }
    }
    for (const seen of drained.lastEvaluated) {
      for (const environments of this.hours.values()) {
        const held = environments.get(seen.environmentId)?.flags.get(seen.flagKey);
        if (held !== undefined && held.lastAtMs < seen.atMs) held.lastAtMs = seen.atMs;
      }
    }
  }
}
