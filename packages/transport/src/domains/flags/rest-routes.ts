import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from '@switchyard/core';
import type { FlagTarget, FlagWriteBody } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByRequest } from '../../http/credentials.ts';
import { BEARER_ONLY, EMPTY_RESPONSE, queryVersion, uuidParam, versionQuery, type VersionQuery } from '../../http/schemas.ts';
import { flagCreateBody, flagListQuery, flagSchema, flagWriteBody, hashingBody, hashingResponse, rulesBody, variantsBody, type FlagListQuery } from './rest-schemas.ts';

/**
 * The two spellings of the flag routes (docs/contract.md "Flags"): per environment (the merged view), and per
 * project (the project-level definition; an environment id there behaves as the environment route).
 * Every path is written out in full so that a URL can be found by searching for it.
 */
const MOUNTS = [
  {
    param: 'env_id',
    via: 'environment',
    paths: {
      list: '/v1/environments/:env_id/flags',
      one: '/v1/environments/:env_id/flags/:flag_id',
      hashing: '/v1/environments/:env_id/flags/:flag_id/hashing',
      rules: '/v1/environments/:env_id/flags/:flag_id/rules',
      variants: '/v1/environments/:env_id/flags/:flag_id/variants',
      archive: '/v1/environments/:env_id/flags/:flag_id/archive',
      unarchive: '/v1/environments/:env_id/flags/:flag_id/unarchive',
    },
  },
  {
    param: 'project_id',
    via: 'project',
    paths: {
      list: '/v1/projects/:project_id/flags',
      one: '/v1/projects/:project_id/flags/:flag_id',
      hashing: '/v1/projects/:project_id/flags/:flag_id/hashing',
      rules: '/v1/projects/:project_id/flags/:flag_id/rules',
      variants: '/v1/projects/:project_id/flags/:flag_id/variants',
      archive: '/v1/projects/:project_id/flags/:flag_id/archive',
      unarchive: '/v1/projects/:project_id/flags/:flag_id/unarchive',
    },
  },
] as const;

type Mount = (typeof MOUNTS)[number];

const flagKeyParam = { type: 'string', minLength: 1, maxLength: 128 } as const;
const TAGS = ['flags'];
const flagList = { type: 'array', items: flagSchema } as const;

interface FlagParams {
  flag_id: string;
}

/** Flag CRUD, rules, variants, hashing and archiving, bearer token only (docs/contract.md "Authentication"). */
export function registerFlagRoutes(app: FastifyInstance, services: GatewayServices): void {
  for (const mount of MOUNTS) registerAt(app, services, mount);
}

