export * from './connect.ts';
export * from './migrate.ts';
export * from './embedded.ts';
export * from './repositories.ts';
export * from './availability.ts';
export * from './change-notifier.pg.ts';
export * from './ingest-writes.pg.ts';
export * from './advisory-lock.pg.ts';
export { isDataException } from './pg-errors.ts';
