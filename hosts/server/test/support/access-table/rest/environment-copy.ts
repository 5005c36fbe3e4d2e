import { freshFlag } from '../fixtures.ts';
import { PRODUCTION, editor, freshIfAllowed, rest, viewer, type RestDescriptor, type RowContext } from '../rest-descriptor.ts';

/**
 * Environment compare and copy (docs/contract.md "Environment compare and copy"): production is
 * the target, staging the source. The rule reads the target: compare needs viewer there, copy
 * editor (both read the source too, which every principal allowed on production can in this
 * world: their bindings are org- or project-level). A copy works on a fresh flag (made in staging).
 */

const target = ({ world }: RowContext, rest: string) => `/v1/environments/${world.environments.production}${rest}`;

export const environmentCopyDescriptors: RestDescriptor[] = [
  rest('GET /v1/environments/{env_id}/compare', viewer('environment'), PRODUCTION, 200, (c) => ({
    path: target(c, `/compare?from_environment_id=${c.world.environments.staging}`),
  })),
  rest('POST /v1/environments/{env_id}/copy', editor('environment'), PRODUCTION, 200, async (c) => ({
    path: target(c, '/copy'),
    body: { from_environment_id: c.world.environments.staging, flag_keys: [await freshIfAllowed(c, freshFlag, c.shared.flagKey)], include: ['rules', 'enabled'] },
  })),
];
