import type { ExclusiveLock, Repositories } from '@switchyard/core';
import { DEFAULT_AUDIT_MAX_ENTRIES_PER_ORG, DEFAULT_AUDIT_RETENTION_DAYS } from '../audit/audit-retention.ts';
import { DEFAULT_LOGIN_THROTTLE } from '../auth/login-throttle.ts';
import type { IngestRetention } from './ingest-retention.ts';
import { PeriodicRuns } from './periodic-runs.ts';
import type { InsightsRetention } from '../insights/insights-retention.ts';

/** Timing and sizes of a Pruner; every field has a production default. */
export interface PrunerOptions {
  /** Pause between pruning runs (default 1 hour). */
  intervalMs?: number;
  /** Delay of the first run after start (default: one minute, or the interval when shorter). */
  firstRunAfterMs?: number;
  /** Rows deleted per statement (default 1,000): each statement holds its locks briefly. */
  batchSize?: number;
  /** Pause between two batches of one table (default 100 ms), so pruning never hogs the database. */
  pauseMs?: number;
  /**
   * Login failures older than this can no longer count towards a throttle (default: the login
   * throttle's own window, DEFAULT_LOGIN_THROTTLE in auth/login-throttle.ts).
   */
  loginWindowMs?: number;
  /** Change history entries older than this are deleted (default 365 days, audit/audit-retention.ts). */
  auditRetentionMs?: number;
  /**
   * Webhook deliveries (the delivery log, and deliveries still waiting, e.g. for a disabled
   * endpoint) older than this are deleted (default 14 days: well past the ~3.2 days of retries).
   */
  webhookLogRetentionMs?: number;
  /** An org's change history entries beyond its this many most recently appended are deleted (default 100,000). */
  auditMaxEntriesPerOrg?: number;
  /**
   * Orgs one statement of the cap's search looks at (default 100): a statement reads at most this
   * many times (cap + 1) index entries, however many orgs there are.
   */
  orgsPerCapScan?: number;
  /**
   * The time partitions of events and exposures (created ahead, dropped past retention, counted
   * for the row quota), run last in each run under the same lock; absent: not maintained.
   */
  ingestRetention?: IngestRetention;
  /** Evaluation counts: hours rolled up into days, both deleted past retention (docs/insights.md "Retention"); absent: not maintained. */
  insightsRetention?: InsightsRetention;
  log?: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
  now?: () => number;
}

/** Rows one run deleted, per table. */
export interface PruneReport {
  idempotencyKeys: number;
  refreshTokens: number;
  sessions: number;
  invitations: number;
  loginFailures: number;
  /** Single sign-on logins never finished and one-time codes never exchanged. */
  ssoLogins: number;
  /** Change history entries past the retention period or beyond their org's cap. */
  auditEntries: number;
  /** API tokens revoked or expired more than API_TOKEN_KEPT_AFTER_END_MS ago. */
  apiTokens: number;
  /** Webhook deliveries older than the delivery log's retention. */
  webhookDeliveries: number;
}

export const DEFAULT_WEBHOOK_LOG_RETENTION_MS = 14 * 24 * 3_600_000;

/**
 * How long a revoked or expired API token stays in the table (not listed, authenticating nothing):
 * an org admin creating and revoking tokens in a loop must not grow the shared database for ever.
 */
export const API_TOKEN_KEPT_AFTER_END_MS = 30 * 24 * 3_600_000;

export const DEFAULT_PRUNE_INTERVAL_MS = 60 * 60_000;
export const DEFAULT_PRUNE_BATCH_SIZE = 1_000;
const DEFAULT_PAUSE_MS = 100;
const DEFAULT_FIRST_RUN_AFTER_MS = 60_000;
const DEFAULT_ORGS_PER_CAP_SCAN = 100;
const DAY_MS = 24 * 60 * 60_000;

/**
 * Deletes rows that can never matter again, so these tables stop growing without bound:
 * Idempotency-Key answers past their expiry, refresh tokens past theirs (spent or not), sessions
 * ended or expired (with their refresh tokens), invitations past their expiry, login failures
 * older than the throttle window, single sign-on logins and codes past their expiry, and API
 * tokens revoked or expired more than 30 days ago, and webhook deliveries older than their log's
 * retention (14 days by default). It also
 * bounds the change history: entries older than the retention period go, and so do each org's
 * oldest entries beyond the per-org cap (the org's `auditMaxEntriesPerOrg` most recently appended
 * stay). Between two runs an org may go over the cap by what it writes in one interval.
 *
 * 1. One instance at a time: a run holds an ExclusiveLock (a PostgreSQL advisory lock); an
 *    instance that finds it held skips the run, since another instance is doing the work.
 * 2. The cut-off instants are read once at the start of a run.
 * 3. Each table is pruned in batches of `batchSize` rows, one statement each, with a pause
 *    between batches, until a batch deletes fewer than `batchSize` (the backlog is gone). The
 *    change history goes the same way, after retention one over-cap org at a time: orgs are looked
 *    at `orgsPerCapScan` per statement, and only the excess of the orgs found is deleted.
 * 4. Then evaluation counts (InsightsRetention), when given: hours rolled up, old rows deleted.
 * 5. Last, the time partitions of events and exposures (IngestRetention), when given.
 * 6. stop() ends the run after the current statement and waits for it.
 */
