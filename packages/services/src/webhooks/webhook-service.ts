import { randomUUID } from 'node:crypto';
import {
  failedPrecondition,
  invalidArgument,
  notFound,
  WEBHOOK_FORMATS,
  type Principal,
  type Repositories,
  type WebhookEndpoint,
  type WebhookEndpointSettings,
  type WebhookFormat,
} from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import { recordChange } from '../audit/audit-trail.ts';
import { checkProviderUrl } from '../sso/network-guard.ts';
import type { SecretBox } from '../sso/secret-box.ts';
import { checkEventTypes, MAX_FILTER_IDS } from './webhook-matching.ts';
import {
  webhookAuditRecord,
  webhookDeliveryRecord,
  webhookEndpointRecord,
  type WebhookDeliveryRecord,
  type WebhookEndpointRecord,
  type WebhookEndpointWithSecret,
} from './webhook-records.ts';
import { ROTATION_OVERLAP_MS, sealedFor, signingSecrets } from './webhook-secrets.ts';
import { attemptDelivery } from './webhook-sender.ts';
import { newWebhookSecret } from './webhook-signing.ts';

/** Endpoints an org may hold: each is matched on every write of the org. */
export const MAX_WEBHOOK_ENDPOINTS = 25;
export const DEFAULT_DELIVERY_PAGE = 50;
export const MAX_DELIVERY_PAGE = 200;
const MAX_NAME_LENGTH = 100;
const MAX_URL_LENGTH = 2_048;
/** How long a test send holds its delivery row: past the attempt's 15 s timeout, so the worker never sends it too. */
const TEST_SEND_LEASE_MS = 60_000;
export const ALLOW_PRIVATE_HINT = 'set WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to allow it';

/** An endpoint as a caller writes it (REST body, gRPC message); on update every field is optional. */
export interface WebhookEndpointInput {
  name?: string;
  url?: string;
  enabled?: boolean;
  event_types?: string[];
  filters?: { project_ids?: string[]; environment_ids?: string[] };
  format?: string;
}

export interface DeliveryPage {
  deliveries: WebhookDeliveryRecord[];
  next_cursor: string | null;
}

export interface WebhookServiceOptions {
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: development and tests. */
  allowPrivateNetworks: boolean;
  /** The guarded fetch test sends use (the worker's). */
  fetch: typeof fetch;
  publicUrl: () => string;
  /** The worker to wake after a redelivery or a re-enabling (this instance; others poll). */
  onQueued?: () => void;
  now?: () => number;
}

const cursorOf = (createdAtMs: number, id: string): string => Buffer.from(`${createdAtMs}.${id}`).toString('base64url');
function parseCursor(cursor: string): { createdAtMs: number; id: string } {
  const match = /^(\d{1,16})\.([0-9a-f-]{36})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match || cursor.length > 100) throw invalidArgument('cursor is not a next_cursor of this listing', 'cursor');
  return { createdAtMs: Number(match[1]), id: match[2] ?? '' };
}

/**
 * An org's webhook endpoints (docs/workflow.md "Webhooks"), for whoever holds `webhook.manage`
 * (org admins, org-level admin bindings, org-wide admin API tokens): create (the secret shown
 * once), list, read, update, delete, rotate the secret (the old one signs too for 24 h), the
 * delivery log, redeliver, and a test send that enables a disabled endpoint again when it succeeds.
 * Each change is one unit of work with its entry; entries never hold the secret, and show the
 * address cut to its origin (a path may carry a token).
 *
 * Secrets are sealed at rest with the SecretBox of SSO_SECRETS_KEY (AES-256-GCM, bound to the
 * endpoint id), like identity providers' client secrets: signing needs the plaintext.
 */
export class WebhookService {
  private readonly now: () => number;

