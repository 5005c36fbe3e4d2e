/**
 * Seeds one ACTIVE experiment with its exposures and events straight into PostgreSQL: tenancy rows,
 * the flag (50/50 split) and event definitions through the repositories, then the bulk rows with
 * `INSERT ... SELECT ... FROM generate_series` — the database generates them, nothing is sent row by
 * row from Node.
 */
import { DEFAULT_ANALYSIS, metricFromKey, type EnvironmentScope, type ExperimentMetric } from '../../packages/core/src/index.ts';
import type { Sql } from '../../packages/postgres/src/connect.ts';
import { createPostgresRepositories } from '../../packages/postgres/src/repositories.ts';

export interface SeedSizes {
  exposures: number;
  events: number;
  /**
   * Keep the indexes while loading (as live traffic builds them: slow, and the btree pages end up
   * in random order) instead of dropping them and building them afterwards (fast, packed in order).
   */
  organicIndexes?: boolean;
  /** Add two quantile metrics on revenue (docs/statistics.md §15): p90 per participant and p90 per event. */
  quantiles?: boolean;
}

export interface SeededExperiment {
  scope: EnvironmentScope;
  experimentId: string;
  /** Distinct contexts exposed (each exposed twice when exposures = 2 × participants). */
  participants: number;
  metrics: ExperimentMetric[];
}

/** Iteration start: every generated timestamp is after it. */
export const T0 = Date.UTC(2030, 0, 1);

export async function seedExperiment(sql: Sql, sizes: SeedSizes): Promise<SeededExperiment> {
  const repos = createPostgresRepositories(sql);
  const org = await repos.orgs.create({ name: 'bench-stats' });
  const project = await repos.projects.create({ orgId: org.id }, { name: 'shop' });
  const environment = await repos.environments.create({ orgId: org.id, projectId: project.id }, { name: 'production' });
  const scope = { orgId: org.id, projectId: project.id, environmentId: environment.id };
  await repos.flags.createDefinition(scope, {
    key: 'checkout', description: 'the checkout under test', value_type: 'string',
    variants: [{ key: 'control', value: 'old' }, { key: 'treatment', value: 'new' }],
  });
  await repos.flags.updateState(scope, 'checkout', {
    enabled: true,
    rules: [{ id: 'split', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'control', weight_milli: 500 }, { variant_key: 'treatment', weight_milli: 500 }] } }],
  });
  await repos.eventDefinitions.create(scope, { key: 'purchase', description: '', valueType: 'bool' });
  await repos.eventDefinitions.create(scope, { key: 'revenue', description: '', valueType: 'double' });
  await repos.eventDefinitions.create(scope, { key: 'clicks', description: '', valueType: 'int' });
  const experiment = await repos.experiments.create(scope, {
    name: 'bench', description: '', flagKey: 'checkout', variantKeys: ['control', 'treatment'],
    metrics: [
      metricFromKey('purchase', 'bool'), metricFromKey('revenue', 'double'), metricFromKey('clicks', 'int'),
      ...(sizes.quantiles ? [
        { ...metricFromKey('revenue', 'double'), key: 'revenue_p90', quantile: { p: 0.9, unit: 'participant' as const } },
        { ...metricFromKey('revenue', 'double'), key: 'revenue_p90_event', aggregation: 'count' as const, quantile: { p: 0.9, unit: 'event' as const } },
      ] : []),
    ],
    trafficAllocation: 1,
    ruleId: null, controlVariantKey: 'control', analysis: DEFAULT_ANALYSIS,
  });
  await repos.experiments.transition(scope, experiment.id, { from: 'EXPERIMENT_STATUS_DRAFT', to: 'EXPERIMENT_STATUS_ACTIVE', atMs: T0 });

  // Building an index once after the load is minutes faster than maintaining it per row; the
  // definitions are read back from the catalog, so they are exactly schema.sql's.
  const rebuilt = sizes.organicIndexes ? [] : await sql<{ name: string; definition: string }[]>`
    SELECT indexname AS name, indexdef AS definition FROM pg_indexes
    WHERE schemaname = current_schema() AND tablename IN ('events', 'exposures')`;
  for (const index of rebuilt) await sql`DROP INDEX ${sql(index.name)}`;

  // Exposures: each participant u twice (g and g + P), the variant by u's parity; 1% of them see
  // the other variant on their second exposure (first exposure wins). Time order = heap order.
  const participants = Math.max(1, Math.floor(sizes.exposures / 2));
  // Received over the days before the run (client timestamps are in 2030): older than any
  // recompute's late-arrival margin, as an experiment's history is.
  const received = Date.now() - 3 * 86_400_000;
  await sql`
    INSERT INTO exposures (org_id, environment_id, flag_key, variant_key, context_type, context_key, timestamp_ms, received_at_ms)
    SELECT ${org.id}::uuid, ${environment.id}::uuid, 'checkout',
      CASE WHEN (x.u % 2 = 0) <> (x.g > ${participants} AND x.u % 100 = 0) THEN 'control' ELSE 'treatment' END,
      'user', 'user-' || x.u, ${T0}::int8 + x.g, ${received}::int8 + x.g
    FROM (SELECT g, (g - 1) % ${participants} AS u FROM generate_series(1, ${sizes.exposures}::int8) AS g) x`;

  // Events after the exposures: 10% purchase (bool; treatment converts 12%, control 10%), 30% revenue
  // (double), 60% clicks (int), over 1.2 × P contexts (a sixth never exposed). The context is a
  // multiplicative hash of g (Knuth's constant modulo the prime 2^32 - 5), so consecutive events
  // belong to scattered contexts as in real traffic, and no metric favours a variant by construction.
  const contexts = Math.ceil(participants * 1.2);
  const start = T0 + sizes.exposures + 1;
  await sql`
    INSERT INTO events (org_id, environment_id, metric_key, context_type, context_key, value, timestamp_ms, received_at_ms)
    SELECT ${org.id}::uuid, ${environment.id}::uuid,
      CASE WHEN x.g % 10 = 0 THEN 'purchase' WHEN x.g % 10 < 4 THEN 'revenue' ELSE 'clicks' END,
      'user', 'user-' || x.c,
      CASE WHEN x.g % 10 = 0 THEN (CASE WHEN (x.g / 10) % 100 < (CASE WHEN x.c % 2 = 1 THEN 12 ELSE 10 END) THEN 1 ELSE 0 END)
           WHEN x.g % 10 < 4 THEN ((x.g * 31) % 10000) / 100.0
           ELSE 1 + x.g % 3 END,
      ${start}::int8 + x.g / 10, ${received + sizes.exposures + 1}::int8 + x.g / 10
    FROM (SELECT g, ((g * 2654435761) % 4294967291) % ${contexts} AS c FROM generate_series(1, ${sizes.events}::int8) AS g) x`;
  if (rebuilt.length > 0) {
    await sql.begin(async (tx) => {
      await tx`SELECT set_config('maintenance_work_mem', '512MB', true)`;
      // A partitioned table's index is listed `ON ONLY` (parent alone); built plainly it covers the partitions.
      for (const index of rebuilt) await tx.unsafe(index.definition.replace(' ON ONLY ', ' ON '));
    });
  }
  return { scope, experimentId: experiment.id, participants, metrics: experiment.metrics };
}

