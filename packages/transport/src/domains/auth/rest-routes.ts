import type { FastifyInstance } from 'fastify';
import { MAX_KEPT_ORGS } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticate } from '../../http/credentials.ts';
import { nonEmptyString, optionalString } from '../../http/schemas.ts';
import { sessionResponse } from './rest-session-response.ts';

export function registerAuthRoutes(app: FastifyInstance, services: GatewayServices): void {
  app.post<{ Body: { email: string; password: string; org_id?: string | null } }>(
    '/v1/auth/login',
    {
      schema: {
        body: {
          type: 'object',
          required: ['email', 'password'],
          properties: { email: nonEmptyString, password: nonEmptyString, org_id: optionalString },
        },
      },
    },
    async (request) => {
      const session = await services.auth.login({
        email: request.body.email,
        password: request.body.password,
        orgId: request.body.org_id ?? undefined,
        clientAddress: request.ip,
      });
      return sessionResponse(session);
    },
  );

  app.post<{ Body: { refresh_token: string } }>(
    '/v1/auth/refresh',
    { schema: { body: { type: 'object', required: ['refresh_token'], properties: { refresh_token: nonEmptyString } } } },
    async (request) => sessionResponse(await services.auth.refresh(request.body.refresh_token)),
  );

  app.post<{ Body: { org_id: string } }>(
    '/v1/auth/switch-org',
    { schema: { body: { type: 'object', required: ['org_id'], properties: { org_id: nonEmptyString } } } },
    async (request) => {
      const principal = await authenticate(services.verifier, request, 'bearer');
      return sessionResponse(await services.auth.switchOrg(principal, request.body.org_id));
    },
  );

  app.get('/v1/auth/orgs', async (request) => {
    const principal = await authenticate(services.verifier, request, 'bearer');
    const orgs = await services.auth.listUserOrgs(principal);
    return { orgs: orgs.map((org) => ({ org_id: org.orgId, org_name: org.orgName, role: org.role })) };
  });

  // Ends the caller's session (its access and refresh tokens) on every instance.
  app.post('/v1/auth/logout', async (request, reply) => {
    const principal = await authenticate(services.verifier, request, 'bearer');
    await services.auth.logout(principal);
    return reply.code(204).send();
  });

  // Changes the caller's password and ends every other session of the user.
  app.post<{ Body: { current_password: string; new_password: string } }>(
    '/v1/auth/password',
    {
      schema: {
        body: {
          type: 'object',
          required: ['current_password', 'new_password'],
          properties: { current_password: nonEmptyString, new_password: nonEmptyString },
        },
      },
    },
    async (request, reply) => {
      const principal = await authenticate(services.verifier, request, 'bearer');
      await services.auth.changePassword(principal, {
        currentPassword: request.body.current_password,
        newPassword: request.body.new_password,
        clientAddress: request.ip,
      });
      return reply.code(204).send();
    },
  );

  // With the invitee's bearer: join the org (200). Without: create the account and sign in (201).
  app.post<{ Body: { token: string; display_name?: string; password?: string; keep_org_ids?: string[] } }>(
    '/v1/auth/invitations/accept',
    {
      schema: {
        body: {
          type: 'object',
          required: ['token'],
          properties: {
            token: nonEmptyString,
            display_name: nonEmptyString,
            password: nonEmptyString,
            // Claiming an account someone else made for the address: the other orgs it may stay in.
            keep_org_ids: { type: 'array', maxItems: MAX_KEPT_ORGS, items: { type: 'string', minLength: 1, maxLength: 64 } },
          },
        },
      },
    },
    async (request, reply) => {
      if (request.headers.authorization !== undefined) {
        const principal = await authenticate(services.verifier, request, 'bearer');
        return services.invitations.acceptAsUser(principal, request.body.token);
      }
      const { session } = await services.invitations.acceptAsNewUser({
        token: request.body.token,
        displayName: request.body.display_name,
        password: request.body.password,
        keepOrgIds: request.body.keep_org_ids,
      });
      return reply.code(201).send(sessionResponse(session));
    },
  );
}
