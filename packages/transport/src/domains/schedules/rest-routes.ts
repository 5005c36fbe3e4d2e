import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { EnvironmentScope, Principal } from '@switchyard/core';
import type { ScheduledChangeListQuery } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByRequest } from '../../http/credentials.ts';
import { BEARER_ONLY, envParams, uuidParam } from '../../http/schemas.ts';
import { flagSchema } from '../flags/rest-schemas.ts';
import { createBody, listQuery, revertBody, revertRequestAnswer, scheduleCalendar, scheduledChangeAnswer, scheduledChangeList, scheduledChangeSchema, updateBody } from './rest-schemas.ts';

const TAGS = ['scheduled changes'];
const flagKeyParam = { type: 'string', minLength: 1, maxLength: 128 } as const;
const flagParams = { type: 'object', required: ['env_id', 'flag_id'], properties: { env_id: uuidParam, flag_id: flagKeyParam } } as const;
const changeParams = { type: 'object', required: ['env_id', 'flag_id', 'change_id'], properties: { env_id: uuidParam, flag_id: flagKeyParam, change_id: uuidParam } } as const;

interface FlagParams {
  env_id: string;
  flag_id: string;
}
interface ChangeParams extends FlagParams {
  change_id: string;
}

/**
 * Scheduled changes and revert (docs/workflow.md "Scheduled changes", "Revert"), bearer token
 * only. Every decision is the ScheduledChangeService's; writes into a protected environment take
 * `X-Confirm-Environment` / `X-Change-Comment` as every write does.
 */
export function registerScheduledChangeRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { scheduledChanges, verifier } = services;

  async function resolve(request: FastifyRequest<{ Params: { env_id: string } }>): Promise<{ principal: Principal; scope: EnvironmentScope }> {
    return authenticateScoped(verifier, presentedByRequest(request), 'bearer', (principal) => scheduledChanges.scope(principal, request.params.env_id));
  }

  app.get<{ Params: { env_id: string }; Querystring: ScheduledChangeListQuery & { include?: string } }>(
    '/v1/environments/:env_id/scheduled-changes',
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: "The environment's scheduled changes, earliest first (a calendar: from_ms, to_ms); with include=change_requests, {scheduled_changes, change_requests}",
        params: envParams,
        querystring: listQuery,
        // A bare array as before; the object only when asked for (include=change_requests).
        response: { 200: { anyOf: [scheduledChangeList, scheduleCalendar] } },
      },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      const { include, ...query } = request.query;
      if (include === 'change_requests') return scheduledChanges.calendar(principal, scope, query, null);
      return scheduledChanges.list(principal, scope, query, null);
    },
  );

  app.get<{ Params: FlagParams; Querystring: ScheduledChangeListQuery }>(
    '/v1/environments/:env_id/flags/:flag_id/scheduled-changes',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: "The flag's scheduled changes in this environment, earliest first", params: flagParams, querystring: listQuery, response: { 200: scheduledChangeList } } },
    async (request) => {
      const { principal, scope } = await resolve(request);
      const { include: _include, ...query } = request.query as ScheduledChangeListQuery & { include?: string };
      return scheduledChanges.list(principal, scope, query, request.params.flag_id);
    },
  );

  app.post<{ Params: FlagParams; Body: unknown }>(
    '/v1/environments/:env_id/flags/:flag_id/scheduled-changes',
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: 'Schedule operations on the flag at a time (checked against the flag now; contending pending schedules reported)',
        params: flagParams,
        body: createBody,
        response: { 201: scheduledChangeAnswer },
      },
    },
    async (request, reply) => {
      const { principal, scope } = await resolve(request);
      return reply.code(201).send(await scheduledChanges.create(principal, scope, request.params.flag_id, request.body));
    },
  );

  app.get<{ Params: ChangeParams }>(
    '/v1/environments/:env_id/flags/:flag_id/scheduled-changes/:change_id',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'One scheduled change', params: changeParams, response: { 200: scheduledChangeSchema } } },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return scheduledChanges.get(principal, scope, request.params.flag_id, request.params.change_id);
    },
  );

  app.patch<{ Params: ChangeParams; Body: unknown }>(
    '/v1/environments/:env_id/flags/:flag_id/scheduled-changes/:change_id',
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: 'Edit a pending scheduled change (the fields given; checked as at creation)',
        params: changeParams,
        body: updateBody,
        response: { 200: scheduledChangeAnswer },
      },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return scheduledChanges.update(principal, scope, request.params.flag_id, request.params.change_id, request.body);
    },
  );

  app.delete<{ Params: ChangeParams }>(
    '/v1/environments/:env_id/flags/:flag_id/scheduled-changes/:change_id',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Cancel a pending scheduled change (it stays listed, cancelled)', params: changeParams, response: { 200: scheduledChangeSchema } } },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return scheduledChanges.cancel(principal, scope, request.params.flag_id, request.params.change_id);
    },
  );

  app.post<{ Params: FlagParams; Body: unknown }>(
    '/v1/environments/:env_id/flags/:flag_id/revert',
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary:
          "Apply a change-history entry's before state (enabled, off variant, rules, prerequisites) of this flag here as a new version (200, the flag); " +
          'where the environment requires approval, open a change request making it (202, {change_request})',
        params: flagParams,
        body: revertBody,
        response: { 200: flagSchema, 202: revertRequestAnswer },
      },
    },
    async (request, reply) => {
      const { principal, scope } = await resolve(request);
      const answer = await scheduledChanges.revert(principal, scope, request.params.flag_id, request.body);
      return 'flag' in answer ? reply.code(200).send(answer.flag) : reply.code(202).send({ change_request: answer.change_request });
    },
  );
}
