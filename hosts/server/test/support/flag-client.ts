import { Agent, request as httpRequest } from 'node:http';
import { expectStatus, type ApiClient, type ApiResponse, type Json, type RequestOptions } from './rest-client.ts';

/** Paths and small helpers for the flag, segment and evaluate routes, shared by their REST tests. */

export const envFlags = (environmentId: string): string => `/v1/environments/${environmentId}/flags`;
export const projectFlags = (projectId: string): string => `/v1/projects/${projectId}/flags`;
export const segmentsOf = (environmentId: string): string => `/v1/environments/${environmentId}/segments`;
export const evaluatePath = (environmentId: string): string => `/v1/environments/${environmentId}/evaluate`;

export const put = (client: ApiClient, path: string, options?: RequestOptions): Promise<ApiResponse> => client.request('PUT', path, options);
export const patch = (client: ApiClient, path: string, options?: RequestOptions): Promise<ApiResponse> => client.request('PATCH', path, options);

/** Every field of a Flag record (docs/contract.md "Flags and evaluation", plus `archived`). */
export const FLAG_FIELDS = [
  'archived',
  'bucket_by',
  'client_visible',
  'created_at_ms',
  'description',
  'enabled',
  'hashing',
  'key',
  'lifetime',
  'maintainer',
  'off_variant_key',
  'prerequisites',
  'rules',
  'tags',
  'updated_at_ms',
  'value_type',
  'variants',
  'version',
];

/** A string flag with variants `on`/`off`, enabled, serving `off` by default. */
export const onOffFlag = (key: string, rules: unknown[] = [], extra: Record<string, unknown> = {}) => ({
  flag: {
    key,
    description: `flag ${key}`,
    value_type: 'string',
    variants: [
      { key: 'on', value: 'ON' },
      { key: 'off', value: 'OFF' },
    ],
    off_variant_key: 'off',
    rules,
    ...extra,
  },
  enabled: true,
});

/** Creates a flag on an environment route and returns the record; fails the test on anything but 201. */
export async function createFlag(client: ApiClient, token: string, environmentId: string, body: unknown): Promise<Json> {
  return expectStatus(await client.post(envFlags(environmentId), { token, body }), 201, 'create flag');
}

export async function createSegment(client: ApiClient, token: string, environmentId: string, body: unknown): Promise<Json> {
  return expectStatus(await client.post(segmentsOf(environmentId), { token, body }), 201, 'create segment');
}

/** One evaluate call with an SDK key; the body is `{context_key, context_type: 'user', ...extra}`. */
export function evaluate(client: ApiClient, sdkKey: string, environmentId: string, contextKey: string, extra: Record<string, unknown> = {}): Promise<ApiResponse> {
  return client.post(evaluatePath(environmentId), { sdkKey, body: { context_key: contextKey, context_type: 'user', ...extra } });
}

/** Runs `task` over `items` with at most `chunk` requests in flight at once, keeping the order. */
export async function inChunks<T, R>(items: readonly T[], chunk: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += chunk) results.push(...(await Promise.all(items.slice(i, i + chunk).map(task))));
  return results;
}

/**
 * Evaluate calls for bulk tests (thousands of keys): node:http over a keep-alive agent, about twice
 * as fast as fetch, and without the api client's per-exchange bookkeeping. Answers the status and
 * the parsed body. `close()` ends the agent's sockets.
 */
export function bulkEvaluator(base: string, sdkKey: string, environmentId: string): { evaluate(contextKey: string): Promise<{ status: number; body: Json }>; close(): void } {
  const agent = new Agent({ keepAlive: true, maxSockets: 100 });
  const url = new URL(base);
  const path = evaluatePath(environmentId);
  return {
    evaluate(contextKey) {
      const payload = JSON.stringify({ context_key: contextKey, context_type: 'user' });
      const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)), 'x-sdk-key': sdkKey };
      return new Promise((resolve, reject) => {
        const req = httpRequest({ agent, host: url.hostname, port: url.port, method: 'POST', path, headers }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(payload);
      });
    },
    close: () => agent.destroy(),
  };
}
