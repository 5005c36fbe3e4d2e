/**
 * Recompute time of one experiment's results over 1,000,000 participants (2,000,000 exposures) and 10,000,000 events
 * (issue 36's target: a recompute at most 3× one count(*) pass over the events; issue 6's: under 10 s).
 *
 *   npx tsx bench/stats/stats.bench.ts [--exposures 2000000] [--events 10000000] [--runs 3] [--organic-indexes]
 *     [--arrive-events N] [--arrive-exposures N] [--quantiles]
 *
 * Database: BENCH_DATABASE_URL, else TEST_DATABASE_URL, else an embedded PostgreSQL; a fresh
 * database is created for the run and dropped afterwards. The rows are generated inside
 * PostgreSQL (generate_series) with the indexes built after the load (`--organic-indexes`: kept
 * during it, as live traffic builds them — minutes slower), then VACUUM ANALYZE runs, as autovacuum
 * would after such a load.
 *
 * Timed: ResultsComputer.compute — everything a stats job does (look-ups, the aggregation in SQL,
 * the statistics in @switchyard/stats, saving the results) — `--runs` times, median reported:
 * once with no stored participants (the iteration's first recompute builds them), once after
 * new rows arrived (the scheduled recompute: it re-reads only the participants with new rows).
 * Baseline, same run: a bare `SELECT count(*)` over the same events (the floor of any pass over them).
 * Also shown: the staleness probe every results read makes (`is_stale`), and issue 39's added cost:
 * the statistics alone (analyseExperiment over the last recompute's aggregated arms) with the
 * default analysis and with sequential + hybrid + the Bayesian engine + every metric a guardrail,
 * folding each look into the previous one's state, as a scheduled recompute does.
 */
import { loadavg } from 'node:os';
import type { ArmTotals } from '../../packages/core/src/index.ts';
import { DEFAULT_ANALYSIS } from '../../packages/core/src/index.ts';
import { analyseExperiment, plannedWeights } from '../../packages/stats/src/index.ts';
import { connect } from '../../packages/postgres/src/connect.ts';
import { migrate } from '../../packages/postgres/src/migrate.ts';
import { createPostgresRepositories } from '../../packages/postgres/src/repositories.ts';
import { ResultsComputer } from '../../packages/services/src/experiments/results-computer.ts';
import { openBenchDatabase } from '../support/bench-database.ts';
import { median, option } from '../support/measure.ts';
import { ageArrivals, arriveMore, seedExperiment } from './seed.ts';

const sizes = {
  exposures: option('exposures', 2_000_000), events: option('events', 10_000_000), organicIndexes: process.argv.includes('--organic-indexes'),
  // Two quantile metrics on revenue as well (p90 per participant, p90 per event; docs/statistics.md §15).
  quantiles: process.argv.includes('--quantiles'),
};
const runs = option('runs', 3);
/**
 * What one scheduled recompute re-reads by default: the rows of a 14-day experiment of this size
 * received in one interval (5 minutes) and the late-arrival margin before it (2 minutes).
 */
const share = (5 + 2) / (14 * 24 * 60);
const arrivals = { events: option('arrive-events', Math.round(sizes.events * share)), exposures: option('arrive-exposures', Math.round(sizes.exposures * share)) };

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
}

/**
 * The statistics of one recompute, timed alone (ms per call, medians of 5 batches of 200 calls):
 * the default analysis, and every issue-39 reading on (each look folded into the previous state).
 */
function statisticsCost(arms: ArmTotals[], metrics: Parameters<typeof analyseExperiment>[0]['metrics']): { fixed: number[]; everything: number[] } {
  const weights = plannedWeights([{ variant_key: 'control', weight_milli: 500 }, { variant_key: 'treatment', weight_milli: 500 }], arms.map((arm) => arm.variantKey));
  const input = { arms: arms.map((arm, i) => ({ ...arm, plannedWeight: weights[i] ?? 0 })), controlVariantKey: 'control', previous: null, atEnd: false };
  const guarded = metrics.map((metric) => ({ ...metric, guardrail: { margin: 0.01, marginKind: 'relative' as const } }));
  const everything = { ...DEFAULT_ANALYSIS, engine: 'bayesian' as const, sequential: { tuningN: 5000 }, hybrid: true };
  const batch = (analyse: () => void): number[] =>
    Array.from({ length: 5 }, () => {
      const start = performance.now();
      for (let i = 0; i < 200; i += 1) analyse();
      return (performance.now() - start) / 200;
    });
  const fixed = batch(() => analyseExperiment({ ...input, metrics, settings: DEFAULT_ANALYSIS }));
  let state: ReturnType<typeof analyseExperiment>['running'] | null = null;
  const all = batch(() => {
    state = analyseExperiment({ ...input, metrics: guarded, settings: everything, previous: state }).running;
  });
  return { fixed, everything: all };
}

