import * as grpc from '@grpc/grpc-js';
import { invalidArgument, isDomainError, type Principal } from '@switchyard/core';
import { isDataException, isDatabaseUnavailable } from '@switchyard/postgres';
import type { CredentialVerifier } from '@switchyard/services';
import type { GatewayServices } from '../gateway-services.ts';
import type { Logger } from '../logging.ts';
import { unstorableStringError } from '../input/storable-strings.ts';
import { GATEWAY_INTERFACES, rpcName, type GatewayInterface } from '../remote/gateway-interfaces.ts';
import { decodeArguments, encodeResult } from '../remote/service-call-codec.ts';
import { authenticateCall } from './grpc-credentials.ts';
import { toGrpcError } from './grpc-errors.ts';
import { loadProto, lookup } from './proto.ts';

/** Set on every status the services answered themselves, so a gateway tells it from a transport failure. */
export const DOMAIN_ERROR_METADATA = 'x-switchyard-domain-error';

interface ServiceCall {
  scope_id: string;
  scope_via: string;
  arguments: Buffer;
}

type Method = (...args: unknown[]) => Promise<unknown>;

/** The loaded `*GatewayService` of an interface, checked against its method list (they must agree). */
export function gatewayServiceDefinition(gatewayInterface: GatewayInterface): grpc.ServiceClientConstructor {
  const constructor = lookup<grpc.ServiceClientConstructor>(loadProto(gatewayInterface.proto), gatewayInterface.service);
  const inProto = Object.values(constructor.service).map((method) => method.originalName ?? '').sort();
  const inCode = Object.keys(gatewayInterface.methods).sort();
  if (inProto.join() !== inCode.join()) {
    throw new Error(`${gatewayInterface.service}: the .proto lists [${inProto.join(', ')}] but gateway-interfaces.ts [${inCode.join(', ')}]`);
  }
  return constructor;
}

/**
 * The `*GatewayService`s on the internal port (docs/architecture.md "The gateway hop"): each RPC
 * authenticates the credential in its metadata, resolves the route id into a scope for that
 * caller (as the REST route does in one process), then calls the same service method.
 */
export function addGatewayGrpcServices(server: grpc.Server, deps: { services: GatewayServices; verifier: CredentialVerifier; logger: Logger }): void {
  for (const gatewayInterface of GATEWAY_INTERFACES) {
    const target = deps.services[gatewayInterface.member] as unknown as Record<string, Method>;
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const [method, spec] of Object.entries(gatewayInterface.methods)) {
      const call = async (request: ServiceCall, metadata: grpc.Metadata): Promise<unknown> => {
        const args = decodeArguments(request.arguments);
        // The arguments are bytes to the request guard (request-strings.ts): their strings are checked here, once decoded.
        const refusal = unstorableStringError(args, 'arguments');
        if (refusal !== undefined) throw refusal;
        const leading: unknown[] = [];
        let principal: Principal | undefined;
        if (spec.caller) {
          principal = await authenticateCall(deps.verifier, metadata, 'bearer_or_sdk');
          leading.push(principal);
        }
        if (spec.scoped) leading.push(await resolveScope(target, gatewayInterface, principal!, request));
        const implementation = target[method]!;
        // Every parameter before the first optional one must be sent (a gateway always does).
        if (leading.length + args.length < implementation.length) {
          throw invalidArgument(`${rpcName(method)} takes ${implementation.length - leading.length} arguments`, 'arguments');
        }
        try {
          return await implementation.call(target, ...leading, ...args);
        } catch (error) {
          if (!isArgumentShapeFailure(error)) throw error;
          deps.logger.warn({ method: rpcName(method), err: { message: (error as Error).message, code: (error as { code?: unknown }).code } }, 'gateway hop arguments do not fit the method');
          throw invalidArgument(`arguments do not fit ${rpcName(method)}`, 'arguments');
        }
      };
      handlers[rpcName(method)] = (serverCall: grpc.ServerUnaryCall<ServiceCall, unknown>, callback: grpc.sendUnaryData<unknown>) => {
        call(serverCall.request, serverCall.metadata).then(
          (result) => callback(null, { result: encodeResult(result) }),
          (error: unknown) => {
            const status = toGrpcError(error, deps.logger, serverCall.getPath());
            // The services' own answers, a lost database and a refused value included (REST says 502 and 400 for them, as in one process).
            if (isDomainError(error) || isDatabaseUnavailable(error) || isDataException(error)) (status.metadata ??= new grpc.Metadata()).set(DOMAIN_ERROR_METADATA, '1');
            callback(status);
          },
        );
      };
    }
    server.addService(gatewayServiceDefinition(gatewayInterface).service, handlers);
  }
}

/**
 * The services trust typed arguments: a gateway sends what its REST edge validated, but the hop
 * decodes JSON, not types. Arguments of another shape (from a caller that is not a gateway, or
 * one of another version) make a method read a property of what is not an object, hand the
 * driver an `undefined`, or compare a parameter of the wrong type in SQL (SQLSTATE 42883
 * undefined_function, 42804 datatype_mismatch): the caller's mistake, answered INVALID_ARGUMENT and
 * logged at warn, not a fault of the services. (One schema per method would refuse them before
 * the call; docs/security.md "Input rules" lists this as what remains.)
 */
function isArgumentShapeFailure(error: unknown): boolean {
  if (error instanceof TypeError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'UNDEFINED_VALUE' || code === '42883' || code === '42804';
}

/** The scope argument: the route id resolved for the authenticated caller, never taken as sent. */
function resolveScope(target: Record<string, Method>, gatewayInterface: GatewayInterface, principal: Principal, request: ServiceCall): Promise<unknown> {
  const scopeMethod = gatewayInterface.scopeMethod;
  if (scopeMethod === undefined) throw new Error(`${gatewayInterface.service} has scoped methods but no scopeMethod`);
  if (scopeMethod === 'target') {
    if (request.scope_via !== 'environment' && request.scope_via !== 'project') throw invalidArgument('scope_via must be "environment" or "project"', 'scope_via');
    return target.target!.call(target, principal, request.scope_id, request.scope_via);
  }
  return target.scope!.call(target, principal, request.scope_id);
}
