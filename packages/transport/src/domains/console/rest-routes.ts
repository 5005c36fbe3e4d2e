import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticate } from '../../http/credentials.ts';
import { BEARER_ONLY } from '../../http/schemas.ts';

/**
 * Where SDKs reach this deployment, as the instance answering knows it (the single process, or a
 * gateway: its own PUBLIC_URL and public sync port). Read at each request: a sync port of 0 is
 * known only once the port listens.
 */
export interface ConsoleAddresses {
  /** PUBLIC_URL, or null when unset (the console then uses its page's origin). */
  publicUrl(): string | null;
  /** The public sync port (SYNC_GRPC_PORT) as it listens. */
  syncPort(): number;
  /** Whether the sync port speaks TLS (SYNC_GRPC_TLS_*). */
  syncTls: boolean;
}

const settingsResponse = {
  type: 'object',
  required: ['public_url', 'sync_port', 'sync_tls'],
  additionalProperties: false,
  properties: {
    public_url: { type: ['string', 'null'], description: 'PUBLIC_URL, or null when unset: the REST base is then the console page\'s origin.' },
    sync_port: { type: 'integer', description: 'The public sync gRPC port (SYNC_GRPC_PORT); SDKs connect to the REST host\'s name on it.' },
    sync_tls: { type: 'boolean', description: 'Whether the sync port speaks TLS.' },
  },
} as const;

/**
 * `GET /v1/console/settings`: what the console fills into SDK snippets (docs/console.md "Getting
 * started checklist"). Any signed-in user; it holds no secret, only addresses an SDK is given anyway.
 */
export function registerConsoleRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { verifier, consoleAddresses } = services;
  app.get(
    '/v1/console/settings',
    {
      schema: {
        security: BEARER_ONLY,
        summary: 'Addresses the console puts in SDK snippets: REST base and sync port',
        response: { 200: settingsResponse },
      },
    },
    async (request) => {
      await authenticate(verifier, request, 'bearer');
      return { public_url: consoleAddresses.publicUrl(), sync_port: consoleAddresses.syncPort(), sync_tls: consoleAddresses.syncTls };
    },
  );
}
