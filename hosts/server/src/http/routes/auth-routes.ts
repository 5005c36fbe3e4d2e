import type { FastifyInstance } from 'fastify';
import type { Session } from '@switchyard/services';
import { authenticate } from '../credentials.ts';
import type { GatewayServices } from './gateway-services.ts';
import { nonEmptyString, optionalString } from './schemas.ts';

/** The login response of DECISIONS §2 (`token`, `expires_at` ISO 8601, refresh token, ids). */
const sessionResponse = (session: Session) => ({
  token: session.accessToken,
  expires_at: new Date(session.expiresAtMs).toISOString(),
  expires_in: session.expiresIn,
  refresh_token: session.refreshToken,
  user_id: session.userId,
  org_id: session.orgId,
});

/** Authorization header value of the request, for the calls that take the current token. */
const currentToken = (header: string | undefined): string => (header ?? '').replace(/^Bearer\s+/i, '').trim();

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
      await authenticate(services.verifier, request, 'bearer');
      return sessionResponse(await services.auth.switchOrg(currentToken(request.headers.authorization), request.body.org_id));
    },
  );

  app.get('/v1/auth/orgs', async (request) => {
    await authenticate(services.verifier, request, 'bearer');
    const orgs = await services.auth.listUserOrgs(currentToken(request.headers.authorization));
    return { orgs: orgs.map((org) => ({ org_id: org.orgId, org_name: org.orgName, role: org.role })) };
  });
}
