import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { OPENAPI_PATH } from './openapi.ts';

/** True only in the built server (scripts/build-server.ts), which has console/ copied beside it. */
declare const SWITCHYARD_BUNDLE: boolean | undefined;

/** Where scripts/build-console.ts writes the console (or, in the built server, beside main.mjs). */
export const DEFAULT_CONSOLE_DIR = fileURLToPath(
  new URL(typeof SWITCHYARD_BUNDLE !== 'undefined' && SWITCHYARD_BUNDLE ? './console/' : '../../../console/dist/', import.meta.url),
);

/**
 * The console's pages load only this origin's script, style and API (docs/security.md "Web
 * console"): no inline script, no framing, no form posting elsewhere.
 */
const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "object-src 'none'",
].join('; ');

const ASSET_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** The title of the interactive API docs at /docs (docs/contract.md "Web console and API docs"). */
const DOCS_TITLE = 'Switchyard API';

/** The top bar's name (instead of the plugin's own logo): the project's name, as text. */
const DOCS_LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="260" height="40" viewBox="0 0 260 40"><text x="0" y="28" font-family="sans-serif" font-size="24" font-weight="700" fill="#ffffff">${DOCS_TITLE}</text></svg>`;

const NOT_BUILT = `<!doctype html><html lang="en"><meta charset="utf-8"><title>Switchyard</title>
<p>The web console is not built in this installation. <code>npm start</code> builds it; otherwise run
<code>npx tsx scripts/build-console.ts</code>. The API is documented at <a href="/docs">/docs</a>.</p></html>`;

/**
 * What a browser gets from the REST host (docs/contract.md "Web console and API docs"): the web
 * console at `/` (index.html; its script and style under /console/), and interactive docs of
 * /v1/openapi.json at /docs (swagger-ui, served from node_modules: nothing is fetched from
 * another origin). registerOpenApi must have run on the same instance first.
 */
export async function registerBrowserRoutes(app: FastifyInstance, options: { consoleDir?: string } = {}): Promise<void> {
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: true,
    // The plugin's policy, minus what would reach beyond this server: the online validator's badge
    // (validatorUrl null turns it off) and upgrade-insecure-requests, which breaks plain-HTTP installs.
    transformStaticCSP: (header) =>
      header
        .replace(' validator.swagger.io', '')
        .replace(/\s*upgrade-insecure-requests;?/, '')
        .replace(/(font-src|style-src) 'self' https:/g, "$1 'self'"),
    // The page says whose API it is, and reads the document at the address the README gives
    // (`urls` makes the top bar load it instead of the plugin's own copy at /docs/json).
    theme: { title: DOCS_TITLE },
    logo: { type: 'image/svg+xml', content: DOCS_LOGO },
    uiConfig: { deepLinking: true, docExpansion: 'list', tryItOutEnabled: true, validatorUrl: null, urls: [{ url: OPENAPI_PATH, name: `${DOCS_TITLE} (${OPENAPI_PATH})` }] },
  });

  const consoleDir = options.consoleDir ?? DEFAULT_CONSOLE_DIR;
  const indexFile = path.join(consoleDir, 'index.html');
  const built = existsSync(indexFile);
  const index = built ? readFileSync(indexFile) : Buffer.from(NOT_BUILT);
  // The build is a handful of files (index.html, app.js, app.css): read once, answered from memory.
  const assets = new Map<string, { body: Buffer; type: string }>();
  if (built) {
    for (const name of readdirSync(consoleDir)) {
      const type = ASSET_TYPES[path.extname(name)];
      if (type !== undefined && name !== 'index.html') assets.set(name, { body: readFileSync(path.join(consoleDir, name)), type });
    }
  }
  app.get<{ Params: { file: string } }>('/console/:file', { schema: { hide: true } }, (request, reply) => {
    const asset = assets.get(request.params.file);
    if (asset === undefined) return reply.callNotFound();
    return reply.header('content-security-policy', CONSOLE_CSP).header('x-content-type-options', 'nosniff').header('cache-control', 'no-cache').type(asset.type).send(asset.body);
  });
  app.get('/', { schema: { hide: true } }, (_request, reply) =>
    reply
      .code(built ? 200 : 503)
      .header('content-security-policy', CONSOLE_CSP)
      .header('x-frame-options', 'DENY')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'same-origin')
      .header('cache-control', 'no-cache')
      .type('text/html; charset=utf-8')
      .send(index),
  );
}
