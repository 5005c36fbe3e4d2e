/**
 * Short test files run several to a process (scripts/run-tests.ts, issue 35).
 *
 * Why: most of a short server test file's CPU is the fixed cost of a process — Node starting,
 * loading the server's modules (~1.1-1.4 s of CPU: fastify, grpc-js, protobufjs, ajv, the bundle)
 * and compiling hot code again — not its tests. Files run one after another in one process share
 * that cost: the modules load once and stay compiled. Each file still starts its own servers and
 * databases, in hooks of its own: a batch's entry wraps each file's import in a `describe` named
 * after the file, so node:test scopes the file's top-level tests and `before`/`after` hooks to that
 * suite (its servers stop before the next file starts), and a failure names its file.
 *
 * Browser files share one Chromium too (support/browser.ts, launchChromium), each file with browser
 * contexts of its own.
 *
 * Not batched: files that take long anyway (the fixed cost is a small part of them), files that
 * act on their process (exit, process-wide listeners, a replaced global `fetch`, reserving one of
 * its outcome stores), and files that say `// test-batch: alone` with their reason.
 */

/** A file recorded as taking longer than this (wall time under the pool) runs alone. */
export const BATCH_FILE_MAX_MS = 40_000;
/** A batch holds files recorded at up to this much wall time in all, and at most BATCH_MAX_FILES. */
export const BATCH_MAX_MS = 120_000;
export const BATCH_MAX_FILES = 20;

/** Whether a file's text lets it share its process with other files. */
export function mayShareProcess(text: string): boolean {
  if (/^\/\/ test-batch: alone\b/m.test(text)) return false;
  // Outcome stores (core's outcomes.ts) are a process-wide resource of 4, of which a server takes
  // 3: a file reserving its own (directly, or through a ResultJsonCache) beside server files fails.
  return !/\bprocess\.exit\(|\bprocess\.on\(|\bglobalThis\.fetch\s*=[^=]|\breserveOutcomeStore\(|\bnew ResultJsonCache\(/.test(text);
}

/**
 * Groups files into batches: those that may share a process and are recorded as short, in batches
 * of similar total time (first fit over the files longest first); every other file alone. A file
 * with no recorded time (new or renamed) runs alone, once, until it has one.
 */
export function planBatches(files: string[], durationOf: (file: string) => number | undefined, mayShare: (file: string) => boolean): string[][] {
  const alone: string[][] = [];
  const short: Array<{ file: string; ms: number }> = [];
  for (const file of files) {
    const ms = durationOf(file);
    if (ms !== undefined && ms <= BATCH_FILE_MAX_MS && mayShare(file)) short.push({ file, ms });
    else alone.push([file]);
  }
  short.sort((a, b) => b.ms - a.ms || a.file.localeCompare(b.file));
  const batches: Array<{ files: string[]; ms: number }> = [];
  for (const { file, ms } of short) {
    const fits = batches.find((batch) => batch.files.length < BATCH_MAX_FILES && batch.ms + ms <= BATCH_MAX_MS);
    if (fits) {
      fits.files.push(file);
      fits.ms += ms;
    } else {
      batches.push({ files: [file], ms });
    }
  }
  return [...alone, ...batches.map((batch) => batch.files)];
}

/**
 * The entry module of a batch: each file imported inside a suite named after it (its path relative
 * to the repository), one after another. `imports` are the files' module paths (absolute).
 */
export function batchEntrySource(files: Array<{ name: string; module: string }>): string {
  const lines = [
    "import { after, describe } from 'node:test';",
    "import { pathToFileURL } from 'node:url';",
    // What the files share (test-server.ts: servers of files that say `share: true`), ended after the last file.
    'const batch = (globalThis.__switchyardTestBatch = { cleanups: [] });',
    'after(async () => { for (const cleanUp of batch.cleanups.splice(0)) await cleanUp(); });',
  ];
  for (const { name, module } of files) {
    lines.push(`describe(${JSON.stringify(name)}, async () => { await import(pathToFileURL(${JSON.stringify(module)}).href); });`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * The files of a failed batch to run again alone: those whose suite failed, and those whose suite
 * never closed (the process died or hung first).
 */
export function filesToRetry(output: string, names: string[]): string[] {
  const closed = new Map<string, boolean>();
  for (const match of output.matchAll(/^([✔✖]) (\S+) \(\d+(?:\.\d+)?ms\)$/gm)) closed.set(match[2]!, match[1] === '✔');
  return names.filter((name) => closed.get(name) !== true);
}

/**
 * Each file's own time in a batch's spec output: its suite's closing line, `✔ <name> (<ms>ms)` (or
 * ✖), at the start of a line. Files whose line is missing (the process died first) are left out.
 */
export function suiteDurations(output: string, names: string[]): Map<string, number> {
  const wanted = new Set(names);
  const found = new Map<string, number>();
  for (const match of output.matchAll(/^[✔✖] (\S+) \((\d+(?:\.\d+)?)ms\)$/gm)) {
    if (wanted.has(match[1]!)) found.set(match[1]!, Math.round(Number(match[2])));
  }
  return found;
}
