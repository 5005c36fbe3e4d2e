/**
 * The baselines of ingest.bench.ts: the same rows written straight into PostgreSQL, with no HTTP,
 * JSON, validation or group commit in the way.
 * - rawCopy: `COPY events (...) FROM STDIN` streaming tab-separated text (postgres.js
 *   `.writable()`), the fastest way rows get into a table: the ceiling for any ingest path. One
 *   stream by default; more run side by side on their own connections.
 * - rawInsert: multi-row `INSERT ... VALUES` statements of one body's rows each, on `lanes`
 *   concurrent connections: what a plain batched writer would reach.
 */
import { once } from 'node:events';
import type { Sql } from '../../packages/postgres/src/connect.ts';
import type { EventBody } from './seed.ts';

export const EVENT_COLUMNS = ['org_id', 'environment_id', 'metric_key', 'context_type', 'context_key', 'value', 'timestamp_ms', 'received_at_ms'] as const;

export interface RawTarget {
  orgId: string;
  environmentId: string;
}

/** COPY text format: backslash, tab, newline and carriage return are escaped. */
const copyText = (value: string): string => value.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));

/** One body's rows as COPY text, stamped with one receipt time (as the server stamps a write). */
function copyChunk(target: RawTarget, body: EventBody, receivedAtMs: number): Buffer {
  const prefix = `${target.orgId}\t${target.environmentId}\t`;
  let text = '';
  for (const row of body.rows) {
    text += `${prefix}${copyText(row.metricKey)}\t${copyText(row.contextType)}\t${copyText(row.contextKey)}\t${row.value}\t${row.timestampMs ?? receivedAtMs}\t${receivedAtMs}\n`;
  }
  return Buffer.from(text, 'utf8');
}

/**
 * Streams `rowCount` rows (the bodies' rows in turn, the last body cut short) through `streams`
 * concurrent COPYs, one connection each, sharing the bodies between them; resolves with the wall
 * time from the first COPY statement to the last one's completion. The text is made before the
 * clock starts, so the figure is PostgreSQL's and the protocol's alone.
 */
export async function rawCopy(sql: Sql, target: RawTarget, bodies: readonly EventBody[], rowCount: number, streams = 1): Promise<number> {
  const receivedAtMs = Date.now();
  const chunks = bodies.map((body) => copyChunk(target, body, receivedAtMs));
  const rowsPerBody = bodies[0]!.rows.length;
  const fullChunks = Math.floor(rowCount / rowsPerBody);
  const tailRows = rowCount % rowsPerBody;
  const tail = tailRows > 0 ? copyChunk(target, { json: '', rows: bodies[fullChunks % bodies.length]!.rows.slice(0, tailRows) }, receivedAtMs) : null;

  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: streams }, async (_, lane) => {
      const stream = await sql`COPY events (${sql([...EVENT_COLUMNS])}) FROM STDIN`.writable();
      while (next < fullChunks) {
        if (!stream.write(chunks[next++ % chunks.length]!)) await once(stream, 'drain');
      }
      if (tail && lane === 0) stream.write(tail);
      stream.end();
      // postgres.js finishes the stream on CommandComplete: the COPY has run.
      await once(stream, 'finish');
    }),
  );
  return performance.now() - started;
}

/**
 * `rowCount` rows as multi-row INSERTs of one body each (8 parameters a row), `lanes` statements
 * in flight; resolves with the wall time.
 */
export async function rawInsert(sql: Sql, target: RawTarget, bodies: readonly EventBody[], rowCount: number, lanes: number): Promise<number> {
  const receivedAtMs = Date.now();
  const statements = bodies.map((body) =>
    body.rows.map((row) => ({
      org_id: target.orgId,
      environment_id: target.environmentId,
      metric_key: row.metricKey,
      context_type: row.contextType,
      context_key: row.contextKey,
      value: row.value,
      timestamp_ms: row.timestampMs ?? receivedAtMs,
      received_at_ms: receivedAtMs,
    })),
  );
  const rowsPerBody = bodies[0]!.rows.length;
  const count = Math.ceil(rowCount / rowsPerBody);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < count) {
        const i = next++;
        const rows = statements[i % statements.length]!;
        const take = i === count - 1 && rowCount % rowsPerBody > 0 ? rows.slice(0, rowCount % rowsPerBody) : rows;
        await sql`INSERT INTO events ${sql(take, ...EVENT_COLUMNS)}`;
      }
    }),
  );
  return performance.now() - started;
}
