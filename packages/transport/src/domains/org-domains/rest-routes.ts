import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticate } from '../../http/credentials.ts';

const domainString = { type: 'string', minLength: 1, maxLength: 253 } as const;

/** `/v1/management/orgs/{org_id}/domains`: domains an org proves by DNS TXT (docs/contract.md "Management (users of a normal org)"). */
export function registerOrgDomainRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { orgDomains, verifier } = services;

  app.post<{ Params: { org_id: string }; Body: { domain: string } }>(
    '/v1/management/orgs/:org_id/domains',
    { schema: { body: { type: 'object', required: ['domain'], properties: { domain: domainString } } } },
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return reply.code(201).send(await orgDomains.add(principal, request.params.org_id, { domain: request.body.domain }));
    },
  );

  app.get<{ Params: { org_id: string } }>('/v1/management/orgs/:org_id/domains', async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return orgDomains.list(principal, request.params.org_id);
  });

  app.post<{ Params: { org_id: string; domain: string } }>('/v1/management/orgs/:org_id/domains/:domain/verify', async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return orgDomains.verify(principal, request.params.org_id, request.params.domain);
  });

  app.delete<{ Params: { org_id: string; domain: string } }>('/v1/management/orgs/:org_id/domains/:domain', async (request, reply) => {
    const principal = await authenticate(verifier, request, 'bearer');
    await orgDomains.remove(principal, request.params.org_id, request.params.domain);
    return reply.code(204).send();
  });
}
