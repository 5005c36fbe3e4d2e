export * from './evaluation-counter.ts';
export * from './insights-ports.ts';
export * from './insights-range.ts';
