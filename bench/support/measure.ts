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
}

export interface Result {
  name: string;
  median: number;
  min: number;
  max: number;
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
  let batch = 1000;
  let sink = 0;
  const warmupEnd = performance.now() + options.warmupMs;
  while (performance.now() < warmupEnd) {
    const start = performance.now();
    sink ^= await workload.run(batch);
    if (performance.now() - start < 20) batch *= 2;
  }
  const rates: number[] = [];
  for (let round = 0; round < options.rounds; round++) {
    let ops = 0;
    const start = performance.now();
    let elapsed = 0;
    while (elapsed < options.roundMs) {
      sink ^= await workload.run(batch);
      ops += batch;
      elapsed = performance.now() - start;
    }
    rates.push((ops / elapsed) * 1000);
  }
  if (sink === 0.5) console.log('unreachable'); // keeps `sink` observable
  return rates;
}

/** Measures every workload (the first is the baseline) and prints the table and the JSON line. */
export async function runBenchmark(bench: string, workloads: Workload[], labels: { ratio?: string } = {}): Promise<Result[]> {
  const rounds = option('rounds', 7);
  const roundMs = option('round-ms', 300);
  const warmupMs = 1000;
  const results: Result[] = [];
  for (const workload of workloads) {
    const rates = await measure(workload, { rounds, roundMs, warmupMs });
    results.push({ name: workload.name, median: median(rates), min: Math.min(...rates), max: Math.max(...rates) });
  }
  const baseline = results[0]!.median;
  const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
  const rows = results.map((r) => [r.name, fmt(r.median), fmt(r.min), fmt(r.max), `${(1e9 / r.median).toFixed(0)} ns`, `${(r.median / baseline).toFixed(2)}x`]);
  const header = ['workload', 'median ops/s', 'min', 'max', 'per op', labels.ratio ?? 'vs baseline'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(`${bench}: node ${process.version}, ${rounds} rounds of ${roundMs} ms after ${warmupMs} ms warm-up, median reported`);
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));
  console.log(
    JSON.stringify({
      bench,
      node: process.version,
      rounds,
      round_ms: roundMs,
      baseline_ops_per_s: Math.round(baseline),
      results: results.map((r) => ({
        name: r.name,
        ops_per_s: Math.round(r.median),
        ns_per_op: Number((1e9 / r.median).toFixed(1)),
        min_ops_per_s: Math.round(r.min),
        max_ops_per_s: Math.round(r.max),
        ratio_to_baseline: Number((r.median / baseline).toFixed(3)),
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
