/**
 * `npm test`: runs every *.test.ts file with node:test, in processes of its own: a long file (or
 * one that acts on its process) alone, short ones several to a process, one after another in suites
 * of their own (scripts/test-batches.ts; TEST_BATCH=0: every file alone).
 *
 * Integration tests need a PostgreSQL server: TEST_DATABASE_URL when set, otherwise an embedded
 * PostgreSQL started here for the run (throwaway data directory) and stopped afterwards. Each test
 * file creates its own databases on that server, copied from a template migrated once here
 * (packages/postgres/src/testing/test-database.ts).
 *
 * The integration suites (every file that starts a server with startTestServer or a wrapper of it)
 * also run against the split topology: a gateway in front of the services
 * (docs/architecture.md), except files marked `// topologies: single`. TEST_TOPOLOGIES=single skips
 * those runs (CI does on its extra Node versions).
 *
 * Both topologies' runs share one pool of TEST_CONCURRENCY workers, longest file first (durations
 * recorded in scripts/test-durations.json), so the run ends when its longest file can, not when the
 * last file that happened to start late does. Each file's output is printed whole when it ends
 * (TEST_VERBOSE=1: passing files too; otherwise a line each); then the failures, the slowest
 * files, and the machine's CPU over the run. Arguments filter the files by substring.
 * TEST_RECORD_DURATIONS=1 rewrites the durations file;
 * TEST_CPU_PROF=DIR writes each file's V8 CPU profile (.cpuprofile) into DIR, and those of the hosts the
 * file spawns (hosts/server/test/support/server-process.ts).
 *
 * A file still running after TEST_FILE_TIMEOUT_MS (10 minutes) is killed and fails: that is the
 * guard against a hang, so a suite carries no timeout on its total time, which a busy machine
 * would trip (single waits keep theirs). Files run compiled (scripts/compile-tests.ts; TEST_COMPILE=0:
 * under tsx); a failed file runs once more with source maps, so its stack names TypeScript lines.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../packages/postgres/src/embedded.ts';
import { stablePort } from '../packages/postgres/src/testing/free-port.ts';
import { dropDatabase, prepareTemplateDatabase } from '../packages/postgres/src/testing/test-database.ts';
import { chromiumExecutable } from '../hosts/server/test/support/browser.ts';
import { compileTests, compiledPath } from './compile-tests.ts';
import { batchEntrySource, filesToRetry, mayShareProcess, planBatches, suiteDurations } from './test-batches.ts';
import { RETRY_SEPARATOR, failureReasons } from './failure-reasons.ts';

const ROOTS = ['packages', 'hosts', 'test'];
const REPO_ROOT = path.join(import.meta.dirname, '..');
/** Prints the file's CPU time when its process exits (see the file). */
/** Each file reports its CPU time; TEST_CPU_PROF=DIR also writes a V8 CPU profile of each file's process (and its spawned hosts) there. */
const REPORT_CPU = [
  '--import',
  path.join(import.meta.dirname, 'test-support', 'report-cpu.mjs'),
  ...(process.env.TEST_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.TEST_CPU_PROF)}`] : []),
];
const DURATIONS_FILE = path.join(import.meta.dirname, 'test-durations.json');
/** A file still running after this long is killed and counted as failed (it hangs). */
const FILE_TIMEOUT_MS = Number(process.env.TEST_FILE_TIMEOUT_MS ?? 10 * 60_000);

type Topology = 'single' | 'split';

interface Job {
  /** One file, or a batch of short files sharing a process (scripts/test-batches.ts). */
  files: string[];
  topology: Topology;
  /** A batch's entry module (in the compiled directory). */
  entry?: string;
}

interface JobResult extends Job {
  ms: number;
  /** CPU time of the file's process and the children it reaped, when /proc told. */
  cpuMs: number;
  passed: boolean;
  counts: Record<string, number>;
  output: string;
}

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

/**
 * startTestServer( itself, or a wrapper named start<Something>TestServer( (e.g. startSsoTestServer),
 * unless the file says it runs on one topology only (a line `// topologies: single`, with its reason).
 */