export class Pruner {
  readonly intervalMs: number;
  readonly batchSize: number;
  private readonly pauseMs: number;
  private readonly loginWindowMs: number;
  private readonly auditRetentionMs: number;
  private readonly webhookLogRetentionMs: number;
  readonly auditMaxEntriesPerOrg: number;
  private readonly orgsPerCapScan: number;
  private readonly ingestRetention: IngestRetention | undefined;
  private readonly insightsRetention: InsightsRetention | undefined;
  private readonly log: NonNullable<PrunerOptions['log']>;
  private readonly now: () => number;
  private readonly runs: PeriodicRuns<PruneReport | null>;
  private wakeFromPause: (() => void) | null = null;

  constructor(
    private readonly repos: Pick<Repositories, 'idempotency' | 'refreshTokens' | 'sessions' | 'invitations' | 'loginThrottle' | 'ssoLogins' | 'audit' | 'apiTokens' | 'webhooks'>,
    private readonly lock: ExclusiveLock,
    options: PrunerOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? DEFAULT_PRUNE_INTERVAL_MS;
    this.batchSize = options.batchSize ?? DEFAULT_PRUNE_BATCH_SIZE;
    this.pauseMs = options.pauseMs ?? DEFAULT_PAUSE_MS;
    this.loginWindowMs = options.loginWindowMs ?? DEFAULT_LOGIN_THROTTLE.windowMs;
    this.auditRetentionMs = options.auditRetentionMs ?? DEFAULT_AUDIT_RETENTION_DAYS * DAY_MS;
    this.auditMaxEntriesPerOrg = options.auditMaxEntriesPerOrg ?? DEFAULT_AUDIT_MAX_ENTRIES_PER_ORG;
    this.webhookLogRetentionMs = options.webhookLogRetentionMs ?? DEFAULT_WEBHOOK_LOG_RETENTION_MS;
    this.orgsPerCapScan = options.orgsPerCapScan ?? DEFAULT_ORGS_PER_CAP_SCAN;
    this.ingestRetention = options.ingestRetention;
    this.insightsRetention = options.insightsRetention;
    this.log = options.log ?? (() => {});
    this.now = options.now ?? Date.now;
    if (!Number.isInteger(this.batchSize) || this.batchSize < 1) throw new RangeError('batchSize must be a positive integer');
    if (!(this.auditRetentionMs > 0)) throw new RangeError('auditRetentionMs must be positive');
    if (!Number.isInteger(this.auditMaxEntriesPerOrg) || this.auditMaxEntriesPerOrg < 1) throw new RangeError('auditMaxEntriesPerOrg must be a positive integer');
    if (!Number.isInteger(this.orgsPerCapScan) || this.orgsPerCapScan < 1) throw new RangeError('orgsPerCapScan must be a positive integer');
    this.runs = new PeriodicRuns(() => this.run(), {
      intervalMs: this.intervalMs,
      firstRunAfterMs: options.firstRunAfterMs ?? Math.min(this.intervalMs, DEFAULT_FIRST_RUN_AFTER_MS),
      onError: (error) => this.log('warn', 'prune: run failed; next run at the next interval', { err: { message: (error as Error).message } }),
    });
  }

  /** Schedules the runs: the first after `firstRunAfterMs`, then every `intervalMs` after the previous one ended. */
  start(): void {
    this.runs.start();
  }

  /**
   * No more runs on the schedule; `runOnce` still runs (a test that counts what one run deletes
   * must not race the scheduled first run of a slow machine).
   */
  unschedule(): void {
    this.runs.unschedule();
  }

  /** Stops scheduling, cuts a run in progress short after its current statement, and waits for it. */
  stop(): Promise<void> {
    return this.runs.stop(() => this.wakeFromPause?.());
  }

  /**
   * One pruning run, now. Returns what it deleted, or null when another holder of the lock (another
   * instance) is running one: this instance then does nothing.
   */
  runOnce(): Promise<PruneReport | null> {
    return this.runs.runOnce();
  }

  private get stopping(): boolean {
    return this.runs.stopping;
  }

