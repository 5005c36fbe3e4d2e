/**
 * In-process evaluation speed of the Node SDK against @openfeature/flagd-core, same run
 * (bench/sdk/evaluation-workloads.ts describes the workloads).
 *
 *   npm run bench:sdk                                   # compiled JavaScript (as published)
 *   npx tsx bench/sdk/evaluation.bench.ts [--rounds 7] [--round-ms 300] [--source]
 *
 * By default the workloads, the SDK and core are first bundled to plain JavaScript with esbuild
 * (other packages stay external and load from node_modules as they are), then run with node: that
 * is what an application runs (docs/sdk.md; the published package is compiled JavaScript). Under
 * tsx the TypeScript source is transformed with `keepNames`, which wraps every named closure in a
 * `__name(...)` call on each evaluation and costs the SDK's hot path noticeably; `--source` runs it
 * that way, for comparison.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = path.dirname(fileURLToPath(import.meta.url));
const workloads = path.join(here, 'evaluation-workloads.ts');
const args = process.argv.slice(2).filter((a) => a !== '--source');

if (process.argv.includes('--source')) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', workloads, ...args], { stdio: 'inherit' });
  process.exit(run.status ?? 1);
}

// Under node_modules/.cache so that the external packages resolve from the repository's node_modules.
const outDir = path.resolve(here, '../../node_modules/.cache/switchyard-bench-sdk');
mkdirSync(outDir, { recursive: true });
const outfile = path.join(outDir, 'evaluation-workloads.mjs');
await build({
  entryPoints: [workloads],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  logLevel: 'warning',
  plugins: [
    {
      name: 'only-switchyard-inline',
      setup(b) {
        // Bare imports stay external, except the workspaces under test (TypeScript source).
        b.onResolve({ filter: /^[^./]/ }, (resolved) => (resolved.path.startsWith('@switchyard/') ? undefined : { path: resolved.path, external: true }));
      },
    },
  ],
});
const run = spawnSync(process.execPath, [outfile, ...args], { stdio: 'inherit', env: { ...process.env, SDK_BENCH_MODE: 'compiled JavaScript (esbuild bundle)' } });
process.exit(run.status ?? 1);