function runsOnSplitTopology(text: string): boolean {
  return /\bstart\w*TestServer\(/.test(text) && !/^\/\/ topologies: single\b/m.test(text);
}

const durationKey = (file: string, topology: Topology) => `${file} ${topology}`;
/** A job's recorded time: a batch's is the sum of its files'. */
const jobDuration = (job: Job, durations: Record<string, number>, unknown: number) =>
  job.files.reduce((sum, file) => sum + (durations[durationKey(file, job.topology)] ?? unknown), 0);

function readDurations(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(DURATIONS_FILE, 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}

async function main(): Promise<number> {
  const started = Date.now();
  const machineAtStart = machineCpu();
  const filter = process.argv.slice(2);
  const files = findTestFiles().filter((file) => filter.length === 0 || filter.some((f) => file.includes(f)));
  if (files.length === 0) {
    console.error('no test files found');
    return 1;
  }
  const texts = new Map(files.map((file) => [file, readFileSync(file, 'utf8')]));
  const runs: Array<{ file: string; topology: Topology }> = files.map((file) => ({ file, topology: 'single' as const }));
  if (process.env.TEST_TOPOLOGIES !== 'single') {
    for (const file of files) if (runsOnSplitTopology(texts.get(file)!)) runs.push({ file, topology: 'split' });
  }
  const concurrency = Math.max(1, Number(process.env.TEST_CONCURRENCY ?? 6));
  const durations = readDurations();
  // Short files share processes when they run compiled (TEST_BATCH=0: every file alone).
  const batching = process.env.TEST_COMPILE !== '0' && process.env.TEST_BATCH !== '0';
  const jobs: Job[] = [];
  for (const topology of ['single', 'split'] as const) {
    const ofTopology = runs.filter((run) => run.topology === topology).map((run) => run.file);
    const groups = batching
      ? planBatches(ofTopology, (file) => durations[durationKey(file, topology)], (file) => mayShareProcess(texts.get(file)!))
      : ofTopology.map((file) => [file]);
    for (const group of groups) jobs.push({ files: group, topology });
  }
  const batched = jobs.filter((job) => job.files.length > 1);
  console.log(
    `# node ${process.version} (${process.execPath}), ${files.length} test files, ${runs.length} runs (split topology: ${runs.length - files.length}) ` +
      `in ${jobs.length} processes (${batched.reduce((n, job) => n + job.files.length, 0)} short runs in ${batched.length} shared processes), ${concurrency} at a time`,
  );

  let stopDatabase: (() => Promise<void>) | undefined;
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (!env.TEST_DATABASE_URL) {
    const runDir = mkdtempSync(path.join(tmpdir(), 'switchyard-test-'));
    // When we run as root the server runs as the `postgres` user, which must reach its directory.
    chmodSync(runDir, 0o755);
    const dataDir = path.join(runDir, 'postgres');
    const port = await stablePort();
    const dbStarted = Date.now();
    const embedded = await startEmbeddedPostgres({ dataDir, port, persistent: false });
    console.log(`# TEST_DATABASE_URL unset: embedded PostgreSQL on 127.0.0.1:${port} (started in ${Date.now() - dbStarted} ms)`);
    env.TEST_DATABASE_URL = embedded.url;
    stopDatabase = () => embedded.stop();
  }
  env.TEST_DATABASE_URL = withTestSessionSettings(env.TEST_DATABASE_URL);
  // Migrated once; every test database is a copy of it (CREATE DATABASE ... TEMPLATE).
  const template = await prepareTemplateDatabase(env.TEST_DATABASE_URL);
  env.TEST_TEMPLATE_DATABASE = template;
  // Node 22 and later keep the code they compile here, so the ~250 processes of a run (and the
  // hosts they spawn) compile the same bundles and node_modules once; Node 20 ignores it.
  env.NODE_COMPILE_CACHE ??= path.join(REPO_ROOT, 'node_modules', '.cache', 'switchyard-tests', 'v8-compile-cache');

  // Chromium is found (or installed) once here, not by each browser test file: parallel files
  // racing for apt-get's lock made all but one skip their tests.
  if ([...texts.values()].some((text) => text.includes('launchChromium('))) {
    const chromium = chromiumExecutable();
    if (chromium.path) env.CHROMIUM_PATH = chromium.path;
    else env.CHROMIUM_UNAVAILABLE = chromium.reason;
  }

  // TEST_COMPILE=0 runs the TypeScript under tsx instead (slower; what a single file run does).
  let compiledDir: string | undefined;
  if (process.env.TEST_COMPILE !== '0') {
    // Inside the repository, so that the compiled files find node_modules as the sources do.
    const cacheDir = path.join(REPO_ROOT, 'node_modules', '.cache', 'switchyard-tests');
    mkdirSync(cacheDir, { recursive: true });
    compiledDir = mkdtempSync(path.join(cacheDir, 'run-'));
    // An interrupted run (Ctrl-C) takes its ~13 MB of compiled files with it.
    const built = compiledDir;
    onInterrupt.push(() => rmSync(built, { recursive: true, force: true }));
    const compileStarted = Date.now();
    await compileTests(REPO_ROOT, files, compiledDir);
    console.log(`# compiled ${files.length} test files in ${seconds(Date.now() - compileStarted)} (scripts/compile-tests.ts)`);
    env.TEST_COMPILED_DIR = compiledDir;
    const batchDir = path.join(compiledDir, '_batches');
    mkdirSync(batchDir, { recursive: true });
    jobs.forEach((job, i) => {
      if (job.files.length < 2) return;
      job.entry = path.join(batchDir, `${job.topology}-${i}.mjs`);
      writeFileSync(job.entry, batchEntrySource(job.files.map((file) => ({ name: file, module: compiledPath(built, file) }))));
    });
  }

  // Longest first; a file with no recorded duration is assumed long (it is new, or renamed).
  const unknown = 60_000;
  jobs.sort((a, b) => jobDuration(b, durations, unknown) - jobDuration(a, durations, unknown));

  const results = await runPool(jobs, concurrency, env, compiledDir);
  if (compiledDir) rmSync(compiledDir, { recursive: true, force: true });
  await dropDatabase(env.TEST_DATABASE_URL, template);
  await stopDatabase?.();
  return report(results, started, durations, machineAtStart);
}

/**
 * The test run's connections commit without waiting for their WAL to reach the disk
 * (`synchronous_commit=off`, a session setting postgres.js sends from the URL's query): what a
 * commit makes visible, and when, is unchanged; only a crash of the PostgreSQL server could lose
 * the last commits, which no test does. Measured on a subset of 38 server files in both
 * topologies, alternating: wall 231 and 248 s against 267 and 261 s, PostgreSQL's CPU 108 and
 * 119 s against 127 and 128 s (bench/README.md "test suite"). A setting the URL already names stays.
 */
function withTestSessionSettings(url: string): string {
  const parsed = new URL(url);
  if (!parsed.searchParams.has('synchronous_commit')) parsed.searchParams.set('synchronous_commit', 'off');
  return parsed.toString();
}

/** Process groups of the files running now. */
const runningGroups = new Set<number>();
/** Clean-ups of an interrupted run, after the running files' groups are killed. */
const onInterrupt: Array<() => void> = [];
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  // The files run in process groups of their own, which a terminal's Ctrl-C does not reach.
  process.once(signal, () => {
    for (const pid of runningGroups) killGroup(pid);
    for (const cleanUp of onInterrupt) cleanUp();
    process.exit(130);
  });
}

async function runPool(jobs: Job[], concurrency: number, env: NodeJS.ProcessEnv, compiledDir: string | undefined): Promise<JobResult[]> {
  const results: JobResult[] = [];
  let next = 0;
  const worker = async () => {
    for (let job = jobs[next++]; job !== undefined; job = jobs[next++]) {
      const target = job.entry ?? (compiledDir ? compiledPath(compiledDir, job.files[0]!) : undefined);
      let result = await runFile(job, env, [...REPORT_CPU, ...(target ? [target] : ['--import', 'tsx', job.files[0]!])]);
      if (!result.passed && compiledDir) {
        // Once more with source maps, so the failure's stack names the TypeScript lines; a job
        // that failed stays failed whatever its second run does. A batch's files run again each
        // alone: which failed alone, and which only beside the others (then they disturb each other).
        for (const file of job.files.length > 1 ? filesToRetry(result.output, job.files) : job.files) {
          const again = await runFile({ files: [file], topology: job.topology }, env, ['--enable-source-maps', compiledPath(compiledDir, file)]);
          const what = job.files.length > 1 ? `${file} again, alone,` : 'the same file again,';
          result = { ...result, output: `${result.output}${RETRY_SEPARATOR}${what} with source maps (${again.passed ? 'it passed this time' : 'failed again'}) ----\n${again.output}` };
        }
      }
      results.push(result);
      printResult(result);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return results;
}

function runFile(job: Job, env: NodeJS.ProcessEnv, args: string[]): Promise<JobResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    // A process group of its own, so that whatever the file started (a gateway, Chromium) goes
    // with it when it ends or hangs.
    const child = spawn(process.execPath, ['--test-reporter=spec', ...args], {
      env: { ...env, TEST_TOPOLOGY: job.topology, FORCE_COLOR: '0', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    if (child.pid !== undefined) runningGroups.add(child.pid);
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
    }, FILE_TIMEOUT_MS);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      killGroup(child.pid);
      if (child.pid !== undefined) runningGroups.delete(child.pid);
      let output = Buffer.concat(chunks).toString('utf8');
      let cpuMs = 0;
      output = output.replace(/\n# test-file-cpu-ms (\d+)\n/, (_line, ms: string) => {
        cpuMs = Number(ms);
        return '\n';
      });
      if (timedOut) output += `\n# killed: still running after ${FILE_TIMEOUT_MS / 1000} s (TEST_FILE_TIMEOUT_MS)\n`;
      else if (signal) output += `\n# ended by ${signal}\n`;
      const counts = summaryCounts(output);
      const passed = status === 0 && !timedOut && (counts.fail ?? 0) === 0 && (counts.cancelled ?? 0) === 0;
      resolve({ ...job, ms: Date.now() - started, cpuMs, passed, counts, output });
    });
  });
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // The group is already gone.
  }
}

