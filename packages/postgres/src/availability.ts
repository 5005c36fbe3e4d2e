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

/**
 * SQLSTATE class 08 (connection exception), the shutdown codes of class 57, and 53300 (no
 * connection to give: max_connections, or a role's or database's connection limit), which passes
 * when other clients disconnect. Class 53's others (disk full, out of memory) are not retried.
 */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[1-3]|53300)$/;

export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  return CONNECTION_ERRORS.has(code) || UNAVAILABLE_SQLSTATE.test(code);
}

/**
 * postgres.js 3.4.x bug (porsager/postgres#1208, unfixed upstream): when a connection dies in the
 * middle of `sql.begin()`, the library's own ROLLBACK is written to the already-closed socket from
 * a timer callback. That surfaces as an uncaught TypeError, or as an unhandled rejection of the
 * ROLLBACK with a connection-lost code, which nobody can catch. The transaction's promise has
 * already rejected (CONNECTION_CLOSED) by then, so these carry no information and are safe to
 * ignore; anything else uncaught is not. The host's process handlers use this to survive a
 * database restart instead of exiting.
 */
export function isDriverWriteOnClosedSocket(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const stack = error.stack ?? '';
  if (!/[\\/]postgres[\\/]src[\\/](connection|query|index)\.js/.test(stack)) return false;
  if (error instanceof TypeError) return true;
  const code = (error as { code?: unknown }).code;
  return code === 'CONNECTION_CLOSED' || code === 'CONNECTION_DESTROYED' || code === 'CONNECTION_ENDED';
}
