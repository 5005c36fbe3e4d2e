/**
 * CPU time the PostgreSQL backends of the bench's database used, read from /proc (Linux, with
 * PostgreSQL on this machine; null elsewhere). On a shared machine the wall-clock rates move with
 * everyone else's load; CPU per row moves much less, so it says which path makes PostgreSQL do
 * less work per row. Background processes (WAL writer, checkpointer) are not counted.
 */
import { readFileSync } from 'node:fs';
import type { Sql } from '../../packages/postgres/src/connect.ts';

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on Linux). */
const TICKS_PER_S = 100;

export type BackendCpu = Map<number, number>;

/** Microseconds of CPU (user + system) per backend of the database `sql` is connected to. */
export async function backendCpu(sql: Sql): Promise<BackendCpu | null> {
  const pids = await sql<Array<{ pid: number }>>`
    SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'`;
  const cpu: BackendCpu = new Map();
  for (const { pid } of pids) {
    try {
      // Fields after "(comm) ": state is the 3rd field, utime the 14th, stime the 15th.
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      cpu.set(pid, ((Number(fields[11]) + Number(fields[12])) / TICKS_PER_S) * 1e6);
    } catch {
      return null;
    }
  }
  return cpu;
}

/** CPU µs the backends used between two readings (a backend that appeared in between counts from 0). */
export function cpuSpent(before: BackendCpu | null, after: BackendCpu | null): number | null {
  if (!before || !after) return null;
  let total = 0;
  for (const [pid, us] of after) total += us - (before.get(pid) ?? 0);
  return total;
}
