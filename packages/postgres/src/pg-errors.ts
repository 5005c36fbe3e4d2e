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

/**
 * SQLSTATE class 22, "data exception": PostgreSQL refused a value the statement was given (a
 * character it cannot store, a number out of range, malformed text for a type, ...). The edge
 * refuses what it can see (docs/security.md "Input rules"); this catches the rest, so a value a
 * caller sent answers 400 `INVALID_ARGUMENT` rather than 500. Only the code is read: the error's
 * message may quote the value and never reaches a response.
 */
export function isDataException(error: unknown): boolean {
  const code = sqlState(error);
  return code !== undefined && code.length === 5 && code.startsWith('22');
}
