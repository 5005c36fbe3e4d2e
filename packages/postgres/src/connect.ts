import postgres from 'postgres';

export type Sql = postgres.Sql;
export type TransactionSql = postgres.TransactionSql;

export interface ConnectOptions {
  /** Pool size (DB_POOL_SIZE, default 10). */
  poolSize?: number;
  /** Application name shown in pg_stat_activity. */
  applicationName?: string;
}

/**
 * One connection pool for the process. int8 columns come back as JS numbers: every int8 here is a
 * count, a version or an epoch-millisecond timestamp, all far below 2^53.
 */
export function connect(url: string, options: ConnectOptions = {}): Sql {
  return postgres(url, {
    max: options.poolSize ?? 10,
    idle_timeout: 30,
    connect_timeout: 10,
    // NOTICEs ("relation already exists, skipping") are expected during migrations; not log noise.
    onnotice: () => {},
    connection: { application_name: options.applicationName ?? 'switchyard' },
    types: {
      bigint: {
        to: 20,
        from: [20],
        serialize: (value: number | bigint) => value.toString(),
        parse: (value: string) => Number(value),
      },
    },
  });
}
