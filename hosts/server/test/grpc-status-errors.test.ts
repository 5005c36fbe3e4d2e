import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { DomainError, RateLimitedError, unauthenticated } from '@switchyard/core';
import { SERVICES_UNAVAILABLE_MESSAGE, fromGrpcError } from '@switchyard/transport/remote/grpc-status-errors.ts';

/** A grpc-js client error as a failed call delivers it. */
function serviceError(code: grpc.status, details: string, metadata = new grpc.Metadata()): grpc.ServiceError {
  return Object.assign(new Error(`${code} ${grpc.status[code]}: ${details}`), { code, details, metadata });
}

describe('fromGrpcError', () => {
  test('a status of a domain code keeps its name and the services\' message', () => {
    for (const code of [grpc.status.UNAUTHENTICATED, grpc.status.PERMISSION_DENIED, grpc.status.NOT_FOUND, grpc.status.INVALID_ARGUMENT, grpc.status.ABORTED]) {
      const error = fromGrpcError(serviceError(code, 'as the services said'));
      assert.ok(error instanceof DomainError);
      assert.equal(error.code, grpc.status[code]);
      assert.equal(error.message, 'as the services said');
    }
  });

  test('unreachable services (UNAVAILABLE, DEADLINE_EXCEEDED) → UNAVAILABLE with a fixed message, never grpc-js\'s details', () => {
    for (const code of [grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED]) {
      const error = fromGrpcError(serviceError(code, 'No connection established. Last error: connect ECONNREFUSED 10.0.0.7:9090'));
      assert.equal(error.code, 'UNAVAILABLE');
      assert.equal(error.message, SERVICES_UNAVAILABLE_MESSAGE);
    }
  });

  test('RESOURCE_EXHAUSTED with retry-after → RateLimitedError; without → a plain RESOURCE_EXHAUSTED', () => {
    const metadata = new grpc.Metadata();
    metadata.set('retry-after', '42');
    const limited = fromGrpcError(serviceError(grpc.status.RESOURCE_EXHAUSTED, 'too many failed logins', metadata));
    assert.ok(limited instanceof RateLimitedError);
    assert.equal(limited.retryAfterSeconds, 42);
    assert.equal(limited.message, 'too many failed logins');
    const plain = fromGrpcError(serviceError(grpc.status.RESOURCE_EXHAUSTED, 'too big'));
    assert.ok(!(plain instanceof RateLimitedError));
    assert.equal(plain.code, 'RESOURCE_EXHAUSTED');
  });

  test('INTERNAL, UNKNOWN, an unknown status or a non-gRPC error → INTERNAL "internal error"', () => {
    for (const error of [
      serviceError(grpc.status.INTERNAL, 'stack trace here'),
      serviceError(grpc.status.UNKNOWN, 'something'),
      serviceError(99 as grpc.status, 'from the future'),
      new Error('not a status'),
      null,
    ]) {
      const mapped = fromGrpcError(error);
      assert.equal(mapped.code, 'INTERNAL');
      assert.equal(mapped.message, 'internal error');
    }
  });

  test('a DomainError passes through unchanged', () => {
    const error = unauthenticated('missing credentials');
    assert.equal(fromGrpcError(error), error);
  });
});
