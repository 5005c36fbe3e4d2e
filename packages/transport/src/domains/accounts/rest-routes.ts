import type { FastifyInstance } from 'fastify';
import { MAX_KEPT_ORGS } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticate } from '../../http/credentials.ts';
import { nonEmptyString } from '../../http/schemas.ts';

const emailString = { type: 'string', minLength: 3, maxLength: 320, pattern: '^[^\\s@]+@[^\\s@]+$' } as const;
const uuidString = { type: 'string', minLength: 1, maxLength: 64 } as const;

/** A mailed link's token, the holder's new password, and the orgs it keeps (an account someone else made). */
const confirmBody = {
  type: 'object',
  required: ['token', 'new_password'],
  properties: {
    token: nonEmptyString,
    new_password: nonEmptyString,
    keep_org_ids: { type: 'array', maxItems: MAX_KEPT_ORGS, items: uuidString },
  },
} as const;

/** Password reset and address confirmation by emailed link, and the local outbox of development (docs/contract.md "Authentication and sessions"). */
export function registerAccountRoutes(app: FastifyInstance, services: GatewayServices): void {
  // 202 whether or not the address has an account: the answer never tells (docs/security.md).
  app.post<{ Body: { email: string } }>(
    '/v1/auth/password-reset',
    { schema: { body: { type: 'object', required: ['email'], properties: { email: emailString } } } },
    async (request, reply) => {
      await services.passwordReset.requestPasswordReset({ email: request.body.email, clientAddress: request.ip });
      return reply.code(202).send({ status: 'if the address has an account, a reset link was sent to it' });
    },
  );

  app.post<{ Body: { token: string; new_password: string; keep_org_ids?: string[] } }>(
    '/v1/auth/password-reset/confirm',
    { schema: { body: confirmBody } },
    async (request) =>
      services.passwordReset.resetPassword({ token: request.body.token, newPassword: request.body.new_password, keepOrgIds: request.body.keep_org_ids }),
  );

  // The link mailed when an org made an account for the address: the holder confirms it (as a reset does).
  app.post<{ Body: { token: string; new_password: string; keep_org_ids?: string[] } }>(
    '/v1/auth/email-verification/confirm',
    { schema: { body: confirmBody } },
    async (request) =>
      services.passwordReset.confirmAddress({ token: request.body.token, newPassword: request.body.new_password, keepOrgIds: request.body.keep_org_ids }),
  );

  app.get('/v1/admin/mail-outbox', async (request) => {
    const principal = await authenticate(services.verifier, request, 'bearer');
    return { mails: await services.mailOutbox.listLocalOutbox(principal) };
  });
}
