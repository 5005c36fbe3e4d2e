import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticate } from '../../http/credentials.ts';
import { nameBody, newUserBody, newUserInput, nonEmptyString, type NameBody, type NewUserBody } from '../../http/schemas.ts';

/** `/v1/management/**`: projects, environments, SDK keys and users inside the caller's org. */
export function registerManagementRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { management, invitations, verifier } = services;

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

  // {client_visible_default} (docs/client-side.md "What a client sees"); org_admin only, audited.
  app.patch<{ Params: { project_id: string }; Body: unknown }>('/v1/management/projects/:project_id', async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return management.updateProject(principal, request.params.project_id, request.body);
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

  app.patch<{ Params: { org_id: string; user_id: string }; Body: { org_role: string } }>(
    '/v1/management/orgs/:org_id/users/:user_id',
    { schema: { body: { type: 'object', required: ['org_role'], properties: { org_role: { type: 'string', enum: ['org_admin', 'org_member'] } } } } },
    async (request) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return management.setMemberRole(principal, request.params.org_id, request.params.user_id, { orgRole: request.body.org_role });
    },
  );
  app.delete<{ Params: { org_id: string; user_id: string } }>('/v1/management/orgs/:org_id/users/:user_id', async (request, reply) => {
    const principal = await authenticate(verifier, request, 'bearer');
    await management.removeMember(principal, request.params.org_id, request.params.user_id);
    return reply.code(204).send();
  });

  // --- invitations (the only way an existing account joins another org) ---
  app.post<{ Params: { org_id: string }; Body: { email: string; org_role?: string | null } }>(
    '/v1/management/orgs/:org_id/invitations',
    {
      schema: {
        body: {
          type: 'object',
          required: ['email'],
          properties: { email: nonEmptyString, org_role: { type: ['string', 'null'], enum: ['org_admin', 'org_member', null] } },
        },
      },
    },
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return reply.code(201).send(await invitations.create(principal, request.params.org_id, { email: request.body.email, orgRole: request.body.org_role }));
    },
  );
  app.get<{ Params: { org_id: string } }>('/v1/management/orgs/:org_id/invitations', async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return invitations.list(principal, request.params.org_id);
  });
  app.delete<{ Params: { org_id: string; invitation_id: string } }>(
    '/v1/management/orgs/:org_id/invitations/:invitation_id',
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      await invitations.delete(principal, request.params.org_id, request.params.invitation_id);
      return reply.code(204).send();
    },
  );

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

  // {critical?, require_comment?} (docs/access.md "Critical environments"); an admin of the environment, audited.
  app.patch<{ Params: { environment_id: string }; Body: unknown }>('/v1/management/environments/:environment_id', async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return management.updateEnvironment(principal, request.params.environment_id, request.body ?? undefined);
  });

  // --- SDK keys ---
  // No body: a server key; `{kind: "client", ...}`: a client key (docs/client-side.md "Keys").
  app.post<{ Params: { environment_id: string }; Body: unknown }>('/v1/management/environments/:environment_id/sdk-keys', async (request, reply) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return reply.code(201).send(await management.createSdkKey(principal, request.params.environment_id, request.body ?? undefined));
  });
  app.patch<{ Params: { environment_id: string; sdk_key_id: string }; Body: unknown }>(
    '/v1/management/environments/:environment_id/sdk-keys/:sdk_key_id',
    async (request) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return management.updateSdkKey(principal, request.params.environment_id, request.params.sdk_key_id, request.body);
    },
  );
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
