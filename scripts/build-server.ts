/**
 * The production build of the server host (part of `npm run build`): hosts/server/src/main.ts and
 * the workspaces it uses (@switchyard/core, postgres, services) bundled by esbuild into one ES
 * module that plain `node` runs, no tsx:
 *
 *   hosts/server/dist/main.mjs        the server (+ main.mjs.map: `node --enable-source-maps`)
 *   hosts/server/dist/proto/**        the .proto files it loads at startup
 *   hosts/server/dist/schema.sql      a new database is created from it
 *   hosts/server/dist/migrations/*    the numbered migrations
 *
 * Third-party packages stay imports (external), found in node_modules as with `npm start`, so the
 * output runs inside the checkout after `npm ci`. The source locates proto/, schema.sql and
 * migrations/ relative to its own file; the bundle defines SWITCHYARD_BUNDLE, which makes those
 * paths relative to main.mjs instead (hosts/server/src/grpc/proto.ts, packages/postgres/src/migrate.ts).
 *
 * Usage: tsx scripts/build-server.ts [--out <dir>]
 */
import { cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
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
  /** Absolute path of the entry point: `node <main>`. */
  main: string;
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
  const main = path.join(outDir, 'main.mjs');
  await build({
    entryPoints: [path.join(ROOT, 'hosts', 'server', 'src', 'main.ts')],
    outfile: main,
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
  const migrations = path.join(ROOT, 'packages', 'postgres', 'migrations');
  mkdirSync(path.join(outDir, 'migrations'));
  for (const file of readdirSync(migrations)) {
    if (file.endsWith('.sql')) cpSync(path.join(migrations, file), path.join(outDir, 'migrations', file));
  }
  return { outDir, main };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const outIndex = args.indexOf('--out');
  const started = Date.now();
  const built = await buildServer(outIndex >= 0 && args[outIndex + 1] ? { outDir: args[outIndex + 1] } : {});
  console.log(`built the server → ${path.relative(process.cwd(), built.main)} in ${Date.now() - started} ms`);
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
