import * as grpc from '@grpc/grpc-js';
import { ACTIONS, DomainError, authorize, invalidArgument, type Principal } from '@switchyard/core';
import type { AuthService, ContextSigningKeys, CredentialVerifier, Session, SessionRegistry } from '@switchyard/services';
import { unary } from '../../grpc/grpc-errors.ts';
import { loadProto, lookup } from '../../grpc/proto.ts';
import type { Logger } from '../../logging.ts';

const AuthServiceDefinition = lookup<grpc.ServiceClientConstructor>(loadProto('svc/auth/v1/auth.proto'), 'svc.auth.v1.AuthService');

/**
 * svc.common.v1.RbacContext of a principal; `permissions` lists what core's authorize allows it.
 * It holds every field of the principal, so a gateway rebuilds the very principal the services
 * act for (packages/transport/src/remote/remote-credential-verifier.ts).
 */
export function rbacContext(principal: Principal) {
  if (principal.kind === 'user') {
    return {
      tenant_id: principal.orgId,
      environment_id: '',
      roles: [principal.role],
      permissions: ACTIONS.filter((action) => authorize(principal, action, { orgId: principal.orgId }).allowed),
      subject: principal.userId,
      is_system: principal.isSystem,
      project_id: '',
      session_id: principal.sessionId ?? '',
      kind: 'PRINCIPAL_KIND_USER',
      has_bindings: principal.bindings !== undefined,
      bindings: (principal.bindings ?? []).map((binding) => ({ role: binding.role, project_id: binding.projectId ?? '', environment_id: binding.environmentId ?? '' })),
    };
  }
  if (principal.kind === 'api_token') {
    const { scope } = principal;
    return {
      tenant_id: principal.orgId,
      environment_id: '',
      roles: [principal.role],
      permissions: ACTIONS.filter((action) => authorize(principal, action, { orgId: principal.orgId }).allowed),
      subject: principal.tokenId,
      is_system: false,
      project_id: '',
      session_id: '',
      kind: 'PRINCIPAL_KIND_API_TOKEN',
      api_token: {
        name: principal.name,
        role: principal.role,
        has_project_ids: scope.projectIds !== undefined,
        project_ids: scope.projectIds ?? [],
        has_environment_ids: scope.environmentIds !== undefined,
        environment_ids: scope.environmentIds ?? [],
        expires_at_ms: principal.expiresAtMs ?? 0,
      },
    };
  }
  const home = { orgId: principal.orgId, environmentId: principal.environmentId };
  const context = {
    tenant_id: principal.orgId,
    environment_id: principal.environmentId,
    roles: [principal.kind],
    permissions: ACTIONS.filter((action) => authorize(principal, action, home).allowed),
    subject: principal.sdkKeyId,
    is_system: false,
    project_id: principal.projectId,
    session_id: '',
    kind: principal.kind === 'sdk_key' ? 'PRINCIPAL_KIND_SDK_KEY' : 'PRINCIPAL_KIND_CLIENT_KEY',
  };
  if (principal.kind === 'sdk_key') return context;
  const { client } = principal;
  return {
    ...context,
    client_key: {
      name: client.name,
      allowed_origins: client.allowedOrigins,
      allow_missing_origin: client.allowMissingOrigin,
      context_signing: client.contextSigning,
      include_disabled: client.includeDisabled,
      expires_at_ms: client.expiresAtMs ?? 0,
    },
  };
}

/** svc.auth.v1.CredentialEvent: exactly one member set. */
type CredentialEvent =
  | { ready: true }
  | { sdk_key_revoked: { sdk_key_id: string } }
  | { session_changed: { user_id: string } }
  | { context_secrets_changed: { environment_id: string } };

/**
 * Events a watch may write while its client's window is full. They are tiny, so a client this far
 * behind is not reading at all; ending its stream costs nothing, since a gateway whose watch ends
 * drops its cache and reconnects.
 */
const MAX_UNREAD_WATCH_EVENTS = 1_000;

/**
 * WatchCredentials (proto/svc/auth/v1/auth.proto): subscribes first, then sends `ready`, so no
 * revocation after `ready` is missed; relays every revocation and session change until the client
 * cancels, stops reading, or the server stops (`stopping` aborted: UNAVAILABLE, promptly, rather
 * than a cancellation when the gRPC server's grace period runs out).
 */
