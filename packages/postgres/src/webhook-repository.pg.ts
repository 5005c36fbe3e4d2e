import type postgres from 'postgres';
import type {
  NewWebhookDelivery,
  WebhookAttemptOutcome,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointSettings,
  WebhookFormat,
  WebhookRepository,
} from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

interface EndpointRow {
  id: string;
  org_id: string;
  name: string;
  url: string;
  enabled: boolean;
  event_types: string[];
  project_ids: string[];
  environment_ids: string[];
  format: WebhookFormat;
  sealed_secret: string;
  sealed_previous_secret: string | null;
  previous_secret_expires_at_ms: string | number | null;
  consecutive_failures: number;
  disabled_reason: string | null;
  created_at_ms: string | number;
  updated_at_ms: string | number;
}

interface DeliveryRow {
  id: string;
  endpoint_id: string;
  org_id: string;
  message_id: string;
  event_type: string;
  payload: string;
  status: WebhookDelivery['status'];
  attempts: number;
  next_attempt_at_ms: string | number;
  last_status_code: number | null;
  last_duration_ms: number | null;
  last_error: string | null;
  last_response: string | null;
  created_at_ms: string | number;
  finished_at_ms: string | number | null;
}

const toEndpoint = (row: EndpointRow): WebhookEndpoint => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  url: row.url,
  enabled: row.enabled,
  eventTypes: row.event_types,
  projectIds: row.project_ids,
  environmentIds: row.environment_ids,
  format: row.format,
  sealedSecret: row.sealed_secret,
  sealedPreviousSecret: row.sealed_previous_secret,
  previousSecretExpiresAtMs: row.previous_secret_expires_at_ms === null ? null : Number(row.previous_secret_expires_at_ms),
  consecutiveFailures: row.consecutive_failures,
  disabledReason: row.disabled_reason,
  createdAtMs: Number(row.created_at_ms),
  updatedAtMs: Number(row.updated_at_ms),
});

const toDelivery = (row: DeliveryRow): WebhookDelivery => ({
  id: row.id,
  endpointId: row.endpoint_id,
  orgId: row.org_id,
  messageId: row.message_id,
  eventType: row.event_type,
  payload: row.payload,
  status: row.status,
  attempts: row.attempts,
  nextAttemptAtMs: Number(row.next_attempt_at_ms),
  lastStatusCode: row.last_status_code,
  lastDurationMs: row.last_duration_ms,
  lastError: row.last_error,
  lastResponse: row.last_response,
  createdAtMs: Number(row.created_at_ms),
  finishedAtMs: row.finished_at_ms === null ? null : Number(row.finished_at_ms),
});

/**
 * Webhook endpoints (`webhook_endpoints`) and their outbox (`webhook_deliveries`). claimDue is one
 * UPDATE over a FOR UPDATE SKIP LOCKED sub-select (as mails and stats jobs are claimed), so the
 * delivery workers of every services instance share the queue and never send one delivery twice
 * while its lease holds.
 */
export class PgWebhookRepository implements WebhookRepository {
  constructor(private readonly sql: Sql) {}

  private json(value: unknown): postgres.Parameter {
    return this.sql.json(value as postgres.JSONValue);
  }

  async createEndpoint(orgId: string, id: string, settings: WebhookEndpointSettings, sealedSecret: string, nowMs: number): Promise<WebhookEndpoint> {
    const [row] = await translateErrors(
      () => this.sql<EndpointRow[]>`
        INSERT INTO webhook_endpoints (id, org_id, name, url, enabled, event_types, project_ids, environment_ids, format, sealed_secret, created_at_ms, updated_at_ms)
        VALUES (${id}, ${orgId}, ${settings.name}, ${settings.url}, ${settings.enabled}, ${this.json(settings.eventTypes)}, ${this.json(settings.projectIds)},
                ${this.json(settings.environmentIds)}, ${settings.format}, ${sealedSecret}, ${nowMs}, ${nowMs})
        RETURNING *`,
      { resource: 'webhook', parent: 'organisation' },
    );
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toEndpoint(row);
  }

  async getEndpoint(orgId: string, id: string): Promise<WebhookEndpoint | null> {
    if (!isUuid(orgId) || !isUuid(id)) return null;
    const [row] = await this.sql<EndpointRow[]>`SELECT * FROM webhook_endpoints WHERE org_id = ${orgId} AND id = ${id}`;
    return row ? toEndpoint(row) : null;
  }

  async listEndpoints(orgId: string, limit: number): Promise<WebhookEndpoint[]> {
    if (!isUuid(orgId)) return [];
    const rows = await this.sql<EndpointRow[]>`SELECT * FROM webhook_endpoints WHERE org_id = ${orgId} ORDER BY created_at_ms, id LIMIT ${limit}`;
    return rows.map(toEndpoint);
  }

