import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticate } from '../../http/credentials.ts';
import { nameBody, newUserBody, newUserInput, type NameBody, type NewUserBody } from '../../http/schemas.ts';

/** `/v1/admin/**`: platform administration, for users of the system org only (403 otherwise). */
export function registerAdminRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { management, verifier } = services;

  app.post<{ Body: NameBody }>('/v1/admin/orgs', { schema: { body: nameBody } }, async (request, reply) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return reply.code(201).send(await management.createOrg(principal, { name: request.body.name }));
  });

  app.get('/v1/admin/orgs', async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return management.listOrgs(principal);
  });

  app.post<{ Params: { org_id: string }; Body: NewUserBody }>(
    '/v1/admin/orgs/:org_id/users',
    { schema: { body: newUserBody } },
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return reply.code(201).send(await management.seedUser(principal, request.params.org_id, newUserInput(request.body)));
    },
  );

  app.post<{ Body: NewUserBody }>('/v1/admin/seed-user', { schema: { body: newUserBody } }, async (request, reply) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return reply.code(201).send(await management.seedUser(principal, request.body.org_id ?? undefined, newUserInput(request.body)));
  });
}
