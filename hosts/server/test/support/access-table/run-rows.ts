import { expected } from './rule.ts';
import type { Expected, PrincipalName } from './types.ts';
import type { Principal } from './world.ts';
import type { Access, Target } from './types.ts';

/** One cell of the table: an operation called by a principal, what the rule expects and what came. */
export interface Row {
  operation: string;
  principal: PrincipalName;
  expected: Expected;
  /** The status (REST) or status name (gRPC) expected, and the one answered. */
  want: string;
  got: string;
  /** The answer's body or error details, to show when the row fails. */
  detail: string;
  /** How long the row took (fixtures included). */
  ms: number;
}

/** What a row needs from its descriptor, REST or gRPC alike. */
export interface Cell {
  operation: string;
  access: Access;
  target: Target;
  /** Whether the row runs after every other (it ends sessions or changes a password). */
  last?: boolean;
  /**
   * Whether the row checks a password: few at once, since the login throttle counts an attempt as
   * a failure until its (slow, bcrypt) check succeeds, and 30 at once from one address are 429.
   */
  checksPassword?: boolean;
  /** Calls the operation as the principal; answers what came (status or status name) and its detail. */
  call(principal: Principal): Promise<{ got: string; detail: string }>;
  /** The answer expected for the rule's verdict. */
  want(verdict: Expected): string;
}

/** Runs `tasks` with at most `limit` in flight (the rows of the table, and fixtures they make). */
export async function bounded<T>(tasks: Array<() => Promise<T>>, limit: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return results;
}

/** At most `limit` holders at once. */
function semaphore(limit: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async (task) => {
    if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await task();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

const passwordChecks = semaphore(4);

async function runRow(cell: Cell, principal: Principal): Promise<Row> {
  const verdict = expected(cell.access, principal.caller, cell.target);
  const want = cell.want(verdict);
  const started = Date.now();
  try {
    const { got, detail } = await (cell.checksPassword ? passwordChecks(() => cell.call(principal)) : cell.call(principal));
    return { operation: cell.operation, principal: principal.name, expected: verdict, want, got, detail, ms: Date.now() - started };
  } catch (error) {
    return { operation: cell.operation, principal: principal.name, expected: verdict, want, got: 'setup failed', detail: String((error as Error)?.stack ?? error), ms: Date.now() - started };
  }
}

/**
 * Every cell × every available principal: the ordinary rows concurrently (bounded), then the rows
 * that end sessions, one principal's in order, principals side by side.
 */
export async function runTable(cells: Cell[], principals: Principal[], concurrency: number): Promise<Row[]> {
  const available = principals.filter((principal) => principal.unavailable === undefined);
  const first = cells.filter((cell) => !cell.last);
  const last = cells.filter((cell) => cell.last);
  const rows = await bounded(first.flatMap((cell) => available.map((principal) => () => runRow(cell, principal))), concurrency);
  const lastRows = await Promise.all(
    available.map(async (principal) => {
      const mine: Row[] = [];
      for (const cell of last) mine.push(await runRow(cell, principal));
      return mine;
    }),
  );
  return [...rows, ...lastRows.flat()];
}

/** A row's line in a failure message. */
export const describeRow = (row: Row): string => `${row.operation} as ${row.principal}: expected ${row.want}, got ${row.got} ${row.detail.slice(0, 300)}`;
