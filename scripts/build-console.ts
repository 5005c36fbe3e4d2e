/**
 * Builds the web console (packages/console) into packages/console/dist: app.js (esbuild bundle of
 * src/main.tsx with Preact, minified, no source fetched from anywhere at run time), app.css and
 * index.html copied from public/. `npm start` runs it first (`prestart`), `npm run build` too, and
 * the browser tests call buildConsole() themselves. Skips the bundle when nothing changed since.
 *
 * Usage: tsx scripts/build-console.ts [--force]
 */
import { cpSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CONSOLE = path.join(ROOT, 'packages', 'console');
export const CONSOLE_DIST = path.join(CONSOLE, 'dist');

function newestChange(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestChange(full) : statSync(full).mtimeMs);
  }
  return newest;
}

/** Builds the console unless dist is newer than every source file; returns the dist directory. */
export async function buildConsole(options: { force?: boolean } = {}): Promise<string> {
  const bundle = path.join(CONSOLE_DIST, 'app.js');
  const sources = Math.max(newestChange(path.join(CONSOLE, 'src')), newestChange(path.join(CONSOLE, 'public')));
  if (!options.force && existsSync(bundle) && statSync(bundle).mtimeMs >= sources) return CONSOLE_DIST;
  // esbuild is a build tool, loaded only here: the server itself never needs it.
  const { build } = await import('esbuild');
  mkdirSync(CONSOLE_DIST, { recursive: true });
  await build({
    entryPoints: [path.join(CONSOLE, 'src', 'main.tsx')],
    outfile: bundle,
    bundle: true,
    format: 'esm',
    minify: true,
    sourcemap: false,
    target: ['chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    logLevel: 'warning',
  });
  cpSync(path.join(CONSOLE, 'public'), CONSOLE_DIST, { recursive: true });
  return CONSOLE_DIST;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const started = performance.now();
  await buildConsole({ force: process.argv.includes('--force') });
  console.log(`web console ready in packages/console/dist (${Math.round(performance.now() - started)} ms)`);
}
