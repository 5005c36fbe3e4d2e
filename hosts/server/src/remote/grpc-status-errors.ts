import * as grpc from '@grpc/grpc-js';
import { DomainError, ERROR_CODES, RateLimitedError, type ErrorCode } from '@switchyard/core';

/** The services could not be reached (or did not answer in time): REST answers 503, and retrying is right. */
export class ServicesUnavailableError extends DomainError {
  constructor() {
    super('UNAVAILABLE', 'the services are unavailable; retry later');
    this.name = 'ServicesUnavailableError';
  }
}

const CODE_BY_STATUS = new Map<number, ErrorCode>(ERROR_CODES.map((code) => [grpc.status[code], code]));

/**
 * A failed gRPC call to the services as the DomainError the in-process service would have thrown:
 * same code, same message. `fromService` says the services raised it themselves (their gateway
 * handlers mark such statuses); without it, UNAVAILABLE, DEADLINE_EXCEEDED and CANCELLED are the
 * transport's and mean the services are unreachable.
 */
export function fromGrpcError(error: unknown, fromService = true): DomainError {
  const status = error as Partial<grpc.ServiceError>;
  const code = typeof status.code === 'number' ? CODE_BY_STATUS.get(status.code) : undefined;
  if (code === undefined) return new DomainError('INTERNAL', 'internal error');
  if (!fromService && (code === 'UNAVAILABLE' || code === 'DEADLINE_EXCEEDED' || code === 'CANCELLED')) return new ServicesUnavailableError();
  if (code === 'INTERNAL' || code === 'UNKNOWN') return new DomainError('INTERNAL', 'internal error');
  const message = status.details || code.toLowerCase().replaceAll('_', ' ');
  if (code === 'RESOURCE_EXHAUSTED') {
    const retryAfter = Number(status.metadata?.get('retry-after')[0]);
    if (Number.isFinite(retryAfter) && retryAfter > 0) return new RateLimitedError(message, retryAfter);
  }
  return new DomainError(code, message);
}
