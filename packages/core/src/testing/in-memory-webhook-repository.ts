import type {
  NewWebhookDelivery,
  WebhookAttemptOutcome,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointSettings,
  WebhookRepository,
} from '../ports/webhook-ports.ts';
import type { InMemoryState } from './in-memory-state.ts';

const copyEndpoint = (endpoint: WebhookEndpoint): WebhookEndpoint => structuredClone(endpoint);
const copyDelivery = ({ leaseExpiresAtMs: _lease, ...delivery }: WebhookDelivery & { leaseExpiresAtMs: number }): WebhookDelivery => ({ ...delivery });

/** WebhookRepository over the shared in-memory tables (no await between check and write: atomic). */
export class InMemoryWebhookRepository implements WebhookRepository {
  constructor(private readonly state: InMemoryState) {}

  private own(orgId: string, id: string): WebhookEndpoint | null {
    const endpoint = this.state.webhookEndpoints.get(id);
    return endpoint && endpoint.orgId === orgId ? endpoint : null;
  }

  async createEndpoint(orgId: string, id: string, settings: WebhookEndpointSettings, sealedSecret: string, nowMs: number): Promise<WebhookEndpoint> {
    const endpoint: WebhookEndpoint = {
      ...structuredClone(settings),
      id,
      orgId,
      sealedSecret,
      sealedPreviousSecret: null,
      previousSecretExpiresAtMs: null,
      consecutiveFailures: 0,
      disabledReason: null,
      createdAtMs: nowMs,
      updatedAtMs: nowMs,
    };
    this.state.webhookEndpoints.set(id, endpoint);
    return copyEndpoint(endpoint);
  }

  async getEndpoint(orgId: string, id: string): Promise<WebhookEndpoint | null> {
    const endpoint = this.own(orgId, id);
    return endpoint ? copyEndpoint(endpoint) : null;
  }

  async listEndpoints(orgId: string, limit: number): Promise<WebhookEndpoint[]> {
    return [...this.state.webhookEndpoints.values()].filter((e) => e.orgId === orgId).sort((a, b) => a.createdAtMs - b.createdAtMs).slice(0, limit).map(copyEndpoint);
  }

  async countEndpoints(orgId: string): Promise<number> {
    return [...this.state.webhookEndpoints.values()].filter((e) => e.orgId === orgId).length;
  }

  async updateEndpoint(orgId: string, id: string, settings: WebhookEndpointSettings, nowMs: number): Promise<WebhookEndpoint | null> {
    const endpoint = this.own(orgId, id);
    if (!endpoint) return null;
    const reenabled = settings.enabled && !endpoint.enabled;
    Object.assign(endpoint, structuredClone(settings), { updatedAtMs: nowMs });
    if (settings.enabled) endpoint.disabledReason = null;
    if (reenabled) endpoint.consecutiveFailures = 0;
    return copyEndpoint(endpoint);
  }

  async rotateSecret(orgId: string, id: string, sealedSecret: string, sealedPrevious: string, previousExpiresAtMs: number, nowMs: number): Promise<WebhookEndpoint | null> {
    const endpoint = this.own(orgId, id);
    if (!endpoint) return null;
    Object.assign(endpoint, { sealedSecret, sealedPreviousSecret: sealedPrevious, previousSecretExpiresAtMs: previousExpiresAtMs, updatedAtMs: nowMs });
    return copyEndpoint(endpoint);
  }

  async deleteEndpoint(orgId: string, id: string): Promise<WebhookEndpoint | null> {
    const endpoint = this.own(orgId, id);
    if (!endpoint) return null;
    this.state.webhookEndpoints.delete(id);
    for (const [key, delivery] of this.state.webhookDeliveries) if (delivery.endpointId === id) this.state.webhookDeliveries.delete(key);
    return copyEndpoint(endpoint);
  }

  async listEnabled(orgId: string): Promise<WebhookEndpoint[]> {
    return (await this.listEndpoints(orgId, Number.MAX_SAFE_INTEGER)).filter((e) => e.enabled);
  }

  async enqueue(deliveries: NewWebhookDelivery[], nowMs: number): Promise<WebhookDelivery[]> {
    return deliveries.map(({ leaseMs, ...draft }) => {
      const delivery = {
        ...draft,
        id: this.state.newId(),
        status: leaseMs === undefined ? ('pending' as const) : ('sending' as const),
        attempts: 0,
        nextAttemptAtMs: nowMs,
        lastStatusCode: null,
        lastDurationMs: null,
        lastError: null,
        lastResponse: null,
        createdAtMs: nowMs,
        finishedAtMs: null,
        leaseExpiresAtMs: leaseMs === undefined ? 0 : nowMs + leaseMs,
      };
      this.state.webhookDeliveries.set(delivery.id, delivery);
      return copyDelivery(delivery);
    });
  }