const database = await openBenchDatabase();
const sql = connect(database.url, { poolSize: 4, applicationName: 'switchyard-bench-stats' });
try {
  await migrate(sql);
  const [server] = await sql<{ version: string }[]>`SELECT current_setting('server_version') AS version`;
  const loadBefore = loadavg()[0] ?? 0;
  console.log(`stats: PostgreSQL ${server?.version} (${database.source}), node ${process.version}, load average ${loadBefore.toFixed(2)}`);
  console.log(`seeding ${sizes.exposures.toLocaleString('en-US')} exposures and ${sizes.events.toLocaleString('en-US')} events ...`);
  const seeding = await timed(() => seedExperiment(sql, sizes));
  const vacuum = await timed(() => sql`VACUUM ANALYZE events, exposures`);
  const seeded = seeding.value;
  console.log(`seeded in ${(seeding.ms / 1000).toFixed(1)} s, VACUUM ANALYZE ${(vacuum.ms / 1000).toFixed(1)} s`);

  const repos = createPostgresRepositories(sql);
  // The arms the last aggregation answered, for the statistics-only rows below.
  let lastArms: ArmTotals[] = [];
  const aggregateMetrics = repos.experimentData.aggregateMetrics.bind(repos.experimentData);
  repos.experimentData.aggregateMetrics = async (...args) => (lastArms = await aggregateMetrics(...args));
  const computer = new ResultsComputer(repos);
  const scope = seeded.scope;
  const baseline: number[] = [];
  const build: number[] = [];
  const recompute: number[] = [];
  const staleness: number[] = [];
  let last;
  // Alternated so that cache warmth favours neither side. Each run: the baseline; a recompute
  // with no stored participants (they are dropped first: the first recompute of an iteration,
  // or after its metrics changed); then what arrives between two scheduled recomputes, and the
  // recompute that brings the stored participants up to date.
  for (let run = 0; run < runs; run += 1) {
    baseline.push((await timed(() => sql`SELECT count(*) FROM events WHERE org_id = ${scope.orgId} AND environment_id = ${scope.environmentId}`)).ms);
    // The previous run's arrivals were received "long ago" for this run (its passes model
    // recomputes 5 minutes apart): out of the late-arrival margin, as they would be.
    await ageArrivals(sql);
    await sql`DELETE FROM experiment_participant_sets`;
    build.push((await timed(() => computer.compute(scope.orgId, seeded.experimentId))).ms);
    await arriveMore(sql, seeded, sizes, { ...arrivals, round: run });
    const computed = await timed(() => computer.compute(scope.orgId, seeded.experimentId));
    recompute.push(computed.ms);
    last = computed.value;
    staleness.push((await timed(() => repos.experimentData.dataArrivedSince(scope, { flagKey: 'checkout', metricKeys: ['purchase', 'revenue', 'clicks'], sinceMs: computed.value.computedAtMs }))).ms);
  }

  const statistics = statisticsCost(lastArms, seeded.metrics);
  const rows = [
    { name: 'baseline: SELECT count(*) over the events', runs: baseline },
    { name: 'first recompute (builds the stored participants)', runs: build },
    { name: `recompute after ${arrivals.events.toLocaleString('en-US')} events and ${arrivals.exposures.toLocaleString('en-US')} exposures arrived`, runs: recompute },
    { name: 'staleness probe (is_stale on a results read)', runs: staleness },
    { name: 'statistics only, default analysis (per recompute)', runs: statistics.fixed },
    { name: 'statistics only, sequential + hybrid + bayesian + guardrails', runs: statistics.everything },
  ];
  const base = median(baseline);
  const header = ['workload', 'median ms', 'min', 'max', 'vs baseline'];
  // Sub-10 ms rows (the statistics alone) to the microsecond.
  const ms = (value: number) => value.toFixed(value < 10 ? 3 : 0);
  const cells = rows.map((r) => [r.name, ms(median(r.runs)), ms(Math.min(...r.runs)), ms(Math.max(...r.runs)), `${(median(r.runs) / base).toFixed(r.runs === statistics.fixed || r.runs === statistics.everything ? 4 : 2)}x`]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  const loadAfter = loadavg()[0] ?? 0;
  console.log(`${runs} runs each, median reported; load average at the end ${loadAfter.toFixed(2)}`);
  // The database server shares the machine: other work inflates every figure, the baseline too.
  if (loadAfter > 1) console.log(`NOTE: the machine was busy (1-minute load ${loadAfter.toFixed(2)}); figures are inflated.`);
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const c of cells) console.log(line(c));
  for (const variant of last?.variantResults ?? []) {
    const fmt = (v: number | null | undefined) => (v === null || v === undefined ? '-' : v.toPrecision(4));
    console.log(`  ${variant.variantKey}: ${variant.participantCount.toLocaleString('en-US')} participants, purchase ${fmt(variant.metricValues.purchase)}, revenue ${fmt(variant.metricValues.revenue)}, clicks ${fmt(variant.metricValues.clicks)}, p ${variant.pValuePresent ? fmt(variant.pValue) : '-'}`);
  }
  console.log(
    JSON.stringify({
      bench: 'stats',
      postgres: server?.version,
      database: database.source,
      exposures: sizes.exposures,
      events: sizes.events,
      participants: seeded.participants,
      organic_indexes: sizes.organicIndexes,
      quantiles: sizes.quantiles,
      runs,
      seed_ms: Math.round(seeding.ms),
      baseline_count_ms: Math.round(base),
      first_recompute_ms: Math.round(median(build)),
      first_recompute_ratio: Number((median(build) / base).toFixed(2)),
      arrived_events: arrivals.events,
      arrived_exposures: arrivals.exposures,
      recompute_ms: Math.round(median(recompute)),
      recompute_min_ms: Math.round(Math.min(...recompute)),
      recompute_max_ms: Math.round(Math.max(...recompute)),
      staleness_probe_ms: Number(median(staleness).toFixed(2)),
      statistics_default_ms: Number(median(statistics.fixed).toFixed(3)),
      statistics_issue39_ms: Number(median(statistics.everything).toFixed(3)),
      issue39_added_share_of_recompute: Number(((median(statistics.everything) - median(statistics.fixed)) / median(recompute)).toFixed(5)),
      ratio_to_baseline: Number((median(recompute) / base).toFixed(2)),
      target_ms: 10_000,
      load_average: Number(loadAfter.toFixed(2)),
    }),
  );
} finally {
  await sql.end({ timeout: 5 });
  await database.drop();
}
