import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from './gateway-services.ts';

/** TODO(issue 4): being written. */
export function registerFlagRoutes(_app: FastifyInstance, _services: GatewayServices): void {}