  async claimDue(nowMs: number, leaseMs: number, limit: number): Promise<WebhookDelivery[]> {
    const due = [...this.state.webhookDeliveries.values()]
      .filter((d) => this.state.webhookEndpoints.get(d.endpointId)?.enabled === true)
      .filter((d) => (d.status === 'pending' && d.nextAttemptAtMs <= nowMs) || (d.status === 'sending' && d.leaseExpiresAtMs < nowMs))
      .sort((a, b) => a.nextAttemptAtMs - b.nextAttemptAtMs)
      .slice(0, Math.max(0, limit));
    for (const delivery of due) Object.assign(delivery, { status: 'sending', leaseExpiresAtMs: nowMs + leaseMs, attempts: delivery.attempts + 1 });
    return due.map(copyDelivery);
  }

  async recordAttempt(id: string, outcome: WebhookAttemptOutcome, nowMs: number): Promise<void> {
    const delivery = this.state.webhookDeliveries.get(id);
    if (!delivery) return;
    Object.assign(delivery, {
      status: outcome.status,
      attempts: delivery.attempts + (outcome.unclaimed === true ? 1 : 0),
      nextAttemptAtMs: outcome.nextAttemptAtMs ?? delivery.nextAttemptAtMs,
      leaseExpiresAtMs: 0,
      lastStatusCode: outcome.statusCode,
      lastDurationMs: outcome.durationMs,
      lastError: outcome.error,
      lastResponse: outcome.response,
      finishedAtMs: outcome.status === 'pending' ? null : nowMs,
    });
  }

  async noteSuccess(endpointId: string): Promise<void> {
    const endpoint = this.state.webhookEndpoints.get(endpointId);
    if (endpoint) endpoint.consecutiveFailures = 0;
  }

  async noteFailure(endpointId: string): Promise<number> {
    const endpoint = this.state.webhookEndpoints.get(endpointId);
    if (!endpoint) return 0;
    endpoint.consecutiveFailures += 1;
    return endpoint.consecutiveFailures;
  }

  async disable(endpointId: string, reason: string, nowMs: number): Promise<WebhookEndpoint | null> {
    const endpoint = this.state.webhookEndpoints.get(endpointId);
    if (!endpoint || !endpoint.enabled) return null;
    Object.assign(endpoint, { enabled: false, disabledReason: reason, updatedAtMs: nowMs });
    return copyEndpoint(endpoint);
  }

  async reenable(orgId: string, endpointId: string, nowMs: number): Promise<WebhookEndpoint | null> {
    const endpoint = this.own(orgId, endpointId);
    if (!endpoint) return null;
    const wasEnabled = endpoint.enabled;
    Object.assign(endpoint, { enabled: true, disabledReason: null, consecutiveFailures: 0 });
    if (wasEnabled) return null;
    endpoint.updatedAtMs = nowMs;
    return copyEndpoint(endpoint);
  }

  async listDeliveries(orgId: string, endpointId: string, limit: number, before: { createdAtMs: number; id: string } | null): Promise<WebhookDelivery[]> {
    if (!this.own(orgId, endpointId)) return [];
    return [...this.state.webhookDeliveries.values()]
      .filter((d) => d.endpointId === endpointId)
      .sort((a, b) => b.createdAtMs - a.createdAtMs || (a.id < b.id ? -1 : 1))
      .filter((d) => before === null || d.createdAtMs < before.createdAtMs || (d.createdAtMs === before.createdAtMs && d.id > before.id))
      .slice(0, limit)
      .map(copyDelivery);
  }

  async getDelivery(orgId: string, endpointId: string, deliveryId: string): Promise<WebhookDelivery | null> {
    const delivery = this.state.webhookDeliveries.get(deliveryId);
    return delivery && delivery.endpointId === endpointId && this.own(orgId, endpointId) ? copyDelivery(delivery) : null;
  }

  async redeliver(orgId: string, endpointId: string, deliveryId: string, nowMs: number): Promise<WebhookDelivery | null> {
    const delivery = this.state.webhookDeliveries.get(deliveryId);
    if (!delivery || delivery.endpointId !== endpointId || !this.own(orgId, endpointId) || delivery.status === 'sending') return null;
    Object.assign(delivery, { status: 'pending', attempts: 0, nextAttemptAtMs: nowMs, finishedAtMs: null });
    return copyDelivery(delivery);
  }

  async pruneOlderThan(beforeMs: number, limit: number): Promise<number> {
    const old = [...this.state.webhookDeliveries.values()].filter((d) => d.createdAtMs < beforeMs).sort((a, b) => a.createdAtMs - b.createdAtMs).slice(0, limit);
    for (const delivery of old) this.state.webhookDeliveries.delete(delivery.id);
    return old.length;
  }
}
