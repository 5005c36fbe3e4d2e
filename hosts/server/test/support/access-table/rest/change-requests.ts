import { expectStatus, unique } from '../../rest-client.ts';
import { freshFlag } from '../fixtures.ts';
import { STAGING, admin, editor, noTokens, rest, viewer, type RestDescriptor, type RowContext } from '../rest-descriptor.ts';
import type { World } from '../world.ts';

/**
 * Approval policies and change requests (docs/workflow.md "Change requests and approvals"), in staging. Staging's policy
 * allows self-approval and requires nothing (so the table's other rows write directly), set once
 * with the shared request. Rows that change a request (edit, submit, cancel) act on a fresh
 * request the principal authored itself when allowed (only the author edits); a review approves
 * a fresh open request; an apply applies a fresh request on a fresh flag. Refused rows use the
 * shared open request (a refusal consumes nothing).
 */

const sharedRequests = new WeakMap<World, Promise<string>>();

export const changeRequestsOf = (world: World) => `/v1/environments/${world.environments.staging}/change-requests`;

async function createRequest(world: World, token: string, flagKey: string, submit: boolean): Promise<string> {
  const body = { title: `access ${unique()}`, changes: [{ flag_key: flagKey, operations: [{ op: 'set_enabled', enabled: true }] }], submit };
  return expectStatus(await world.client.post(changeRequestsOf(world), { token, body }), 201, 'fresh change request').id as string;
}

/** The shared open request (by the org admin), after staging's policy is set. */
export function sharedChangeRequest(world: World): Promise<string> {
  let made = sharedRequests.get(world);
  if (!made) {
    made = (async () => {
      const policy = `/v1/management/environments/${world.environments.staging}/approval-policy`;
      expectStatus(await world.client.request('PUT', policy, { token: world.tenant.admin.token, body: { required: false, allow_self_approval: true } }), 200, 'staging policy');
      return createRequest(world, world.tenant.admin.token, await freshFlag(world), true);
    })();
    sharedRequests.set(world, made);
  }
  return made;
}

/** A request for the row: authored by the principal itself (open or a draft) when allowed, else the shared one. */
export async function rowRequest(context: RowContext, options: { ownDraft?: boolean; freshFlag?: boolean } = {}): Promise<string> {
  const shared = await sharedChangeRequest(context.world);
  if (!context.allowed) return shared;
  const token = options.ownDraft !== undefined ? context.principal.bearer! : context.world.tenant.admin.token;
  return createRequest(context.world, token, await freshFlag(context.world), options.ownDraft === undefined ? true : !options.ownDraft);
}

const one = async (c: RowContext, rest = '', options: Parameters<typeof rowRequest>[1] = {}) => `${changeRequestsOf(c.world)}/${await rowRequest(c, options)}${rest}`;

export const changeRequestDescriptors: RestDescriptor[] = [
  rest('GET /v1/management/environments/{environment_id}/approval-policy', viewer('environment'), STAGING, 200, ({ world }) => ({
    path: `/v1/management/environments/${world.environments.staging}/approval-policy`,
  })),
  rest('PUT /v1/management/environments/{environment_id}/approval-policy', admin('environment'), STAGING, 200, async ({ world }) => {
    await sharedChangeRequest(world);
    return { path: `/v1/management/environments/${world.environments.staging}/approval-policy`, body: { allow_self_approval: true } };
  }),
  rest('GET /v1/environments/{env_id}/change-requests', viewer('environment'), STAGING, 200, ({ world }) => ({ path: changeRequestsOf(world) })),
  rest('POST /v1/environments/{env_id}/change-requests', editor('environment'), STAGING, 201, async (c) => ({
    path: changeRequestsOf(c.world),
    body: { title: 'access', changes: [{ flag_key: c.shared.flagKey, operations: [{ op: 'set_enabled', enabled: true }] }] },
  })),
  rest('GET /v1/environments/{env_id}/change-requests/{id}', viewer('environment'), STAGING, 200, async (c) => ({ path: `${changeRequestsOf(c.world)}/${await sharedChangeRequest(c.world)}` })),
  rest('GET /v1/environments/{env_id}/change-requests/{id}/preview', viewer('environment'), STAGING, 200, async (c) => ({
    path: `${changeRequestsOf(c.world)}/${await sharedChangeRequest(c.world)}/preview`,
  })),
  rest('PATCH /v1/environments/{env_id}/change-requests/{id}', editor('environment'), STAGING, 200, async (c) => ({ path: await one(c, '', { ownDraft: false }), body: { title: 'edited' } })),
  rest('POST /v1/environments/{env_id}/change-requests/{id}/submit', editor('environment'), STAGING, 200, async (c) => ({ path: await one(c, '/submit', { ownDraft: true }) })),
  rest('POST /v1/environments/{env_id}/change-requests/{id}/cancel', editor('environment'), STAGING, 200, async (c) => ({ path: await one(c, '/cancel', { ownDraft: false }) })),
  // Approving is a person's: API tokens never review (docs/workflow.md "Change requests and approvals").
  rest('POST /v1/environments/{env_id}/change-requests/{id}/reviews', noTokens(editor('environment')), STAGING, 200, async (c) => ({
    path: await one(c, '/reviews'),
    body: { verdict: 'approve' },
  })),
  rest('POST /v1/environments/{env_id}/change-requests/{id}/apply', editor('environment'), STAGING, 200, async (c) => ({ path: await one(c, '/apply') })),
];
