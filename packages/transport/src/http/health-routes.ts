import type { FastifyInstance } from 'fastify';

export interface Readiness {
  /** True when the database answers and the schema is current. */
  isReady(): Promise<boolean>;
}

/**
 * `/healthz`: the process is up (no dependencies checked, so an orchestrator does not restart a
 * healthy process because the database blinked). `/readyz`: it can serve traffic.
 */
export function registerHealthRoutes(app: FastifyInstance, readiness: Readiness): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const ready = await readiness.isReady().catch(() => false);
    if (ready) return { status: 'ready' };
    return reply.code(503).send({ error: 'not ready: database unreachable or schema not migrated', code: 'UNAVAILABLE' });
  });
}
