import type { WebhookDelivery, WebhookEndpoint, WebhookFormat } from '@switchyard/core';

/** An endpoint as REST and gRPC answer it: never a secret (docs/workflow.md "Webhooks"). */
export interface WebhookEndpointRecord {
  id: string;
  name: string;
  url: string;
  enabled: boolean;
  event_types: string[];
  filters: { project_ids: string[]; environment_ids: string[] };
  format: WebhookFormat;
  /** Why the platform disabled it (410, failures in a row); absent otherwise. */
  disabled_reason?: string;
  /** Failed attempts in a row; at 20 the endpoint is disabled. */
  consecutive_failures: number;
  /** Until when the secret before the last rotation still signs too; absent outside an overlap. */
  previous_secret_expires_at_ms?: number;
  created_at_ms: number;
  updated_at_ms: number;
}

/** The create and rotate answers: the only ones that carry the secret. */
export interface WebhookEndpointWithSecret extends WebhookEndpointRecord {
  secret: string;
}

export const webhookEndpointRecord = (endpoint: WebhookEndpoint, nowMs: number = Date.now()): WebhookEndpointRecord => ({
  id: endpoint.id,
  name: endpoint.name,
  url: endpoint.url,
  enabled: endpoint.enabled,
  event_types: [...endpoint.eventTypes],
  filters: { project_ids: [...endpoint.projectIds], environment_ids: [...endpoint.environmentIds] },
  format: endpoint.format,
  ...(endpoint.disabledReason === null ? {} : { disabled_reason: endpoint.disabledReason }),
  consecutive_failures: endpoint.consecutiveFailures,
  ...(endpoint.previousSecretExpiresAtMs !== null && endpoint.previousSecretExpiresAtMs > nowMs ? { previous_secret_expires_at_ms: endpoint.previousSecretExpiresAtMs } : {}),
  created_at_ms: endpoint.createdAtMs,
  updated_at_ms: endpoint.updatedAtMs,
});

/**
 * An endpoint as its change-history entries show it: its address cut to scheme, host and port (a
 * path may carry a token, Slack's do), no failure count (it changes with every attempt).
 */
export function webhookAuditRecord(endpoint: WebhookEndpoint): Record<string, unknown> {
  const { consecutive_failures: _failures, updated_at_ms: _updated, previous_secret_expires_at_ms: _previous, ...rest } = webhookEndpointRecord(endpoint);
  let origin = '';
  try {
    origin = new URL(endpoint.url).origin;
  } catch {
    origin = '';
  }
  return { ...rest, url: origin };
}

/** A delivery in the endpoint's log. */
export interface WebhookDeliveryRecord {
  id: string;
  endpoint_id: string;
  /** The `webhook-id` sent: the change-history entry's id. */
  message_id: string;
  event_type: string;
  status: WebhookDelivery['status'];
  attempts: number;
  /** When it is tried next (pending only). */
  next_attempt_at_ms?: number;
  /** The last attempt: HTTP status, duration, error, the first 1 KiB of the answer. */
  status_code?: number;
  duration_ms?: number;
  error?: string;
  response?: string;
  created_at_ms: number;
  finished_at_ms?: number;
}

export const webhookDeliveryRecord = (delivery: WebhookDelivery): WebhookDeliveryRecord => ({
  id: delivery.id,
  endpoint_id: delivery.endpointId,
  message_id: delivery.messageId,
  event_type: delivery.eventType,
  status: delivery.status,
  attempts: delivery.attempts,
  ...(delivery.status === 'pending' ? { next_attempt_at_ms: delivery.nextAttemptAtMs } : {}),
  ...(delivery.lastStatusCode === null ? {} : { status_code: delivery.lastStatusCode }),
  ...(delivery.lastDurationMs === null ? {} : { duration_ms: delivery.lastDurationMs }),
  ...(delivery.lastError === null ? {} : { error: delivery.lastError }),
  ...(delivery.lastResponse === null ? {} : { response: delivery.lastResponse }),
  created_at_ms: delivery.createdAtMs,
  ...(delivery.finishedAtMs === null ? {} : { finished_at_ms: delivery.finishedAtMs }),
});
