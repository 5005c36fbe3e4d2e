import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient, Tenant } from './rest-client.ts';
import type { TestServer } from './test-server.ts';

/** A flag as the create body's `flag` object (docs/contract.md "Flags and evaluation"). */
export interface FlagSpec {
  key: string;
  value_type: 'bool' | 'int' | 'double' | 'string' | 'json';
  variants: Array<{ key: string; value: unknown }>;
  enabled: boolean;
  off_variant_key?: string | null;
  rules?: unknown[];
  /** Whether client keys may evaluate it (default: the project's client_visible_default). */
  client_visible?: boolean;
}

/**
 * Creates a flag in the tenant's environment: over REST when the flag routes answer, else
 * through the FlagService with the org admin's principal (the same validation and the same
 * change notification), so evaluation tests do not depend on which routes exist yet.
 */
export async function createFlag(ts: TestServer, client: ApiClient, tenant: Tenant, flag: FlagSpec): Promise<void> {
  const response = await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token: tenant.admin.token, body: { flag } });
  if (response.status !== 404 || !String(response.body?.error ?? '').startsWith('no route')) {
    assert.ok(response.status === 201 || response.status === 202 || response.status === 200, `create flag ${flag.key}: ${response.status} ${response.text}`);
    return;
  }
  const { flags, verifier } = ts.server.services;
  const principal = await verifier.verifyBearer(tenant.admin.token);
  await flags.create(principal, await flags.target(principal, tenant.environmentId, 'environment'), { flag: { ...flag } });
}

/** Changes fields of a flag in the tenant's environment (service call: no route dependency). */
export async function updateFlag(ts: TestServer, tenant: Tenant, key: string, fields: Partial<FlagSpec>): Promise<void> {
  const { flags, verifier } = ts.server.services;
  const principal = await verifier.verifyBearer(tenant.admin.token);
  await flags.update(principal, await flags.target(principal, tenant.environmentId, 'environment'), key, { flag: { ...fields } });
}

/** Retries `probe` until it returns true (snapshots refresh on an asynchronous notification). */
export async function eventually(what: string, probe: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await sleep(25);
  }
  assert.fail(`timed out waiting for ${what}`);
}
