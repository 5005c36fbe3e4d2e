import * as grpc from '@grpc/grpc-js';
import { DomainError, ERROR_CODES, RateLimitedError, isDomainError, type ErrorCode } from '@switchyard/core';

/**
 * The services could not be reached or did not answer in time. One fixed message: grpc-js's own
 * details name addresses and socket errors of the internal network, which callers must not see.
 */
export const SERVICES_UNAVAILABLE_MESSAGE = 'the services are unavailable; retry later';

const KNOWN_CODES: ReadonlySet<string> = new Set<string>(ERROR_CODES);

/**
 * A failed call to the internal services, as the DomainError the gateway answers with: the status
 * of the same name (the services map domain codes to statuses one to one,
 * hosts/server/src/grpc/grpc-errors.ts) and
 * the services' message. Unreachable services (UNAVAILABLE, DEADLINE_EXCEEDED) →
 * UNAVAILABLE with SERVICES_UNAVAILABLE_MESSAGE; RESOURCE_EXHAUSTED with `retry-after` metadata →
 * RateLimitedError; INTERNAL, UNKNOWN, an unknown status or anything that is not a gRPC status →
 * INTERNAL 'internal error' (the services already logged the cause). A DomainError passes through.
 */
export function fromGrpcError(error: unknown): DomainError {
  if (isDomainError(error)) return error;
  const status = (error as Partial<grpc.ServiceError> | null)?.code;
  if (typeof status !== 'number') return new DomainError('INTERNAL', 'internal error');
  if (status === grpc.status.UNAVAILABLE || status === grpc.status.DEADLINE_EXCEEDED) {
    return new DomainError('UNAVAILABLE', SERVICES_UNAVAILABLE_MESSAGE);
  }
  const name = grpc.status[status];
  if (name === undefined || !KNOWN_CODES.has(name) || name === 'INTERNAL' || name === 'UNKNOWN') {
    return new DomainError('INTERNAL', 'internal error');
  }
  const serviceError = error as grpc.ServiceError;
  const message = serviceError.details || name.toLowerCase().replaceAll('_', ' ');
  if (status === grpc.status.RESOURCE_EXHAUSTED) {
    const retryAfter = retryAfterSeconds(serviceError.metadata);
    if (retryAfter !== undefined) return new RateLimitedError(message, retryAfter);
  }
  return new DomainError(name as ErrorCode, message);
}

/** `retry-after` metadata (whole seconds, as hosts/server/src/grpc/grpc-errors.ts writes it), if valid. */
function retryAfterSeconds(metadata: grpc.Metadata | undefined): number | undefined {
  const value = metadata?.get('retry-after')[0];
  return value !== undefined && /^\d{1,9}$/.test(String(value)) ? Number(String(value)) : undefined;
}
