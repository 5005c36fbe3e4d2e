import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { EnvironmentScope, Principal } from '@switchyard/core';
import { experimentRecord, iterationRecord, resultsRecord, type ExperimentBody, type ExperimentPowerQuery, type PowerBody, type TransitionBody } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByRequest } from '../../http/credentials.ts';
import { BEARER_ONLY, envParams, queryVersion, versionQuery, type VersionQuery } from '../../http/schemas.ts';
import {
  experimentCreateBody,
  experimentParams,
  experimentSchema,
  experimentPowerQuery,
  experimentPowerSchema,
  experimentUpdateBody,
  iterationSchema,
  powerBody,
  powerSchema,
  resultsSchema,
  transitionBody,
} from './rest-schemas.ts';

const TAGS = ['experiments'];

interface EnvParams {
  env_id: string;
}
interface ExperimentParams extends EnvParams {
  experiment_id: string;
}

/**
 * `/v1/environments/{env_id}/experiments/**` (bearer only; docs/contract.md "Experiments", "Experiments and statistics").
 * Create answers 201, every other success 200 (DELETE too, with the deleted experiment).
 */
export function registerExperimentRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { experiments, verifier } = services;

  async function resolve(request: FastifyRequest<{ Params: EnvParams }>): Promise<{ principal: Principal; scope: EnvironmentScope }> {
    return authenticateScoped(verifier, presentedByRequest(request), 'bearer', (principal) => experiments.scope(principal, request.params.env_id));
  }

  app.get<{ Params: EnvParams }>(
    '/v1/environments/:env_id/experiments',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'List the experiments of an environment (oldest first)', params: envParams, response: { 200: { type: 'array', items: experimentSchema } } } },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return (await experiments.list(principal, scope)).map(experimentRecord);
    },
  );

  app.post<{ Params: EnvParams; Body: ExperimentBody }>(
    '/v1/environments/:env_id/experiments',
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: "Create an experiment on a flag's variants (starts in DRAFT)",
        params: envParams,
        body: experimentCreateBody,
        response: { 201: experimentSchema },
      },
    },
    async (request, reply) => {
      const { principal, scope } = await resolve(request);
      return reply.code(201).send(experimentRecord(await experiments.create(principal, scope, request.body)));
    },
  );

  app.post<{ Params: EnvParams; Body: PowerBody }>(
    '/v1/environments/:env_id/experiments/power',
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: 'Power and duration for an experiment not yet created: sample per arm and days for a minimum detectable effect (docs/statistics.md §14)',
        params: envParams,
        body: powerBody,
        response: { 200: powerSchema },
      },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return experiments.power(principal, scope, request.body);
    },
  );

  app.get<{ Params: ExperimentParams; Querystring: ExperimentPowerQuery }>(
    '/v1/environments/:env_id/experiments/:experiment_id/power',
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: "Power and duration of an experiment per metric at its analysis settings, with the current power and projected end while it runs",
        params: experimentParams,
        querystring: experimentPowerQuery,
        response: { 200: experimentPowerSchema },
      },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return experiments.experimentPower(principal, scope, request.params.experiment_id, request.query);
    },
  );

  app.get<{ Params: ExperimentParams }>(
    '/v1/environments/:env_id/experiments/:experiment_id',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Get an experiment', params: experimentParams, response: { 200: experimentSchema } } },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return experimentRecord(await experiments.get(principal, scope, request.params.experiment_id));
    },
  );

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route<{ Params: ExperimentParams; Body: ExperimentBody }>({
      method,
      url: '/v1/environments/:env_id/experiments/:experiment_id',
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: 'Update an experiment (the fields given; the flag and variants only in DRAFT)',
        params: experimentParams,
        body: experimentUpdateBody,
        response: { 200: experimentSchema },
      },
      handler: async (request) => {
        const { principal, scope } = await resolve(request);
        return experimentRecord(await experiments.update(principal, scope, request.params.experiment_id, request.body));
      },
    });
  }

  app.delete<{ Params: ExperimentParams; Querystring: VersionQuery }>(
    '/v1/environments/:env_id/experiments/:experiment_id',
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: 'Delete an experiment with its iterations and results; answers the deleted experiment',
        params: experimentParams,
        querystring: versionQuery,
        response: { 200: experimentSchema },
      },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return experimentRecord(await experiments.remove(principal, scope, request.params.experiment_id, queryVersion(request.query)));
    },
  );

  for (const path of [`/v1/environments/:env_id/experiments/:experiment_id/transitions`, `/v1/environments/:env_id/experiments/:experiment_id/transition`]) {
    app.post<{ Params: ExperimentParams; Body: TransitionBody }>(
      path,
      {
        schema: {
          tags: TAGS,
          security: BEARER_ONLY,
          summary: 'Move the experiment to another status (409 FAILED_PRECONDITION for an illegal move)',
          params: experimentParams,
          body: transitionBody,
          response: { 200: experimentSchema },
        },
      },
      async (request) => {
        const { principal, scope } = await resolve(request);
        return experimentRecord(await experiments.transition(principal, scope, request.params.experiment_id, request.body));
      },
    );
  }

  app.get<{ Params: ExperimentParams }>(
    `/v1/environments/:env_id/experiments/:experiment_id/iterations`,
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: 'The iterations of an experiment, numbered from 1 (one per entry into ACTIVE)',
        params: experimentParams,
        response: { 200: { type: 'array', items: iterationSchema } },
      },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return (await experiments.iterations(principal, scope, request.params.experiment_id)).map(iterationRecord);
    },
  );

  app.get<{ Params: ExperimentParams }>(
    `/v1/environments/:env_id/experiments/:experiment_id/results`,
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: 'The latest computed results of the current iteration (404 until first computed)',
        params: experimentParams,
        response: { 200: resultsSchema },
      },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      const { results, isStale } = await experiments.results(principal, scope, request.params.experiment_id);
      return resultsRecord(results, isStale);
    },
  );
}
