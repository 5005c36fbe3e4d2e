import type { FastifyInstance } from 'fastify';
import { jobRecord } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticate } from '../../http/credentials.ts';
import { BEARER_ONLY } from '../../http/schemas.ts';
import { jobParams, jobSchema, recomputeParams, recomputeResponse } from './rest-schemas.ts';

const TAGS = ['stats'];

/**
 * Recompute jobs (docs/contract.md "Stats jobs"). They require a bearer token of the experiment's
 * org (docs/contract.md "Deliberate departures"), so an experiment or job of another org answers 404.
 */
export function registerStatsRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { stats, verifier } = services;

  app.post<{ Params: { experiment_id: string } }>(
    '/v1/experiments/:experiment_id/recompute',
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: "Queue a recomputation of an experiment's results (202 with the job, or with the one already queued for it; poll GET /v1/jobs/{job_id})",
        params: recomputeParams,
        response: { 202: recomputeResponse },
      },
    },
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      const job = await stats.triggerRecompute(principal, request.params.experiment_id);
      return reply.code(202).send({ job_id: job.id, status: job.status, created_at_ms: job.createdAtMs });
    },
  );

  app.get<{ Params: { job_id: string } }>(
    '/v1/jobs/:job_id',
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: 'The status of a recompute job (404 when unknown)',
        params: jobParams,
        response: { 200: jobSchema },
      },
    },
    async (request) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return jobRecord(await stats.getJob(principal, request.params.job_id));
    },
  );
}
