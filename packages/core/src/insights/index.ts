export * from './evaluation-counter.ts';
export * from './insights-ports.ts';
export * from './insights-range.ts';
export * from './flag-status.ts';
export * from './flag-lifecycle.ts';
export * from './flag-lifecycle-report.ts';
