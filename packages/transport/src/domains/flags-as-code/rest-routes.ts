import type { FastifyInstance } from 'fastify';
import { FLAGS_DOCUMENT_SCHEMA } from '@switchyard/core';
import type { ImportOutcome } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByRequest } from '../../http/credentials.ts';
import { BEARER_ONLY, uuidParam } from '../../http/schemas.ts';

/**
 * The largest import body. An import is one transaction, and in the split topology the document
 * crosses the gateway hop as one gRPC message (4 MiB at most, with its framing): a bigger project
 * is imported in parts (docs/flags-as-code.md "Limits").
 */
export const MAX_IMPORT_BODY_BYTES = 3 * 1024 * 1024;

const projectParams = { type: 'object', required: ['project_id'], properties: { project_id: uuidParam } } as const;
const booleanQuery = { type: 'string', enum: ['true', 'false'] } as const;

/** The document's schema as a route body schema (its $schema and $id are for the published file). */
const { $schema: _schema, $id: _id, ...documentBody } = FLAGS_DOCUMENT_SCHEMA;

const change = {
  type: 'object',
  required: ['kind', 'key'],
  properties: {
    kind: { enum: ['flag', 'flag_environment', 'segment', 'event_definition', 'environment'] },
    key: { type: 'string' },
    environment: { type: 'string' },
    before: { type: 'object', additionalProperties: true },
    after: { type: 'object', additionalProperties: true },
  },
} as const;

export const importOutcomeSchema = {
  type: 'object',
  required: ['dry_run', 'applied', 'created', 'changed', 'deleted', 'refused'],
  properties: {
    dry_run: { type: 'boolean' },
    applied: { type: 'boolean', description: 'True when the changes committed (never for a dry run, or when anything was refused).' },
    created: { type: 'array', items: change },
    changed: { type: 'array', items: change, description: 'Only the fields that changed, before and after.' },
    deleted: { type: 'array', items: change },
    refused: {
      type: 'array',
      items: {
        type: 'object',
        required: ['kind', 'key', 'error', 'code'],
        properties: { kind: change.properties.kind, key: { type: 'string' }, environment: { type: 'string' }, error: { type: 'string' }, code: { type: 'string' } },
      },
    },
  },
} as const;

/**
 * Flags as code (docs/flags-as-code.md): `GET /v1/projects/{project_id}/export` and
 * `POST /v1/projects/{project_id}/import`, for people (bearer token) and automation (API tokens).
 */
export function registerFlagsAsCodeRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { flagsAsCode, verifier } = services;

  app.get<{ Params: { project_id: string }; Querystring: { environment_ids?: string; include_versions?: 'true' | 'false' } }>(
    '/v1/projects/:project_id/export',
    {
      schema: {
        tags: ['flags'],
        security: BEARER_ONLY,
        summary: "The project's flags and chosen environments' configurations, segments and event definitions as one document",
        params: projectParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            environment_ids: { type: 'string', maxLength: 4000, description: 'Comma-separated environment ids; absent: every environment of the project.' },
            include_versions: booleanQuery,
          },
        },
        response: { 200: { type: 'object', additionalProperties: true, description: 'The document (docs/flags-as-code.schema.json).' } },
      },
    },
    async (request) => {
      const { principal, scope } = await authenticateScoped(verifier, presentedByRequest(request), 'bearer', (caller) => flagsAsCode.scope(caller, request.params.project_id));
      const environmentIds = request.query.environment_ids?.split(',').map((id) => id.trim()).filter((id) => id !== '');
      return flagsAsCode.export(principal, scope, {
        ...(environmentIds === undefined ? {} : { environmentIds }),
        includeVersions: request.query.include_versions === 'true',
      });
    },
  );

  app.post<{ Params: { project_id: string }; Querystring: { dry_run?: 'true' | 'false'; prune?: 'true' | 'false' }; Body: unknown }>(
    '/v1/projects/:project_id/import',
    {
      bodyLimit: MAX_IMPORT_BODY_BYTES,
      schema: {
        tags: ['flags'],
        security: BEARER_ONLY,
        summary: 'Apply a flags-as-code document as one transaction, or show what it would change (dry_run=true)',
        params: projectParams,
        querystring: { type: 'object', additionalProperties: false, properties: { dry_run: booleanQuery, prune: booleanQuery } },
        body: documentBody,
        response: { 200: importOutcomeSchema, 409: { ...importOutcomeSchema, required: [...importOutcomeSchema.required, 'error', 'code'], properties: { ...importOutcomeSchema.properties, error: { type: 'string' }, code: { type: 'string' } } } },
      },
    },
    async (request, reply) => {
      const { principal, scope } = await authenticateScoped(verifier, presentedByRequest(request), 'bearer', (caller) => flagsAsCode.scope(caller, request.params.project_id));
      const outcome: ImportOutcome = await flagsAsCode.import(principal, scope, request.body, {
        dryRun: request.query.dry_run === 'true',
        prune: request.query.prune === 'true',
      });
      if (outcome.dry_run || outcome.refused.length === 0) return outcome;
      // Nothing was written: not a 2xx (docs/contract.md "Errors"), with the whole answer so the caller sees every reason.
      return reply.code(409).send({ error: `the import was refused (${outcome.refused.length} refused; nothing was written)`, code: 'FAILED_PRECONDITION', ...outcome });
    },
  );
}
