/**
 * The production build of the hosts (part of `npm run build`): the three entry points and the
 * workspaces they use (@switchyard/core, stats, postgres, services, sdk) bundled by esbuild into ES
 * modules that plain `node` runs, no tsx (code they share goes to chunk-*.mjs beside them):
 *
 *   hosts/server/dist/main.mjs        the single process (+ .map: `node --enable-source-maps`)
 *   hosts/server/dist/gateway.mjs     a gateway (hosts/gateway)
 *   hosts/server/dist/services.mjs    the services process (hosts/services)
 *   hosts/server/dist/proto/**        the .proto files it loads at startup
 *   hosts/server/dist/schema.sql      a new database is created from it
 *   hosts/server/dist/console/*       the web console (scripts/build-console.ts)
 *   hosts/server/dist/migrations/*    the numbered migrations
 *
 * Third-party packages stay imports (external), found in node_modules as with `npm start`, so the
 * output runs inside the checkout after `npm ci`. The source locates proto/, schema.sql and
 * migrations/ relative to its own file; the bundle defines SWITCHYARD_BUNDLE, which makes those
 * paths relative to main.mjs instead (packages/transport/src/grpc/proto.ts, packages/postgres/src/migrate.ts).
 *
 * Usage: tsx scripts/build-server.ts [--out <dir>]
 */
import { cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { buildConsole } from './build-console.ts';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SERVER_DIST = path.join(ROOT, 'hosts', 'server', 'dist');

/** Bare imports stay imports, except this repository's workspaces, which are TypeScript source. */
const dependenciesExternal: Plugin = {
  name: 'dependencies-external',
  setup(builder) {
    builder.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith('@switchyard/') ? undefined : { path: args.path, external: true }));
  },
};

export interface BuiltServer {
  /** Absolute path of the directory written. */
  outDir: string;
  /** Absolute paths of the entry points: `node <main>` (single process), `node <gateway>`, `node <services>`. */
  main: string;
  gateway: string;
  services: string;
}

/**
 * Bundles the server into `outDir` (default hosts/server/dist; emptied first). Another directory
 * must be inside the checkout as well, so that node_modules is found from it (the test builds
 * into one of its own so it never races `npm run build`).
 */
export async function buildServer(options: { outDir?: string } = {}): Promise<BuiltServer> {
  const outDir = path.resolve(options.outDir ?? SERVER_DIST);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  await build({
    entryPoints: {
      main: path.join(ROOT, 'hosts', 'server', 'src', 'main.ts'),
      gateway: path.join(ROOT, 'hosts', 'gateway', 'src', 'main.ts'),
      services: path.join(ROOT, 'hosts', 'services', 'src', 'main.ts'),
    },
    outdir: outDir,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunk-[hash]',
    splitting: true,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'linked',
    define: { SWITCHYARD_BUNDLE: 'true' },
    plugins: [dependenciesExternal],
    logLevel: 'warning',
  });
  cpSync(path.join(ROOT, 'proto'), path.join(outDir, 'proto'), { recursive: true });
  cpSync(path.join(ROOT, 'schema.sql'), path.join(outDir, 'schema.sql'));
  cpSync(await buildConsole(), path.join(outDir, 'console'), { recursive: true });
  const migrations = path.join(ROOT, 'packages', 'postgres', 'migrations');
  mkdirSync(path.join(outDir, 'migrations'));
  for (const file of readdirSync(migrations)) {
    if (file.endsWith('.sql')) cpSync(path.join(migrations, file), path.join(outDir, 'migrations', file));
  }
  return { outDir, main: path.join(outDir, 'main.mjs'), gateway: path.join(outDir, 'gateway.mjs'), services: path.join(outDir, 'services.mjs') };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const outIndex = args.indexOf('--out');
  const started = Date.now();
  const built = await buildServer(outIndex >= 0 && args[outIndex + 1] ? { outDir: args[outIndex + 1] } : {});
  const names = [built.main, built.gateway, built.services].map((file) => path.relative(process.cwd(), file));
  console.log(`built the hosts → ${names.join(', ')} in ${Date.now() - started} ms`);
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
