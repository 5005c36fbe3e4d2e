/**
 * Where the SDK reports what it does (connection state changes, delivery failures). Any object with
 * these four methods works (console, pino, winston); the default writes warnings and errors to the
 * console. Messages never contain the SDK key or context attributes.
 */
export interface SdkLogger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const noop = (): void => {};

/** Warnings and errors to the console; debug and info dropped. */
export const consoleLogger: SdkLogger = {
  debug: noop,
  info: noop,
  warn: (message, fields) => console.warn(`[switchyard] ${message}`, fields ?? ''),
  error: (message, fields) => console.error(`[switchyard] ${message}`, fields ?? ''),
};

/** Drops everything (tests, or callers who want silence). */
export const silentLogger: SdkLogger = { debug: noop, info: noop, warn: noop, error: noop };