  async countEndpoints(orgId: string): Promise<number> {
    if (!isUuid(orgId)) return 0;
    const [row] = await this.sql<Array<{ count: number }>>`SELECT count(*)::int AS count FROM webhook_endpoints WHERE org_id = ${orgId}`;
    return row?.count ?? 0;
  }

  async updateEndpoint(orgId: string, id: string, settings: WebhookEndpointSettings, nowMs: number): Promise<WebhookEndpoint | null> {
    if (!isUuid(orgId) || !isUuid(id)) return null;
    const [row] = await this.sql<EndpointRow[]>`
      UPDATE webhook_endpoints SET
        name = ${settings.name}, url = ${settings.url}, event_types = ${this.json(settings.eventTypes)},
        project_ids = ${this.json(settings.projectIds)}, environment_ids = ${this.json(settings.environmentIds)}, format = ${settings.format},
        consecutive_failures = CASE WHEN ${settings.enabled} AND NOT enabled THEN 0 ELSE consecutive_failures END,
        disabled_reason = CASE WHEN ${settings.enabled} THEN NULL ELSE disabled_reason END,
        enabled = ${settings.enabled}, updated_at_ms = ${nowMs}
      WHERE org_id = ${orgId} AND id = ${id}
      RETURNING *`;
    return row ? toEndpoint(row) : null;
  }

  async rotateSecret(orgId: string, id: string, sealedSecret: string, sealedPrevious: string, previousExpiresAtMs: number, nowMs: number): Promise<WebhookEndpoint | null> {
    if (!isUuid(orgId) || !isUuid(id)) return null;
    const [row] = await this.sql<EndpointRow[]>`
      UPDATE webhook_endpoints SET sealed_secret = ${sealedSecret}, sealed_previous_secret = ${sealedPrevious},
        previous_secret_expires_at_ms = ${previousExpiresAtMs}, updated_at_ms = ${nowMs}
      WHERE org_id = ${orgId} AND id = ${id}
      RETURNING *`;
    return row ? toEndpoint(row) : null;
  }

  async deleteEndpoint(orgId: string, id: string): Promise<WebhookEndpoint | null> {
    if (!isUuid(orgId) || !isUuid(id)) return null;
    const [row] = await this.sql<EndpointRow[]>`DELETE FROM webhook_endpoints WHERE org_id = ${orgId} AND id = ${id} RETURNING *`;
    return row ? toEndpoint(row) : null;
  }

  async listEnabled(orgId: string): Promise<WebhookEndpoint[]> {
    if (!isUuid(orgId)) return [];
    const rows = await this.sql<EndpointRow[]>`SELECT * FROM webhook_endpoints WHERE org_id = ${orgId} AND enabled ORDER BY created_at_ms, id`;
    return rows.map(toEndpoint);
  }

  async enqueue(deliveries: NewWebhookDelivery[], nowMs: number): Promise<WebhookDelivery[]> {
    if (deliveries.length === 0) return [];
    const rows = await this.sql<DeliveryRow[]>`
      INSERT INTO webhook_deliveries ${this.sql(
        deliveries.map((d) => ({
          endpoint_id: d.endpointId,
          org_id: d.orgId,
          message_id: d.messageId,
          event_type: d.eventType,
          payload: d.payload,
          status: d.leaseMs === undefined ? 'pending' : 'sending',
          next_attempt_at_ms: nowMs,
          lease_expires_at_ms: d.leaseMs === undefined ? 0 : nowMs + d.leaseMs,
          created_at_ms: nowMs,
        })),
      )}
      RETURNING *`;
    return rows.map(toDelivery);
  }

  async claimDue(nowMs: number, leaseMs: number, limit: number): Promise<WebhookDelivery[]> {
    const rows = await this.sql<DeliveryRow[]>`
      WITH due AS (
        SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.enabled
        WHERE (d.status = 'pending' AND d.next_attempt_at_ms <= ${nowMs}) OR (d.status = 'sending' AND d.lease_expires_at_ms < ${nowMs})
        ORDER BY d.next_attempt_at_ms, d.id
        LIMIT ${limit}
        FOR UPDATE OF d SKIP LOCKED
      )
      UPDATE webhook_deliveries SET status = 'sending', lease_expires_at_ms = ${nowMs + leaseMs}, attempts = attempts + 1
      WHERE id IN (SELECT id FROM due)
      RETURNING *`;
    return rows.map(toDelivery).sort((a, b) => a.nextAttemptAtMs - b.nextAttemptAtMs);
  }

