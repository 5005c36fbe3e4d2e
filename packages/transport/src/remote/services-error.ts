import * as grpc from '@grpc/grpc-js';
import type { DomainError } from '@switchyard/core';
import { ServicesUnavailableError, fromGrpcError } from './grpc-status-errors.ts';

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
