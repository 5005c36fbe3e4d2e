import { unique } from '../../rest-client.ts';
import { freshEventDefinition, freshExperiment, freshSegment } from '../fixtures.ts';
import { PRODUCTION, STAGING, editor, freshIfAllowed, rest, viewer, type RestDescriptor, type RowContext } from '../rest-descriptor.ts';

/**
 * Environment content: segments and experiments in staging, event definitions in production (so
 * the staging editor and the staging token meet a refusal), stats jobs of the staging experiment.
 */

const segments = ({ world }: RowContext, rest = '') => `/v1/environments/${world.environments.staging}/segments${rest}`;
const definitions = ({ world }: RowContext, rest = '') => `/v1/environments/${world.environments.production}/event-definitions${rest}`;
const experiments = ({ world }: RowContext, rest = '') => `/v1/environments/${world.environments.staging}/experiments${rest}`;
const ACTIVE = 'EXPERIMENT_STATUS_ACTIVE';

export const environmentContentDescriptors: RestDescriptor[] = [
  rest('GET /v1/environments/{env_id}/segments', viewer('environment'), STAGING, 200, (c) => ({ path: segments(c) })),
  rest('POST /v1/environments/{env_id}/segments', editor('environment'), STAGING, 201, (c) => ({ path: segments(c), body: { key: `acc-seg-${unique()}`, context_type: 'user', kind: 'list' } })),
  rest('GET /v1/environments/{env_id}/segments/{segment_id}', viewer('environment'), STAGING, 200, (c) => ({ path: segments(c, `/${c.shared.segmentKey}`) })),
  rest('PUT /v1/environments/{env_id}/segments/{segment_id}', editor('environment'), STAGING, 200, (c) => ({ path: segments(c, `/${c.shared.segmentKey}`), body: { description: `d ${unique()}` } })),
  rest('DELETE /v1/environments/{env_id}/segments/{segment_id}', editor('environment'), STAGING, 204, async (c) => ({ path: segments(c, `/${await freshIfAllowed(c, freshSegment, c.shared.segmentKey)}`) })),
  rest('PATCH /v1/environments/{env_id}/segments/{segment_id}/members', editor('environment'), STAGING, 200, (c) => ({ path: segments(c, `/${c.shared.segmentKey}/members`), body: { add_included: [`u-${unique()}`] } })),
  rest('GET /v1/environments/{env_id}/segments/{segment_id}/members', viewer('environment'), STAGING, 200, (c) => ({ path: segments(c, `/${c.shared.segmentKey}/members`) })),

  rest('GET /v1/environments/{env_id}/event-definitions', viewer('environment'), PRODUCTION, 200, (c) => ({ path: definitions(c) })),
  rest('POST /v1/environments/{env_id}/event-definitions', editor('environment'), PRODUCTION, 202, (c) => ({ path: definitions(c), body: { key: `acc_new_${unique()}`, value_type: 'int' } })),
  rest('GET /v1/environments/{env_id}/event-definitions/{def_id}', viewer('environment'), PRODUCTION, 200, (c) => ({ path: definitions(c, `/${c.shared.eventKey}`) })),
  rest('PUT /v1/environments/{env_id}/event-definitions/{def_id}', editor('environment'), PRODUCTION, 202, (c) => ({ path: definitions(c, `/${c.shared.eventKey}`), body: { description: `d ${unique()}` } })),
  rest('DELETE /v1/environments/{env_id}/event-definitions/{def_id}', editor('environment'), PRODUCTION, 204, async (c) => ({ path: definitions(c, `/${await freshIfAllowed(c, freshEventDefinition, c.shared.eventKey)}`) })),

  rest('GET /v1/environments/{env_id}/experiments', viewer('environment'), STAGING, 200, (c) => ({ path: experiments(c) })),
  rest('POST /v1/environments/{env_id}/experiments', editor('environment'), STAGING, 201, (c) => ({ path: experiments(c), body: { name: `acc ${unique()}`, flag_key: 'acc-checkout' } })),
  rest('GET /v1/environments/{env_id}/experiments/{experiment_id}', viewer('environment'), STAGING, 200, (c) => ({ path: experiments(c, `/${c.shared.experimentId}`) })),
  rest('PATCH /v1/environments/{env_id}/experiments/{experiment_id}', editor('environment'), STAGING, 200, (c) => ({ path: experiments(c, `/${c.shared.experimentId}`), body: { description: `d ${unique()}` } })),
  rest('PUT /v1/environments/{env_id}/experiments/{experiment_id}', editor('environment'), STAGING, 200, (c) => ({ path: experiments(c, `/${c.shared.experimentId}`), body: { description: `d ${unique()}` } })),
  rest('DELETE /v1/environments/{env_id}/experiments/{experiment_id}', editor('environment'), STAGING, 200, async (c) => ({ path: experiments(c, `/${await freshIfAllowed(c, freshExperiment, c.shared.experimentId)}`) })),
  rest('POST /v1/environments/{env_id}/experiments/{experiment_id}/transitions', editor('environment'), STAGING, 200, async (c) => ({
    path: experiments(c, `/${await freshIfAllowed(c, freshExperiment, c.shared.experimentId)}/transitions`),
    body: { new_status: ACTIVE },
  })),
  rest('POST /v1/environments/{env_id}/experiments/{experiment_id}/transition', editor('environment'), STAGING, 200, async (c) => ({
    path: experiments(c, `/${await freshIfAllowed(c, freshExperiment, c.shared.experimentId)}/transition`),
    body: { new_status: ACTIVE },
  })),
  rest('GET /v1/environments/{env_id}/experiments/{experiment_id}/iterations', viewer('environment'), STAGING, 200, (c) => ({ path: experiments(c, `/${c.shared.experimentId}/iterations`) })),
  rest('GET /v1/environments/{env_id}/experiments/{experiment_id}/results', viewer('environment'), STAGING, 200, (c) => ({ path: experiments(c, `/${c.shared.experimentId}/results`) })),
  // Power and duration (docs/statistics.md §14): values by hand, so no window of events is read.
  rest('POST /v1/environments/{env_id}/experiments/power', viewer('environment'), STAGING, 200, (c) => ({ path: experiments(c, '/power'), body: { mde: 0.05, mean: 10, variance: 4, exposures_per_day: 100 } })),
  rest('GET /v1/environments/{env_id}/experiments/{experiment_id}/power', viewer('environment'), STAGING, 200, (c) => ({ path: experiments(c, `/${c.shared.experimentId}/power?mde=0.05`) })),
  rest('POST /v1/experiments/{experiment_id}/recompute', editor('environment'), STAGING, 202, (c) => ({ path: `/v1/experiments/${c.shared.experimentId}/recompute` })),
  rest('GET /v1/jobs/{job_id}', viewer('environment'), STAGING, 200, (c) => ({ path: `/v1/jobs/${c.shared.jobId}` })),
];