  constructor(
    private readonly repos: Repositories,
    /** null: no SSO_SECRETS_KEY in production, so no secret can be stored (FAILED_PRECONDITION). */
    private readonly box: SecretBox | null,
    private readonly options: WebhookServiceOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  async create(principal: Principal, orgId: string, input: WebhookEndpointInput): Promise<WebhookEndpointWithSecret> {
    requireAllowed(principal, 'webhook.manage', { orgId });
    const box = this.requireBox();
    const settings = await this.settingsOf(orgId, input, null);
    const id = randomUUID();
    const secret = newWebhookSecret();
    const nowMs = this.now();
    const created = await this.repos.unitOfWork.run(async (tx) => {
      if ((await tx.webhooks.countEndpoints(orgId)) >= MAX_WEBHOOK_ENDPOINTS) {
        throw failedPrecondition(`an organisation holds at most ${MAX_WEBHOOK_ENDPOINTS} webhooks`);
      }
      const endpoint = await tx.webhooks.createEndpoint(orgId, id, settings, box.seal(secret, sealedFor(id)), nowMs);
      await this.record(tx, principal, endpoint, 'webhook.create', { after: webhookAuditRecord(endpoint) });
      return endpoint;
    });
    return { ...webhookEndpointRecord(created, nowMs), secret };
  }

  async list(principal: Principal, orgId: string): Promise<WebhookEndpointRecord[]> {
    requireAllowed(principal, 'webhook.manage', { orgId });
    const nowMs = this.now();
    return (await this.repos.webhooks.listEndpoints(orgId, MAX_WEBHOOK_ENDPOINTS)).map((endpoint) => webhookEndpointRecord(endpoint, nowMs));
  }

  async get(principal: Principal, orgId: string, id: string): Promise<WebhookEndpointRecord> {
    requireAllowed(principal, 'webhook.manage', { orgId });
    return webhookEndpointRecord(await this.requireEndpoint(orgId, id), this.now());
  }

  async update(principal: Principal, orgId: string, id: string, input: WebhookEndpointInput): Promise<WebhookEndpointRecord> {
    requireAllowed(principal, 'webhook.manage', { orgId });
    const current = await this.requireEndpoint(orgId, id);
    const settings = await this.settingsOf(orgId, input, current);
    const nowMs = this.now();
    const updated = await this.repos.unitOfWork.run(async (tx) => {
      const before = await tx.webhooks.getEndpoint(orgId, id);
      const after = before && (await tx.webhooks.updateEndpoint(orgId, id, settings, nowMs));
      if (!before || !after) throw notFound('webhook', id);
      await this.record(tx, principal, after, 'webhook.update', { before: webhookAuditRecord(before), after: webhookAuditRecord(after) });
      return after;
    });
    if (updated.enabled) this.options.onQueued?.();
    return webhookEndpointRecord(updated, nowMs);
  }

  async remove(principal: Principal, orgId: string, id: string): Promise<void> {
    requireAllowed(principal, 'webhook.manage', { orgId });
    await this.repos.unitOfWork.run(async (tx) => {
      const deleted = await tx.webhooks.deleteEndpoint(orgId, id);
      if (!deleted) throw notFound('webhook', id);
      await this.record(tx, principal, deleted, 'webhook.delete', { before: webhookAuditRecord(deleted) });
    });
  }

  /** A new secret (shown once); the current one keeps signing alongside it for 24 h. */
  async rotateSecret(principal: Principal, orgId: string, id: string): Promise<WebhookEndpointWithSecret> {
    requireAllowed(principal, 'webhook.manage', { orgId });
    const box = this.requireBox();
    const secret = newWebhookSecret();
    const nowMs = this.now();
    const rotated = await this.repos.unitOfWork.run(async (tx) => {
      const current = await tx.webhooks.getEndpoint(orgId, id);
      if (!current) throw notFound('webhook', id);
      const after = await tx.webhooks.rotateSecret(orgId, id, box.seal(secret, sealedFor(id)), current.sealedSecret, nowMs + ROTATION_OVERLAP_MS, nowMs);
      if (!after) throw notFound('webhook', id);
      await this.record(tx, principal, after, 'webhook.rotate_secret', { details: { previous_secret_expires_at_ms: nowMs + ROTATION_OVERLAP_MS } });
      return after;
    });
    return { ...webhookEndpointRecord(rotated, nowMs), secret };
  }

  async listDeliveries(principal: Principal, orgId: string, id: string, request: { cursor?: string | null; limit?: number | null }): Promise<DeliveryPage> {
    requireAllowed(principal, 'webhook.manage', { orgId });
    await this.requireEndpoint(orgId, id);
    const limit = request.limit ?? DEFAULT_DELIVERY_PAGE;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_DELIVERY_PAGE) throw invalidArgument(`limit must be from 1 to ${MAX_DELIVERY_PAGE}`, 'limit');
    const before = request.cursor ? parseCursor(request.cursor) : null;
    const rows = await this.repos.webhooks.listDeliveries(orgId, id, limit + 1, before);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { deliveries: page.map(webhookDeliveryRecord), next_cursor: rows.length > limit && last ? cursorOf(last.createdAtMs, last.id) : null };
  }

