import { DomainError } from '@switchyard/core';

/** SQLSTATE codes the adapters translate into domain errors. */
const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';
const INVALID_TEXT_REPRESENTATION = '22P02';

const sqlState = (error: unknown): string | undefined =>
  typeof error === 'object' && error !== null && 'code' in error ? String((error as { code: unknown }).code) : undefined;

/**
 * Runs a write and turns the constraint failures a caller can cause into domain errors with
 * safe messages (never the SQL text): a duplicate → ALREADY_EXISTS, a missing or foreign parent
 * → NOT_FOUND, a malformed id → NOT_FOUND. Anything else propagates unchanged.
 */
export async function translateErrors<T>(
  work: () => Promise<T>,
  what: { resource: string; name?: string; parent?: string },
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    switch (sqlState(error)) {
      case UNIQUE_VIOLATION:
        throw new DomainError('ALREADY_EXISTS', `${what.resource} '${what.name ?? ''}' already exists`);
      case FOREIGN_KEY_VIOLATION:
        throw new DomainError('NOT_FOUND', `${what.parent ?? 'parent'} not found`);
      case INVALID_TEXT_REPRESENTATION:
        throw new DomainError('NOT_FOUND', `${what.parent ?? what.resource} not found`);
      default:
        throw error;
    }
  }
}

/** True for a syntactically valid UUID; ids that are not UUIDs can never match a row. */
export const isUuid = (value: string): boolean =>
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