function registerAt(app: FastifyInstance, services: GatewayServices, mount: Mount): void {
  const { flags, verifier } = services;
  const { paths, param, via } = mount;
  const where = via === 'environment' ? 'an environment' : 'a project (or an environment)';
  const listParams = { type: 'object', required: [param], properties: { [param]: uuidParam } };
  const flagParams = { type: 'object', required: [param, 'flag_id'], properties: { [param]: uuidParam, flag_id: flagKeyParam } };

  async function resolve(request: FastifyRequest): Promise<{ principal: Principal; target: FlagTarget }> {
    const id = (request.params as Record<string, string>)[param] ?? '';
    const { principal, scope } = await authenticateScoped(verifier, presentedByRequest(request), 'bearer', (caller) => flags.target(caller, id, via));
    return { principal, target: scope };
  }

  app.get<{ Querystring: FlagListQuery }>(
    paths.list,
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: `List the flags of ${where}`, params: listParams, querystring: flagListQuery, response: { 200: flagList } } },
    async (request) => {
      const { principal, target } = await resolve(request);
      const { tag, lifetime, include } = request.query;
      const list = await flags.list(principal, target, { ...(tag === undefined ? {} : { tag }), ...(lifetime === undefined ? {} : { lifetime }) });
      // Opt-in (docs/insights.md): each flag's last evaluation and status in the environment.
      if (include !== 'insights' || via !== 'environment') return list;
      const scope = await services.insights.scope(principal, (request.params as Record<string, string>)[param] ?? '');
      const activity = await services.insights.activity(principal, scope, list.map((flag) => flag.key));
      // A flag made between the two reads is absent from the activity: never evaluated, new.
      return list.map((flag) => ({ ...flag, last_evaluated_at_ms: activity[flag.key]?.lastEvaluatedAtMs ?? null, status: activity[flag.key]?.status ?? 'new' }));
    },
  );

  app.post<{ Body: FlagWriteBody }>(
    paths.list,
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: `Create a flag in ${where}`, params: listParams, body: flagCreateBody, response: { 201: flagSchema } } },
    async (request, reply) => {
      const { principal, target } = await resolve(request);
      const flag = await flags.create(principal, target, request.body);
      return reply.code(201).send(flag);
    },
  );

  app.get<{ Params: FlagParams }>(
    paths.one,
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Get a flag', params: flagParams, response: { 200: flagSchema } } },
    async (request) => {
      const { principal, target } = await resolve(request);
      return flags.get(principal, target, request.params.flag_id);
    },
  );

  app.put<{ Params: FlagParams; Body: FlagWriteBody }>(
    paths.one,
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Update a flag (fields present in the body)', params: flagParams, body: flagWriteBody, response: { 200: flagSchema } } },
    async (request) => {
      const { principal, target } = await resolve(request);
      const flag = await flags.update(principal, target, request.params.flag_id, request.body);
      return flag;
    },
  );

  app.delete<{ Params: FlagParams; Querystring: VersionQuery }>(
    paths.one,
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: 'Delete a flag (its definition and every environment state)',
        params: flagParams,
        querystring: versionQuery,
        response: { 204: EMPTY_RESPONSE },
      },
    },
    async (request, reply) => {
      const { principal, target } = await resolve(request);
      await flags.remove(principal, target, request.params.flag_id, queryVersion(request.query));
      return reply.code(204).send();
    },
  );

  app.put<{ Params: FlagParams; Body: { configs: unknown[]; version?: number | null } }>(
    paths.hashing,
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: "Set the flag's default hash input in an environment",
        params: flagParams,
        body: hashingBody,
        response: { 200: hashingResponse },
      },
    },
    async (request) => {
      const { principal, target } = await resolve(request);
      const answer = await flags.updateHashing(principal, target, request.params.flag_id, request.body.configs, request.body.version ?? undefined);
      return answer;
    },
  );

  app.put<{ Params: FlagParams; Body: { rules: unknown[]; version?: number | null } }>(
    paths.rules,
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: "Replace the flag's targeting rules in an environment",
        params: flagParams,
        body: rulesBody,
        response: { 202: flagSchema },
      },
    },
    async (request, reply) => {
      const { principal, target } = await resolve(request);
      const flag = await flags.replaceRules(principal, target, request.params.flag_id, request.body.rules, request.body.version ?? undefined);
      return reply.code(202).send(flag);
    },
  );

  app.post<{ Params: FlagParams; Body: { variants: unknown[] } }>(
    paths.variants,
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Add variants or change their values', params: flagParams, body: variantsBody, response: { 202: flagSchema } } },
    async (request, reply) => {
      const { principal, target } = await resolve(request);
      const flag = await flags.upsertVariants(principal, target, request.params.flag_id, request.body.variants);
      return reply.code(202).send(flag);
    },
  );

  for (const archived of [true, false]) {
    app.post<{ Params: FlagParams; Querystring: VersionQuery }>(
      archived ? paths.archive : paths.unarchive,
      {
        schema: {
          tags: TAGS,
          security: BEARER_ONLY,
          summary: archived ? 'Archive a flag (it is no longer evaluated)' : 'Unarchive a flag',
          params: flagParams,
          querystring: versionQuery,
          response: { 200: flagSchema },
        },
      },
      async (request) => {
        const { principal, target } = await resolve(request);
        const flag = await flags.archive(principal, target, request.params.flag_id, archived, queryVersion(request.query));
        return flag;
      },
    );
  }
}
