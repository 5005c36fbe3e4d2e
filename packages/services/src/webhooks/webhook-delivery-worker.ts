import type { AuditActor, Repositories, WebhookDelivery, WebhookEndpoint } from '@switchyard/core';
import { recordChange } from '../audit/audit-trail.ts';
import { NO_METRICS, type ServiceMetrics, type WebhookDeliveryOutcome } from '../metrics.ts';
import type { SecretBox } from '../sso/secret-box.ts';
import { webhookAuditRecord } from './webhook-records.ts';
import { DEFAULT_RETRY_SCHEDULE, retryAfterMs, retryDelayMs, type RetrySchedule } from './webhook-retry.ts';
import { signingSecrets } from './webhook-secrets.ts';
import { attemptDelivery, type WebhookAttempt } from './webhook-sender.ts';

/** Failed attempts in a row (any delivery) after which an endpoint is disabled. */
export const MAX_CONSECUTIVE_FAILURES = 20;
/** The platform part that acts in the entries the worker writes. */
export const WEBHOOK_ACTOR: AuditActor = { type: 'system', id: 'webhooks' };

export interface WebhookWorkerOptions {
  /** Pause between looks for due deliveries (default 1 s: writes on other instances are seen within it). */
  pollMs?: number;
  /** A claimed delivery is the claimer's for this long (default 60 s, well over the 15 s attempt). */
  leaseMs?: number;
  /** Deliveries claimed and attempted at once (default 10). */
  batchSize?: number;
  schedule?: RetrySchedule;
  maxConsecutiveFailures?: number;
  /** PUBLIC_URL, read at each Slack message (it may be known only once the REST port listens). */
  publicUrl?: () => string;
  metrics?: Pick<ServiceMetrics, 'webhookDelivery'>;
  log?: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
  now?: () => number;
  random?: () => number;
}

export interface WebhookPassReport {
  delivered: number;
  retried: number;
  failed: number;
}

/**
 * Drains the webhook outbox (docs/workflow.md "Webhooks"), the worker pattern of MailWorker and
 * StatsWorker: claims due deliveries of enabled endpoints with a lease (FOR UPDATE SKIP LOCKED,
 * so every services instance's worker shares the queue, and a crashed one's claims are taken over
 * when their lease ends), attempts each (signed, guarded, 15 s), and records the outcome:
 * - 2xx: delivered; the endpoint's failures in a row go back to 0;
 * - 410 Gone: the delivery fails and the endpoint is disabled, with an entry saying why;
 * - anything else (other status, no answer, refused address): tried again after the retry
 *   schedule's wait or the answer's `Retry-After`, until the schedule's last attempt; the endpoint's
 *   failures in a row are counted and at 20 it is disabled, with an entry.
 * Deliveries of a disabled endpoint wait (they are not claimed) until it is enabled again.
 */
export class WebhookDeliveryWorker {
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly batchSize: number;
  private readonly schedule: RetrySchedule;
  private readonly maxConsecutiveFailures: number;
  private readonly publicUrl: () => string;
  private readonly metrics: Pick<ServiceMetrics, 'webhookDelivery'>;
  private readonly log: NonNullable<WebhookWorkerOptions['log']>;
  private readonly now: () => number;
  private readonly random: () => number;
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<WebhookPassReport> | null = null;
  private stopping = false;
  private started = false;

  constructor(
    private readonly repos: Repositories,
    private readonly box: SecretBox | null,
    private readonly fetchFn: typeof fetch,
    options: WebhookWorkerOptions = {},
  ) {
    this.pollMs = options.pollMs ?? 1_000;
    this.leaseMs = options.leaseMs ?? 60_000;
    this.batchSize = options.batchSize ?? 10;
    this.schedule = options.schedule ?? DEFAULT_RETRY_SCHEDULE;
    this.maxConsecutiveFailures = options.maxConsecutiveFailures ?? MAX_CONSECUTIVE_FAILURES;
    this.publicUrl = options.publicUrl ?? (() => 'http://localhost');
    this.metrics = options.metrics ?? NO_METRICS;
    this.log = options.log ?? (() => {});
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    if (!Number.isInteger(this.batchSize) || this.batchSize < 1) throw new RangeError('batchSize must be a positive integer');
  }

  start(): void {
    if (this.started || this.stopping) return;
    this.started = true;
    this.schedulePass(0);
  }

  /** Stops scheduling and waits for the pass in progress (what it claimed is recorded or left to its lease). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.current?.catch(() => {});
  }

  /** One pass, now: claims and attempts until nothing is due (at most `batchSize` at once). */
  runOnce(): Promise<WebhookPassReport> {
    const pass = this.pass();
    this.current = pass;
    return pass.finally(() => {
      if (this.current === pass) this.current = null;
    });
  }

