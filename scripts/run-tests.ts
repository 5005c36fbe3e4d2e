/**
 * `npm test`: runs every *.test.ts file with node:test.
 *
 * Integration tests need a PostgreSQL server: TEST_DATABASE_URL when set, otherwise an embedded
 * PostgreSQL started here for the run (throwaway data directory) and stopped afterwards. Each test
 * file creates its own database on that server (packages/postgres/src/testing/test-database.ts).
 *
 * The integration suites (every file that starts a server with startTestServer or a wrapper of it) then run a second
 * time against the split topology: a gateway process in front of the services (docs/architecture.md),
 * except files marked `// topologies: single`.
 * TEST_TOPOLOGIES=single skips that second pass (CI does on its extra Node versions).
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../packages/postgres/src/embedded.ts';
import { freePort } from '../packages/postgres/src/testing/free-port.ts';
import { chromiumExecutable } from '../hosts/server/test/support/browser.ts';

const ROOTS = ['packages', 'hosts', 'test'];

function findTestFiles(): string[] {
  const files: string[] = [];
  for (const root of ROOTS) {
    let entries: string[];
    try {
      entries = readdirSync(root, { recursive: true }) as string[];
    } catch {
      continue;
    }
    for (const entry of entries) {
      if (entry.endsWith('.test.ts') && !entry.includes('node_modules')) files.push(path.join(root, entry));
    }
  }
  return files.sort();
}

async function main(): Promise<number> {
  const filter = process.argv.slice(2);
  const files = findTestFiles().filter((file) => filter.length === 0 || filter.some((f) => file.includes(f)));
  if (files.length === 0) {
    console.error('no test files found');
    return 1;
  }

  console.log(`# node ${process.version} (${process.execPath}), ${files.length} test files`);
  let stopDatabase: (() => Promise<void>) | undefined;
  const env = { ...process.env };
  if (!env.TEST_DATABASE_URL) {
    const runDir = mkdtempSync(path.join(tmpdir(), 'switchyard-test-'));
    // When we run as root the server runs as the `postgres` user, which must reach its directory.
    chmodSync(runDir, 0o755);
    const dataDir = path.join(runDir, 'postgres');
    const port = await freePort();
    const started = Date.now();
    const embedded = await startEmbeddedPostgres({ dataDir, port, persistent: false });
    console.log(`# TEST_DATABASE_URL unset: embedded PostgreSQL on 127.0.0.1:${port} (started in ${Date.now() - started} ms)`);
    env.TEST_DATABASE_URL = embedded.url;
    stopDatabase = () => embedded.stop();
  }

  // Chromium is found (or installed) once here, not by each browser test file: parallel files
  // racing for apt-get's lock made all but one skip their tests.
  if (files.some((file) => readFileSync(file, 'utf8').includes('launchChromium('))) {
    const chromium = chromiumExecutable();
    if (chromium.path) env.CHROMIUM_PATH = chromium.path;
    else env.CHROMIUM_UNAVAILABLE = chromium.reason;
  }

  let code = await runFiles(files, { ...env, TEST_TOPOLOGY: 'single' });
  // startTestServer( itself, or a wrapper named start<Something>TestServer( (e.g. startSsoTestServer),
  // unless the file says it runs on one topology only (a line `// topologies: single`, with its reason).
  const splitFiles = files.filter((file) => {
    const text = readFileSync(file, 'utf8');
    return /\bstart\w*TestServer\(/.test(text) && !/^\/\/ topologies: single\b/m.test(text);
  });
  if (env.TEST_TOPOLOGIES !== 'single' && splitFiles.length > 0) {
    console.log(`# again on the split topology (gateway + services): ${splitFiles.length} test files`);
    code = (await runFiles(splitFiles, { ...env, TEST_TOPOLOGY: 'split' })) || code;
  }
  await stopDatabase?.();
  return code;
}

async function runFiles(files: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const concurrency = Number(env.TEST_CONCURRENCY ?? 4);
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files],
    { stdio: 'inherit', env },
  );
  return new Promise<number>((resolve) => child.on('exit', (status, signal) => resolve(status ?? (signal ? 1 : 0))));
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
