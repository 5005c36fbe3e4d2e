/**
 * Where a test run's CPU went: sums the V8 CPU profiles that `TEST_CPU_PROF=DIR npm test` writes
 * (one per test process and per host it spawned, scripts/run-tests.ts) by kind of process, by
 * category (module loading, garbage collection, each package, this repository's code, Node's
 * internals) and by function (self time).
 *
 *   TEST_CPU_PROF=/tmp/prof npm test [filters]
 *   npx tsx scripts/cpu-profile-summary.ts /tmp/prof [--top 25]
 *
 * Time is counted in samples, not in the profile's time deltas: V8 samples a running thread every
 * millisecond (the default `--cpu-prof-interval`), and a thread descheduled on a busy machine is
 * not sampled meanwhile, but the next sample's delta covers the whole gap, so deltas would charge
 * the wait to whatever ran just before it (on 2 shared cores, socket writes that woke PostgreSQL
 * looked like 4% of the suite). Samples × 1 ms approximates CPU time; idle samples are left out.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: CallFrame; children?: number[] }>;
  samples: number[];
}

export type ProcessKind = 'test batch' | 'test file' | 'gateway host' | 'services host' | 'server host' | 'other';

/** The process a profile came from, told by the scripts it ran. */
export function processKind(profile: CpuProfile): ProcessKind {
  const urls = profile.nodes.map((node) => node.callFrame.url);
  if (urls.some((url) => url.includes('/_batches/'))) return 'test batch';
  if (urls.some((url) => /\.test\.[jt]s$/.test(url))) return 'test file';
  if (urls.some((url) => /hosts\/gateway\/src\/main\.[jt]s$/.test(url))) return 'gateway host';
  if (urls.some((url) => /hosts\/services\/src\/main\.[jt]s$/.test(url))) return 'services host';
  if (urls.some((url) => /hosts\/server\/src\/main\.[jt]s$/.test(url))) return 'server host';
  return 'other';
}

/** Loading modules, wherever the frame is: Node's loaders and the compilers they call. */
const MODULE_LOADING_FUNCTIONS = new Set(['wrapSafe', 'compileSourceTextModule', 'compileForInternalLoader', 'parseCJS', 'parseSource']);

/** The category a sampled frame's self time counts under. */
export function categoryOf(frame: CallFrame): string {
  const { functionName, url } = frame;
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (url.startsWith('node:internal/modules') || MODULE_LOADING_FUNCTIONS.has(functionName) || url.includes('cjs-module-lexer')) return 'module loading';
  if (url === '') return functionName === '(program)' ? 'V8 (program)' : 'native code (no script)';
  // The compiled test run (scripts/compile-tests.ts) lives under node_modules/.cache: it is ours.
  if (url.includes('/node_modules/.cache/')) return 'this repository (compiled)';
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return `package ${pkg[1]}`;
  if (url.startsWith('node:')) {
    const internal = /^node:internal\/([^/]+)/.exec(url);
    return internal ? `node:internal/${internal[1]}` : url.split('/')[0]!;
  }
  const workspace = /\/(packages|hosts|scripts|test|bench)\/([^/]+)/.exec(url);
  if (workspace) return `this repository: ${workspace[1]}/${workspace[2]}`;
  return 'other';
}

export interface Summary {
  /** Non-idle samples of every profile (≈ CPU milliseconds). */
  samples: number;
  byKind: Map<ProcessKind, { processes: number; samples: number }>;
  byCategory: Map<string, number>;
  /** Self samples by `function file:line`. */
  byFunction: Map<string, number>;
}

const add = <K>(map: Map<K, number>, key: K, n: number) => map.set(key, (map.get(key) ?? 0) + n);

export function summarize(profiles: CpuProfile[]): Summary {
  const summary: Summary = { samples: 0, byKind: new Map(), byCategory: new Map(), byFunction: new Map() };
  for (const profile of profiles) {
    const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
    const kind = processKind(profile);
    const entry = summary.byKind.get(kind) ?? { processes: 0, samples: 0 };
    entry.processes += 1;
    summary.byKind.set(kind, entry);
    const selfSamples = new Map<number, number>();
    for (const id of profile.samples) add(selfSamples, id, 1);
    for (const [id, count] of selfSamples) {
      const frame = frames.get(id);
      if (frame === undefined || frame.functionName === '(idle)') continue;
      summary.samples += count;
      entry.samples += count;
      add(summary.byCategory, categoryOf(frame), count);
      add(summary.byFunction, `${frame.functionName || '(anonymous)'} ${frame.url.split('/').pop() || '(native)'}:${frame.lineNumber + 1}`, count);
    }
  }
  return summary;
}

function print(summary: Summary, top: number): void {
  const seconds = (samples: number) => `${(samples / 1000).toFixed(1).padStart(8)} s`;
  const share = (samples: number) => `${((100 * samples) / Math.max(1, summary.samples)).toFixed(1).padStart(5)}%`;
  const sorted = <K>(map: Map<K, number>) => [...map].sort((a, b) => b[1] - a[1]).slice(0, top);
  console.log(`# ${seconds(summary.samples).trim()} of CPU sampled (non-idle samples × 1 ms)`);
  console.log('\n# by process');
  for (const [kind, { processes, samples }] of [...summary.byKind].sort((a, b) => b[1].samples - a[1].samples)) {
    console.log(`${seconds(samples)} ${share(samples)}  ${kind} (${processes} processes)`);
  }
  console.log('\n# by category (self time)');
  for (const [category, samples] of sorted(summary.byCategory)) console.log(`${seconds(samples)} ${share(samples)}  ${category}`);
  console.log('\n# by function (self time)');
  for (const [name, samples] of sorted(summary.byFunction)) console.log(`${seconds(samples)} ${share(samples)}  ${name}`);
}

function main(): void {
  const args = process.argv.slice(2);
  const dir = args.find((arg, i) => !arg.startsWith('--') && args[i - 1] !== '--top');
  if (dir === undefined) {
    console.error('usage: npx tsx scripts/cpu-profile-summary.ts <TEST_CPU_PROF directory> [--top N]');
    process.exit(2);
  }
  const topIndex = args.indexOf('--top');
  const top = topIndex >= 0 ? Number(args[topIndex + 1]) : 25;
  const files = readdirSync(dir).filter((file) => file.endsWith('.cpuprofile'));
  const profiles = files.map((file) => JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as CpuProfile);
  console.log(`# ${profiles.length} profiles in ${dir}`);
  print(summarize(profiles), top);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main();