  async recordAttempt(id: string, outcome: WebhookAttemptOutcome, nowMs: number): Promise<void> {
    if (!isUuid(id)) return;
    await this.sql`
      UPDATE webhook_deliveries SET status = ${outcome.status}, attempts = attempts + ${outcome.unclaimed === true ? 1 : 0},
        next_attempt_at_ms = COALESCE(${outcome.nextAttemptAtMs ?? null}::int8, next_attempt_at_ms), lease_expires_at_ms = 0,
        last_status_code = ${outcome.statusCode}, last_duration_ms = ${Math.round(outcome.durationMs)}, last_error = ${outcome.error},
        last_response = ${outcome.response}, finished_at_ms = ${outcome.status === 'pending' ? null : nowMs}
      WHERE id = ${id}`;
  }

  async noteSuccess(endpointId: string): Promise<void> {
    if (!isUuid(endpointId)) return;
    await this.sql`UPDATE webhook_endpoints SET consecutive_failures = 0 WHERE id = ${endpointId} AND consecutive_failures <> 0`;
  }

  async noteFailure(endpointId: string): Promise<number> {
    if (!isUuid(endpointId)) return 0;
    const [row] = await this.sql<Array<{ consecutive_failures: number }>>`
      UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1 WHERE id = ${endpointId} RETURNING consecutive_failures`;
    return row?.consecutive_failures ?? 0;
  }

  async disable(endpointId: string, reason: string, nowMs: number): Promise<WebhookEndpoint | null> {
    if (!isUuid(endpointId)) return null;
    const [row] = await this.sql<EndpointRow[]>`
      UPDATE webhook_endpoints SET enabled = false, disabled_reason = ${reason}, updated_at_ms = ${nowMs}
      WHERE id = ${endpointId} AND enabled RETURNING *`;
    return row ? toEndpoint(row) : null;
  }

  async reenable(orgId: string, endpointId: string, nowMs: number): Promise<WebhookEndpoint | null> {
    if (!isUuid(orgId) || !isUuid(endpointId)) return null;
    await this.sql`UPDATE webhook_endpoints SET consecutive_failures = 0 WHERE org_id = ${orgId} AND id = ${endpointId} AND enabled`;
    const [row] = await this.sql<EndpointRow[]>`
      UPDATE webhook_endpoints SET enabled = true, disabled_reason = NULL, consecutive_failures = 0, updated_at_ms = ${nowMs}
      WHERE org_id = ${orgId} AND id = ${endpointId} AND NOT enabled RETURNING *`;
    return row ? toEndpoint(row) : null;
  }

  async listDeliveries(orgId: string, endpointId: string, limit: number, before: { createdAtMs: number; id: string } | null): Promise<WebhookDelivery[]> {
    if (!isUuid(orgId) || !isUuid(endpointId)) return [];
    const after =
      before === null || !isUuid(before.id)
        ? this.sql``
        : this.sql`AND (created_at_ms < ${before.createdAtMs} OR (created_at_ms = ${before.createdAtMs} AND id > ${before.id}))`;
    const rows = await this.sql<DeliveryRow[]>`
      SELECT * FROM webhook_deliveries WHERE org_id = ${orgId} AND endpoint_id = ${endpointId} ${after}
      ORDER BY created_at_ms DESC, id LIMIT ${limit}`;
    return rows.map(toDelivery);
  }

  async getDelivery(orgId: string, endpointId: string, deliveryId: string): Promise<WebhookDelivery | null> {
    if (!isUuid(orgId) || !isUuid(endpointId) || !isUuid(deliveryId)) return null;
    const [row] = await this.sql<DeliveryRow[]>`
      SELECT * FROM webhook_deliveries WHERE org_id = ${orgId} AND endpoint_id = ${endpointId} AND id = ${deliveryId}`;
    return row ? toDelivery(row) : null;
  }

  async redeliver(orgId: string, endpointId: string, deliveryId: string, nowMs: number): Promise<WebhookDelivery | null> {
    if (!isUuid(orgId) || !isUuid(endpointId) || !isUuid(deliveryId)) return null;
    const [row] = await this.sql<DeliveryRow[]>`
      UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at_ms = ${nowMs}, finished_at_ms = NULL, lease_expires_at_ms = 0
      WHERE org_id = ${orgId} AND endpoint_id = ${endpointId} AND id = ${deliveryId} AND status <> 'sending'
      RETURNING *`;
    return row ? toDelivery(row) : null;
  }

  async pruneOlderThan(beforeMs: number, limit: number): Promise<number> {
    const result = await this.sql`
      DELETE FROM webhook_deliveries WHERE id IN (
        SELECT id FROM webhook_deliveries WHERE created_at_ms < ${beforeMs}
        ORDER BY created_at_ms LIMIT ${limit}
        FOR UPDATE SKIP LOCKED)`;
    return result.count;
  }
}
