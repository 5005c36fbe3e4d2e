import { changeRequestRepositoryContract } from '@switchyard/core/testing/contracts';
import { createPostgresRepositories } from '../src/repositories.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';

changeRequestRepositoryContract('postgres', async () => {
  const db = await createTestDatabase();
  return { repos: createPostgresRepositories(db.sql), close: () => db.drop() };
});
