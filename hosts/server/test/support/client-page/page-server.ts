import { createHmac } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// Helpers of hosts/server/test/client-browser.test.ts: the page's own web server (another origin
// than Switchyard's) and a context token signed independently of the server's verifier.

/** A static server for the page, on its own port (so its own origin); `proxyTo` also forwards every other path there (same-origin deployments). */
export async function startPageServer(bundle: string, proxyTo?: string): Promise<{ origin: string; close(): Promise<void> }> {
  const html = '<!doctype html><html><head><meta charset="utf-8"><title>loading</title></head><body><script type="module" src="/page.js"></script></body></html>';
  const server: Server = createServer((req, res) => {
    if (req.url === '/' || req.url === '/index.html') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
    if (req.url === '/page.js') return void res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(bundle);
    if (proxyTo === undefined) return void res.writeHead(404).end();
    const target = new URL(req.url ?? '/', proxyTo);
    const headers = { ...req.headers, host: target.host };
    const upstream = httpRequest(target, { method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** HS256 JWT signed here, independently of the server's verifier (header kid; claims ck, sub, ctx, iat, exp). */
export function signContextToken(secret: string, kid: string, claims: Record<string, unknown>): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const signingInput = `${encode({ alg: 'HS256', typ: 'JWT', kid })}.${encode(claims)}`;
  return `${signingInput}.${createHmac('sha256', Buffer.from(secret, 'utf8')).update(signingInput).digest('base64url')}`;
}