  /** Sends a delivery again: a fresh round of attempts, from now. */
  async redeliver(principal: Principal, orgId: string, id: string, deliveryId: string): Promise<WebhookDeliveryRecord> {
    requireAllowed(principal, 'webhook.manage', { orgId });
    await this.requireEndpoint(orgId, id);
    const existing = await this.repos.webhooks.getDelivery(orgId, id, deliveryId);
    if (!existing) throw notFound('delivery', deliveryId);
    const again = await this.repos.webhooks.redeliver(orgId, id, deliveryId, this.now());
    if (!again) throw failedPrecondition('the delivery is being sent right now; try again in a moment');
    this.options.onQueued?.();
    return webhookDeliveryRecord(again);
  }

  /**
   * Sends a `webhook.test` message now and answers how it went (it is in the delivery log too).
   * A success enables a disabled endpoint again (failures in a row back to 0), with an entry.
   */
  async testSend(principal: Principal, orgId: string, id: string): Promise<WebhookDeliveryRecord> {
    requireAllowed(principal, 'webhook.manage', { orgId });
    const box = this.requireBox();
    const endpoint = await this.requireEndpoint(orgId, id);
    const nowMs = this.now();
    const messageId = `test_${randomUUID()}`;
    const payload = JSON.stringify({
      type: 'webhook.test',
      timestamp: new Date(nowMs).toISOString(),
      data: { webhook_id: endpoint.id, name: endpoint.name, message: 'a test message sent from Switchyard' },
    });
    // Written as held by this call (leased past the attempt's 15 s timeout): the worker, which would
    // otherwise find it due at once, does not deliver it a second time.
    const [delivery] = await this.repos.webhooks.enqueue([{ endpointId: endpoint.id, orgId, messageId, eventType: 'webhook.test', payload, leaseMs: TEST_SEND_LEASE_MS }], nowMs);
    if (!delivery) throw new Error('enqueue gave no row');
    const attempt = await attemptDelivery(this.options.fetch, endpoint, delivery, signingSecrets(box, endpoint, nowMs), { publicUrl: this.options.publicUrl(), nowMs });
    const ok = attempt.statusCode !== null && attempt.statusCode >= 200 && attempt.statusCode < 300;
    const outcome = { statusCode: attempt.statusCode, durationMs: attempt.durationMs, error: attempt.error, response: attempt.response };
    // A test send is attempted once, here: never retried by the worker.
    await this.repos.webhooks.recordAttempt(delivery.id, { status: ok ? 'delivered' : 'failed', ...outcome, unclaimed: true }, this.now());
    if (ok) {
      await this.repos.unitOfWork.run(async (tx) => {
        const enabled = await tx.webhooks.reenable(orgId, id, this.now());
        if (enabled === null) return;
        await this.record(tx, principal, enabled, 'webhook.enable', {
          before: webhookAuditRecord(endpoint),
          after: webhookAuditRecord(enabled),
          details: { reason: 'a test send succeeded' },
        });
      });
      this.options.onQueued?.();
    }
    const logged = await this.repos.webhooks.getDelivery(orgId, id, delivery.id);
    return webhookDeliveryRecord(logged ?? { ...delivery, attempts: 1, status: ok ? 'delivered' : 'failed' });
  }

