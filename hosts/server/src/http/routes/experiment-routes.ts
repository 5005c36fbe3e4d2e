import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from './gateway-services.ts';

/** TODO(issue 7): being written. */
export function registerExperimentRoutes(_app: FastifyInstance, _services: GatewayServices): void {}
