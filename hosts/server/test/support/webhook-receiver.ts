import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What the receiver answers: status, headers and body (default 204). */
export type Answer = { status: number; headers?: Record<string, string>; body?: string };

/** A real HTTP receiver on an ephemeral loopback port: it records every request and answers as told. */
export interface TestReceiver {
  url: (path?: string) => string;
  port: number;
  received: Received[];
  /** Replaced by tests: what the next requests are answered. */
  answer: (request: Received) => Answer | Promise<Answer>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<TestReceiver> {
  const receiver: Omit<TestReceiver, 'url' | 'port' | 'close'> = { received: [], answer: () => ({ status: 204 }) };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const got: Received = { path: request.url ?? '/', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') };
      receiver.received.push(got);
      // An answer may wait (a test holding the sender's request open while something else runs).
      void Promise.resolve(receiver.answer(got)).then((answer) => {
        response.writeHead(answer.status, answer.headers ?? {});
        response.end(answer.body ?? '');
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(receiver, {
    port,
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
