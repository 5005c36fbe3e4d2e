import { createFlag } from './flag-client.ts';
import { expectStatus, type ApiClient, type ApiResponse, type Json, type Tenant } from './rest-client.ts';

/** Paths and setup shared by the experiment and stats REST tests. */

export const experimentsOf = (environmentId: string): string => `/v1/environments/${environmentId}/experiments`;
export const experimentPath = (environmentId: string, experimentId: string): string => `${experimentsOf(environmentId)}/${experimentId}`;

/** Every field of an Experiment record (docs/contract.md "Records"). */
export const EXPERIMENT_FIELDS = [
  'analysis', 'control_variant_key', 'created_at_ms', 'description', 'environment_id', 'flag_key', 'id', 'metric_keys', 'metrics', 'name', 'rule_id', 'status',
  'traffic_allocation', 'updated_at_ms', 'variant_keys', 'version',
];
export const ITERATION_FIELDS = ['ended_at_ms', 'experiment_id', 'id', 'iteration_number', 'metric_keys', 'started_at_ms', 'traffic_allocation'];
export const JOB_FIELDS = ['completed_at_ms', 'created_at_ms', 'error', 'job_id', 'started_at_ms', 'status'];

export const DRAFT = 'EXPERIMENT_STATUS_DRAFT';
export const ACTIVE = 'EXPERIMENT_STATUS_ACTIVE';
export const PAUSED = 'EXPERIMENT_STATUS_PAUSED';
export const CONCLUDED = 'EXPERIMENT_STATUS_CONCLUDED';

/** A string flag `key` with variants control/treatment split 50/50 for everyone, enabled. */
export const splitFlag = (key: string) => ({
  flag: {
    key,
    value_type: 'string',
    variants: [
      { key: 'control', value: 'old' },
      { key: 'treatment', value: 'new' },
    ],
    off_variant_key: 'control',
    rules: [{ id: 'split', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'control', weight_milli: 500 }, { variant_key: 'treatment', weight_milli: 500 }] } }],
  },
  enabled: true,
});

/** Registers an event definition (202). */
export async function defineMetric(client: ApiClient, tenant: Tenant, key: string, valueType: 'bool' | 'int' | 'double'): Promise<void> {
  expectStatus(
    await client.post(`/v1/environments/${tenant.environmentId}/event-definitions`, { token: tenant.admin.token, body: { key, value_type: valueType } }),
    202,
    `define ${key}`,
  );
}

/** The tenant's environment gets the split flag `flagKey` and the metrics purchase (bool) and revenue (double). */
export async function prepareEnvironment(client: ApiClient, tenant: Tenant, flagKey = 'checkout'): Promise<void> {
  await createFlag(client, tenant.admin.token, tenant.environmentId, splitFlag(flagKey));
  await defineMetric(client, tenant, 'purchase', 'bool');
  await defineMetric(client, tenant, 'revenue', 'double');
}

/** Creates an experiment (201) and returns the record. */
export async function createExperiment(client: ApiClient, tenant: Tenant, body: Record<string, unknown> = {}): Promise<Json> {
  return expectStatus(
    await client.post(experimentsOf(tenant.environmentId), { token: tenant.admin.token, body: { name: 'checkout test', flag_key: 'checkout', ...body } }),
    201,
    'create experiment',
  );
}

/** POST .../transitions with `{new_status, ...extra}`. */
export function transition(client: ApiClient, tenant: Tenant, experimentId: string, newStatus: string, extra: Record<string, unknown> = {}, path = 'transitions'): Promise<ApiResponse> {
  return client.post(`${experimentPath(tenant.environmentId, experimentId)}/${path}`, { token: tenant.admin.token, body: { new_status: newStatus, ...extra } });
}

/** Moves an experiment along legal transitions and returns the last record. */
export async function moveThrough(client: ApiClient, tenant: Tenant, experimentId: string, statuses: string[]): Promise<Json> {
  let record: Json;
  for (const status of statuses) record = expectStatus(await transition(client, tenant, experimentId, status), 200, `transition to ${status}`);
  return record;
}
