import type * as grpc from '@grpc/grpc-js';
import type { WebhookDeliveryRecord, WebhookEndpointInput, WebhookEndpointRecord } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateCall } from '../../grpc/grpc-credentials.ts';
import { unary } from '../../grpc/grpc-errors.ts';
import { loadProto, lookup } from '../../grpc/proto.ts';
import type { Logger } from '../../logging.ts';

const WebhookServiceDefinition = lookup<grpc.ServiceClientConstructor>(loadProto('svc/management/v1/webhooks.proto'), 'svc.management.v1.WebhookService');

type Call<Req> = grpc.ServerUnaryCall<Req, unknown>;
interface FiltersMessage {
  project_ids?: string[];
  environment_ids?: string[];
}
interface Ref {
  org_id: string;
  webhook_id: string;
}

const webhookMessage = (hook: WebhookEndpointRecord) => ({
  ...hook,
  disabled_reason: hook.disabled_reason ?? '',
  previous_secret_expires_at_ms: hook.previous_secret_expires_at_ms ?? 0,
});

const deliveryMessage = (delivery: WebhookDeliveryRecord) => ({
  ...delivery,
  next_attempt_at_ms: delivery.next_attempt_at_ms ?? 0,
  status_code: delivery.status_code ?? 0,
  duration_ms: delivery.duration_ms ?? 0,
  error: delivery.error ?? '',
  response: delivery.response ?? '',
  finished_at_ms: delivery.finished_at_ms ?? 0,
});

const filtersInput = (filters: FiltersMessage | null | undefined) => ({ project_ids: filters?.project_ids ?? [], environment_ids: filters?.environment_ids ?? [] });

const UPDATABLE = new Set(['name', 'url', 'enabled', 'event_types', 'filters', 'format']);

/**
 * svc.management.v1.WebhookService on the internal gRPC port: the same WebhookService calls as the
 * REST routes (docs/workflow.md "Webhooks"), with the caller's bearer token as `authorization` metadata.
 */
export function addWebhookGrpcService(server: grpc.Server, deps: { services: GatewayServices; logger: Logger }): void {
  const { logger } = deps;
  const { webhooks, verifier } = deps.services;
  const caller = (call: Call<unknown>) => authenticateCall(verifier, call.metadata, 'bearer');

  server.addService(WebhookServiceDefinition.service, {
    createWebhook: unary(
      logger,
      async (call: Call<{ org_id: string; name: string; url: string; enabled?: boolean | null; event_types: string[]; filters?: FiltersMessage | null; format: string }>) => {
        const principal = await caller(call);
        const { org_id, name, url, enabled, event_types, filters, format } = call.request;
        const input: WebhookEndpointInput = { name, url, event_types, filters: filtersInput(filters), ...(enabled === undefined || enabled === null ? {} : { enabled }), ...(format ? { format } : {}) };
        const { secret, ...created } = await webhooks.create(principal, org_id || principal.orgId, input);
        return { webhook: webhookMessage(created), secret };
      },
    ),
    listWebhooks: unary(logger, async (call: Call<{ org_id: string }>) => {
      const principal = await caller(call);
      return { webhooks: (await webhooks.list(principal, call.request.org_id || principal.orgId)).map(webhookMessage) };
    }),
    getWebhook: unary(logger, async (call: Call<Ref>) => {
      const principal = await caller(call);
      return webhookMessage(await webhooks.get(principal, call.request.org_id || principal.orgId, call.request.webhook_id));
    }),
    updateWebhook: unary(
      logger,
      async (call: Call<Ref & { update_fields: string[]; name: string; url: string; enabled: boolean; event_types: string[]; filters?: FiltersMessage | null; format: string }>) => {
        const principal = await caller(call);
        const { org_id, webhook_id, update_fields, ...fields } = call.request;
        const input: Record<string, unknown> = {};
        for (const field of update_fields ?? []) {
          if (!UPDATABLE.has(field)) continue;
          input[field] = field === 'filters' ? filtersInput(fields.filters) : fields[field as keyof typeof fields];
        }
        return webhookMessage(await webhooks.update(principal, org_id || principal.orgId, webhook_id, input as WebhookEndpointInput));
      },
    ),
    deleteWebhook: unary(logger, async (call: Call<Ref>) => {
      const principal = await caller(call);
      await webhooks.remove(principal, call.request.org_id || principal.orgId, call.request.webhook_id);
      return { webhook_id: call.request.webhook_id };
    }),
    rotateWebhookSecret: unary(logger, async (call: Call<Ref>) => {
      const principal = await caller(call);
      const { secret, ...rotated } = await webhooks.rotateSecret(principal, call.request.org_id || principal.orgId, call.request.webhook_id);
      return { webhook: webhookMessage(rotated), secret };
    }),
    testWebhook: unary(logger, async (call: Call<Ref>) => {
      const principal = await caller(call);
      return deliveryMessage(await webhooks.testSend(principal, call.request.org_id || principal.orgId, call.request.webhook_id));
    }),
    listWebhookDeliveries: unary(logger, async (call: Call<Ref & { cursor: string; limit: number }>) => {
      const principal = await caller(call);
      const { org_id, webhook_id, cursor, limit } = call.request;
      const page = await webhooks.listDeliveries(principal, org_id || principal.orgId, webhook_id, { cursor: cursor || null, limit: limit || null });
      return { deliveries: page.deliveries.map(deliveryMessage), next_cursor: page.next_cursor ?? '' };
    }),
    redeliverWebhookDelivery: unary(logger, async (call: Call<Ref & { delivery_id: string }>) => {
      const principal = await caller(call);
      const { org_id, webhook_id, delivery_id } = call.request;
      return deliveryMessage(await webhooks.redeliver(principal, org_id || principal.orgId, webhook_id, delivery_id));
    }),
  });
}