/** The spec reporter's closing lines: `ℹ tests 12`, `ℹ pass 11`, ... */
function summaryCounts(output: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const match of output.matchAll(/^ℹ (tests|pass|fail|cancelled|skipped|todo) (\d+)$/gm)) counts[match[1]!] = Number(match[2]);
  return counts;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

interface MachineCpu {
  busyMs: number;
  idleMs: number;
}

/** The machine's CPU time since boot from /proc/stat (Linux; undefined elsewhere): busy and idle (idle + iowait). */
function machineCpu(): MachineCpu | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq (then steal, guest: not this machine's work).
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0] = fields;
    const tickMs = 10; // USER_HZ is 100 on every Linux Node.js supports.
    return { busyMs: (user + nice + system + irq + softirq) * tickMs, idleMs: (idle + iowait) * tickMs };
  } catch {
    return undefined;
  }
}

const label = (job: Job) => {
  const files = job.files.length === 1 ? job.files[0]! : `${job.files.length} files in one process (${job.files.map((file) => path.basename(file, '.test.ts')).join(', ')})`;
  return job.topology === 'split' ? `${files} [split]` : files;
};

function printResult(result: JobResult): void {
  const { counts } = result;
  const tally = `${counts.pass ?? 0} passed${counts.fail ? `, ${counts.fail} failed` : ''}${counts.skipped ? `, ${counts.skipped} skipped` : ''}${counts.cancelled ? `, ${counts.cancelled} cancelled` : ''}`;
  if (!result.passed || process.env.TEST_VERBOSE === '1') {
    console.log(`\n# ---- ${label(result)} ----\n${result.output.trimEnd()}`);
  }
  console.log(`${result.passed ? 'ok    ' : 'FAILED'} ${label(result)}: ${tally} (${seconds(result.ms)}, CPU ${seconds(result.cpuMs)})`);
}

