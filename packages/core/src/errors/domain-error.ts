/**
 * Domain errors carry a stable code (the gRPC status name) and never an HTTP status:
 * each transport maps codes to its own statuses in one table (see packages/transport/src/http/error-status.ts).
 */
export const ERROR_CODES = [
  'INVALID_ARGUMENT',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'UNAUTHENTICATED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'RESOURCE_EXHAUSTED',
  'UNIMPLEMENTED',
  'UNAVAILABLE',
  'DEADLINE_EXCEEDED',
  'CANCELLED',
  'INTERNAL',
  'UNKNOWN',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** A failure the caller can act on. `message` is safe to show to clients: no SQL, no secrets. */
export class DomainError extends Error {
  readonly code: ErrorCode;
  /** Optional machine-readable detail, e.g. the offending field name. */
  readonly field: string | undefined;

  constructor(code: ErrorCode, message: string, field?: string) {
    super(message);
    this.name = 'DomainError';
    this.code = code;
    this.field = field;
  }
}

export const isDomainError = (value: unknown): value is DomainError => value instanceof DomainError;

/** Shorthands so call sites read as sentences: `throw notFound('flag', key)`. */
export const notFound = (what: string, id?: string): DomainError =>
  new DomainError('NOT_FOUND', id === undefined ? `${what} not found` : `${what} '${id}' not found`);
export const alreadyExists = (what: string, name: string): DomainError =>
  new DomainError('ALREADY_EXISTS', `${what} '${name}' already exists`);
export const invalidArgument = (message: string, field?: string): DomainError =>
  new DomainError('INVALID_ARGUMENT', message, field);
export const versionConflict = (what: string, expected: number, actual: number): DomainError =>
  new DomainError('ABORTED', `${what} version mismatch: expected ${expected}, stored ${actual}`);
export const failedPrecondition = (message: string): DomainError =>
  new DomainError('FAILED_PRECONDITION', message);
export const permissionDenied = (message = 'insufficient permissions'): DomainError =>
  new DomainError('PERMISSION_DENIED', message);
export const unauthenticated = (message = 'missing or invalid credentials'): DomainError =>
  new DomainError('UNAUTHENTICATED', message);

/** RESOURCE_EXHAUSTED with the time after which a retry may succeed (HTTP: Retry-After). */
export class RateLimitedError extends DomainError {
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number) {
    super('RESOURCE_EXHAUSTED', message);
    this.name = 'RateLimitedError';
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
