/**
 * `npm run build` / `npm run pack`: turns the workspaces published to npm (@switchyard/core,
 * @switchyard/sdk, and the browser package @switchyard/web, which is ES modules only) into JavaScript packages with type declarations that install and run on plain
 * Node (20, 22 and 24: the repository's `engines`) from ESM and CommonJS (test/packaging.test.ts proves it). Inside the monorepo the
 * workspaces stay TypeScript source (their package.json `exports` point to src/*.ts, run with
 * tsx); only the build output is JavaScript:
 *
 *   packages/<name>/dist/esm/**   ES modules + .d.ts   (tsconfig.build.json)
 *   packages/<name>/dist/cjs/**   CommonJS + .d.ts     (tsconfig.build.cjs.json; cjs/package.json says so)
 *   packages/<name>/dist/package.json, README.md, LICENSE
 *
 * `./x.ts` imports become `./x.js` (rewriteRelativeImportExtensions; declarations rewritten here).
 * The written package.json has no "private", conditional `exports` (types/import/require), and
 * the sibling package pinned to its exact version. `--pack` then runs `npm pack` on each dist
 * directory into `dist/` at the repository root (or `--out <dir>`).
 *
 * Without --pack it also builds the server host into hosts/server/dist (scripts/build-server.ts),
 * so `npm run build` emits everything production runs as JavaScript.
 *
 * Usage: tsx scripts/build-packages.ts [--pack] [--out <dir>]
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildServer } from './build-server.ts';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

interface PackageSpec {
  /** Workspace directory, relative to the repository root. */
  dir: string;
  /** Source `exports` subpaths left out of the published package (and why, in comments below). */
  skipExports: string[];
  /** Extra directories copied as they are, with the files kept (relative to the workspace). */
  copy: { from: string; keep: (file: string) => boolean }[];
  /** README.md of the package when the workspace has none: a file of this repository, or generated text. */
  readme: { file: string } | { text: (manifest: SourceManifest) => string };
  /** Module formats built; default both. A browser package is ES modules only (bundlers and browsers read nothing else). */
  formats?: Array<'esm' | 'cjs'>;
}

/** Build order matters: the SDK compiles against core's built declarations. */
export const PUBLISHED: PackageSpec[] = [
  {
    dir: 'packages/core',
    // The in-memory fakes and contract suites serve this repository's tests, not users.
    skipExports: ['./testing', './testing/contracts'],
    // The test vectors are the conformance contract every SDK runs (packages/core/test-vectors/README.md):
    // shipped so an SDK author can run them against the same version; the generator script stays here.
    copy: [{ from: 'test-vectors', keep: (file) => file.endsWith('.json') || file.endsWith('.md') }],
    readme: { text: coreReadme },
  },
  { dir: 'packages/sdk', skipExports: [], copy: [], readme: { file: 'docs/sdk.md' } },
  // The browser package (docs/client-side.md section 8): no dependency on the others, ES modules only.
  { dir: 'packages/web', skipExports: [], copy: [], readme: { file: 'packages/web/README.md' }, formats: ['esm'] },
];

function coreReadme(manifest: SourceManifest): string {
  return `# ${manifest.name}

${manifest.description ?? ''}

The evaluation engine of Switchyard, shared by the server and the SDKs: \`evaluate(flag, context,
env)\` never throws and returns \`{variant_key, value, is_enabled, reason, error_code?}\`;
\`bucketFor\` is the versioned murmur3 bucketing (its own MurmurHash3). It depends on two small pure
libraries (re2js, semver) and nothing else: the statistics behind experiment results live in the
server's own package (@switchyard/stats), not here.

\`\`\`js
import { evaluate } from '@switchyard/core';          // or: const { evaluate } = require('@switchyard/core');
const result = evaluate(flag, { context_type: 'user', key: 'user-1', attributes: { country: 'DE' } }, { projectId, environmentId });
\`\`\`

The conformance vectors every SDK must pass ship with the package:
\`@switchyard/core/test-vectors/evaluation.json\` and \`bucketing.json\` (their README
explains the format). Most applications want \`@switchyard/sdk\` instead.
`;
}

export interface BuiltPackage {
  name: string;
  version: string;
  /** Absolute path of the publishable directory (packages/<name>/dist). */
  distDir: string;
}

interface SourceManifest {
  name: string;
  version: string;
  description?: string;
  license?: string;
  exports: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, unknown>;
}

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;

async function tsc(project: string): Promise<void> {
  try {
    await run(process.execPath, [TSC, '-p', project], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    throw new Error(`tsc -p ${project} failed:\n${failed.stdout ?? ''}${failed.stderr ?? ''}`);
  }
}

function filesUnder(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).map((entry) => path.join(dir, entry)).filter((file) => statSync(file).isFile());
}

