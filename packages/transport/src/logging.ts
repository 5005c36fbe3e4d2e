import { pino, type Logger, type LevelWithSilent, type DestinationStream } from 'pino';

export type { Logger } from 'pino';

/**
 * Fields that could carry a secret anywhere in a log object. pino removes them before the line is
 * written, so a careless `log.info({ body })` still cannot leak a password or a key.
 */
const REDACTED_PATHS = [
  'password',
  '*.password',
  'password_hash',
  '*.password_hash',
  'passwordHash',
  '*.passwordHash',
  'token',
  '*.token',
  'refresh_token',
  '*.refresh_token',
  'access_token',
  '*.access_token',
  'raw_key',
  '*.raw_key',
  'rawKey',
  '*.rawKey',
  'key_hash',
  '*.key_hash',
  'keyHash',
  '*.keyHash',
  'jwtSecret',
  '*.jwtSecret',
  'req.headers.authorization',
  'req.headers.cookie',
  // A sign-in's sealed login (docs/sso.md "The browser flow").
  'res.headers["set-cookie"]',
  'headers.cookie',
  'headers["set-cookie"]',
  'req.headers["x-sdk-key"]',
  'headers.authorization',
  'headers["x-sdk-key"]',
  // OFREP's own key header (docs/client-side.md "CORS and origins").
  'req.headers["x-api-key"]',
  'headers["x-api-key"]',
];

export interface LogFilter {
  defaultLevel: LevelWithSilent;
  modules: Map<string, LevelWithSilent>;
}

const toPinoLevel = (level: string): LevelWithSilent => (level === 'off' ? 'silent' : (level as LevelWithSilent));

/** Parses `info` or `warn,http=debug,grpc=trace` (the RUST_LOG style, docs/contract.md "Processes and ports"). */
export function parseLogFilter(filter: string): LogFilter {
  const result: LogFilter = { defaultLevel: 'info', modules: new Map() };
  for (const directive of filter.split(',').map((d) => d.trim()).filter(Boolean)) {
    const [name, level] = directive.split('=');
    if (level === undefined) result.defaultLevel = toPinoLevel(directive);
    else if (name) result.modules.set(name.trim(), toPinoLevel(level.trim()));
  }
  return result;
}

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** Human-readable lines for development: `12:00:01.123 INFO  http: message {extra}`. */
function prettyDestination(out: NodeJS.WritableStream): DestinationStream {
  return {
    write(line: string) {
      try {
        const { level, time, msg, module, pid: _pid, hostname: _host, ...rest } = JSON.parse(line) as Record<string, unknown>;
        const clock = new Date(Number(time)).toISOString().slice(11, 23);
        const extra = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : '';
        out.write(`${clock} ${(LEVEL_NAMES[Number(level)] ?? '?').padEnd(5)} ${module ? `${String(module)}: ` : ''}${String(msg ?? '')}${extra}\n`);
      } catch {
        out.write(line);
      }
    },
  };
}

export interface RootLogger {
  root: Logger;
  /** A logger for one part of the server; its level follows the `module=level` directive if any. */
  forModule(module: string): Logger;
}

/** JSON lines when `json` (APP_ENV=production), readable lines otherwise. */
export function createLogger(options: { filter: string; json: boolean; destination?: NodeJS.WritableStream }): RootLogger {
  const filter = parseLogFilter(options.filter);
  const out = options.destination ?? process.stdout;
  const root = pino(
    {
      level: filter.defaultLevel,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: options.json ? { pid: process.pid } : {},
    },
    options.json ? (out as DestinationStream) : prettyDestination(out),
  );
  return {
    root,
    forModule(module: string) {
      const level = filter.modules.get(module) ?? filter.defaultLevel;
      return root.child({ module }, { level });
    },
  };
}