  private schedulePass(delayMs: number): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.runOnce()
        .catch((error: unknown) => this.log('warn', 'webhooks: a pass failed; retrying at the next poll', { err: { message: (error as Error).message } }))
        .finally(() => {
          if (!this.stopping) this.schedulePass(this.pollMs);
        });
    }, delayMs);
    this.timer.unref?.();
  }

  private async pass(): Promise<WebhookPassReport> {
    const report: WebhookPassReport = { delivered: 0, retried: 0, failed: 0 };
    // Bounded: each claim takes at most batchSize, and a pass ends when a claim finds fewer.
    for (;;) {
      if (this.stopping) break;
      const claimed = await this.repos.webhooks.claimDue(this.now(), this.leaseMs, this.batchSize);
      const outcomes = await Promise.all(claimed.map((delivery) => this.deliver(delivery)));
      for (const outcome of outcomes) if (outcome !== null) report[outcome] += 1;
      if (claimed.length < this.batchSize) break;
    }
    return report;
  }

  private async deliver(delivery: WebhookDelivery): Promise<keyof WebhookPassReport | null> {
    const endpoint = await this.repos.webhooks.getEndpoint(delivery.orgId, delivery.endpointId);
    if (endpoint === null) return null; // deleted meanwhile: its deliveries went with it
    const fields = { delivery_id: delivery.id, endpoint_id: endpoint.id, org_id: endpoint.orgId, attempt: delivery.attempts };
    let attempt: WebhookAttempt;
    try {
      if (this.box === null) throw new Error('webhook secrets need SSO_SECRETS_KEY');
      const nowMs = this.now();
      attempt = await attemptDelivery(this.fetchFn, endpoint, delivery, signingSecrets(this.box, endpoint, nowMs), { publicUrl: this.publicUrl(), nowMs });
    } catch (error) {
      attempt = { statusCode: null, durationMs: 0, error: String((error as Error).message), response: null, retryAfter: null, refused: true };
    }
    const outcome = await this.record(endpoint, delivery, attempt);
    this.metrics.webhookDelivery(attempt.refused && outcome !== 'delivered' ? 'refused' : outcome, attempt.durationMs / 1000);
    // Never the secret, the body or the answer in the log: ids, status and the error only.
    this.log(outcome === 'delivered' ? 'info' : 'warn', `webhooks: ${outcome}`, { ...fields, status_code: attempt.statusCode, duration_ms: Math.round(attempt.durationMs), ...(attempt.error === null ? {} : { err: { message: attempt.error } }) });
    return outcome;
  }

  /** Records an attempt's outcome on the delivery and the endpoint (the rules of the class comment). */
  private async record(endpoint: WebhookEndpoint, delivery: WebhookDelivery, attempt: WebhookAttempt): Promise<Exclude<WebhookDeliveryOutcome, 'refused'>> {
    const nowMs = this.now();
    const logged = { statusCode: attempt.statusCode, durationMs: attempt.durationMs, error: attempt.error, response: attempt.response };
    if (attempt.statusCode !== null && attempt.statusCode >= 200 && attempt.statusCode < 300) {
      await this.repos.webhooks.recordAttempt(delivery.id, { status: 'delivered', ...logged }, nowMs);
      await this.repos.webhooks.noteSuccess(endpoint.id);
      return 'delivered';
    }
    if (attempt.statusCode === 410) {
      await this.repos.webhooks.recordAttempt(delivery.id, { status: 'failed', ...logged }, nowMs);
      await this.disable(endpoint, 'the endpoint answered 410 Gone', nowMs);
      return 'failed';
    }
    const last = delivery.attempts >= this.schedule.maxAttempts;
    const waitMs = retryAfterMs(attempt.retryAfter, nowMs, this.schedule.capMs) ?? retryDelayMs(this.schedule, delivery.attempts, this.random);
    await this.repos.webhooks.recordAttempt(delivery.id, last ? { status: 'failed', ...logged } : { status: 'pending', nextAttemptAtMs: nowMs + waitMs, ...logged }, nowMs);
    const inARow = await this.repos.webhooks.noteFailure(endpoint.id);
    if (inARow >= this.maxConsecutiveFailures) await this.disable(endpoint, `${inARow} failed attempts in a row`, nowMs);
    return last ? 'failed' : 'retried';
  }

  /** Disables the endpoint and records why (an entry by the `webhooks` system actor), once. */
  private async disable(endpoint: WebhookEndpoint, reason: string, nowMs: number): Promise<void> {
    await this.repos.unitOfWork.run(async (tx) => {
      const after = await tx.webhooks.disable(endpoint.id, reason, nowMs);
      if (after === null) return; // already disabled (by a person, or another worker first)
      await recordChange(
        tx,
        WEBHOOK_ACTOR,
        {
          orgId: after.orgId,
          action: 'webhook.disable',
          resourceType: 'webhook',
          resourceId: after.id,
          before: webhookAuditRecord({ ...after, enabled: true, disabledReason: null }),
          after: webhookAuditRecord(after),
          details: { reason },
        },
        nowMs,
      );
    });
    this.log('warn', 'webhooks: endpoint disabled', { endpoint_id: endpoint.id, org_id: endpoint.orgId, reason });
  }
}
