import type * as grpc from '@grpc/grpc-js';
import { ACTIONS, authorize, invalidArgument, type Principal } from '@switchyard/core';
import type { AuthService, CredentialVerifier, Session } from '@switchyard/services';
import type { Logger } from '../logging.ts';
import { unary } from './grpc-errors.ts';
import { loadProto, lookup } from './proto.ts';

const AuthServiceDefinition = lookup<grpc.ServiceClientConstructor>(loadProto('svc/auth/v1/auth.proto'), 'svc.auth.v1.AuthService');

/** svc.common.v1.RbacContext of a principal; `permissions` lists what core's authorize allows it. */
export function rbacContext(principal: Principal) {
  const home = principal.kind === 'sdk_key' ? { orgId: principal.orgId, environmentId: principal.environmentId } : { orgId: principal.orgId };
  return {
    tenant_id: principal.orgId,
    environment_id: principal.kind === 'sdk_key' ? principal.environmentId : '',
    roles: principal.kind === 'sdk_key' ? ['sdk_key'] : [principal.role],
    permissions: ACTIONS.filter((action) => authorize(principal, action, home).allowed),
    subject: principal.kind === 'sdk_key' ? principal.sdkKeyId : principal.userId,
    is_system: principal.kind === 'user' && principal.isSystem,
  };
}

const loginResponse = (session: Session) => ({
  access_token: session.accessToken,
  refresh_token: session.refreshToken,
  expires_in: session.expiresIn,
  user_id: session.userId,
  org_id: session.orgId,
});

interface CredentialRequest {
  credential?: 'bearer_token' | 'sdk_key';
  bearer_token?: string;
  sdk_key?: string;
}

/** svc.auth.v1.AuthService on the internal gRPC port, over the same AuthService as REST. */
export function addAuthGrpcService(
  server: grpc.Server,
  deps: { auth: AuthService; verifier: CredentialVerifier; logger: Logger },
): void {
  const { auth, verifier, logger } = deps;
  server.addService(AuthServiceDefinition.service, {
    validateCredential: unary(logger, async (call: grpc.ServerUnaryCall<CredentialRequest, unknown>) => {
      const request = call.request;
      if (request.credential === 'bearer_token') return rbacContext(await verifier.verifyBearer(request.bearer_token ?? ''));
      if (request.credential === 'sdk_key') return rbacContext(await verifier.verifySdkKey(request.sdk_key ?? ''));
      return rbacContext(await verifier.verify({}));
    }),
    loginWithPassword: unary(logger, async (call: grpc.ServerUnaryCall<{ email: string; password: string; org_id: string }, unknown>) => {
      const { email, password, org_id } = call.request;
      const session = await auth.login({ email, password, orgId: org_id || undefined, clientAddress: peerAddress(call.getPeer()) });
      return loginResponse(session);
    }),
    refreshSession: unary(logger, async (call: grpc.ServerUnaryCall<{ refresh_token: string }, unknown>) => {
      if (!call.request.refresh_token) throw invalidArgument('refresh_token is required', 'refresh_token');
      return loginResponse(await auth.refresh(call.request.refresh_token));
    }),
    switchOrg: unary(logger, async (call: grpc.ServerUnaryCall<{ current_token: string; target_org_id: string }, unknown>) => {
      if (!call.request.target_org_id) throw invalidArgument('target_org_id is required', 'target_org_id');
      const session = await auth.switchOrg(await verifier.verifyBearer(call.request.current_token), call.request.target_org_id);
      return { access_token: session.accessToken, refresh_token: session.refreshToken, expires_in: session.expiresIn, org_id: session.orgId };
    }),
    listUserOrgs: unary(logger, async (call: grpc.ServerUnaryCall<{ current_token: string }, unknown>) => {
      const orgs = await auth.listUserOrgs(await verifier.verifyBearer(call.request.current_token));
      return { orgs: orgs.map((org) => ({ org_id: org.orgId, org_name: org.orgName, role: org.role })) };
    }),
  });
}

/** `ipv4:1.2.3.4:5678` / `ipv6:[::1]:5678` → the address alone, for login throttling. */
function peerAddress(peer: string): string {
  const withoutScheme = peer.replace(/^ipv[46]:/, '');
  const bracketed = /^\[(.*)\]:\d+$/.exec(withoutScheme);
  if (bracketed?.[1]) return bracketed[1];
  return withoutScheme.replace(/:\d+$/, '');
}
