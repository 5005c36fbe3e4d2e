import type { FastifyInstance, FastifyRequest } from 'fastify';
import { invalidArgument, type EnvironmentScope, type MemberChanges, type MemberList, type Principal, type Segment } from '@switchyard/core';
import type { MembershipQuery, SegmentBody } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByRequest } from '../../http/credentials.ts';
import { BEARER_ONLY, BEARER_OR_SDK_KEY, EMPTY_RESPONSE, envParams, queryVersion, uuidParam, versionQuery, type VersionQuery } from '../../http/schemas.ts';
import {
  listCheckBatchBody,
  listCheckBatchResponse,
  listCheckBody,
  listCheckResponse,
  memberChangesBody,
  membersQuery,
  membersResponse,
  segmentBody,
  segmentCreateBody,
  segmentSchema,
} from './rest-schemas.ts';

const TAGS = ['segments'];
const DEFAULT_MEMBERS_PAGE = 1000;
const MAX_MEMBERS_PAGE = 10_000;

const segmentParams = {
  type: 'object',
  required: ['env_id', 'segment_id'],
  properties: { env_id: uuidParam, segment_id: { type: 'string', minLength: 1, maxLength: 128 } },
} as const;

interface EnvParams {
  env_id: string;
}
interface SegmentParams extends EnvParams {
  segment_id: string;
}

/** The record of docs/contract.md "Segments": list segments show member counts, rule segments their conditions. */
function segmentRecord(segment: Segment): Record<string, unknown> {
  const base = {
    id: segment.id,
    key: segment.key,
    context_type: segment.context_type,
    kind: segment.kind,
    description: segment.description,
    version: segment.version,
    created_at_ms: segment.created_at_ms,
    updated_at_ms: segment.updated_at_ms,
  };
  return segment.kind === 'list'
    ? { ...base, included_count: segment.included_count, excluded_count: segment.excluded_count }
    : { ...base, conditions: segment.conditions };
}

/**
 * `/v1/environments/{env_id}/segments/**`. Every route accepts a bearer token or an SDK key (docs/contract.md
 * "Authentication"); RBAC lets an SDK key use the list-check routes only (403 elsewhere).
 *
 * The static paths `list-check`, `list-check/batch` and `batch-list-check` exist only for POST,
 * and POST has no `/:segment_id` route, so a segment may even be named `list-check`: the router
 * prefers static segments anyway.
 */
export function registerSegmentRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { segments, verifier, clientAccess } = services;

  async function resolve(request: FastifyRequest<{ Params: EnvParams }>): Promise<{ principal: Principal; scope: EnvironmentScope }> {
    return authenticateScoped(verifier, presentedByRequest(request), 'bearer_or_sdk', (principal) => {
      // A server key from a browser is refused before anything is read (docs/client-side.md "CORS and origins").
      clientAccess.refuseServerKeyFromBrowser(request, principal);
      return segments.scope(principal, request.params.env_id);
    });
  }


  app.get<{ Params: EnvParams }>(
    '/v1/environments/:env_id/segments',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'List the segments of an environment', params: envParams, response: { 200: { type: 'array', items: segmentSchema } } } },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return (await segments.list(principal, scope)).map(segmentRecord);
    },
  );

  app.post<{ Params: EnvParams; Body: SegmentBody }>(
    '/v1/environments/:env_id/segments',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Create a list or rule segment', params: envParams, body: segmentCreateBody, response: { 201: segmentSchema } } },
    async (request, reply) => {
      const { principal, scope } = await resolve(request);
      const segment = await segments.create(principal, scope, request.body);
      return reply.code(201).send(segmentRecord(segment));
    },
  );

  // --- list-check (SDK routes) ---

  app.post<{ Params: EnvParams; Body: MembershipQuery }>(
    `/v1/environments/:env_id/segments/list-check`,
    {
      schema: {
        tags: TAGS,
        security: BEARER_OR_SDK_KEY,
        summary: 'Whether a context key is a member of a list segment (excluded wins over included)',
        params: envParams,
        body: listCheckBody,
        response: { 200: listCheckResponse },
      },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      const [isMember] = await segments.checkMembership(principal, scope, [request.body]);
      return { is_member: isMember === true };
    },
  );

  for (const path of [`/v1/environments/:env_id/segments/list-check/batch`, `/v1/environments/:env_id/segments/batch-list-check`]) {
    app.post<{ Params: EnvParams; Body: MembershipQuery[] }>(
      path,
      {
        schema: {
          tags: TAGS,
          security: BEARER_OR_SDK_KEY,
          summary: 'Several list-checks at once (at most 1000), answered in order',
          params: envParams,
          body: listCheckBatchBody,
          response: { 200: listCheckBatchResponse },
        },
      },
      async (request) => {
        const { principal, scope } = await resolve(request);
        const queries = request.body;
        const answers = await segments.checkMembership(principal, scope, queries);
        return queries.map((query, i) => ({ segment_key: query.segment_key, context_key: query.context_key, is_member: answers[i] === true }));
      },
    );
  }

  // --- one segment ---

  app.get<{ Params: SegmentParams }>(
    `/v1/environments/:env_id/segments/:segment_id`,
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Get a segment', params: segmentParams, response: { 200: segmentSchema } } },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return segmentRecord(await segments.get(principal, scope, request.params.segment_id));
    },
  );

  app.put<{ Params: SegmentParams; Body: SegmentBody }>(
    `/v1/environments/:env_id/segments/:segment_id`,
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: 'Update a segment (key and kind cannot change; key lists given here replace the members)',
        params: segmentParams,
        body: segmentBody,
        response: { 200: segmentSchema },
      },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      const segment = await segments.update(principal, scope, request.params.segment_id, request.body);
      return segmentRecord(segment);
    },
  );

  app.delete<{ Params: SegmentParams; Querystring: VersionQuery }>(
    `/v1/environments/:env_id/segments/:segment_id`,
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: 'Delete a segment (409 while a flag rule uses it)',
        params: segmentParams,
        querystring: versionQuery,
        response: { 204: EMPTY_RESPONSE },
      },
    },
    async (request, reply) => {
      const { principal, scope } = await resolve(request);
      await segments.remove(principal, scope, request.params.segment_id, queryVersion(request.query));
      return reply.code(204).send();
    },
  );

  app.patch<{ Params: SegmentParams; Body: MemberChanges }>(
    `/v1/environments/:env_id/segments/:segment_id/members`,
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: "Add or remove a list segment's included and excluded keys",
        params: segmentParams,
        body: memberChangesBody,
        response: { 200: segmentSchema },
      },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      // Membership is looked up live at evaluation, so the snapshot needs no refresh.
      return segmentRecord(await segments.changeMembers(principal, scope, request.params.segment_id, request.body));
    },
  );

  app.get<{ Params: SegmentParams; Querystring: { list?: MemberList; cursor?: string; limit?: string } }>(
    `/v1/environments/:env_id/segments/:segment_id/members`,
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: "A page of a list segment's keys, in key order",
        params: segmentParams,
        querystring: membersQuery,
        response: { 200: membersResponse },
      },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      const { list = 'included', cursor, limit } = request.query;
      const size = limit === undefined ? DEFAULT_MEMBERS_PAGE : Number(limit);
      if (size < 1 || size > MAX_MEMBERS_PAGE) {
        throw invalidArgument(`limit must be from 1 to ${MAX_MEMBERS_PAGE}`, 'limit');
      }
      const page = await segments.listMembers(principal, scope, request.params.segment_id, list, cursor === undefined || cursor === '' ? null : cursor, size);
      return { keys: page.items, next_cursor: page.nextCursor };
    },
  );
}
