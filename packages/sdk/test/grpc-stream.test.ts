import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { GrpcStatus, openServerStream } from '../src/sync/grpc-stream.ts';

/**
 * The SDK's HTTP/2 gRPC call against a hand-written HTTP/2 server, for what a grpc-js server
 * (sync-client.test.ts, the real server) never does on purpose: messages cut across writes or
 * several in one write, a status in the headers only, a proxy's non-gRPC answer, a message over
 * the size bound, a stream cut without a status. The expected bytes and statuses are written out
 * from the gRPC HTTP/2 protocol, not taken from the code under test.
 */

type Respond = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, body: Buffer) => void;

const servers: http2.Http2Server[] = [];
after(async () => {
  for (const server of servers) await new Promise((resolve) => server.close(resolve));
});

/** An h2c server answering every stream with `respond`, given the request headers and body. */
async function serve(respond: Respond): Promise<string> {
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => respond(stream, headers, Buffer.concat(chunks)));
    stream.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A length-prefixed gRPC message: flag 0, 4-byte big-endian length, bytes. */
const frame = (bytes: number[]): Buffer => Buffer.from([0, 0, 0, 0, bytes.length, ...bytes]);

interface Outcome {
  messages: number[][];
  code: number;
  details: string;
}

function call(authority: string, maxMessageBytes = 1024): Promise<Outcome> {
  return new Promise((resolve) => {
    const messages: number[][] = [];
    openServerStream(
      { authority, ca: undefined, path: '/svc.flags.v1.FlagSyncService/SyncDefinitions', metadata: { 'x-sdk-key': 'sdk_k' }, request: Uint8Array.from([0x0a, 0x01, 0x65]), maxMessageBytes },
      { message: (bytes) => messages.push([...bytes]), end: (code, details) => resolve({ messages, code, details }) },
    );
  });
}

describe('openServerStream (gRPC over node:http2)', () => {
  test('sends a gRPC POST with the metadata and the framed request; reads messages however they are cut; the status from the trailers', async () => {
    let seen: { headers: http2.IncomingHttpHeaders; body: number[] } | undefined;
    const authority = await serve((stream, headers, body) => {
      seen = { headers, body: [...body] };
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'grpc-message': '' }));
      // Message 1 cut in three writes (inside the prefix, then inside the body); 2 and 3 in one write.
      const first = frame([1, 2, 3]);
      stream.write(first.subarray(0, 2));
      stream.write(first.subarray(2, 6));
      stream.write(first.subarray(6));
      stream.write(Buffer.concat([frame([4]), frame([])]));
      stream.end();
    });
    const outcome = await call(authority);
    assert.deepEqual(outcome, { messages: [[1, 2, 3], [4], []], code: GrpcStatus.OK, details: '' });
    assert.equal(seen?.headers[':method'], 'POST');
    assert.equal(seen?.headers[':path'], '/svc.flags.v1.FlagSyncService/SyncDefinitions');
    assert.equal(seen?.headers['content-type'], 'application/grpc');
    assert.equal(seen?.headers.te, 'trailers');
    assert.equal(seen?.headers['x-sdk-key'], 'sdk_k');
    assert.deepEqual(seen?.body, [0, 0, 0, 0, 3, 0x0a, 0x01, 0x65]);
  });

  test('a status in the headers alone (trailers-only), its grpc-message percent-decoded', async () => {
    const authority = await serve((stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': 'key%20revoked%3A%20ask%20an%20admin' }, { endStream: true });
    });
    assert.deepEqual(await call(authority), { messages: [], code: GrpcStatus.UNAUTHENTICATED, details: 'key revoked: ask an admin' });
  });

  test('a non-gRPC answer (a proxy\'s 503, 401, 404) maps to UNAVAILABLE, UNAUTHENTICATED, UNIMPLEMENTED', async () => {
    for (const [status, code] of [[503, GrpcStatus.UNAVAILABLE], [401, GrpcStatus.UNAUTHENTICATED], [404, GrpcStatus.UNIMPLEMENTED]] as const) {
      const authority = await serve((stream) => {
        stream.respond({ ':status': status, 'content-type': 'text/html' });
        stream.end('<h1>nope</h1>');
      });
      const outcome = await call(authority);
      assert.deepEqual([outcome.code, outcome.details], [code, `HTTP status ${status}`]);
    }
  });

  test('a message over the bound ends the call with RESOURCE_EXHAUSTED before it arrives whole', async () => {
    const authority = await serve((stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      // Announces 2,000 bytes (0x07d0) and sends 10: the announced length alone is refused.
      stream.write(Buffer.from([0, 0, 0, 0x07, 0xd0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]));
    });
    const outcome = await call(authority, 1024);
    assert.deepEqual([outcome.messages, outcome.code], [[], GrpcStatus.RESOURCE_EXHAUSTED]);
    assert.match(outcome.details, /2000 bytes is larger than the limit of 1024/);
  });

  test('a compressed message (never offered) is refused as INTERNAL', async () => {
    const authority = await serve((stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.write(Buffer.from([1, 0, 0, 0, 1, 9]));
    });
    const outcome = await call(authority);
    assert.deepEqual([outcome.messages, outcome.code], [[], GrpcStatus.INTERNAL]);
  });

  test('a stream cut without a status, and a port nobody listens on, are UNAVAILABLE (retried by the caller)', async () => {
    const authority = await serve((stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.write(frame([7]));
      setImmediate(() => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
    });
    const cut = await call(authority);
    assert.deepEqual([cut.messages, cut.code], [[[7]], GrpcStatus.UNAVAILABLE]);

    // A port that was just free: listened on, then closed.
    const refused = await new Promise<Outcome>((resolve) => {
      const probe = http2.createServer();
      probe.listen(0, '127.0.0.1', () => {
        const free = (probe.address() as AddressInfo).port;
        probe.close(() => resolve(call(`http://127.0.0.1:${free}`)));
      });
    });
    assert.equal(refused.code, GrpcStatus.UNAVAILABLE);
    assert.match(refused.details, /ECONNREFUSED/);
  });
});