/**
 * What arrives between two recomputes: `events` new events over existing contexts (the same
 * scattering as the seed's) and `exposures` first exposures of new contexts, received now, with
 * client timestamps after everything seeded. `round` makes each call's rows different.
 */
export async function arriveMore(sql: Sql, seeded: SeededExperiment, sizes: SeedSizes, more: { events: number; exposures: number; round: number }): Promise<void> {
  const { orgId, environmentId } = seeded.scope;
  const at = T0 + sizes.exposures + sizes.events + 1_000_000 * (more.round + 1);
  const contexts = Math.ceil(seeded.participants * 1.2);
  await sql`
    INSERT INTO exposures (org_id, environment_id, flag_key, variant_key, context_type, context_key, timestamp_ms, received_at_ms)
    SELECT ${orgId}::uuid, ${environmentId}::uuid, 'checkout', CASE WHEN g % 2 = 0 THEN 'control' ELSE 'treatment' END,
      'user', 'new-' || ${more.round}::int4 || '-' || g, ${at}::int8 + g, ${Date.now()}::int8
    FROM generate_series(1, ${more.exposures}::int8) AS g`;
  await sql`
    INSERT INTO events (org_id, environment_id, metric_key, context_type, context_key, value, timestamp_ms, received_at_ms)
    SELECT ${orgId}::uuid, ${environmentId}::uuid, CASE WHEN g % 3 = 0 THEN 'purchase' WHEN g % 3 = 1 THEN 'revenue' ELSE 'clicks' END,
      'user', 'user-' || ((g * 2654435761 + ${more.round}::int8 * 7919) % 4294967291) % ${contexts}, 1, ${at}::int8 + g, ${Date.now()}::int8
    FROM generate_series(1, ${more.events}::int8) AS g`;
}

/** Moves rows received in the last hour a day back, out of any recompute's late-arrival margin. */
export async function ageArrivals(sql: Sql): Promise<void> {
  const recent = Date.now() - 3_600_000;
  await sql`UPDATE events SET received_at_ms = received_at_ms - 86400000 WHERE received_at_ms > ${recent}::int8`;
  await sql`UPDATE exposures SET received_at_ms = received_at_ms - 86400000 WHERE received_at_ms > ${recent}::int8`;
}
