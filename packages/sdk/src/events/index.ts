export { EventDelivery, EVENT_DELIVERY_DEFAULTS } from './event-delivery.ts';
export type { EventDeliveryOptions, EventDeliveryStats, RecordedExposure, TrackedEvent } from './event-delivery.ts';
export { DEFAULT_RETRY_POLICY } from './retry-policy.ts';
export type { RetryPolicy } from './retry-policy.ts';
export { EvaluationSummaries, EvaluationSummaryCounter, EVALUATION_SUMMARY_DEFAULTS } from './evaluation-summaries.ts';
export type { EvaluationSummary, EvaluationSummariesOptions, EvaluationSummaryStats } from './evaluation-summaries.ts';
