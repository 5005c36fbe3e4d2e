import type { FastifyInstance } from 'fastify';
import { registerClientCors } from '../domains/client/rest-cors.ts';
import { registerApiTokenRoutes } from '../domains/api-tokens/rest-routes.ts';
import { registerAccountRoutes } from '../domains/accounts/rest-routes.ts';
import { registerAuditRoutes } from '../domains/audit/rest-routes.ts';
import { registerAuthRoutes } from '../domains/auth/rest-routes.ts';
import { registerClientStreamRoutes } from '../domains/client/stream-rest-routes.ts';
import { registerConsoleRoutes } from '../domains/console/rest-routes.ts';
import { registerEventDefinitionRoutes } from '../domains/events/definition-rest-routes.ts';
import { registerExposureRoutes } from '../domains/events/exposure-rest-routes.ts';
import { registerEventRoutes } from '../domains/events/rest-routes.ts';
import { registerExperimentRoutes } from '../domains/experiments/rest-routes.ts';
import { registerStatsRoutes } from '../domains/experiments/stats-rest-routes.ts';
import { registerEvaluateRoutes } from '../domains/flags/evaluate-rest-routes.ts';
import { registerOfrepRoutes } from '../domains/flags/ofrep-rest-routes.ts';
import { registerFlagRoutes } from '../domains/flags/rest-routes.ts';
import { registerFlagsAsCodeRoutes } from '../domains/flags-as-code/rest-routes.ts';
import { registerContextAttributeRoutes } from '../domains/flags/context-attribute-rest-routes.ts';
import { registerEvaluationSummaryRoutes, registerInsightsRoutes } from '../domains/insights/rest-routes.ts';
import { registerAdminRoutes } from '../domains/management/admin-rest-routes.ts';
import { registerManagementRoutes } from '../domains/management/rest-routes.ts';
import { registerRoleBindingRoutes } from '../domains/management/rest-role-binding-routes.ts';
import { registerOrgDomainRoutes } from '../domains/org-domains/rest-routes.ts';
import { registerWebhookRoutes } from '../domains/webhooks/rest-routes.ts';
import { registerSegmentRoutes } from '../domains/segments/rest-routes.ts';
import { registerEnvironmentCopyRoutes } from '../domains/environment-copy/rest-routes.ts';
import { registerChangeRequestRoutes } from '../domains/change-requests/rest-routes.ts';
import { registerScheduledChangeRoutes } from '../domains/schedules/rest-routes.ts';
import { registerSsoRoutes } from '../domains/sso/rest-routes.ts';
import { registerSigningSecretRoutes } from '../domains/client/signing-secret-rest-routes.ts';
import type { GatewayServices } from '../gateway-services.ts';

/**
 * Every REST route of the API, written once against GatewayServices: the single-process server
 * passes the in-process services, a gateway their gRPC clients (docs/architecture.md).
 */
export function registerRestRoutes(http: FastifyInstance, services: GatewayServices): void {
  registerAuthRoutes(http, services);
  registerAccountRoutes(http, services);
  registerAdminRoutes(http, services);
  registerManagementRoutes(http, services);
  registerRoleBindingRoutes(http, services);
  registerSigningSecretRoutes(http, services);
  registerAuditRoutes(http, services);
  registerConsoleRoutes(http, services);
  registerSsoRoutes(http, services);
  registerOrgDomainRoutes(http, services);
  registerApiTokenRoutes(http, services);
  registerWebhookRoutes(http, services);
  registerFlagRoutes(http, services);
  registerFlagsAsCodeRoutes(http, services);
  registerContextAttributeRoutes(http, services);
  registerInsightsRoutes(http, services);
  registerEvaluationSummaryRoutes(http, services);
  registerSegmentRoutes(http, services);
  registerEnvironmentCopyRoutes(http, services);
  registerChangeRequestRoutes(http, services);
  registerScheduledChangeRoutes(http, services);
  registerEvaluateRoutes(http, services);
  registerOfrepRoutes(http, services);
  // CORS preflights of the client routes (OFREP, exposures, events).
  registerClientCors(http, services.clientAccess);
  registerClientStreamRoutes(http, services);
  registerEventDefinitionRoutes(http, services);
  registerEventRoutes(http, services);
  registerExposureRoutes(http, services);
  registerExperimentRoutes(http, services);
  registerStatsRoutes(http, services);
}