  private requireBox(): SecretBox {
    if (this.box === null) throw failedPrecondition('webhooks need SSO_SECRETS_KEY (their secrets are stored encrypted with it)');
    return this.box;
  }

  private async requireEndpoint(orgId: string, id: string): Promise<WebhookEndpoint> {
    const endpoint = await this.repos.webhooks.getEndpoint(orgId, id);
    if (!endpoint) throw notFound('webhook', id);
    return endpoint;
  }

  /** The settings an input asks for (over `current` on update), validated; URLs through the network guard. */
  private async settingsOf(orgId: string, input: WebhookEndpointInput, current: WebhookEndpoint | null): Promise<WebhookEndpointSettings> {
    if (typeof input !== 'object' || input === null) throw invalidArgument('a webhook must be an object');
    const name = input.name ?? current?.name;
    if (typeof name !== 'string' || name.trim() === '' || name.length > MAX_NAME_LENGTH) throw invalidArgument(`name must be 1 to ${MAX_NAME_LENGTH} characters`, 'name');
    const rawUrl = input.url ?? current?.url;
    if (typeof rawUrl !== 'string' || rawUrl.length > MAX_URL_LENGTH) throw invalidArgument(`url must be an https:// URL of at most ${MAX_URL_LENGTH} characters`, 'url');
    // Checked again on every change (DNS may answer differently now), and at each connection.
    const url = input.url === undefined && current !== null ? current.url : (await checkProviderUrl(rawUrl, 'url', { allowPrivateNetworks: this.options.allowPrivateNetworks, allowHint: ALLOW_PRIVATE_HINT })).href;
    const enabled = input.enabled ?? current?.enabled ?? true;
    if (typeof enabled !== 'boolean') throw invalidArgument('enabled must be true or false', 'enabled');
    const eventTypes = input.event_types === undefined && current !== null ? current.eventTypes : checkEventTypes(input.event_types);
    const format = (input.format ?? current?.format ?? 'standard') as WebhookFormat;
    if (!WEBHOOK_FORMATS.includes(format)) throw invalidArgument(`format must be one of ${WEBHOOK_FORMATS.join(', ')}`, 'format');
    const filters = input.filters;
    if (filters !== undefined && (typeof filters !== 'object' || filters === null)) throw invalidArgument('filters must be an object', 'filters');
    const projectIds = filters?.project_ids === undefined ? (current?.projectIds ?? []) : await this.checkIds(orgId, filters.project_ids, 'filters.project_ids', 'project');
    const environmentIds =
      filters?.environment_ids === undefined ? (current?.environmentIds ?? []) : await this.checkIds(orgId, filters.environment_ids, 'filters.environment_ids', 'environment');
    return { name: name.trim(), url, enabled, eventTypes, projectIds, environmentIds, format };
  }

  /** Ids of the org's projects or environments (another org's, or none: INVALID_ARGUMENT naming the field). */
  private async checkIds(orgId: string, ids: unknown, field: string, kind: 'project' | 'environment'): Promise<string[]> {
    if (!Array.isArray(ids) || ids.length > MAX_FILTER_IDS || ids.some((id) => typeof id !== 'string' || id.length > 100)) {
      throw invalidArgument(`${field} must hold at most ${MAX_FILTER_IDS} ids`, field);
    }
    const unique = [...new Set(ids as string[])];
    for (const id of unique) {
      const found = kind === 'project' ? await this.repos.projects.get({ orgId }, id) : await this.repos.environments.get({ orgId }, id);
      if (!found) throw invalidArgument(`${field}: no ${kind} '${id}' in this organisation`, field);
    }
    return unique;
  }

  private async record(tx: Repositories, principal: Principal, endpoint: WebhookEndpoint, action: string, change: { before?: unknown; after?: unknown; details?: Record<string, unknown> }): Promise<void> {
    await recordChange(tx, principal, { orgId: endpoint.orgId, action, resourceType: 'webhook', resourceId: endpoint.id, ...change }, this.now());
  }
}
