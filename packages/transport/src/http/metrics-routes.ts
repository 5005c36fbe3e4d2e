import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';

/** Prometheus metrics of this server instance at `/metrics` (its own registry: see ServerMetrics). */
export function registerMetricsRoute(app: FastifyInstance, registry: Registry): void {
  app.get('/metrics', async (_request, reply) => {
    void reply.type(registry.contentType);
    return registry.metrics();
  });
}
