/**
 * postgres.js and socket error codes that mean "the database cannot be reached right now",
 * as opposed to a bad statement: the caller should answer UNAVAILABLE and may retry.
 */
const CONNECTION_ERRORS = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
]);

/** SQLSTATE class 08 (connection exception) and the shutdown codes of class 57. */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[1-3])$/;

export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  return CONNECTION_ERRORS.has(code) || UNAVAILABLE_SQLSTATE.test(code);
}