/**
 * tsc rewrites `./x.ts` to `./x.js` in JavaScript but keeps `.ts` in declarations, which only
 * TypeScript 5+ with allowImportingTsExtensions-aware resolution reads; `.js` works for every consumer.
 */
function rewriteDeclarationImports(dir: string): void {
  const relativeTs = /((?:from|import)\s*\(?\s*)(['"])(\.{1,2}\/[^'"]*?)\.ts\2/g;
  for (const file of filesUnder(dir)) {
    if (!file.endsWith('.d.ts')) continue;
    const text = readFileSync(file, 'utf8');
    const rewritten = text.replace(relativeTs, '$1$2$3.js$2');
    if (rewritten !== text) writeFileSync(file, rewritten);
  }
}

/** `./src/openfeature/index.ts` → `openfeature/index` (undefined when the source file does not exist yet). */
function entryOf(workspace: string, target: string): string | undefined {
  const match = /^\.\/src\/(.+)\.ts$/.exec(target);
  if (!match || !existsSync(path.join(workspace, target))) return undefined;
  return match[1];
}

const formatsOf = (spec: PackageSpec): Array<'esm' | 'cjs'> => spec.formats ?? ['esm', 'cjs'];

function publishableManifest(spec: PackageSpec, source: SourceManifest, versions: Map<string, string>): Record<string, unknown> {
  const workspace = path.join(ROOT, spec.dir);
  const esmOnly = !formatsOf(spec).includes('cjs');
  const exportsMap: Record<string, unknown> = {};
  for (const [subpath, target] of Object.entries(source.exports)) {
    if (spec.skipExports.includes(subpath)) continue;
    const entry = entryOf(workspace, target);
    if (entry !== undefined && esmOnly) {
      exportsMap[subpath] = { types: `./esm/${entry}.d.ts`, default: `./esm/${entry}.js` };
    } else if (entry !== undefined) {
      exportsMap[subpath] = {
        import: { types: `./esm/${entry}.d.ts`, default: `./esm/${entry}.js` },
        require: { types: `./cjs/${entry}.d.ts`, default: `./cjs/${entry}.js` },
      };
    } else if (!target.startsWith('./src/')) {
      exportsMap[subpath] = target; // e.g. ./test-vectors/*, copied as is
    } else {
      console.warn(`# ${source.name}: export ${subpath} (${target}) has no source yet; left out`);
    }
  }
  exportsMap['./package.json'] = './package.json';
  const dependencies = Object.fromEntries(
    Object.entries(source.dependencies ?? {}).map(([name, range]) => [name, versions.get(name) ?? range]),
  );
  return {
    name: source.name,
    version: source.version,
    description: source.description,
    license: source.license,
    type: 'module',
    main: esmOnly ? './esm/index.js' : './cjs/index.js',
    types: esmOnly ? './esm/index.d.ts' : './cjs/index.d.ts',
    exports: exportsMap,
    // Bundlers may drop what a page does not import (nothing runs on import).
    ...(esmOnly ? { sideEffects: false } : {}),
    // What .ci/run tests: the repository's own `engines`.
    // (A browser package names no Node version: pages and bundlers are what run it.)
    ...(esmOnly ? {} : { engines: { node: readJson<{ engines: { node: string } }>(path.join(ROOT, 'package.json')).engines.node } }),
    dependencies,
    ...(source.peerDependencies ? { peerDependencies: source.peerDependencies } : {}),
    ...(source.peerDependenciesMeta ? { peerDependenciesMeta: source.peerDependenciesMeta } : {}),
  };
}

/**
 * The tsconfig to compile with: the workspace's own, or (when building elsewhere, as the packaging
 * test does so it never races a build in the working tree) a wrapper extending it with another
 * outDir and core's declarations taken from that other place.
 */
function projectFor(spec: PackageSpec, format: 'esm' | 'cjs', distDir: string, coreDist: string | undefined): string {
  const own = path.join(ROOT, spec.dir, format === 'esm' ? 'tsconfig.build.json' : 'tsconfig.build.cjs.json');
  if (distDir === path.join(ROOT, spec.dir, 'dist')) return own;
  // typeRoots: found from the config's own directory otherwise, which is no longer in the repository.
  const compilerOptions: Record<string, unknown> = { outDir: path.join(distDir, format), typeRoots: [path.join(ROOT, 'node_modules', '@types')] };
  if (coreDist !== undefined) compilerOptions.paths = { '@switchyard/core': [path.join(coreDist, format, 'index.d.ts')] };
  const wrapper = path.join(path.dirname(distDir), `tsconfig.${path.basename(spec.dir)}.${format}.json`);
  writeFileSync(wrapper, JSON.stringify({ extends: own, compilerOptions }, null, 2));
  return wrapper;
}

async function buildOne(spec: PackageSpec, versions: Map<string, string>, distDir: string, coreDist: string | undefined): Promise<BuiltPackage> {
  const workspace = path.join(ROOT, spec.dir);
  const source = readJson<SourceManifest>(path.join(workspace, 'package.json'));
  rmSync(distDir, { recursive: true, force: true });
  mkdirSync(distDir, { recursive: true });
  // Both compilations finish before a failure is reported, so nothing writes into a directory being removed.
  const formats = formatsOf(spec);
  const compiled = await Promise.allSettled(formats.map((format) => tsc(projectFor(spec, format, distDir, coreDist))));
  for (const result of compiled) if (result.status === 'rejected') throw result.reason;
  rewriteDeclarationImports(distDir);
  if (formats.includes('cjs')) writeFileSync(path.join(distDir, 'cjs', 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);
  for (const { from, keep } of spec.copy) {
    cpSync(path.join(workspace, from), path.join(distDir, from), { recursive: true, filter: (file) => statSync(file).isDirectory() || keep(file) });
  }
  const readme = path.join(distDir, 'README.md');
  if (existsSync(path.join(workspace, 'README.md'))) cpSync(path.join(workspace, 'README.md'), readme);
  else if ('file' in spec.readme) cpSync(path.join(ROOT, spec.readme.file), readme);
  else writeFileSync(readme, spec.readme.text(source));
  cpSync(path.join(ROOT, 'LICENSE'), path.join(distDir, 'LICENSE'));
  writeFileSync(path.join(distDir, 'package.json'), `${JSON.stringify(publishableManifest(spec, source, versions), null, 2)}\n`);
  return { name: source.name, version: source.version, distDir };
}

/**
 * Builds every published package in order; returns where each one is. By default into
 * packages/<name>/dist; with `outDir`, into `<outDir>/<name>` instead (the working tree untouched).
 */
export async function buildPackages(options: { outDir?: string } = {}): Promise<BuiltPackage[]> {
  const versions = new Map<string, string>();
  for (const spec of PUBLISHED) {
    const manifest = readJson<SourceManifest>(path.join(ROOT, spec.dir, 'package.json'));
    versions.set(manifest.name, manifest.version);
  }
  const built: BuiltPackage[] = [];
  let coreDist: string | undefined;
  for (const spec of PUBLISHED) {
    const distDir = options.outDir === undefined ? path.join(ROOT, spec.dir, 'dist') : path.join(path.resolve(options.outDir), path.basename(spec.dir));
    const pkg = await buildOne(spec, versions, distDir, coreDist);
    if (pkg.name === '@switchyard/core') coreDist = pkg.distDir;
    built.push(pkg);
  }
  return built;
}

/** `npm pack` of each built package into `outDir`; returns the tarballs' absolute paths. */
export async function packPackages(built: BuiltPackage[], outDir: string): Promise<string[]> {
  mkdirSync(outDir, { recursive: true });
  const tarballs: string[] = [];
  for (const pkg of built) {
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const { stdout } = await run(npm, ['pack', '--json', '--pack-destination', outDir], { cwd: pkg.distDir, maxBuffer: 16 * 1024 * 1024 });
    const [packed] = JSON.parse(stdout) as { filename: string }[];
    if (!packed) throw new Error(`npm pack of ${pkg.name} reported nothing`);
    tarballs.push(path.join(outDir, packed.filename));
  }
  return tarballs;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const outIndex = args.indexOf('--out');
  const outDir = path.resolve(outIndex >= 0 && args[outIndex + 1] ? args[outIndex + 1]! : path.join(ROOT, 'dist'));
  const started = Date.now();
  const built = await buildPackages();
  for (const pkg of built) console.log(`built ${pkg.name}@${pkg.version} → ${path.relative(ROOT, pkg.distDir)}`);
  if (args.includes('--pack')) {
    for (const tarball of await packPackages(built, outDir)) console.log(`packed ${path.relative(process.cwd(), tarball)}`);
  } else {
    // `npm run build` emits every host too: the server with the workspaces it uses (scripts/build-server.ts).
    const server = await buildServer();
    console.log(`built the server → ${path.relative(ROOT, server.main)} (node ${path.relative(process.cwd(), server.main)})`);
  }
  console.log(`done in ${Date.now() - started} ms`);
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
