import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { EnvironmentScope, Principal } from '@switchyard/core';
import { MAX_EVENT_DEFINITION_DESCRIPTION, eventDefinitionRecord, type EventDefinitionBody } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByRequest } from '../../http/credentials.ts';
import { uuidParam } from '../../http/schemas.ts';

const TAGS = ['event-definitions'];
const BEARER: ReadonlyArray<Record<string, readonly string[]>> = [{ bearer_jwt: [] }];

const keySchema = {
  type: 'string',
  minLength: 1,
  maxLength: 128,
  description: "1-128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit",
} as const;
const valueTypeSchema = { type: 'string', enum: ['bool', 'int', 'double'] } as const;
const descriptionSchema = { type: ['string', 'null'], maxLength: MAX_EVENT_DEFINITION_DESCRIPTION } as const;
const clientAllowedSchema = {
  type: 'boolean',
  description: 'Whether client keys (browsers, apps) may send this event (docs/client-side.md "5. Exposures and events"); default false',
} as const;

const envParams = { type: 'object', required: ['env_id'], properties: { env_id: uuidParam } } as const;
const definitionParams = {
  type: 'object',
  required: ['env_id', 'def_id'],
  properties: { env_id: uuidParam, def_id: { type: 'string', minLength: 1, maxLength: 128, description: 'The event definition key' } },
} as const;

const createBody = {
  type: 'object',
  required: ['key', 'value_type'],
  properties: { key: keySchema, description: descriptionSchema, value_type: valueTypeSchema, client_allowed: clientAllowedSchema },
} as const;
const updateBody = {
  type: 'object',
  description: 'Fields left out keep their value; key, when given, must be the one in the path.',
  properties: { key: keySchema, description: descriptionSchema, value_type: valueTypeSchema, client_allowed: clientAllowedSchema },
} as const;

const definitionSchema = {
  type: 'object',
  required: ['key', 'description', 'value_type', 'client_allowed', 'environment_id', 'created_at_ms'],
  properties: {
    key: { type: 'string' },
    description: { type: 'string' },
    value_type: valueTypeSchema,
    client_allowed: { type: 'boolean' },
    environment_id: { type: 'string' },
    created_at_ms: { type: 'integer' },
  },
} as const;
const EMPTY = { type: 'null', description: 'No content.' } as const;

interface EnvParams {
  env_id: string;
}
interface DefinitionParams extends EnvParams {
  def_id: string;
}

/**
 * `/v1/environments/{env_id}/event-definitions/**` (bearer only): the metric keys an environment
 * accepts and their value types. Statuses as docs/contract.md "Event definitions": create and update
 * answer 202 with the record, GET of one 200 (not 501: "Deliberate departures"), delete 204.
 */
export function registerEventDefinitionRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { eventDefinitions, verifier } = services;

  async function resolve(request: FastifyRequest<{ Params: EnvParams }>): Promise<{ principal: Principal; scope: EnvironmentScope }> {
    return authenticateScoped(verifier, presentedByRequest(request), 'bearer', (principal) => eventDefinitions.scope(principal, request.params.env_id));
  }

  app.get<{ Params: EnvParams }>(
    '/v1/environments/:env_id/event-definitions',
    {
      schema: {
        tags: TAGS,
        summary: 'List the event definitions of an environment (in key order)',
        security: BEARER,
        params: envParams,
        response: { 200: { type: 'array', items: definitionSchema } },
      },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return (await eventDefinitions.list(principal, scope)).map(eventDefinitionRecord);
    },
  );

  app.post<{ Params: EnvParams; Body: EventDefinitionBody }>(
    '/v1/environments/:env_id/event-definitions',
    {
      schema: {
        tags: TAGS,
        summary: 'Register a metric key and its value type (409 when the key exists)',
        security: BEARER,
        params: envParams,
        body: createBody,
        response: { 202: definitionSchema },
      },
    },
    async (request, reply) => {
      const { principal, scope } = await resolve(request);
      const definition = await eventDefinitions.create(principal, scope, request.body);
      return reply.code(202).send(eventDefinitionRecord(definition));
    },
  );

  app.get<{ Params: DefinitionParams }>(
    `/v1/environments/:env_id/event-definitions/:def_id`,
    {
      schema: { tags: TAGS, summary: 'Get one event definition', security: BEARER, params: definitionParams, response: { 200: definitionSchema } },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return eventDefinitionRecord(await eventDefinitions.get(principal, scope, request.params.def_id));
    },
  );

  app.put<{ Params: DefinitionParams; Body: EventDefinitionBody }>(
    `/v1/environments/:env_id/event-definitions/:def_id`,
    {
      schema: {
        tags: TAGS,
        summary: "Change an event definition's description or value type (stored events keep their values)",
        security: BEARER,
        params: definitionParams,
        body: updateBody,
        response: { 202: definitionSchema },
      },
    },
    async (request, reply) => {
      const { principal, scope } = await resolve(request);
      const definition = await eventDefinitions.update(principal, scope, request.params.def_id, request.body);
      return reply.code(202).send(eventDefinitionRecord(definition));
    },
  );

  app.delete<{ Params: DefinitionParams }>(
    `/v1/environments/:env_id/event-definitions/:def_id`,
    {
      schema: {
        tags: TAGS,
        summary: 'Delete an event definition (stored events are kept; new events of the key are rejected)',
        security: BEARER,
        params: definitionParams,
        response: { 204: EMPTY },
      },
    },
    async (request, reply) => {
      const { principal, scope } = await resolve(request);
      await eventDefinitions.remove(principal, scope, request.params.def_id);
      return reply.code(204).send();
    },
  );
}
