import {
  changeNotifierContract,
  invitationRepositoryContract,
  loginThrottleRepositoryContract,
  refreshTokenRepositoryContract,
  sessionRepositoryContract,
  type MakeChangeNotifiers,
  type MakeSessionRepositories,
} from '@switchyard/core/testing/contracts';
import { PgChangeNotifier } from '../src/change-notifier.pg.ts';
import { connect } from '../src/connect.ts';
import { createPostgresRepositories } from '../src/repositories.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';

// Each suite gets its own database, dropped when the suite ends.
const makeRepos: MakeSessionRepositories = async () => {
  const db = await createTestDatabase();
  return { repos: createPostgresRepositories(db.sql), close: () => db.drop() };
};

/** The application name of the instance under test, so its listening connection can be found. */
const INSTANCE_A = 'switchyard-test-instance-a';

// Two pools on one database, as two server instances behind a load balancer would have.
const makeNotifiers: MakeChangeNotifiers = async () => {
  const db = await createTestDatabase();
  const a = connect(db.url, { poolSize: 2, applicationName: INSTANCE_A });
  const b = connect(db.url, { poolSize: 2, applicationName: 'switchyard-test-instance-b' });
  return {
    notifier: new PgChangeNotifier(a),
    peer: new PgChangeNotifier(b),
    async dropListeningConnection() {
      // Instance A's pool only ever runs pg_notify; its listening connection's last statement
      // is a LISTEN or UNLISTEN. Terminating it is what a network failure or a failover does.
      const dropped = await db.sql`
        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = ${INSTANCE_A} AND query ILIKE '%listen %'`;
      if (dropped.count === 0) throw new Error('instance A has no listening connection to drop');
    },
    async close() {
      try {
        await Promise.all([a.end({ timeout: 5 }), b.end({ timeout: 5 })]);
      } finally {
        await db.drop();
      }
    },
  };
};

sessionRepositoryContract('postgres', makeRepos);
refreshTokenRepositoryContract('postgres', makeRepos);
invitationRepositoryContract('postgres', makeRepos);
loginThrottleRepositoryContract('postgres', makeRepos);
changeNotifierContract('postgres', makeNotifiers);
