import swagger from '@fastify/swagger';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { errorBody } from './schemas.ts';

/** Where the document is served (no credentials needed: it describes, it does not reveal). */
export const OPENAPI_PATH = '/v1/openapi.json';

/** The `{error, code}` body (docs/contract.md "Errors"), one shared component instead of a copy per route. */
const ERROR_SCHEMA_ID = 'ErrorBody';

/** Security schemes routes may name in `schema.security`. */
const SECURITY_SCHEMES = {
  bearer_jwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A user session token from /v1/auth/login, or an API token (`swy_...`, docs/access.md "API tokens").' },
  sdk_key: { type: 'apiKey', in: 'header', name: 'x-sdk-key', description: "An environment's SDK key." },
  api_key: {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-Key',
    description: 'A server or client key in OFREP’s own header (OFREP, exposures and events; docs/client-side.md).',
  },
  sdk_key_bearer: {
    type: 'http',
    scheme: 'bearer',
    description: 'An SDK key sent as `Authorization: Bearer <key>` (OFREP providers set only this header).',
  },
} as const;

type ResponseMap = Record<string, unknown>;

/** True when a route already documents some error answer itself (any 4xx/5xx key or `default`). */
function declaresErrors(responses: ResponseMap): boolean {
  return Object.keys(responses).some((status) => status === 'default' || /^[45]/.test(status));
}

/** `/v1/management/...` → `management`; `/ofrep/...` → `ofrep`; `/healthz` → `operations`. */
function tagFor(url: string): string {
  const parts = url.split('/').filter((part) => part !== '');
  if (parts[0] === 'v1' && parts[1] !== undefined && !parts[1].startsWith(':')) return parts[1];
  if (parts[0] === 'ofrep') return 'ofrep';
  return 'operations';
}

/**
 * Documentation-only additions to a route's own schema, derived from the route (never a
 * hand-written path): a tag from its URL and, for routes answering errors through the global
 * handler (everything but OFREP, which has its own error shapes), the `{error, code}` body as
 * the `default` response. The route's schema object is copied, never changed: Fastify validates
 * and serializes with it.
 */
function documentRoute({ schema, url }: { schema?: FastifySchema; url: string }): { schema: FastifySchema; url: string } {
  const documented: FastifySchema = { ...(schema ?? {}) };
  if (documented.hide === true) return { schema: documented, url };
  documented.tags ??= [tagFor(url)];
  if (!url.startsWith('/ofrep/')) {
    const declared = (documented.response ?? undefined) as ResponseMap | undefined;
    const responses: ResponseMap = declared ? { ...declared } : { '2XX': { description: 'Success' } };
    if (!declaresErrors(responses)) {
      responses.default = { $ref: `${ERROR_SCHEMA_ID}#`, description: 'Error: `{error, code}` with the status of the code (docs/contract.md "Errors")' };
    }
    documented.response = responses;
  }
  return { schema: documented, url };
}

/**
 * OpenAPI 3.1 generated from the schemas Fastify validates with (@fastify/swagger, dynamic mode),
 * served at GET /v1/openapi.json. Must run before any route is added: the plugin collects routes
 * through an onRoute hook. /healthz, /readyz and /metrics stay in the document (tag `operations`):
 * they are real HTTP routes an operator calls; only the document's own route is hidden.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  app.addSchema({ $id: ERROR_SCHEMA_ID, ...errorBody, description: 'Every REST error (OFREP routes excepted)' });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Switchyard',
        version: '0.1.0',
        description: 'Self-hosted feature flags and experimentation. OFREP routes follow the OpenFeature Remote Evaluation Protocol.',
      },
      components: { securitySchemes: SECURITY_SCHEMES },
    },
    // Shared schemas appear under components.schemas by their $id rather than as `def-N`.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transform: documentRoute,
  });
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
}