function report(results: JobResult[], started: number, durations: Record<string, number>, machineAtStart: MachineCpu | undefined): number {
  const total = (key: string) => results.reduce((sum, result) => sum + (result.counts[key] ?? 0), 0);
  const failed = results.filter((result) => !result.passed);
  console.log('\n# slowest files (wall time, CPU time):');
  for (const result of [...results].sort((a, b) => b.ms - a.ms).slice(0, 10)) console.log(`#   ${seconds(result.ms).padStart(8)} ${seconds(result.cpuMs).padStart(8)}  ${label(result)}`);
  const cpuMs = results.reduce((sum, result) => sum + result.cpuMs, 0);
  const cores = availableParallelism();
  console.log(`# CPU time of the test files: ${seconds(cpuMs)}; on ${cores} cores no schedule could take less than ${seconds(cpuMs / cores)}`);
  const machineAtEnd = machineCpu();
  if (machineAtStart && machineAtEnd) {
    // What the files' figure leaves out: a local PostgreSQL, and processes a file's process did not
    // reap itself (most of Chromium's CPU was missing from it: bench/README.md "test suite").
    const busy = machineAtEnd.busyMs - machineAtStart.busyMs;
    const idle = machineAtEnd.idleMs - machineAtStart.idleMs;
    console.log(`# the machine's CPU over the run (/proc/stat, every process): ${seconds(busy)} busy, ${seconds(idle)} idle`);
  }
  console.log(`# ${total('tests')} tests: ${total('pass')} passed, ${total('fail')} failed, ${total('skipped')} skipped, ${total('cancelled')} cancelled, in ${results.length} runs of files, ${seconds(Date.now() - started)}`);
  if (failed.length > 0) {
    console.log(`# FAILED (${failed.length}):`);
    for (const result of failed) {
      console.log(`#   ${label(result)}`);
      for (const reason of failureReasons(result.output)) console.log(`#     ${reason}`);
    }
  }
  if (process.env.TEST_RECORD_DURATIONS === '1') {
    const recorded = { ...durations };
    for (const result of results) {
      if (result.files.length === 1) {
        recorded[durationKey(result.files[0]!, result.topology)] = result.ms;
        continue;
      }
      // A batch's files: each its own suite's time, as its spec lines tell.
      for (const [file, ms] of suiteDurations(result.output, result.files)) recorded[durationKey(file, result.topology)] = ms;
    }
    const sorted = Object.fromEntries(Object.entries(recorded).sort(([a], [b]) => a.localeCompare(b)));
    writeFileSync(DURATIONS_FILE, `${JSON.stringify(sorted, null, 1)}\n`);
    console.log(`# durations written to ${path.relative(process.cwd(), DURATIONS_FILE)}`);
  }
  return failed.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
