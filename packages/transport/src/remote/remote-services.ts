import * as grpc from '@grpc/grpc-js';
import { DomainError, type Principal } from '@switchyard/core';
import { DOMAIN_ERROR_METADATA, gatewayServiceDefinition } from '../grpc/gateway-grpc.ts';
import type { GatewayServices } from '../gateway-services.ts';
import { changeIntentMetadata, credentialMetadata, credentialOf } from './forwarded-credential.ts';
import { GATEWAY_INTERFACES, rpcName, type GatewayInterface, type RemotableMember } from './gateway-interfaces.ts';
import { fromGrpcError } from './grpc-status-errors.ts';
import { decodeResult, encodeArguments } from './service-call-codec.ts';

/**
 * A route's scope in a gateway: the id the route named, not yet resolved. The services resolve it
 * for the caller on every call (docs/architecture.md "The gateway hop"), so the gateway needs no
 * round trip of its own and holds no tenant data; route code only passes scopes through.
 */
export class RouteScope {
  constructor(
    readonly routeId: string,
    readonly via: '' | 'environment' | 'project',
  ) {}
}

export interface RemoteServicesOptions {
  /** One channel to the services process, shared by every interface's client. */
  channel: grpc.Channel;
  /** How long a call may take before the gateway answers 503 (DEADLINE_EXCEEDED is the transport's). */
  deadlineMs: number;
  /** Told the route id of every successful definitions write, so the gateway's copy is refreshed. */
  onDefinitionsChanged: (routeId: string) => void;
  /** Told the duration of every call (the gateway → services latency metric). */
  onCall?: (service: string, method: string, code: string, seconds: number) => void;
}

/** The gRPC-client implementations of GatewayServices' remotable members (one per interface). */
export function createRemoteServices(options: RemoteServicesOptions): Pick<GatewayServices, RemotableMember> {
  const members: Partial<Record<RemotableMember, unknown>> = {};
  for (const gatewayInterface of GATEWAY_INTERFACES) members[gatewayInterface.member] = remoteInterface(gatewayInterface, options);
  return members as Pick<GatewayServices, RemotableMember>;
}

type UnaryCall = (
  request: { scope_id: string; scope_via: string; arguments: Buffer },
  metadata: grpc.Metadata,
  callOptions: grpc.CallOptions,
  callback: (error: grpc.ServiceError | null, reply?: { result: Buffer }) => void,
) => void;

function remoteInterface(gatewayInterface: GatewayInterface, options: RemoteServicesOptions): Record<string, unknown> {
  const Client = gatewayServiceDefinition(gatewayInterface);
  // The address is the channel's; channelOverride makes every client share its connection.
  const client = new Client('unused:0', grpc.credentials.createInsecure(), { channelOverride: options.channel }) as unknown as Record<string, UnaryCall>;
  const remote: Record<string, unknown> = {};
  if (gatewayInterface.scopeMethod === 'target') {
    remote.target = async (_principal: Principal, id: string, via: 'environment' | 'project') => new RouteScope(id, via);
  } else if (gatewayInterface.scopeMethod === 'scope') {
    remote.scope = async (_principal: Principal, id: string) => new RouteScope(id, '');
  }
  for (const [method, spec] of Object.entries(gatewayInterface.methods)) {
    const rpc = rpcName(method);
    const call = client[rpc]!.bind(client);
    remote[method] = (...args: unknown[]) => {
      let next = 0;
      let metadata = new grpc.Metadata();
      if (spec.caller) {
        const principal = args[next++] as object;
        const credential = credentialOf(principal);
        // Every principal in a gateway comes from its verifier, which links the credential.
        if (credential === undefined) return Promise.reject(new DomainError('INTERNAL', 'internal error'));
        metadata = changeIntentMetadata(principal, credentialMetadata(credential));
      }
      let scope: RouteScope | undefined;
      if (spec.scoped) {
        scope = args[next++] as RouteScope;
        if (!(scope instanceof RouteScope)) return Promise.reject(new DomainError('INTERNAL', 'internal error'));
      }
      const request = { scope_id: scope?.routeId ?? '', scope_via: scope?.via ?? '', arguments: encodeArguments(args.slice(next)) };
      const startedAt = performance.now();
      return new Promise((resolve, reject) => {
        call(request, metadata, { deadline: Date.now() + options.deadlineMs }, (error, reply) => {
          options.onCall?.(gatewayInterface.service, rpc, error ? (grpc.status[error.code] ?? 'UNKNOWN') : 'OK', (performance.now() - startedAt) / 1000);
          if (error) {
            reject(fromGrpcError(error, { answeredByServices: error.metadata?.get(DOMAIN_ERROR_METADATA).length > 0 }));
            return;
          }
          if (spec.changesDefinitions && scope) options.onDefinitionsChanged(scope.routeId);
          try {
            resolve(decodeResult(reply!.result));
          } catch {
            reject(new DomainError('INTERNAL', 'internal error'));
          }
        });
      });
    };
  }
  return remote;
}
