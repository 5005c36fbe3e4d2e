import * as grpc from '@grpc/grpc-js';
import { DomainError, ERROR_CODES, type ErrorCode } from '@switchyard/core';
import { ServicesUnavailableError } from './grpc-status-errors.ts';

/** What a gateway answers while it cannot reach the services (REST 503). */
export const servicesUnavailable = (): DomainError => new ServicesUnavailableError();

/**
 * Statuses that say "the services are not there right now" rather than "your request is refused":
 * connection failures and shutdowns arrive as UNAVAILABLE, a call cut by a vanished peer or a
 * services shutdown past its grace period as CANCELLED, a call that outlived its deadline as
 * DEADLINE_EXCEEDED, and a stream that ended without a status as OK. Their details describe the
 * transport, not the caller's request, so they are replaced by one message.
 */
const TRANSIENT: ReadonlySet<grpc.status> = new Set([grpc.status.UNAVAILABLE, grpc.status.CANCELLED, grpc.status.DEADLINE_EXCEEDED, grpc.status.OK]);

const KNOWN_CODES: ReadonlySet<string> = new Set(ERROR_CODES);

/**
 * A failed call to the services as the DomainError the gateway answers with. The services name
 * their statuses after the domain codes (hosts/server/src/grpc/grpc-errors.ts) and put only
 * client-safe messages in the details, so a refusal (UNAUTHENTICATED, PERMISSION_DENIED,
 * NOT_FOUND, ...) reaches the caller as the services gave it.
 */
export function domainErrorFromServices(status: { code: grpc.status; details?: string | undefined }): DomainError {
  if (TRANSIENT.has(status.code)) return servicesUnavailable();
  const name = grpc.status[status.code];
  if (name === undefined || !KNOWN_CODES.has(name)) return servicesUnavailable();
  return new DomainError(name as ErrorCode, status.details || name.toLowerCase().replaceAll('_', ' '));
}
