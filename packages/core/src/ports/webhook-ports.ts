/** How an endpoint's body is shaped (docs/workflow.md "Webhooks"). */
export const WEBHOOK_FORMATS = ['standard', 'slack'] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];

/** What an org admin sets on an endpoint. */
export interface WebhookEndpointSettings {
  name: string;
  url: string;
  enabled: boolean;
  /** Globs over change-history actions (`flag.*`, `*`, `segment.update`). */
  eventTypes: string[];
  /** Empty: every project (and the org-level entries); else entries of these projects only. */
  projectIds: string[];
  /** Empty: every environment; else entries of these environments only. */
  environmentIds: string[];
  format: WebhookFormat;
}

/** An org's endpoint as stored: its secrets sealed (never in an answer but the create/rotate one). */
export interface WebhookEndpoint extends WebhookEndpointSettings {
  id: string;
  orgId: string;
  sealedSecret: string;
  /** The secret before the last rotation, still signing until `previousSecretExpiresAtMs`. */
  sealedPreviousSecret: string | null;
  previousSecretExpiresAtMs: number | null;
  /** Failed attempts in a row (any delivery); a success resets it. */
  consecutiveFailures: number;
  /** Why the platform disabled it (410, failures in a row); null when a person did or it is enabled. */
  disabledReason: string | null;
  createdAtMs: number;
  updatedAtMs: number;
}

export type WebhookDeliveryStatus = 'pending' | 'sending' | 'delivered' | 'failed';

/** One entry for one endpoint, and the outcome of its last attempt (the delivery log). */
export interface WebhookDelivery {
  id: string;
  endpointId: string;
  orgId: string;
  /** The change-history entry's id (`webhook-id`, stable across retries); a test send's own id. */
  messageId: string;
  eventType: string;
  /** The standard payload's JSON text: `{type, timestamp, data}`. */
  payload: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  nextAttemptAtMs: number;
  lastStatusCode: number | null;
  lastDurationMs: number | null;
  lastError: string | null;
  /** The first 1 KiB of the last answer's body. */
  lastResponse: string | null;
  createdAtMs: number;
  finishedAtMs: number | null;
}

export interface NewWebhookDelivery {
  endpointId: string;
  orgId: string;
  messageId: string;
  eventType: string;
  payload: string;
  /**
   * Held by the caller, who attempts it at once, for this long (a test send): written as claimed,
   * so the worker does not deliver it a second time meanwhile; past the lease it is the worker's.
   */
  leaseMs?: number;
}

/** What one attempt came to. `pending`: retried at `nextAttemptAtMs`. */
export interface WebhookAttemptOutcome {
  status: 'delivered' | 'pending' | 'failed';
  nextAttemptAtMs?: number;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  response: string | null;
  /** An attempt made without a claim (a test send): count it here. */
  unclaimed?: boolean;
}

/**
 * Webhook endpoints and their outbox (docs/workflow.md "Webhooks"). `listEnabled` and `enqueue`
 * are called by recordChange with the repositories of the write's unit of work, so the deliveries
 * commit with the entry or not at all. Every org-scoped method answers null / nothing for another
 * org's ids and for malformed ids.
 */
export interface WebhookRepository {
  createEndpoint(orgId: string, id: string, settings: WebhookEndpointSettings, sealedSecret: string, nowMs: number): Promise<WebhookEndpoint>;
  getEndpoint(orgId: string, id: string): Promise<WebhookEndpoint | null>;
  /** The org's endpoints, oldest first (at most `limit`). */
  listEndpoints(orgId: string, limit: number): Promise<WebhookEndpoint[]>;
  countEndpoints(orgId: string): Promise<number>;
  /** Replaces the settings; enabling clears `disabledReason` and the failure count. */
  updateEndpoint(orgId: string, id: string, settings: WebhookEndpointSettings, nowMs: number): Promise<WebhookEndpoint | null>;
  /** A new secret; the current one becomes the previous one until `previousExpiresAtMs`. */
  rotateSecret(orgId: string, id: string, sealedSecret: string, sealedPrevious: string, previousExpiresAtMs: number, nowMs: number): Promise<WebhookEndpoint | null>;
  deleteEndpoint(orgId: string, id: string): Promise<WebhookEndpoint | null>;
  /** The org's enabled endpoints (the outbox's matching reads them in the writer's transaction). */
  listEnabled(orgId: string): Promise<WebhookEndpoint[]>;
  enqueue(deliveries: NewWebhookDelivery[], nowMs: number): Promise<WebhookDelivery[]>;
  /** Due deliveries of enabled endpoints, leased to the caller for `leaseMs` (attempts counted). */
  claimDue(nowMs: number, leaseMs: number, limit: number): Promise<WebhookDelivery[]>;
  /** Records an attempt of a claimed delivery. */
  recordAttempt(id: string, outcome: WebhookAttemptOutcome, nowMs: number): Promise<void>;
  /** A success: the endpoint's failures in a row go back to 0. */
  noteSuccess(endpointId: string): Promise<void>;
  /** A failure: returns the endpoint's failures in a row, this one included. */
  noteFailure(endpointId: string): Promise<number>;
  /** Disables an enabled endpoint with a reason; null when it was not enabled (someone else did it first). */
  disable(endpointId: string, reason: string, nowMs: number): Promise<WebhookEndpoint | null>;
  /** Enables it again (a successful test send): failures in a row back to 0; null when it was enabled. */
  reenable(orgId: string, endpointId: string, nowMs: number): Promise<WebhookEndpoint | null>;
  /** The endpoint's deliveries, newest first, before `beforeCreatedAtMs`/`beforeId` when given. */
  listDeliveries(orgId: string, endpointId: string, limit: number, before: { createdAtMs: number; id: string } | null): Promise<WebhookDelivery[]>;
  getDelivery(orgId: string, endpointId: string, deliveryId: string): Promise<WebhookDelivery | null>;
  /** Makes a delivery due now again (a fresh round of attempts); null when it is being sent. */
  redeliver(orgId: string, endpointId: string, deliveryId: string, nowMs: number): Promise<WebhookDelivery | null>;
  /** Deletes at most `limit` deliveries created before `beforeMs` (any status); returns how many. */
  pruneOlderThan(beforeMs: number, limit: number): Promise<number>;
}
