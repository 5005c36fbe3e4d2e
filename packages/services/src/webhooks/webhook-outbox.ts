import type { AuditEntry, Principal, Repositories } from '@switchyard/core';
import { auditEntryRecord } from '../audit/audit-log-service.ts';
import { hiddenResourceTypes, redactForReader } from '../audit/audit-visibility.ts';
import { endpointWants } from './webhook-matching.ts';
import type { WebhookPayload } from './webhook-slack.ts';

/**
 * Who a webhook's receiver reads the change history as: an org-wide API token with the admin role,
 * the least of those who may manage webhooks (`webhook.manage`). A receiver is told what such a
 * token could read with GET .../audit-log, no more: no identity-provider, invitation or domain
 * entries, and platform administrators named by id (audit-visibility.ts).
 */
const receiverOf = (orgId: string): Principal => ({
  kind: 'api_token',
  tokenId: 'webhook-receiver',
  name: 'webhook receiver',
  orgId,
  role: 'admin',
  scope: {},
  expiresAtMs: null,
});

/** The standard payload's JSON text for an entry, rendered as the change-history API shows it. */
export const payloadText = (entry: AuditEntry): string => {
  const payload: WebhookPayload = { type: entry.action, timestamp: new Date(entry.atMs).toISOString(), data: auditEntryRecord(entry) };
  return JSON.stringify(payload);
};

/**
 * The transactional outbox (docs/workflow.md "Webhooks"): called by recordChange right after the
 * entry is appended, with the repositories of the write's unit of work, so a delivery row per
 * matching enabled endpoint commits with the entry, or neither does. The org's endpoints are read
 * in the transaction (one indexed read; an endpoint changed a moment ago on another instance is
 * seen by the next write, no cache to go stale). Nothing more is read unless an endpoint matches.
 */
export async function enqueueWebhookDeliveries(repos: Repositories, entry: AuditEntry, nowMs: number): Promise<void> {
  const endpoints = await repos.webhooks.listEnabled(entry.orgId);
  if (endpoints.length === 0) return;
  const wanting = endpoints.filter((endpoint) => endpointWants(endpoint, entry));
  if (wanting.length === 0) return;
  const receiver = receiverOf(entry.orgId);
  if (hiddenResourceTypes(receiver, entry.orgId).includes(entry.resourceType)) return;
  const [shown] = await redactForReader(repos, receiver, entry.orgId, [entry]);
  if (!shown) return;
  const payload = payloadText(shown);
  await repos.webhooks.enqueue(
    wanting.map((endpoint) => ({ endpointId: endpoint.id, orgId: entry.orgId, messageId: entry.id, eventType: entry.action, payload })),
    nowMs,
  );
}
