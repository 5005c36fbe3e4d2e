import * as grpc from '@grpc/grpc-js';
import { RateLimitedError, isDomainError, type ErrorCode } from '@switchyard/core';
import { isDataException, isDatabaseUnavailable } from '@switchyard/postgres';
import { INPUT_REFUSED_BY_DATABASE } from '../input/refused-by-database.ts';
import type { Logger } from '../logging.ts';

/** The one table from domain error codes to gRPC statuses (same names, by design). */
export const GRPC_STATUS_BY_CODE: Record<ErrorCode, grpc.status> = {
  INVALID_ARGUMENT: grpc.status.INVALID_ARGUMENT,
  NOT_FOUND: grpc.status.NOT_FOUND,
  ALREADY_EXISTS: grpc.status.ALREADY_EXISTS,
  PERMISSION_DENIED: grpc.status.PERMISSION_DENIED,
  UNAUTHENTICATED: grpc.status.UNAUTHENTICATED,
  FAILED_PRECONDITION: grpc.status.FAILED_PRECONDITION,
  ABORTED: grpc.status.ABORTED,
  RESOURCE_EXHAUSTED: grpc.status.RESOURCE_EXHAUSTED,
  UNIMPLEMENTED: grpc.status.UNIMPLEMENTED,
  UNAVAILABLE: grpc.status.UNAVAILABLE,
  DEADLINE_EXCEEDED: grpc.status.DEADLINE_EXCEEDED,
  CANCELLED: grpc.status.CANCELLED,
  INTERNAL: grpc.status.INTERNAL,
  UNKNOWN: grpc.status.UNKNOWN,
};

/**
 * Any error as a gRPC status: domain messages kept, a value the database refused (SQLSTATE class
 * 22) INVALID_ARGUMENT with a fixed message, everything unexpected hidden and logged. `method` is
 * the call's path (`/svc.flags.v1.FlagService/GetFlag`), for the log line.
 */
export function toGrpcError(error: unknown, logger: Logger, method?: string): Partial<grpc.StatusObject> {
  if (isDomainError(error)) {
    const metadata = new grpc.Metadata();
    if (error instanceof RateLimitedError) metadata.set('retry-after', String(error.retryAfterSeconds));
    return { code: GRPC_STATUS_BY_CODE[error.code], details: error.message, metadata };
  }
  if (isDatabaseUnavailable(error)) {
    logger.warn({ err: { message: (error as Error).message } }, 'database unavailable');
    return { code: grpc.status.UNAVAILABLE, details: 'the database is unavailable; retry later' };
  }
  if (isDataException(error)) {
    logger.warn({ method, sqlState: (error as { code: string }).code }, 'the database refused a value of the request');
    return { code: grpc.status.INVALID_ARGUMENT, details: INPUT_REFUSED_BY_DATABASE };
  }
  logger.error({ err: error, method }, 'unhandled error in gRPC call');
  return { code: grpc.status.INTERNAL, details: 'internal error' };
}

/** Wraps an async unary handler: its result is the response, its exception the status. */
export function unary<Req, Res>(
  logger: Logger,
  handler: (call: grpc.ServerUnaryCall<Req, Res>) => Promise<Res>,
): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    handler(call).then(
      (response) => callback(null, response),
      (error: unknown) => callback(toGrpcError(error, logger, call.getPath())),
    );
  };
}

/** Resolves when the stream can take more, or when the client has gone (no 'drain' will come then). */
function writable(call: grpc.ServerWritableStream<unknown, unknown>): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      call.off('drain', done);
      call.off('cancelled', done);
      resolve();
    };
    call.once('drain', done);
    call.once('cancelled', done);
  });
}

/**
 * Wraps a server-streaming handler written as an async generator: each yielded message is written
 * (waiting for the client when its window is full), the stream ends after the last one, and an
 * exception (before or after the first message) ends it with its status. A cancelled call stops
 * the generator.
 */
export function serverStream<Req, Res>(
  logger: Logger,
  handler: (call: grpc.ServerWritableStream<Req, Res>) => AsyncIterable<Res>,
): grpc.handleServerStreamingCall<Req, Res> {
  return (call) => {
    void (async () => {
      try {
        for await (const message of handler(call)) {
          if (call.cancelled) return;
          if (!call.write(message)) await writable(call as grpc.ServerWritableStream<unknown, unknown>);
          if (call.cancelled) return;
        }
        call.end();
      } catch (error) {
        if (!call.cancelled) call.emit('error', toGrpcError(error, logger, call.getPath()));
      }
    })();
  };
}
