import type { FastifyInstance } from 'fastify';
import { registerAdminRoutes } from './routes/admin-routes.ts';
import { registerAuthRoutes } from './routes/auth-routes.ts';
import { registerEvaluateRoutes } from './routes/evaluate-routes.ts';
import { registerEventDefinitionRoutes } from './routes/event-definition-routes.ts';
import { registerEventRoutes } from './routes/event-routes.ts';
import { registerExperimentRoutes } from './routes/experiment-routes.ts';
import { registerExposureRoutes } from './routes/exposure-routes.ts';
import { registerFlagRoutes } from './routes/flag-routes.ts';
import type { GatewayServices } from './routes/gateway-services.ts';
import { registerManagementRoutes } from './routes/management-routes.ts';
import { registerOfrepRoutes } from './routes/ofrep-routes.ts';
import { registerSegmentRoutes } from './routes/segment-routes.ts';
import { registerStatsRoutes } from './routes/stats-routes.ts';

/**
 * Every REST route of the API, written once against GatewayServices: the single-process server
 * passes the in-process services, a gateway their gRPC clients (docs/architecture.md).
 */
export function registerRestRoutes(http: FastifyInstance, services: GatewayServices): void {
  registerAuthRoutes(http, services);
  registerAdminRoutes(http, services);
  registerManagementRoutes(http, services);
  registerFlagRoutes(http, services);
  registerSegmentRoutes(http, services);
  registerEvaluateRoutes(http, services);
  registerOfrepRoutes(http, services);
  registerEventDefinitionRoutes(http, services);
  registerEventRoutes(http, services);
  registerExposureRoutes(http, services);
  registerExperimentRoutes(http, services);
  registerStatsRoutes(http, services);
}
