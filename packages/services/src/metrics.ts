import type { EvaluationResult } from '@switchyard/core';

/** How a stats job claimed by a StatsWorker ended (the `status` of `switchyard_stats_jobs_total`). */
export type StatsJobOutcome =
  /** Results computed and stored. */
  | 'completed'
  /** The computation failed, or the job had been claimed too often: the job is marked failed. */
  | 'failed'
  /** A transient error (the database is unreachable): left to its lease, claimed again later. */
  | 'interrupted'
  /** Another worker took the job over meanwhile (the lease was lost); it finishes the job. */
  | 'lease_lost';

/**
 * What the services report for the host's metrics (Prometheus in hosts/server). The services know
 * nothing of Prometheus: they call these plain callbacks, and the default does nothing. Every call
 * is on a hot path or close to one, so implementations only add to counters.
 */
export interface ServiceMetrics {
  /** One evaluate() call's results: one per flag evaluated (REST evaluate and OFREP). */
  evaluated(results: readonly EvaluationResult[]): void;
  /**
   * Entries of one ingest call once its valid rows are stored: accepted (stored) and rejected
   * (invalid, each entry counted). Idempotent repeats are not counted again.
   */
  ingested(kind: 'events' | 'exposures', accepted: number, rejected: number): void;
  /** A claimed stats job ended; `seconds` is the time from its claim to its end. */
  statsJob(outcome: StatsJobOutcome, seconds: number): void;
  /** One webhook delivery attempt ended (docs/workflow.md "Webhooks"); `seconds`: the HTTP exchange. */
  webhookDelivery(outcome: WebhookDeliveryOutcome, seconds: number): void;
  /**
   * The scheduler handled one due scheduled change or scheduled change request (docs/workflow.md
   * "Scheduled changes"); `latenessSeconds`: from its execute_at_ms to when it was handled.
   */
  scheduledApplication(kind: ScheduledKind, outcome: ScheduledOutcome, latenessSeconds: number): void;
}

/** What the scheduler applied (the `kind` of `switchyard_scheduler_applications_total`). */
export type ScheduledKind = 'scheduled_change' | 'change_request';
/**
 * How it ended (the `outcome`): applied; failed (a scheduled change that no longer applies);
 * conflicted (a change request whose versions, operations, approvals or scheduler's rights no longer hold).
 */
export type ScheduledOutcome = 'applied' | 'failed' | 'conflicted';

/**
 * How a webhook delivery attempt ended (the `outcome` of `switchyard_webhook_deliveries_total`):
 * delivered (2xx), retried (a failure, tried again later), failed (the last attempt failed, or 410),
 * or refused (the address is not public, or the secret could not be opened).
 */
export type WebhookDeliveryOutcome = 'delivered' | 'retried' | 'failed' | 'refused';

/** ServiceMetrics that record nothing (the default of every service). */
export const NO_METRICS: ServiceMetrics = {
  evaluated: () => {},
  ingested: () => {},
  statsJob: () => {},
  webhookDelivery: () => {},
  scheduledApplication: () => {},
};
