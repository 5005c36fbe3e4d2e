/**
 * One server-streaming gRPC call over Node's own HTTP/2 (node:http2), the only kind of call the
 * SDK makes (FlagSyncService.SyncDefinitions). It replaces @grpc/grpc-js and @grpc/proto-loader,
 * whose dependency tree (yargs and its 15 packages among them) was most of what an application
 * installed with the SDK (docs/sdk.md "Packages"). The wire format is gRPC over HTTP/2 as the
 * gRPC project specifies it (PROTOCOL-HTTP2): a POST with `content-type: application/grpc` and
 * `te: trailers`; each message framed as 1 byte "compressed" (always 0 here: no compression is
 * offered) + 4 bytes big-endian length + the protobuf bytes; the call's outcome in `grpc-status`
 * and `grpc-message` (percent-encoded), in the trailers or, when the server answers at once with
 * an error, in the response headers ("trailers-only").
 */
import http2 from 'node:http2';

/** The gRPC status codes (their names are what the SDK logs and reports). */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

const STATUS_NAMES: ReadonlyMap<number, string> = new Map(Object.entries(GrpcStatus).map(([name, code]) => [code, name]));

/** `UNAVAILABLE` for 14; the number itself for a code gRPC does not define. */
export function grpcStatusName(code: number): string {
  return STATUS_NAMES.get(code) ?? String(code);
}

/**
 * The gRPC status of an HTTP answer that carries none (a proxy's error page, say), as the gRPC
 * project maps them (doc/http-grpc-status-mapping.md).
 */
function statusOfHttp(httpStatus: number): number {
  switch (httpStatus) {
    case 400:
      return GrpcStatus.INTERNAL;
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 404:
      return GrpcStatus.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return GrpcStatus.UNAVAILABLE;
    default:
      return GrpcStatus.UNKNOWN;
  }
}

function decodeGrpcMessage(value: unknown): string {
  if (typeof value !== 'string') return '';
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

export interface ServerStreamOptions {
  /** `http://host:port` or `https://host:port`. */
  authority: string;
  /** With https: the CA certificates to trust (PEM); the system's when undefined. */
  ca: Buffer | undefined;
  /** `/package.Service/Method`. */
  path: string;
  /** Request metadata (lower-case names; never logged: it holds the SDK key). */
  metadata: Record<string, string>;
  /** The request message, already encoded. */
  request: Uint8Array;
  /** A larger message ends the call with RESOURCE_EXHAUSTED before it is buffered. */
  maxMessageBytes: number;
}

export interface ServerStreamHandlers {
  /** One response message (protobuf bytes), in order. */
  message(bytes: Uint8Array): void;
  /** The call is over: called once, unless `cancel()` came first. */
  end(code: number, details: string): void;
}

/** A running call: `cancel()` ends it (and its connection) without calling `end`. */
export interface ServerStream {
  cancel(): void;
}

/** Starts the call; the session (one TCP/TLS connection) lives exactly as long as the call. */
export function openServerStream(options: ServerStreamOptions, handlers: ServerStreamHandlers): ServerStream {
  let finished = false;
  let status: { code: number; details: string } | undefined;
  let httpStatus: number | undefined;
  let chunks: Buffer[] = [];
  let buffered = 0;

  const session = http2.connect(options.authority, options.authority.startsWith('https:') && options.ca !== undefined ? { ca: options.ca } : {});
  const stream = session.request({
    ':method': 'POST',
    ':path': options.path,
    'content-type': 'application/grpc',
    te: 'trailers',
    'grpc-accept-encoding': 'identity',
    ...options.metadata,
  });

  const close = (): void => {
    stream.removeAllListeners('data');
    if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
    session.destroy();
  };
  const finish = (code: number, details: string): void => {
    if (finished) return;
    finished = true;
    close();
    handlers.end(code, details);
  };
  const statusFrom = (headers: http2.IncomingHttpHeaders): void => {
    const code = headers['grpc-status'];
    if (code !== undefined && status === undefined) status = { code: Number(code), details: decodeGrpcMessage(headers['grpc-message']) };
  };

  // A connection that fails (refused, reset, TLS) fails the call; the session's error would
  // otherwise be thrown.
  session.on('error', (error: Error) => finish(GrpcStatus.UNAVAILABLE, `connection failed: ${errorName(error)}`));
  stream.on('response', (headers) => {
    httpStatus = Number(headers[':status']);
    statusFrom(headers);
    if (status !== undefined) return; // trailers-only: the stream ends with no message
    // Not a gRPC answer (a proxy's error page, a web server): its body is no gRPC message.
    if (httpStatus !== 200) finish(statusOfHttp(httpStatus), `HTTP status ${httpStatus}`);
    else if (!String(headers['content-type'] ?? '').startsWith('application/grpc')) finish(GrpcStatus.UNKNOWN, `not a gRPC answer (content-type ${String(headers['content-type'] ?? 'none')})`);
  });
  stream.on('trailers', (trailers) => statusFrom(trailers));
  stream.on('data', (chunk: Buffer) => {
    if (finished) return;
    chunks.push(chunk);
    buffered += chunk.length;
    // Messages are cut out only once whole, so a large snapshot is copied once, not per chunk.
    while (buffered >= 5) {
      const head = chunks[0]!.length >= 5 ? chunks[0]! : Buffer.concat(chunks, buffered);
      if (head[0] !== 0) {
        finish(GrpcStatus.INTERNAL, 'the server sent a compressed message, which was not offered');
        return;
      }
      const length = head.readUInt32BE(1);
      if (length > options.maxMessageBytes) {
        finish(GrpcStatus.RESOURCE_EXHAUSTED, `a message of ${length} bytes is larger than the limit of ${options.maxMessageBytes}`);
        return;
      }
      if (buffered < 5 + length) return;
      const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, buffered);
      const message = all.subarray(5, 5 + length);
      const rest = all.subarray(5 + length);
      chunks = rest.length > 0 ? [rest] : [];
      buffered = rest.length;
      handlers.message(message);
      if (finished) return;
    }
  });
  stream.on('error', (error: Error) => finish(GrpcStatus.UNAVAILABLE, `stream failed: ${errorName(error)}`));
  stream.on('close', () => {
    if (status !== undefined) finish(status.code, status.details);
    else if (httpStatus !== undefined && httpStatus !== 200) finish(statusOfHttp(httpStatus), `HTTP status ${httpStatus}`);
    else finish(GrpcStatus.UNAVAILABLE, `stream closed without a status (HTTP/2 code ${stream.rstCode ?? 'none'})`);
  });

  const frame = Buffer.alloc(5 + options.request.length);
  frame.writeUInt32BE(options.request.length, 1);
  frame.set(options.request, 5);
  stream.end(frame);

  return {
    cancel: () => {
      if (finished) return;
      finished = true;
      close();
    },
  };
}

/**
 * `ECONNREFUSED`, `ERR_HTTP2_STREAM_ERROR`, ...: a name, never a message that could quote a
 * header. A stream cancelled because its connection failed names the connection's error (its
 * `cause`), which Node reports on the stream before the session.
 */
function errorName(error: Error): string {
  const cause = (error as { cause?: unknown }).cause;
  const named = cause instanceof Error ? cause : error;
  const code = (named as { code?: unknown }).code;
  return typeof code === 'string' ? code : named.name;
}
