/**
 * Shared timing loop for the micro-benchmarks: calibrate a batch size, warm up so the figures are
 * for optimised code, run several timed rounds, report the median next to a baseline measured in
 * the same process, as a table and one JSON line.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface Workload {
  name: string;
  /** Runs `n` operations and returns something derived from each so nothing is optimised away. */
  run: (n: number) => number | Promise<number>;
  /**
   * Interleaved runs only: workloads of a later phase are measured after every round of the
   * earlier ones (default 0). For workloads whose code would change how the others run: a path
   * that feeds the same code other shapes of objects leaves its call sites slower for everyone.
   */
  phase?: number;
}

export interface Result {
  name: string;
  median: number;
  min: number;
  max: number;
  /** The median of this workload's rate over the baseline's, round by round (interleaved runs; else median over the baseline's median). */
  ratio: number;
}

export interface BenchmarkOptions {
  ratio?: string;
  /**
   * Run the workloads' rounds in turn (round 1 of each, then round 2 of each, ...) and time each
   * round in this process's CPU time rather than wall time: on a shared machine, load that comes
   * and goes then falls on every workload alike, and time spent descheduled is not counted. The
   * ratio column is then the median of each round's ratio to the baseline's round next to it.
   */
  interleaved?: boolean;
}

/** This process's CPU time (user + system), in milliseconds. */
function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/** A batch size that takes at least 20 ms, after `warmupMs` of warm-up so the figures are for optimised code. */
async function warmUp(workload: Workload, warmupMs: number): Promise<{ batch: number; sink: number }> {
  let batch = 1000;
  let sink = 0;
  const warmupEnd = performance.now() + warmupMs;
  while (performance.now() < warmupEnd) {
    const start = performance.now();
    sink ^= await workload.run(batch);
    if (performance.now() - start < 20) batch *= 2;
  }
  return { batch, sink };
}

/**
 * ops per second of one round of at least `roundMs` as `clock` (milliseconds) counts them: wall
 * time (performance.now) or this process's CPU time (cpuMs).
 */
async function timedRound(workload: Workload, batch: number, roundMs: number, clock: () => number): Promise<{ rate: number; sink: number }> {
  let ops = 0;
  let sink = 0;
  const start = clock();
  let elapsed = 0;
  while (elapsed < roundMs) {
    sink ^= await workload.run(batch);
    ops += batch;
    elapsed = clock() - start;
  }
  return { rate: (ops / elapsed) * 1000, sink };
}

const wallMs = (): number => performance.now();

/** Every workload's rates, rounds interleaved within each phase and timed in CPU time (BenchmarkOptions.interleaved). */
async function measureInterleaved(workloads: Workload[], options: { rounds: number; roundMs: number; warmupMs: number }): Promise<number[][]> {
  const rates: number[][] = workloads.map(() => []);
  const phases = [...new Set(workloads.map((w) => w.phase ?? 0))].sort((a, b) => a - b);
  let sink = 0;
  for (const phase of phases) {
    const members = workloads.flatMap((workload, w) => ((workload.phase ?? 0) === phase ? [w] : []));
    sink ^= await measurePhase(workloads, members, rates, options);
  }
  if (sink === 0.5) console.log('unreachable'); // keeps `sink` observable
  return rates;
}

/** Warms up the `members` workloads, then times their rounds in turn into `rates`. */
async function measurePhase(workloads: Workload[], members: number[], rates: number[][], options: { rounds: number; roundMs: number; warmupMs: number }): Promise<number> {
  let sink = 0;
  const batches = new Map<number, number>();
  for (const w of members) {
    const warm = await warmUp(workloads[w]!, options.warmupMs);
    batches.set(w, warm.batch);
    sink ^= warm.sink;
  }
  for (let round = 0; round < options.rounds; round++) {
    for (const w of members) {
      const timed = await timedRound(workloads[w]!, batches.get(w)!, options.roundMs, cpuMs);
      rates[w]!.push(timed.rate);
      sink ^= timed.sink;
    }
  }
  return sink;
}

export function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : Number.NaN;
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** ops/s of each timed round, after warm-up. */
export async function measure(workload: Workload, options: { rounds: number; roundMs: number; warmupMs: number }): Promise<number[]> {
  const warm = await warmUp(workload, options.warmupMs);
  let sink = warm.sink;
  const rates: number[] = [];
  for (let round = 0; round < options.rounds; round++) {
    const timed = await timedRound(workload, warm.batch, options.roundMs, wallMs);
    rates.push(timed.rate);
    sink ^= timed.sink;
  }
  if (sink === 0.5) console.log('unreachable'); // keeps `sink` observable
  return rates;
}

/** Measures every workload (the first is the baseline) and prints the table and the JSON line. */
export async function runBenchmark(bench: string, workloads: Workload[], labels: BenchmarkOptions = {}): Promise<Result[]> {
  const rounds = option('rounds', 7);
  const roundMs = option('round-ms', 300);
  const warmupMs = 1000;
  const interleaved = labels.interleaved === true;
  let allRates: number[][];
  if (interleaved) {
    allRates = await measureInterleaved(workloads, { rounds, roundMs, warmupMs });
  } else {
    allRates = [];
    for (const workload of workloads) allRates.push(await measure(workload, { rounds, roundMs, warmupMs }));
  }
  const baselineRates = allRates[0]!;
  const results: Result[] = workloads.map((workload, w) => {
    const rates = allRates[w]!;
    const ratio = interleaved ? median(rates.map((rate, round) => rate / baselineRates[round]!)) : median(rates) / median(baselineRates);
    return { name: workload.name, median: median(rates), min: Math.min(...rates), max: Math.max(...rates), ratio };
  });
  const baseline = results[0]!.median;
  const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
  const rows = results.map((r) => [r.name, fmt(r.median), fmt(r.min), fmt(r.max), `${(1e9 / r.median).toFixed(0)} ns`, `${r.ratio.toFixed(2)}x`]);
  const header = ['workload', 'median ops/s', 'min', 'max', 'per op', labels.ratio ?? 'vs baseline'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const timing = interleaved ? `${rounds} interleaved rounds of ${roundMs} ms of CPU time` : `${rounds} rounds of ${roundMs} ms`;
  console.log(`${bench}: node ${process.version}, ${timing} after ${warmupMs} ms warm-up, median reported${interleaved ? ' (ops per CPU second)' : ''}`);
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));
  console.log(
    JSON.stringify({
      bench,
      node: process.version,
      rounds,
      round_ms: roundMs,
      timing: interleaved ? 'interleaved rounds, CPU time' : 'consecutive rounds, wall time',
      baseline_ops_per_s: Math.round(baseline),
      results: results.map((r) => ({
        name: r.name,
        ops_per_s: Math.round(r.median),
        ns_per_op: Number((1e9 / r.median).toFixed(1)),
        min_ops_per_s: Math.round(r.min),
        max_ops_per_s: Math.round(r.max),
        ratio_to_baseline: Number(r.ratio.toFixed(3)),
      })),
    }),
  );
  return results;
}

/**
 * A full garbage collection of this process now (V8's `gc()`, exposed for the call): a benchmark
 * runs it once its setup is done, so the setup's garbage (seeding, compiling, sample requests) is
 * not collected during, and charged to, whichever target happens to run when V8 gets to it.
 */
export function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}
