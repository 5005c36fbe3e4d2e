import type { FastifyInstance } from 'fastify';
import { MAX_KEPT_ORGS } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticate } from '../../http/credentials.ts';
import { nonEmptyString, optionalString, uuidParam } from '../../http/schemas.ts';
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

  // Who the caller is: the account, the org of the session and the current role.
  app.get('/v1/auth/me', async (request) => {
    const principal = await authenticate(services.verifier, request, 'bearer');
    const me = await services.auth.me(principal);
    return {
      user_id: me.userId,
      email: me.email,
      display_name: me.displayName,
      org_id: me.orgId,
      org_name: me.orgName,
      org_role: me.role,
      system_org: me.isSystemOrg,
      single_sign_on: me.singleSignOn,
    };
  });

  // The caller's account's live sessions (docs/decisions.md "Sessions"); only its own.
  app.get('/v1/auth/sessions', async (request) => {
    const principal = await authenticate(services.verifier, request, 'bearer');
    const sessions = await services.auth.listSessions(principal);
    return {
      sessions: sessions.map((s) => ({
        session_id: s.sessionId,
        org_id: s.orgId,
        org_name: s.orgName,
        created_at: new Date(s.createdAtMs).toISOString(),
        expires_at: new Date(s.expiresAtMs).toISOString(),
        single_sign_on: s.singleSignOn,
        current: s.current,
      })),
    };
  });

  // "Log out everywhere else": every live session of the account but the caller's.
  app.post('/v1/auth/sessions/revoke-others', async (request) => {
    const principal = await authenticate(services.verifier, request, 'bearer');
    return services.auth.endOtherSessions(principal);
  });

  // Ends one session of the caller's account; any other id (another user's too) is 404.
  app.delete<{ Params: { session_id: string } }>(
    '/v1/auth/sessions/:session_id',
    { schema: { params: { type: 'object', required: ['session_id'], properties: { session_id: uuidParam } } } },
    async (request, reply) => {
      const principal = await authenticate(services.verifier, request, 'bearer');
      await services.auth.endSession(principal, request.params.session_id);
      return reply.code(204).send();
    },
  );

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
