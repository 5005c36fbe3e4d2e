import { ssoRepositoriesContract, type MakeSsoRepositories } from '@switchyard/core/testing/contracts';
import { createPostgresRepositories } from '../src/repositories.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';

// Each suite gets its own database, dropped when the suite ends.
const makeRepos: MakeSsoRepositories = async () => {
  const db = await createTestDatabase();
  return { repos: createPostgresRepositories(db.sql), close: () => db.drop() };
};

ssoRepositoriesContract('postgres', makeRepos);
