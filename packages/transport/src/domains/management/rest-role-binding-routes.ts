import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticate } from '../../http/credentials.ts';

type MemberParams = { org_id: string; user_id: string };

/**
 * `/v1/management/orgs/{org_id}/members/{user_id}/role-bindings` (docs/access.md "Managing
 * bindings"): read, replace (`{bindings: [...]}`), reset to the org role's default. The body is
 * validated by the services, which name the entry at fault whatever the transport.
 */
export function registerRoleBindingRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { roleBindings, verifier } = services;
  const path = '/v1/management/orgs/:org_id/members/:user_id/role-bindings';

  app.get<{ Params: MemberParams }>(path, async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return roleBindings.get(principal, request.params.org_id, request.params.user_id);
  });
  app.put<{ Params: MemberParams; Body: unknown }>(path, async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return roleBindings.set(principal, request.params.org_id, request.params.user_id, request.body ?? null);
  });
  app.delete<{ Params: MemberParams }>(path, async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return roleBindings.reset(principal, request.params.org_id, request.params.user_id);
  });
}
