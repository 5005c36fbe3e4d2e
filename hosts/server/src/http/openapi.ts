import type { FastifyInstance } from 'fastify';

/** TODO(issue 4): OpenAPI 3.1 from the route schemas, served at /v1/openapi.json. Must run before routes are added. */
export async function registerOpenApi(_app: FastifyInstance): Promise<void> {}