function watchCredentials(deps: {
  verifier: Pick<CredentialVerifier, 'onRevoked'>;
  sessions: Pick<SessionRegistry, 'onChanged'>;
  /** Context signing secrets' changes (gateways hold verification keys too). */
  contextSecrets: Pick<ContextSigningKeys, 'onChanged'> | undefined;
  stopping: AbortSignal | undefined;
}): grpc.handleServerStreamingCall<unknown, CredentialEvent> {
  const { verifier, sessions, contextSecrets, stopping } = deps;
  // One abort listener for all watches (an AbortSignal warns past 10 listeners): it ends the open ones.
  const open = new Set<() => void>();
  stopping?.addEventListener(
    'abort',
    () => {
      for (const endAtShutdown of [...open]) endAtShutdown();
    },
    { once: true },
  );
  return (call) => {
    let ended = false;
    let unread = 0;
    const unsubscribers: Array<() => void> = [];
    const onDrain = () => {
      unread = 0;
    };
    const finish = (): boolean => {
      if (ended) return false;
      ended = true;
      for (const unsubscribe of unsubscribers) unsubscribe();
      open.delete(endAtShutdown);
      call.off('drain', onDrain);
      return true;
    };
    const endWith = (code: grpc.status, details: string) => {
      if (finish() && !call.cancelled) call.emit('error', { code, details });
    };
    function endAtShutdown() {
      endWith(grpc.status.UNAVAILABLE, 'the server is shutting down; reconnect');
    }
    const send = (event: CredentialEvent) => {
      if (ended || call.cancelled) return;
      if (call.write(event)) return;
      unread += 1;
      if (unread > MAX_UNREAD_WATCH_EVENTS) endWith(grpc.status.RESOURCE_EXHAUSTED, 'credential events are not being read; reconnect');
    };
    call.on('drain', onDrain);
    call.once('cancelled', finish);
    if (stopping?.aborted) return endAtShutdown();
    open.add(endAtShutdown);
    unsubscribers.push(
      verifier.onRevoked((sdkKeyId) => send({ sdk_key_revoked: { sdk_key_id: sdkKeyId } })),
      sessions.onChanged((userId) => send({ session_changed: { user_id: userId ?? '' } })),
    );
    if (contextSecrets) unsubscribers.push(contextSecrets.onChanged((environmentId) => send({ context_secrets_changed: { environment_id: environmentId ?? '' } })));
    send({ ready: true });
  };
}

/** svc.auth.v1.LoginResponse of a session (also answered by the single sign-on callbacks). */
export const loginResponse = (session: Session) => ({
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
  client_address?: string;
}

/**
 * svc.auth.v1.AuthService on the internal gRPC port, over the same AuthService as REST. Aborting
 * `stopping` (at shutdown) ends the open WatchCredentials streams with UNAVAILABLE.
 */
export function addAuthGrpcService(
  server: grpc.Server,
  deps: {
    auth: AuthService;
    verifier: CredentialVerifier;
    sessions: SessionRegistry;
    logger: Logger;
    stopping?: AbortSignal;
    channelTokenKey?: Buffer;
    contextSecrets?: Pick<ContextSigningKeys, 'onChanged'>;
  },
): void {
  const { auth, verifier, sessions, logger, stopping, contextSecrets } = deps;
  server.addService(AuthServiceDefinition.service, {
    watchCredentials: watchCredentials({ verifier, sessions, contextSecrets, stopping }),
    channelTokenKey: unary(logger, async () => {
      if (deps.channelTokenKey === undefined) throw new DomainError('UNAVAILABLE', 'no channel token key here');
      return { key: deps.channelTokenKey };
    }),
    validateCredential: unary(logger, async (call: grpc.ServerUnaryCall<CredentialRequest, unknown>) => {
      const request = call.request;
      // The gateway names the client's address (this call's peer is the gateway itself).
      if (request.credential === 'bearer_token') return rbacContext(await verifier.verifyBearer(request.bearer_token ?? '', request.client_address || undefined));
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
