import { unique } from '../../rest-client.ts';
import { KEY_ONLY, OFREP, STAGING, editor, noTokens, rest, viewer, type RestDescriptor, type RowContext } from '../rest-descriptor.ts';

/**
 * SDK traffic in staging. Evaluate and OFREP take keys only (evaluate: a bearer is no key, 401;
 * OFREP: a person is authenticated and refused as no key, 403, a token read as an unknown key); events,
 * exposures and list-checks take a key or a person's bearer (viewer to check, editor to ingest),
 * never an API token (docs/access.md "API tokens").
 */

const environment = ({ world }: RowContext, rest: string) => `/v1/environments/${world.environments.staging}${rest}`;
const event = () => ({ metric_key: 'purchase', context_type: 'user', context_key: `u-${unique()}`, value: true });
const exposure = () => ({ flag_key: 'acc-checkout', variant_key: 'treatment', context_type: 'user', context_key: `u-${unique()}` });
const check = (c: RowContext) => ({ segment_key: c.shared.segmentKey, context_key: 'u1', context_type: 'user' });

export const sdkTrafficDescriptors: RestDescriptor[] = [
  rest('POST /v1/environments/{env_id}/evaluate', KEY_ONLY, STAGING, 200, (c) => ({ path: environment(c, '/evaluate'), body: { context_key: 'u1', context_type: 'user' } })),
  rest('POST /ofrep/v1/evaluate/flags/{key}', OFREP, STAGING, 200, (c) => ({ path: `/ofrep/v1/evaluate/flags/${c.shared.flagKey}`, body: { context: { targetingKey: 'u1' } } })),
  rest('POST /ofrep/v1/evaluate/flags', OFREP, STAGING, 200, () => ({ path: '/ofrep/v1/evaluate/flags', body: { context: { targetingKey: 'u1' } } })),
  rest('GET /ofrep/v1/event-stream', KEY_ONLY, STAGING, 200, () => ({ path: `/ofrep/v1/event-stream?channel=unknown-${unique()}` })),

  rest('POST /v1/environments/{env_id}/events', noTokens(editor('environment')), STAGING, 202, (c) => ({ path: environment(c, '/events'), body: event() })),
  rest('POST /v1/environments/{env_id}/events/batch', noTokens(editor('environment')), STAGING, 202, (c) => ({ path: environment(c, '/events/batch'), body: [event()] })),
  rest('POST /v1/environments/{env_id}/exposures', noTokens(editor('environment')), STAGING, 202, (c) => ({ path: environment(c, '/exposures'), body: [exposure()] })),
  // SDK evaluation summaries (docs/insights.md "SDK summaries"): keys only, as OFREP: a person is refused as not a key (403), an API token taken for an unknown key (401).
  rest('POST /v1/environments/{env_id}/evaluation-summaries', OFREP, STAGING, 202, (c) => ({
    path: environment(c, '/evaluation-summaries'),
    body: { start_ms: Date.now() - 60_000, end_ms: Date.now(), counts: [{ flag_key: c.shared.flagKey, variant_key: '', reason: 'DEFAULT', count: 1 }] },
  })),
  rest('POST /v1/environments/{env_id}/segments/list-check', noTokens(viewer('environment')), STAGING, 200, (c) => ({ path: environment(c, '/segments/list-check'), body: check(c) })),
  rest('POST /v1/environments/{env_id}/segments/list-check/batch', noTokens(viewer('environment')), STAGING, 200, (c) => ({ path: environment(c, '/segments/list-check/batch'), body: [check(c)] })),
  rest('POST /v1/environments/{env_id}/segments/batch-list-check', noTokens(viewer('environment')), STAGING, 200, (c) => ({ path: environment(c, '/segments/batch-list-check'), body: [check(c)] })),
];
