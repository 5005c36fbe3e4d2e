/**
 * Serves examples/browser-app (README.md beside this file): bundles app.js with esbuild (the stock
 * OpenFeature packages and @switchyard/web) and serves it with index.html from its own port, so
 * the page has another origin than Switchyard's, as a real front end does.
 *
 *   SWITCHYARD_URL=http://localhost:8080 ENVIRONMENT_ID=... CLIENT_KEY=ck_... npx tsx examples/browser-app/serve.ts
 *
 * Environment: SWITCHYARD_URL (default http://localhost:8080), ENVIRONMENT_ID and CLIENT_KEY
 * (required), FLAG_KEY (a client-visible boolean flag, default "new-checkout"), METRIC_KEY (a
 * client-allowed metric, default "purchase"), PORT (default 5173; 0 picks a free one) and HOST
 * (default 127.0.0.1). Prints the page's address; stops on Ctrl-C.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is required (see examples/browser-app/README.md)`);
    process.exit(2);
  }
  return value;
}

const config = {
  baseUrl: process.env.SWITCHYARD_URL || 'http://localhost:8080',
  environmentId: required('ENVIRONMENT_ID'),
  clientKey: required('CLIENT_KEY'),
  flagKey: process.env.FLAG_KEY || 'new-checkout',
  metricKey: process.env.METRIC_KEY || 'purchase',
};
if (config.clientKey.startsWith('sdk_')) {
  console.error('CLIENT_KEY is a server key (sdk_...): never put one in a page. Create a client key (ck_...) for the environment.');
  process.exit(2);
}

const bundled = await build({
  entryPoints: [fileURLToPath(new URL('./app.js', import.meta.url))],
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  write: false,
  define: { SWITCHYARD_CONFIG: JSON.stringify(config) },
});
const script = bundled.outputFiles[0]!.text;
const html = readFileSync(new URL('./index.html', import.meta.url), 'utf8');

const server = createServer((request, response) => {
  if (request.url === '/' || request.url === '/index.html') return void response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
  if (request.url === '/app.js') return void response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(script);
  response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
});
server.listen(Number(process.env.PORT ?? 5173), process.env.HOST || '127.0.0.1', () => {
  const { address, port } = server.address() as AddressInfo;
  console.log(`serving the browser app on http://${address}:${port} (bundle ${Math.round(script.length / 1024)} KiB) against ${config.baseUrl}`);
  console.log(`the client key's allowed_origins must include http://${address}:${port}`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
