import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from './gateway-services.ts';

/** TODO(issue 6): being written. */
export function registerEventRoutes(_app: FastifyInstance, _services: GatewayServices): void {}
