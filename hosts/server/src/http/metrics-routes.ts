import type { FastifyInstance } from 'fastify';
import { Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of this process at `/metrics` (one registry per server instance). */
export function registerMetricsRoute(app: FastifyInstance): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  app.get('/metrics', async (_request, reply) => {
    void reply.type(registry.contentType);
    return registry.metrics();
  });
  return registry;
}
