import * as grpc from '@grpc/grpc-js';

/** Told about every ended call: service and method from its path, the status code's name. */
export type GrpcCallObserver = (service: string, method: string, code: string, seconds: number) => void;

const CODE_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(grpc.status)
    .filter(([, value]) => typeof value === 'number')
    .map(([name, value]) => [value as number, name]),
);

/** A status code's name (OK, NOT_FOUND, ...); anything else (not a gRPC code) is UNKNOWN. */
export function codeName(code: unknown): string {
  return (typeof code === 'number' && CODE_NAMES[code]) || 'UNKNOWN';
}

/**
 * The implementation of one service with every handler observed: unary and client-streaming calls
 * when their callback answers, server-streaming and bidirectional calls when they end — with the
 * status they emitted ('error'), OK when they finished without one, CANCELLED when the client went
 * away first. Looks handlers up as grpc-js does (by name, then by original name).
 */
export function instrumentService(
  definition: grpc.ServiceDefinition,
  implementation: grpc.UntypedServiceImplementation,
  observe: GrpcCallObserver,
): grpc.UntypedServiceImplementation {
  const instrumented: grpc.UntypedServiceImplementation = { ...implementation };
  for (const [name, attributes] of Object.entries(definition)) {
    let key = name;
    let handler = implementation[name];
    if (handler === undefined && typeof attributes.originalName === 'string') {
      key = attributes.originalName;
      handler = implementation[key];
    }
    if (typeof handler !== 'function') continue;
    const slash = attributes.path.lastIndexOf('/');
    const service = attributes.path.slice(1, slash);
    const method = attributes.path.slice(slash + 1);
    const record = (startedAt: number, code: unknown) => observe(service, method, codeName(code), (performance.now() - startedAt) / 1000);
    instrumented[key] = attributes.responseStream ? streamingResponse(handler, record) : singleResponse(handler, record);
  }
  return instrumented;
}

type RecordEnd = (startedAt: number, code: unknown) => void;

/** Unary and client-streaming handlers: the callback carries the outcome. */
function singleResponse(handler: grpc.UntypedHandleCall, record: RecordEnd): grpc.UntypedHandleCall {
  const call = handler as (call: unknown, callback: grpc.sendUnaryData<unknown>) => void;
  return ((request: unknown, callback: grpc.sendUnaryData<unknown>) => {
    const startedAt = performance.now();
    call(request, (error, value, trailer, flags) => {
      record(startedAt, error ? (error.code ?? grpc.status.UNKNOWN) : grpc.status.OK);
      callback(error, value, trailer, flags);
    });
  }) as grpc.UntypedHandleCall;
}

/** Server-streaming and bidirectional handlers: the stream's events carry the outcome. */
function streamingResponse(handler: grpc.UntypedHandleCall, record: RecordEnd): grpc.UntypedHandleCall {
  const handle = handler as (call: NodeJS.EventEmitter) => void;
  return ((call: NodeJS.EventEmitter) => {
    const startedAt = performance.now();
    let ended = false;
    const end = (code: unknown) => {
      if (ended) return;
      ended = true;
      record(startedAt, code);
    };
    // The handler's own status (grpc-js's listener turns it into the trailers the same way).
    call.on('error', (error: { code?: unknown }) => end(error?.code ?? grpc.status.UNKNOWN));
    call.once('cancelled', () => end(grpc.status.CANCELLED));
    call.once('finish', () => end(grpc.status.OK));
    handle(call);
  }) as grpc.UntypedHandleCall;
}
