import { expectStatus, type Json } from '../../rest-client.ts';
import { freshFlag } from '../fixtures.ts';
import { STAGING, editor, rest, viewer, type RestDescriptor, type RowContext } from '../rest-descriptor.ts';
import type { World } from '../world.ts';

/**
 * Scheduled changes and revert (docs/workflow.md "Scheduled changes", "Revert"): staging content,
 * like the flag's rules. Reading needs viewer on staging; scheduling, editing, cancelling and
 * reverting editor there. Every row works on a schedule of its own (a cancel ends it), a year
 * ahead so the scheduler never applies it during the table.
 */

const flags = ({ world }: RowContext, rest: string) => `/v1/environments/${world.environments.staging}/flags${rest}`;
export const YEAR_MS = 365 * 24 * 60 * 60_000;
const admin = (world: World) => world.tenant.admin.token;

export async function freshSchedule(world: World, flagKey: string): Promise<string> {
  const created = expectStatus(
    await world.client.post(`/v1/environments/${world.environments.staging}/flags/${flagKey}/scheduled-changes`, {
      token: admin(world),
      body: { execute_at_ms: Date.now() + YEAR_MS, operations: [{ op: 'set_enabled', enabled: false }] },
    }),
    201,
    'fresh scheduled change',
  );
  return created.id as string;
}

/** A fresh flag changed once in staging, and that change's entry (a revert's argument). */
export async function freshRevertible(world: World): Promise<{ key: string; entryId: string }> {
  const key = await freshFlag(world);
  const staging = world.environments.staging;
  expectStatus(await world.client.request('PUT', `/v1/environments/${staging}/flags/${key}`, { token: admin(world), body: { enabled: false } }), 200, 'change to revert');
  const history = expectStatus(await world.client.get(`/v1/environments/${staging}/flags/${key}/history`, { token: admin(world) }), 200, 'history');
  const [entry] = history.entries as Json[];
  return { key, entryId: entry!.id as string };
}

export const scheduleDescriptors: RestDescriptor[] = [
  rest('GET /v1/environments/{env_id}/scheduled-changes', viewer('environment'), STAGING, 200, ({ world }) => ({ path: `/v1/environments/${world.environments.staging}/scheduled-changes` })),
  rest('GET /v1/environments/{env_id}/flags/{flag_id}/scheduled-changes', viewer('environment'), STAGING, 200, (c) => ({ path: flags(c, `/${c.shared.flagKey}/scheduled-changes`) })),
  rest('POST /v1/environments/{env_id}/flags/{flag_id}/scheduled-changes', editor('environment'), STAGING, 201, (c) => ({
    path: flags(c, `/${c.shared.flagKey}/scheduled-changes`),
    body: { execute_at_ms: Date.now() + YEAR_MS, operations: [{ op: 'set_enabled', enabled: true }], comment: 'access table' },
  })),
  rest('GET /v1/environments/{env_id}/flags/{flag_id}/scheduled-changes/{change_id}', viewer('environment'), STAGING, 200, async (c) => ({
    path: flags(c, `/${c.shared.flagKey}/scheduled-changes/${await freshSchedule(c.world, c.shared.flagKey)}`),
  })),
  rest('PATCH /v1/environments/{env_id}/flags/{flag_id}/scheduled-changes/{change_id}', editor('environment'), STAGING, 200, async (c) => ({
    path: flags(c, `/${c.shared.flagKey}/scheduled-changes/${await freshSchedule(c.world, c.shared.flagKey)}`),
    body: { comment: 'edited' },
  })),
  rest('DELETE /v1/environments/{env_id}/flags/{flag_id}/scheduled-changes/{change_id}', editor('environment'), STAGING, 200, async (c) => ({
    path: flags(c, `/${c.shared.flagKey}/scheduled-changes/${await freshSchedule(c.world, c.shared.flagKey)}`),
  })),
  rest('POST /v1/environments/{env_id}/flags/{flag_id}/revert', editor('environment'), STAGING, 200, async (c) => {
    const { key, entryId } = await freshRevertible(c.world);
    return { path: flags(c, `/${key}/revert`), body: { audit_entry_id: entryId } };
  }),
];
