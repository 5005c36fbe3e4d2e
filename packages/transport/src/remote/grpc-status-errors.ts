import * as grpc from '@grpc/grpc-js';
import { DomainError, ERROR_CODES, RateLimitedError, isDomainError, type ErrorCode } from '@switchyard/core';

/**
 * The services could not be reached or did not answer in time. One fixed message: grpc-js's own
 * details name addresses and socket errors of the internal network, which callers must not see.
 */
export const SERVICES_UNAVAILABLE_MESSAGE = 'the services are unavailable; retry later';

/** The services could not be reached (or did not answer in time): REST answers 503, and retrying is right. */
export class ServicesUnavailableError extends DomainError {
  constructor() {
    super('UNAVAILABLE', SERVICES_UNAVAILABLE_MESSAGE);
    this.name = 'ServicesUnavailableError';
  }
}

const KNOWN_CODES: ReadonlySet<string> = new Set<string>(ERROR_CODES);

/** Statuses the transport produces when the services are not there: connection lost, too slow, cut off. */
const TRANSPORT_FAILURES: ReadonlySet<grpc.status> = new Set([grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED, grpc.status.CANCELLED]);

/**
 * A failed call to the internal services, as the DomainError the gateway answers with: the status
 * of the same name (the services map domain codes to statuses one to one,
 * packages/transport/src/grpc/grpc-errors.ts) and the services' message.
 * - Unreachable services (UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED) → ServicesUnavailableError,
 *   unless `answeredByServices` says the services themselves answered (their gateway hop marks
 *   its statuses): then a lost database keeps its own UNAVAILABLE and message, as in one process.
 * - RESOURCE_EXHAUSTED with `retry-after` metadata → RateLimitedError.
 * - INTERNAL, UNKNOWN, an unknown status or anything that is not a gRPC status → INTERNAL
 *   'internal error' (the services already logged the cause).
 * A DomainError passes through.
 */
export function fromGrpcError(error: unknown, options: { answeredByServices?: boolean } = {}): DomainError {
  if (isDomainError(error)) return error;
  const status = (error as Partial<grpc.ServiceError> | null)?.code;
  if (typeof status !== 'number') return new DomainError('INTERNAL', 'internal error');
  if (TRANSPORT_FAILURES.has(status) && options.answeredByServices !== true) return new ServicesUnavailableError();
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

/** `retry-after` metadata (whole seconds, as packages/transport/src/grpc/grpc-errors.ts writes it), if valid. */
function retryAfterSeconds(metadata: grpc.Metadata | undefined): number | undefined {
  const value = metadata?.get('retry-after')[0];
  return value !== undefined && /^\d{1,9}$/.test(String(value)) ? Number(String(value)) : undefined;
}

/** What a gateway answers while it cannot reach the services (REST 503). */
export const servicesUnavailable = (): DomainError => new ServicesUnavailableError();

/**
 * The end of a stream from the services (definitions, memberships) as the DomainError the gateway
 * answers with: fromGrpcError's mapping, and a stream that ended with OK before it delivered what
 * was asked counts as unreachable services too.
 */
export function domainErrorFromServices(status: { code: grpc.status; details?: string | undefined; metadata?: grpc.Metadata }): DomainError {
  if (status.code === grpc.status.OK) return servicesUnavailable();
  return fromGrpcError(status);
}
