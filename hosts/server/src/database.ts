import { accessSync, constants, mkdirSync } from 'node:fs';
import path from 'node:path';
import { connect, migrate, startEmbeddedPostgres, type Sql } from '@switchyard/postgres';
import type { Config } from '@switchyard/transport/config.ts';
import type { Logger } from '@switchyard/transport/logging.ts';

export interface Database {
  sql: Sql;
  embedded: boolean;
  close(): Promise<void>;
}

/**
 * Connects to DATABASE_URL, or starts the embedded PostgreSQL (data in DATA_DIR/postgres, reused
 * across restarts; its superuser password in DATA_DIR/postgres-password), then brings the schema
 * up to date.
 */
export async function openDatabase(config: Config, logger: Logger): Promise<Database> {
  let url = config.databaseUrl;
  let stopEmbedded: (() => Promise<void>) | null = null;
  if (url === null) {
    const dataDir = path.resolve(config.dataDir, 'postgres');
    mkdirSync(path.dirname(dataDir), { recursive: true });
    accessSync(path.dirname(dataDir), constants.W_OK);
    const embedded = await startEmbeddedPostgres({
      dataDir,
      port: config.embeddedPgPort,
      // Generated once per data directory (docs/decisions.md, "Process").
      passwordFile: path.resolve(config.dataDir, 'postgres-password'),
      // A terminal's Ctrl-C must reach only us: the server is stopped after the pool has closed.
      ownProcessGroup: true,
      onLog: (line) => logger.trace({ line: line.trim() }, 'embedded postgres'),
    });
    if (embedded.passwordMigrated) {
      logger.info('embedded PostgreSQL: replaced the built-in superuser password of this data directory with a generated one (kept in postgres-password)');
    }
    url = embedded.url;
    stopEmbedded = () => embedded.stop();
    logger.info(
      { port: config.embeddedPgPort, dataDir, firstRun: embedded.initialised },
      `DATABASE_URL not set: using the embedded PostgreSQL on 127.0.0.1:${config.embeddedPgPort} (data in ${dataDir})`,
    );
  }

  const sql = connect(url, { poolSize: config.dbPoolSize });
  try {
    const report = await migrate(sql);
    if (report.applied.length > 0) logger.info({ applied: report.applied, version: report.version }, 'schema migrated');
  } catch (error) {
    await sql.end({ timeout: 1 });
    await stopEmbedded?.();
    throw error;
  }
  return {
    sql,
    embedded: stopEmbedded !== null,
    async close() {
      await sql.end({ timeout: 5 });
      await stopEmbedded?.();
    },
  };
}