  private async run(): Promise<PruneReport | null> {
    const outcome = await this.lock.tryRun(async () => {
      const nowMs = this.now();
      const report: PruneReport = { idempotencyKeys: 0, refreshTokens: 0, sessions: 0, invitations: 0, loginFailures: 0, ssoLogins: 0, auditEntries: 0, apiTokens: 0, webhookDeliveries: 0 };
      report.idempotencyKeys = await this.drain((limit) => this.repos.idempotency.pruneExpired(nowMs, limit));
      report.refreshTokens = await this.drain((limit) => this.repos.refreshTokens.pruneExpired(nowMs, limit));
      report.sessions = await this.drain((limit) => this.repos.sessions.pruneExpired(nowMs, limit));
      report.invitations = await this.drain((limit) => this.repos.invitations.pruneExpired(nowMs, limit));
      report.loginFailures = await this.drain((limit) => this.repos.loginThrottle.pruneOlderThan(nowMs - this.loginWindowMs, limit));
      report.ssoLogins = await this.drain((limit) => this.repos.ssoLogins.pruneExpired(nowMs, limit));
      report.apiTokens = await this.drain((limit) => this.repos.apiTokens.pruneEnded(nowMs - API_TOKEN_KEPT_AFTER_END_MS, limit));
      // Retention first: what it deletes no longer counts towards any org's cap.
      report.auditEntries = await this.drain((limit) => this.repos.audit.pruneOlderThan(nowMs - this.auditRetentionMs, limit));
      report.auditEntries += await this.pruneAuditOverCap();
      report.webhookDeliveries = await this.drain((limit) => this.repos.webhooks.pruneOlderThan(nowMs - this.webhookLogRetentionMs, limit));
      // Its own report is logged by it (InsightsRetention).
      if (this.insightsRetention && !this.stopping) await this.insightsRetention.run(nowMs, () => this.stopping);
      // Whole partitions, not rows: its own report is logged by it (IngestRetention).
      if (this.ingestRetention && !this.stopping) await this.ingestRetention.run(nowMs, () => this.stopping);
      return report;
    });
    if (!outcome.ran) {
      this.log('info', 'prune: another instance holds the lock; skipped');
      return null;
    }
    const { idempotencyKeys, refreshTokens, sessions, invitations, loginFailures, ssoLogins, auditEntries, webhookDeliveries } = outcome.value;
    if (idempotencyKeys + refreshTokens + sessions + invitations + loginFailures + ssoLogins + auditEntries + webhookDeliveries > 0) {
      this.log('info', 'prune: deleted expired rows and change history beyond its bounds', {
        idempotency_keys: idempotencyKeys,
        refresh_tokens: refreshTokens,
        sessions,
        invitations,
        login_failures: loginFailures,
        sso_logins: ssoLogins,
        audit_entries: auditEntries,
        webhook_deliveries: webhookDeliveries,
      });
    }
    return outcome.value;
  }

  /**
   * Deletes every over-cap org's excess: pages of orgs in id order, and for each org found over the
   * cap its entries appended up to the newest one beyond it, in batches. That position is read
   * once, so what the org appends meanwhile comes after it and stays. Returns how many entries went.
   */
  private async pruneAuditOverCap(): Promise<number> {
    let total = 0;
    let afterOrgId: string | null = null;
    while (!this.stopping) {
      const scan = await this.repos.audit.findOverCap(this.auditMaxEntriesPerOrg, afterOrgId, this.orgsPerCapScan);
      for (const { orgId, newestExcessSeq } of scan.overCap) {
        if (this.stopping) break;
        const deleted = await this.drain((limit) => this.repos.audit.pruneThrough(orgId, newestExcessSeq, limit));
        // Which org went over the cap is worth an operator's attention: it writes without pause.
        if (deleted > 0) this.log('info', 'prune: change history over the per-org cap; oldest entries deleted', { org_id: orgId, audit_entries: deleted, cap: this.auditMaxEntriesPerOrg });
        total += deleted;
      }
      afterOrgId = scan.nextAfterOrgId;
      if (afterOrgId === null || this.stopping) break;
      await this.pause();
    }
    return total;
  }

  /** Batches until one deletes fewer than a batch (or the pruner stops); returns the total. */
  private async drain(prune: (limit: number) => Promise<number>): Promise<number> {
    let total = 0;
    while (!this.stopping) {
      const deleted = await prune(this.batchSize);
      total += deleted;
      if (deleted < this.batchSize || this.stopping) break;
      await this.pause();
    }
    return total;
  }

  /** Waits pauseMs, or less when stop() wakes it. */
  private pause(): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.wakeFromPause = null;
        resolve();
      };
      const timer = setTimeout(wake, this.pauseMs);
      this.wakeFromPause = wake;
    });
  }
}
