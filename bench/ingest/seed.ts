/**
 * The ingest benchmark's environment and traffic: an org with its own admin, a project, an
 * environment, an SDK key and three event definitions (bool, int, double), seeded through the
 * services (no HTTP); then a handful of distinct 1,000-event bodies, kept both as the JSON an SDK
 * sends and as the table rows the server makes of them (for the raw COPY baseline).
 */
import type { MetricValueType } from '@switchyard/core';
import type { RunningServer } from '../../hosts/server/src/server.ts';

export const METRICS: ReadonlyArray<{ key: string; valueType: MetricValueType }> = [
  { key: 'checkout_completed', valueType: 'bool' },
  { key: 'items_in_cart', valueType: 'int' },
  { key: 'order_value', valueType: 'double' },
];

export interface SeededIngest {
  orgId: string;
  environmentId: string;
  sdkKey: string;
}

export async function seedIngestEnvironment(server: RunningServer, bootstrapAdmin: { email: string; password: string }): Promise<SeededIngest> {
  const { auth, management, eventDefinitions, verifier } = server.services;
  const root = await verifier.verifyBearer((await auth.login(bootstrapAdmin)).accessToken);
  const org = await management.createOrg(root, { name: 'ingest-bench' });
  const orgAdmin = { email: 'ingest-admin@example.com', password: 'ingest-admin-password-1' };
  await management.seedUser(root, org.org_id, { email: orgAdmin.email, displayName: 'Ingest admin', password: orgAdmin.password, orgRole: 'org_admin' });
  const admin = await verifier.verifyBearer((await auth.login({ ...orgAdmin, orgId: org.org_id })).accessToken);

  const project = await management.createProject(admin, org.org_id, { name: 'ingest-bench' });
  const environment = await management.createEnvironment(admin, project.project_id, { name: 'production' });
  const sdkKey = await management.createSdkKey(admin, environment.environment_id);
  if (!sdkKey.raw_key) throw new Error('createSdkKey returned no raw_key');
  const scope = await eventDefinitions.scope(admin, environment.environment_id);
  for (const metric of METRICS) {
    await eventDefinitions.create(admin, scope, { key: metric.key, value_type: metric.valueType, description: `ingest benchmark (${metric.valueType})` });
  }
  return { orgId: org.org_id, environmentId: environment.environment_id, sdkKey: sdkKey.raw_key };
}

/** One event as the SDK sends it. */
interface WireEvent {
  metric_key: string;
  context_type: string;
  context_key: string;
  value?: boolean | number;
  timestamp_ms?: number;
}

/** One events row without its org, environment and receipt time (the server adds those). */
export interface BodyRow {
  metricKey: string;
  contextType: string;
  contextKey: string;
  value: number;
  /** null: the client sent none, so the row gets the receipt time. */
  timestampMs: number | null;
}

export interface EventBody {
  /** The JSON text of `{events: [...]}`. */
  json: string;
  rows: BodyRow[];
}

/**
 * `count` distinct bodies of `size` events each: the three metrics in turn, context keys spread
 * over 100,000 users (no two bodies share a key sequence), client timestamps on all but every
 * tenth event, values that fit each metric's type. Every event is valid, so the server accepts
 * `size` of each body.
 */
export function buildBodies(count: number, size: number, baseTimeMs: number): EventBody[] {
  return Array.from({ length: count }, (_, b) => {
    const events: WireEvent[] = [];
    const rows: BodyRow[] = [];
    for (let i = 0; i < size; i++) {
      const n = b * size + i;
      const metric = METRICS[n % METRICS.length]!;
      const contextKey = `user-${(n * 7919) % 100_000}`;
      const timestampMs = i % 10 === 9 ? null : baseTimeMs - ((n * 37) % 3_600_000);
      let wire: boolean | number;
      let value: number;
      if (metric.valueType === 'bool') {
        wire = n % 4 !== 0;
        value = wire ? 1 : 0;
      } else if (metric.valueType === 'int') {
        wire = 1 + (n % 12);
        value = wire;
      } else {
        wire = Math.round(((n * 7.31) % 500) * 100) / 100;
        value = wire;
      }
      const event: WireEvent = { metric_key: metric.key, context_type: 'user', context_key: contextKey, value: wire };
      if (timestampMs !== null) event.timestamp_ms = timestampMs;
      events.push(event);
      rows.push({ metricKey: metric.key, contextType: 'user', contextKey, value, timestampMs });
    }
    return { json: JSON.stringify({ events }), rows };
  });
}
