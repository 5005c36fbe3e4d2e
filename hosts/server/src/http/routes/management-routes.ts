import type { FastifyInstance } from 'fastify';
import { authenticate } from '../credentials.ts';
import type { GatewayServices } from './gateway-services.ts';
import { nameBody, newUserBody, newUserInput, type NameBody, type NewUserBody } from './schemas.ts';

/** `/v1/management/**`: projects, environments, SDK keys and users inside the caller's org. */
export function registerManagementRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { management, verifier } = services;

  // --- projects ---
  app.post<{ Params: { org_id: string }; Body: NameBody }>(
    '/v1/management/orgs/:org_id/projects',
    { schema: { body: nameBody } },
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return reply.code(201).send(await management.createProject(principal, request.params.org_id, { name: request.body.name }));
    },
  );
  app.post<{ Body: NameBody }>('/v1/management/projects', { schema: { body: nameBody } }, async (request, reply) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return reply.code(201).send(await management.createProject(principal, request.body.org_id ?? undefined, { name: request.body.name }));
  });
  app.get<{ Params: { org_id: string } }>('/v1/management/orgs/:org_id/projects', async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return management.listProjects(principal, request.params.org_id);
  });

  // --- users ---
  app.post<{ Params: { org_id: string }; Body: NewUserBody }>(
    '/v1/management/orgs/:org_id/users',
    { schema: { body: newUserBody } },
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return reply.code(201).send(await management.createUser(principal, request.params.org_id, newUserInput(request.body)));
    },
  );
  app.post<{ Body: NewUserBody }>('/v1/management/users', { schema: { body: newUserBody } }, async (request, reply) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return reply.code(201).send(await management.createUser(principal, request.body.org_id ?? undefined, newUserInput(request.body)));
  });
  app.get<{ Params: { org_id: string } }>('/v1/management/orgs/:org_id/users', async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return management.listUsers(principal, request.params.org_id);
  });

  // --- environments ---
  app.post<{ Params: { project_id: string }; Body: NameBody }>(
    '/v1/management/projects/:project_id/environments',
    { schema: { body: nameBody } },
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return reply.code(201).send(await management.createEnvironment(principal, request.params.project_id, { name: request.body.name }));
    },
  );
  app.get<{ Params: { project_id: string } }>('/v1/management/projects/:project_id/environments', async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return management.listEnvironments(principal, request.params.project_id);
  });

  // --- SDK keys ---
  app.post<{ Params: { environment_id: string } }>('/v1/management/environments/:environment_id/sdk-keys', async (request, reply) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return reply.code(201).send(await management.createSdkKey(principal, request.params.environment_id));
  });
  app.get<{ Params: { environment_id: string } }>('/v1/management/environments/:environment_id/sdk-keys', async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return management.listSdkKeys(principal, request.params.environment_id);
  });
  app.delete<{ Params: { environment_id: string; sdk_key_id: string } }>(
    '/v1/management/environments/:environment_id/sdk-keys/:sdk_key_id',
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      await management.deleteSdkKey(principal, request.params.environment_id, request.params.sdk_key_id);
      return reply.code(204).send();
    },
  );
}
