export * from './insights-service.ts';
export * from './evaluation-count-flusher.ts';
export * from './count-report-sender.ts';
export * from './insights-retention.ts';
export * from './flag-lifecycle-job.ts';
