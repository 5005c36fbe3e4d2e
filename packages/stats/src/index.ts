export * from './welch.ts';
export * from './srm.ts';
export * from './summaries.ts';
export * from './experiment-results.ts';
export * from './student-t.ts';
export * from './chi-squared.ts';
export * from './find-root.ts';
export * from './experiment-aggregates.ts';
