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

/** Every module keeps its own location, as if it ran from its source file. */
const ownImportMeta: Plugin = {
  name: 'own-import-meta',
  setup(build) {
    build.onLoad({ filter: /\.tsx?$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('import.meta')) return undefined;
      const contents = source
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
        .replaceAll('import.meta.dirname', JSON.stringify(path.dirname(args.path)))
        .replaceAll('import.meta.filename', JSON.stringify(args.path));
      return { contents, loader: args.path.endsWith('.tsx') ? 'tsx' : 'ts', resolveDir: path.dirname(args.path) };
    });
  },
};

/**
 * Compiles `files` (paths relative to `root`) into `outdir`, mirroring their paths with `.js`:
 * `hosts/server/test/x.test.ts` becomes `<outdir>/hosts/server/test/x.test.js`.
 */
export async function compileTests(root: string, files: string[], outdir: string): Promise<void> {
  await build({
    absWorkingDir: root,
    entryPoints: [...files, ...COMPILED_HOST_ENTRIES],
    outdir,
    outbase: root,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    keepNames: true,
    sourcemap: 'linked',
    chunkNames: '_chunks/[name]-[hash]',
    logLevel: 'warning',
    plugins: [externalPackages, ownImportMeta],
  });
}

/** Where `compileTests` put the JavaScript of `file`. */
export function compiledPath(outdir: string, file: string): string {
  return path.join(outdir, file.replace(/\.tsx?$/, '.js'));
}
